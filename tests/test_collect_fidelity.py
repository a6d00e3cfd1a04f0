"""The fidelity comparison: rank statistics, and Inductor's timings taken from a real compile."""

from __future__ import annotations

import math

import pytest

from diode_backend.collect.fidelity import compare, inductor_timings, spearman
from diode_backend.dataset import ProblemTimings
from diode_backend.problem import GemmProblem, KernelConfig


def test_spearman():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833)  # ties share ranks
    assert math.isnan(spearman([1, 1], [1, 2]))


def test_compare_uses_inductor_clock_to_judge_the_sweep_winner():
    problem = GemmProblem("mm", 64, 64, 64)
    configs = tuple(KernelConfig("triton", "triton::mm", b, 16, 16, 1, 2, 8) for b in (16, 32, 64)) + (KernelConfig("aten", "aten::mm"),)
    inductor = ProblemTimings(problem, configs, (10.0, 10.2, 20.0, 15.0))
    sweep = ProblemTimings(problem, configs[:3] + (KernelConfig("triton", "triton::mm", 128, 16, 16, 1, 2, 8),), (9.0, 8.9, 19.0, 1.0))
    row = compare(inductor, sweep)
    assert row["candidates"] == 3  # only what both timed
    assert row["spearman"] == pytest.approx(0.5)
    assert row["winner_ratio"] == pytest.approx(1.02) and row["winner_within_3pct"]


def test_inductor_timings_on_cpu(isolated_caches):
    # on the CPU Inductor's C++ template competes with ATen
    item = inductor_timings(GemmProblem("bmm", 16, 24, 8, batch=3, dtype="float32"), device="cpu", backends="ATEN,CPP")
    assert item.problem == GemmProblem("bmm", 16, 24, 8, batch=3, dtype="float32")
    assert "aten::bmm" in {c.template for c in item.configs} and min(item.times_us) > 0
