"""``diode collect feedback``'s recorder: the GEMMs Inductor autotunes while a real program
compiles (:func:`~diode_backend.inductor.feedback.observe_autotuning`) as dataset records."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ... import counters
from ...inductor.feedback import ObservedGemm, observe_autotuning
from ...problem import GemmProblem, KernelConfig
from ..dataset import ProblemTimings


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

    def add(self, gemm: ObservedGemm) -> None:
        item = ProblemTimings(
            problem=gemm.problem,
            configs=gemm.configs,
            times_us=gemm.times_us,
            split=self.split,
            generator="feedback",
            source="feedback",
            space="observed",
            failed=gemm.failed,
        )
        if self.choices is not None:
            self.choices.setdefault(gemm.problem, {}).update(gemm.choices)
        self.problems.append(item)
        if self.sink is not None:
            try:
                self.sink(item)
            except Exception as err:  # a failed write: the writer retries at its next flush
                counters.record_error("feedback_sink", err)

    def skip(self, name: str, why: str) -> None:
        self.skipped.append((name, why))


@contextlib.contextmanager
def record_inductor_timings(
    split: str = "train", keep_choices: bool = False, sink: Callable[[ProblemTimings], None] | None = None
) -> Iterator[FeedbackRecord]:
    """Record every GEMM that Inductor autotunes inside the block (``keep_choices``: also keep
    Inductor's choice objects, for :func:`~diode_backend.inductor.feedback.choice_launcher`;
    ``sink``: also hand each problem to it as it is recorded, e.g. ``ShardWriter.add``). Inductor's
    caches are off inside the block (see ``observe_autotuning``). Use with ``mode="max-autotune"``::

        with record_inductor_timings() as record:
            torch.compile(model, mode="max-autotune-no-cudagraphs")(x)
        # record.problems: one ProblemTimings per GEMM (``diode collect feedback`` saves them)
    """
    record = FeedbackRecord(split=split, choices={} if keep_choices else None, sink=sink)
    with observe_autotuning(record.add, record.skip):
        yield record
