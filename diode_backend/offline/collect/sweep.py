"""The fast GPU sweep: compile each Triton config once per specialization, then time it on every
problem that shares the kernel, with ATen (cuBLAS) in every problem.

One parent process compiles in a pool of CPU workers (Triton's ``warmup``, which fills Triton's
on-disk cache) while a GPU worker, started with ``torch.multiprocessing``, takes the next problem
as soon as its kernels are compiled, times all its candidates (:mod:`.timing`) and appends the
result to the dataset (``ShardWriter``). Under ``torchrun`` each rank is such a parent with its
GPU, its share of the plan and shard names of its own (:mod:`.ranks`). Problems already in the
output directory are skipped, so an interrupted run resumes.

One module because the parent's scheduling and the workers' compile-and-time loop exchange
the same work units and must change together.
"""

from __future__ import annotations

import math
import os
import queue
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing.managers import SyncManager
from typing import Any

import torch

from ..dataset import DatasetMeta, ProblemTimings, ShardWriter, collected_problems
from ...problem import KIND_ATEN, GemmProblem, KernelConfig
from . import kernel
from .plan import PlannedProblem
from ..progress import Progress
from .ranks import Rank
from ...timing import Timer, TimingMethod, make_timer

#: Largest error (max |out - ref| / max |ref|) a candidate may show and still be timed.
ACCURACY_TOLERANCE = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-4, "tf32": 5e-3}

#: problems after the awaited one whose compiled kernels the GPU worker loads while it waits: a
#: compile pool of one worker per core has several problems' kernels in flight at once
LOAD_AHEAD = 4


@dataclass
class SweepReport:
    """What a sweep measured and cost; times in seconds unless named ``_us``."""

    problems: int = 0
    pairs: int = 0
    failed_pairs: int = 0
    skipped_problems: int = 0
    kernels: int = 0
    kernel_failures: int = 0
    compile_workers: int = 0
    compile_cpu_seconds: float = 0.0
    timing_seconds: float = 0.0
    wait_seconds: float = 0.0
    load_seconds: float = 0.0  # of timing_seconds: loading compiled kernels from Triton's cache
    loaded_waiting: int = 0  # kernels loaded while the GPU worker waited for compiles (in wait_seconds)
    #: the rest of timing_seconds by step (:func:`time_problem`'s ``phases``; the graph timer's
    #: capture, replay and fallback seconds as ``timer_*``, parts of ``timer``)
    timing_split: dict[str, float] = field(default_factory=dict)
    wall_seconds: float = 0.0
    graph_fallbacks: int = 0  # problems the graph timer could not capture (timed launch by launch)
    starved_runs: int = 0  # runs of those the stream timer left out: the GPU may have waited for the host
    host_us: dict[str, float] = field(default_factory=dict)  # median host time to issue a launch
    retimed: list[tuple[float, float]] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The figures for benchmarks/results: throughput per second of GPU timing and the noise
        floor (relative difference between two timings of the same pair, fresh inputs)."""
        out = {k: v for k, v in self.__dict__.items() if k != "retimed"}
        out["pairs_per_timing_second"] = self.pairs / self.timing_seconds if self.timing_seconds else None
        out["pairs_per_wall_second"] = self.pairs / self.wall_seconds if self.wall_seconds else None
        if self.retimed:
            diffs = sorted(abs(math.log(b / a)) for a, b in self.retimed if a > 0 and b > 0)
            out["noise_pairs"] = len(diffs)
            out["noise_median_rel"] = math.expm1(statistics.median(diffs))
            out["noise_p90_rel"] = math.expm1(diffs[int(0.9 * (len(diffs) - 1))])
        return out


def run_sweep(
    planned: Sequence[PlannedProblem],
    output: str | os.PathLike,
    meta: DatasetMeta,
    *,
    device: str = "cuda:0",
    rank: Rank = Rank(),
    method: TimingMethod = TimingMethod(),
    compile_workers: int | None = None,
    max_seconds: float | None = None,
    retime_every: int = 0,
    progress: bool = True,
    flush_every: int = 8,
) -> SweepReport:
    """Time ``rank``'s share of ``planned`` on ``device`` into the dataset directory ``output``
    and report.

    :param max_seconds: stop taking new problems after this many seconds (what was timed is
        kept; a rerun resumes).
    :param retime_every: time every n-th problem a second time, with fresh inputs, to measure
        the noise floor (the second timings are reported, not stored).
    :param flush_every: write a shard every this many problems (and every 20 seconds).
    """
    import torch.multiprocessing as mp

    started = time.monotonic()
    done = collected_problems(output)
    share = rank.share(planned)
    todo = [p for p in share if p.problem not in done]
    report = SweepReport(skipped_problems=len(share) - len(todo))
    keys: dict[tuple, int] = {}
    for item in todo:
        for key in _compile_keys(item):
            keys.setdefault(key, len(keys))
    report.kernels = len(keys)
    if not todo:
        return report
    ctx = mp.get_context("spawn")
    manager = SyncManager(ctx=ctx)
    manager.start(_exit_with_parent)
    ready = manager.dict()
    counters = {name: ctx.Value("d", 0.0) for name in ("next", "done", "pairs")}
    results = ctx.Queue()
    workers = report.compile_workers = compile_workers or rank.compile_workers()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_compile_init)
    compiled = {"count": 0, "cpu": 0.0}
    stop = threading.Event()
    feeder = threading.Thread(target=_compile_all, args=(pool, keys, ready, compiled, stop), daemon=True)
    feeder.start()
    deadline = None if max_seconds is None else time.time() + max_seconds
    gpus = mp.start_processes(
        _gpu_worker,
        args=(device, rank.tag, todo, keys, str(output), meta, method, ready, counters, results, deadline, retime_every, flush_every),
        nprocs=1,
        join=False,
        start_method="spawn",
    )
    bar = Progress(total=len(todo), enabled=progress)
    finished: list[dict] = []
    # `timeout` and batch systems stop with SIGTERM: pass it on so that workers flush their shards
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        while True:
            # read the workers' reports while they run: a worker cannot exit before what it
            # put on the queue is read (a large report filled the pipe and hung the first runs)
            finished += _drain(results)
            if gpus.join(timeout=0.5):
                break
            bar.update(
                int(counters["done"].value),
                f"{int(counters['pairs'].value):,} pairs, kernels {compiled['count']:,}/{len(keys):,}"
                + (f", {rank.describe()}" if rank.world_size > 1 else ""),
            )
    except KeyboardInterrupt:
        for process in gpus.processes:
            process.terminate()
        for process in gpus.processes:
            process.join(30)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        # the feeder must not write to the manager once it is shut down (a broken pipe at exit)
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        feeder.join()
        bar.close()
    finished += _drain(results)
    for worker in finished:
        for name in (
            "problems", "pairs", "failed_pairs", "timing_seconds", "wait_seconds", "load_seconds", "loaded_waiting",
            "graph_fallbacks", "starved_runs",
        ):  # fmt: skip
            setattr(report, name, getattr(report, name) + worker[name])
        for name, seconds in worker["timing_split"].items():
            report.timing_split[name] = report.timing_split.get(name, 0.0) + seconds
        report.host_us.update(worker["host_us"])
        report.retimed.extend(worker["retimed"])
        report.devices.append(worker["device"])
    report.kernel_failures = sum(1 for error in ready.values() if error)
    report.compile_cpu_seconds = compiled["cpu"]
    report.wall_seconds = time.monotonic() - started
    manager.shutdown()
    return report


# -- compilation (pool workers) ------------------------------------------------------------------


def _compile_init() -> None:
    # compile workers only need a device to ask Triton for its target: the first one is enough
    os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    # the GPU worker reads back the binary alone: without the other stages' text (LLVM IR, PTX,
    # several times the binary's bytes) in Triton's cache, each load reads and decodes less
    os.environ["TRITON_STORE_BINARY_ONLY"] = "1"
    _exit_with_parent()


def _compile_keys(item: PlannedProblem) -> list[tuple]:
    """The compile keys of ``item``'s Triton candidates, in its order."""
    return [kernel.compile_key(item.problem, c) for c in item.configs if c.kind != KIND_ATEN]


def _exit_with_parent() -> None:
    """Make this helper process (a compile worker, the manager) exit once the sweep's process is
    gone: one killed outright (SIGKILL) cannot stop its helpers, nor does torchrun, which
    signals live ranks only."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _compile_one(index: int, key: tuple) -> tuple[int, str, float]:
    started = time.process_time()
    try:
        kernel.compile_for(key)
        error = ""
    except Exception as err:  # recorded per kernel; its pairs count as failed
        error = f"{type(err).__name__}: {err}"[:500] or "error"
    return index, error, time.process_time() - started


def _compile_all(
    pool: ProcessPoolExecutor, keys: dict[tuple, int], ready, compiled: dict, stop: threading.Event
) -> None:
    futures = [pool.submit(_compile_one, index, key) for key, index in keys.items()]
    # each kernel is published as it finishes, not behind a slower one submitted before it: the
    # GPU worker loads what is published while it waits, and otherwise loads it in its timing
    for future in as_completed(futures):
        try:
            index, error, cpu = future.result()
        except Exception:  # pool shut down (the run ended early) or a worker died
            return
        if stop.is_set():
            return
        ready[index] = error
        compiled["count"] += 1
        compiled["cpu"] += cpu


# -- timing (the GPU worker) ---------------------------------------------------------------------


def _drain(results) -> list[dict]:
    out = []
    while True:
        try:
            out.append(results.get_nowait())
        except queue.Empty:
            return out


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _gpu_worker(_, device, tag, todo, keys, output, meta, method, ready, counters, results, deadline, retime_every, flush_every):
    # stopped by the parent with SIGTERM: leave through the `with ShardWriter` block, which flushes
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    # a parent killed outright (SIGKILL, as torchrun's restart finds a rank) is not told to stop
    # its worker: the worker stops by itself, so that it never times beside the restarted rank
    parent = os.getppid()
    if torch.device(device).type == "cuda":
        torch.cuda.set_device(device)
        # every launch on one side stream: the graph timer captures there (never the default stream)
        torch.cuda.set_stream(torch.cuda.Stream())
    timer = make_timer(method)
    stats = {
        "problems": 0, "pairs": 0, "failed_pairs": 0, "timing_seconds": 0.0, "wait_seconds": 0.0, "loaded_waiting": 0,
        "starved_runs": 0,
    }  # fmt: skip
    stats["device"] = f"{device} {meta.hardware.name}"
    retimed: list[tuple[float, float]] = []
    host: dict[str, list[float]] = {KIND_ATEN: [], "triton": []}  # launch host times, sampled
    kernels: dict[int, Any] = {}
    known: dict[int, str] = {}
    item_keys: dict[int, list[tuple]] = {}  # compile keys of the problems looked ahead at
    phases: dict[str, float] = {}
    with ShardWriter(output, meta, tag=f"{tag}-{device.replace(':', '')}", every=flush_every, seconds=20) as writer:
        while (deadline is None or time.time() < deadline) and os.getppid() == parent:
            with counters["next"].get_lock():
                index = int(counters["next"].value)
                counters["next"].value += 1
            if index >= len(todo):
                break
            item = todo[index]
            ahead = range(index, min(index + 1 + LOAD_AHEAD, len(todo)))
            for later in ahead:  # each problem's keys computed once, though looked ahead at again
                if later not in item_keys:
                    item_keys[later] = _compile_keys(todo[later])
            upcoming = [k for later in ahead for k in item_keys[later]]  # this problem's first
            wanted = {keys[k] for k in item_keys.pop(index)}

            prepared: dict[str, Any] = {}

            def meanwhile() -> bool:  # compiled kernels first, then (once) this problem's operands
                loaded = _load_compiled(upcoming, keys, kernels, known)
                stats["loaded_waiting"] += loaded
                if loaded:
                    return True
                if prepared:  # nothing left to do until a kernel is published
                    return False
                prepared["ops"] = _prepare(item, device)
                return True

            waited = time.perf_counter()
            compiled = _wait_for_kernels(wanted, known, ready, deadline, parent, meanwhile)
            stats["wait_seconds"] += time.perf_counter() - waited
            if not compiled:  # out of time or orphaned while its kernels compile: a rerun times it
                break
            started = time.perf_counter()
            load = lambda key: _load(key, keys, kernels, known)  # noqa: E731
            result, _ = time_problem(item, timer, load, device, phases, ops=prepared.get("ops"))
            stats["starved_runs"] += sum(timer.starved)
            prepared.clear()  # its operands freed before a second timing makes fresh ones
            if retime_every and index % retime_every == 0:
                again, _ = time_problem(item, timer, load, device, phases)
                stats["starved_runs"] += sum(timer.starved)
                first = dict(zip(result.configs, result.times_us))
                retimed.extend((first[c], t) for c, t in zip(again.configs, again.times_us) if c in first)
            stats["timing_seconds"] += time.perf_counter() - started
            for config, host_us in zip(result.configs, timer.host_us):
                host[KIND_ATEN if config.kind == KIND_ATEN else "triton"].append(host_us)
            writer.add(result)
            stats["problems"] += 1
            stats["pairs"] += len(result.times_us)
            stats["failed_pairs"] += result.failed
            with counters["done"].get_lock():
                counters["done"].value += 1
                counters["pairs"].value += len(result.times_us)
    stats["load_seconds"] = phases.pop("load", 0.0)
    stats["timing_split"] = {**phases, **{f"timer_{k}": v for k, v in getattr(timer, "seconds", {}).items()}}
    stats["host_us"] = {f"{kind}_median": statistics.median(v) for kind, v in host.items() if v}
    stats["graph_fallbacks"] = getattr(timer, "fallbacks", 0)
    stats["retimed"] = retimed
    results.put(stats)


def _wait_for_kernels(
    wanted: set[int],
    known: dict[int, str],
    ready,
    deadline: float | None,
    parent: int | None = None,
    meanwhile: Callable[[], bool] | None = None,
) -> bool:
    """Wait until every kernel in ``wanted`` is compiled (or failed): False if ``deadline``
    (``time.time()``) passes first, or the process ``parent`` (which compiles) is no longer this
    process's parent. On a cold Triton cache a problem can wait minutes; while it waits,
    ``meanwhile()`` does work that would otherwise come later (it returns whether it did any,
    and the wait sleeps when it did none)."""
    while True:
        known.update(ready.copy())
        if wanted <= known.keys():
            return True
        if deadline is not None and time.time() >= deadline:
            return False
        if parent is not None and os.getppid() != parent:
            return False
        if meanwhile is None or not meanwhile():
            time.sleep(0.05)


def _load(key: tuple, keys: dict[tuple, int], kernels: dict[int, Any], known: dict[int, str]):
    index = keys[key]
    if known.get(index):
        raise RuntimeError(known[index])
    if index not in kernels:
        kernels[index] = kernel.compile_for(key)  # a hit in Triton's disk cache
    if isinstance(kernels[index], Exception):  # its load failed while the worker waited
        raise kernels[index]
    return kernels[index]


def _load_compiled(upcoming: list[tuple], keys: dict[tuple, int], kernels: dict[int, Any], known: dict[int, str]) -> int:
    """Load the kernels of ``upcoming`` that are compiled and not loaded yet, modules included,
    while the GPU worker waits for others: a load then costs the timing nothing. Returns how many
    it loaded (or tried to)."""
    loaded = 0
    for key in upcoming:
        index = keys[key]
        if index in kernels or known.get(index) != "":  # loaded, not compiled yet, or failed
            continue
        try:
            kernels[index] = compiled = kernel.compile_for(key)
            kernel.load_module(compiled)
        except Exception as err:  # a module that does not load: its launch raises the same error
            kernels.setdefault(index, err)
        loaded += 1
    return loaded


def _prepare(item: PlannedProblem, device: str) -> dict[str, torch.Tensor | None] | None:
    """``item``'s operands, made while the GPU worker waits for its kernels, its ATen candidates
    run once on them: a shape's first cuBLAS call chooses its algorithm, at about a millisecond
    of host time, which would otherwise fall in the checks. None where the operands cannot be
    made (the timing makes them again and meets the same error)."""
    try:
        ops = make_operands(item.problem, device)
    except Exception:  # out of memory: raised again where the timing makes them
        return None
    with _tf32(item.problem.allow_tf32):
        for config in item.configs:
            if config.kind == KIND_ATEN:
                try:
                    aten_launch(item.problem, config.template, ops)()
                except Exception:  # the check runs it again and records the error
                    pass
    return ops


# -- one problem ----------------------------------------------------------------------------------


_generators: dict[str, torch.Generator] = {}


def make_operands(problem: GemmProblem, device: str = "cuda") -> dict[str, torch.Tensor | None]:
    """Fresh random normal inputs in ``problem``'s layouts, the output, and a float32 reference
    (computed without TF32)."""
    dtype, out_dtype = getattr(torch, problem.dtype), getattr(torch, problem.out_dtype)
    batch = (problem.batch,) if problem.op in ("bmm", "baddbmm") else ()
    # A generator of our own: a CUDA graph capture that fails (GraphTimer) can leave the default
    # generator in capture mode, where every later draw from it raises.
    generator = _generators.get(device)
    if generator is None:
        generator = _generators[device] = torch.Generator(device=device)
        generator.seed()

    def randn(*shape: int, dtype: torch.dtype = dtype) -> torch.Tensor:
        return torch.randn(*shape, device=device, dtype=dtype, generator=generator)

    def operand(rows: int, cols: int, layout: str) -> torch.Tensor:
        if layout == "col":
            return randn(*batch, cols, rows).transpose(-1, -2)
        return randn(*batch, rows, cols)

    a = operand(problem.m, problem.k, problem.a_layout)
    b = operand(problem.k, problem.n, problem.b_layout)
    bias = None
    if problem.bias == "row":
        bias = randn(problem.n, dtype=out_dtype)
    elif problem.bias == "full":
        bias = randn(*batch, problem.m, problem.n, dtype=out_dtype)
    with _tf32(False):
        ref = torch.matmul(a.float(), b.float())
    if bias is not None:
        ref += bias.float()
    out = torch.empty(*batch, problem.m, problem.n, device=device, dtype=out_dtype)
    return {"a": a, "b": b, "bias": bias, "out": out, "ref": ref}


def aten_launch(problem: GemmProblem, template: str, ops: dict) -> Callable[[], Any]:
    """The ATen call Inductor's extern choice makes (``aten::addmm`` gets the bias expanded to
    the output's shape, ``aten::bias_addmm`` the 1-D bias that selects cuBLASLt's epilogue)."""
    a, b, bias, out = ops["a"], ops["b"], ops["bias"], ops["out"]
    if template in ("aten::mm", "aten::bmm"):
        fn = torch.mm if template == "aten::mm" else torch.bmm
        return lambda: fn(a, b, out=out)
    if template == "aten::bias_addmm":
        return lambda: torch.addmm(bias, a, b, out=out)
    if template == "aten::addmm":
        full = bias.expand(problem.m, problem.n)
        return lambda: torch.addmm(full, a, b, out=out)
    if template == "aten::baddbmm":
        full = bias.expand(problem.batch, problem.m, problem.n)
        return lambda: torch.baddbmm(full, a, b, out=out)
    raise ValueError(f"unknown ATen candidate {template!r}")


def triton_launch(problem: GemmProblem, config: KernelConfig, compiled, ops: dict) -> Callable[[], Any]:
    """A launch of a compiled sweep kernel on ``ops`` (Triton's ``CompiledKernel[grid]``)."""
    runner = compiled[kernel.grid(problem, config)]
    args = kernel.launch_args(problem, config, ops["a"], ops["b"], ops["out"], ops["bias"])
    if not ops["out"].is_cuda:
        return lambda: runner(*args)  # Triton's interpreter (tests)
    stream = torch.cuda.current_stream().cuda_stream
    return lambda: runner(*args, stream=stream)


def time_problem(
    item: PlannedProblem,
    timer: Timer,
    load: Callable[[tuple], Any],
    device: str = "cuda",
    phases: dict[str, float] | None = None,
    ops: dict[str, torch.Tensor | None] | None = None,
) -> tuple[ProblemTimings, dict[KernelConfig, str]]:
    """Time every candidate of ``item`` on ``ops`` (:func:`make_operands`; fresh ones if None);
    ``load(compile_key)`` gives a compiled kernel.

    Each candidate runs once untimed on a NaN-poisoned output and is kept only if its result
    matches the float32 reference (:data:`ACCURACY_TOLERANCE`); the others are counted as failed and
    their reason returned. ``phases``, if given, gains the host seconds of each step: ``operands``
    (inputs and reference), ``load`` (kernels), ``check`` (the checked runs) and ``timer``.
    """
    problem = item.problem
    started = time.perf_counter()
    ops = make_operands(problem, device) if ops is None else ops
    made = time.perf_counter()
    loading = 0.0
    errors: dict[KernelConfig, str] = {}
    launches: dict[KernelConfig, Callable[[], Any]] = {}
    deviations: list[torch.Tensor] = []  # max |out - ref| of each launched candidate, on the device
    with _tf32(problem.allow_tf32):
        for config in item.configs:
            try:
                if config.kind == KIND_ATEN:
                    launch = aten_launch(problem, config.template, ops)
                else:
                    loaded = time.perf_counter()
                    try:
                        compiled = load(kernel.compile_key(problem, config))
                    finally:
                        loading += time.perf_counter() - loaded
                    launch = triton_launch(problem, config, compiled, ops)
                ops["out"].fill_(math.nan)
                launch()
            except Exception as err:  # compile failures, out of resources: Inductor drops these too
                errors[config] = f"{type(err).__name__}: {err}"[:300]
                continue
            deviations.append(torch.linalg.vector_norm(ops["out"] - ops["ref"], math.inf))  # NaN stays NaN
            launches[config] = launch
        scale = ops["ref"].abs().max().clamp(min=1e-6)
        # one synchronization for all checks
        relative = (torch.stack(deviations) / scale).tolist() if deviations else []
        tolerance = ACCURACY_TOLERANCE["tf32" if problem.allow_tf32 else problem.dtype]
        checked = []
        for config, deviation in zip(launches, relative):
            if not deviation <= tolerance:  # NaN fails too: an element was not written
                errors[config] = f"wrong result: max error {deviation:.3g} of max |ref|"
            else:
                checked.append(launches[config])
        kept = [c for c in item.configs if c not in errors]
        checked_at = time.perf_counter()
        samples = timer.time(checked)
    if phases is not None:
        steps = {
            "operands": made - started, "load": loading, "check": checked_at - made - loading,
            "timer": time.perf_counter() - checked_at,
        }  # fmt: skip
        for name, seconds in steps.items():
            phases[name] = phases.get(name, 0.0) + seconds
    result = ProblemTimings(
        problem=problem,
        configs=tuple(kept),
        times_us=tuple(Timer.summarize(s) for s in samples),
        split=item.split,
        generator=item.generator,
        source="sweep",
        space=item.space,
        failed=len(errors),
    )
    return result, errors


class _tf32:
    """Allow TF32 in float32 matmuls for the block (ATen and Inductor read the same setting).

    Through ``torch.set_float32_matmul_precision``, which sets every backend alike: setting
    only ``torch.backends.cuda.matmul.fp32_precision`` makes Inductor's own
    ``torch.get_float32_matmul_precision()`` raise (torch 2.11 and 2.13)."""

    def __init__(self, enabled: bool) -> None:
        self.value = "high" if enabled else "highest"

    def __enter__(self) -> None:
        self.saved = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision(self.value)

    def __exit__(self, *exc: object) -> None:
        torch.set_float32_matmul_precision(self.saved)

