"""The sweep's runtime-shaped Triton kernels: correct on every op, layout, bias and size class
(run by Triton's interpreter on the CPU), and specialized exactly where the code differs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from diode_backend.offline.collect import kernel
from diode_backend.problem import GemmProblem, KernelConfig

INTERPRETED = textwrap.dedent(
    """
    import json, sys, torch
    from diode_backend.offline.collect import kernel
    from diode_backend.offline.collect.sweep import ACCURACY_TOLERANCE, make_operands
    from diode_backend.problem import GemmProblem, KernelConfig
    KERNELS = {"mm": kernel.mm_kernel, "addmm": kernel.mm_kernel, "bmm": kernel.bmm_kernel, "baddbmm": kernel.bmm_kernel}
    out = []
    for problem, config in json.loads(sys.argv[1]):
        problem, config = GemmProblem(**problem), KernelConfig(**config)
        ops = make_operands(problem, device="cpu")
        ops["out"].fill_(float("nan"))
        args = kernel.launch_args(problem, config, ops["a"], ops["b"], ops["out"], ops["bias"])
        KERNELS[problem.op][kernel.grid(problem, config)](*args)
        err = ((ops["out"].float() - ops["ref"]).abs().max() / ops["ref"].abs().max()).item()
        out.append(err <= ACCURACY_TOLERANCE[problem.dtype])
    print(json.dumps(out))
    """
)

CASES = [
    # odd sizes: masked K, no vector loads; M and N smaller than the tiles
    (GemmProblem("mm", 37, 45, 71), KernelConfig("triton", "triton::mm", 16, 32, 32, 2, 4, 8)),
    (GemmProblem("mm", 5, 33, 17), KernelConfig("triton", "triton::mm", 16, 64, 16, 1, 2, 8)),
    # nn.Linear: transposed weight, a row bias; aligned sizes, EVEN_K
    (GemmProblem("addmm", 48, 64, 64, dtype="float32", b_layout="col", bias="row"), KernelConfig("triton", "triton::mm", 32, 16, 16, 2, 4, 8)),
    (GemmProblem("addmm", 32, 16, 48, dtype="float32", bias="full"), KernelConfig("triton", "triton::mm", 16, 16, 32, 2, 4, 4)),
    # transposed A, K not a multiple of BLOCK_K, grouping over several tile rows
    (GemmProblem("mm", 96, 40, 40, a_layout="col", b_layout="col"), KernelConfig("triton", "triton::mm", 16, 16, 32, 3, 4, 2)),
    (GemmProblem("bmm", 33, 20, 50, batch=3, a_layout="col"), KernelConfig("triton", "triton::bmm", 16, 16, 32, 2, 4, 8)),
    (GemmProblem("bmm", 16, 32, 64, batch=2, b_layout="col"), KernelConfig("triton", "triton::bmm", 16, 32, 16, 2, 4, 8)),
]  # fmt: skip


def test_interpreted_kernels_match_the_reference(triton_interpreter):
    payload = json.dumps([[p.to_dict(), c.to_dict()] for p, c in CASES])
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run(
        [sys.executable, "-c", INTERPRETED, payload], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == [True] * len(CASES)


def test_problems_share_a_kernel_only_when_the_code_is_the_same():
    config = KernelConfig("triton", "triton::mm", 64, 64, 64, 3, 4, 8)
    linear = dict(op="mm", dtype="bfloat16", b_layout="col")
    key = kernel.compile_key(GemmProblem(m=1024, n=4096, k=4096, **linear), config)
    # M does not reach a memory stride when A is row-major: any M shares the kernel
    assert kernel.compile_key(GemmProblem(m=77, n=512, k=256, **linear), config) == key
    # K not a multiple of BLOCK_K needs masked loads; N odd forbids vector stores
    assert kernel.compile_key(GemmProblem(m=1024, n=4096, k=4128, **linear), config) != key
    assert kernel.compile_key(GemmProblem(m=1024, n=4095, k=4096, **linear), config) != key
    assert kernel.specialization(GemmProblem(m=1, n=4096, k=4096, **linear), config)["HINT_A"] is True
    # with A transposed, M is a stride: its divisibility and the contiguity hint matter
    col = dict(linear, a_layout="col")
    spec = kernel.specialization(GemmProblem(m=40, n=4096, k=4096, **col), config)
    assert (spec["DIV_M"], spec["HINT_A"]) == (8, False)
    assert kernel.size_args(GemmProblem(m=40, n=4096, k=4096, **col), config) == (5, 256, 256)


def test_tf32_is_on_where_the_running_inductor_turns_it_on_and_shards_say_so():
    """The sweep's kernels turn TF32 on by the running Inductor's rule (by alignment before they
    recorded a rule: Inductor 2.11 turns it on always, 2.13 by size), which its shards record."""
    from diode_backend.offline.collect.environment import environment
    from diode_backend.tf32 import inductor_rule, triton_tf32_active

    config = KernelConfig("triton", "triton::mm", 64, 64, 32, 3, 4, 8)
    for m, n, k in ((1024, 1024, 1024), (1028, 768, 3072), (64, 63, 8), (1024, 256, 1024)):
        problem = GemmProblem("mm", m, n, k, dtype="float32", allow_tf32=True)
        assert kernel.specialization(problem, config)["ALLOW_TF32"] is triton_tf32_active(problem)
    assert not kernel.specialization(GemmProblem("mm", 1024, 1024, 1024, dtype="float32"), config)["ALLOW_TF32"]
    assert environment()["triton_tf32_rule"] == inductor_rule()


def _ptx(problem: GemmProblem, config: KernelConfig, **override) -> str:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = kernel.bmm_kernel if problem.op in ("bmm", "baddbmm") else kernel.mm_kernel
    spec = {**kernel.specialization(problem, config), **override}
    pointer = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32"}[problem.dtype]
    signature = {name: pointer for name in ("A", "B", "C", "BIAS")}
    signature.update({name: "i32" for name in ("M_q", "N_q", "K_q")}, **{name: "constexpr" for name in spec})
    constants = {(fn.arg_names.index(name),): value for name, value in spec.items()}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(4)}
    compiled = triton.compile(
        ASTSource(fn, signature, constants, attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": config.num_warps, "num_stages": config.num_stages},
    )
    # drop source locations and their labels: they name the line of the hint
    lines = compiled.asm["ptx"].split(".section\t.debug")[0].splitlines()
    return "\n".join(line for line in lines if not re.match(r"\s*(\.loc|\.file|\$L__tmp\d+:)", line))


@pytest.mark.parametrize("layouts", [("row", "row"), ("row", "col"), ("col", "row")])
def test_contiguity_hints_fixed_by_the_specialization_do_not_change_the_code(layouts):
    """Compiled for an H100 on the CPU (Triton ships ptxas): where :func:`specialization` fixes a
    hint instead of following the template, both values give the same PTX."""
    pytest.importorskip("triton.backends.nvidia")
    a_layout, b_layout = layouts
    problem = GemmProblem("mm", 39, 24, 4095, a_layout=a_layout, b_layout=b_layout)
    config = KernelConfig("triton", "triton::mm", 64, 32, 64, 3, 4, 8)  # M < BLOCK_M, N < BLOCK_N
    spec = kernel.specialization(problem, config)
    reference = _ptx(problem, config)
    # an overridden constant reaches the compiler: masked and unmasked K loads differ
    assert _ptx(problem, config, EVEN_K=not spec["EVEN_K"]) != reference
    if a_layout == "row":
        assert spec["HINT_A"] is True and _ptx(problem, config, HINT_A=False) == reference
    else:
        # along a transposed A with odd M the hint can matter (Triton 3.9 emits other code, 3.6
        # the same), so it follows the template
        assert spec["HINT_A"] is False
    if b_layout == "col":
        assert spec["HINT_B"] is True and _ptx(problem, config, HINT_B=False) == reference
