"""CPU latency of ranking GEMM candidates with a learned model, on one core.

Measures ``policy.rank_candidates`` (features, the ensemble's forward pass, confidence and the
ordering: everything DIODE does per GEMM group) for 2,000 candidates, plus its parts, with
``torch.set_num_threads(1)``: median and 10th/90th percentiles of ``--repeats`` timed calls after
``--warmup`` untimed ones. The candidates are Inductor's EXHAUSTIVE configs for the problem,
repeated up to the count (DIODE's cost depends on the count, not on which configs).

    python benchmarks/inference_latency.py --model nvidia-h100-gemm --hardware h100 --out $OUT/latency.json

``--busy N`` times ``rank_candidates`` again while N processes spin on the CPU, as Inductor's
compile workers do while DIODE ranks a graph's later GEMMs, once on each of ``--threads``
counts of intra-op threads (``model.learned.INFERENCE_THREADS``, the number a ranking runs on):

    python benchmarks/inference_latency.py --busy 16 --threads 1,16 --repeats 100 --out $OUT/busy.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import statistics
import time
from pathlib import Path

import torch

from diode_backend import catalog, registry
from diode_backend.inductor.configs import candidate_space
from diode_backend.model import learned
from diode_backend.problem import GemmProblem
from diode_backend.policy import rank_candidates


def timed(fn, warmup: int, repeats: int) -> dict[str, float]:
    """Median, p10 and p90 of ``fn``'s wall time in milliseconds."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    deciles = statistics.quantiles(samples, n=10)
    return {"median_ms": statistics.median(samples), "p10_ms": deciles[0], "p90_ms": deciles[-1]}


def _spin() -> None:
    while True:
        pass


def busy_rankings(rank, args) -> dict:
    """``rank`` timed on each of ``args.threads`` intra-op thread counts, idle and then while
    ``args.busy`` processes spin."""
    counts = [int(n) for n in args.threads.split(",")]
    result = {"processes": args.busy, "threads": counts, "idle": {}, "spinning": {}}
    shipped = learned.INFERENCE_THREADS
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    try:
        for count in counts:
            learned.INFERENCE_THREADS = count
            result["idle"][str(count)] = timed(rank, args.warmup, args.repeats)
        for process in spinners:
            process.start()
        for count in counts:
            learned.INFERENCE_THREADS = count
            result["spinning"][str(count)] = timed(rank, args.warmup, args.repeats)
    finally:
        learned.INFERENCE_THREADS = shipped
        for process in spinners:
            if process.is_alive():
                process.terminate()
                process.join()
    return result


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="", help="model name or path (default: picked for --hardware)")
    parser.add_argument("--hardware", default="h100", help="known hardware name (default h100)")
    parser.add_argument("--candidates", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=500)
    parser.add_argument("--busy", type=int, default=0, help="also time the ranking while this many processes spin")
    parser.add_argument("--threads", default="1", help="with --busy: comma-separated intra-op thread counts to rank on")
    parser.add_argument("--out", help="JSON file to write")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    hardware = catalog.resolve_hardware(args.hardware)
    entry = catalog.pick_entry(hardware, args.model)
    scorer = registry.load_scorer(entry)
    problem = GemmProblem("mm", 2048, 4096, 4096, dtype="bfloat16", b_layout="col")
    space = candidate_space(problem, hardware, "EXHAUSTIVE")
    configs = [space[i % len(space)] for i in range(args.candidates)]

    result = {
        "benchmark": "inference_latency",
        "cpu": cpu_name(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "model": entry.name,
        "identity": scorer.identity,
        "problem": problem.describe(),
        "candidates": len(configs),
        "distinct_candidates": len(space),
        "rank_candidates": timed(lambda: rank_candidates(scorer, problem, configs, hardware), args.warmup, args.repeats),
    }
    extractor = getattr(scorer, "extractor", None)
    network = getattr(scorer, "network", None)  # what a LearnedScorer's predict runs
    if extractor is not None and network is not None:
        features = extractor.extract(problem, configs, hardware)
        result["features"] = timed(lambda: extractor.extract(problem, configs, hardware), args.warmup, args.repeats)
        result["forward"] = timed(lambda: network(features), args.warmup, args.repeats)
        result["parameters"] = sum(p.numel() for p in scorer.model.parameters())
    if args.busy:
        result["busy"] = busy_rankings(lambda: rank_candidates(scorer, problem, configs, hardware), args)
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
