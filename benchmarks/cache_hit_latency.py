"""Prediction-cache hit latency per lookup, against the inference a hit replaces (CPU, one thread).

For Inductor's DEFAULT and EXHAUSTIVE candidate lists of a few GEMMs (as ``diode predict`` builds
them for an H100), and for 2,000 candidates (the learned model's inference target), measures the
median and p90 over many repetitions of:

- ``key``: computing the entry key (hashing hardware, scorer, versions, problem, candidates);
- ``read``: reading and validating the entry file (page cache warm);
- ``hit``: a whole hit of ``rank_candidates`` through ``CachingScorer``, as DIODE does it inside torch.compile;
- ``infer_<scorer>``: ``rank_candidates`` without the cache, for the analytical scorer and a
  learned model (the shipped H100 model when present, else a random checkpoint of the given
  size: the time does not depend on the weights).

    python benchmarks/cache_hit_latency.py --out benchmarks/results/cache_hit_latency-cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

SHAPES = [  # (op, batch, m, n, k, dtype, b_layout)
    ("mm", 1, 1024, 4096, 2048, "bfloat16", "col"),
    ("mm", 1, 16, 11008, 4096, "float16", "col"),
    ("bmm", 32, 512, 512, 64, "bfloat16", "row"),
]


def cpu_description() -> str:
    """The CPU model (from /proc/cpuinfo where there is one) and the cores visible."""
    name = platform.processor() or platform.machine()
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        name = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"CPU: {name}, {os.cpu_count()} cores visible"


def timed(fn, repeat: int) -> dict[str, float]:
    """Median and p90 in microseconds of ``repeat`` calls (after 5 warm-up calls)."""
    for _ in range(5):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    samples.sort()
    return {"median_us": round(statistics.median(samples), 1), "p90_us": round(samples[int(0.9 * len(samples))], 1)}


def two_thousand(problem):
    """2,000 candidates (the issue's inference target): ATen plus Inductor's raw EXHAUSTIVE
    product, unscaled, with group size 8 and then 4."""
    import itertools

    from diode_backend.problem import KernelConfig

    template = "triton::bmm" if problem.op in ("bmm", "baddbmm") else "triton::mm"
    triton = [
        KernelConfig("triton", template, bm, bn, bk, stages, warps, group)
        for group in (8, 4)
        for bm, bn, bk in itertools.product((16, 32, 64, 128, 256), repeat=3)
        for stages in (1, 2, 3, 4, 5)
        for warps in (2, 4, 8)
    ]
    return [KernelConfig("aten", f"aten::{problem.op}")] + triton[:1999]


def learned_scorer(hidden: int, layers: int, ensemble: int, workdir: Path):
    """The shipped H100 model if there is one, else a random checkpoint of that size."""
    from diode_backend import catalog, registry
    from diode_backend.model.checkpoint import checkpoint_data
    from diode_backend.model.learned import LearnedScorer
    from diode_backend.model.network import TimingModel

    h100 = catalog.resolve_hardware("h100")
    entry = catalog.pick_entry(h100)
    if entry is not None and entry.name != "analytical":
        return registry.load_scorer(entry), f"{entry.name} (shipped)"
    extractor = registry.feature_extractors()["gemm"]
    arch = {"num_features": len(extractor.names), "hidden": hidden, "layers": layers, "ensemble": ensemble}
    path = workdir / "random.pt"
    model = TimingModel(arch)
    torch.save(checkpoint_data(model, feature_schema=extractor.schema, feature_version=extractor.version), path)
    return LearnedScorer.load(path), f"random weights, hidden {hidden}, {layers} layers, {ensemble} members"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="where to write the JSON result")
    parser.add_argument("--repeat", type=int, default=300, help="timed calls per measurement")
    parser.add_argument("--hidden", type=int, default=32, help="learned model width when none is shipped (training's default)")
    parser.add_argument("--layers", type=int, default=2, help="learned model depth when none is shipped")
    parser.add_argument("--ensemble", type=int, default=5, help="learned model members when none is shipped")
    args = parser.parse_args()
    torch.set_num_threads(1)

    with tempfile.TemporaryDirectory() as workdir:
        os.environ["DIODE_CACHE_DIR"] = workdir  # a private cache: results never depend on old entries
        from diode_backend import catalog, registry
        from diode_backend.analytical import AnalyticalScorer
        from diode_backend.cache import CachingScorer, default_cache, prediction_key
        from diode_backend.inductor.configs import candidate_space
        from diode_backend.problem import GemmProblem
        from diode_backend.policy import rank_candidates

        hardware = catalog.resolve_hardware("h100")
        learned, learned_label = learned_scorer(args.hidden, args.layers, args.ensemble, Path(workdir))
        scorers = {"analytical": AnalyticalScorer(), "learned": learned}
        store = default_cache()
        rows = []
        for op, batch, m, n, k, dtype, b_layout in SHAPES:
            problem = GemmProblem(op, m, n, k, batch=batch, dtype=dtype, b_layout=b_layout)
            for space in ("DEFAULT", "EXHAUSTIVE", "2000"):
                configs = candidate_space(problem, hardware, space) if space != "2000" else two_thousand(problem)
                row = {"problem": problem.describe(), "space": space, "candidates": len(configs)}
                for label, scorer in scorers.items():
                    row[f"infer_{label}"] = timed(lambda: rank_candidates(scorer, problem, configs, hardware), args.repeat)
                scorer = scorers["learned"]
                rank_candidates(CachingScorer(scorer), problem, configs, hardware)  # the miss that writes the entry
                key = prediction_key(scorer, problem, configs, hardware)
                row["key"] = timed(lambda: prediction_key(scorer, problem, configs, hardware), args.repeat)
                row["read"] = timed(lambda: store.get(key, len(configs)), args.repeat)
                row["hit"] = timed(lambda: rank_candidates(CachingScorer(scorer), problem, configs, hardware), args.repeat)
                row["entry_bytes"] = store.path_of(key).stat().st_size
                rows.append(row)
                print(json.dumps(row), flush=True)

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    result = {
        "what": "prediction-cache hit latency per lookup vs the inference it replaces (microseconds, one CPU thread)",
        "device": f"{cpu_description()}, 1 thread used",
        "learned_model": learned_label,
        "torch": torch.__version__,
        "triton": triton_version,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
        "host": platform.node(),
        "command": "python " + " ".join(sys.argv),
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'problem':42} {'space':10} {'cands':>5} {'hit':>8} {'key':>8} {'read':>8} {'analytic':>9} {'learned':>9}  (median us)")
    for row in rows:
        print(
            f"{row['problem']:42} {row['space']:10} {row['candidates']:>5} {row['hit']['median_us']:>8} "
            f"{row['key']['median_us']:>8} {row['read']['median_us']:>8} {row['infer_analytical']['median_us']:>9} "
            f"{row['infer_learned']['median_us']:>9}"
        )


if __name__ == "__main__":
    main()
