"""How well a scorer ranks GEMM candidates on problems it never saw, against the baselines.

For every validation problem (all its candidates measured) each scorer ranks the candidates and
is judged by:

- ``rmse_log``: root mean square error of the natural log of the predicted time (all candidates);
  ``mape``: mean absolute percentage error of the time;
- ``kendall_tau``: per-problem Kendall tau-b between predicted and measured times (median, mean);
- ``top{1,5,10}_regret``: the fastest measured time among the scorer's top k over the fastest
  measured time of all candidates (geometric mean, 90th percentile, worst over problems).

Scorers: the model, the analytical scorer, and the nearest training problem (its measured times
of the same configs, scaled by the FLOP ratio). Candidate-list baselines get the same regret
figures: Inductor's max-autotune DEFAULT list (the best of it, as autotuning would find) and ATen
alone. The model's confidence gets a reliability table, its expected calibration error and the
area under the ROC curve of "the confidence predicts a hit" (a hit: the top-1 pick within
:data:`~diode_backend.model.calibration.HIT_TOLERANCE` of the best). A scorer that scores none of a
problem's candidates is charged ATen's time, which is what Inductor would run.

DIODE ranks more at compile time than a problem's timed candidates: Inductor's whole list, about
four times the collector's stratified sample. Given that list, the report adds
``compile_time_calibration``: the model's confidence and pick over it, as DIODE computes them
(the pick's ``top1_regret`` is what DIODE's single pick runs, offline), judged where the pick was
timed (the fastest timed candidate as the best) or, given pick labels
(:mod:`diode_backend.offline.pick_labels`), timed beside the fastest tile on another day, with
the picks kept alone at the default threshold; the problems whose compile-time pick was not
timed are counted.

Every figure is given over all problems and again per workload class
(:mod:`diode_backend.workload`) and per model family (:mod:`diode_backend.offline.families`): a model
can be right on average and wrong on a whole kind of GEMM.

One module because every figure of the report comes from one pass over the problems and one
report format (:data:`REPORT_VERSION`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..analytical import AnalyticalScorer
from .dataset import ProblemTimings, timed_hardware
from .families import family_of
from .pick_labels import pick_ratio
from ..options import DiodeOptions
from ..policy import rank_candidates
from ..problem import KIND_ATEN, GemmProblem, HardwareInfo, KernelConfig
from ..scorer import GemmScorer, Prediction
from ..workload import WORKLOAD_CLASSES, workload_class
from ..model.calibration import HIT_TOLERANCE, auroc

REPORT_FORMAT = "diode-validation-report"
REPORT_VERSION = 2
TOP_K = (1, 5, 10)
#: The issue's targets: (figure, comparison, bound).
TARGETS = (
    ("top1_regret.geomean", "<=", 1.03),
    ("top1_regret.p90", "<=", 1.10),
    ("top5_regret.geomean", "<=", 1.01),
    ("kendall_tau.median", ">=", 0.85),
    ("calibration.ece", "<=", 0.05),
)
_RELIABILITY_BINS = 10
#: The confidence at which DIODE, by default, trusts a pick alone.
TRUSTED = DiodeOptions().diode_confidence_threshold


def config_key(config: KernelConfig) -> tuple:
    """A config's identity across ops (``triton::mm`` and ``triton::bmm`` tiles are the same
    tile); ATen kernels keep their template, which names the library call."""
    if config.kind == KIND_ATEN:
        return (config.kind, config.template.split("::")[-1])
    return (config.kind, config.block_m, config.block_n, config.block_k, config.num_stages, config.num_warps, config.group_m)


class NearestProblemScorer:
    """Predicts a problem's candidate times from the closest training problem: same op, dtype,
    TF32 and layouts when possible (else same dtype, else any), nearest in log2 of M, N, K and
    batch; its measured time of the same config scaled by the FLOP ratio, ``nan`` for configs it
    did not measure."""

    name = "nearest_neighbour"
    identity = "nearest-neighbour"

    def __init__(self, problems: Sequence[ProblemTimings]) -> None:
        if not problems:
            raise ValueError("the nearest-neighbour baseline needs training problems")
        self.problems = list(problems)
        self._sizes = torch.tensor([_log_sizes(p.problem) for p in self.problems], dtype=torch.float64)
        self._times = [dict(zip(map(config_key, p.configs), p.times_us)) for p in self.problems]

    def nearest(self, problem: GemmProblem) -> int:
        """Index of the closest training problem."""
        for same in (_same_kind, _same_dtype, lambda a, b: True):
            allowed = torch.tensor([same(problem, p.problem) for p in self.problems])
            if allowed.any():
                break
        distance = (self._sizes - torch.tensor(_log_sizes(problem), dtype=torch.float64)).pow(2).sum(1)
        return int(torch.where(allowed, distance, math.inf).argmin())

    def predict(self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo) -> Prediction:
        index = self.nearest(problem)
        times = self._times[index]
        scale = problem.flops / self.problems[index].problem.flops
        return Prediction(tuple(times.get(config_key(c), math.nan) * scale for c in configs), confidence=None)


def _log_sizes(problem: GemmProblem) -> tuple[float, ...]:
    return tuple(math.log2(max(x, 1)) for x in (problem.m, problem.n, problem.k, problem.batch))


def _same_kind(a: GemmProblem, b: GemmProblem) -> bool:
    return (a.op, a.dtype, a.allow_tf32, a.a_layout, a.b_layout) == (b.op, b.dtype, b.allow_tf32, b.a_layout, b.b_layout)


def _same_dtype(a: GemmProblem, b: GemmProblem) -> bool:
    return (a.dtype, a.allow_tf32) == (b.dtype, b.allow_tf32)


# -- per problem ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProblemScore:
    """One scorer on one problem: ``regrets[k]`` for each k of :data:`TOP_K`; ``log_errors``
    are ``log(predicted / measured)`` of the candidates it scored finitely, out of
    ``candidates``."""

    candidates: int
    regrets: dict[int, float]
    kendall_tau: float
    log_errors: torch.Tensor
    confidence: float | None


def fallback_candidate(item: ProblemTimings) -> int:
    """The candidate charged when nothing was scored: the fastest ATen call, else the slowest."""
    aten = [i for i, c in enumerate(item.configs) if c.kind == KIND_ATEN]
    times = item.times_us.__getitem__
    return min(aten, key=times) if aten else max(range(len(item.times_us)), key=times)


def score_problem(prediction: Prediction, times_us: Sequence[float], fallback: int) -> ProblemScore:
    """Judge one prediction against measured times; ``fallback`` is the candidate charged
    when nothing was scored (ATen)."""
    truth = torch.tensor(times_us, dtype=torch.float64)
    predicted = torch.tensor(prediction.times_us, dtype=torch.float64)
    best = float(truth.min())
    order = prediction.order() or [fallback]
    regrets = {k: float(truth[order[:k]].min()) / best for k in TOP_K}
    finite = torch.isfinite(predicted) & (predicted > 0)
    log_errors = torch.log(predicted[finite]) - torch.log(truth[finite])
    tau = kendall_tau(predicted[finite], truth[finite]) if int(finite.sum()) >= 2 else math.nan
    return ProblemScore(len(truth), regrets, tau, log_errors, prediction.confidence)


def kendall_tau(x: torch.Tensor, y: torch.Tensor) -> float:
    """Kendall's tau-b of two 1-D samples (ties counted as neither concordant nor discordant);
    ``nan`` when either sample is constant."""
    dx = torch.sign(x[:, None] - x[None, :]).to(torch.int8)
    dy = torch.sign(y[:, None] - y[None, :]).to(torch.int8)
    concordance = float((dx * dy).sum(dtype=torch.int64))
    pairs_x, pairs_y = float(dx.count_nonzero()), float(dy.count_nonzero())
    if pairs_x == 0 or pairs_y == 0:
        return math.nan
    return concordance / math.sqrt(pairs_x * pairs_y)


# -- aggregation ----------------------------------------------------------------------------------


def spread(values: Sequence[float]) -> dict[str, float]:
    """Geometric mean, 90th percentile (linear interpolation) and worst of ratios >= 1."""
    data = torch.tensor(values, dtype=torch.float64)
    return {
        "geomean": float(data.log().mean().exp()),
        "p90": float(torch.quantile(data, 0.9)),
        "worst": float(data.max()),
    }


def summarize_scorer(scores: Sequence[ProblemScore]) -> dict[str, Any]:
    """The report figures of one scorer over all problems."""
    errors = torch.cat([s.log_errors for s in scores])
    taus = [s.kendall_tau for s in scores if not math.isnan(s.kendall_tau)]
    summary: dict[str, Any] = {
        "rmse_log": float(errors.pow(2).mean().sqrt()) if errors.numel() else math.nan,
        "mape": float((errors.exp() - 1).abs().mean() * 100) if errors.numel() else math.nan,
        "scored_fraction": errors.numel() / max(sum(s.candidates for s in scores), 1),
        "kendall_tau": {"median": statistics.median(taus), "mean": statistics.fmean(taus)} if taus else None,
    }
    for k in TOP_K:
        summary[f"top{k}_regret"] = spread([s.regrets[k] for s in scores])
    return summary


def reliability(confidences: Sequence[float], hits: Sequence[bool], bins: int = _RELIABILITY_BINS) -> dict[str, Any]:
    """Reliability table in equal-width confidence bins and the expected calibration error
    (bin-count-weighted mean of |mean confidence - observed hit rate|)."""
    table, ece, total = [], 0.0, len(confidences)
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        members = [i for i, c in enumerate(confidences) if low <= c < high or (b == bins - 1 and c == 1.0)]
        if not members:
            continue
        mean_confidence = statistics.fmean(confidences[i] for i in members)
        observed = statistics.fmean(float(hits[i]) for i in members)
        table.append({"low": low, "high": high, "count": len(members), "confidence": mean_confidence, "observed": observed})
        ece += len(members) / total * abs(mean_confidence - observed)
    return {
        "bins": table,
        "ece": ece,
        "auroc": auroc(confidences, hits),
        "mean_confidence": statistics.fmean(confidences),
        "hit_rate": statistics.fmean(map(float, hits)),
    }


# -- the report -----------------------------------------------------------------------------------


def _compile_time_pick(
    scorer: GemmScorer,
    item: ProblemTimings,
    candidates: Callable[[GemmProblem, HardwareInfo], Sequence[KernelConfig]],
    hardware: HardwareInfo,
    labels: Mapping[GemmProblem, ProblemTimings] | None,
) -> tuple[float, float, bool] | None:
    """The confidence of ``scorer``'s pick over the compile-time list of ``item``'s problem, that
    pick's time over the fastest timed with it and whether ``labels`` timed it
    (:func:`~diode_backend.offline.pick_labels.pick_ratio`); None where neither timed the pick
    or there is no confidence."""
    configs = list(candidates(item.problem, hardware))
    ranking = rank_candidates(scorer, item.problem, configs, hardware)
    if not ranking.order or ranking.confidence is None:
        return None
    judged = pick_ratio(configs[ranking.order[0]], item, labels)
    return None if judged is None else (ranking.confidence, *judged)


def _calibration_block(judged: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Reliability of (confidence, pick over best) pairs, and the picks fast_autotune with the
    default threshold compiles alone, unbenchmarked."""
    block: dict[str, Any] = {}
    if judged:
        block.update(reliability([c for c, _ in judged], [r <= 1 + HIT_TOLERANCE for _, r in judged]))
    trusted = [r for c, r in judged if c >= TRUSTED]
    block["trusted"] = {"threshold": TRUSTED, "problems": len(trusted), "top1_regret_worst": max(trusted, default=math.nan)}
    return block


def validate(
    scorer: GemmScorer,
    problems: Sequence[ProblemTimings],
    hardware: HardwareInfo,
    *,
    train_problems: Sequence[ProblemTimings] = (),
    default_candidates: Callable[[GemmProblem], Sequence[KernelConfig]] | None = None,
    compile_time_candidates: Callable[[GemmProblem, HardwareInfo], Sequence[KernelConfig]] | None = None,
    pick_labels: Mapping[GemmProblem, ProblemTimings] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The validation report (JSON-ready) of ``scorer`` on ``problems``, each scored with
    ``hardware`` under its own TF32 rule (:func:`~diode_backend.offline.dataset.timed_hardware`).

    :param train_problems: the nearest-neighbour baseline's lookup table (omitted when empty).
    :param default_candidates: Inductor's DEFAULT candidate list for a problem (omitted when
        None); its best measured time is the baseline.
    :param compile_time_candidates: the list DIODE ranks at compile time for a problem on a
        hardware (omitted when None): ``compile_time_calibration``.
    :param pick_labels: timings of compile-time picks the problems' records did not time, by
        problem (:func:`~diode_backend.offline.pick_labels.load_pick_labels`).
    :param progress: called as ``progress(done, total)`` after each problem.
    """
    problems = [p for p in problems if len(p.times_us) >= 2]
    if not problems:
        raise ValueError("no validation problem with two or more measured candidates")
    scorers: dict[str, GemmScorer] = {"model": scorer, "analytical": AnalyticalScorer()}
    if train_problems:
        scorers["nearest_neighbour"] = NearestProblemScorer(train_problems)
    scores: dict[str, list[ProblemScore]] = {name: [] for name in scorers}
    subsets: dict[str, list[float]] = {"aten": []}
    if default_candidates is not None:
        subsets["inductor_default"] = []
    coverage: list[float] = []
    compile_time: list[tuple[float, float, bool] | None] = []  # (confidence, pick over best, from a label) where timed
    rows = []
    hardware_of = timed_hardware(hardware)  # each problem is scored under its own TF32 rule
    for done, item in enumerate(problems, start=1):
        fallback = fallback_candidate(item)
        row: dict[str, Any] = {"problem": item.problem.describe(), "candidates": len(item.configs), "best_us": min(item.times_us)}
        for name, each in scorers.items():
            result = score_problem(each.predict(item.problem, item.configs, hardware_of(item)), item.times_us, fallback)
            scores[name].append(result)
            row[name] = {"top1_regret": result.regrets[1], "kendall_tau": result.kendall_tau}
            if name == "model":
                row[name]["confidence"] = result.confidence
        best = min(item.times_us)
        subsets["aten"].append(item.times_us[fallback] / best)
        if default_candidates is not None:
            measured = dict(zip(map(config_key, item.configs), item.times_us))
            wanted = [config_key(c) for c in default_candidates(item.problem)]
            found = [measured[key] for key in wanted if key in measured]
            coverage.append(len(found) / max(len(wanted), 1))
            subsets["inductor_default"].append(min(found, default=item.times_us[fallback]) / best)
            row["inductor_default_regret"] = subsets["inductor_default"][-1]
        row["aten_regret"] = subsets["aten"][-1]
        if compile_time_candidates is not None:
            compile_time.append(_compile_time_pick(scorer, item, compile_time_candidates, hardware_of(item), pick_labels))
            row["compile_time"] = None if compile_time[-1] is None else dict(zip(("confidence", "top1_regret", "pick_label"), compile_time[-1]))
        rows.append(row)
        if progress is not None:
            progress(done, len(problems))

    def figures(indices: list[int]) -> dict[str, Any]:
        chosen = [problems[i] for i in indices]
        block: dict[str, Any] = {
            "problems": len(chosen),
            "candidates": sum(len(p.configs) for p in chosen),
            "scorers": {name: summarize_scorer([result[i] for i in indices]) for name, result in scores.items()},
            "baselines": {name: {"top1_regret": spread([values[i] for i in indices])} for name, values in subsets.items()},
        }
        if coverage:
            block["baselines"]["inductor_default"]["measured_fraction"] = statistics.fmean(coverage[i] for i in indices)
        model = [scores["model"][i] for i in indices]
        confident = [(s.confidence, s.regrets[1]) for s in model if s.confidence is not None]
        if confident:
            block["calibration"] = _calibration_block(confident)
        if compile_time:
            judged = [compile_time[i] for i in indices if compile_time[i] is not None]
            block["compile_time_calibration"] = {
                "problems": len(indices), "judged": len(judged), "judged_by_pick_labels": sum(labelled for *_, labelled in judged),
                **({"top1_regret": spread([ratio for _, ratio, _ in judged])} if judged else {}),
                **_calibration_block([(confidence, ratio) for confidence, ratio, _ in judged]),
            }  # fmt: skip
        return block

    def grouped(keys: list[str], order: Sequence[str]) -> dict[str, Any]:
        return {key: figures([i for i, k in enumerate(keys) if k == key]) for key in order if key in keys}

    classes = [workload_class(p.problem) for p in problems]
    families = [family_of(p) for p in problems]
    report: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "format_version": REPORT_VERSION,
        "hardware": hardware.key,
        **figures(list(range(len(problems)))),
        "by_class": grouped(classes, WORKLOAD_CLASSES),
        "by_family": grouped(families, sorted(set(families))),
    }
    for row, workload, family in zip(rows, classes, families):
        row["class"], row["family"] = workload, family
    report["targets"] = check_targets(report)
    report["per_problem"] = rows
    return report


def check_targets(report: dict[str, Any]) -> dict[str, Any]:
    """Each target of :data:`TARGETS` for the model, and whether each model figure beats every
    baseline's (lower is better except Kendall tau)."""
    model = report["scorers"]["model"]
    figures = {"calibration.ece": report.get("calibration", {}).get("ece", math.nan)}
    for path, _, _ in TARGETS:
        if not path.startswith("calibration"):
            figures[path] = _lookup(model, path)
    targets = {}
    for path, sense, bound in TARGETS:
        value = figures[path]
        met = value <= bound if sense == "<=" else value >= bound
        targets[path] = {"value": value, "target": f"{sense} {bound}", "met": bool(met)}
    losses = []
    for name, other in {**report["scorers"], **report["baselines"]}.items():
        if name == "model":
            continue
        for path in _comparable(other):
            mine, theirs = _lookup(model, path), _lookup(other, path)
            better = mine >= theirs if path.startswith("kendall_tau") else mine <= theirs
            if not better:
                losses.append({"baseline": name, "figure": path, "model": mine, "baseline_value": theirs})
    targets["better_than_every_baseline"] = {"met": not losses, "losses": losses}
    return targets


def _comparable(figures: dict[str, Any]) -> list[str]:
    paths = []
    for key, value in figures.items():
        if isinstance(value, dict):
            paths += [f"{key}.{inner}" for inner, v in value.items() if isinstance(v, float) and not math.isnan(v)]
        elif key in ("rmse_log", "mape") and isinstance(value, float) and not math.isnan(value):
            paths.append(key)
    return paths


def _lookup(figures: dict[str, Any], path: str) -> float:
    value: Any = figures
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return float(value) if isinstance(value, (int, float)) else math.nan
