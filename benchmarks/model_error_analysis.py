"""Where a timing model's ranking error lies on a dataset's validation problems (CPU only).

For each validation problem: Kendall tau of the model's predicted times against the measured
ones, and of the measured times against a noisy copy of themselves (log-normal noise whose
spread matches the collector's repeated timings, so the tau that measurement noise alone would
allow); tau of the fast and the slow half; and the model's log-time error after removing the
problem's mean error, grouped by each config field. Example::

    python benchmarks/model_error_analysis.py trained_models/data/h100/dataset --out analysis.json
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import statistics
import sys

import torch

from diode_backend.offline.dataset import load_dataset, timed_hardware
from diode_backend.model.learned import LearnedScorer
from diode_backend.offline.train import inference_hardware
from diode_backend.offline.validate import kendall_tau

#: Per-measurement log-time noise: two copies then differ by a median of 0.74% (sigma 0.0078)
#: or a 90th percentile of 3.4% (sigma 0.0146), the sweep report's repeated timings.
NOISE_SIGMAS = (0.0078, 0.0146)
SIZE_BANDS_US = ((0, 8), (8, 12), (12, 20), (20, 50), (50, math.inf))
FIELDS = ("block_m", "block_n", "block_k", "num_stages", "num_warps")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+", help="dataset(s) with validation problems")
    parser.add_argument("--model", default="trained_models/nvidia-h100-gemm/model.pt", help="checkpoint to analyse")
    parser.add_argument("--out", help="JSON file to write")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.data)
    hardware_of = timed_hardware(inference_hardware(dataset.hardware))  # each problem under its own TF32 rule
    scorer = LearnedScorer.load(args.model)
    noise = torch.Generator().manual_seed(0)
    problems, errors = [], collections.defaultdict(list)
    for item in dataset.split("validation"):
        truth = torch.tensor(item.times_us, dtype=torch.float64)
        predicted = torch.tensor(scorer.predict(item.problem, item.configs, hardware_of(item)).times_us, dtype=torch.float64)
        order, half = torch.argsort(truth), len(truth) // 2
        noisy = [
            kendall_tau(truth * torch.exp(torch.randn(len(truth), generator=noise, dtype=torch.float64) * sigma), truth)
            for sigma in NOISE_SIGMAS
        ]
        problems.append({
            "problem": item.problem.describe(), "dtype": item.problem.dtype, "best_us": float(truth.min()),
            "tau": kendall_tau(predicted, truth), "tau_noise_only": noisy,
            "tau_fast_half": kendall_tau(predicted[order[:half]], truth[order[:half]]),
            "tau_slow_half": kendall_tau(predicted[order[half:]], truth[order[half:]]),
            "log_time_spread": float(truth.log().std()),
        })  # fmt: skip
        residual = predicted.log() - truth.log()
        residual -= residual.mean()
        errors["all"].extend(residual.tolist())
        for config, error in zip(item.configs, residual.tolist()):
            for field in FIELDS:
                errors[f"{field}={getattr(config, field)}"].append(error)

    def median(key: str, rows: list[dict]) -> float:
        return statistics.median(row[key] for row in rows)

    report = {
        "model": args.model,
        "problems": len(problems),
        "tau_median": median("tau", problems),
        "tau_noise_only_median": [
            statistics.median(p["tau_noise_only"][i] for p in problems) for i in range(len(NOISE_SIGMAS))
        ],
        "noise_sigmas": NOISE_SIGMAS,
        "tau_fast_half_median": median("tau_fast_half", problems),
        "tau_slow_half_median": median("tau_slow_half", problems),
        "log_time_spread_median": median("log_time_spread", problems),
        "by_best_us": {
            f"{lo}-{hi}": {"problems": len(rows), "tau": median("tau", rows)}
            for lo, hi in SIZE_BANDS_US
            if (rows := [p for p in problems if lo <= p["best_us"] < hi])
        },
        "by_dtype": {
            dtype: {"problems": len(rows), "tau": median("tau", rows)}
            for dtype in sorted({p["dtype"] for p in problems})
            if (rows := [p for p in problems if p["dtype"] == dtype])
        },
        "within_problem_log_error_rms": {
            key: {"candidates": len(values), "rms": math.sqrt(statistics.fmean(v * v for v in values))}
            for key, values in sorted(errors.items())
        },
        "rows": problems,
    }
    summary = {k: v for k, v in report.items() if k not in ("rows", "within_problem_log_error_rms")}
    print(json.dumps(summary, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
