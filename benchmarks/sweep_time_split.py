"""Where a sweep's timing seconds went (CPU): the kernels' own runs, estimated from the stored
medians and the run's timing method, beside the reports' timing and kernel-load seconds.

    python benchmarks/sweep_time_split.py DATASET REPORT [REPORT ...] [--out FILE]

DATASET holds what the runs of the REPORTs (``diode collect sweep --report``) timed, and only
that. Each timed pair runs once to check its result, once as its estimate, then
``TimingMethod.reps`` of its estimate (the method the first report records); each run is taken
at the pair's stored median, the estimate itself not being stored, and the L2 flush before each
run is left out, so the kernel seconds are a floor. Pairs timed again for the noise floor
(``noise_pairs``) are counted at the mean pair's runs. The rest of the timing seconds is the
host's work per problem: fresh inputs, the float32 reference, the checks, graph captures and
synchronizations; reports that split it by step (``timing_split``) give ``steps``, summed over
the reports, and ``replay_over_kernel_runs``: the graph replays' seconds (waiting for the GPU
included) over the kernel seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from diode_backend.files import read_json
from diode_backend.offline.dataset import load_dataset
from diode_backend.timing import TimingMethod

#: runs of each pair before its timed ones: the result check and the estimate
RUNS_BEFORE = 2


def kernel_seconds(dataset, method: TimingMethod) -> float:
    """The seconds the dataset's pairs ran on the GPU by ``method``, each run at its median."""
    total_us = 0.0
    for item in dataset.problems:
        for time_us, reps in zip(item.times_us, method.reps(item.times_us)):
            total_us += (RUNS_BEFORE + reps) * time_us
    return total_us / 1e6


def split(dataset, reports: list[dict]) -> dict:
    fields = {f.name for f in dataclasses.fields(TimingMethod)}
    method = TimingMethod(**{k: v for k, v in reports[0]["environment"]["timing"].items() if k in fields})
    pairs = sum(r["pairs"] for r in reports)
    timing = sum(r["timing_seconds"] for r in reports)
    load = sum(r["load_seconds"] for r in reports)
    timed_again = sum(r.get("noise_pairs", 0) for r in reports)
    kernels = kernel_seconds(dataset, method) * (pairs + timed_again) / pairs
    steps: dict[str, float] = {}
    for report in reports:
        for name, seconds in report.get("timing_split", {}).items():
            steps[name] = steps.get(name, 0.0) + seconds
    return {
        "pairs": pairs,
        "timing_seconds": timing,
        "load_seconds": load,
        "kernel_run_seconds": kernels,
        "rest_seconds": timing - load - kernels,
        "pairs_per_timing_second": pairs / timing,
        "pairs_per_timing_second_without_loads": pairs / (timing - load),
        "pairs_per_kernel_run_second": pairs / kernels,
        **({"steps": steps, "replay_over_kernel_runs": steps.get("timer_replay", 0.0) / kernels} if steps else {}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset)
    reports = [read_json(path) for path in args.reports]
    if sum(r["pairs"] for r in reports) != sum(len(item.times_us) for item in dataset.problems):
        raise SystemExit(f"{args.dataset}: its pairs are not the reports' pairs; give the dataset the runs made, and only those")
    result = {"dataset": args.dataset, "reports": [str(p) for p in args.reports], **split(dataset, reports)}
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
