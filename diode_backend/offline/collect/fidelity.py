"""Does the sweep rank configs as Inductor's own max-autotune does?

For each problem, Inductor compiles the GEMM with max-autotune and its feedback hook records its
benchmark of every choice (:func:`~diode_backend.offline.collect.feedback.record_inductor_timings`).
Inductor's compiled kernels are then run again under the sweep's timer, and the sweep times its
own kernels for the same configs (and ATen). Two comparisons per problem, over shared
candidates:

* ``kernels``: the sweep's kernels against Inductor's kernels, both under the sweep's timer. This
  is the test of the runtime-shaped kernels: they should rank as Inductor's static ones.
* ``inductor``: the sweep against Inductor's own benchmark, whose method differs (no guard
  against host launch gaps, minimum instead of median): small kernels and ATen calls come out
  slower there.

Each reports the Spearman rank correlation, for all candidates and for Triton configs alone,
and whether the sweep's winner is within 3% of the best by the other clock. Inductor's shape
padding is off so that both time the same problem.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..dataset import DatasetMeta, ProblemTimings, load_dataset
from ...problem import KIND_ATEN, KIND_TRITON, GemmProblem, KernelConfig
from .plan import PlannedProblem
from .sweep import ACCURACY_TOLERANCE, _tf32, make_operands, run_sweep
from ...timing import Timer, TimingMethod

WINNER_SLACK = 1.03


def inductor_timings(
    problem: GemmProblem, search_space: str = "DEFAULT", device: str = "cuda", backends: str = "ATEN,TRITON"
) -> tuple[ProblemTimings, dict[KernelConfig, Callable[[], Any]], dict]:
    """Compile ``problem``'s op with max-autotune and return what Inductor benchmarked (in
    microseconds), a launch of each of its ATen and Triton kernels, and the operands those
    launches use (``make_operands``; the output is ``ops["out"]``)."""
    from ...inductor.feedback import choice_launcher
    from .feedback import record_inductor_timings

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
    with _tf32(problem.allow_tf32), record_inductor_timings(keep_choices=True) as record:
        torch.compile(fn, options=options, dynamic=False)(*args)
    found = [item for item in record.problems if item.problem == problem]
    if not found:
        seen = [item.problem.describe() for item in record.problems] + [f"{n}: {why}" for n, why in record.skipped]
        raise RuntimeError(f"Inductor did not autotune {problem.describe()} (saw {seen})")
    # Inductor's kernels take the bias expanded to the output's shape, as its lowering does
    inputs = (a, b) if bias is None else (bias.expand(ops["out"].shape), a, b)
    launches = {}
    for config, choice in record.choices[problem].items():
        launch = choice_launcher(choice, inputs, ops["out"])
        if launch is not None and config.kind in (KIND_ATEN, KIND_TRITON):
            launches[config] = launch
    return found[0], launches, ops


def time_launches(
    problem: GemmProblem, launches: dict[KernelConfig, Callable[[], Any]], ops: dict, timer: Timer
) -> ProblemTimings:
    """Check each launch's result against the reference, then time them as the sweep times its
    own kernels (microseconds)."""
    tolerance = ACCURACY_TOLERANCE["tf32" if problem.allow_tf32 else problem.dtype]
    scale = ops["ref"].abs().max().item()
    kept = {}
    with _tf32(problem.allow_tf32):
        for config, launch in launches.items():
            ops["out"].fill_(math.nan)
            launch()
            if (ops["out"].float() - ops["ref"]).abs().max().item() <= tolerance * scale:
                kept[config] = launch
        samples = timer.time(list(kept.values()))
    return ProblemTimings(problem, tuple(kept), tuple(Timer.summarize(s) for s in samples), failed=len(launches) - len(kept))


def compare(reference: ProblemTimings, sweep: ProblemTimings) -> dict[str, Any]:
    """Rank agreement of the sweep with a reference timing of the same problem (shared
    candidates; ``triton_*`` over the Triton configs alone)."""
    ours = dict(zip(sweep.configs, sweep.times_us))
    theirs = {c: t for c, t in zip(reference.configs, reference.times_us) if c in ours}
    out: dict[str, Any] = {}
    for prefix, shared in (("", list(theirs)), ("triton_", [c for c in theirs if c.kind == KIND_TRITON])):
        if len(shared) < 2:
            continue
        sweep_best = min(shared, key=ours.__getitem__)
        reference_best = min(shared, key=theirs.__getitem__)
        out.update(
            {
                f"{prefix}candidates": len(shared),
                f"{prefix}spearman": spearman([theirs[c] for c in shared], [ours[c] for c in shared]),
                # how much slower, by the reference's clock, the sweep's pick is than its own pick
                f"{prefix}winner_ratio": theirs[sweep_best] / theirs[reference_best],
                f"{prefix}winner_within_3pct": theirs[sweep_best] <= WINNER_SLACK * theirs[reference_best],
            }
        )
    out["sweep_winner"] = min(ours, key=ours.__getitem__).describe()
    out["median_ratio_sweep_over_reference"] = statistics.median(ours[c] / theirs[c] for c in theirs)
    out["aten_ratio_sweep_over_reference"] = [ours[c] / theirs[c] for c in theirs if c.kind == KIND_ATEN]
    return out


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
    method: TimingMethod = TimingMethod(),
    max_seconds: float | None = None,
) -> dict[str, Any]:
    """Compare the sweep with Inductor on ``problems`` (see the module docstring).

    Problems whose Inductor compile fails are reported under ``errors``; after ``max_seconds``
    no further problem is compiled (the sweep still times those Inductor did).
    """
    started = time.monotonic()
    timer = Timer(method)
    observed, retimed, errors = [], {}, {}
    for problem in problems:
        if max_seconds is not None and time.monotonic() - started > max_seconds:
            break
        try:
            item, launches, ops = inductor_timings(problem, search_space)
            retimed[problem] = time_launches(problem, launches, ops, timer)
            observed.append(item)
        except Exception as err:  # reported: one failing compile must not lose the others
            errors[problem.describe()] = f"{type(err).__name__}: {err}"[:500]
    planned = [
        PlannedProblem(item.problem, tuple(c for c in item.configs if c.kind in (KIND_ATEN, KIND_TRITON)), "validation", "fidelity", "observed")
        for item in observed
    ]
    with tempfile.TemporaryDirectory() as tmp:
        report = run_sweep(planned, tmp, meta, method=method, progress=False)
        swept = {item.problem: item for item in load_dataset(tmp)}
    rows = []
    for item in observed:
        sweep = swept[item.problem]
        ours = dict(zip(sweep.configs, sweep.times_us))
        kernels = dict(zip(retimed[item.problem].configs, retimed[item.problem].times_us))
        rows.append(
            {
                "problem": item.problem.describe(),
                "kernels": compare(retimed[item.problem], sweep),
                "inductor": compare(item, sweep),
                # config, Inductor's benchmark, Inductor's kernel under the sweep's timer, the sweep
                "times_us": [
                    [c.describe(), t, kernels.get(c), ours.get(c)] for c, t in zip(item.configs, item.times_us)
                ],
            }
        )
    return {
        "search_space": search_space,
        "problems": len(rows),
        "kernels": _totals([r["kernels"] for r in rows]),
        "inductor": _totals([r["inductor"] for r in rows]),
        "sweep": report.summary(),
        "rows": rows,
        "errors": errors,
    }


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for prefix in ("", "triton_"):
        rhos = [r[f"{prefix}spearman"] for r in rows if not math.isnan(r.get(f"{prefix}spearman", math.nan))]
        out[f"{prefix}median_spearman"] = statistics.median(rhos) if rhos else None
        out[f"{prefix}min_spearman"] = min(rhos) if rhos else None
        out[f"{prefix}winner_within_3pct"] = sum(bool(r.get(f"{prefix}winner_within_3pct")) for r in rows)
    return out
