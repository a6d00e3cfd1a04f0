"""One op's DIODE decision as the stats and the log record it: what DIODE predicted, kept and,
where it measured, timed; counted once and logged in one line at INFO on ``diode_backend``
(:meth:`Decision.conclude`), whether DIODE measured at the op's lowering or when Inductor's
scheduler asked for the timings."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import counters
from ..logs import log
from .context import GemmContext
from .group_configs import MARK, CandidateMark, FallbackMark
from .measure import Measurement


@dataclass(frozen=True)
class Decision:
    """What DIODE decided for one op before any measurement: its predicted ``best``, the
    ``confidence`` in it, how many ``candidates`` it saw, the choices it ``kept`` (for Inductor
    or to measure), the ``fallback`` reason of the selection and the kept groups' ``marks``."""

    context: GemmContext
    best: CandidateMark
    confidence: float | None
    candidates: int
    kept: tuple[Any, ...]
    fallback: str | None
    marks: tuple[CandidateMark, ...]

    def conclude(self, measurement: Measurement | None) -> list[Any]:
        """Count and log the decision, given DIODE's ``measurement`` of the kept choices (None:
        not measured): the choices Inductor gets, the measured winner alone where there is one."""
        kept, context = self.kept, self.context
        winner = mark_of(kept[measurement.winner]) if measurement is not None and measurement.winner is not None else None
        picked = winner if isinstance(winner, CandidateMark) else self.best  # the measured winner, else the predicted best
        counters.record_decision(
            model=context.entry.name,
            kind=picked.config.kind,
            candidates=self.candidates,
            kept=len(kept),
            confidence=self.confidence,
            problem=context.problem.describe(),
            pick=picked.config.describe(),
            measured_us=measured_times(kept, measurement) if measurement is not None else None,
        )
        if log.isEnabledFor(logging.INFO):
            log.info("%s", decision_line(self, measurement))
        if measurement is not None and measurement.winner is not None:
            return [kept[measurement.winner]]
        return list(kept)


def measured_times(kept: Sequence[Any], measurement: Measurement) -> dict[str, float | None]:
    """Each measured choice's time by :func:`described`; None for a choice that failed."""
    return {described(c): (t if math.isfinite(t) else None) for c, t in zip(kept, measurement.times_us)}


def described(choice: Any) -> str:
    """A choice as logs and stats name it: DIODE's config, else Inductor's name for it."""
    mark = mark_of(choice)
    return mark.config.describe() if isinstance(mark, CandidateMark) else str(getattr(choice, "name", choice))


def decision_line(decision: Decision, measurement: Measurement | None) -> str:
    """One GEMM's decision for the log: problem, pick, whether anything is measured, and why."""
    context, best, kept, candidates = decision.context, decision.best, decision.kept, decision.candidates
    sure = "none" if decision.confidence is None else f"{decision.confidence:.2f}"
    if decision.fallback == "low_confidence":
        sure += f", under the threshold {context.options.diode_confidence_threshold:g}"
    source = "from the prediction cache" if all(m.from_cache for m in decision.marks) else "predicted"
    unscored = sum(math.isnan(m.time_us) for m in decision.marks)
    if unscored:  # candidates the model knows nothing of: never kept alone, measured when DIODE measures
        source += f"; {unscored} unscored"
    if len(kept) == 1:
        what = f"{best.config.describe()} alone of {count(candidates)}, nothing benchmarked"
    elif measurement is not None and measurement.winner is not None:
        what = (
            f"DIODE measured {len(kept)} of {count(candidates)} ({measurement.failed} failed), fastest {described(kept[measurement.winner])} "
            f"at {measurement.times_us[measurement.winner]:.1f} us, predicted best {best.config.describe()}"
        )
    else:
        what = f"Inductor benchmarks {len(kept)} of {count(candidates)}, predicted best {best.config.describe()}"
    return f"{context.problem.describe()}: {what} (confidence {sure}; model {context.entry.name}, {source})"


def count(candidates: int) -> str:
    """``candidates`` as the log says it: "1 candidate", "7 candidates"."""
    return f"{candidates} candidate" + ("" if candidates == 1 else "s")


def mark_of(choice: Any) -> CandidateMark | FallbackMark | None:
    """Step 1's mark on a choice (:mod:`.group_configs`); None on a choice DIODE never saw."""
    annotations = getattr(choice, "annotations", None)
    return annotations.get(MARK) if isinstance(annotations, dict) else None
