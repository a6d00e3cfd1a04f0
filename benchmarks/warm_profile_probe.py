"""Where a warm compile of a Triton winner spends the time no autotuning does not (GPU).

    OUT=DIR python benchmarks/warm_profile_probe.py [--rounds N]
        # DIR/warm_profile.json, DIR/warm_profile_*.txt, DIR/warm_rounds.json

With DIODE's cache warm and the kernel caches kept, a held-out GEMM whose stored winner is an
ATen call compiles as fast as with no autotuning, one whose winner is a Triton tile takes about
1.7x as long (``h100_e2e_warm_winnersearch_2026-11-24.json.gz``). This process compiles eight such
GEMMs with the defaults (filling DIODE's prediction cache and the kernel caches in fresh folders),
then runs itself again in a new process (``--warm``, with the environment this one started with) that, after a warm-up compile, compiles each
GEMM with no autotuning and with the defaults, Inductor's FX-graph and autotune caches off and
the kernel caches kept as ``e2e_validation --kernel-cache`` keeps them, each compile profiled by
cProfile. Written: each compile's time, DIODE's decision and the kernels it compiled itself
(written to Triton's cache: a miss), cold and warm, and per warm mode the profile of all its
compiles (cumulative and own time, the 60 largest). Per compile also: whether Inductor's compile
workers were ready (before them, Inductor compiles Triton kernels in this process) and, for each
template kernel written, Triton's metadata (options, cache-invalidating environment), TTIR and
Inductor's source module, so a warm miss can be set beside the cold compile of the same tile;
and the modules executed while DIODE's GEMM lowering (``get_template_configs``) made its
choices (a Triton choice's benchmark module: a lone choice's is no longer executed) and the
time in that lowering.

cProfile inflates Python-heavy steps several times, so the times to compare come from the
rounds that follow (``--rounds``, default 3): each round is two fresh warm processes, unprofiled,
one with DIODE as it is and one ``--as-before`` (this process switches off what a lone choice
skips: every config up to the winner converted, its benchmark module executed), in alternating
order. Written: every compile of every round, and a summary per variant: total and geomean of
diode_warm / no_autotune over the GEMMs (medians over rounds), benchmark modules executed and
time in the lowering per compile."""
import cProfile, io, json, math, os, pstats, re, statistics, subprocess, sys, tempfile, time

WARM = "--warm" in sys.argv
PROFILE = "--profile" in sys.argv
AS_BEFORE = "--as-before" in sys.argv
ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
if not WARM:  # fresh cache folders, set before e2e_validation or Triton read them; the warm process inherits them
    folder = tempfile.mkdtemp()
    os.environ.update({name: f"{folder}/{name.lower()}" for name in ("DIODE_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")})
#: The environment the warm process starts with: this one's before torch ran. Inductor sets
#: TRITON_PTXAS_PATH here when it first compiles a Triton kernel, after it has put the ptxas
#: version then in force into its backend hash, a line of every kernel's source; a process that
#: inherited the variable hashes another ptxas version and misses every kernel this one wrote.
ENVIRONMENT = dict(os.environ)
sys.path.insert(0, "benchmarks")
import torch
import diode_backend
import e2e_validation as e
import e2e_warm
from diode_backend.problem import GemmProblem
from torch._inductor import codecache
from torch._inductor.async_compile import AsyncCompile
from diode_backend.inductor import choices as diode_choices, compat, group_configs

#: Held-out GEMMs whose stored winner was a Triton tile in the warm run named above.
PROBLEMS = [
    GemmProblem("mm", 77, 320, 768, dtype="float16", a_layout="row", b_layout="col"),
    GemmProblem("bmm", 256, 64, 256, batch=512, dtype="float32"),
    GemmProblem("addmm", 2, 1280, 320, dtype="float16", a_layout="row", b_layout="col", bias="row"),
    GemmProblem("bmm", 9216, 40, 9216, batch=8, dtype="float16"),
    GemmProblem("bmm", 256, 160, 256, batch=16, dtype="float16"),
    GemmProblem("addmm", 20, 3072, 768, dtype="bfloat16", a_layout="row", b_layout="col", bias="row"),
    GemmProblem("mm", 64, 1, 2048, dtype="bfloat16", a_layout="row", b_layout="col"),
    GemmProblem("mm", 12, 2048, 1408, dtype="bfloat16", a_layout="row", b_layout="col"),
]
out = os.environ["OUT"]
executed: list[str] = []  # the modules PyCodeCache executed, by path
benchmark_modules: list[str] = []  # of those, the ones executed while the GEMM lowering made its choices
lowering_s = [0.0]  # time in DIODE's GEMM lowering (get_template_configs)
in_lowering = [False]


def _count_module_loads() -> None:
    """Record every module PyCodeCache executes, those executed inside DIODE's GEMM lowering
    apart (there only a Triton choice's benchmark module is: the graph's kernels and wrapper
    load later), and time the lowering."""
    reload = codecache._reload_python_module

    def counting_reload(key, path, *args, **kwargs):
        executed.append(path)
        if in_lowering[0]:
            benchmark_modules.append(path)
        return reload(key, path, *args, **kwargs)

    codecache._reload_python_module = counting_reload
    lowering = diode_choices.DiodeChoicesMixin.get_template_configs

    def timed_lowering(self, *args, **kwargs):
        started, in_lowering[0] = time.perf_counter(), True
        try:
            return lowering(self, *args, **kwargs)
        finally:
            in_lowering[0] = False
            lowering_s[0] += time.perf_counter() - started

    diode_choices.DiodeChoicesMixin.get_template_configs = timed_lowering


def _as_before() -> None:
    """DIODE as before a lone choice skipped work: every finished config up to the winner
    converted to template kwargs, the lone choice's benchmark module executed."""
    group_configs.WinnerSearch.is_winner = lambda self, config: True
    compat.leave_template_modules_unloaded = lambda on_failure: None



def triton_entries() -> set[str]:
    """The files of Triton's kernel cache, as ``hash/name``."""
    root = os.environ["TRITON_CACHE_DIR"]
    return {f"{d}/{f}" for d in os.listdir(root) for f in os.listdir(f"{root}/{d}")} if os.path.isdir(root) else set()


def template_kernels(written: list[str]) -> dict[str, dict]:
    """Triton's metadata and TTIR of each template kernel among ``written`` (``hash/name.json``),
    and the Inductor module it was compiled from."""
    root = os.environ["TRITON_CACHE_DIR"]
    kernels = {}
    for name in written:
        if "_tem_" in name:
            with open(f"{root}/{name}") as f:
                metadata = json.load(f)
            with open(f"{root}/{name.removesuffix('.json')}.ttir") as f:
                ttir = f.read()
            module = re.search(r'loc\("([^"]+\.py)"', ttir).group(1)  # Inductor's source of the kernel
            with open(module) as f:
                kernels[name] = {"metadata": metadata, "ttir": ttir, "module": f.read()}
    return kernels


def compile_timed(problem: GemmProblem, mode: str, profile: cProfile.Profile | None = None) -> dict:
    """One compile of ``problem`` under ``mode``: its time (s), DIODE's decision and counts, and
    the kernels it wrote to Triton's cache (each one a cache miss: compiled here)."""
    e.set_tf32(problem)
    diode_backend.reset_stats()
    before = triton_entries()
    executed.clear()
    benchmark_modules.clear()
    lowering_s[0] = 0.0
    workers_ready = AsyncCompile.use_process_pool()
    fn, args = e.make_case(problem)
    torch._dynamo.reset()
    compiled = torch.compile(fn, options=e.MODES[mode])
    e.synchronize()
    if profile is not None:
        profile.enable()
    started = time.perf_counter()
    compiled(*args)
    e.synchronize()
    elapsed = time.perf_counter() - started
    if profile is not None:
        profile.disable()
    stats = diode_backend.stats()
    written = sorted(name for name in triton_entries() - before if name.endswith(".json") and "__grp__" not in name)
    return {"compile_s": elapsed, "single_pick": stats["single_pick"], "benchmarked_top_k": stats["benchmarked_top_k"],
            "measured_decision_hits": stats["counters"].get("measured_decision_hits", 0),
            "predicted_decision_hits": stats["counters"].get("predicted_decision_hits", 0),
            "decision": stats["recent_decisions"][-1] if stats["recent_decisions"] else None, "triton_compiled": written,
            "workers_ready": workers_ready, "template_kernels": template_kernels(written),
            "benchmark_modules": len(benchmark_modules), "modules_executed": len(executed), "lowering_s": lowering_s[0]}


def profile_text(profile: cProfile.Profile, order: str) -> str:
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats(order).print_stats(60)
    return text.getvalue()


def summary(rounds: list[dict]) -> dict:
    """Per variant: diode_warm / no_autotune over the GEMMs (each GEMM's median compile time over
    the rounds), in total and at the geomean, and per diode_warm compile the median benchmark
    modules executed and time in the lowering (s)."""
    result = {}
    for variant in ("before", "after"):
        runs = [r["rows"] for r in rounds if r["variant"] == variant]
        if not runs:
            continue
        median = {mode: [statistics.median(run[i][mode]["compile_s"] for run in runs) for i in range(len(PROBLEMS))]
                  for mode in ("no_autotune", "diode_warm")}  # fmt: skip
        ratios = [d / n for d, n in zip(median["diode_warm"], median["no_autotune"])]
        warm = [run[i]["diode_warm"] for run in runs for i in range(len(PROBLEMS))]
        result[variant] = {
            "rounds": len(runs), "no_autotune_s": sum(median["no_autotune"]), "diode_warm_s": sum(median["diode_warm"]),
            "total_ratio": sum(median["diode_warm"]) / sum(median["no_autotune"]),
            "geomean_ratio": math.exp(statistics.fmean(math.log(r) for r in ratios)),
            "per_gemm_ratio": dict(zip((p.describe() for p in PROBLEMS), ratios)),
            "benchmark_modules_per_compile": statistics.median(w["benchmark_modules"] for w in warm),
            "lowering_s_per_compile": statistics.median(w["lowering_s"] for w in warm),
            "decision_hits": sum(w["measured_decision_hits"] + w["predicted_decision_hits"] for w in warm), "compiles": len(warm),
        }  # fmt: skip
    return result


_count_module_loads()
if WARM:
    if AS_BEFORE:
        _as_before()
    e2e_warm.keep_kernel_caches()
    compile_timed(GemmProblem("mm", 192, 320, 256), "no_autotune")
    compile_timed(GemmProblem("mm", 192, 320, 256), "diode_warm")
    profiles = {"no_autotune": cProfile.Profile(), "diode_warm": cProfile.Profile()} if PROFILE else {}
    rows = []
    for problem in PROBLEMS:
        row = {"problem": problem.describe()}
        for mode in ("no_autotune", "diode_warm"):
            row[mode] = compile_timed(problem, mode, profiles.get(mode))
        rows.append(row)
        print(row["problem"], {m: (round(r["compile_s"], 3), r["workers_ready"], r["triton_compiled"], r["benchmark_modules"])
                               for m, r in row.items() if m != "problem"}, flush=True)  # fmt: skip
    for mode, profile in profiles.items():
        for order in ("cumulative", "tottime"):
            with open(f"{out}/warm_profile_{mode}_{order}.txt", "w") as f:
                f.write(profile_text(profile, order))
    result = {"rows": rows, "variant": "before" if AS_BEFORE else "after", "environment": {"torch": torch.__version__}}
    if PROFILE:
        json.dump(result, open(f"{out}/warm_profile.json", "w"), indent=1)
    else:
        print("ROUND " + json.dumps(result), flush=True)
else:
    e2e_warm.keep_kernel_caches()
    cold_rows = []
    for problem in PROBLEMS:
        cold = compile_timed(problem, "diode_fast")
        cold_rows.append({"problem": problem.describe(), "diode_fast": cold})
        print("cold", problem.describe(), round(cold["compile_s"], 3), cold["workers_ready"], cold["triton_compiled"], flush=True)
    json.dump(cold_rows, open(f"{out}/warm_profile_cold.json", "w"), indent=1)
    subprocess.run([sys.executable, __file__, "--warm", "--profile"], env=ENVIRONMENT, check=True)
    rounds = []
    for i in range(ROUNDS):
        # alternate which variant runs first, so a drift of the machine favours neither
        for variant in (("before", "after") if i % 2 == 0 else ("after", "before")):
            flags = ["--warm", "--as-before"] if variant == "before" else ["--warm"]
            done = subprocess.run([sys.executable, __file__, *flags], env=ENVIRONMENT, check=True, capture_output=True, text=True)
            line = next(line for line in reversed(done.stdout.splitlines()) if line.startswith("ROUND "))
            rounds.append(json.loads(line.removeprefix("ROUND ")))
            print(f"round {i + 1} {variant}: diode_warm {sum(r['diode_warm']['compile_s'] for r in rounds[-1]['rows']):.3f} s, "
                  f"no_autotune {sum(r['no_autotune']['compile_s'] for r in rounds[-1]['rows']):.3f} s", flush=True)  # fmt: skip
    result = {"summary": summary(rounds), "rounds": rounds}
    json.dump(result, open(f"{out}/warm_rounds.json", "w"), indent=1)
    print(json.dumps(result["summary"], indent=1))
