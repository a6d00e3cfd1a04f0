"""``benchmarks/h200_description_plan.py`` and ``h200_description_report.py``: what is listed to
time on an H200 for each of the shipped model's two picks, and how the two are compared."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from diode_backend import catalog
from diode_backend.model.checkpoint import load_checkpoint
from diode_backend.model.network import FrozenTimingModel
from diode_backend.offline.dataset import ProblemTimings
from diode_backend.problem import GemmProblem, KernelConfig

MODEL = Path(__file__).resolve().parent.parent / "trained_models" / "nvidia-h100-gemm" / "model.pt"


def tile(m: int) -> KernelConfig:
    return KernelConfig("triton", "mm", m, 64, 32, 3, 4, 8)


@pytest.fixture
def plan(benchmark_scripts):
    return benchmark_scripts("runtime_list_confidence", "h200_description_plan")[1]


@pytest.fixture
def report(benchmark_scripts):
    return benchmark_scripts("runtime_list_confidence", "h200_description_plan", "h200_description_report")[2]


def test_both_picks_are_listed_once_beside_the_fastest_timed_tile(plan):
    aten = KernelConfig("aten", "aten::mm")
    record = ProblemTimings(GemmProblem("mm", 64, 64, 64), (aten, tile(16), tile(32)), (1.0, 4.0, 3.0))
    assert plan.to_time(record, tile(64), aten) == (tile(64), aten, tile(32))
    assert plan.to_time(record, tile(32), tile(32)) == (tile(32),)  # the same pick, also the reference
    assert plan.to_time(ProblemTimings(GemmProblem("mm", 64, 64, 64), (aten,), (1.0,)), aten, aten) == (aten,)


def test_the_problems_are_the_choosing_families_and_the_held_out_families_validation_problems(plan):
    def record(family: str, split: str) -> ProblemTimings:
        return ProblemTimings(GemmProblem("mm", 64, 64, 64), (tile(16),), (1.0,), split=split, generator=f"zoo:{family}")

    records = [record("bert", "train"), record("deit", "validation"), record("vit", "train"), record("vit", "validation")]
    records.append(record("llama", "train"))
    assert plan.chosen_problems(records) == [records[0], records[1], records[3]]


def test_the_shipped_model_picks_other_kernels_for_an_h200_described_as_itself(plan):
    """Where the plan has something to compare: the bandwidth moves this pick."""
    h100 = catalog.resolve_hardware("h100")
    h200 = dataclasses.replace(catalog.resolve_hardware("h200"), triton_tf32_rule=h100.triton_tf32_rule)
    problem = GemmProblem("bmm", 5, 8192, 5, batch=128, dtype="float32")
    record = ProblemTimings(problem, (KernelConfig("aten", "aten::bmm"),), (10.0,))
    network = FrozenTimingModel(load_checkpoint(MODEL).model)
    kinds = {"aten", "triton"}
    as_h100, as_h200 = plan.picks(network, [record], h100, kinds), plan.picks(network, [record], h200, kinds)
    assert as_h100[record] != as_h200[record]
    assert as_h200[record] == KernelConfig("aten", "aten::bmm")


def test_the_two_picks_are_compared_with_a_two_percent_tie(report):
    pairs = [(1.0, 2.0, 1.0), (3.0, 1.5, 1.5), (1.01, 1.0, 1.0)]
    compared = report.compare(pairs)
    assert (compared["h100_faster"], compared["h100_slower"], compared["within_2pct"]) == (1, 1, 1)
    assert compared["h100_description"]["worst"] == 2.0 and compared["h200_description"]["worst"] == 2.0
    assert math.isclose(compared["h100_over_h200"]["geomean"], (0.5 * 2.0 * 1.01) ** (1 / 3))
    assert report.spread([]) == {"problems": 0}
