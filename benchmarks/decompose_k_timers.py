"""Do DIODE's two GPU timers agree on the choices it measures, and on the compiled graphs?

    python benchmarks/decompose_k_timers.py > benchmarks/results/h100_decompose_k_timers_<date>.log

For each GEMM (decompose-k territory: K large next to M and N), with Inductor's caches off:
1. DIODE's defaults compile it, measuring every kept choice (confidence under the threshold); the
   same launches are then timed again by the CUDA-graph timer and by the guarded event (stream)
   timer, in the method of ``benchmarks/e2e_validation.py``;
2. the compiled functions of no autotuning, DIODE's defaults and DIODE's single pick are timed
   by both timers;
3. the generated code of DIODE's defaults is printed (its launches).
Needs a CUDA GPU.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_validation as e2e  # noqa: E402
from diode_backend.inductor import compat, measure  # noqa: E402
from diode_backend.offline.collect.environment import environment  # noqa: E402
from diode_backend.problem import GemmProblem  # noqa: E402
from diode_backend.timing import GraphTimer, Timer, TimingMethod  # noqa: E402

METHOD = TimingMethod(min_reps=20, max_reps=200, budget_us=20000.0, slow_ratio=0.0)
PROBLEMS = (
    dict(op="mm", m=64, n=1, k=2048, dtype="bfloat16", a_layout="row", b_layout="col"),
    dict(op="mm", m=16, n=16, k=8192, dtype="float16", a_layout="row", b_layout="row"),
    dict(op="mm", m=32, n=32, k=32768, dtype="bfloat16", a_layout="row", b_layout="row"),
    dict(op="mm", m=128, n=64, k=16384, dtype="float16", a_layout="row", b_layout="col"),
)


def medians(timer, launches) -> list[float]:
    return [statistics.median(runs) for runs in timer.time(launches)]


def measure_and_compare(original):
    """``PendingMeasurement.finish`` that prints its times beside both timers' on the same launches."""

    def wrapped(pending, input_nodes, layout, input_gen_fns):
        measurement = original(pending, input_nodes, layout, input_gen_fns)
        choices = pending.choices
        with measure._on_device(layout.device):
            inputs = compat.benchmark_inputs(list(choices), input_nodes, layout, input_gen_fns)
            launches = [compat.run_callable(choice, inputs)[0] for choice in choices]
            for launch in launches:
                launch()
            torch.cuda.synchronize()
            replayed, streamed = medians(GraphTimer(METHOD), launches), medians(Timer(METHOD), launches)
        print("  measured choices, us (DIODE's measurement / graph timer / stream timer):")
        for choice, ours, graph, stream in zip(choices, measurement.times_us, replayed, streamed):
            name = str(getattr(choice, "description", "") or getattr(choice, "name", type(choice).__name__))
            print(f"    {ours:8.2f} {graph:8.2f} {stream:8.2f}  {name[:90]}")
        return measurement

    return wrapped


def main() -> None:
    from torch._inductor import config
    from torch._inductor.utils import run_and_get_code

    config.force_disable_caches = True
    print(json.dumps(environment(torch.cuda.current_device()), default=str))
    measure.PendingMeasurement.finish = measure_and_compare(measure.PendingMeasurement.finish)
    side = torch.cuda.Stream()
    for spec in PROBLEMS:
        problem = GemmProblem(**spec)
        fn, args = e2e.make_case(problem)
        print("==", problem.describe(), flush=True)
        compiled = {}
        torch._dynamo.reset()
        for mode in ("no_autotune", "diode_fast", "diode_pick"):
            os.environ["DIODE_CACHE_DIR"] = tempfile.mkdtemp()
            figures, compiled[mode] = e2e.compile_mode(fn, args, e2e.MODES[mode])
            print(f"  {mode} compiled in {figures['compile_s']:.2f} s: {json.dumps((figures['diode'] or {}).get('decision'))}")
        launches = [lambda f=f: f(*args) for f in compiled.values()]
        streamed = medians(Timer(METHOD), launches)
        with torch.cuda.stream(side):
            replayed = medians(GraphTimer(METHOD), launches)
        for mode, stream, graph in zip(compiled, streamed, replayed):
            print(f"  compiled {mode:12s} stream timer {stream:8.2f} us  graph timer {graph:8.2f} us")
        torch._dynamo.reset()
        os.environ["DIODE_CACHE_DIR"] = tempfile.mkdtemp()
        _, codes = run_and_get_code(torch.compile(fn, options=e2e.MODES["diode_fast"]), *args)
        print("\n".join(line for code in codes for line in code.splitlines() if "extern_kernels." in line or ".run(" in line), flush=True)


if __name__ == "__main__":
    main()
