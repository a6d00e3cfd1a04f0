"""Watch the timings Inductor measures while a program compiles with max-autotune.

Inductor calls its feedback savers (``select_algorithm.add_feedback_saver``, the same on torch
2.11 and 2.13) after it benchmarks the choices of an op, with each choice's time in
milliseconds. :func:`observe_autotuning` installs one saver for the ``with`` block and hands
every GEMM it sees to a callback as an :class:`ObservedGemm` (microseconds): the problem as
DIODE describes it inside ``torch.compile`` (:mod:`.convert`) and every candidate, whatever its
kind (Triton templates, ATen, C++ templates on CPU, ...). ``diode collect feedback``
(:mod:`diode_backend.offline.collect.feedback`) turns them into dataset records.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import counters
from ..problem import GemmProblem, KernelConfig
from .convert import UnsupportedProblem, config_from_choice, problem_from_inputs


@dataclass(frozen=True)
class ObservedGemm:
    """One GEMM Inductor benchmarked: its candidates that ran and their times (microseconds),
    how many did not run (``failed``), and Inductor's choice object of each candidate."""

    problem: GemmProblem
    configs: tuple[KernelConfig, ...]
    times_us: tuple[float, ...]
    failed: int = 0
    choices: dict[KernelConfig, Any] = field(default_factory=dict, compare=False, repr=False)


@contextlib.contextmanager
def observe_autotuning(
    on_gemm: Callable[[ObservedGemm], None], on_skip: Callable[[str, str], None]
) -> Iterator[None]:
    """Call ``on_gemm`` for every GEMM Inductor autotunes inside the block, and
    ``on_skip(op_name, why)`` for each op it benchmarks that DIODE cannot describe.

    Inductor's FX-graph and autotuning caches are switched off inside the block, so that each
    compiled GEMM is benchmarked in this process rather than replayed from disk; a function
    that Dynamo already compiled in this process is not compiled again (``torch._dynamo.reset()``
    first if needed). Use with ``mode="max-autotune"`` (or ``max_autotune_gemm=True``).
    """
    from torch._inductor import config
    from torch._inductor.select_algorithm import get_algorithm_selector_cache

    def save(timings: dict, name: str, input_nodes: list, choices: list, *_: Any) -> None:
        # Inductor passes {choice: milliseconds}, the op name, its input IR nodes and the
        # choices (then a profiling thunk and precompile times, unused)
        try:
            gemm = _describe(timings, name, input_nodes, choices)
        except UnsupportedProblem as err:
            on_skip(name, str(err))
            return
        except Exception as err:  # never let collection break the user's compile
            counters.record_error("feedback", err)
            on_skip(name, f"{type(err).__name__}: {err}")
            return
        on_gemm(gemm)

    cache = get_algorithm_selector_cache()
    cache.add_feedback_saver(save)
    try:
        with config.patch(fx_graph_cache=False, autotune_local_cache=False):
            yield
    finally:
        # Inductor offers only clear_feedback_savers(), which would drop other savers too
        if save in cache.feedback_saver_fns:
            cache.feedback_saver_fns.remove(save)


def _describe(timings: dict, name: str, input_nodes: list, choices: list) -> ObservedGemm:
    from torch._inductor.kernel_inputs import MMKernelInputs

    if len(input_nodes) < 2:
        raise UnsupportedProblem("unsupported_op", f"{name} has {len(input_nodes)} inputs")
    inputs = MMKernelInputs(list(input_nodes), out_dtype=choices[0].layout.dtype)
    problem = problem_from_inputs(inputs, name)
    configs, times, failed, by_config = [], [], 0, {}
    for choice, ms in timings.items():
        if not 0.0 < ms < math.inf:  # did not run; a shard holds finite positive times only
            failed += 1
            continue
        configs.append(_config_of(choice))
        times.append(ms * 1000.0)
        by_config[configs[-1]] = choice
    return ObservedGemm(problem, tuple(configs), tuple(times), failed, by_config)


def choice_launcher(choice: Any, inputs: Sequence[Any], out: Any) -> Callable[[], Any] | None:
    """A launch of the kernel Inductor compiled for ``choice`` on ``inputs`` (in the order of the
    op's input nodes, laid out as at compile time) writing ``out``: what Inductor's benchmarker
    runs. ``None`` for choices that transform their inputs first (C++ templates on packed weights)."""
    if type(choice).__name__ == "ExternKernelCaller":
        return functools.partial(choice.to_callable(), *inputs, out=out)
    bmreq = getattr(choice, "bmreq", None)
    if type(choice).__name__ == "TritonTemplateCaller" and bmreq is not None:
        return bmreq.make_run_fn(*inputs, out=out)
    return None


def _config_of(choice: Any) -> KernelConfig:
    """A choice as a KernelConfig: template choices by their template uid and parameters, the
    others (C++ templates, subgraphs) by kind and name."""
    ktc = getattr(choice, "annotations", {}).get("ktc")
    if ktc is not None:
        return config_from_choice(ktc.template.uid, ktc.params.to_kwargs())
    name = str(getattr(choice, "name", type(choice).__name__))
    kind = "cpp" if name.startswith("cpp") else type(choice).__name__.removesuffix("Caller").lower()
    return KernelConfig(kind=kind, template=f"{kind}::{name}")
