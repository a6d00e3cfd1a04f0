"""Two end-to-end runs of the same problems whose DIODE ranked differently (another build, model
or setting): where the single pick changed, how much faster or slower it ran (CPU).

    python benchmarks/e2e_pick_change.py BEFORE_E2E.json AFTER_E2E.json [--out CHANGE.json]

The runs were timed apart, so each single pick (``diode_pick``) is taken over what its own run
timed of the same program in both: no autotuning (``no_autotune``, one ATen program). Per row,
``after_over_before`` is AFTER's pick over its run's no autotuning divided by BEFORE's; the rows
whose pick did not change show how far that moves by the runs alone. Reported for the rows whose
pick changed and those where it did not: that ratio's geometric mean, 10th and 90th percentile
and extremes, how many rows moved by more than :data:`TIE` either way, and each run's pick over
its own ``best_known`` (the dataset's fastest candidate compiled alone), where both runs have it.

Rows where either run's DIODE ranked another problem than the row's (``e2e_report.reshaped``:
Inductor padded the GEMM) are a group of their own, ``reshaped``: a changed pick there need not
come from the ranking, and the padding's extra kernel moves the runtime.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_report import emit, ranked, read_result, reshaped, spread  # noqa: E402

PICK, BASE = "diode_pick", "no_autotune"
#: A change within this ratio is a tie.
TIE = 1.02


def pick_of(row: dict) -> str | None:
    return ((row["modes"].get(PICK, {}).get("diode") or {}).get("decision") or {}).get("pick")


def over_base(row: dict) -> float | None:
    """The row's single pick over its no autotuning, or None where either was not timed."""
    pick, base = (row["modes"].get(mode, {}).get("runtime_us") for mode in (PICK, BASE))
    return pick / base if pick and base else None


def change(before: dict, after: dict) -> dict:
    """The rows both runs timed, grouped by whether the pick changed, or the GEMM (:mod:`this module
    <e2e_pick_change>`)."""
    earlier = {row["describe"]: row for row in before["rows"]}
    groups: dict[str, list] = {"changed": [], "unchanged": [], "reshaped": []}
    for row in after["rows"]:
        old = earlier.get(row["describe"])
        if old is None or over_base(old) is None or over_base(row) is None:
            continue
        entry = {
            "problem": row["describe"],
            "class": row.get("workload_class"),
            "before": pick_of(old),
            "after": pick_of(row),
            "after_over_before": over_base(row) / over_base(old),
            "before_over_best_known": old["modes"][PICK].get("vs_best_known"),
            "after_over_best_known": row["modes"][PICK].get("vs_best_known"),
        }
        if reshaped(old) or reshaped(row):
            group = "reshaped"
            entry["ranked"] = [ranked(old["modes"].get(PICK, {})), ranked(row["modes"].get(PICK, {}))]
        else:
            group = "changed" if entry["before"] != entry["after"] else "unchanged"
        groups[group].append(entry)
    return {name: summarize(rows) for name, rows in groups.items()}


def summarize(rows: list[dict]) -> dict:
    ratios = [row["after_over_before"] for row in rows]
    known = [row for row in rows if row["before_over_best_known"] and row["after_over_best_known"]]
    out: dict = {"rows": len(rows)}
    if ratios:
        data = torch.tensor(ratios, dtype=torch.float64)
        out["after_over_before"] = {
            "geomean": math.exp(float(data.log().mean())),
            "p10": float(torch.quantile(data, 0.1)),
            "p90": float(torch.quantile(data, 0.9)),
            "least": float(data.min()),
            "most": float(data.max()),
            "faster": sum(r * TIE < 1 for r in ratios),
            "slower": sum(r > TIE for r in ratios),
        }
    out["before_over_best_known"] = spread([row["before_over_best_known"] for row in known])
    out["after_over_best_known"] = spread([row["after_over_best_known"] for row in known])
    out["problems"] = sorted(rows, key=lambda row: row["after_over_before"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--out", type=Path, help="write the comparison here as JSON (default: print it)")
    args = parser.parse_args(argv)
    emit(change(read_result(args.before, parser), read_result(args.after, parser)), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
