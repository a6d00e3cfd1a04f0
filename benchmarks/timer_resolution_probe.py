"""How far apart the e2e run's timer puts compiled functions that run the same kernel (GPU).

    OUT=DIR python benchmarks/timer_resolution_probe.py     # DIR/timer_resolution.json

Small held-out GEMMs (5 to 12 us), where the e2e run timed two modes that compiled the same
kernel up to 1.17x apart. Per problem, four compiles of no autotuning (cuBLAS) and four of the
single pick (the same Triton kernel each time), each a ``torch.compile`` of its own (options
that differ only in a trace setting at its default), all eight timed together in three rounds
by the e2e run's event timer (``Timer``), then by the CUDA-graph timer (``GraphTimer``, the same
settings, on a side stream: graphs cannot be captured on the default one). Per timer and
kernel: each copy's median and host time to launch, and the largest median over the smallest."""
import json, os, sys, tempfile
sys.path.insert(0, "benchmarks")
import torch
import e2e_validation as e
from diode_backend.problem import GemmProblem
from diode_backend.timing import GraphTimer, Timer, TimingMethod
from torch._inductor import config

config.force_disable_caches = True
out = os.environ["OUT"]
method = TimingMethod(**e.TIMING)
timers = {"event": Timer(method), "graph": GraphTimer(method)}
side = torch.cuda.Stream()  # graphs cannot be captured on the default stream
#: settings at their defaults: each makes a compile's options differ, so Dynamo compiles anew
SAME = ["trace.enabled", "trace.compile_profile", "trace.debug_log", "trace.info_log"]
problems = [
    GemmProblem("bmm", 20, 64, 20, batch=12, dtype="bfloat16"),
    GemmProblem("addmm", 200, 3072, 768, dtype="bfloat16", a_layout="row", b_layout="col", bias="row"),
    GemmProblem("addmm", 2, 1280, 320, dtype="float16", a_layout="row", b_layout="col", bias="row"),
    GemmProblem("mm", 64, 1, 2048, dtype="bfloat16", a_layout="row", b_layout="col"),
    GemmProblem("mm", 12, 2048, 1408, dtype="bfloat16", a_layout="row", b_layout="col"),
    GemmProblem("bmm", 256, 160, 256, batch=16, dtype="float16"),
]
report = {"method": vars(method), "rounds": e.ROUNDS, "rows": []}
for problem in problems:
    fn, args = e.make_case(problem)
    torch._dynamo.reset()
    compiled = {}
    for mode in ("no_autotune", "diode_pick"):
        os.environ["DIODE_CACHE_DIR"] = tempfile.mkdtemp()
        for copy, setting in enumerate(SAME):
            compiled[f"{mode}#{copy}"] = e.compile_mode(fn, args, dict(e.MODES[mode], **{setting: False}))[1]
    launches = [lambda f=f: f(*args) for f in compiled.values()]
    row = {"problem": problem.describe()}
    for name, timer in timers.items():
        stream = side if name == "graph" else torch.cuda.current_stream()  # the event timer as the e2e run
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            timings = e.time_rounds(launches, timer)
        torch.cuda.current_stream().wait_stream(stream)
        medians = {k: timing["runtime_us"] for k, timing in zip(compiled, timings)}
        # each copy's host time to launch (the event timer sleeps in proportion to it before each run)
        row[name] = {"median_us": medians, "host_us": dict(zip(compiled, timer.host_us))}
        for mode in ("no_autotune", "diode_pick"):
            copies = [t for k, t in medians.items() if k.startswith(mode)]
            row[name][f"{mode}_max_over_min"] = max(copies) / min(copies)
    report["rows"].append(row)
    print(row["problem"], {n: {m: round(row[n][f"{m}_max_over_min"], 3) for m in ("no_autotune", "diode_pick")} for n in timers},
          "graph problems timed by events:", timers["graph"].fallbacks, flush=True)
    json.dump(report, open(f"{out}/timer_resolution.json", "w"), indent=1)
