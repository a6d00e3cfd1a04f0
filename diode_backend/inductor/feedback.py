"""Collect the timings Inductor measures while a real program compiles with max-autotune.

Inductor calls its feedback savers (``select_algorithm.add_feedback_saver``, the same on torch
2.11 and 2.13) after it benchmarks the choices of an op, with each choice's time in
milliseconds. :func:`record_inductor_timings` installs one saver for the ``with`` block and turns
every GEMM it sees into a :class:`~diode_backend.offline.dataset.ProblemTimings` (microseconds): the
problem described as DIODE describes it inside ``torch.compile`` (:mod:`.convert`), and every
candidate, whatever its kind (Triton templates, ATen, C++ templates on CPU, ...).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import counters
from ..offline.dataset import ProblemTimings
from ..problem import GemmProblem, KernelConfig
from .convert import UnsupportedProblem, config_from_choice, problem_from_inputs


@dataclass
class FeedbackRecord:
    """What a ``with record_inductor_timings()`` block saw: the GEMMs it could describe
    (``problems``) and, for the others, the op name and why not (``skipped``)."""

    split: str = "train"
    problems: list[ProblemTimings] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: with ``keep_choices``: each problem's Inductor choices by config, to run them again
    choices: dict[GemmProblem, dict[KernelConfig, Any]] | None = None
    #: called with each problem as it is recorded (``ShardWriter.add``: kept on disk as it goes)
    sink: Callable[[ProblemTimings], None] | None = None

    def save(self, timings: dict, name: str, input_nodes: list, choices: list, *_: Any) -> None:
        """The feedback saver: Inductor passes ``{choice: milliseconds}``, the op name, its
        input IR nodes and the choices (then a profiling thunk and precompile times, unused)."""
        try:
            item = self._describe(timings, name, input_nodes, choices)
        except UnsupportedProblem as err:
            self.skipped.append((name, str(err)))
            return
        except Exception as err:  # never let collection break the user's compile
            counters.record_error("feedback", err)
            self.skipped.append((name, f"{type(err).__name__}: {err}"))
            return
        self.problems.append(item)
        if self.sink is not None:
            try:
                self.sink(item)
            except Exception as err:  # a failed write: the writer retries at its next flush
                counters.record_error("feedback_sink", err)

    def _describe(self, timings: dict, name: str, input_nodes: list, choices: list) -> ProblemTimings:
        from torch._inductor.kernel_inputs import MMKernelInputs

        if len(input_nodes) < 2:
            raise UnsupportedProblem("unsupported_op", f"{name} has {len(input_nodes)} inputs")
        inputs = MMKernelInputs(list(input_nodes), out_dtype=choices[0].layout.dtype)
        problem = problem_from_inputs(inputs, name)
        configs, times, failed = [], [], 0
        for choice, ms in timings.items():
            if not 0.0 < ms < math.inf:  # did not run; a shard holds finite positive times only
                failed += 1
                continue
            configs.append(_config_of(choice))
            times.append(ms * 1000.0)
            if self.choices is not None:
                self.choices.setdefault(problem, {})[configs[-1]] = choice
        return ProblemTimings(
            problem=problem,
            configs=tuple(configs),
            times_us=tuple(times),
            split=self.split,
            generator="feedback",
            source="feedback",
            space="observed",
            failed=failed,
        )


@contextlib.contextmanager
def record_inductor_timings(
    split: str = "train", keep_choices: bool = False, sink: Callable[[ProblemTimings], None] | None = None
) -> Iterator[FeedbackRecord]:
    """Record every GEMM that Inductor autotunes inside the block (``keep_choices``: also keep
    Inductor's choice objects, for :func:`choice_launcher`; ``sink``: also hand each problem
    to it as it is recorded, e.g. ``ShardWriter.add``).

    Inductor's FX-graph and autotuning caches are switched off inside the block, so that each
    compiled GEMM is benchmarked in this process rather than replayed from disk; a function
    that Dynamo already compiled in this process is not compiled again (``torch._dynamo.reset()``
    first if needed). Use with ``mode="max-autotune"`` (or ``max_autotune_gemm=True``)::

        with record_inductor_timings() as record:
            torch.compile(model, mode="max-autotune-no-cudagraphs")(x)
        # record.problems: one ProblemTimings per GEMM (``diode collect feedback`` saves them)
    """
    from torch._inductor import config
    from torch._inductor.select_algorithm import get_algorithm_selector_cache

    record = FeedbackRecord(split=split, choices={} if keep_choices else None, sink=sink)
    cache = get_algorithm_selector_cache()
    cache.add_feedback_saver(record.save)
    try:
        with config.patch(fx_graph_cache=False, autotune_local_cache=False):
            yield record
    finally:
        # Inductor offers only clear_feedback_savers(), which would drop other savers too
        if record.save in cache.feedback_saver_fns:
            cache.feedback_saver_fns.remove(record.save)


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
