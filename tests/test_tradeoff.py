"""The defaults trade-off simulation on tiny hand-made problems: which candidates an unsure DIODE
measures, what a problem then costs and runs at, which confidence keeps a pick alone (the run-time
one, over Inductor's whole candidate list), and which grid point the selection rule takes."""

from __future__ import annotations

import math

import pytest

from diode_backend import registry
from diode_backend.offline.dataset import ProblemTimings
from diode_backend.offline.tradeoff import (
    CompileCost,
    CompiledGraph,
    SimulatedProblem,
    choose_defaults,
    fit_compile_cost,
    measured_candidates,
    runtime_ranking,
    simulate_grid,
    simulated_problem,
)
from diode_backend.policy import Ranking
from diode_backend.problem import GemmProblem, KernelConfig
from diode_backend.scorer import Prediction

COST = CompileCost(base_s=0.2, alone_s=0.4, measure_s=0.3, candidate_s=0.05)


def problem(predicted, measured, aten, confidence=None) -> SimulatedProblem:
    """Ranked with ``confidence`` over the timed candidates and at run time alike."""
    kinds = tuple("aten" if library else "triton" for library in aten)
    return SimulatedProblem(Ranking.of(Prediction(tuple(predicted), confidence)), tuple(measured), kinds, confidence)


# predicted order: 1 (triton), 2 (triton), 0 (aten), 3 (triton), 4 (unscored)
FOUR = problem(
    predicted=[12.0, 10.0, 11.0, 30.0, math.nan],
    measured=[9.0, 14.0, 11.0, 8.0, 20.0],
    aten=[True, False, False, False, False],
    confidence=0.7,
)


def test_the_simulation_measures_what_the_runtimes_rule_measures():
    """The rule itself is tested in test_policy.py; the simulation must apply it to its kinds."""
    assert measured_candidates(FOUR, top_k=5, ratio=1.25) == (1, 2, 0, 4)
    assert measured_candidates(FOUR, top_k=1, ratio=2.0) == (1, 0, 4)  # capped; ATen always
    assert measured_candidates(FOUR, top_k=10, ratio=3.0) == (1, 2, 0, 3, 4)
    aten_first = problem([5.0, 6.0, 20.0], [1.0, 1.0, 1.0], aten=[True, True, False])
    assert measured_candidates(aten_first, top_k=1, ratio=1.0) == (0, 1, 2)  # every ATen call and the best Triton one come too


def test_a_gemm_costs_its_base_then_a_lone_kernel_or_a_measurement_and_its_triton_candidates():
    assert COST.seconds(0, 1) == pytest.approx(0.2)  # ATen alone
    assert COST.seconds(1, 1) == pytest.approx(0.6)  # one Triton kernel, nothing timed
    assert COST.seconds(3, 4) == pytest.approx(0.2 + 0.3 + 3 * 0.05)
    assert COST.seconds(0, 2) == pytest.approx(0.2 + 0.3)  # two ATen calls timed: no compile round of candidates


# each graph under four settings: a single pick of every GEMM, then measured sets of three sizes
SETTINGS = {
    "pick": [(1, 1), (0, 1), (1, 1)],
    "one": [(1, 3), (0, 1), (1, 2)],
    "three": [(3, 5), (0, 1), (2, 4)],
    "seven": [(5, 7), (0, 2), (6, 8)],
}


def graphs(cost: CompileCost, offsets: dict[str, float]) -> list[CompiledGraph]:
    """Every setting's compile of each graph, ``offsets[graph]`` seconds added to each: what a
    graph costs every setting alike (its size, its shapes)."""
    return [
        CompiledGraph(name, tuple(gemms), sum(cost.seconds(c, m) for c, m in gemms) + offset)
        for name, offset in offsets.items() for gemms in SETTINGS.values()
    ]  # fmt: skip


def test_the_fit_recovers_the_constants_within_graphs_and_keeps_the_total():
    fitted, fit = fit_compile_cost(graphs(COST, {"a": 0.0, "b": 0.0}))
    assert fitted.constants() == pytest.approx(COST.constants())
    assert fit["relative_error_worst"] == pytest.approx(0.0, abs=1e-9) and fit["graphs"] == 2
    # a graph dearer for every setting moves the base alone, not what tells settings apart
    shifted, fit = fit_compile_cost(graphs(COST, {"a": 0.0, "b": 3.0}))
    assert shifted.constants()[1:] == pytest.approx(COST.constants()[1:])
    assert shifted.base_s == pytest.approx(COST.base_s + 3.0 / 6)  # b's 3 s spread over a's and b's 6 GEMMs
    assert fit["total_over_measured"] == pytest.approx(1.0) and fit["relative_error_worst"] > 0.05
    with pytest.raises(ValueError, match="do not tell the constants apart"):  # measured sets of one size only
        fit_compile_cost([c for c in graphs(COST, {"a": 0.0}) if c.gemms in (tuple(SETTINGS["pick"]), tuple(SETTINGS["three"]))])


def test_the_threshold_switches_between_the_pick_and_the_measured_set():
    # picked alone: candidate 1 runs 14 / 8; measured (top_k 1, ratio 1): {1, 0, 4} runs 9 / 8
    rows = simulate_grid([FOUR], COST, thresholds=(0.5, 0.9), top_ks=(1,), ratios=(1.0,))
    confident, unsure = rows
    assert (confident["geomean"], confident["compile_s_total"], confident["single_pick_share"]) == pytest.approx((14 / 8, 0.6, 1.0))
    assert unsure["geomean"] == pytest.approx(9 / 8)
    assert unsure["compile_s_total"] == pytest.approx(COST.seconds(2, 3))
    assert (unsure["single_pick_share"], unsure["measured_set_mean"]) == (0.0, 3.0)


def test_the_run_time_confidence_keeps_a_pick_alone_not_the_timed_subset_s():
    # the same ranking of the timed candidates, confident over them; unsure over the whole list
    unsure = SimulatedProblem(FOUR.ranking, FOUR.measured_us, FOUR.kinds, confidence=0.5)
    sure = SimulatedProblem(FOUR.ranking, FOUR.measured_us, FOUR.kinds, confidence=0.95)
    assert FOUR.ranking.confidence == 0.7
    rows = simulate_grid([unsure, sure], COST, thresholds=(0.6, 0.9), top_ks=(1,), ratios=(1.0,))
    assert [r["single_pick_share"] for r in rows] == [0.5, 0.5]  # `sure` alone at both; `unsure` at neither


class CountingScorer:
    """Predicts candidate i at 10 + i microseconds, confident over a short list (0.99) and unsure
    over a long one (0.3), as a confidence that reads the crowding of the list may be."""

    name = identity = "counting"

    def predict(self, problem, configs, hardware):
        return Prediction(tuple(10.0 + i for i in range(len(configs))), 0.99 if len(configs) <= 4 else 0.3)


def test_a_simulated_problem_is_decided_by_the_confidence_over_inductor_s_whole_list():
    hardware = registry.known_hardware()["h100"]
    gemm = GemmProblem("mm", 1024, 1024, 1024, dtype="float16")
    whole, ranking = runtime_ranking(CountingScorer(), gemm, hardware)
    assert len(whole) > 4 and ranking.confidence == 0.3  # Inductor's EXHAUSTIVE list and ATen
    timed = ProblemTimings(gemm, (KernelConfig("aten", "aten::mm"), whole[-1]), (9.0, 8.0))
    simulated = simulated_problem(CountingScorer(), timed, hardware)
    assert simulated.ranking.confidence == 0.99 and simulated.confidence == 0.3
    assert simulated.ranking.order == (0, 1)  # the pick and its measured set stay the timed ones
    (row,) = simulate_grid([simulated], COST, thresholds=(0.9,), top_ks=(1,), ratios=(1.0,))
    assert row["single_pick_share"] == 0.0  # measured, though the subset's 0.99 would keep it alone
    assert row["geomean"] == pytest.approx(1.0)


def row(threshold, top_k, ratio, geomean, worst, compile_s):
    return {"threshold": threshold, "top_k": top_k, "ratio": ratio, "geomean": geomean, "worst": worst, "compile_s_total": compile_s}


def test_the_rule_takes_the_cheapest_near_best_point_within_the_worst_bound():
    rows = [
        row(1.0, 10, 2.0, 1.000, 1.05, 100.0),  # best, dearest
        row(0.9, 5, 1.2, 1.004, 1.10, 40.0),  # the choice
        row(0.8, 5, 1.2, 1.004, 1.30, 30.0),  # cheaper, but its worst is over the bound
        row(0.5, 1, 1.0, 1.020, 1.10, 10.0),  # cheaper, but not near the best geomean
        row(0.95, 3, 1.1, 1.004, 1.10, 40.0),  # same cost: the higher threshold wins the tie
    ]
    assert choose_defaults(rows, geomean_slack=0.005, worst_bound=1.15) == rows[4]
    assert choose_defaults(rows[:4], geomean_slack=0.005, worst_bound=1.15) == rows[1]


def test_the_rule_falls_back_to_the_least_worst_when_no_point_meets_the_bound():
    rows = [row(1.0, 10, 2.0, 1.000, 1.20, 100.0), row(0.9, 5, 1.2, 1.001, 1.25, 40.0)]
    assert choose_defaults(rows, geomean_slack=0.005, worst_bound=1.15) == rows[0]


def test_the_simulation_leaves_out_what_the_runtime_estimates_too_slow_to_compile():
    slow_best = SimulatedProblem(FOUR.ranking, FOUR.measured_us, FOUR.kinds, FOUR.confidence, (0.0, 9.0, 0.5, 0.5, None))
    assert measured_candidates(slow_best, top_k=5, ratio=1.25) == (2, 0, 4)  # 1 (9 s) is left out
    assert measured_candidates(FOUR, top_k=5, ratio=1.25) == (1, 2, 0, 4)  # no estimates: no bound


def test_a_simulated_problem_carries_each_timed_candidates_compile_estimate():
    hardware = registry.known_hardware()["h100"]
    gemm = GemmProblem("mm", 1024, 1024, 1024, dtype="float32", allow_tf32=True)
    big, small = KernelConfig("triton", "triton::mm", 128, 128, 32, 3, 4, 8), KernelConfig("triton", "triton::mm", 32, 32, 32, 3, 4, 8)
    timed = ProblemTimings(gemm, (KernelConfig("aten", "aten::mm"), big, small), (9.0, 8.0, 10.0))
    simulated = simulated_problem(CountingScorer(), timed, hardware)
    assert simulated.compile_s[0] == 0.0 and simulated.compile_s[1] > simulated.compile_s[2] > 0
