"""A biased addmm's ATen calls, eager and as each e2e mode compiles them, timed together (GPU).

    OUT=DIR python benchmarks/bias_addmm_probe.py     # DIR/bias.json, DIR/bias_code.tgz

For the held-out rows where a mode that compiled an ATen call ran far slower end to end than the
same call timed elsewhere (vit's fp32 addmm 197x2304x768, sd-unet's addmm 576x1280x1280 and
8192x320x320): ``torch.addmm`` with the 1-d bias (what ``aten::bias_addmm`` calls), with the bias
expanded (``aten::addmm``), with it materialized, and mm then add; then each mode of
``e2e_validation`` compiled (one Dynamo reset per problem, Inductor's caches off), all timed
together by the e2e run's timer in three rounds (each round's medians), with each mode's pick
and generated code."""
import json, os, sys, tarfile
sys.path.insert(0, "benchmarks")
import torch
import diode_backend
import e2e_validation as e
from diode_backend.problem import GemmProblem
from diode_backend.timing import Timer, TimingMethod
from torch._inductor import config
from torch._inductor.utils import run_and_get_code

config.force_disable_caches = True
out = os.environ["OUT"]
timer = Timer(TimingMethod(**e.TIMING))
problems = [GemmProblem("addmm", 197, 2304, 768, dtype="float32", a_layout="row", b_layout="col", bias="row"),
            GemmProblem("addmm", 576, 1280, 1280, dtype="float16", a_layout="row", b_layout="col", bias="row"),
            GemmProblem("addmm", 8192, 320, 320, dtype="float16", a_layout="row", b_layout="col", bias="row")]
report = {}
os.makedirs("/tmp/code", exist_ok=True)
for p in problems:
    e.set_tf32(p)
    fn, (bias, a, b) = e.make_case(p)
    full = bias.expand(p.m, p.n)
    contiguous = full.contiguous()
    launches = {
        "eager addmm(bias 1-d)": lambda: torch.addmm(bias, a, b),
        "eager addmm(bias expanded)": lambda: torch.addmm(full, a, b),
        "eager addmm(bias contiguous MxN)": lambda: torch.addmm(contiguous, a, b),
        "eager mm + bias": lambda: torch.mm(a, b).add_(bias),
    }
    picks = {}
    torch._dynamo.reset()
    for mode in ("no_autotune", "diode_pick", "diode_fast", "max_autotune_default"):
        os.environ["DIODE_CACHE_DIR"] = f"/tmp/bias-cache/{p.m}/{mode}"
        diode_backend.reset_stats()
        compiled = torch.compile(fn, options=e.MODES[mode])
        _, code = run_and_get_code(compiled, bias, a, b)
        decisions = diode_backend.stats()["recent_decisions"]
        picks[mode] = decisions[-1]["pick"] if decisions else None
        with open(f"/tmp/code/{p.m}x{p.n}x{p.k}-{mode}.py", "w") as f:
            f.write("\n\n# ----\n\n".join(code))
        launches[f"compiled {mode}"] = lambda c=compiled: c(bias, a, b)
    rounds = []
    for _ in range(3):
        samples = timer.time(list(launches.values()))
        rounds.append({name: sorted(runs)[len(runs) // 2] for name, runs in zip(launches, samples)})
    report[p.describe()] = {"picks": picks, "rounds": rounds}
    print(p.describe(), json.dumps(picks), flush=True)
    for name in launches:
        print(f"  {name:36s}", "  ".join(f"{r[name]:8.2f}" for r in rounds), flush=True)
json.dump(report, open(f"{out}/bias.json", "w"), indent=1)
with tarfile.open(f"{out}/bias_code.tgz", "w:gz") as tar:
    tar.add("/tmp/code", arcname="code")
