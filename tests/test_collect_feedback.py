"""The feedback collector on real CPU compiles: Inductor's own max-autotune timings become
dataset problems with complete descriptions."""

from __future__ import annotations

import torch
from torch._inductor import config
from torch._inductor.select_algorithm import get_algorithm_selector_cache

from diode_backend.offline.dataset import DatasetMeta, ShardWriter, load_dataset
from diode_backend.offline.collect.feedback import record_inductor_timings
from diode_backend.problem import GemmProblem, HardwareInfo


def compile_and_run(fn, *args):
    return torch.compile(fn, mode="max-autotune-no-cudagraphs")(*args)


def test_records_mm_addmm_and_bmm_with_every_candidate(isolated_caches, tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(64, 48), torch.nn.ReLU(), torch.nn.Linear(48, 40, bias=False)).eval()
    savers_before = len(get_algorithm_selector_cache().feedback_saver_fns)
    # On CPU, Inductor's C++ GEMM template competes with ATen for frozen weights (mkldnn's
    # packed linear, which it would prefer, is switched off).
    with (
        torch.no_grad(),
        torch.backends.mkldnn.flags(enabled=False),
        config.patch(freezing=True),
        record_inductor_timings(split="validation") as record,
    ):
        compile_and_run(model, torch.randn(32, 64))
        compile_and_run(torch.bmm, torch.randn(3, 16, 8), torch.randn(3, 8, 24))
    assert len(get_algorithm_selector_cache().feedback_saver_fns) == savers_before

    by_op = {item.problem.op: item for item in record.problems}
    assert by_op["addmm"].problem == GemmProblem(
        op="addmm", m=32, n=48, k=64, dtype="float32", a_layout="row", b_layout="col", bias="row"
    )
    assert by_op["mm"].problem == GemmProblem(op="mm", m=32, n=40, k=48, dtype="float32", b_layout="col")
    assert by_op["bmm"].problem == GemmProblem(op="bmm", m=16, n=24, k=8, batch=3, dtype="float32")
    for op, item in by_op.items():
        kinds = {c.kind for c in item.configs}
        assert {"aten", "cpp"} <= kinds, (op, item.configs)
        assert f"aten::{op}" in {c.template for c in item.configs}
        assert all(0 < t < 1e6 for t in item.times_us)  # microseconds
        assert (item.split, item.source, item.space, item.generator) == ("validation", "feedback", "observed", "feedback")

    hardware = HardwareInfo(name="cpu", vendor="cpu", device_type="cpu")
    with ShardWriter(tmp_path / "data", DatasetMeta(hardware)) as writer:
        for item in record.problems:
            writer.add(item)
    assert {p.problem.op for p in load_dataset(tmp_path / "data")} == {"mm", "addmm", "bmm"}


def test_nothing_is_recorded_outside_the_block(isolated_caches):
    with record_inductor_timings() as record:
        pass
    compile_and_run(torch.bmm, torch.randn(2, 8, 8), torch.randn(2, 8, 8))
    assert record.problems == [] and record.skipped == []
