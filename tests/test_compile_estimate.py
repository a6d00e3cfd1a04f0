"""``diode_backend.compile_estimate``: a candidate's compile seconds from the shipped table."""

from __future__ import annotations

import json

from diode_backend import compile_estimate
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig

SHIPPED = json.loads(compile_estimate.TABLE.read_text())["seconds"]
TF32 = GemmProblem("mm", 1024, 768, 768, dtype="float32", allow_tf32=True)


def tile(m: int, n: int, template: str = "triton::mm") -> KernelConfig:
    return KernelConfig("triton", template, m, n, 32, 3, 4, 8)


def test_a_tile_is_estimated_at_its_class_and_block_area_in_the_shipped_table():
    timed = SHIPPED["tf32/triton::mm"]
    assert compile_estimate.estimated_seconds(TF32, tile(128, 128), "always") == timed[str(128 * 128)]
    assert compile_estimate.estimated_seconds(TF32, tile(64, 256), "always") == timed[str(128 * 128)]  # the same area
    assert compile_estimate.estimated_seconds(TF32, tile(128, 128), "always") > compile_estimate.estimated_seconds(TF32, tile(32, 32), "always")


def test_an_area_between_or_beyond_the_timed_ones_takes_the_nearest_below_or_the_smallest(tmp_path, monkeypatch):
    table = tmp_path / "compile_seconds.json"
    table.write_text(json.dumps({"seconds": {"half/triton::mm": {"4096": 1.0, "1024": 0.5}}}))
    monkeypatch.setattr(compile_estimate, "TABLE", table)

    def forget():
        compile_estimate._table.cache_clear()
        compile_estimate._seconds.cache_clear()

    forget()
    try:
        problem = GemmProblem("mm", 64, 64, 64, dtype="bfloat16")
        assert compile_estimate.estimated_seconds(problem, tile(16, 16)) == 0.5  # below the smallest
        assert compile_estimate.estimated_seconds(problem, tile(32, 64)) == 0.5  # between: the one below
        assert compile_estimate.estimated_seconds(problem, tile(64, 64)) == 1.0
        assert compile_estimate.estimated_seconds(problem, tile(256, 256)) == 1.0  # beyond: the largest
        assert compile_estimate.estimated_seconds(problem, tile(32, 32, "triton::bmm")) is None  # no such class
    finally:
        forget()  # the next reader loads the shipped table again


def test_a_library_call_costs_nothing_and_other_templates_have_no_estimate():
    assert compile_estimate.estimated_seconds(TF32, KernelConfig("aten", "aten::mm")) == 0.0
    assert compile_estimate.estimated_seconds(TF32, KernelConfig("decompose_k", "decompose_k", block_k=32)) is None
    persistent = KernelConfig("triton_tma", "triton::mm_persistent_tma", 128, 128, 64, 3, 8, 8)
    assert compile_estimate.estimated_seconds(TF32, persistent) is None


def test_the_precision_follows_the_tf32_rule_the_kernels_compile_under():
    small_k = GemmProblem("mm", 1024, 768, 64, dtype="float32", allow_tf32=True)  # under 2.13's size rule: no TF32
    assert compile_estimate.precision(small_k, "always") == "tf32"
    assert compile_estimate.precision(small_k, "size") == "float32"
    assert compile_estimate.precision(GemmProblem("mm", 8, 8, 8, dtype="float16")) == "half"
    assert compile_estimate.tile_class(small_k, tile(128, 128), "size") == "float32/triton::mm"
    h100 = HardwareInfo(name="NVIDIA H100 80GB HBM3", vendor="nvidia", triton_tf32_rule="size")
    expected = SHIPPED["float32/triton::mm"][str(128 * 128)]
    assert compile_estimate.estimates(small_k, [tile(128, 128), KernelConfig("aten", "aten::mm")], h100) == [expected, 0.0]
