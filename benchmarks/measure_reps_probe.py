"""Whether DIODE's measured pick loses for want of runs (GPU): the held-out rows where the
defaults' measured pick ran slower end to end than the single pick, compiled again.

    OUT=DIR python benchmarks/measure_reps_probe.py [E2E_JSON]     # DIR/measure_reps.json

Per problem, three repeats of: one Dynamo reset, then no autotuning, the single pick, the
defaults with the runtime's timing method (``measure.METHOD``) and the defaults with the e2e
run's (``e2e_validation.TIMING``: up to 200 runs a candidate), each DIODE compile with a fresh
prediction cache, all four then timed together by the e2e run's timer in its three rounds.
Each measured compile records what DIODE timed (candidate, microseconds). Inductor's caches off
as in the e2e run. The problems are the rows of ``E2E_JSON`` (default: the held-out run of
2026-11-25) whose ``diode_fast`` ran more than 5% slower than ``diode_pick``."""
import json, os, sys, tempfile
from dataclasses import replace
sys.path.insert(0, "benchmarks")
import torch
import e2e_validation as e
from diode_backend.files import read_json
from diode_backend.inductor import measure
from diode_backend.problem import GemmProblem
from diode_backend.timing import Timer, TimingMethod
from torch._inductor import config

config.force_disable_caches = True
out = os.environ["OUT"]
source = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/h100_e2e_heldout_8b6cf773_2026-11-25.json.gz"
rows = read_json(source)["rows"]
lost = [r for r in rows if r["modes"]["diode_fast"]["runtime_us"] > 1.05 * r["modes"]["diode_pick"]["runtime_us"]]
timer = Timer(TimingMethod(**e.TIMING))
methods = {"diode_fast": measure.METHOD, "diode_fast_e2e_reps": replace(measure.METHOD, **e.TIMING)}
timed_by_diode: list = []
real_finish = measure.PendingMeasurement.finish


def recording_finish(pending, *args):
    measurement = real_finish(pending, *args)
    timed_by_diode.append(sorted((round(t, 2), str(getattr(c, "description", c))[:90]) for c, t in zip(pending.choices, measurement.times_us)))
    return measurement


measure.PendingMeasurement.finish = recording_finish  # every DIODE measurement, at lowering or deferred, ends here


def compile_with(method, fn, args, options):
    measure.METHOD = method
    measure._stream_timer.cache_clear(), measure._graph_timer.cache_clear()
    os.environ["DIODE_CACHE_DIR"] = tempfile.mkdtemp()
    timed_by_diode.clear()
    figures, compiled = e.compile_mode(fn, args, options)
    return {"pick": figures["diode"]["decision"]["pick"] if figures["diode"] else None, "diode_timed": list(timed_by_diode)}, compiled


warm_fn, warm_args = e.make_case(GemmProblem("mm", 192, 320, 256))
e.measure_row(warm_fn, warm_args, ["no_autotune", "diode_pick", "diode_fast"], timer, tempfile.mkdtemp())
report = {"source": source, "methods": {k: vars(v) for k, v in methods.items()}, "rows": []}
for row in lost:
    problem = GemmProblem.from_dict(row["problem"])
    e.set_tf32(problem)
    for repeat in range(3):
        fn, args = e.make_case(problem)
        torch._dynamo.reset()
        modes, compiled = {}, {}
        for mode, options in [("no_autotune", e.MODES["no_autotune"]), ("diode_pick", e.MODES["diode_pick"])]:
            modes[mode], compiled[mode] = compile_with(measure.METHOD, fn, args, options)
        for mode, method in methods.items():  # options that differ, or Dynamo reuses the first compile
            options = dict(e.MODES["diode_fast"], **({"trace.enabled": False} if mode != "diode_fast" else {}))
            modes[mode], compiled[mode] = compile_with(method, fn, args, options)
        measure.METHOD = methods["diode_fast"]
        for mode, timing in zip(compiled, e.time_rounds([lambda f=f: f(*args) for f in compiled.values()], timer)):
            modes[mode].update(timing)
        report["rows"].append({"problem": problem.describe(), "repeat": repeat, "modes": modes})
        print(problem.describe(), repeat, {m: (f["pick"], f["runtime_us"]) for m, f in modes.items()}, flush=True)
        json.dump(report, open(f"{out}/measure_reps.json", "w"), indent=1)
