"""Where a cold compile under DIODE's defaults spends its time when DIODE measures (GPU).

    OUT=DIR python benchmarks/cold_profile_probe.py [--rounds N]    # DIR/cold_profile.json
    OUT=DIR python benchmarks/cold_profile_probe.py --profile       # DIR/cold_profile_*.txt
    OUT=DIR python benchmarks/cold_profile_probe.py --graph-size 8 [--graphs G]   # DIR/cold_profile_graphs.json

In the held-out run of 74042f8a a GEMM the defaults measured took 1.2 s to compile with one Triton
candidate among those measured and 1.5 s with eight, against 0.11 s with no autotuning and 0.16 s
for a lone ATen pick (``h100_e2e_heldout_74042f8a_2026-11-27``): most of the cost does not grow
with the candidates. Each GEMM below (measured by the defaults in that run, every class) is
compiled cold (Inductor's caches off, Triton's cache and DIODE's prediction cache fresh for the
process, Inductor's compile workers started first), under the defaults and then with no
autotuning, and the defaults' compile is split by timers around its steps: DIODE's lowering
(``get_template_configs``), the choice selection (``choices_to_benchmark``: ranking and
measuring), and within the measurement the parallel precompile (wall, and the sum of each choice's
own), the example inputs, the first runs and the timer; Inductor's autotuner call after the
selection; each Triton kernel Inductor compiles for the graph (``AsyncCompile.triton``, and the
wait for them); the output module's load.

Each round is two fresh processes, in alternating order: DIODE as it is (Triton candidates
compiled in Inductor's compile workers) and ``--threads`` (every candidate compiled in this
process's threads, as before). Written: every compile of every round, and per variant the total
compile time of the defaults and of no autotuning over the GEMMs (medians over rounds). With
``--profile`` one process runs the defaults under cProfile (cumulative and own time, the 60
largest, and the raw ``cold_profile.pstats``) on other shapes; cProfile inflates Python-heavy
steps, so compare times from the rounds.

With ``--graph-size N`` one process compiles the first G (``--graphs``, default 8) graphs of the
held-out end-to-end run instead (``e2e_validation --graph-size N``: the same groups in the same
order), each under the defaults, DIODE's single pick and no autotuning, with the steps above and
the lowering (``GraphLowering.run``) and the scheduler's finalizing of the buffers whose timings
DIODE supplies when it defers its measurement (``finalize_multi_template_buffers``); with
``--profile`` too, the defaults' compiles of those graphs run under cProfile.
``--inference-threads N`` ranks on N intra-op threads instead of DIODE's one
(``model.learned.INFERENCE_THREADS``), to compare.
"""
import os, tempfile

os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="cold-profile-triton-")
os.environ["DIODE_CACHE_DIR"] = tempfile.mkdtemp(prefix="cold-profile-diode-")

import cProfile, contextlib, dataclasses, functools, io, json, pstats, statistics, subprocess, sys, time

sys.path.insert(0, "benchmarks")
import torch
import diode_backend
import e2e_validation as e
from diode_backend.problem import GemmProblem
from diode_backend.inductor import benchmarked_choices, choices as diode_choices, measure
from torch._inductor import config, select_algorithm
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.graph import GraphLowering

from diode_backend.offline.dataset import load_dataset
from diode_backend.offline.families import family_of
from torch._inductor.scheduler import Scheduler

PROFILE = "--profile" in sys.argv
GRAPH_SIZE = int(sys.argv[sys.argv.index("--graph-size") + 1]) if "--graph-size" in sys.argv else 0
GRAPHS = int(sys.argv[sys.argv.index("--graphs") + 1]) if "--graphs" in sys.argv else 8
THREADS = "--threads" in sys.argv
ROUND = "--round" in sys.argv
ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
#: ``--inference-threads N``: DIODE ranks on N intra-op threads (``model.learned.INFERENCE_THREADS``)
INFERENCE_THREADS = int(sys.argv[sys.argv.index("--inference-threads") + 1]) if "--inference-threads" in sys.argv else None
OUT = os.environ["OUT"]
ROW, COL = "row", "col"
PROBLEMS = [
    GemmProblem("mm", 2047, 256, 5120, dtype="float16", a_layout=ROW, b_layout=COL),
    GemmProblem("bmm", 20, 64, 20, batch=12, dtype="bfloat16"),
    GemmProblem("mm", 1000, 2048, 4096, dtype="bfloat16", a_layout=ROW, b_layout=COL),
    GemmProblem("mm", 16, 2048, 4096, dtype="bfloat16", a_layout=ROW, b_layout=COL),
    GemmProblem("bmm", 500, 500, 64, batch=4, dtype="float32", b_layout=COL, allow_tf32=True),
    GemmProblem("addmm", 8, 1000, 768, dtype="float32", a_layout=ROW, b_layout=COL, bias="row"),
    GemmProblem("mm", 333, 60, 2048, dtype="bfloat16", a_layout=ROW, b_layout=COL),
    GemmProblem("addmm", 4096, 256, 256, dtype="float32", a_layout=ROW, b_layout=COL, bias="row", allow_tf32=True),
    GemmProblem("addmm", 16, 1000, 1024, dtype="float16", a_layout=ROW, b_layout=COL, bias="row"),
    GemmProblem("bmm", 4096, 40, 4096, batch=16, dtype="float16"),
    GemmProblem("addmm", 3992, 768, 3072, dtype="float32", a_layout=ROW, b_layout=COL, bias="row", allow_tf32=True),
    GemmProblem("mm", 1000, 512, 2048, dtype="bfloat16", a_layout=ROW, b_layout=COL),
    GemmProblem("mm", 3000, 60, 2048, dtype="bfloat16", a_layout=ROW, b_layout=COL),
]
if PROFILE:  # other shapes than the timed pass's, so nothing it compiled is a cache hit here
    PROBLEMS = [dataclasses.replace(p, m=p.m + 3) for p in PROBLEMS[::2]]


def held_out_graphs() -> list[list[GemmProblem]]:
    """The first :data:`GRAPHS` graphs of the held-out end-to-end run at :data:`GRAPH_SIZE`."""
    families = set(json.loads(e.HOLDOUT.read_text())["families"])
    held_out = [p for p in load_dataset("trained_models/data/h100/dataset").split("validation") if family_of(p) in families]
    groups = e.graph_groups(e.run_order(e.choose(held_out, len(held_out))), GRAPH_SIZE)[:GRAPHS]
    return [[item.problem for item in group] for group in groups]


#: what one compile holds: a GEMM each, or a graph of several
CASES = held_out_graphs() if GRAPH_SIZE else [[p] for p in PROBLEMS]

steps: dict[str, float] = {}
counts: dict[str, int] = {}


def timed(owner, name: str, step: str) -> None:
    """Add the wall time of every call of ``owner.name`` to ``steps[step]`` (nested calls of
    the same step counted once)."""
    original = getattr(owner, name)
    depth = [0]

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        depth[0] += 1
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                steps[step] = steps.get(step, 0.0) + time.perf_counter() - started
                counts[step] = counts.get(step, 0) + 1

    setattr(owner, name, wrapper)


def own_precompile_times() -> None:
    """Each choice's own precompile time, summed (``precompile_own``): beside the wall time of
    the parallel precompile it shows whether the threads ran in parallel."""
    original = measure._precompile

    def precompile(choices, in_workers):
        for choice in choices:
            inner = getattr(choice, "precompile", None)
            if inner is not None and not getattr(inner, "_timed", False):
                def own(inner=inner):
                    started = time.perf_counter()
                    try:
                        return inner()
                    finally:
                        steps["precompile_own"] = steps.get("precompile_own", 0.0) + time.perf_counter() - started
                own._timed = True
                choice.precompile = own
        return original(choices, in_workers)

    measure._precompile = precompile


if INFERENCE_THREADS is not None:
    from diode_backend.model import learned

    learned.INFERENCE_THREADS = INFERENCE_THREADS
timed(diode_choices.DiodeChoicesMixin, "get_template_configs", "diode_lowering")
timed(benchmarked_choices, "choices_to_benchmark", "selection")
own_precompile_times()
timed(measure, "_precompile", "precompile_wall")
timed(measure.compat, "benchmark_inputs", "example_inputs")
timed(measure.compat, "run_callable", "run_callables")
timed(measure, "_synchronize", "first_runs_sync")
timed(measure.GraphTimer, "time", "timer")
timed(measure.Timer, "time", "timer")
timed(measure.PendingMeasurement, "finish", "measure")
timed(select_algorithm.AlgorithmSelectorCache, "__call__", "autotuner_call")
timed(AsyncCompile, "triton", "graph_triton_compile")
timed(AsyncCompile, "wait", "graph_compile_wait")
timed(GraphLowering, "compile_to_module", "compile_to_module")
timed(GraphLowering, "codegen", "codegen")
timed(GraphLowering, "run", "lowering")
timed(Scheduler, "finalize_multi_template_buffers", "finalize_buffers")


def compile_once(problems: list[GemmProblem], mode: str, profile: cProfile.Profile | None) -> dict:
    e.set_tf32(problems[0])  # a graph's problems share their float32 precision setting
    steps.clear()
    counts.clear()
    workers_ready = AsyncCompile.use_process_pool()
    fn, args = e.make_graph(problems)
    torch._dynamo.reset()
    with (profile or contextlib.nullcontext()):
        figures, _ = e.compile_mode(fn, args, e.MODES[mode])
    diode = figures.get("diode") or {}
    decision = diode.get("decision") or {}
    return {"compile_s": figures["compile_s"], "workers_ready": workers_ready, "steps_s": dict(steps), "calls": dict(counts),
            "pick": decision.get("pick"), "kept": decision.get("kept"), "measured": sorted(decision.get("measured_us") or {}),
            "deferred_measurements": diode.get("deferred_measurements"), "kernels": figures["kernels"]}  # fmt: skip


def one_process() -> dict:
    """This process's compiles (a round's variant, or the profiled pass)."""
    config.force_disable_caches = True
    if THREADS:
        measure.compat.compile_in_workers = lambda choice: None
    deadline = time.monotonic() + 120
    while not AsyncCompile.use_process_pool() and time.monotonic() < deadline:
        time.sleep(0.2)
    e.compile_mode(*e.make_case(GemmProblem("mm", 192, 320, 256)), e.MODES["no_autotune"])  # imports, CUDA context
    profile = cProfile.Profile() if PROFILE else None
    rows = []
    modes = ("diode_fast", "diode_pick", "no_autotune") if GRAPH_SIZE else ("diode_fast", "no_autotune")
    for problems in CASES:
        row = {"problem": "; ".join(p.describe() for p in problems),
               **{mode: compile_once(problems, mode, profile if mode == "diode_fast" else None) for mode in modes}}  # fmt: skip
        rows.append(row)
        fast = row["diode_fast"]
        print(f"{row['problem']}: defaults {fast['compile_s']:.2f} s ({fast['kept']} kept, pick {fast['pick']}, workers {fast['workers_ready']}), "
              f"no autotuning {row['no_autotune']['compile_s']:.2f} s; " + ", ".join(f"{k} {v:.3f}" for k, v in fast["steps_s"].items()),
              file=sys.stderr, flush=True)  # fmt: skip
    if profile is not None:
        profile.dump_stats(f"{OUT}/cold_profile.pstats")  # for print_callees of any step
        for order in ("cumulative", "tottime"):
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats(order).print_stats(60)
            with open(f"{OUT}/cold_profile_{order}.txt", "w") as f:
                f.write(text.getvalue())
    return {"variant": "threads" if THREADS else "workers", "rows": rows}


def summary(rounds: list[dict]) -> dict:
    """Per variant, over the GEMMs: the total compile time of each mode (each GEMM's median over
    the rounds) and the median of each step of the defaults' compiles."""
    result = {}
    for variant in ("threads", "workers"):
        runs = [r["rows"] for r in rounds if r["variant"] == variant]
        median = {mode: [statistics.median(run[i][mode]["compile_s"] for run in runs) for i in range(len(CASES))]
                  for mode in ("diode_fast", "no_autotune")}  # fmt: skip
        steps = {name for run in runs for row in run for name in row["diode_fast"]["steps_s"]}
        result[variant] = {
            "rounds": len(runs), **{f"{mode}_s": sum(times) for mode, times in median.items()},
            "per_gemm_diode_fast_s": dict(zip((p.describe() for p in PROBLEMS), median["diode_fast"])),
            "median_step_s": {name: statistics.median(row["diode_fast"]["steps_s"].get(name, 0.0) for run in runs for row in run)
                              for name in sorted(steps)},
        }  # fmt: skip
    return result


ENVIRONMENT = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "triton": __import__("triton").__version__, "date": time.strftime("%Y-%m-%d")}  # fmt: skip
def graph_summary(rows: list[dict]) -> dict:
    """Per mode over the graphs: the total compile time and the sum of each step."""
    return {mode: {"compile_s": sum(r[mode]["compile_s"] for r in rows),
                   "steps_s": {name: sum(r[mode]["steps_s"].get(name, 0.0) for r in rows)
                               for name in sorted({n for r in rows for n in r[mode]["steps_s"]})}}
            for mode in ("diode_fast", "diode_pick", "no_autotune")}  # fmt: skip


if GRAPH_SIZE:
    rows = one_process()["rows"]
    result = {"environment": ENVIRONMENT, "graph_size": GRAPH_SIZE, "inference_threads": INFERENCE_THREADS or 1,
              "summary": graph_summary(rows), "rows": rows}  # fmt: skip
    with open(f"{OUT}/cold_profile_graphs.json", "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["summary"], indent=1))
elif ROUND or PROFILE:
    print("ROUND " + json.dumps(one_process()), flush=True)
else:
    rounds = []
    for i in range(ROUNDS):  # alternating which variant runs first, so a drift of the machine favours neither
        for variant in (("threads", "workers") if i % 2 == 0 else ("workers", "threads")):
            flags = ["--round"] + (["--threads"] if variant == "threads" else [])
            done = subprocess.run([sys.executable, __file__, *flags], check=True, stdout=subprocess.PIPE, text=True)
            rounds.append(json.loads(next(l for l in reversed(done.stdout.splitlines()) if l.startswith("ROUND ")).removeprefix("ROUND ")))
            print(f"round {i + 1} {variant}: defaults {sum(r['diode_fast']['compile_s'] for r in rounds[-1]['rows']):.2f} s, "
                  f"no autotuning {sum(r['no_autotune']['compile_s'] for r in rounds[-1]['rows']):.2f} s", flush=True)  # fmt: skip
    result = {"environment": ENVIRONMENT, "summary": summary(rounds), "rounds": rounds}
    with open(f"{OUT}/cold_profile.json", "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["summary"], indent=1))
