"""How DIODE's own measurement reads the held-out GEMMs where its measured pick lost (GPU).

    OUT=DIR python benchmarks/measure_probe.py     # DIR/measure_probe.json

Each GEMM is compiled three times, each time afresh (its own prediction cache, Inductor's caches
off), under no autotuning, DIODE's defaults and DIODE's single pick, the modes timed together as
``e2e_validation`` times them; per compile it records what the defaults measured for each kept
choice (``measured_us``), their pick and what each mode ran. For the addmm GEMMs the ATen calls
Inductor offers are also timed alone, outside any compile: ``addmm`` with the 1-D bias (what
``aten::bias_addmm`` calls) and with the bias expanded to 2-D (``aten::addmm`` under
max-autotune), each with and without ``out=``, by the event timer on the default stream and on a
side stream and by the graph timer."""
import json, os, statistics, sys
sys.path.insert(0, "benchmarks")
import torch
import e2e_validation as e
from diode_backend.problem import GemmProblem
from diode_backend.timing import GraphTimer, Timer, TimingMethod
from torch._inductor import config

config.force_disable_caches = True
out = os.environ["OUT"]
method = TimingMethod(**e.TIMING, replay="stream")
timer = Timer(method)
PROBLEMS = [
    GemmProblem("addmm", 500, 256, 256, dtype="float32", a_layout="row", b_layout="col", bias="row"),
    GemmProblem("addmm", 500, 256, 128, dtype="float32", a_layout="row", b_layout="col", bias="row", allow_tf32=True),
    GemmProblem("mm", 8, 60, 2048, dtype="bfloat16", a_layout="row", b_layout="col"),
    GemmProblem("mm", 333, 1, 2048, dtype="bfloat16", a_layout="row", b_layout="col"),
    GemmProblem("bmm", 5, 8192, 5, batch=128, dtype="float32"),
]
MODES = ["no_autotune", "diode_fast", "diode_pick"]
COMPILES = 3


def brief(row: dict) -> dict:
    def decision(figures):
        return ((figures.get("diode") or {}).get("decision")) or {}

    return {mode: {"runtime_us": f.get("runtime_us"), "pick": decision(f).get("pick"), "measured_us": decision(f).get("measured_us"),
                   "kernels": f.get("kernels"), "error": f.get("error")} for mode, f in row.items()}  # fmt: skip


def aten_calls_alone(problem: GemmProblem) -> dict:
    """The addmm calls timed alone, outside a compile, by three timers."""
    e.set_tf32(problem)
    _, (bias, a, b) = e.make_case(problem)
    expanded = bias.expand(problem.m, problem.n)
    buffer = torch.empty(problem.m, problem.n, device="cuda", dtype=a.dtype)
    calls = {
        "addmm_1d_bias": lambda: torch.addmm(bias, a, b),
        "addmm_expanded_bias": lambda: torch.addmm(expanded, a, b),
        "addmm_expanded_out": lambda: torch.addmm(expanded, a, b, out=buffer),
        "addmm_1d_out": lambda: torch.addmm(bias, a, b, out=buffer),
    }
    side = torch.cuda.Stream()
    figures = {}
    for name, clock, stream in (("event", timer, torch.cuda.default_stream()), ("graph", GraphTimer(method), side), ("event_side", timer, side)):
        with torch.cuda.stream(stream):
            for call in calls.values():  # cuBLAS sets up its handle on a stream's first call, outside a capture
                call()
            torch.cuda.synchronize()
            samples = clock.time(list(calls.values()))
        figures[name] = {call: statistics.median(runs) for call, runs in zip(calls, samples)}
        print("    alone", name, {call: round(us, 2) for call, us in figures[name].items()}, flush=True)
    return figures


warm_fn, warm_args = e.make_case(GemmProblem("mm", 192, 320, 256))
e.measure_row(warm_fn, warm_args, MODES, timer, "/tmp/measure-probe-warm")  # one-time costs out of the rows
report = {"environment": {"torch": torch.__version__, "device": torch.cuda.get_device_name()}, "problems": {}}
for number, problem in enumerate(PROBLEMS):
    compiles = []
    for attempt in range(COMPILES):
        e.set_tf32(problem)
        fn, args = e.make_case(problem)
        row = brief(e.measure_row(fn, args, MODES, timer, f"/tmp/measure-probe-{number}-{attempt}"))
        compiles.append(row)
        print(problem.describe(), attempt, {m: (round(r["runtime_us"], 2) if r["runtime_us"] else None, r["pick"]) for m, r in row.items()}, flush=True)
        print("    measured", {c: round(us, 2) if us else us for c, us in (row["diode_fast"]["measured_us"] or {}).items()}, flush=True)
    entry = {"compiles": compiles}
    if problem.op == "addmm":
        entry["alone"] = aten_calls_alone(problem)
    report["problems"][problem.describe()] = entry
    with open(f"{out}/measure_probe.json", "w") as f:
        json.dump(report, f, indent=1)
