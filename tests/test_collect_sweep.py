"""The sweep's per-problem step on the CPU (Triton's interpreter runs the kernels): every
candidate is checked against a reference before it is timed, and failures are counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, torch
    from diode_backend.offline.collect import kernel
    from diode_backend.offline.collect.plan import PlannedProblem
    from diode_backend.offline.collect.sweep import time_problem
    from diode_backend.problem import GemmProblem, KernelConfig

    class FixedTimer:  # stands in for the CUDA-event timer: three runs per candidate
        def time(self, launches):
            for launch in launches:
                launch()
            return [[3.0, 1.0, 2.0] for _ in launches]

    class Zeros:  # a "kernel" that writes a wrong result
        def __getitem__(self, grid):
            return lambda a, b, c, *rest: c.zero_()

    problem = GemmProblem("addmm", 40, 48, 32, dtype="float32", b_layout="col", bias="row")
    good = [KernelConfig("triton", "triton::mm", 16, 16, 16, 2, 4, 8), KernelConfig("triton", "triton::mm", 32, 16, 32, 1, 2, 8)]
    wrong = KernelConfig("triton", "triton::mm", 16, 32, 16, 2, 4, 8)
    broken = KernelConfig("triton", "triton::mm", 32, 32, 32, 3, 4, 8)
    aten = [KernelConfig("aten", "aten::bias_addmm"), KernelConfig("aten", "aten::addmm")]
    item = PlannedProblem(problem, (*aten, *good, wrong, broken), "train", "test", "exhaustive")

    def load(key):
        if key == kernel.compile_key(problem, broken):
            raise RuntimeError("out of resources")
        if key == kernel.compile_key(problem, wrong):
            return Zeros()
        return kernel.mm_kernel

    phases = {}
    result, errors = time_problem(item, FixedTimer(), load, device="cpu", phases=phases)
    print(json.dumps({
        "phases": phases,
        "kept": [c.template + str(c.block_m) for c in result.configs],
        "times": list(result.times_us),
        "failed": result.failed,
        "errors": {c.describe(): e for c, e in errors.items()},
    }))
    """
)


def test_candidates_are_checked_then_timed_and_failures_counted(triton_interpreter):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["kept"] == ["aten::bias_addmm0", "aten::addmm0", "triton::mm16", "triton::mm32"]
    assert out["times"] == [2.0] * 4  # the median of each candidate's runs
    assert out["failed"] == 2
    messages = sorted(out["errors"].values())
    assert messages[0].startswith("RuntimeError: out of resources")
    assert messages[1].startswith("wrong result")
    # the host seconds of each step, kernel loads (the failed one included) apart from the checks
    assert set(out["phases"]) == {"operands", "load", "check", "timer"} and all(v > 0 for v in out["phases"].values())


def test_the_compile_feeder_records_every_kernel_and_stops_writing_once_told():
    """The feeder thread records each kernel's compile result, and writes nothing once the sweep
    has stopped it (it wrote into a shut-down manager at the end of the H100 runs)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from diode_backend.offline.collect import kernel
    from diode_backend.offline.collect.sweep import _compile_all
    from diode_backend.problem import GemmProblem, KernelConfig

    problem = GemmProblem("mm", 64, 64, 64, dtype="float32")
    configs = [KernelConfig("triton", "triton::mm", 16, 16, 16, 2, 4, 8), KernelConfig("triton", "triton::mm", 32, 32, 16, 2, 4, 8)]
    keys = {kernel.compile_key(problem, c): i for i, c in enumerate(configs)}
    for stopped, expected in ((False, {0, 1}), (True, set())):
        stop, ready, compiled = threading.Event(), {}, {"count": 0, "cpu": 0.0}
        if stopped:
            stop.set()
        with ThreadPoolExecutor(max_workers=1) as pool:
            _compile_all(pool, keys, ready, compiled, stop)
        assert set(ready) == expected
        assert compiled["count"] == len(expected)


def test_the_compile_feeder_publishes_each_kernel_as_it_finishes_not_behind_a_slower_one(monkeypatch):
    """The GPU worker loads published kernels while it waits: a kernel stuck behind a slower one
    submitted before it would be loaded in the timing instead."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from diode_backend.offline.collect import sweep

    second_published = threading.Event()

    class Ready(dict):  # the manager's dict the feeder writes to
        def __setitem__(self, index: int, error: str) -> None:
            super().__setitem__(index, error)
            if index == 1:
                second_published.set()

    ready = Ready()
    seen_while_first_compiles: list[dict] = []

    def compile_one(index: int, key: tuple) -> tuple[int, str, float]:
        if index == 0:  # the slow kernel: still compiling once the second one is published
            second_published.wait(10)
            seen_while_first_compiles.append(dict(ready))
        return index, "", 0.0

    monkeypatch.setattr(sweep, "_compile_one", compile_one)
    compiled = {"count": 0, "cpu": 0.0}
    with ThreadPoolExecutor(max_workers=2) as pool:
        sweep._compile_all(pool, {("slow",): 0, ("fast",): 1}, ready, compiled, threading.Event())
    assert seen_while_first_compiles == [{1: ""}]
    assert ready == {0: "", 1: ""} and compiled["count"] == 2


def test_waiting_for_kernels_gives_up_at_the_deadline():
    """On a cold Triton cache the GPU worker waited for compiles past --max-seconds until
    `timeout` killed the sweep (H100, 2026-11-23): the wait must end at the deadline."""
    import threading
    import time

    from diode_backend.offline.collect.sweep import _wait_for_kernels

    ready: dict[int, str] = {0: ""}
    started = time.time()
    assert not _wait_for_kernels({0, 1}, {}, ready, deadline=started + 0.3)
    assert 0.3 <= time.time() - started < 5
    threading.Timer(0.2, ready.update, args=({1: ""},)).start()  # the compile pool finishes kernel 1
    known: dict[int, str] = {}
    assert _wait_for_kernels({0, 1}, known, ready, deadline=time.time() + 30)
    assert known == {0: "", 1: ""}


def test_the_wait_for_compiles_does_other_work_meanwhile_and_sleeps_only_without_any():
    """A label round's GPU worker waits for compiles most of its time: it loads compiled kernels
    meanwhile, and sleeps only when there is nothing to load."""
    import time

    from diode_backend.offline.collect.sweep import _wait_for_kernels

    ready: dict[int, str] = {}
    calls: list[float] = []

    def meanwhile() -> bool:
        calls.append(time.time())
        if len(calls) == 3:
            ready[0] = ""  # the compile pool finishes the awaited kernel
        return len(calls) < 3  # work for the first two calls, then none

    assert _wait_for_kernels({0}, {}, ready, deadline=time.time() + 30, meanwhile=meanwhile)
    assert len(calls) == 3
    assert calls[1] - calls[0] < 0.04  # no sleep after a call that did work
    assert not _wait_for_kernels({1}, {}, ready, deadline=time.time() + 0.2, meanwhile=lambda: False)


def test_kernels_compiled_while_waiting_are_loaded_once_and_failures_kept_for_the_timing(monkeypatch):
    from diode_backend.offline.collect import kernel
    from diode_backend.offline.collect.sweep import _load, _load_compiled
    from diode_backend.problem import GemmProblem, KernelConfig

    monkeypatch.setenv("TRITON_INTERPRET", "1")  # kernels "compile" to Triton's interpreted function
    problem = GemmProblem("mm", 64, 64, 64, dtype="float32")
    configs = [KernelConfig("triton", "triton::mm", b, 16, 16, 2, 4, 8) for b in (16, 32, 64)]
    upcoming = [kernel.compile_key(problem, c) for c in configs]
    keys = {key: i for i, key in enumerate(upcoming)}
    known = {0: "", 2: "CompilationError: out of shared memory"}  # kernel 1 is still compiling
    kernels: dict = {}
    assert _load_compiled(upcoming, keys, kernels, known) == 1
    assert set(kernels) == {0} and kernels[0] is kernel.mm_kernel
    assert not _load_compiled(upcoming, keys, kernels, known)  # nothing new: the wait may sleep
    with pytest.raises(RuntimeError, match="out of shared memory"):
        _load(upcoming[2], keys, kernels, known)

    # a load that raises (here a dtype torch does not have) is tried once; the timing gets its
    # error for that candidate
    monkeypatch.delenv("TRITON_INTERPRET")
    bad = (upcoming[1][0], "not_a_dtype", *upcoming[1][2:])
    keys[bad] = 3
    known[3] = ""
    assert _load_compiled([bad], keys, kernels, known) == 1
    assert isinstance(kernels[3], Exception)
    assert not _load_compiled([bad], keys, kernels, known)
    with pytest.raises(AttributeError, match="not_a_dtype"):
        _load(bad, keys, kernels, known)


def test_operands_made_while_waiting_are_warmed_by_the_aten_candidates_and_timed_on():
    """While the GPU worker waits for a problem's kernels it makes the problem's operands and
    runs its ATen candidates once (a shape's first cuBLAS call chooses its algorithm); the
    timing then uses those operands."""
    import math

    import torch

    from diode_backend.offline.collect.plan import PlannedProblem
    from diode_backend.offline.collect.sweep import _prepare, time_problem
    from diode_backend.problem import GemmProblem, KernelConfig

    class RunOnce:  # stands in for the CUDA-event timer
        def time(self, launches):
            for launch in launches:
                launch()
            return [[1.0] for _ in launches]

    problem = GemmProblem("addmm", 40, 48, 32, dtype="float32", bias="row")
    configs = (KernelConfig("aten", "aten::bias_addmm"), KernelConfig("aten", "aten::nonsense"))
    item = PlannedProblem(problem, configs, "train", "test", "exhaustive")
    ops = _prepare(item, "cpu")
    torch.testing.assert_close(ops["out"], ops["ref"])  # the ATen candidate ran on them
    ops["out"].fill_(math.nan)
    result, errors = time_problem(item, RunOnce(), load=None, device="cpu", ops=ops)
    assert result.configs == configs[:1]
    assert list(errors.values()) == ["ValueError: unknown ATen candidate 'aten::nonsense'"]
    assert not ops["out"].isnan().any()  # timed on the operands it was given
    assert _prepare(item, "cuda:99") is None  # operands it cannot make are the timing's error
