"""DIODE measures the choices it kept itself, so Inductor compiles one and benchmarks nothing.

Inductor's own benchmarker times each choice alone, host launch time included, and so prefers
Triton kernels where cuBLAS is faster. Here the kept choices are precompiled in parallel (Triton
templates in Inductor's compile workers, then each choice's ``precompile``, as Inductor's own
precompilation does), run once on the example tensors Inductor would benchmark them with, then
timed. The compiles start at once (:func:`start_measurement`) and the rest waits for
:meth:`PendingMeasurement.finish`, so a caller can start a graph's GEMMs before timing any of
them. The timer is :mod:`diode_backend.timing`'s: on a CUDA device by
CUDA-graph replay of L2-flushed runs, on the CPU by the host's clock; median of round-robin runs.
A choice of several kernels (decompose-k: a batched product, then a reduction) reads faster
replayed than it runs launched one by one, because a replayed graph hides the GPU's cost of each
further launch; so unless the compiled graph will run as CUDA graphs (``mode="max-autotune"``),
such choices are timed by the guarded event timer instead (launched one by one behind a sleep
kernel), in a pass of their own. Choices of one kernel are always replayed: the two timers agree
on them on an idle host, but inside a compile the event timer's guard, sized by the host time of
a launch before the pass, can fall short of a host slowed by the compile, and then counts the
GPU's wait for a launch, most often an ATen call's (docs/decisions.md). A choice that fails to
compile or run is dropped.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import math
import os
import statistics
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import torch

from ..timing import GraphTimer, HostTimer, Timer, TimingMethod
from . import compat


class NotMeasurable(Exception):
    """A choice of a kind DIODE does not know how to launch (CUTLASS, CPP, ...)."""


@dataclass(frozen=True)
class Measurement:
    """``times_us[i]``: choice ``i``'s median time in microseconds, ``inf`` when it failed to
    compile or run."""

    times_us: tuple[float, ...]

    @property
    def failed(self) -> int:
        return sum(math.isinf(t) for t in self.times_us)

    @property
    def winner(self) -> int | None:
        """The fastest choice's index; None when every one failed."""
        finite = [i for i, t in enumerate(self.times_us) if math.isfinite(t)]
        return min(finite, key=self.times_us.__getitem__) if finite else None


def measure_choices(choices: Sequence[Any], input_nodes: Any, layout: Any, input_gen_fns: Any) -> Measurement:
    """Time ``choices`` of one autotuner call (its ``input_nodes``, ``layout`` and
    ``input_gen_fns``) on the call's device, now.

    :raises NotMeasurable: when a choice is of a kind this cannot launch (before any work).
    """
    return start_measurement(choices).finish(input_nodes, layout, input_gen_fns)


def start_measurement(choices: Sequence[Any]) -> PendingMeasurement:
    """Start compiling ``choices`` in Inductor's compile workers and return at once: the
    measurement :meth:`PendingMeasurement.finish` completes, so that the compiles of several
    GEMMs overlap.

    :raises NotMeasurable: when a choice is of a kind this cannot launch (before any work).
    """
    unlaunchable = sorted({type(c).__name__ for c in choices if not compat.can_launch(c)})
    if unlaunchable:
        raise NotMeasurable(", ".join(unlaunchable))
    in_workers = {i: future for i, choice in enumerate(choices) if (future := compat.compile_in_workers(choice)) is not None}
    return PendingMeasurement(tuple(choices), in_workers)


@dataclass(frozen=True)
class PendingMeasurement:
    """Choices whose compiles in the workers (``in_workers``: choice index -> future) have
    started."""

    choices: tuple[Any, ...]
    in_workers: dict[int, concurrent.futures.Future]

    def finish(self, input_nodes: Any, layout: Any, input_gen_fns: Any) -> Measurement:
        """Wait for the compiles, then run and time every choice that compiled on the example
        tensors of ``input_nodes``, ``layout`` and ``input_gen_fns``."""
        choices = self.choices
        times = [math.inf] * len(choices)
        compiled = _precompile(choices, self.in_workers)
        device = layout.device
        with _on_device(device):
            autotune_args = compat.benchmark_inputs(list(choices), input_nodes, layout, input_gen_fns)
            launches: dict[int, Any] = {}
            releases = []
            try:
                for i in compiled:
                    try:
                        run, release = compat.run_callable(choices[i], autotune_args)
                        releases.append(release)
                        run()  # untimed: loads the kernel, and a choice that cannot run fails here
                        _synchronize(device)
                        launches[i] = run
                    except Exception:
                        _synchronize(device)
                for several in (False, True):
                    members = [i for i in launches if compat.is_subgraph(choices[i]) == several]
                    if members:
                        samples = _timer(device, several).time([launches[i] for i in members])
                        for i, runs in zip(members, samples):
                            times[i] = statistics.median(runs)
            finally:
                for release in releases:
                    release()
        return Measurement(tuple(times))


def _precompile(choices: Sequence[Any], in_workers: dict[int, concurrent.futures.Future]) -> list[int]:
    """Compile every choice; the indices of those that compiled. Triton templates were sent to
    Inductor's compile workers where they were ready (``in_workers``, :func:`start_measurement`),
    as Inductor's own precompilation does, which leaves the workers warm for the graph's own
    kernels (the winner among them, compiled again for the graph; docs/decisions.md); then every
    choice's own ``precompile`` runs in parallel threads, which for those loads the kernel from
    Triton's cache. A choice whose compile in the workers failed or did not end within
    Inductor's ``precompilation_timeout_seconds`` is not compiled again."""
    from torch._inductor import config

    done, _ = concurrent.futures.wait(in_workers.values(), timeout=getattr(config, "precompilation_timeout_seconds", None))
    failed = {i for i, future in in_workers.items() if future not in done or future.exception() is not None}

    def compile_one(choice: Any) -> None:
        precompile = getattr(choice, "precompile", None)
        if precompile is not None:
            precompile()

    left = [i for i in range(len(choices)) if i not in failed]
    with ThreadPoolExecutor(max_workers=max(1, min(len(left), os.cpu_count() or 1))) as pool:
        futures = {i: pool.submit(compile_one, choices[i]) for i in left}
    return [i for i, future in futures.items() if future.exception() is None]


@contextlib.contextmanager
def _on_device(device: torch.device) -> Iterator[None]:
    """On a CUDA device: a side stream, which CUDA-graph capture needs (and Triton launches bind
    at creation); it waits for the work queued before."""
    if device.type != "cuda":
        yield
        return
    with torch.cuda.device(device):
        stream = _side_stream(torch.cuda.current_device())
        stream.wait_stream(torch.cuda.current_stream())
        try:
            with torch.cuda.stream(stream):
                yield
        finally:  # what follows on the compile's stream sees the measurement's work done
            torch.cuda.current_stream().wait_stream(stream)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


#: DIODE measures the few candidates that can win, so each gets its full runs: under the
#: collector's slow rule, one estimate run caught by a hiccup left a contender with a single
#: timed run, and that run decided the pick.
METHOD = TimingMethod(slow_ratio=0.0)


def _timer(device: torch.device, several_kernels: bool) -> GraphTimer | Timer | HostTimer:
    """The timer for choices of one kernel, or (``several_kernels``) of several, on ``device``."""
    if device.type == "cuda":
        index = torch.cuda.current_device()
        replayed = not several_kernels or compat.runs_as_cuda_graph()
        return _graph_timer(index) if replayed else _stream_timer(index)
    return HostTimer(replace(METHOD, replay="host", flush_l2=False))


@functools.cache
def _side_stream(index: int) -> torch.cuda.Stream:
    return torch.cuda.Stream(index)


@functools.cache
def _graph_timer(index: int) -> GraphTimer:
    """One per device (``index``; the timer works on the current device) for the process: after
    a failed capture it keeps to the event timer (torch's generator may be left in capture mode),
    and its calibration is done once."""
    return GraphTimer(METHOD)


@functools.cache
def _stream_timer(index: int) -> Timer:
    """One per device for the process, so its flush buffer and host-time calibration are made once."""
    return Timer(replace(METHOD, replay="stream"))
