"""DIODE's own measurement on a CUDA GPU (skipped without one). Run on the H100:

    python -m pytest -q -m gpu tests/test_measure_gpu.py
"""

from __future__ import annotations

import json
import math
import statistics
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch
from torch._inductor import config
from torch._inductor.select_algorithm import add_feedback_saver, clear_feedback_savers

import diode_backend
from diode_backend import measured
from diode_backend.inductor import measure
from diode_backend.inductor.measure import measure_choices
from diode_backend.timing import GraphTimer, Timer

pytestmark = pytest.mark.gpu

#: large enough that host launch time (tens of microseconds) is noise next to the kernels
LARGE = {
    "mm": (torch.mm, ((4096, 4096), (4096, 4096))),
    "addmm": (torch.addmm, ((4096,), (4096, 4096), (4096, 4096))),
    "bmm": (torch.bmm, ((8, 2048, 2048), (8, 2048, 2048))),
}


@pytest.mark.parametrize("op", list(LARGE))
def test_measured_times_agree_with_inductors_benchmarker_on_large_gemms(op):
    """Inductor's own autotuning (ATen and its DEFAULT Triton list) times each choice; inside
    its feedback call, with the same choice objects, DIODE times them again."""
    fn, shapes = LARGE[op]
    args = [torch.randn(*s, device="cuda", dtype=torch.float16) for s in shapes]
    seen = []

    def compare(timings, name, input_nodes, choices, *_):
        seen.append(({c: ms * 1000 for c, ms in timings.items()}, choices, measure_choices(choices, input_nodes, choices[0].layout, None)))

    add_feedback_saver(compare)
    try:
        with config.patch(max_autotune=True, max_autotune_gemm_backends="ATEN,TRITON", force_disable_caches=True):
            torch.compile(fn)(*args)
    finally:
        clear_feedback_savers()
    ((inductor_us, choices, ours),) = seen
    assert {type(c).__name__ for c in choices} >= {"ExternKernelCaller", "TritonTemplateCaller"}
    # a tile that needs more shared memory than the GPU has fails in both
    failed = {c for c, us in inductor_us.items() if math.isinf(us)}
    assert {c for c, us in zip(choices, ours.times_us) if math.isinf(us)} == failed and len(failed) < len(choices) // 2
    winner = choices[ours.winner]
    best = min(inductor_us.values())
    assert inductor_us[winner] <= 1.05 * best, (winner, inductor_us[winner], best)
    for choice, ours_us in zip(choices, ours.times_us):
        if inductor_us[choice] < 1.5 * best:  # the contenders (the others get one timed run)
            # Inductor reports the minimum of ~100 ms of runs, DIODE the median of its runs
            assert 0.95 * inductor_us[choice] <= ours_us <= 1.15 * inductor_us[choice], (choice, ours_us, inductor_us[choice])


def compile_unsure_mm(m: int, k: int, n: int, dtype: torch.dtype) -> None:
    """Compile an mm cold with DIODE alone, never sure enough to keep a pick (so it measures),
    and check its result."""
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    with config.patch(max_autotune=True, max_autotune_gemm_backends="DIODE", force_disable_caches=True,
                      fast_autotune=True, diode_confidence_threshold=1.0):  # fmt: skip
        out = torch.compile(torch.mm)(a, b)
    torch.testing.assert_close(out, a @ b, atol=5e-2, rtol=2e-2)


def test_unsure_diode_measures_and_inductor_benchmarks_nothing(benchmarked):
    compile_unsure_mm(2048, 4096, 1024, torch.bfloat16)
    stats = diode_backend.stats()
    assert benchmarked == [] and stats["counters"]["measured_decisions"] == 1
    assert stats["fallbacks"] == {"low_confidence": 1} and stats["errors"] == {}
    (decision,) = measured.stored_decisions()
    assert {c.kind for c in decision.configs} >= {"aten", "triton"}  # the best of each, always


@pytest.mark.parametrize("bound", [2.0, 1e9])
def test_the_measured_set_leaves_out_tiles_estimated_to_compile_too_long(benchmarked, bound):
    """A large float32 mm allowing TF32, where the model ranks large tiles (estimated above 2 s)
    among the fastest: under the bound none is measured; without it some are."""
    from diode_backend.compile_estimate import estimates

    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        with config.patch(diode_max_compile_s=bound, diode_measure_ratio=10.0, diode_top_k=20):
            compile_unsure_mm(2048, 2048, 2048, torch.float32)
    finally:
        torch.set_float32_matmul_precision(precision)
    (decision,) = measured.stored_decisions()
    triton = [c for c in decision.configs if c.kind == "triton"]
    seconds = estimates(decision.problem, triton, decision.hardware)
    assert decision.problem.allow_tf32 and seconds and None not in seconds, decision
    assert (max(seconds) <= 2.0) == (bound == 2.0), (bound, seconds)


def test_a_graphs_gemms_compile_together_and_are_timed_after_lowering(benchmarked, monkeypatch):
    """Under ``benchmark_epilogue_fusion`` (Inductor's default) DIODE starts every GEMM's compiles
    at lowering and times them when the scheduler asks, as Inductor defers its own benchmarking;
    the epilogue (a ReLU) may fuse into a Triton winner."""
    from diode_backend.inductor import benchmarked_choices

    events: list[str] = []
    start, finish = measure.start_measurement, measure.PendingMeasurement.finish
    monkeypatch.setattr(benchmarked_choices, "start_measurement", lambda choices: events.append("start") or start(choices))
    monkeypatch.setattr(measure.PendingMeasurement, "finish", lambda self, *call: events.append("finish") or finish(self, *call))
    # scaled so that every product is about 1 in size, where fp16 resolves it finely
    a = torch.randn(1000, 3000, device="cuda", dtype=torch.float16)
    b = torch.randn(3000, 700, device="cuda", dtype=torch.float16) / 3000**0.5
    c = torch.randn(700, 500, device="cuda", dtype=torch.float16) / 700**0.5

    def two_mms(a, b, c):
        return torch.relu(torch.mm(torch.mm(a, b), c))

    with config.patch(max_autotune=True, max_autotune_gemm_backends="DIODE", force_disable_caches=True,
                      fast_autotune=True, diode_confidence_threshold=1.0):  # fmt: skip
        out = torch.compile(two_mms)(a, b, c)
    torch.testing.assert_close(out, two_mms(a, b, c), atol=5e-2, rtol=2e-2)
    assert events == ["start", "start", "finish", "finish"], events
    stats = diode_backend.stats()
    assert stats["counters"]["measured_decisions"] == stats["counters"]["deferred_measurements"] == 2, stats
    assert benchmarked == [] and stats["errors"] == {}, (benchmarked, stats)


_COMPILE = textwrap.dedent(
    """
    import json, re, sys, torch, diode_backend
    from torch._inductor.utils import run_and_get_code
    from diode_backend import measured
    a = torch.randn(2048, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16)
    fn = torch.compile(torch.mm, options={"max_autotune": True, "max_autotune_gemm_backends": "DIODE",
                                          "fast_autotune": True, "diode_confidence_threshold": float(sys.argv[1])})
    _, (code,) = run_and_get_code(fn, a, b)
    kernel = sorted(set(re.findall(r"extern_kernels\\.\\w+\\(|BLOCK_[MNK] : tl.constexpr = \\d+", code)))
    print(json.dumps({"stats": diode_backend.get_prediction_stats(), "kernel": kernel,
                      "winners": [d.winner.describe() for d in measured.stored_decisions()]}))
    """
)


def _compile_in_new_process(tmp_path, run: str, threshold: float, script: str = _COMPILE) -> dict:
    """``script`` (``_COMPILE``) in a fresh process: DIODE's cache shared across runs, Inductor's
    cold in each."""
    env = {**os.environ, "DIODE_CACHE_DIR": str(tmp_path / "diode"), "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / run)}
    done = subprocess.run([sys.executable, "-c", script, str(threshold)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_triton_candidates_compile_in_inductors_workers_once_they_are_ready(benchmarked, monkeypatch):
    from torch._inductor.async_compile import AsyncCompile

    from diode_backend.inductor import compat

    deadline = time.monotonic() + 120
    while not AsyncCompile.use_process_pool():
        assert time.monotonic() < deadline, "Inductor's compile workers did not start in 120 s"
        time.sleep(0.2)
    started = []
    real = compat.compile_in_workers

    def spy(choice):
        future = real(choice)
        started.append((type(choice).__name__, future is not None))
        return future

    monkeypatch.setattr(compat, "compile_in_workers", spy)
    compile_unsure_mm(1000, 3000, 700, torch.float16)
    stats = diode_backend.stats()
    assert benchmarked == [] and stats["counters"].get("measured_decisions") == 1, (benchmarked, stats)
    assert {("TritonTemplateCaller", True), ("ExternKernelCaller", False)} <= set(started), started
    assert ("TritonTemplateCaller", False) not in started, started
    measured_us = stats["recent_decisions"][-1]["measured_us"]
    failed = sum(us is None for us in measured_us.values())  # a tile that cannot run here fails in the workers
    assert failed == stats["counters"].get("measure_failed_candidates", 0) < len(measured_us) // 2, measured_us


def test_a_second_process_compiles_the_measured_kernel_without_measuring(tmp_path):
    first, second = (_compile_in_new_process(tmp_path, run, threshold=1.0) for run in "ab")
    assert first["stats"]["measured_decisions"] == 1 and first["stats"]["measured_decision_hits"] == 0
    assert second["stats"]["measured_decisions"] == 0 and second["stats"]["measured_decision_hits"] == 1
    assert first["kernel"] == second["kernel"] and first["kernel"]
    assert first["winners"] == second["winners"]


def test_a_second_process_takes_the_confident_pick_without_scoring(tmp_path):
    first, second = (_compile_in_new_process(tmp_path, run, threshold=0.0) for run in "ab")
    assert first["stats"]["predicted_decisions"] == 1 and first["stats"]["predicted_decision_hits"] == 0
    assert second["stats"]["predicted_decisions"] == 0 and second["stats"]["predicted_decision_hits"] == 1
    assert first["stats"]["measured_decisions"] == second["stats"]["measured_decisions"] == 0
    assert first["kernel"] == second["kernel"] and first["kernel"]


#: K >= decompose_k_threshold (32) * max(M, N): Inductor offers decompose-k (subgraph choices,
#: one per split of K) besides ATen, and no Triton mm (K >= 64 * max(M, N)).
_DECOMPOSE_K = textwrap.dedent(
    """
    import json, sys, torch, diode_backend
    from torch._inductor.select_algorithm import add_feedback_saver
    from diode_backend import measured
    benchmarked = []
    add_feedback_saver(lambda timings, *args: benchmarked.append(len(timings)))
    a = torch.randn(16, 8192, device="cuda", dtype=torch.float16)
    b = torch.randn(8192, 16, device="cuda", dtype=torch.float16)
    fn = torch.compile(torch.mm, options={"max_autotune": True, "max_autotune_gemm_backends": "DIODE",
                                          "fast_autotune": True, "diode_confidence_threshold": float(sys.argv[1])})
    # outputs ~90 in magnitude: fp16 spaces them 0.06 apart, a lost split of K errs by tens
    torch.testing.assert_close(fn(a, b).float(), a.float() @ b.float(), atol=0.25, rtol=1e-2)
    stats = diode_backend.stats()
    print(json.dumps({"counters": stats["counters"], "fallbacks": stats["fallbacks"], "errors": stats["errors"],
                      "benchmarked": benchmarked,
                      "measured": [[(c.kind, t) for c, t in zip(d.configs, d.times_us)] for d in measured.stored_decisions()]}))
    """
)


def test_diode_measures_decompose_k_and_a_second_process_reuses_the_decision(tmp_path):
    """The shipped model scores the ATen call alone (its manifest's kinds are aten and triton):
    decompose-k's splits are unscored candidates, measured beside it, never an op-wide fallback."""
    first, second = (_compile_in_new_process(tmp_path, run, 1.0, script=_DECOMPOSE_K) for run in "ab")
    # DIODE timed the set itself, decompose-k's subgraph choices among them: no 'not_measurable',
    # no 'no_scored_candidates'
    assert first["fallbacks"] == {"low_confidence": 1} and first["errors"] == {} and first["benchmarked"] == []
    assert first["counters"]["measured_decisions"] == 1 and first["counters"].get("measured_decision_hits", 0) == 0
    (decision,) = first["measured"]
    decompose_k = [t for kind, t in decision if kind == "decompose_k"]
    assert decompose_k and all(math.isfinite(t) for t in decompose_k), decision
    assert "aten" in [kind for kind, _ in decision], decision
    assert second["counters"]["measured_decision_hits"] == 1 and second["counters"].get("measured_decisions", 0) == 0
    assert second["fallbacks"] == {} and second["errors"] == {} and second["benchmarked"] == []


_NEW_PRECISION_API = textwrap.dedent(
    """
    import sys, torch
    import torch._inductor.config
    torch._inductor.config.force_disable_caches = True  # not a torch.compile option on torch 2.11
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    a = torch.randn(1024, 2048, device="cuda")
    b = torch.randn(2048, 512, device="cuda")
    options = {"max_autotune": True, "max_autotune_gemm_backends": sys.argv[1],
               "fast_autotune": True, "diode_confidence_threshold": 1.0}
    try:
        out = torch.compile(torch.mm, options=options)(a, b)
        torch.testing.assert_close(out, a @ b, atol=5e-2, rtol=5e-3)  # TF32 precision
        print("compiled")
    except Exception as err:
        print("raised", type(err).__name__, str(err).splitlines()[0][:200])
    """
)


def test_fp32_with_the_new_precision_api_compiles_under_diode():
    """Inductor's autotuner asks ``torch.get_float32_matmul_precision()`` (precompile key, timing
    cache), which refuses once the new API set a precision; DIODE hands it one choice, or the
    choices it measures itself with Inductor's precompilation off."""
    def run(backends):
        done = subprocess.run([sys.executable, "-c", _NEW_PRECISION_API, backends], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    assert run("DIODE") == "compiled"
    assert run("ATEN,TRITON").startswith("raised")  # Inductor's own max-autotune


@pytest.mark.parametrize(
    "cudagraphs, several, timer", [(True, False, GraphTimer), (True, True, GraphTimer), (False, False, GraphTimer), (False, True, Timer)]
)
def test_choices_of_several_kernels_are_replayed_only_for_a_graph_that_runs_as_cuda_graphs(cudagraphs, several, timer):
    """A choice of several kernels (decompose-k) reads faster replayed than launched one by one,
    so it is timed as the compiled graph will run; a choice of one kernel is always replayed,
    where the host's pace cannot reach the times (docs/decisions.md)."""
    with config.patch({"triton.cudagraphs": cudagraphs}):
        chosen = measure._timer(torch.device("cuda"), several)
    assert type(chosen) is timer
    with measure._on_device(torch.device("cuda")):
        (runs,) = chosen.time([torch.empty(1 << 20, device="cuda").zero_])
    assert len(runs) > measure.METHOD.min_reps and 0 < statistics.median(runs) < 1000
