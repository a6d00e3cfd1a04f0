"""Replay, not measure: DIODE's defaults in one end-to-end run of ``benchmarks/e2e_validation.py``
at other confidence thresholds, the run's own confidences deciding (CPU).

    python benchmarks/e2e_threshold_sweep.py E2E.json [--thresholds T ...] [--out SWEEP.json]

At each threshold, as ``e2e_replay.py`` replays another model's confidence: a row whose single
pick's recorded confidence reaches it takes the single pick's measured runtime and compile time
(``diode_pick``, the pick the defaults would keep alone), a row below it the defaults'
(``diode_fast``, the set they measured); a row the run's defaults kept alone that the threshold
would measure cannot be replayed (nothing in the run measured its set) and is counted. Each row
keeps the run's references (``e2e_report``). Per threshold: the rows kept alone and those not
replayed, the defaults' runtime against each reference, their compile time over max-autotune
DEFAULT's on the replayed rows, the defaults against max-autotune DEFAULT row by row, the rows
over ``tradeoff.WORST_BOUND`` of the run's best, and whether
issue 14's targets hold on the run's best (geomean at most :data:`GEOMEAN_TARGET`, worst at most
``tradeoff.WORST_BOUND``, compile at most :data:`COMPILE_TARGET` of max-autotune DEFAULT's).

The compile times are those of one GEMM a graph; in graphs the compiles of a graph's GEMMs
overlap, so the figures differ (``e2e_validation --graph-size``). A default may be chosen on a
run of the early-stopping families (``e2e_validation --families stopping``); on the held-out
families the sweep is a report. ``--select`` does the choosing: on a run every part of which
was given ``--families stopping`` alone (it refuses any other), over ``tradeoff.THRESHOLD_GRID``
unless ``--thresholds`` are given, it applies ``tradeoff.SELECTION_RULE`` (the rule the
simulated trade-off chose the shipped defaults by, the run's own ``top_k`` and ratio fixed) to
the replayed defaults' runtime over the run's best and their total compile time, weighing only
thresholds at which every row is replayed (a total over fewer rows is not comparable).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_replay  # noqa: E402
import e2e_report  # noqa: E402

from diode_backend.offline.tradeoff import GEOMEAN_SLACK, THRESHOLD_GRID, WORST_BOUND, choose_defaults, selection_record  # noqa: E402

#: Issue 14's targets for the defaults, beside ``tradeoff.WORST_BOUND``: runtime geomean over
#: the best measured, and compile time over max-autotune DEFAULT's.
GEOMEAN_TARGET, COMPILE_TARGET = 1.02, 0.1
THRESHOLDS = (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 1.0)


def recorded_confidences(result: dict) -> list[float | None]:
    """Each row's single-pick confidence as the run recorded it."""
    return [e2e_report.confidence(row["modes"].get(e2e_report.SINGLE_PICK, {})) for row in result["rows"]]


def at_threshold(result: dict, threshold: float) -> dict:
    """The defaults of ``result`` replayed at ``threshold`` (:mod:`this module <e2e_threshold_sweep>`)."""
    replay, skipped = e2e_replay.replayed_result(result, recorded_confidences(result), threshold)
    figures = e2e_report.report(replay)
    defaults = figures["modes"][e2e_report.DEFAULTS]
    run, compile_ratio = defaults["run"], defaults.get("compile_over_max_autotune")
    meets = (
        run is not None
        and compile_ratio is not None
        and run["geomean"] <= GEOMEAN_TARGET
        and run["worst"] <= WORST_BOUND
        and compile_ratio <= COMPILE_TARGET
    )
    return {
        "threshold": threshold,
        "rows": figures["rows"],
        "kept_alone": sum(row["modes"][e2e_report.DEFAULTS]["replayed_from"] == e2e_report.SINGLE_PICK for row in replay["rows"]),
        "not_replayed": len(skipped),
        "compile_s_total": defaults["compile_s_total"],
        "compile_over_max_autotune": compile_ratio,
        **{reference: defaults[reference] for reference in e2e_report.REFERENCES},
        "defaults_over_max_autotune": figures.get("defaults_over_max_autotune"),
        "over_worst_bound": figures["defaults_over_bound"]["run"],
        "meets_issue_14": meets,
    }


def sweep(result: dict, thresholds: list[float]) -> list[dict]:
    return [at_threshold(result, threshold) for threshold in sorted(thresholds)]


def run_families(result: dict) -> list[str | None]:
    """The ``--families`` each call of each part of the run was given (None where none was)."""
    calls = [call for part in result.get("parts", []) for call in (part, *part.get("earlier_calls", []))]
    given = []
    for call in calls:
        words = shlex.split(call.get("environment", {}).get("command", ""))
        given.append(words[words.index("--families") + 1] if "--families" in words[:-1] else None)
    return given


def selected(points: list[dict]) -> dict | None:
    """The threshold ``tradeoff.SELECTION_RULE`` selects among ``points`` (:func:`sweep`'s),
    weighing only those at which every row was replayed; None when there is none."""
    weighed = [
        {"threshold": p["threshold"], "top_k": 0, "ratio": 0.0, "geomean": p["run"]["geomean"], "worst": p["run"]["worst"],
         "compile_s_total": p["compile_s_total"]}
        for p in points if p["not_replayed"] == 0 and p["run"] is not None
    ]  # fmt: skip
    if not weighed:
        return None
    chosen = choose_defaults(weighed, GEOMEAN_SLACK, WORST_BOUND)
    return next(p for p in points if p["threshold"] == chosen["threshold"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", type=Path, help="a result file of benchmarks/e2e_validation.py (or e2e_merge.py)")
    parser.add_argument("--thresholds", type=float, nargs="+", metavar="T",
                        help=f"the thresholds to replay (default {' '.join(map(str, THRESHOLDS))}; with --select "
                             "tradeoff.THRESHOLD_GRID)")  # fmt: skip
    parser.add_argument("--select", action="store_true",
                        help="select a threshold by tradeoff.SELECTION_RULE (a run of --families stopping only)")  # fmt: skip
    parser.add_argument("--out", type=Path, help="write the sweep here as JSON (default: print it)")
    args = parser.parse_args(argv)
    result = e2e_report.read_result(args.result, parser)
    missing = [mode for mode in (e2e_report.SINGLE_PICK, e2e_report.DEFAULTS, e2e_report.MAX_AUTOTUNE) if mode not in result["modes"]]
    if missing:
        parser.error(f"{args.result}: the run has no {', '.join(missing)} mode; the sweep replays the single pick and the defaults against max-autotune DEFAULT")
    if args.select and set(run_families(result)) != {"stopping"}:
        parser.error(f"{args.result}: --select chooses on a run of --families stopping alone; this run's calls were given "
                     f"{sorted(map(str, set(run_families(result))))}")  # fmt: skip
    thresholds = args.thresholds or list(THRESHOLD_GRID if args.select else THRESHOLDS)
    points = sweep(result, thresholds)
    out = {
        "benchmark": "e2e_threshold_sweep",
        "what": "replayed from one run at other thresholds, not measured",
        "method": __doc__.split("\n\n", 1)[1].strip(),
        "run": {"path": str(args.result), "rows": len(result["rows"]), "hardware": result.get("hardware", {}).get("name")},
        "sweep": points,
    }
    if args.select:
        out["rule"] = selection_record()
        out["selected"] = selected(points)
    e2e_report.emit(out, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
