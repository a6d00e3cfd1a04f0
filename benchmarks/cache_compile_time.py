"""What the prediction cache saves a second process compiling the same model (CPU or GPU).

Each trial runs three fresh processes on one model (an MLP of nn.Linear layers of distinct
shapes, so several GEMMs) with DIODE alone as the GEMM backend, ``fast_autotune=True`` and
``diode_fallback_to_autotune=False`` (one pick per GEMM, nothing benchmarked, so compile time is
Inductor's own work plus DIODE's ranking):

- ``off``: ``diode_cache_predictions=False``;
- ``cold``: the prediction cache on and empty (every GEMM is a miss and gets written);
- ``warm``: a second process after ``cold``, on the cache it filled (every GEMM a hit).

Every process gets a fresh ``TORCHINDUCTOR_CACHE_DIR``, so Inductor's own caches never serve it:
only DIODE's cache carries over. Reported per mode (medians over trials): wall time of the
first call (compile and run), and DIODE's ranking time inside it from its counters
(``prediction_cache_miss_us``: inference plus write; ``prediction_cache_hit_us``: lookups).

    python benchmarks/cache_compile_time.py --device cpu --out benchmarks/results/cache_compile_time-cpu.json
    python benchmarks/cache_compile_time.py --device cuda --out $OUT/cache_compile_time-h100.json

On the CPU no scorer applies by itself and Inductor offers only ATen candidates: the default
model there is a random-weight learned checkpoint (``--model`` overrides). On a GPU the default
is the model DIODE picks for it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WIDTHS = (1024, 4096, 1536, 2816, 768)  # hidden sizes: each layer is a GEMM of its own shape
TOKENS = 2048


def child(args: argparse.Namespace) -> None:
    """One compile in this process; prints one JSON line."""
    import torch

    import diode_backend
    from diode_backend._autoload import install

    install()  # idempotent: makes the run independent of the torch.backends entry point
    device = torch.device(args.device)
    dtype = torch.float32 if device.type == "cpu" else torch.bfloat16
    layers = [torch.nn.Linear(a, b) for a, b in zip(WIDTHS, WIDTHS[1:])]
    model = torch.nn.Sequential(*[m for layer in layers for m in (layer, torch.nn.GELU())]).to(device, dtype)
    tokens = TOKENS if device.type == "cuda" else 64
    x = torch.randn(tokens, WIDTHS[0], device=device, dtype=dtype)
    options = {
        "max_autotune": True,
        "max_autotune_gemm_backends": "DIODE",
        "fast_autotune": True,
        "diode_fallback_to_autotune": False,
        "diode_cache_predictions": args.mode != "off",
        "diode_model": args.model,
    }
    compiled = torch.compile(model, options=options)
    with torch.no_grad():
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        compiled(x)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
    stats = diode_backend.stats()
    counters = stats["counters"]
    print(json.dumps({
        "mode": args.mode, "compile_s": seconds, "decisions": stats["decisions"],
        "hits": counters.get("prediction_cache_hits", 0), "misses": counters.get("prediction_cache_misses", 0),
        "hit_us": counters.get("prediction_cache_hit_us", 0), "miss_us": counters.get("prediction_cache_miss_us", 0),
        "errors": stats["errors"], "fallbacks": stats["fallbacks"], "models": stats["picks_by_model"],
    }))  # fmt: skip


def random_checkpoint(path: Path) -> str:
    """A learned model with random weights (inference cost does not depend on the weights)."""
    import torch

    from diode_backend import registry
    from diode_backend.model.checkpoint import checkpoint_data
    from diode_backend.model.network import TimingModel

    extractor = registry.feature_extractors()["gemm"]
    arch = {"num_features": len(extractor.names), "hidden": 32, "layers": 2, "ensemble": 5}  # training's defaults
    model = TimingModel(arch)
    torch.save(checkpoint_data(model, feature_schema=extractor.schema, feature_version=extractor.version), path)
    return str(path)


def run_child(args: argparse.Namespace, mode: str, diode_cache: Path, workdir: Path, run: int) -> dict:
    env = {**os.environ, "DIODE_CACHE_DIR": str(diode_cache), "TORCHINDUCTOR_CACHE_DIR": str(workdir / f"inductor-{run}")}
    command = [sys.executable, __file__, "--child", "--mode", mode, "--device", args.device, "--model", args.model]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--trials", type=int, default=5, help="off/cold/warm triples to run")
    parser.add_argument("--model", default=None, help="diode_model for every run (default: see the module docstring)")
    parser.add_argument("--out", help="where to write the JSON result")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if not args.out:
        parser.error("--out is required")

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model_label = args.model
        if args.model is None:
            args.model = random_checkpoint(workdir / "random.pt") if args.device == "cpu" else ""
            model_label = "random-weight learned checkpoint (hidden 32, 2 layers, 5 members)" if args.device == "cpu" else "picked by hardware"
        for trial in range(args.trials):
            diode_cache = workdir / f"diode-{trial}"
            for mode in ("off", "cold", "warm"):
                result = run_child(args, mode, diode_cache, workdir, len(runs))
                result["trial"] = trial
                runs.append(result)
                print(json.dumps(result), flush=True)
            shutil.rmtree(diode_cache, ignore_errors=True)

    summary = {}
    for mode in ("off", "cold", "warm"):
        rows = [r for r in runs if r["mode"] == mode]
        summary[mode] = {
            "compile_s_median": round(statistics.median(r["compile_s"] for r in rows), 3),
            "compile_s_all": [round(r["compile_s"], 3) for r in rows],
            "diode_ranking_ms_median": round(statistics.median((r["hit_us"] + r["miss_us"]) / 1e3 for r in rows), 3),
            "hits": rows[0]["hits"], "misses": rows[0]["misses"], "decisions": rows[0]["decisions"],
        }  # fmt: skip
    summary["saving_cold_minus_warm_s"] = round(summary["cold"]["compile_s_median"] - summary["warm"]["compile_s_median"], 3)
    summary["ranking_saving_ms"] = round(
        summary["cold"]["diode_ranking_ms_median"] - summary["warm"]["diode_ranking_ms_median"], 3
    )

    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    from cache_hit_latency import cpu_description  # this folder is on sys.path when run as a script

    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else cpu_description()
    result = {
        "what": "compile time of a second process compiling the same model, DIODE prediction cache cold vs warm",
        "device": device,
        "model_layers": [f"{a}->{b}" for a, b in zip(WIDTHS, WIDTHS[1:])],
        "diode_model": model_label,
        "torch": torch.__version__,
        "triton": triton_version,
        "date": time.strftime("%Y-%m-%d"),
        "host": platform.node(),
        "command": "python " + " ".join(sys.argv),
        "summary": summary,
        "runs": runs,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for mode in ("off", "cold", "warm"):
        s = summary[mode]
        print(f"{mode:5} compile {s['compile_s_median']:8.3f} s  DIODE ranking {s['diode_ranking_ms_median']:8.3f} ms  "
              f"hits {s['hits']} misses {s['misses']} decisions {s['decisions']}")  # fmt: skip
    print(f"saving (cold - warm): {summary['saving_cold_minus_warm_s']:.3f} s compile, {summary['ranking_saving_ms']:.3f} ms of ranking")


if __name__ == "__main__":
    main()
