"""Does the sweep rank configs as Inductor's own max-autotune does?

For each problem, Inductor compiles the GEMM with max-autotune and its feedback hook records its
benchmark of every choice (:func:`~diode_backend.inductor.feedback.record_inductor_timings`).
The sweep then times the same configs (and ATen) on the same problem. Per problem we report the
Spearman rank correlation of the two timings over their shared candidates, and whether the
sweep's winner is within 3% of the best by Inductor's own timings. Inductor's shape padding is
switched off so that both time the same problem.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import torch

from ..dataset import DatasetMeta, ProblemTimings, load_dataset
from ..problem import KIND_ATEN, KIND_TRITON, GemmProblem
from .plan import PlannedProblem
from .sweep import make_operands, run_sweep
from .timing import TimingMethod

WINNER_SLACK = 1.03


def inductor_timings(
    problem: GemmProblem, search_space: str = "DEFAULT", device: str = "cuda", backends: str = "ATEN,TRITON"
) -> ProblemTimings:
    """Compile ``problem``'s op with max-autotune and return what Inductor benchmarked, in
    microseconds."""
    from ..inductor.feedback import record_inductor_timings
    from .sweep import _tf32

    ops = make_operands(problem, device)
    a, b, bias = ops["a"], ops["b"], ops["bias"]
    fn, args = {
        "mm": (torch.mm, (a, b)),
        "bmm": (torch.bmm, (a, b)),
        "addmm": (torch.addmm, (bias, a, b)),
        "baddbmm": (torch.baddbmm, (bias, a, b)),
    }[problem.op]
    options = {
        "max_autotune": True,
        "max_autotune_gemm_backends": backends,
        "max_autotune_gemm_search_space": search_space,
        "shape_padding": False,
        "comprehensive_padding": False,
    }
    torch._dynamo.reset()
    with _tf32(problem.allow_tf32), record_inductor_timings() as record:
        torch.compile(fn, options=options, dynamic=False)(*args)
    found = [item for item in record.problems if item.problem == problem]
    if not found:
        seen = [item.problem.describe() for item in record.problems] + [f"{n}: {why}" for n, why in record.skipped]
        raise RuntimeError(f"Inductor did not autotune {problem.describe()} (saw {seen})")
    return found[0]


def compare(inductor: ProblemTimings, sweep: ProblemTimings) -> dict[str, Any]:
    """Rank agreement of two timings of one problem over their shared candidates."""
    ours = dict(zip(sweep.configs, sweep.times_us))
    theirs = {c: t for c, t in zip(inductor.configs, inductor.times_us) if c in ours}
    shared = list(theirs)
    rho = spearman([theirs[c] for c in shared], [ours[c] for c in shared])
    sweep_best = min(shared, key=ours.__getitem__)
    inductor_best = min(shared, key=theirs.__getitem__)
    aten = [c for c in shared if c.kind == KIND_ATEN]
    return {
        "problem": inductor.problem.describe(),
        "candidates": len(shared),
        "spearman": rho,
        "sweep_winner": sweep_best.describe(),
        "inductor_winner": inductor_best.describe(),
        # how much slower, by Inductor's clock, the sweep's pick is than Inductor's pick
        "winner_ratio": theirs[sweep_best] / theirs[inductor_best],
        "winner_within_3pct": theirs[sweep_best] <= WINNER_SLACK * theirs[inductor_best],
        "aten_ratio_sweep_over_inductor": [ours[c] / theirs[c] for c in aten],
        "median_ratio_sweep_over_inductor": statistics.median(ours[c] / theirs[c] for c in shared),
    }


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    rx, ry = _ranks(x), _ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    var = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return cov / var if var else float("nan")


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2
        i = j + 1
    return ranks


def run_fidelity(
    problems: Sequence[GemmProblem],
    meta: DatasetMeta,
    *,
    search_space: str = "DEFAULT",
    method=TimingMethod(),
    max_seconds: float | None = None,
) -> dict[str, Any]:
    """Time ``problems`` with Inductor and with the sweep; per-problem comparisons and totals.

    Problems whose Inductor compile fails are reported under ``errors``; after ``max_seconds``
    no further problem is compiled (the sweep still times those Inductor did).
    """
    started = time.monotonic()
    observed, errors = [], {}
    for problem in problems:
        if max_seconds is not None and time.monotonic() - started > max_seconds:
            break
        try:
            observed.append(inductor_timings(problem, search_space))
        except Exception as err:  # reported: one failing compile must not lose the others
            errors[problem.describe()] = f"{type(err).__name__}: {err}"[:500]
    planned = [
        PlannedProblem(
            item.problem,
            tuple(c for c in item.configs if c.kind in (KIND_ATEN, KIND_TRITON)),
            "validation",
            "fidelity",
            "observed",
        )
        for item in observed
    ]
    with tempfile.TemporaryDirectory() as tmp:
        report = run_sweep(planned, tmp, meta, method=method, progress=False)
        swept = {item.problem: item for item in load_dataset(tmp)}
    rows = [compare(item, swept[item.problem]) for item in observed if item.problem in swept]
    rhos = [r["spearman"] for r in rows if not math.isnan(r["spearman"])]
    return {
        "search_space": search_space,
        "problems": len(rows),
        "median_spearman": statistics.median(rhos) if rhos else None,
        "min_spearman": min(rhos) if rhos else None,
        "winner_within_3pct": sum(r["winner_within_3pct"] for r in rows),
        "sweep": report.summary(),
        "rows": rows,
        "errors": errors,
    }
