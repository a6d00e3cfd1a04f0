"""How DIODE times kernel launches (all times in microseconds): the sweep of ``diode collect``,
and the runtime when it measures its candidates itself.

Inductor's own benchmarker (``InductorBenchmarker.benchmark_gpu``) is the reference, so its
choices are kept: the L2 cache is flushed before every timed run (a buffer the size of L2 is
zeroed), and each run is bracketed by a pair of CUDA events. What differs serves throughput:
every candidate of a problem is timed in one pass without synchronizing in between:

1. one estimate run of each candidate (the caller has already run each once, untimed, to load
   the kernel and check its result);
2. ``round(budget_us / estimate)`` more runs, clamped to ``[min_reps, max_reps]``, issued round
   robin over the candidates so that clock or thermal drift spreads over all of them; a
   candidate whose estimate is over ``slow_ratio`` times the problem's fastest estimate gets
   ``slow_reps`` runs instead: it is far from a pick, its time matters to a model only within
   the noise of two runs, and long candidates cost most of a problem's GPU time;
3. one synchronization; a candidate's time is the median of all its runs.

Events only time a kernel correctly while the GPU has queued work: if the queue runs dry
between the start event and the launch, the gap is counted, and the host takes longer to issue a
timed run than the flush keeps the GPU busy (docs/decisions.md has the measurements). So each
timed run is issued as ``flush, sleep, start event, launch, end event`` with the sleep kernel
(``torch.cuda._sleep``) keeping the GPU behind the host:

- the first run of a pass sleeps ``lead_us`` or twice the host time of a whole run (the
  launch's own, measured per candidate, plus the rest of the loop, measured per pass), whichever
  is longer: the GPU starts a pass that far behind the host;
- every later run sleeps so that the GPU spends ``guard_margin`` times the run's host time on it
  (flush, sleep and the kernel's estimated time together), so the lead only grows during a pass
  and every launch is queued before the GPU reaches its start event.

The guard rests on a launch's host time measured before the pass, which a slower moment of the
host can exceed. So right after each launch is issued, the timer asks whether the GPU has
already passed the run's start event: if it has, the GPU may have waited for the launch between
its events, and the run is *starved*. A starved run is left out of the launch's samples (unless
every run of the launch was), counted in ``Timer.starved``, and the host time that guards the
launch's later runs (of this call of ``time``) is raised by :data:`STARVED_BACKOFF`. Whether a
run is starved depends on the host and on the work queued before its start event, not on the
kernel it times, so leaving it out does not bias the median.

:class:`GraphTimer` takes the host out of the loop instead: each round of runs (a flush and one
run of every candidate, each between two events) is captured once as a CUDA graph and replayed,
so the GPU runs the round back to back whatever the host's pace, and needs no sleep. Its
schedule is the same (an estimate round, then round-robin rounds, each candidate dropping out
once it has its ``reps``). Once a problem's launches cannot be captured, that problem and every
later one are timed by :class:`Timer`.

One module because the three timers (host clock, CUDA events, CUDA graph) carry out one method,
:class:`TimingMethod`, whose schedule each must keep in step with the others.
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


#: the size of the fill between the L2 flush and a timed run (``TimingMethod.settle_fill``)
SETTLE_BYTES = 1 << 20
#: after a starved run, the factor on the host time that guards the launch's later runs
STARVED_BACKOFF = 1.5


@dataclass(frozen=True)
class TimingMethod:
    """The timing parameters, recorded in every shard's ``environment.timing``."""

    min_reps: int = 3
    max_reps: int = 10
    budget_us: float = 1500.0
    flush_l2: bool = True
    #: after each flush, a small fill (:data:`SETTLE_BYTES`) before the start event: the run
    #: right after a bare flush is timed faster or slower by whether its place in the pass is odd
    #: or even, so candidates side by side were ranked by their places (docs/decisions.md)
    settle_fill: bool = True
    guard_margin: float = 1.25
    lead_us: float = 200.0
    max_guard_us: float = 1000.0
    #: "graph": rounds replayed from CUDA graphs (:class:`GraphTimer`); "stream": launched one
    #: by one behind a sleep kernel (:class:`Timer`); "host": the host's clock, for timing on
    #: the CPU through Triton's interpreter (:class:`HostTimer`, tests)
    replay: str = "graph"
    #: a candidate estimated slower than this times the problem's fastest gets ``slow_reps``
    #: runs (0: no such rule; the benchmarks that time a few functions accurately use 0)
    slow_ratio: float = 2.0
    slow_reps: int = 1

    def reps(self, estimates_us: Sequence[float]) -> list[int]:
        """How many runs each candidate gets after its estimate run."""
        fastest = min(estimates_us, default=0.0)
        counts = []
        for estimate in estimates_us:
            if self.slow_ratio and estimate > self.slow_ratio * fastest:
                counts.append(self.slow_reps)
            else:
                counts.append(max(self.min_reps, min(self.max_reps, round(self.budget_us / max(estimate, 1e-3)))))
        return counts

    def describe(self) -> dict[str, Any]:
        settle = f", then a {SETTLE_BYTES >> 20} MiB buffer zeroed" if self.settle_fill else ""
        events = f"cuda events around each run, L2 flushed (zeroed buffer of L2 size{settle}) before each run"
        clock = {
            "graph": f"{events}, each round of runs captured once as a CUDA graph and replayed (launches that cannot be "
            "captured: as 'stream')",
            "stream": f"{events}, a sleep kernel keeping the GPU behind the host (a lead at the start of each pass, then "
            "guard_margin times each run's host time of GPU work per run); a run whose start event the GPU had passed "
            "when its launch returned (starved) is left out unless all of the launch's were, and raises the host "
            f"time that guards the launch's later runs by {STARVED_BACKOFF}x",
            "host": "the host's clock around each run (on the CPU), nothing flushed",
        }[self.replay]
        return {
            "method": f"{clock}, one untimed warm-up run per candidate, "
            "one estimate run, then round(budget_us/estimate) runs clamped to [min_reps, max_reps] "
            "(slow_reps runs where the estimate exceeds slow_ratio times the problem's fastest, if "
            "slow_ratio) round-robin over the problem's candidates; median of all timed runs; fresh random normal "
            "inputs per problem; results checked against a float32 reference",
            **asdict(self),
        }


def make_timer(method: TimingMethod = TimingMethod()) -> Timer:
    """The timer ``method.replay`` names, on the current CUDA device (``host``: on the CPU)."""
    if method.replay == "graph":
        return GraphTimer(method)
    if method.replay == "stream":
        return Timer(method)
    if method.replay == "host":
        return HostTimer(method)
    raise ValueError(f"TimingMethod.replay must be 'graph', 'stream' or 'host', not {method.replay!r}")


class HostTimer:
    """Times launches by the host's clock, on the CPU (CPU kernels; Triton's interpreter in
    tests); the schedule of :class:`Timer` (an estimate run, then ``reps`` round robin), no
    flush, no guard. Same interface as :class:`Timer`."""

    def __init__(self, method: TimingMethod = TimingMethod()) -> None:
        self.method = method
        self.host_us: list[float] = []  # each candidate's estimate run, of the last problem
        self.starved: list[int] = []  # as Timer's: none here, the host's clock waits for no queue

    def time(self, launches: Sequence[Callable[[], Any]]) -> list[list[float]]:
        """The timed runs of each launch, in microseconds (estimate run first)."""
        self.starved = [0] * len(launches)
        samples = [[self._once(launch)] for launch in launches]
        self.host_us = [runs[0] for runs in samples]
        reps = self.method.reps(self.host_us)
        for r in range(max(reps, default=0)):
            for launch, runs, count in zip(launches, samples, reps):
                if count > r:
                    runs.append(self._once(launch))
        return samples

    @staticmethod
    def _once(launch: Callable[[], Any]) -> float:
        started = time.perf_counter()
        launch()
        return (time.perf_counter() - started) * 1e6


class Timer:
    """Times many launch functions on the current CUDA device (see the module docstring)."""

    def __init__(self, method: TimingMethod = TimingMethod()) -> None:
        self.method = method
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        # as Inductor: int32 so that zero_() is one plain fill kernel
        self._flush = torch.empty(max(props.L2_cache_size, 1 << 20) // 4, dtype=torch.int, device="cuda")
        self._settle = torch.empty(SETTLE_BYTES // 4, dtype=torch.int, device="cuda") if method.settle_fill else None
        self._cycles_per_us = getattr(props, "clock_rate", 1_500_000) / 1000  # kHz -> cycles per us
        self._events: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        self.flush_us = self._time_flush() if method.flush_l2 else 0.0
        self.host_us: list[float] = []  # each candidate's launch host time, of the last problem
        self._guarded_us: list[float] = []  # the host time each candidate's guard covers (host_us, backed off)
        self.starved: list[int] = []  # each candidate's starved runs, left out, of the last problem
        # host time of a run's flush, sleep and events (all but the launch), of the last pass
        self.loop_us = self._time_loop()

    def time(self, launches: Sequence[Callable[[], Any]]) -> list[list[float]]:
        """The timed runs of each launch that were not starved, in microseconds (estimate run
        first, where it was not); ``starved`` counts the others."""
        self.starved = [0] * len(launches)
        if not launches:
            return []
        was_enabled = gc.isenabled()
        gc.disable()  # a collection between the start event and the launch would be timed
        try:
            self.host_us = [self._host_time(launch) for launch in launches]
            self._guarded_us = list(self.host_us)
            estimates, estimates_starved = self._run([(i, launch, 0.0) for i, launch in enumerate(launches)])
            reps = self.method.reps([samples[0] for samples in estimates])
            # a starved estimate holds host time: guard as for a kernel of no time
            kernel_us = [0.0 if flags[0] else samples[0] for samples, flags in zip(estimates, estimates_starved)]
            schedule = [
                (i, launches[i], kernel_us[i])
                for r in range(max(reps))
                for i in range(len(launches))
                if reps[i] > r
            ]
            timed, timed_starved = self._run(schedule, len(launches))
        finally:
            if was_enabled:
                gc.enable()
        runs = [est + more for est, more in zip(estimates, timed)]
        starved = [est + more for est, more in zip(estimates_starved, timed_starved)]
        self.starved = [sum(flags) for flags in starved]
        return [unstarved(samples, flags) for samples, flags in zip(runs, starved)]

    @staticmethod
    def summarize(samples: Sequence[float]) -> float:
        """The time recorded for a candidate: the median of its runs."""
        return statistics.median(samples)

    def _host_time(self, launch: Callable[[], Any]) -> float:
        """Host microseconds to issue ``launch`` (the better of two tries; runs it twice)."""
        best = math.inf
        for _ in range(2):
            started = time.perf_counter()
            launch()
            best = min(best, (time.perf_counter() - started) * 1e6)
        return best

    def _guard_cycles(self, i: int, kernel_us: float) -> int:
        """The sleep before a run of launch ``i`` (not the first of a pass) whose kernel takes
        about ``kernel_us``: the rest of ``guard_margin`` times the run's host time."""
        m = self.method
        sleep_us = m.guard_margin * (self._guarded_us[i] + self.loop_us) - self.flush_us - kernel_us
        return int(min(max(sleep_us, 0.0), m.max_guard_us) * self._cycles_per_us)

    def _lead_cycles(self, i: int) -> int:
        m = self.method
        sleep_us = max(m.lead_us, 2 * (self._guarded_us[i] + self.loop_us))
        return int(min(sleep_us, m.max_guard_us) * self._cycles_per_us)

    def _time_loop(self) -> float:
        """The host time of a timed run without its launch, calibrated on an idle GPU."""
        self.host_us, self._guarded_us, self.loop_us = [0.0] * 20, [0.0] * 20, 0.0
        self._run([(i, lambda: None, 0.0) for i in range(20)], least_guard=1)
        return self.loop_us

    def flush_l2(self) -> None:
        """Flush L2 (zero a buffer of its size), then the settle fill where the method asks."""
        self._flush.zero_()
        if self._settle is not None:
            self._settle.zero_()

    def _time_flush(self) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for _ in range(5):
            start.record()
            self.flush_l2()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1000.0)
        return statistics.median(samples)

    def _run(
        self, schedule: Sequence[tuple[int, Callable[[], Any], float]], count: int | None = None, least_guard: int = 0
    ) -> tuple[list[list[float]], list[list[bool]]]:
        """Time ``schedule``'s runs (launch index, launch, its kernel's estimated microseconds) in
        one pass: each launch's samples and, for each sample, whether the run was starved. Each
        run sleeps at least ``least_guard`` cycles (the calibration launches a sleep in every run,
        as a timed run may)."""
        count = len(schedule) if count is None else count
        while len(self._events) < len(schedule):
            self._events.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
        passed = [False] * len(schedule)
        started = time.perf_counter()
        for j, (i, launch, kernel_us) in enumerate(schedule):
            start, end = self._events[j]
            if self.method.flush_l2:
                self.flush_l2()
            guard = self._lead_cycles(i) if j == 0 else max(self._guard_cycles(i, kernel_us), least_guard)
            if guard:
                torch.cuda._sleep(guard)
            start.record()
            launch()
            passed[j] = start.query()  # the GPU may have waited for this launch
            end.record()
            if passed[j]:
                self._guarded_us[i] *= STARVED_BACKOFF
        issued = (time.perf_counter() - started) * 1e6 / len(schedule)
        # the next pass guards with what this one cost the host besides the launches
        launches_us = sum(self.host_us[i] for i, _, _ in schedule) / len(schedule)
        # (a pass slowed by a full launch queue had the GPU busy anyway: cap what it teaches)
        self.loop_us = min(max(issued - launches_us, 0.0), 100.0)
        torch.cuda.synchronize()
        samples: list[list[float]] = [[] for _ in range(count)]
        starved: list[list[bool]] = [[] for _ in range(count)]
        for j, (i, _, _) in enumerate(schedule):
            start, end = self._events[j]
            samples[i].append(start.elapsed_time(end) * 1000.0)
            starved[i].append(passed[j])
        return samples, starved


def unstarved(samples: Sequence[float], starved: Sequence[bool]) -> list[float]:
    """A launch's samples less its starved runs (:class:`Timer`), or all of them where every
    run was starved: a time the host's pace inflated beats none."""
    kept = [sample for sample, flag in zip(samples, starved) if not flag]
    return kept or list(samples)


class GraphTimer:
    """Times launches from CUDA graph replays (see the module docstring); same interface as
    :class:`Timer`. Launches must run on the current stream, which must not be the default
    stream (graphs are captured on it): the sweep's GPU worker sets one for its whole run, the runtime one for its measurements."""

    def __init__(self, method: TimingMethod = TimingMethod()) -> None:
        self.method = method
        self.fallback = Timer(method)
        self.host_us: list[float] = []  # each candidate's host time to be captured, of the last problem
        #: as Timer's, of the last problem: a replayed graph has no host in its loop, so only the
        #: fallback's runs can be starved
        self.starved: list[int] = []
        self.fallbacks = 0  # problems timed by the fallback: every one after a failed capture
        #: host seconds spent, all problems: capturing rounds, replaying them (waiting for the
        #: GPU and reading the events included), and in the fallback timer
        self.seconds = {"capture": 0.0, "replay": 0.0, "stream": 0.0}

    def time(self, launches: Sequence[Callable[[], Any]]) -> list[list[float]]:
        """The timed runs of each launch, in microseconds (estimate run first)."""
        self.starved = [0] * len(launches)
        if not launches:
            return []
        if torch.cuda.current_stream() == torch.cuda.default_stream():
            raise RuntimeError("GraphTimer needs a current stream other than the default stream")
        was_enabled = gc.isenabled()
        gc.disable()  # a collection during capture would be captured as host time only, but is slow
        try:
            everyone = list(range(len(launches)))
            first = None
            if not self.fallbacks:
                try:
                    first = self._capture(launches, everyone, record_host=True)
                except Exception:  # a launch that cannot be captured (a synchronizing call, say)
                    torch.cuda.synchronize()
            if first is None:
                # after a failed capture torch's default generator may be left in capture mode:
                # no further capture in this process
                self.fallbacks += 1
                started = time.perf_counter()
                samples = self.fallback.time(launches)
                self.seconds["stream"] += time.perf_counter() - started
                self.host_us, self.starved = self.fallback.host_us, self.fallback.starved
                return samples
            samples: list[list[float]] = [[] for _ in launches]
            self._replay(first, samples)
            reps = self.method.reps([s[0] for s in samples])
            graphs = {tuple(everyone): first}
            for r in range(max(reps)):
                members = tuple(i for i in everyone if reps[i] > r)
                if members not in graphs:
                    graphs[members] = self._capture(launches, members)
                self._replay(graphs[members], samples)
            return samples
        finally:
            if was_enabled:
                gc.enable()

    def _capture(self, launches, members: Sequence[int], record_host: bool = False):
        """One round: a flush and a run of each member between two external events."""
        started = time.perf_counter()
        events = [(i, torch.cuda.Event(enable_timing=True, external=True), torch.cuda.Event(enable_timing=True, external=True)) for i in members]
        host = []
        graph = torch.cuda.CUDAGraph()
        graph.capture_begin()
        try:
            for i, start, end in events:
                if self.method.flush_l2:
                    self.fallback.flush_l2()
                start.record()
                issued = time.perf_counter()
                launches[i]()
                host.append((time.perf_counter() - issued) * 1e6)
                end.record()
        finally:
            graph.capture_end()
            self.seconds["capture"] += time.perf_counter() - started
        if record_host:
            self.host_us = host
        return graph, events

    def _replay(self, captured, samples: list[list[float]]) -> None:
        started = time.perf_counter()
        graph, events = captured
        graph.replay()
        events[-1][2].synchronize()
        for i, start, end in events:
            samples[i].append(start.elapsed_time(end) * 1000.0)
        self.seconds["replay"] += time.perf_counter() - started
