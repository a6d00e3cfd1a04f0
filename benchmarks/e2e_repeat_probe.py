"""Rows of the held-out e2e run compiled again (GPU): whether a mode's outlier repeats.

    OUT=DIR python benchmarks/e2e_repeat_probe.py     # DIR/probe.json, DIR/anomaly_pick_code.py

1. sd-unet's addmm 576x1280x1280 fp16, whose single pick (aten::bias_addmm) an earlier run timed
   at 4.4x the best while the defaults' compile of the same pick ran 1x: three rows of
   :func:`e2e_validation.measure_row` with the modes in three orders, then the single pick's
   generated code;
2. two rows where DIODE's measured pick lost (sd-unet bmm 16x256x160x256, bart addmm
   200x3072x768): four fresh compiles each (own prediction cache), to see how often the
   measurement picks the same kernel and how fast what it picks runs.
Inductor's caches are off as in the e2e run; the e2e run's timer."""
import json, os, sys
sys.path.insert(0, "benchmarks")
import torch
import e2e_validation as e
from diode_backend.problem import GemmProblem
from diode_backend.timing import Timer, TimingMethod
from torch._inductor import config
from torch._inductor.utils import run_and_get_code

config.force_disable_caches = True
out = os.environ["OUT"]
timer = Timer(TimingMethod(**e.TIMING))
report = {}
warm_fn, warm_args = e.make_case(GemmProblem("mm", 192, 320, 256))
e.measure_row(warm_fn, warm_args, ["no_autotune", "diode_pick", "diode_fast"], timer, "/tmp/probe-warm")

def brief(row):
    return {m: {"us": f.get("runtime_us"), "pick": ((f.get("diode") or {}).get("decision") or {}).get("pick"),
                "measured": (f.get("diode") or {}).get("benchmarked_top_k"), "error": f.get("error")} for m, f in row.items()}

anomaly = GemmProblem("addmm", 576, 1280, 1280, dtype="float16", a_layout="row", b_layout="col", bias="row")
orders = [["no_autotune", "diode_pick", "diode_fast", "max_autotune_default"],
          ["diode_pick", "no_autotune", "diode_fast"], ["diode_fast", "diode_pick", "no_autotune"]]
report["anomaly"] = []
for i, modes in enumerate(orders):
    fn, args = e.make_case(anomaly)
    row = brief(e.measure_row(fn, args, modes, timer, f"/tmp/probe-a{i}"))
    report["anomaly"].append(row)
    print("anomaly", i, json.dumps(row), flush=True)
torch._dynamo.reset()
os.environ["DIODE_CACHE_DIR"] = "/tmp/probe-code"
fn, args = e.make_case(anomaly)
_, code = run_and_get_code(torch.compile(fn, options=e.MODES["diode_pick"]), *args)
open(f"{out}/anomaly_pick_code.py", "w").write("\n\n# ----\n\n".join(code))

for p in [GemmProblem("bmm", 256, 160, 256, batch=16, dtype="float16"),
          GemmProblem("addmm", 200, 3072, 768, dtype="bfloat16", a_layout="row", b_layout="col", bias="row")]:
    rows = []
    for i in range(4):
        fn, args = e.make_case(p)
        row = brief(e.measure_row(fn, args, ["no_autotune", "diode_fast"], timer, f"/tmp/probe-{p.op}-{i}"))
        rows.append(row)
        print(p.describe(), i, json.dumps(row), flush=True)
    report[p.describe()] = rows
json.dump(report, open(f"{out}/probe.json", "w"), indent=1)
