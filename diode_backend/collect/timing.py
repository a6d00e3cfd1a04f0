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
between the start event and the launch, the gap is counted. Before each run the timer checks
whether the GPU has finished the run issued two before; if so, it queues a short sleep kernel so
that the host gets ahead again. The flush kernel itself (tens of microseconds) covers the host's
time to issue the start event and the launch.
"""

from __future__ import annotations

import gc
import statistics
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
    backlog_sleep_us: float = 100.0

    def describe(self) -> dict[str, Any]:
        return {
            "method": "cuda events around each run, L2 flushed (zeroed buffer of L2 size) before each run, "
            "one untimed warm-up run per candidate, one estimate run, then round(budget_us/estimate) runs "
            "clamped to [min_reps, max_reps] round-robin over the problem's candidates; median of all timed "
            "runs; fresh random normal inputs per problem; results checked against a float32 reference",
            **asdict(self),
        }


class Timer:
    """Times many launch functions on the current CUDA device (see the module docstring)."""

    def __init__(self, method: TimingMethod = TimingMethod()) -> None:
        self.method = method
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        # as Inductor: int32 so that zero_() is one plain fill kernel
        self._flush = torch.empty(max(props.L2_cache_size, 1 << 20) // 4, dtype=torch.int, device="cuda")
        self._sleep_cycles = int(method.backlog_sleep_us * getattr(props, "clock_rate", 1_500_000) / 1000)
        self._events: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        self.sleeps = 0

    def time(self, launches: Sequence[Callable[[], Any]]) -> list[list[float]]:
        """The timed runs of each launch, in microseconds (estimate run first)."""
        if not launches:
            return []
        was_enabled = gc.isenabled()
        gc.disable()  # a collection between the start event and the launch would be timed
        try:
            estimates = self._run([(i, launch) for i, launch in enumerate(launches)])
            reps = [self._reps(samples[0]) for samples in estimates]
            schedule = [
                (i, launches[i]) for r in range(max(reps)) for i in range(len(launches)) if reps[i] > r
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

    def _run(self, schedule: Sequence[tuple[int, Callable[[], Any]]], count: int | None = None) -> list[list[float]]:
        count = len(schedule) if count is None else count
        while len(self._events) < len(schedule):
            self._events.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
        for j, (_, launch) in enumerate(schedule):
            if j >= 2 and self._events[j - 2][1].query():
                torch.cuda._sleep(self._sleep_cycles)  # the GPU caught up: let the host get ahead
                self.sleeps += 1
            start, end = self._events[j]
            if self.method.flush_l2:
                self._flush.zero_()
            start.record()
            launch()
            end.record()
        torch.cuda.synchronize()
        samples: list[list[float]] = [[] for _ in range(count)]
        for j, (i, _) in enumerate(schedule):
            start, end = self._events[j]
            samples[i].append(start.elapsed_time(end) * 1000.0)
        return samples
