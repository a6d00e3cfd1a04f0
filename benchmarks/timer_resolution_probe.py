"""How far apart the e2e run's timer puts compiled functions that run the same kernel (GPU).

    OUT=DIR python benchmarks/timer_resolution_probe.py     # DIR/timer_resolution.json
    OUT=DIR python benchmarks/timer_resolution_probe.py E2E.json.gz DESCRIBE...

Small held-out GEMMs (5 to 12 us), where the e2e run timed two modes that compiled the same
kernel up to 1.17x apart; or the rows of an e2e results file named by their ``describe`` (each
at the TF32 setting it was measured with). Per problem, four compiles of no autotuning (cuBLAS) and four of the
single pick (the same Triton kernel each time), each a ``torch.compile`` of its own (options
that differ only in a trace setting at its default), all eight timed together in three rounds
by the e2e run's event timer (``Timer``), then by the CUDA-graph timer (``GraphTimer``, the same
settings, on a side stream: graphs cannot be captured on the default one). Per timer and
kernel: each copy's median and host time to launch, and the largest median over the smallest."""
import json, os, random, statistics, sys, tempfile
sys.path.insert(0, "benchmarks")
import torch
import e2e_validation as e
from diode_backend.files import read_json
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
if len(sys.argv) > 2:  # rows of an e2e run, by their describe
    by_describe = {row["describe"]: row["problem"] for row in read_json(sys.argv[1])["rows"]}
    missing = [text for text in sys.argv[2:] if text not in by_describe]
    if missing:
        sys.exit(f"{sys.argv[1]} has no row {missing[0]!r}")
    problems = [GemmProblem.from_dict(by_describe[text]) for text in sys.argv[2:]]


def interquartile_mean(samples):
    """The mean of the middle half of ``samples``: robust to a slow run like the median, but
    it averages the event clock's ticks where a median lands on one of them."""
    ordered = sorted(samples)
    quarter = len(ordered) // 4
    return statistics.fmean(ordered[quarter:len(ordered) - quarter])


#: per round, a copy's time from its samples; a copy's figure is the median over its rounds
STATISTICS = {"median": statistics.median, "mean": statistics.fmean, "interquartile_mean": interquartile_mean}
PERMUTED = 6  # rounds in a random order after the fixed ones
random.seed(0)
report = {"method": vars(method), "rounds": e.ROUNDS, "rows": []}
for problem in problems:
    e.set_tf32(problem)
    fn, args = e.make_case(problem)
    torch._dynamo.reset()
    compiled = {}
    for mode in ("no_autotune", "diode_pick"):
        os.environ["DIODE_CACHE_DIR"] = tempfile.mkdtemp()
        for copy, setting in enumerate(SAME):
            compiled[f"{mode}#{copy}"] = e.compile_mode(fn, args, dict(e.MODES[mode], **{setting: False}))[1]
        compiled[f"{mode}#0 again"] = compiled[f"{mode}#0"]  # one compiled function timed as two launches
    launches = [lambda f=f: f(*args) for f in compiled.values()]
    row = {"problem": problem.describe()}
    for name, timer in timers.items():
        stream = side if name == "graph" else torch.cuda.current_stream()  # the event timer as the e2e run
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            rounds = [(list(range(len(launches))), timer.time(launches)) for _ in range(e.ROUNDS)]
            for _ in range(PERMUTED):  # the same copies in a new order each round: does a copy's offset follow it?
                order = random.sample(range(len(launches)), len(launches))
                timed = timer.time([launches[i] for i in order])
                rounds.append((order, [timed[order.index(i)] for i in range(len(launches))]))
        torch.cuda.current_stream().wait_stream(stream)
        # each copy's host time to launch (the event timer sleeps in proportion to it before each run)
        row[name] = {"orders": [order for order, _ in rounds], "host_us": dict(zip(compiled, timer.host_us)),
                     "samples_us": {k: [r[i] for _, r in rounds] for i, k in enumerate(compiled)}}
        for part, chosen in (("fixed", slice(0, e.ROUNDS)), ("permuted", slice(e.ROUNDS, None))):
            for stat, summarize in STATISTICS.items():
                summary = {k: statistics.median(summarize(s) for s in per_round[chosen]) for k, per_round in row[name]["samples_us"].items()}
                row[name][f"{part} {stat}"] = figure = {"us": summary}
                for mode in ("no_autotune", "diode_pick"):
                    copies = [t for k, t in summary.items() if k.startswith(mode)]
                    figure[f"{mode}_max_over_min"] = max(copies) / min(copies)
    report["rows"].append(row)
    print(row["problem"], {f"{n} {part}": [round(row[n][f"{part} median"][f"{m}_max_over_min"], 3) for m in ("no_autotune", "diode_pick")]
                           for n in timers for part in ("fixed", "permuted")},
          "graph problems timed by events:", timers["graph"].fallbacks, flush=True)
    json.dump(report, open(f"{out}/timer_resolution.json", "w"), indent=1)
