"""The confidence figures of ``h100_oof_confidence.md``, side by side for several models, from
their ``diode validate --report`` files (nothing is ranked here): AUROC and ECE overall and per
workload class, the picks trusted at the default threshold and how many of them run over 1.2x
the best, and the single pick's top-1 regret (geomean / p90 / worst) overall and per class.
Added after those figures were seen, deciding nothing (``post_hoc`` in the JSON): a paired
bootstrap of the AUROC over the problems, and the AUROC over pairs of a hit and a miss of the
same workload class only.

    python benchmarks/confidence_heldout_table.py 8b6cf773=/tmp/heldout-8b6cf773.json \\
        oof=/tmp/heldout-oof.json --out benchmarks/results/h100_oof_confidence.json
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

from diode_backend.files import read_json
from diode_backend.model.calibration import HIT_TOLERANCE, auroc
from diode_backend.offline.validate import TRUSTED
from diode_backend.workload import WORKLOAD_CLASSES

#: A trusted pick slower than this over the best is one issue 12 counts against the confidence.
OVER = 1.2


def figures(block: dict, rows: list[dict]) -> dict:
    """One report block's (overall or one class's) figures, and its rows' trusted picks."""
    calibration = block.get("calibration", {})
    regret = block["scorers"]["model"]["top1_regret"]
    trusted = [r["model"]["top1_regret"] for r in rows if (r["model"]["confidence"] or 0.0) >= TRUSTED]
    return {
        "problems": block["problems"],
        "misses": sum(r["model"]["top1_regret"] > 1 + HIT_TOLERANCE for r in rows),
        "auroc": _finite(calibration.get("auroc")),
        "ece": _finite(calibration.get("ece")),
        "trusted": len(trusted),
        f"trusted_over_{OVER}x": sum(t > OVER for t in trusted),
        "trusted_worst": max(trusted, default=None),
        "top1_geomean": regret["geomean"],
        "top1_p90": regret["p90"],
        "top1_worst": regret["worst"],
    }


def _finite(value):
    return None if value is None or math.isnan(value) else value


def summarize(report: dict) -> dict:
    rows = report["per_problem"]
    result = {"overall": figures(report, rows)}
    for name in WORKLOAD_CLASSES:
        if name in report["by_class"]:
            result[name] = figures(report["by_class"][name], [r for r in rows if r["class"] == name])
    return result


def post_hoc(reports: dict[str, dict], resamples: int = 2000) -> dict:
    """Per model: the 2.5/50/97.5 percentiles of the AUROC over ``resamples`` bootstrap draws of
    the problems (the same draws for every model, each model's AUROC difference from the first
    model's too), and the AUROC over hit-miss pairs of one workload class."""
    rows = {name: report["per_problem"] for name, report in reports.items()}
    first = next(iter(rows.values()))
    assert all([r["problem"] for r in mine] == [r["problem"] for r in first] for mine in rows.values())
    hits = [r["model"]["top1_regret"] <= 1 + HIT_TOLERANCE for r in first]
    scores = {name: [r["model"]["confidence"] for r in mine] for name, mine in rows.items()}
    rng, draws = random.Random(0), {name: [] for name in rows}
    for _ in range(resamples):
        chosen = [rng.randrange(len(hits)) for _ in hits]
        if len({hits[i] for i in chosen}) == 2:
            for name, values in scores.items():
                draws[name].append(auroc([values[i] for i in chosen], [hits[i] for i in chosen]))

    def percentiles(values: list[float]) -> list[float]:
        ordered = sorted(values)
        return [ordered[int(q * (len(ordered) - 1))] for q in (0.025, 0.5, 0.975)]

    base = next(iter(draws.values()))
    result = {}
    for name, values in scores.items():
        wins = pairs = 0.0
        for kind in sorted({r["class"] for r in first}):
            members = [i for i, r in enumerate(first) if r["class"] == kind]
            for h in (i for i in members if hits[i]):
                for m in (i for i in members if not hits[i]):
                    wins += (values[h] > values[m]) + 0.5 * (values[h] == values[m])
                    pairs += 1
        result[name] = {
            "bootstrap_auroc": percentiles(draws[name]),
            "bootstrap_gain_over_first": percentiles([b - a for a, b in zip(base, draws[name])]),
            "bootstrap_below_0.8": sum(v < 0.8 for v in draws[name]) / len(draws[name]),
            "within_class_auroc": wins / pairs,
            "within_class_pairs": int(pairs),
        }
    return result


def _cell(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def table(summaries: dict[str, dict]) -> str:
    names = list(summaries)
    columns = [
        ("AUROC", "auroc", 3), ("ECE", "ece", 3), ("trusted", "trusted", 0), (f"over {OVER}x", f"trusted_over_{OVER}x", 0),
        ("top-1 geomean", "top1_geomean", 4), ("p90", "top1_p90", 4), ("worst", "top1_worst", 3),
    ]  # fmt: skip
    header = "| set | problems / misses | " + " | ".join(f"{title} ({name})" for title, _, _ in columns for name in names) + " |"
    lines = [header, "|" + " --- |" * (2 + len(columns) * len(names))]
    for key in summaries[names[0]]:
        first = summaries[names[0]][key]
        cells = [_cell(summaries[name][key][field], digits) for _, field, digits in columns for name in names]
        lines.append(f"| {key} | {first['problems']} / {_cell(first['misses'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", metavar="NAME=REPORT", help="a model's name and its validate report")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    reports = {}
    for item in args.reports:
        name, path = item.split("=", 1)
        reports[name] = read_json(path)
    summaries = {name: summarize(report) for name, report in reports.items()}
    print(table(summaries))
    extra = post_hoc(reports)
    print(json.dumps({"post_hoc": extra}, indent=2))
    if args.out:
        figures = {"trusted_threshold": TRUSTED, "over": OVER, "models": summaries, "post_hoc": extra}
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
