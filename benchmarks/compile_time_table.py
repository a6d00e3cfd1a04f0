"""What each Triton tile costs to compile as a GEMM's kernel, per precision, on this GPU (GPU).

    OUT=DIR python benchmarks/compile_time_table.py [--top N] [--processes P] [--problems N] [--budget-s S]
    # DIR/compile_time_table.json

Large TF32 tiles took seconds to compile where others took half a second
(``benchmarks/results/h100_compile_outliers_2026-11-27.md``), read from the single picks of
end-to-end runs; this times the tiles themselves. For each problem (:data:`PROBLEMS`: the same
GEMMs in bfloat16, float32 and float32 with TF32), the tiles are DIODE's first ``--top`` Triton
candidates by the shipped model (as it ranks them at compile time) and Inductor's DEFAULT list.
Each tile is compiled as the GEMM's only kernel: stored as DIODE's measured decision in a fresh
prediction cache (as ``e2e_validation``'s ``best_known`` mode), then the GEMM compiled under
that mode's options with Inductor's caches off and its kernels compiled in the process
(``compile_threads`` 1), so the wall time is the tile's own compile. Its cost is that less the
median of three compiles of the same GEMM with no autotuning in the same process. ``--processes``
worker processes share the jobs (every P-th of each problem's list), each with its own Triton
cache: run fewer than the cores, as each compile holds one.

``--problems N`` takes N problems of the dataset's training split instead (spread over op, dtype
and size as ``e2e_validation`` chooses them, in its run order), for a wider reading.
``--budget-s`` stops the workers at that many seconds and keeps the rows they wrote.

    python benchmarks/compile_time_table.py --fit RESULT.json [RESULT.json ...]
    # diode_backend/compile_seconds.json

writes the table :mod:`diode_backend.compile_estimate` reads: the mean cost of the applied tiles
of each ``precision/template`` class by output block area, from runs on a torch whose Inductor
runs every tile of a problem that allows TF32 as TF32 (the ``always`` rule), so that a
description's ``tf32`` names the tile's precision.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diode_backend.files import read_json  # noqa: E402
from diode_backend.problem import GemmProblem, KernelConfig  # noqa: E402

#: A large and a small prefill projection and an attention bmm, each in bfloat16, float32 and
#: float32 allowing TF32.
PROBLEMS = tuple(
    GemmProblem(op, m, n, k, batch=batch, dtype=dtype, b_layout=b_layout, bias=bias, allow_tf32=tf32)
    for op, batch, m, n, k, b_layout, bias in (
        ("addmm", 1, 3992, 768, 768, "col", "row"),
        ("addmm", 1, 249, 3072, 768, "col", "row"),
        ("bmm", 384, 197, 64, 197, "row", "none"),
    )
    for dtype, tf32 in (("bfloat16", False), ("float32", False), ("float32", True))
)


def tiles_of(problem: GemmProblem, hardware, scorer, top: int) -> list[KernelConfig]:
    """DIODE's first ``top`` Triton candidates for ``problem`` (as it ranks them at compile
    time), then Inductor's DEFAULT Triton list, each once."""
    from diode_backend.inductor.configs import candidate_space
    from diode_backend.offline.tradeoff import runtime_ranking

    configs, ranking = runtime_ranking(scorer, problem, hardware)
    ranked = [configs[i] for i in ranking.order if configs[i].kind == "triton"][:top]
    default = [c for c in candidate_space(problem, hardware, "DEFAULT") if c.kind == "triton"]
    return list(dict.fromkeys([*ranked, *default]))


def plan(problems: list[GemmProblem], hardware, scorer, top: int, processes: int) -> list[list[dict]]:
    """The jobs (a problem and a tile, as dicts) of each worker: every ``processes``-th tile of
    each problem, so each worker compiles every problem's baseline and a share of its tiles."""
    shares: list[list[dict]] = [[] for _ in range(processes)]
    for problem in problems:
        for i, tile in enumerate(tiles_of(problem, hardware, scorer, top)):
            shares[i % processes].append({"problem": problem.to_dict(), "tile": tile.to_dict()})
    return [share for share in shares if share]


def summarize(rows: list[dict]) -> dict:
    """Per ``precision/output block`` (``compile_outliers``'s classes): tiles compiled as
    stored, and their median and worst cost (seconds)."""
    from compile_outliers import precision, tile_class

    groups: dict[str, list[float]] = {}
    for row in rows:
        if row["applied"]:
            groups.setdefault(f"{precision(row['problem'])}/{tile_class(row['tile'])}", []).append(row["cost_s"])
    return {k: {"tiles": len(v), "median_s": statistics.median(v), "max_s": max(v)} for k, v in sorted(groups.items())}


#: The fewest timed tiles of a class and block area the table takes a mean of.
FIT_MIN_TILES = 3


def fit(results: list[dict], sources: list[str]) -> dict:
    """The table of :mod:`diode_backend.compile_estimate` from ``results`` (this script's JSON,
    read from ``sources``): per ``precision/template`` and block area, the mean cost (seconds) of
    the applied tiles, where at least :data:`FIT_MIN_TILES` were timed.

    :raises ValueError: for a result from a torch whose TF32 rule is not ``always``.
    """
    from compile_outliers import TILE, precision

    from diode_backend.tf32 import inductor_rule

    costs: dict[str, dict[int, list[float]]] = {}
    for result, source in zip(results, sources):
        if inductor_rule(result["torch"]) != "always":
            raise ValueError(f"{source}: timed on torch {result['torch']}, whose Inductor does not run every TF32-allowed tile as TF32")
        for row in result["rows"]:
            found = TILE.match(row["tile"])
            if row["applied"] and found:
                key = f"{precision(row['problem'])}/{row['tile'].split()[0]}"
                costs.setdefault(key, {}).setdefault(int(found[1]) * int(found[2]), []).append(row["cost_s"])
    seconds = {
        key: {str(area): round(statistics.mean(v), 3) for area, v in sorted(by_area.items()) if len(v) >= FIT_MIN_TILES}
        for key, by_area in sorted(costs.items())
    }
    return {
        "about": "Mean compile seconds of a Triton GEMM tile by precision/template and output block area "
        "(BLOCK_M*BLOCK_N), over no autotuning's compile of the same GEMM: benchmarks/compile_time_table.py --fit.",
        "device": sorted({r["device"] for r in results}),
        "torch": sorted({r["torch"] for r in results}),
        "triton": sorted({r["triton"] for r in results}),
        "sources": sources,
        "seconds": {key: by_area for key, by_area in seconds.items() if by_area},
    }


def work(todo: list[dict], out: Path, device: str = "cuda") -> None:
    """Compile each job of ``todo`` on ``device`` (this process's GPU), writing the rows to
    ``out`` after each. Inductor's caches are off and its kernels compiled in this process for
    the jobs only (``config.patch``)."""
    import torch
    from torch._inductor import config

    baselines: dict[str, float] = {}
    rows: list[dict] = []
    with config.patch(force_disable_caches=True, compile_threads=1):
        for job in todo:
            rows.append(compile_job(job, baselines, device))
            out.write_text(json.dumps(rows))
            if device == "cuda":  # the workers share one GPU: hand back what this job cached
                torch.cuda.empty_cache()
            print(f"{len(rows)}/{len(todo)} {rows[-1]['problem']} {rows[-1]['tile']} {rows[-1]['cost_s']:.2f} s", flush=True)


def compile_job(job: dict, baselines: dict[str, float], device: str) -> dict:
    """One job's row. ``baselines`` holds each problem's no-autotuning compile time (the median
    of three), timed at the problem's first job."""
    import torch

    import e2e_results
    import e2e_validation as e2e
    from diode_backend.offline.dataset import ProblemTimings

    problem, tile = GemmProblem.from_dict(job["problem"]), KernelConfig.from_dict(job["tile"])
    text = problem.describe()
    e2e.set_tf32(problem)
    fn, args = e2e.make_case(problem, device)
    if text not in baselines:
        plain = []
        for _ in range(3):
            torch._dynamo.reset()
            plain.append(e2e.compile_mode(fn, args, {})[0]["compile_s"])
        baselines[text] = statistics.median(plain)
    os.environ["DIODE_CACHE_DIR"] = tempfile.mkdtemp(prefix="compile-table-diode-")
    e2e.seed_best_known(ProblemTimings(problem, (tile,), (1.0,)), device)  # the tile, stored as measured
    torch._dynamo.reset()
    figures, _ = e2e.compile_mode(fn, args, e2e.mode_options(e2e_results.BEST_KNOWN))
    decision = figures["diode"]["decision"] or {}
    return {
        "problem": text,
        "tile": tile.describe(),
        "compile_s": figures["compile_s"],
        "no_autotune_s": baselines[text],
        "cost_s": figures["compile_s"] - baselines[text],
        "applied": figures["diode"]["measured_decision_hits"] >= 1 and decision.get("pick") == tile.describe(),
    }


def problems_to_time(count: int | None, data: str) -> list[GemmProblem]:
    """:data:`PROBLEMS`, or ``count`` problems of ``data``'s training split (None: PROBLEMS)."""
    if count is None:
        return list(PROBLEMS)
    import e2e_validation as e2e
    from diode_backend.offline.dataset import load_dataset

    return [p.problem for p in e2e.run_order(e2e.choose(load_dataset(data).split("train"), count))]


def finish(process: subprocess.Popen, started: float, budget_s: float | None) -> int | None:
    """``process``'s exit code, stopping it at ``budget_s`` seconds after ``started`` (None: the
    code of a worker stopped there)."""
    try:
        return process.wait(None if budget_s is None else max(budget_s - (time.monotonic() - started), 0.0))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=24, help="DIODE's first N Triton candidates per problem (default 24)")
    parser.add_argument("--processes", type=int, default=8, help="worker processes (default 8)")
    parser.add_argument("--problems", type=int, help="N problems of --data's training split instead of PROBLEMS")
    parser.add_argument("--data", default="trained_models/data/h100/dataset", help="dataset for --problems")
    parser.add_argument("--budget-s", type=float, help="stop the workers after this many seconds, keeping their rows")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")), help="folder for compile_time_table.json")
    parser.add_argument("--fit", type=Path, nargs="+", help="write diode_backend/compile_seconds.json from these results")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # a worker's jobs (JSON)
    args = parser.parse_args(argv)
    if args.worker:
        work(json.loads(args.worker.read_text()), args.worker.with_suffix(".rows.json"))
        return 0
    if args.fit:
        from diode_backend.builtin import COMPILE_SECONDS

        sources = [path.as_posix() for path in args.fit]
        COMPILE_SECONDS.write_text(json.dumps(fit([read_json(p) for p in args.fit], sources), indent=1) + "\n")
        return 0
    if args.top < 0 or args.processes < 1 or (args.problems is not None and args.problems < 1):
        parser.error("--top takes 0 or more, --processes and --problems 1 or more")
    import torch
    import triton

    from diode_backend import catalog, registry

    hardware = registry.detect_hardware("cuda")
    scorer = registry.load_scorer(catalog.pick_entry(hardware))
    shares = plan(problems_to_time(args.problems, args.data), hardware, scorer, args.top, args.processes)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    workers = []
    for i, share in enumerate(shares):
        jobs = args.out / f"compile_time_table.w{i}.jobs.json"  # its rows land beside it, kept if the run is cut
        jobs.write_text(json.dumps(share))
        env = {**os.environ, "TRITON_CACHE_DIR": tempfile.mkdtemp(prefix=f"compile-table-triton-{i}-")}
        log = open(args.out / f"compile_time_table.w{i}.log", "w")
        command = [sys.executable, __file__, "--worker", str(jobs)]
        workers.append((subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    codes = [finish(process, started, args.budget_s) for process, log in workers]
    done = [args.out / f"compile_time_table.w{i}.jobs.rows.json" for i in range(len(shares))]
    rows = [row for path in done if path.is_file() for row in json.loads(path.read_text())]
    result = {
        "benchmark": "compile_time_table",
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "top": args.top,
        "processes": len(shares),
        "worker_exit_codes": codes,
        "elapsed_s": time.monotonic() - started,
        "jobs": sum(len(share) for share in shares),
        "summary": summarize(rows),
        "rows": rows,
    }
    (args.out / "compile_time_table.json").write_text(json.dumps(result, indent=1) + "\n")
    for key, row in result["summary"].items():
        print(f"{key:16s} {row['tiles']:3d} tiles  median {row['median_s']:.2f} s  max {row['max_s']:.2f} s")
    return 0 if all(code == 0 for code in codes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
