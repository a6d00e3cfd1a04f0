"""How the sweep times a kernel launch on the GPU (all times in microseconds).

Inductor's own benchmarker (``InductorBenchmarker.benchmark_gpu``) is the reference, so its
choices are kept: the L2 cache is flushed before every timed run (a buffer the size of L2 is
zeroed), and each run is bracketed by a pair of CUDA events. What differs serves throughput:
every candidate of a problem is timed in one pass without synchronizing in between:

1. one estimate run of each candidate (the caller has already run each once, untimed, to load
   the kernel and check its result);
2. ``round(budget_us / estimate)`` more runs, clamped to ``[min_reps, max_reps]``, issued round
   robin over the candidates so that clock or thermal drift spreads over all of them;
3. one synchronization; a candidate's time is the median of all its runs.

Events only time a kernel correctly while the GPU has queued work: if the queue runs dry
between the start event and the launch, the gap is counted. A launch's host time (measured on
its warm-up run) can exceed the flush kernel's GPU time, especially for ATen calls and on a host
busy compiling (seen on the H100: cuBLAS times of 50 to 120 us for 6 us problems). So each timed
run is issued as ``flush, sleep, start event, launch, end event``, the sleep kernel
(``torch.cuda._sleep``) lasting twice the launch's host time less the flush time: the launch is
queued before the GPU reaches the start event. Inductor's benchmarker has no such guard.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class TimingMethod:
    """The timing parameters, recorded in every shard's ``environment.timing``."""

    min_reps: int = 3
    max_reps: int = 10
    budget_us: float = 1500.0
    flush_l2: bool = True
    max_guard_us: float = 1000.0

    def describe(self) -> dict[str, Any]:
        return {
            "method": "cuda events around each run, L2 flushed (zeroed buffer of L2 size) before each run, "
            "then a sleep kernel covering the launch's host time, one untimed warm-up run per candidate, "
            "one estimate run, then round(budget_us/estimate) runs clamped to [min_reps, max_reps] "
            "round-robin over the problem's candidates; median of all timed runs; fresh random normal "
            "inputs per problem; results checked against a float32 reference",
            **asdict(self),
        }


class Timer:
    """Times many launch functions on the current CUDA device (see the module docstring)."""

    def __init__(self, method: TimingMethod = TimingMethod()) -> None:
        self.method = method
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        # as Inductor: int32 so that zero_() is one plain fill kernel
        self._flush = torch.empty(max(props.L2_cache_size, 1 << 20) // 4, dtype=torch.int, device="cuda")
        self._cycles_per_us = getattr(props, "clock_rate", 1_500_000) / 1000  # kHz -> cycles per us
        self._events: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        self.flush_us = self._time_flush() if method.flush_l2 else 0.0
        self.host_us: list[float] = []  # each candidate's launch host time, of the last problem

    def time(self, launches: Sequence[Callable[[], Any]]) -> list[list[float]]:
        """The timed runs of each launch, in microseconds (estimate run first)."""
        if not launches:
            return []
        was_enabled = gc.isenabled()
        gc.disable()  # a collection between the start event and the launch would be timed
        try:
            self.host_us = [self._host_time(launch) for launch in launches]
            guards = [self._guard_cycles(host) for host in self.host_us]
            estimates = self._run([(i, launches[i], guards[i]) for i in range(len(launches))])
            reps = [self._reps(samples[0]) for samples in estimates]
            schedule = [
                (i, launches[i], guards[i]) for r in range(max(reps)) for i in range(len(launches)) if reps[i] > r
            ]
            timed = self._run(schedule, len(launches))
        finally:
            if was_enabled:
                gc.enable()
        return [est + more for est, more in zip(estimates, timed)]

    @staticmethod
    def summarize(samples: Sequence[float]) -> float:
        """The time recorded for a candidate: the median of its runs."""
        return statistics.median(samples)

    def _reps(self, estimate_us: float) -> int:
        m = self.method
        wanted = round(m.budget_us / max(estimate_us, 1e-3))
        return max(m.min_reps, min(m.max_reps, wanted))

    def _host_time(self, launch: Callable[[], Any]) -> float:
        """Host microseconds to issue ``launch`` (the better of two tries; runs it twice)."""
        best = math.inf
        for _ in range(2):
            started = time.perf_counter()
            launch()
            best = min(best, (time.perf_counter() - started) * 1e6)
        return best

    def _guard_cycles(self, host_us: float) -> int:
        sleep_us = min(2 * host_us - self.flush_us, self.method.max_guard_us)
        return int(sleep_us * self._cycles_per_us) if sleep_us > 0 else 0

    def _time_flush(self) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for _ in range(5):
            start.record()
            self._flush.zero_()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1000.0)
        return statistics.median(samples)

    def _run(self, schedule: Sequence[tuple[int, Callable[[], Any], int]], count: int | None = None) -> list[list[float]]:
        count = len(schedule) if count is None else count
        while len(self._events) < len(schedule):
            self._events.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
        for j, (_, launch, guard) in enumerate(schedule):
            start, end = self._events[j]
            if self.method.flush_l2:
                self._flush.zero_()
            if guard:
                torch.cuda._sleep(guard)
            start.record()
            launch()
            end.record()
        torch.cuda.synchronize()
        samples: list[list[float]] = [[] for _ in range(count)]
        for j, (i, _, _) in enumerate(schedule):
            start, end = self._events[j]
            samples[i].append(start.elapsed_time(end) * 1000.0)
        return samples
