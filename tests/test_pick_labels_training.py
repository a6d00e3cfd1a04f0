"""``benchmarks/pick_labels_training.py``: B's and J's out-of-fold picks compared where both are
judged, and J's picks judged by nothing counted apart."""

from __future__ import annotations

import pytest


@pytest.fixture
def study(benchmark_scripts):
    return benchmark_scripts("runtime_list_confidence", "h100_pick_labels_plan", "pick_labels_training")[2]


def test_picks_are_compared_where_both_are_judged_and_j_unjudged_counted_apart(study):
    picks = {"B": {0: 1.0, 1: 1.5, 2: 1.2, 3: 1.1}, "J": {0: 1.0, 1: 1.0, 3: 1.3, 4: 1.0}}
    classes = ["decode", "narrow", "narrow", "decode", "fp32"]
    result = study.compare(picks, classes)
    assert result["judged"] == {"B": 4, "J": 4}
    assert result["j_unjudged_where_b_judged"] == 1  # problem 2
    both = result["both"]  # problems 0, 1 and 3
    assert both["B"]["problems"] == both["J"]["problems"] == 3
    assert both["B"]["geomean"] == pytest.approx((1.0 * 1.5 * 1.1) ** (1 / 3))
    assert (both["J"]["worst"], both["B"]["worst"]) == (1.3, 1.5)
    assert set(result["by_class"]) == {"decode", "narrow"}
    assert result["by_class"]["narrow"]["J"] == {"problems": 1, "geomean": pytest.approx(1.0), "p90": 1.0, "worst": 1.0}
    assert study.regret_figures([]) == {"problems": 0, "geomean": None, "p90": None, "worst": None}
    # J: 1.0 / 1.24 against B's 1.5 / 1.42 at p90 (interpolated) and a lower geomean
    assert (result["decision"], result["complete"]) == ("J", False)
    # all four of B's picks against J's with its unjudged problem 2 at 1.0
    at_best = result["j_at_best"]
    assert at_best["B"]["geomean"] == pytest.approx((1.0 * 1.5 * 1.2 * 1.1) ** (1 / 4))
    assert at_best["J"]["geomean"] == pytest.approx(1.3 ** (1 / 4)) and at_best["can_ship"]


def test_timing_cannot_ship_j_when_even_its_best_case_misses_the_margin(study):
    b = {0: 1.0, 1: 1.21, 2: 1.0}
    j = {0: 1.0, 1: 1.2}  # problem 2 unjudged: even at 1.0 lower by 0.003 only
    result = study.compare({"B": b, "J": j}, ["narrow"] * 3)
    assert not result["complete"] and result["j_at_best"]["can_ship"] is False
    assert "j_at_best" not in study.compare({"B": b, "J": {**j, 2: 1.0}}, ["narrow"] * 3)


@pytest.mark.parametrize("j, decision", [
    ({0: 1.0, 1: 1.19}, "J"),  # geomean 1.0909 against 1.1: lower by 0.009
    ({0: 1.0, 1: 1.2}, "B"),  # 1.0954: lower by 0.0046, under the margin
    ({0: 1.3, 1: 1.0}, "B"),  # 1.140: higher
])  # fmt: skip
def test_j_ships_only_with_a_geomean_lower_by_the_margin_and_a_p90_not_higher(study, j, decision):
    b = {0: 1.0, 1: 1.21}  # geomean 1.1
    result = study.compare({"B": b, "J": j}, ["narrow", "narrow"])
    assert result["complete"] and result["decision"] == decision


def test_a_lower_geomean_with_a_higher_p90_keeps_b(study):
    b = {i: 1.0 + 0.02 * i for i in range(10)}  # p90 1.18
    j = {i: 1.0 for i in range(8)} | {8: 1.25, 9: 1.25}  # a lower geomean, p90 1.25
    result = study.compare({"B": b, "J": j}, ["decode"] * 10)
    assert result["both"]["J"]["geomean"] < result["both"]["B"]["geomean"] - study.GEOMEAN_MARGIN
    assert result["decision"] == "B"


def test_two_models_lists_for_one_problem_keep_the_reference_tile_last(study):
    from diode_backend.offline.dataset import ProblemTimings
    from diode_backend.problem import GemmProblem, KernelConfig

    tile = lambda bm, stages=3: KernelConfig("triton", "triton::mm", bm, 64, 32, stages, 4, 8)  # noqa: E731
    record = ProblemTimings(GemmProblem("mm", 64, 64, 64), (KernelConfig("aten", "aten::mm"), tile(32)), (2.0, 1.0))
    b, j = (tile(64), tile(32)), (tile(128), tile(64), tile(32, 4), tile(32))
    assert study.merged(record, b, j) == (tile(64), tile(128), tile(32, 4), tile(32))
    assert study.merged(record, (), j) == j
