"""What the defaults of ``diode_confidence_threshold``, ``diode_top_k`` and the measure ratio give
and cost, simulated on problems whose every candidate was timed.

For each problem and setting: when the model's confidence reaches the threshold, DIODE compiles
its predicted best alone and the problem runs at that candidate's measured time; otherwise DIODE
measures its measured set (:func:`~diode_backend.policy.measured_set`, the runtime's rule) and
the problem runs at the fastest measured time in it. Measurement is taken as exact: the simulated
timer always finds the set's true winner. Compile time comes from :class:`CompileCost`, a linear
model of what a GEMM adds to its graph's compile, fitted to end-to-end compiles of graphs under
several settings (:func:`fit_compile_cost`). :func:`choose_defaults` applies a selection rule
to the grid.

The confidence that decides is the run-time one (:attr:`SimulatedProblem.confidence`, from
:func:`runtime_ranking`): the model's over Inductor's whole candidate list for the problem, as
DIODE ranks it at compile time, not its confidence over the timed subset, which differs for a
model whose confidence depends on the list (crowding, candidate count). The pick, the measured
set and the runtimes stay within the timed subset, the only candidates with measured times.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .. import registry
from ..compile_estimate import estimates
from ..options import DiodeOptions
from ..policy import Ranking, measured_set, rank_candidates
from ..problem import KIND_ATEN, GemmProblem, HardwareInfo, KernelConfig
from ..scorer import GemmScorer
from .dataset import ProblemTimings
from .validate import spread


def runtime_ranking(scorer: GemmScorer, problem: GemmProblem, hardware: HardwareInfo) -> tuple[list[KernelConfig], Ranking]:
    """The candidates DIODE ranks for ``problem`` at compile time and ``scorer``'s ranking of
    them, computed on the CPU as ``diode predict`` does: Inductor's whole list for the default
    ``diode_search_space`` (``registry.compile_time_configs``) ranked by ``policy.rank_candidates``.
    ``hardware``'s ``triton_tf32_rule`` should be the one the GEMM compiles under.

    :raises ValueError: when no plugin offers candidates for ``problem``.
    """
    configs = registry.compile_time_configs(problem, hardware)
    if not configs:
        raise ValueError(f"no plugin offers candidates for {problem.describe()}")
    return configs, rank_candidates(scorer, problem, configs, hardware)


@dataclass(frozen=True)
class SimulatedProblem:
    """One problem as the simulation sees it: the model's ranking of its timed candidates, each
    candidate's measured time (microseconds), its kind (an ``aten`` library call needs no
    compile) and estimated compile seconds (:mod:`~diode_backend.compile_estimate`: the runtime's
    measured set leaves out what it estimates too slow; None: no estimate), and ``confidence``,
    the one that decides keep-vs-measure: the model's at run time, over Inductor's whole
    candidate list (:func:`runtime_ranking`), not ``ranking.confidence`` over the timed subset
    (None: unknown, never kept alone)."""

    ranking: Ranking
    measured_us: tuple[float, ...]
    kinds: tuple[str, ...]
    confidence: float | None
    compile_s: tuple[float | None, ...] | None = None

    def compiled(self, index: int) -> bool:
        return self.kinds[index] != KIND_ATEN

    @property
    def best_us(self) -> float:
        return min(self.measured_us)


def simulated_problem(scorer: GemmScorer, timings: ProblemTimings, hardware: HardwareInfo) -> SimulatedProblem:
    """``timings`` as the simulation sees it under ``scorer`` on ``hardware`` (with the problem's
    TF32 rule): its timed candidates ranked and their compiles estimated, and the confidence of
    :func:`runtime_ranking`."""
    ranking = rank_candidates(scorer, timings.problem, timings.configs, hardware)
    confidence = runtime_ranking(scorer, timings.problem, hardware)[1].confidence
    kinds = tuple(c.kind for c in timings.configs)
    return SimulatedProblem(ranking, timings.times_us, kinds, confidence, tuple(estimates(timings.problem, timings.configs, hardware)))


def measured_candidates(problem: SimulatedProblem, top_k: int, ratio: float) -> tuple[int, ...]:
    """The candidates the runtime's rule measures at these settings (and the default
    ``diode_max_compile_s``)."""
    options = DiodeOptions(diode_top_k=top_k, diode_measure_ratio=ratio)
    return measured_set(problem.ranking, problem.kinds, options, problem.compile_s)


@dataclass(frozen=True)
class CompileCost:
    """Seconds a GEMM adds to the compile of the graph that holds it under DIODE, as a linear
    model of what DIODE does with it (:func:`cost_terms`).

    ``base_s``: any GEMM (tracing, lowering, ranking, code generation: an ATen call alone costs
    this). ``alone_s``: a Triton kernel compiled alone, unmeasured (the graph's own compile of
    it). ``measure_s``: a GEMM DIODE measures: the graph waits for a round of candidate compiles
    before its own compile, and times the candidates. ``candidate_s``: each Triton candidate
    measured (its code, its share of the compile workers). A graph's compiles run in parallel
    across its GEMMs, so the constants hold for graphs like those they were fitted on."""

    base_s: float
    alone_s: float
    measure_s: float
    candidate_s: float

    def seconds(self, compiled: int, measured: int) -> float:
        """The seconds a GEMM adds that compiles ``compiled`` Triton kernels and measures
        ``measured`` candidates (1: a single pick, nothing timed)."""
        return sum(c * x for c, x in zip(self.constants(), cost_terms(compiled, measured)))

    def constants(self) -> tuple[float, ...]:
        return (self.base_s, self.alone_s, self.measure_s, self.candidate_s)


def cost_terms(compiled: int, measured: int) -> tuple[float, ...]:
    """The regressors of :class:`CompileCost`, in the order of its constants."""
    measuring = measured > 1
    return (1.0, float(compiled > 0 and not measuring), float(measuring), float(compiled if measuring else 0))


@dataclass(frozen=True)
class CompiledGraph:
    """One timed compile of a graph: per GEMM ``(compiled, measured)`` as :meth:`CompileCost.seconds`
    takes them, and the compile's seconds. ``graph`` names the graph, the same for each setting
    it was compiled under."""

    graph: str
    gemms: tuple[tuple[int, int], ...]
    seconds: float

    def terms(self) -> list[float]:
        return [sum(column) for column in zip(*(cost_terms(c, m) for c, m in self.gemms))]


def fit_compile_cost(compiles: Sequence[CompiledGraph]) -> tuple[CompileCost, dict[str, float]]:
    """Fit :class:`CompileCost` to timed compiles of graphs, each graph compiled under several
    settings: the constants that tell settings apart (``alone_s``, ``measure_s``,
    ``candidate_s``) by least squares within each graph (its compiles less their mean, so what
    a graph costs every setting alike, its size and shapes, does not count), then ``base_s`` so
    that the model's total over the compiles is theirs (totals are what the grid compares).
    Returns it and the fit's relative errors per compile (median, 90th percentile and worst of
    ``|predicted / measured - 1|``).

    :raises ValueError: when the settings a graph was compiled under do not tell the constants
        apart (each needs compiles that differ in it: single picks, and measured sets of two
        sizes at least).
    """
    terms = torch.tensor([c.terms() for c in compiles], dtype=torch.float64)
    seconds = torch.tensor([c.seconds for c in compiles], dtype=torch.float64)
    names = sorted({c.graph for c in compiles})
    graph = torch.tensor([names.index(c.graph) for c in compiles])
    counts = torch.zeros(len(names), dtype=torch.float64).index_add_(0, graph, torch.ones(len(compiles), dtype=torch.float64))

    def within(values: torch.Tensor) -> torch.Tensor:  # [compiles, k]: each compile less its graph's mean
        sums = torch.zeros(len(names), values.shape[1], dtype=torch.float64).index_add_(0, graph, values)
        return values - (sums / counts[:, None])[graph]

    differing = within(terms[:, 1:])
    if int(torch.linalg.matrix_rank(differing)) < differing.shape[1]:
        raise ValueError(
            "the settings each graph was compiled under do not tell the constants apart: compile each "
            "under single picks and under measured sets of two sizes at least"
        )
    marginal = torch.linalg.lstsq(differing, within(seconds[:, None])).solution.squeeze(1)
    base = float((seconds.sum() - (terms[:, 1:] @ marginal).sum()) / terms[:, 0].sum())
    cost = CompileCost(base, *marginal.tolist())
    predicted = terms @ torch.tensor(cost.constants(), dtype=torch.float64)
    error = (predicted / seconds - 1).abs()
    return cost, {
        "compiles": len(compiles),
        "graphs": len(names),
        "relative_error_median": float(error.median()),
        "relative_error_p90": float(torch.quantile(error, 0.9)),
        "relative_error_worst": float(error.max()),
        "total_over_measured": float(predicted.sum() / seconds.sum()),
    }


@dataclass(frozen=True)
class Outcome:
    """One problem under one setting: runtime over the best measured candidate, compile seconds."""

    regret: float
    compile_s: float


def pick_outcome(problem: SimulatedProblem, cost: CompileCost) -> Outcome:
    """The predicted best compiled alone."""
    order = problem.ranking.order
    if not order:  # nothing scored: everything is measured, whatever the threshold
        return measure_outcome(problem, cost, len(problem.measured_us), math.inf)
    best = order[0]
    return Outcome(problem.measured_us[best] / problem.best_us, cost.seconds(int(problem.compiled(best)), 1))


def measure_outcome(problem: SimulatedProblem, cost: CompileCost, top_k: int, ratio: float) -> Outcome:
    """The measured set measured exactly and its fastest compiled."""
    chosen = measured_candidates(problem, top_k, ratio)
    compiled = sum(problem.compiled(i) for i in chosen)
    fastest = min(problem.measured_us[i] for i in chosen)
    return Outcome(fastest / problem.best_us, cost.seconds(compiled, len(chosen)))


def simulate_grid(
    problems: Sequence[SimulatedProblem],
    cost: CompileCost,
    thresholds: Sequence[float],
    top_ks: Sequence[int],
    ratios: Sequence[float],
) -> list[dict[str, float]]:
    """One row per (threshold, top_k, ratio): runtime over best (geomean, p90, worst), total and
    mean compile seconds, the share of problems picked alone and the mean size of the measured
    sets. Each problem is kept alone by its run-time confidence (:attr:`SimulatedProblem.confidence`)."""
    picks = [pick_outcome(p, cost) for p in problems]
    confidences = [p.confidence if p.ranking.order else None for p in problems]
    rows = []
    for top_k, ratio in itertools.product(top_ks, ratios):
        measured = [measure_outcome(p, cost, top_k, ratio) for p in problems]
        sizes = [len(measured_candidates(p, top_k, ratio)) for p in problems]
        for threshold in thresholds:
            alone = [c is not None and c >= threshold for c in confidences]
            chosen = [pick if one else other for pick, other, one in zip(picks, measured, alone)]
            compile_s = sum(o.compile_s for o in chosen)
            measured_sizes = [size for size, one in zip(sizes, alone) if not one]
            rows.append({
                "threshold": threshold, "top_k": top_k, "ratio": ratio,
                **spread([o.regret for o in chosen]),
                "compile_s_total": compile_s, "compile_s_mean": compile_s / len(chosen),
                "single_pick_share": sum(alone) / len(alone),
                "measured_set_mean": sum(measured_sizes) / len(measured_sizes) if measured_sizes else 0.0,
            })  # fmt: skip
    return rows


#: The thresholds the rule weighs: finer near 1, where a calibrated confidence crowds (the
#: trusted share and the worst trusted pick change several times between 0.95 and 1).
THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(18)) + tuple(round(0.9 + 0.01 * i, 2) for i in range(11))
#: The rule's parameters: within 0.5% of the best geomean, worst at most issue 14's bound.
GEOMEAN_SLACK, WORST_BOUND = 0.005, 1.15

#: The selection rule, stated before the grid was computed.
SELECTION_RULE = (
    "Among the grid points evaluated on the early-stopping families: those whose runtime-over-best "
    "geomean is at most (1 + geomean_slack) times the grid's least geomean and whose worst is at "
    "most worst_bound (if no point meets worst_bound: at most the grid's least worst). Of these, the "
    "one with the least total simulated compile time; ties go to the higher threshold, then the "
    "smaller top_k, then the smaller ratio."
)


def selection_record() -> dict:
    """The rule and its parameters as a result file records them (chosen on the early-stopping families)."""
    return {"text": SELECTION_RULE, "geomean_slack": GEOMEAN_SLACK, "worst_bound": WORST_BOUND, "selected_on": "stopping"}


def choose_defaults(rows: Sequence[dict[str, float]], geomean_slack: float, worst_bound: float) -> dict[str, float]:
    """The grid row :data:`SELECTION_RULE` selects."""
    least_geomean = min(r["geomean"] for r in rows)
    bound = max(worst_bound, min(r["worst"] for r in rows))
    eligible = [r for r in rows if r["geomean"] <= least_geomean * (1 + geomean_slack) and r["worst"] <= bound]
    return min(eligible, key=lambda r: (r["compile_s_total"], -r["threshold"], r["top_k"], r["ratio"]))
