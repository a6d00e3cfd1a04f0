"""End-to-end check on the GPU: validation problems compiled by ``torch.compile`` in every mode.

For each chosen validation problem of a dataset (its candidates measured, so its fastest
measured candidate is known), the GEMM is compiled with:

- ``no_autotune``: plain ``torch.compile`` (Inductor calls ATen/cuBLAS);
- ``max_autotune_default``: ``max_autotune`` with Inductor's DEFAULT ATEN+TRITON list, benchmarked;
- optionally ``max_autotune_at_lowering``: the same with ``benchmark_epilogue_fusion`` off, so
  Inductor benchmarks each GEMM as it lowers it, as DIODE measures (in a graph of several GEMMs,
  ``--graph-size``, it shows what overlapping their candidate compiles saves);
- ``diode_fast``: ``max_autotune`` with ``max_autotune_gemm_backends="DIODE"`` and
  ``fast_autotune=True``, everything else at its default (a confident pick is compiled alone,
  an unsure one has its top-k benchmarked; the stats say which happened);
- optionally ``diode_fast_at_lowering``: the same with ``benchmark_epilogue_fusion`` off, so
  DIODE measures each GEMM as Inductor lowers it instead of when the scheduler asks (in a graph
  of several GEMMs it shows what overlapping their compiles saves);
- optionally ``diode_pick`` (``--modes``): the same with ``diode_fallback_to_autotune=False``,
  the model's top pick whatever its confidence;
- ``diode_warm`` (with ``--warm-from``): ``diode_fast``'s options in a new process whose DIODE
  prediction cache is the one an earlier run filled;
- ``no_autotune_again`` (:data:`CONTROL`): ``no_autotune`` compiled a second time, the same
  program timed beside the first, so every run says how far apart its timer puts one program
  (the summary's ``timer_spread``): a difference between modes smaller than that is noise. It
  is left out of each row's best mode;
- optionally ``best_known`` (:data:`BEST_KNOWN`): the dataset's fastest candidate compiled
  alone, as DIODE's single pick answered by a measured decision seeded with it (``applied``:
  whether the compile used it). Its runtime is the row's reference ``vs_best_known``: the best
  measured kernel timed as the other modes are, in a compiled function of its own, where
  ``vs_best`` takes the collector's time of the kernel alone. It is left out of each row's
  best mode.

Method: one process; on a GPU each of Inductor's compile workers first compiles a kernel
(:func:`warm_compile_workers`), then each mode compiles a warm-up GEMM, so one-time costs (CUDA
context, Triton import, compile workers) stay out of the rows; Inductor's caches off
(``force_disable_caches``) and Triton's cache in a fresh folder, and per problem the modes compile
in the order above so no mode reuses a Triton kernel another compiled for it (no_autotune
compiles none; diode_fast compiles one to five before max_autotune_default's twenty). Compile
time: wall time of the first call of the mode's ``torch.compile``, synchronized; Dynamo is
reset once per problem, before its first mode (a reset before each mode would make the modes
compiled before it compile again when timed, unmeasured and under another mode's prediction
cache). Runtime: every mode's compiled function of a problem timed together, their runs
interleaved round robin, as the dataset's candidates were (``diode_backend.timing``: CUDA events, L2
flushed before each run, median; runs the GPU may have waited for the host in are left out and
counted, ``starved_runs``), more repetitions, so that drift of the machine spreads over
all modes alike, in three rounds (a mode's runtime: the median of its rounds' medians; the
summary's ``unsteady_rounds`` lists the modes whose rounds were more than 10% apart); ``vs_best``
divides it by the dataset's fastest measured candidate, ``vs_best_mode`` by the fastest mode of
the row (the control left out). Results are written after every problem; ``--resume``
continues a file an earlier call wrote (its complete rows kept and their problems skipped; a row
with a failed mode is measured again), so a run longer than one GPU call is made in several.
Problems run in a fixed pseudo-random order, so the rows of a run cut short are a fair sample.
``--shard I/N`` takes every Nth problem of that order from the Ith (0-based): N runs in parallel,
one GPU each, cover the problems once, and ``benchmarks/e2e_merge.py`` joins their files.
Each run records its cache folders (``caches``); each DIODE mode keeps its
prediction cache in a folder of its own under ``caches.diode``. ``--families`` takes the
validation problems of named model families (``held-out``: those of
``trained_models/data/h100/problems/zoo-holdout.json``; ``stopping``: the problems of the
families the model stopped its training early on, never trained on, where a default may be
chosen), all of them unless ``--problems`` is given, and the summary is given per workload
class too. ``--modes`` may set options of a mode (``diode_fast+diode_top_k=2``:
:func:`mode_options`), so one run compares settings of DIODE side by side. The summary lists
the rows whose DIODE modes compiled the same pick but were timed more than 10% apart
(``same_kernel_disagreements``): the timing erred there, not the pick.

Warm cache: ``--warm-from FILE`` compiles the problems of an earlier run's complete rows again,
in a new process, with Inductor's caches off and DIODE's prediction cache the earlier run's
(``caches.diode`` of FILE: run both on one machine, the earlier in one call, without
``--resume``); modes ``no_autotune,diode_warm`` unless ``--modes`` says otherwise, compiled in
the given order on even rows and the reverse on odd ones (each row's ``compile_order``:
``e2e_warm.compile_order``). Each row gets ``warm``: the earlier ``diode_fast`` decision's
pick and kept count against ``diode_warm``'s, whether the picks match (for a kept count above
one the pick is the predicted best, not the kernel Inductor's benchmark then chose), and the
winner of the measured decision stored for the problem just before the warm compile
(:func:`measured_before`); the summary's ``warm`` gives diode_warm's compile time over
no_autotune's and the share of matching picks. Triton's kernel cache is fresh too, whatever
``TRITON_CACHE_DIR`` says: with ``force_disable_caches`` Inductor compiles each graph under
``torch._inductor.utils.fresh_cache``, which points ``TRITON_CACHE_DIR`` at a new folder of its
own, so a Triton decision is compiled from source again.

Kernel caches kept: ``--kernel-cache DIR`` (with ``--warm-from``) measures the warm compile as a
user's recompile on the same machine sees it too. After the pass above (every cache off, the
figure of issue 14), the same warm pass runs twice more, each in a fresh process, with
Inductor's FX-graph, AOTAutograd, autotune and profile-guided caches off but its compiled-kernel
code (``TORCHINDUCTOR_CACHE_DIR=DIR/inductor``) and Triton's kernel cache
(``TRITON_CACHE_DIR=DIR/triton``) kept (``e2e_warm.KERNEL_CACHES_KEPT``); the second process's
figures, no_autotune's and diode_warm's alike, are the ones reported: each row's
``kernel_cache``, the summary's ``warm_kernel_cache``, and ``warm_side_by_side`` (both ratios).
``--device cpu`` runs any of this on the CPU (the host clock times it).

Graphs of several GEMMs: ``--graph-size N`` compiles up to N problems of one family and one
float32 precision setting (TF32 is a process setting) as one graph, in the run order, where
each GEMM is otherwise a graph of its own. A model's forward holds its GEMMs in one graph, which
shares a compile's fixed costs (Dynamo, AOTAutograd, Inductor's passes, loading the output
module) among them; a graph of one GEMM charges them all to it, to every mode alike. Such a row
names its problems (``members``), its ``best_measured_us`` is the sum of theirs (each kernel
timed alone: the graph's runtime adds its launches), each DIODE mode lists every decision of
the compile (``diode.decisions``), and its ``warm`` counts the GEMMs whose warm pick is the cold
one (``same_picks`` of ``gemms``). A warm run compiles the earlier run's graphs as they were.

What the rows add up to (the summary, written after every row) is ``benchmarks/e2e_results.py``;
the kernel-cache passes are ``benchmarks/e2e_warm.py``.

Runs on torch 2.11 + triton 3.6 (the GPU machine) and later::

    python benchmarks/e2e_validation.py trained_models/data --problems 32 --out $OUT/e2e.json
    python benchmarks/e2e_validation.py trained_models/data --warm-from $OUT/e2e.json \
        --kernel-cache $OUT/kernel-cache --out $OUT/e2e-warm.json
"""

from __future__ import annotations

import os
import tempfile

# Before Triton is imported: its kernel cache (and DIODE's prediction cache) must not hold
# anything from earlier runs.
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="diode-e2e-triton-"))
os.environ.setdefault("DIODE_CACHE_DIR", tempfile.mkdtemp(prefix="diode-e2e-predictions-"))

import argparse  # noqa: E402
import ast  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from unittest import mock  # noqa: E402

import diode_backend._autoload  # noqa: E402

# Entry points may not be installed (PYTHONPATH checkouts): install DIODE's hooks by hand,
# before anything imports torch._inductor.
diode_backend._autoload.install()

import torch  # noqa: E402

import diode_backend  # noqa: E402
from diode_backend.files import read_json  # noqa: E402
from diode_backend.offline.dataset import ProblemTimings, load_dataset  # noqa: E402
from diode_backend.offline.families import family_of, parse_families, stopping_problems  # noqa: E402
from diode_backend.problem import GemmProblem  # noqa: E402
from diode_backend.workload import workload_class  # noqa: E402
from diode_backend import catalog, measured, registry  # noqa: E402
from diode_backend.inductor import compat  # noqa: E402
from diode_backend.inductor.context import candidate_set  # noqa: E402
from diode_backend.inductor.feedback import observe_autotuning  # noqa: E402
from diode_backend.inductor.options import current_options  # noqa: E402
from torch._inductor.graph import GraphLowering  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e_results import (  # noqa: E402
    BEST_KNOWN,
    CONTROL,
    REFERENCES,
    WARM_MODES,
    summarize,
    warm_comparison,
    write_result,
)
from e2e_warm import add_kernel_cache_figures, compile_order, kernel_cache_passes, keep_kernel_caches  # noqa: E402

HOLDOUT = Path(__file__).resolve().parents[1] / "trained_models" / "data" / "h100" / "problems" / "zoo-holdout.json"
#: DIODE with its defaults.
DIODE_DEFAULTS = {"max_autotune": True, "max_autotune_gemm_backends": "DIODE", "fast_autotune": True}
#: DIODE's single pick: the model's top candidate alone, whatever its confidence.
DIODE_PICK = {**DIODE_DEFAULTS, "diode_fallback_to_autotune": False}
MODES = {
    "no_autotune": {},
    "diode_fast": DIODE_DEFAULTS,
    "diode_pick": DIODE_PICK,
    "max_autotune_default": {
        "max_autotune": True,
        "max_autotune_gemm_backends": "ATEN,TRITON",
        "max_autotune_gemm_search_space": "DEFAULT",
    },
    # max_autotune_default with each GEMM benchmarked as Inductor lowers it, as DIODE measures:
    # without benchmark_epilogue_fusion Inductor returns no MultiTemplateBuffer, whose deferred
    # timings let the candidate compiles of a graph's GEMMs overlap
    "max_autotune_at_lowering": {
        "max_autotune": True,
        "max_autotune_gemm_backends": "ATEN,TRITON",
        "max_autotune_gemm_search_space": "DEFAULT",
        "benchmark_epilogue_fusion": False,
    },
    # diode_fast measuring each GEMM at its lowering, as max_autotune_at_lowering benchmarks
    "diode_fast_at_lowering": {**DIODE_DEFAULTS, "benchmark_epilogue_fusion": False},
    "diode_warm": DIODE_DEFAULTS,
    # a setting at its default: the same program, but options that differ, so Dynamo compiles it anew
    CONTROL: {"trace.enabled": False},
    # diode_pick's options, differing in such a setting too: Dynamo must not reuse diode_pick's compile
    BEST_KNOWN: {**DIODE_PICK, "trace.compile_profile": False},
}
DEFAULT_MODES = ("no_autotune", "diode_fast", "max_autotune_default", CONTROL)
_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def mode_options(mode: str) -> dict:
    """The ``torch.compile`` options of ``mode``: a name of :data:`MODES`, alone or followed by
    settings that override its options, each ``+option=value`` with a Python literal value
    (``diode_fast+diode_top_k=2+diode_measure_ratio=1.0``: DIODE's defaults measuring fewer).

    :raises ValueError: naming an unknown mode or a setting that is not ``option=literal``.
    """
    name, *settings = mode.split("+")
    if name not in MODES:
        raise ValueError(f"unknown mode {name!r}; give one of {', '.join(MODES)}, each optionally +option=value")
    options = dict(MODES[name])
    for setting in settings:
        key, equals, value = setting.partition("=")
        try:
            if not (key and equals):
                raise ValueError(setting)
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError(f"{mode!r}: setting {setting!r} is not option=value with a Python literal value") from None
    return options


def problems_of(dataset, families: str) -> tuple[list[ProblemTimings], list[str]]:
    """The problems ``--families`` takes from ``dataset``, and the families named: the validation
    problems of the named families (``held-out``: those of :data:`HOLDOUT`; none named: of every
    family), or with ``stopping`` the problems the model DIODE ranks with on the dataset's
    hardware stopped its training early on (``offline.families.stopping_problems``), where
    defaults may be chosen.

    :raises ValueError: when ``stopping`` finds no such model or other data than it stopped on.
    """
    names = parse_families(families)
    if names == ["stopping"]:
        from diode_backend.offline.train import inference_hardware

        entry = catalog.pick_entry(inference_hardware(dataset.hardware))
        scorer = registry.load_scorer(entry) if entry else None
        training = scorer.checkpoint.training if hasattr(scorer, "checkpoint") else {}
        if "stopping_families" not in training:
            raise ValueError(f"no model for {dataset.hardware.key} that records its early-stopping families")
        return stopping_problems(dataset.problems, training), training["stopping_families"]
    if names == ["held-out"]:
        names = json.loads(HOLDOUT.read_text())["families"]
    wanted = set(names)
    return [p for p in dataset.split("validation") if not wanted or family_of(p) in wanted], names


def choose(problems: list[ProblemTimings], count: int) -> list[ProblemTimings]:
    """``count`` problems spread evenly over op, dtype and size (sorted, evenly spaced picks)."""
    ordered = sorted(problems, key=lambda p: (p.problem.op, p.problem.dtype, p.problem.allow_tf32, p.problem.flops))
    if count >= len(ordered):
        return ordered
    step = (len(ordered) - 1) / max(count - 1, 1)
    return [ordered[round(i * step)] for i in range(count)]


def run_order(problems: list[ProblemTimings]) -> list[ProblemTimings]:
    """``problems`` in a fixed pseudo-random order (by a hash of each description), so that the
    rows a run cut short by time has measured are a fair sample of all it was asked for."""
    return sorted(problems, key=lambda p: hashlib.sha256(p.problem.describe().encode()).hexdigest())


def out_of_budget(elapsed_s: float, slowest_row_s: float, budget_s: float) -> bool:
    """Whether a run ``elapsed_s`` into its ``budget_s`` starts no further problem: one as slow as
    the slowest so far would end past the budget (a GPU call's time limit kills what runs on, the
    merge of its parts included)."""
    return elapsed_s + slowest_row_s > budget_s


def parse_shard(text: str) -> tuple[int, int] | None:
    """``"I/N"`` as ``(I, N)`` with ``0 <= I < N``; None for anything else."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit()) or int(index) >= int(count):
        return None
    return int(index), int(count)


def warm_compile_workers(device: str) -> int:
    """Give each of Inductor's compile workers its first kernel before the rows, all at once:
    the workers, how many there were (0: Inductor compiles in this process).

    A worker's first kernel costs it its imports, once per process, and until the workers are
    ready Inductor compiles in this process instead. Without this, the first rows after the
    workers came up would each pay one worker's start, and only in the modes that compile
    kernels. One pointwise kernel per worker, each of another size, compiled as one
    graph so Inductor hands them to the workers together."""
    workers = compat.compile_workers_ready(120.0)
    if workers:
        inputs = [torch.randn(1024 + i, device=device) for i in range(workers)]
        torch.compile(lambda *xs: [x.sin() * (i + 2) for i, x in enumerate(xs)])(*inputs)
    return workers


def make_case(problem: GemmProblem, device: str = "cuda"):
    """The function and fresh random inputs (never zeros) that compute ``problem`` on ``device``."""
    dtype = _DTYPES[problem.dtype]
    batched = problem.op in ("bmm", "baddbmm")

    def operand(rows: int, cols: int, layout: str) -> torch.Tensor:
        lead = (problem.batch,) if batched else ()
        if layout == "col":  # the other dimension contiguous: a transposed view
            return torch.randn(*lead, cols, rows, device=device, dtype=dtype).transpose(-1, -2)
        return torch.randn(*lead, rows, cols, device=device, dtype=dtype)

    a = operand(problem.m, problem.k, problem.a_layout)
    b = operand(problem.k, problem.n, problem.b_layout)
    if problem.bias == "none":
        return (torch.bmm if batched else torch.mm), (a, b)
    if problem.bias == "row":
        bias = torch.randn(problem.n, device=device, dtype=dtype)
    else:
        bias = torch.randn(*((problem.batch,) if batched else ()), problem.m, problem.n, device=device, dtype=dtype)
    return (torch.baddbmm if batched else torch.addmm), (bias, a, b)


def make_graph(problems: list[GemmProblem], device: str = "cuda"):
    """The function and inputs that compute ``problems`` in one graph (:func:`make_case` for one
    problem): every GEMM of its own inputs, their results returned together."""
    if len(problems) == 1:
        return make_case(problems[0], device)
    cases = [make_case(problem, device) for problem in problems]

    def graph(*args):
        results, start = [], 0
        for fn, inputs in cases:
            results.append(fn(*args[start : start + len(inputs)]))
            start += len(inputs)
        return tuple(results)

    return graph, tuple(x for _, inputs in cases for x in inputs)


def graph_groups(items: list[ProblemTimings], size: int) -> list[list[ProblemTimings]]:
    """``items``, in run order, as the graphs a run compiles: each alone for ``size`` 1, else up
    to ``size`` problems of one family and one float32 precision setting, in their order, each
    graph where its first problem stood."""
    if size <= 1:
        return [[item] for item in items]
    filling: dict[tuple, list[ProblemTimings]] = {}
    groups = []
    for item in items:
        key = (family_of(item), item.problem.allow_tf32)
        if key not in filling or len(filling[key]) == size:
            filling[key] = []
            groups.append(filling[key])
        filling[key].append(item)
    return groups


def describe_graph(group: list[ProblemTimings]) -> str:
    """A row's name: its problem's description, or a graph's family and problems."""
    if len(group) == 1:
        return group[0].problem.describe()
    return f"{family_of(group[0])} graph: " + "; ".join(item.problem.describe() for item in group)


def row_head(group: list[ProblemTimings]) -> dict:
    """A row's fields before its modes: a problem's own (``problem``, ``workload_class``) or a
    graph's ``members``, and the reference ``best_measured_us`` (a graph's: the sum of its
    problems')."""
    head: dict = {"problem": group[0].problem.to_dict()} if len(group) == 1 else {}
    head.update(describe=describe_graph(group), family=family_of(group[0]))
    if len(group) == 1:
        head["workload_class"] = workload_class(group[0].problem)
    else:
        head["members"] = [item.problem.describe() for item in group]
    head["best_measured_us"] = sum(item.best_us for item in group)
    return head


def members_of(row: dict) -> list[str]:
    """The problems a row compiled: a graph's ``members``, or the row's own."""
    return row.get("members", [row["describe"]])


def relative_error(out, reference) -> float:
    """The largest relative error (Frobenius norm) of ``out`` against ``reference``: tensors, or
    tuples of them (a graph's results)."""
    pairs = zip(out, reference) if isinstance(out, tuple) else [(out, reference)]
    return max(float((o.double() - r).norm() / r.norm().clamp(min=1e-30)) for o, r in pairs)


def synchronize() -> None:
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()


def compile_mode(fn, args, options: dict) -> tuple[dict, object]:
    """Compile ``fn`` under ``options``: its compile time (s), relative error against a float64
    reference, DIODE's decision (the last; ``decisions``, all of them, where it made several),
    what Inductor's own autotuning picked where it benchmarked
    (``autotuned``: per benchmarked GEMM the fastest candidate, its time and how many were
    timed), the kernels its compiled function launches (``kernels``, :func:`launched_kernels`),
    and the compiled function. Cold with Inductor's caches off: Dynamo traces each
    ``torch.compile`` of ``fn`` anew (its backend differs), while those compiled before keep
    theirs; a caller resets Dynamo before a problem's first mode."""
    diode_backend.reset_stats()
    compiled = torch.compile(fn, options=options)
    autotuned: list = []
    synchronize()
    start = time.perf_counter()
    codes: list[str] = []
    # Inductor's hook for its output code (a no-op meant to be patched); run_and_get_code, which
    # patches it too, would reset Dynamo and make the modes compiled before compile again
    with observe_autotuning(autotuned.append, lambda *_: None), mock.patch.object(GraphLowering, "save_output_code", codes.append):
        out = compiled(*args)
    synchronize()
    compile_s = time.perf_counter() - start
    error = relative_error(out, fn(*[x.double() for x in args]))
    stats = diode_backend.stats()
    decisions = stats["recent_decisions"]
    decision = decisions[-1] if decisions else None
    counted = stats["counters"]
    return {
        "compile_s": compile_s,
        "relative_error": error,
        "diode": {
            "single_pick": stats["single_pick"],
            "benchmarked_top_k": stats["benchmarked_top_k"],
            "fallbacks": stats["fallbacks"],
            "errors": stats["errors"],
            "decision": decision,
            "cache_hits": counted.get("prediction_cache_hits", 0),
            "cache_misses": counted.get("prediction_cache_misses", 0),
            "measured_decision_hits": counted.get("measured_decision_hits", 0),
            "predicted_decision_hits": counted.get("predicted_decision_hits", 0),
            "measure_failed_candidates": counted.get("measure_failed_candidates", 0),
            "measured_decisions": counted.get("measured_decisions", 0),
            "deferred_measurements": counted.get("deferred_measurements", 0),
            **({"decisions": decisions} if len(decisions) > 1 else {}),
        }
        if options.get("max_autotune_gemm_backends") == "DIODE"
        else None,
        **({"autotuned": [autotune_pick(gemm) for gemm in autotuned]} if autotuned else {}),
        "kernels": compiled_kernels(codes),
    }, compiled


#: a kernel launch in Inductor's output code: an ATen or extern call, a Triton kernel's ``run``,
#: a C++ kernel
_LAUNCH = re.compile(r"\b(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?|\w+(?=\.run\()|cpp_fused_\w+)\(?")
#: the kernels' own sources in the output code (strings), which are not launches
_SOURCE = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"", re.DOTALL)


def launched_kernels(code: str) -> list[str]:
    """The kernels one call of Inductor's output module ``code`` launches, in order: where a
    mode runs slower than the kernel it picked, whether its compiled function launches more."""
    body = _SOURCE.sub("", code)
    body = body[max(body.find("def call("), 0):]
    return _LAUNCH.findall(body.split("def get_args(")[0].split("def benchmark_compiled_module(")[0])


def compiled_kernels(codes: list[str]) -> list[str]:
    """The kernels the compiled function launches, from the output modules one compile saved:
    subgraph choices (decompose-k) benchmarked while the graph was lowered save theirs first,
    the graph's own module comes last."""
    return launched_kernels(codes[-1]) if codes else []


def autotune_pick(gemm) -> dict:
    """An :class:`~diode_backend.inductor.feedback.ObservedGemm`'s fastest candidate (what
    Inductor's autotuning compiles), its time in microseconds, and how many candidates ran."""
    time_us, config = min(zip(gemm.times_us, gemm.configs), key=lambda pair: pair[0])
    return {"pick": config.describe(), "autotune_us": time_us, "timed": len(gemm.configs), "failed": gemm.failed}


def prediction_cache(root: str, mode: str) -> str:
    """The prediction cache folder of ``mode`` in a run whose ``caches.diode`` is ``root``: each
    mode its own, so no mode answers a problem from what another stored for it (a pick kept alone
    is a stored decision); ``diode_warm`` reads the one ``diode_fast`` filled."""
    return str(Path(root) / ("diode_fast" if mode == "diode_warm" else mode))


#: The timing method's settings (``diode_backend.timing.TimingMethod``): more runs than the
#: collector's, every mode in full.
TIMING = {"min_reps": 20, "max_reps": 200, "budget_us": 20000.0, "slow_ratio": 0.0}
#: Each row's modes are timed together this many times, a mode's runtime the median of its
#: rounds' medians: a mode can be timed far slower in one round than in the others
#: (benchmarks/results/h100_e2e_probes_2026-11-24/), and in a single round such a row stands
#: in the run's worst.
ROUNDS = 3


def measure_row(
    fn, args, modes: list[str], timer, caches: str, options: dict | None = None, seeds: dict | None = None
) -> dict[str, dict]:
    """Every mode of one problem: compiled one after the other (each DIODE mode with its own
    prediction cache under ``caches``), then timed together, their runs interleaved, in
    :data:`ROUNDS` rounds (``rounds_us``: each round's median). A mode's ``torch.compile``
    options are ``options[mode]`` (default :data:`MODES`); ``seeds[mode]``, where given, runs
    with the mode's prediction cache set, before it compiles. A mode that fails to compile gets
    an ``error`` and is not timed."""
    figures, compiled = {}, {}
    torch._dynamo.reset()
    for mode in modes:
        os.environ["DIODE_CACHE_DIR"] = prediction_cache(caches, mode)  # read at each lookup
        try:
            if seeds and mode in seeds:
                seeds[mode]()
            figures[mode], compiled[mode] = compile_mode(fn, args, options[mode] if options else mode_options(mode))
        except Exception as err:  # one failing compile must not lose the other modes
            figures[mode] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
    launches = [lambda f=f: f(*args) for f in compiled.values()]
    for mode, timing in zip(compiled, time_rounds(launches, timer)):
        figures[mode].update(timing)
    return figures


def time_rounds(launches: list, timer) -> list[dict]:
    """``launches`` timed together by ``timer`` in :data:`ROUNDS` rounds, their runs interleaved:
    per launch its ``runtime_us`` (the median of its rounds' medians), ``rounds_us`` (each
    round's median), ``runs`` (how many timed runs it kept in all), ``starved_runs`` (each
    round's runs the timer left out because the GPU may have waited for the host in them) and
    ``host_us`` (each round's host time to issue it, the timer's ``host_us``, which sizes the
    event timer's sleep before each of its runs: beside ``rounds_us`` it shows whether a
    launch's time follows its sleep)."""
    rounds, starved, host = [], [], []
    for _ in range(ROUNDS if launches else 0):
        rounds.append(timer.time(launches))
        starved.append(list(timer.starved))
        host.append(list(timer.host_us))
    timings = []
    for i in range(len(launches)):
        medians = [statistics.median(samples[i]) for samples in rounds]
        timings.append({
            "runtime_us": statistics.median(medians), "rounds_us": medians, "runs": sum(len(s[i]) for s in rounds),
            "starved_runs": [counts[i] for counts in starved], "host_us": [times[i] for times in host],
        })  # fmt: skip
    return timings


def set_tf32(problem: GemmProblem) -> None:
    """TF32 as the problem was measured, through the API that sets every backend alike: setting
    only ``torch.backends.cuda.matmul.fp32_precision`` makes Inductor's autotuning raise
    (``torch.get_float32_matmul_precision()``: "mix of the legacy and new APIs")."""
    torch.set_float32_matmul_precision("high" if problem.allow_tf32 else "highest")


def rank_modes(figures: dict[str, dict], best_us: float) -> None:
    """Each timed mode's ``vs_best`` (over the dataset's fastest candidate, ``best_us``),
    ``vs_best_mode`` (over the row's fastest mode, :data:`REFERENCES` left out) and, where
    :data:`BEST_KNOWN` compiled that candidate, ``vs_best_known`` (over its runtime)."""
    timed = {mode: f for mode, f in figures.items() if "runtime_us" in f}
    ranked = [f["runtime_us"] for mode, f in timed.items() if mode not in REFERENCES]
    known = timed.get(BEST_KNOWN)
    for f in timed.values():
        f["vs_best"] = f["runtime_us"] / best_us
        if ranked:
            f["vs_best_mode"] = f["runtime_us"] / min(ranked)
        if known is not None and known.get("applied"):
            f["vs_best_known"] = f["runtime_us"] / known["runtime_us"]


def note_best_known(figures: dict[str, dict], gemms: int = 1) -> None:
    """Whether :data:`BEST_KNOWN`'s compile of ``gemms`` GEMMs used the decisions
    :func:`seed_best_known` stored (``applied``; not where a candidate is not among those
    Inductor offers now)."""
    known = figures.get(BEST_KNOWN)
    if known is not None and "error" not in known:
        known["applied"] = known["diode"]["measured_decision_hits"] >= gemms


def seed_best_known(item: ProblemTimings, device: str) -> None:
    """Store the dataset's fastest candidate of ``item`` as DIODE's measured decision for its
    GEMM, under :data:`BEST_KNOWN`'s options, in the prediction cache set now."""
    fastest = min(range(len(item.times_us)), key=item.times_us.__getitem__)
    hardware = registry.detect_hardware(device)
    measured.remember(
        measured.MeasuredDecision(item.problem, hardware, (item.configs[fastest],), (item.times_us[fastest],), space_of(BEST_KNOWN))
    )


def space_of(mode: str) -> str:
    """The candidate space (a stored decision's key part) DIODE derives under ``mode``'s options."""
    from torch._inductor import config

    with config.patch(mode_options(mode)):
        return candidate_set(current_options())


def measured_before(problem: GemmProblem, device: str, caches: str) -> str | None:
    """The winner of the measured decision ``diode_warm``'s prediction cache holds for
    ``problem`` (as the dataset states it) before the warm compile, or None. Beside the warm
    compile's own lookup: where DIODE then finds no stored decision though this found one, the
    lookup missed (another problem, space or hardware derived at compile time), not the store."""
    os.environ["DIODE_CACHE_DIR"] = prediction_cache(caches, "diode_warm")
    found = measured.lookup(problem, registry.detect_hardware(device), space_of("diode_warm"))
    return found.winner.describe() if found is not None else None


def one_part(result: dict, path: str, parser: argparse.ArgumentParser) -> dict:
    """``result`` as one part's file: a file ``e2e_merge.py`` made of one part (a run resumed
    across GPU calls, merged after each) gets that part's own fields back; a file of several
    parts cannot be continued by one process."""
    parts = result.get("parts")
    if parts is None:
        return result
    if len(parts) != 1:
        parser.error(f"{path} joins {len(parts)} parts; resume each part's own file (parts.tgz of the call that wrote it)")
    return {**result, **parts[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+", help="dataset(s) with validation problems")
    parser.add_argument("--problems", type=int, help="how many validation problems (default 32; all of --families)")
    parser.add_argument(
        "--families",
        default="",
        help="comma-separated model families whose validation problems to take, or held-out "
        "(the families of trained_models/data/h100/problems/zoo-holdout.json), or stopping (the problems "
        "of the families the model stopped its training early on, where defaults may be chosen)",
    )
    parser.add_argument(
        "--ops",
        default="",
        help="comma-separated ops to take (default all). Take only what the model covers: for a "
        "problem it cannot score, DIODE alone benchmarks the whole EXHAUSTIVE space",
    )
    parser.add_argument("--dtypes", default="", help="comma-separated input dtypes to take (default all)")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated problems to take, as a results row's describe names them "
        "(\"addmm 5x1x4392 float32 row/col bias=row tf32\"), among those the other options take",
    )
    parser.add_argument(
        "--graph-size",
        type=int,
        default=1,
        help="compile up to this many problems of one family (and float32 precision) as one graph, as a model "
        "holds its GEMMs (default 1: each GEMM a graph of its own; a warm run takes the earlier run's graphs)",
    )
    parser.add_argument(
        "--modes",
        help=f"comma-separated, of {', '.join(MODES)} (default {','.join(DEFAULT_MODES)}; with --warm-from {','.join(WARM_MODES)})",
    )
    parser.add_argument(
        "--warm-from",
        metavar="FILE",
        help="an earlier run's results (with diode_fast rows): compile its complete rows' problems again with "
        "its DIODE prediction cache (the problem selection options are ignored)",
    )
    parser.add_argument(
        "--kernel-cache",
        metavar="DIR",
        help="with --warm-from: also run the warm pass twice, each in a fresh process, with Inductor's compiled-kernel "
        "and Triton's caches kept in DIR (the FX-graph and autotune caches off), and report the second pass beside "
        "the all-caches-off figures",
    )
    parser.add_argument("--kernel-caches-kept", action="store_true", help=argparse.SUPPRESS)  # a --kernel-cache pass
    parser.add_argument("--device", default="cuda", help="where the GEMMs run (default cuda; cpu for a test)")
    parser.add_argument("--budget-s", type=float, default=480.0,
                        help="end by about this many seconds: start no problem that the slowest so far would take past it")
    parser.add_argument("--out", required=True, help="JSON file to write (rewritten after every problem)")
    parser.add_argument("--resume", action="store_true", help="keep the complete rows already in --out and skip their problems")
    parser.add_argument(
        "--shard",
        default="0/1",
        metavar="I/N",
        help="take every Nth problem of the run order from the Ith, 0-based (one of N runs in parallel; "
        "benchmarks/e2e_merge.py joins their files)",
    )
    args = parser.parse_args(argv)
    shard = parse_shard(args.shard)
    if shard is None:
        parser.error(f"--shard {args.shard!r}: give I/N with 0 <= I < N, e.g. --shard 0/4")
    if args.warm_from and shard != (0, 1):
        parser.error("--shard with --warm-from: warm from the shard's own results file instead")
    modes = [m for m in (args.modes or ",".join(WARM_MODES if args.warm_from else DEFAULT_MODES)).split(",") if m]
    for mode in modes:
        try:
            mode_options(mode)
        except ValueError as err:
            parser.error(f"--modes: {err}")
    cold_rows, caches = {}, os.environ["DIODE_CACHE_DIR"]
    if args.warm_from:
        cold = read_json(args.warm_from)
        cache = cold.get("caches", {}).get("diode")
        if not cache or not Path(cache).is_dir():
            parser.error(f"--warm-from: {args.warm_from} names no DIODE cache folder on this machine ({cache})")
        caches = cache
        cold_rows = {
            row["describe"]: row for row in cold["rows"]
            if "decision" in ((row["modes"].get("diode_fast") or {}).get("diode") or {})
        }  # fmt: skip
        args.graph_size = cold.get("graph_size", 1)
        if not cold_rows:
            parser.error(f"--warm-from: {args.warm_from} has no diode_fast row with a decision")
    elif "diode_warm" in modes:
        parser.error("mode diode_warm needs --warm-from")
    if args.kernel_cache and not args.warm_from:
        parser.error("--kernel-cache needs --warm-from")
    if args.graph_size < 1:
        parser.error(f"--graph-size {args.graph_size}: give 1 or more")
    if args.kernel_cache and args.resume:
        parser.error("--kernel-cache runs every pass whole: no --resume")

    from diode_backend.offline.collect.environment import environment, hardware_of
    from diode_backend.timing import HostTimer, Timer, TimingMethod

    from torch._inductor import config

    if args.kernel_caches_kept:
        cache_settings = keep_kernel_caches()
    else:
        config.force_disable_caches = True  # every compile cold (not a torch.compile option)
        cache_settings = {"torch._inductor.config": {"force_disable_caches": True}}
    cuda = torch.device(args.device).type == "cuda"
    started = time.monotonic()
    dataset = load_dataset(args.data)
    ops, dtypes = set(filter(None, args.ops.split(","))), set(filter(None, args.dtypes.split(",")))
    try:
        candidates, families = problems_of(dataset, args.families)
    except ValueError as err:
        parser.error(f"--families {args.families}: {err}")
    candidates = [
        p for p in candidates if (not ops or p.problem.op in ops) and (not dtypes or p.problem.dtype in dtypes)
    ]  # fmt: skip
    if args.only:
        named = set(args.only.split(","))
        missing = named - {p.problem.describe() for p in candidates}
        if missing:
            parser.error(f"--only: no such problem among those taken: {sorted(missing)[0]!r}")
        candidates = [p for p in candidates if p.problem.describe() in named]
    if cold_rows:
        members = {member for row in cold_rows.values() for member in members_of(row)}
        candidates = [p for p in dataset.split("validation") if p.problem.describe() in members]
    count = args.problems if args.problems is not None else (len(candidates) if families or cold_rows else 32)
    chosen = choose(candidates, count)
    method = TimingMethod(**TIMING, replay="stream" if cuda else "host")
    timer = Timer(method) if cuda else HostTimer(method)
    result = {
        "benchmark": "e2e_validation",
        "method": __doc__.split("Method: ")[1].split("\n\n")[0].replace("\n", " "),
        "timing": method.describe(),
        "environment": environment(torch.cuda.current_device() if cuda else None),
        "hardware": hardware_of(args.device).to_dict(),
        "dataset_hardware": dataset.hardware.key,
        "modes": {mode: mode_options(mode) for mode in modes},
        "caches": {
            "diode": caches,
            "triton": os.environ["TRITON_CACHE_DIR"],
            "inductor": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
            "settings": cache_settings,
        },
        "warm_from": args.warm_from,
        "shard": args.shard,
        "graph_size": args.graph_size,
        "rows": [],
    }
    if args.resume and Path(args.out).exists():
        earlier = one_part(read_json(args.out), args.out, parser)
        if earlier.get("modes") != result["modes"]:
            parser.error(f"{args.out} was written with other --modes ({', '.join(earlier.get('modes', {}))})")
        if earlier.get("timing") != result["timing"]:
            parser.error(f"{args.out} was timed by another method (TimingMethod); start a new --out")
        if earlier.get("graph_size", 1) != args.graph_size:
            parser.error(f"{args.out} compiled graphs of up to {earlier.get('graph_size', 1)} GEMMs, not {args.graph_size}")
        if parse_shard(earlier.get("shard", "0/1")) != shard:
            parser.error(f"{args.out} holds shard {earlier.get('shard', '0/1')} of its run, not {args.shard}")
        # a row with a failed mode is measured again
        result["rows"] = [row for row in earlier["rows"] if not any("error" in f for f in row["modes"].values())]
        result["earlier_calls"] = earlier.get("earlier_calls", []) + [
            {"environment": earlier["environment"], "elapsed_s": earlier.get("elapsed_s"), "caches": earlier.get("caches")}
        ]
    done = {row["describe"] for row in result["rows"]}
    if cold_rows:  # the earlier run's graphs as they were
        by_problem = {item.problem.describe(): item for item in chosen}
        groups = [[by_problem[m] for m in members_of(row)] for row in cold_rows.values()]
    else:
        groups = graph_groups(run_order(chosen), args.graph_size)[shard[0] :: shard[1]]
    groups = [group for group in groups if describe_graph(group) not in done]
    result["summary"] = summarize(result["rows"], modes)
    if cuda:
        result["compile_workers_warmed"] = warm_compile_workers(args.device)
    warm_fn, warm_args = make_case(GemmProblem("mm", 192, 320, 256), args.device)
    measure_row(warm_fn, warm_args, modes, timer, caches)  # one-time costs out of the rows
    slowest_row_s = 0.0
    for group in groups:
        row_started = time.monotonic()
        if out_of_budget(row_started - started, slowest_row_s, args.budget_s):
            result["stopped_early"] = f"budget of {args.budget_s:.0f} s reached"
            break
        problems = [item.problem for item in group]
        set_tf32(problems[0])
        fn, inputs = make_graph(problems, args.device)
        order = compile_order(modes, len(result["rows"])) if cold_rows else modes
        stored = [measured_before(problem, args.device, caches) for problem in problems] if cold_rows else None
        row = row_head(group)
        row["modes"] = measure_row(
            fn, inputs, order, timer, caches, seeds={BEST_KNOWN: lambda: [seed_best_known(item, args.device) for item in group]}
        )
        if cold_rows:
            row["compile_order"] = order
        note_best_known(row["modes"], len(group))
        rank_modes(row["modes"], row["best_measured_us"])
        if cold_rows:
            before = stored[0] if len(group) == 1 else stored
            row["warm"] = {**warm_comparison(cold_rows[row["describe"]], row), "measured_before": before}
        result["rows"].append(row)
        slowest_row_s = max(slowest_row_s, time.monotonic() - row_started)
        result["summary"] = summarize(result["rows"], modes)
        result["elapsed_s"] = time.monotonic() - started
        write_result(args.out, result)
        brief = "  ".join(
            f"{m}: {f['vs_best']:.3f}x {f['compile_s']:.1f}s" if "vs_best" in f else f"{m}: {f['error'][:60]}"
            for m, f in row["modes"].items()
        )
        print(f"[{time.monotonic() - started:5.0f}s] {row['describe']}  {brief}", flush=True)
    if args.kernel_cache:
        first, second = kernel_cache_passes(
            Path(__file__).resolve(), sys.argv[1:] if argv is None else argv, Path(args.kernel_cache), Path(args.out)
        )
        add_kernel_cache_figures(result, second, Path(args.kernel_cache), first, modes)
        write_result(args.out, result)
    print(json.dumps(result.get("summary", {}), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
