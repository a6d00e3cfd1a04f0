"""How well two independent sweeps of the same problems agree (the noise floor of the data).

    python benchmarks/h100_replicate.py trained_models/data/h100/sweep trained_models/data/h100/replicate \
        > benchmarks/results/h100_replicate_agreement.json

For every problem in both datasets: the Spearman correlation of the two timings, the median
log-ratio (a shift of the whole problem), and the regret of one run's winner under the other's
times; for every shared pair, the relative difference; per bucket of the fastest candidate's
time, the quantiles of the pair ratios (second run over first), all candidates and ATen alone. Problems whose runs disagree (Spearman
under 0.95 or a shift over 5%) are listed by name: their small kernels carry the host-pace
floor described in docs/collect.md.
"""

from __future__ import annotations

import json
import math
import statistics
import sys

from diode_backend.offline.collect.fidelity import spearman
from diode_backend.offline.dataset import load_dataset

BUCKETS = ((0, 8), (8, 12), (12, 20), (20, 40), (40, math.inf))  # fastest candidate, microseconds


def quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[int(q * (len(values) - 1))]


def ratio_quantiles(logs: list[float]) -> dict[str, float] | None:
    """10th, 50th and 90th percentile of the time ratios whose logs are given."""
    return {q: math.exp(quantile(logs, float(q))) for q in ("0.1", "0.5", "0.9")} if logs else None


def main(first: str, second: str) -> dict:
    a, b = load_dataset(first), {p.problem: p for p in load_dataset(second)}
    problems, diffs, unstable = [], [], []
    for pa in a:
        pb = b.get(pa.problem)
        if pb is None:
            continue
        ta, tb = dict(zip(pa.configs, pa.times_us)), dict(zip(pb.configs, pb.times_us))
        shared = [c for c in ta if c in tb]
        logs = [math.log(tb[c] / ta[c]) for c in shared]
        rho = spearman([ta[c] for c in shared], [tb[c] for c in shared])
        shift = statistics.median(logs)
        best = min(min(ta.values()), min(tb.values()))
        regret = tb[min(shared, key=ta.get)] / min(tb[c] for c in shared)
        aten = [x for c, x in zip(shared, logs) if c.kind == "aten"]
        problems.append({"best_us": best, "spearman": rho, "shift": shift, "regret": regret, "logs": logs, "aten": aten})
        diffs += [abs(x) for x in logs]
        if rho < 0.95 or abs(shift) > math.log(1.05):
            unstable.append({"problem": pa.problem.describe(), "split": pa.split, "best_us": round(best, 2), "spearman": round(rho, 3), "shift": round(math.expm1(shift), 3)})
    buckets = {}
    for low, high in BUCKETS:
        sel = [p for p in problems if low <= p["best_us"] < high]
        if sel:
            buckets[f"{low}-{high}us"] = {
                "problems": len(sel),
                "spearman_below_0.95": sum(p["spearman"] < 0.95 for p in sel),
                "shift_over_5pct": sum(abs(p["shift"]) > math.log(1.05) for p in sel),
                "median_spearman": statistics.median(p["spearman"] for p in sel),
                "pair_ratio_second_over_first": ratio_quantiles([x for p in sel for x in p["logs"]]),
                "aten_ratio_second_over_first": ratio_quantiles([x for p in sel for x in p["aten"]]),
            }
    regrets = [p["regret"] for p in problems]
    return {
        "datasets": [first, second],
        "problems": len(problems),
        "pairs": len(diffs),
        "pair_relative_difference": {q: math.expm1(quantile(diffs, float(q))) for q in ("0.5", "0.9", "0.99")},
        "median_spearman": statistics.median(p["spearman"] for p in problems),
        "winner_regret": {"median": statistics.median(regrets), "p90": quantile(regrets, 0.9), "max": max(regrets), "within_3pct": sum(r <= 1.03 for r in regrets)},
        "by_fastest_candidate": buckets,
        "unstable": unstable,
    }


if __name__ == "__main__":
    json.dump(main(*sys.argv[1:3]), sys.stdout, indent=1)
    print()
