"""``diode_backend.compile_estimate``: a candidate's compile seconds from the table the
``diode_compile_seconds`` hook gives for the hardware (the built-in: the shipped H100 table)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest

from diode_backend import compile_estimate, hookimpl, plugins
from diode_backend.builtin import COMPILE_SECONDS
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig

SHIPPED = json.loads(COMPILE_SECONDS.read_text())["seconds"]
TF32 = GemmProblem("mm", 1024, 768, 768, dtype="float32", allow_tf32=True)
H100 = HardwareInfo(name="NVIDIA H100 80GB HBM3", vendor="nvidia", triton_tf32_rule="always")
VENDOR = HardwareInfo(name="Vendor GPU", vendor="nvidia", triton_tf32_rule="always")


def tile(m: int, n: int, template: str = "triton::mm") -> KernelConfig:
    return KernelConfig("triton", template, m, n, 32, 3, 4, 8)


@contextmanager
def vendor_table(path: Path):
    """A plugin whose table holds for :data:`VENDOR`, registered for the block."""

    class Vendor:
        @hookimpl
        def diode_compile_seconds(self, hardware):
            return path if hardware.name == VENDOR.name else None

    plugin = Vendor()
    plugins.get_plugin_manager().register(plugin)
    try:
        yield
    finally:
        plugins.get_plugin_manager().unregister(plugin)


def test_a_tile_is_estimated_at_its_class_and_block_area_in_the_shipped_table():
    timed = SHIPPED["tf32/triton::mm"]
    big, wide, small = compile_estimate.estimates(TF32, [tile(128, 128), tile(64, 256), tile(32, 32)], H100)
    assert big == wide == timed[str(128 * 128)]  # the same area
    assert small == timed[str(32 * 32)] < big


def test_an_area_between_or_beyond_the_timed_ones_takes_the_nearest_below_or_the_smallest(tmp_path):
    table = tmp_path / "compile_seconds.json"
    table.write_text(json.dumps({"seconds": {"half/triton::mm": {"4096": 1.0, "1024": 0.5}}}))
    problem = GemmProblem("mm", 64, 64, 64, dtype="bfloat16")
    tiles = [tile(16, 16), tile(32, 64), tile(64, 64), tile(256, 256), tile(32, 32, "triton::bmm")]
    with vendor_table(table):
        # below the smallest, between (the one below), timed, beyond (the largest), no such class
        assert compile_estimate.estimates(problem, tiles, VENDOR) == [0.5, 0.5, 1.0, 1.0, None]


def test_a_plugins_table_holds_for_its_hardware_and_a_device_without_one_gets_no_estimates(tmp_path):
    table = tmp_path / "mine.json"
    table.write_text(json.dumps({"seconds": {"tf32/triton::mm": {"1024": 7.0}}}))
    with vendor_table(table):
        assert compile_estimate.estimates(TF32, [tile(128, 128)], VENDOR) == [7.0]
        assert compile_estimate.estimates(TF32, [tile(128, 128)], H100) == [SHIPPED["tf32/triton::mm"]["16384"]]  # the built-in's
    cpu = HardwareInfo(name="x86_64", vendor="cpu", device_type="cpu")
    assert compile_estimate.estimates(TF32, [tile(128, 128), KernelConfig("aten", "aten::mm")], cpu) == [None, None]
    assert compile_estimate.estimates(TF32, [tile(128, 128)], None) == [None]


def test_a_table_that_is_not_one_is_named_with_the_fix(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"seconds": {"tf32/triton::mm": {"big": 1}}}')
    with vendor_table(broken), pytest.raises(ValueError, match=r"broken\.json: not a table of compile seconds .*compile_time_table\.py --fit"):
        compile_estimate.estimates(TF32, [tile(128, 128)], VENDOR)


def test_a_library_call_costs_nothing_and_other_templates_have_no_estimate():
    persistent = KernelConfig("triton_tma", "triton::mm_persistent_tma", 128, 128, 64, 3, 8, 8)
    configs = [KernelConfig("aten", "aten::mm"), KernelConfig("decompose_k", "decompose_k", block_k=32), persistent]
    assert compile_estimate.estimates(TF32, configs, H100) == [0.0, None, None]


def test_the_precision_follows_the_tf32_rule_the_kernels_compile_under():
    small_k = GemmProblem("mm", 1024, 768, 64, dtype="float32", allow_tf32=True)  # under 2.13's size rule: no TF32
    assert compile_estimate.precision(small_k, "always") == "tf32"
    assert compile_estimate.precision(small_k, "size") == "float32"
    assert compile_estimate.precision(GemmProblem("mm", 8, 8, 8, dtype="float16")) == "half"
    by_size = HardwareInfo(name="NVIDIA H100 80GB HBM3", vendor="nvidia", triton_tf32_rule="size")
    assert compile_estimate.estimates(small_k, [tile(128, 128)], by_size) == [SHIPPED["float32/triton::mm"][str(128 * 128)]]
