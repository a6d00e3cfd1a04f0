"""The fidelity comparison: rank statistics, and Inductor's timings taken from a real compile."""

from __future__ import annotations

import math

import pytest
import torch

from diode_backend.offline.collect.fidelity import compare, inductor_timings, spearman
from diode_backend.offline.dataset import ProblemTimings
from diode_backend.problem import GemmProblem, KernelConfig


def test_spearman():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833)  # ties share ranks
    assert math.isnan(spearman([1, 1], [1, 2]))


def test_compare_judges_the_sweep_winner_by_the_reference_clock():
    problem = GemmProblem("mm", 64, 64, 64)
    triton = tuple(KernelConfig("triton", "triton::mm", b, 16, 16, 1, 2, 8) for b in (16, 32, 64))
    aten = KernelConfig("aten", "aten::mm")
    reference = ProblemTimings(problem, (*triton, aten), (10.0, 10.2, 20.0, 15.0))
    sweep = ProblemTimings(problem, (*triton, KernelConfig("triton", "triton::mm", 128, 16, 16, 1, 2, 8)), (9.0, 8.9, 19.0, 1.0))
    row = compare(reference, sweep)
    assert row["candidates"] == 3 == row["triton_candidates"]  # only what both timed
    assert row["spearman"] == pytest.approx(0.5)
    assert row["winner_ratio"] == pytest.approx(1.02) and row["winner_within_3pct"]
    with_aten = compare(reference, ProblemTimings(problem, (*triton, aten), (9.0, 8.9, 19.0, 30.0)))
    assert with_aten["candidates"] == 4 and with_aten["triton_candidates"] == 3
    assert with_aten["aten_ratio_sweep_over_reference"] == [2.0]


def test_inductor_timings_and_its_kernels_on_cpu(isolated_caches):
    problem = GemmProblem("bmm", 16, 24, 8, batch=3, dtype="float32")
    # on the CPU Inductor's C++ template competes with ATen
    item, launches, ops = inductor_timings(problem, device="cpu", backends="ATEN,CPP")
    assert item.problem == problem
    assert "aten::bmm" in {c.template for c in item.configs} and min(item.times_us) > 0
    # ATen's choice runs again on fresh inputs and gives the right product
    (aten,) = [c for c in launches if c.template == "aten::bmm"]
    ops["out"].fill_(math.nan)
    launches[aten]()
    torch.testing.assert_close(ops["out"], ops["ref"])
