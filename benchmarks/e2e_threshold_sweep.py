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
over ``e2e_report.WORST_BOUND`` of the run's best, and whether
issue 14's targets hold on the run's best (geomean at most :data:`GEOMEAN_TARGET`, worst at most
``e2e_report.WORST_BOUND``, compile at most :data:`COMPILE_TARGET` of max-autotune DEFAULT's).

The compile times are those of one GEMM a graph; in graphs the compiles of a graph's GEMMs
overlap, so the figures differ (``e2e_validation --graph-size``). A default may be chosen on a
run of the early-stopping families (``e2e_validation --families stopping``); on the held-out
families the sweep is a report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_replay  # noqa: E402
import e2e_report  # noqa: E402

#: Issue 14's targets for the defaults, beside ``e2e_report.WORST_BOUND``: runtime geomean over
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
        and run["worst"] <= e2e_report.WORST_BOUND
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", type=Path, help="a result file of benchmarks/e2e_validation.py (or e2e_merge.py)")
    parser.add_argument("--thresholds", type=float, nargs="+", default=list(THRESHOLDS), metavar="T",
                        help=f"the thresholds to replay (default {' '.join(map(str, THRESHOLDS))})")  # fmt: skip
    parser.add_argument("--out", type=Path, help="write the sweep here as JSON (default: print it)")
    args = parser.parse_args(argv)
    result = e2e_report.read_result(args.result, parser)
    missing = [mode for mode in (e2e_report.SINGLE_PICK, e2e_report.DEFAULTS, e2e_report.MAX_AUTOTUNE) if mode not in result["modes"]]
    if missing:
        parser.error(f"{args.result}: the run has no {', '.join(missing)} mode; the sweep replays the single pick and the defaults against max-autotune DEFAULT")
    out = {
        "benchmark": "e2e_threshold_sweep",
        "what": "replayed from one run at other thresholds, not measured",
        "method": __doc__.split("\n\n", 1)[1].strip(),
        "run": {"path": str(args.result), "rows": len(result["rows"]), "hardware": result.get("hardware", {}).get("name")},
        "sweep": sweep(result, args.thresholds),
    }
    e2e_report.emit(out, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
