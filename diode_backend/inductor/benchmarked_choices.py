"""Step 2 of a DIODE decision, as Inductor's autotuner receives an op's full choice list (several
template groups for addmm): which choices Inductor benchmarks.

It ranks the choices step 1 (:mod:`.group_configs`) kept and marked, all groups together, and
keeps one (nothing is benchmarked) or the top-k; choices DIODE never saw (CPP, CUTLASS, ...)
pass through. Each op is counted once in the stats and logged in one line at INFO on
``diode_backend``, here.

torch 2.13 has ``AlgorithmSelectorCache.add_preprocessing_fn`` for this, torch 2.11 does not;
wrapping ``AlgorithmSelectorCache.__call__`` works on both, so it is the one mechanism used.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any

from .. import counters
from ..logs import log
from ..options import DiodeOptionError
from ..policy import Ranking, combined_confidence, rank_candidates, select_candidates
from ..scorer import Prediction
from .group_configs import MARK, CandidateMark, FallbackMark


def patch_autotuner(select_algorithm: ModuleType) -> None:
    """Wrap ``AlgorithmSelectorCache.__call__`` (idempotent); choices DIODE did not mark pass
    through untouched."""
    cls = select_algorithm.AlgorithmSelectorCache
    original = cls.__call__
    if getattr(original, "_diode_wrapped", False):
        return

    @functools.wraps(original)
    def __call__(self, name, choices, *args, **kwargs):
        choices = _select(choices)
        return original(self, name, choices, *args, **kwargs)

    __call__._diode_wrapped = True
    cls.__call__ = __call__


def _select(choices):
    from torch._inductor import config

    from .context import diode_requested

    try:
        if diode_requested() and not _choices_class_has_diode():
            counters.record_fallback("choices_class_override")
            counters.warn_once(
                "choices_class_override",
                "DIODE is in max_autotune_gemm_backends but config.inductor_choices_class does not "
                "include DIODE, so Inductor autotunes as usual. Wrap your class: "
                "config.inductor_choices_class = diode_backend.with_diode(YourChoices)",
            )
            return choices
        return choices_to_benchmark(choices)
    except (DiodeOptionError, KeyboardInterrupt):
        raise
    except BaseException as err:  # SystemExit from a plugin's scorer too
        if config.diode_strict:
            raise
        counters.record_error("final_selection", err)
        return choices


def _choices_class_has_diode() -> bool:
    from torch._inductor.virtualized import V

    from .choices import DiodeChoicesMixin

    return isinstance(V.choices, DiodeChoicesMixin)



def choices_to_benchmark(choices: Sequence[Any]) -> list[Any]:
    """The op's whole choice list -> the choices Inductor benchmarks (one: none)."""
    marks = [_mark_of(choice) for choice in choices]
    fallback = next((m for m in marks if isinstance(m, FallbackMark)), None)
    if fallback is not None:
        counters.record_fallback(fallback.reason)
        what = "its own ATen kernel, nothing benchmarked" if fallback.kept_own_aten else f"Inductor benchmarks {_count(len(choices))}"
        log.info("%s: not ranked by DIODE (%s): %s", fallback.problem, fallback.reason, what)
        return list(choices)
    marked = [i for i, mark in enumerate(marks) if isinstance(mark, CandidateMark)]
    if not marked:
        return list(choices)
    candidate_marks: list[CandidateMark] = [marks[i] for i in marked]
    context = candidate_marks[0].context
    ranking = _union_ranking(candidate_marks)
    selection = select_candidates(ranking, context.options)
    if selection.fallback:
        counters.record_fallback(selection.fallback)
    keep = {marked[i] for i in selection.keep}
    kept = [c for i, c in enumerate(choices) if i in keep or marks[i] is None]
    best = candidate_marks[ranking.order[0]] if ranking.order else candidate_marks[0]
    groups = {m.group: m.group_size for m in candidate_marks}
    candidates = sum(groups.values()) + sum(m is None for m in marks)
    counters.record_decision(
        model=context.entry.name,
        kind=best.config.kind,
        candidates=candidates,
        kept=len(kept),
        confidence=ranking.confidence,
        problem=context.problem.describe(),
        pick=best.config.describe(),
    )
    if log.isEnabledFor(logging.INFO):
        log.info("%s", _decision_line(context, best, ranking.confidence, candidates, len(kept), selection.fallback, candidate_marks))
    return kept


def _decision_line(
    context: GemmContext, best: CandidateMark, confidence: float | None, candidates: int, kept: int,
    fallback: str | None, marks: list[CandidateMark],
) -> str:  # fmt: skip
    """One GEMM's decision for the log: problem, pick, whether anything is benchmarked, and why."""
    sure = "none" if confidence is None else f"{confidence:.2f}"
    if fallback == "low_confidence":
        sure += f", under the threshold {context.options.diode_confidence_threshold:g}"
    source = "from the prediction cache" if all(m.from_cache for m in marks) else "predicted"
    if kept == 1:
        what = f"{best.config.describe()} alone of {_count(candidates)}, nothing benchmarked"
    else:
        what = f"Inductor benchmarks {kept} of {_count(candidates)}, predicted best {best.config.describe()}"
    return f"{context.problem.describe()}: {what} (confidence {sure}; model {context.entry.name}, {source})"


def _count(candidates: int) -> str:
    return f"{candidates} candidate" + ("" if candidates == 1 else "s")


def _union_ranking(marks: list[CandidateMark]) -> Ranking:
    ranking = Ranking.of(Prediction(tuple(m.time_us for m in marks)))
    if not ranking.order:
        return ranking
    best = marks[ranking.order[0]]
    if len({m.group for m in marks}) == 1:
        confidence = best.group_confidence
    else:
        # The pick was best in its group; how sure is the scorer it also beats the other winners?
        context = best.context
        union = rank_candidates(context.scorer, context.problem, [m.config for m in marks], context.hardware)
        confidence = combined_confidence(best.group_confidence, union.confidence)
    return replace(ranking, confidence=confidence)


def _mark_of(choice: Any) -> CandidateMark | FallbackMark | None:
    annotations = getattr(choice, "annotations", None)
    return annotations.get(MARK) if isinstance(annotations, dict) else None
