"""``benchmarks/kernel_reuse_probe.py``: the parts that read kernel sources (the compiles need a GPU)."""

from __future__ import annotations

BENCHMARK = '''import triton
import triton.language as tl
@triton_heuristics.template(
    num_stages=3,
    triton_meta={'signature': {'arg_A': '*bf16'}, 'configs': [{(0,): [['tt.divisibility', 16]]}]},
)
@triton.jit
def triton_mm(arg_A, arg_B, out_ptr0):
    BLOCK_M : tl.constexpr = 64
    BLOCK_N : tl.constexpr = 128
    acc = tl.dot(arg_A, arg_B)
'''


def graph_code(kernel: str) -> str:
    return f"triton_tem_fused_mm_0 = async_compile.triton('triton_tem_fused_mm_0', '''{kernel}''', device_str='cuda')\n"


def test_a_graph_kernel_that_differs_only_in_its_name_is_the_benchmark_kernel(benchmark_scripts):
    (probe,) = benchmark_scripts("kernel_reuse_probe")
    final = BENCHMARK.replace("triton_mm", "triton_tem_fused_mm_0")
    ((name, source),) = probe.graph_template_kernels(graph_code(final))
    assert name == "triton_tem_fused_mm_0"
    row = probe.compare(source, [BENCHMARK])
    assert row["tile"] == {"BLOCK_M": "64", "BLOCK_N": "128"} and row["jit_equal_but_the_name"] is True
    assert row["triton_meta_equal"] is True
    unaligned = source.replace("[['tt.divisibility', 16]]", "[]")
    assert probe.compare(unaligned, [BENCHMARK])["triton_meta_equal"] is False


def test_an_epilogue_or_another_tile_is_told_apart(benchmark_scripts):
    (probe,) = benchmark_scripts("kernel_reuse_probe")
    fused = BENCHMARK.replace("triton_mm", "triton_tem_fused_mm_relu_0") + "    acc = tl.maximum(acc, 0)\n"
    row = probe.compare(fused, [BENCHMARK])
    assert row["jit_equal_but_the_name"] is False and "+    acc = tl.maximum(acc, 0)" in row["diff"]
    other_tile = BENCHMARK.replace("BLOCK_N : tl.constexpr = 128", "BLOCK_N : tl.constexpr = 64")
    assert probe.compare(other_tile, [BENCHMARK]) == {"tile": {"BLOCK_M": "64", "BLOCK_N": "64"}, "benchmark_modules_of_the_tile": 0}
