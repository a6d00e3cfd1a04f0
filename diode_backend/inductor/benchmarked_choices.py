"""Step 2 of a DIODE decision, as Inductor's autotuner receives an op's full choice list (several
template groups for addmm): which choices Inductor benchmarks.

It ranks the choices step 1 (:mod:`.group_configs`) kept and marked, all groups together, and
keeps one, or measures the set worth measuring itself (:mod:`.measure`) and keeps the fastest:
Inductor then benchmarks nothing. Choices DIODE never saw (CPP, CUTLASS, ...) pass through (and
are measured with the rest). Those the scorer left unscored, whole groups of a template the model
never learnt (such as decompose-k) among them, are ranked last: never kept alone, measured with
the rest; only an op none of whose candidates was scored falls back, as step 1 marked it. The
winner of a decision stored before (measured, or predicted and kept alone) is kept alone at once;
a pick kept alone on the model's word is stored as a predicted decision. When DIODE cannot
measure (a choice it cannot launch) or every candidate fails, Inductor benchmarks the set itself.
Each op is counted once in the stats and logged in one line at INFO on ``diode_backend``: a
ranked op by :mod:`.decision`, an op not ranked or answered by a stored decision here.

DIODE measures when Inductor itself would time the choices: where Inductor defers that to the
scheduler (a ``MultiTemplateBuffer``, under ``benchmark_epilogue_fusion``, its default), DIODE
starts the kept choices' compiles at lowering and times them when the scheduler asks
(:class:`DeferredSelection`), so the compiles of a graph's GEMMs overlap; elsewhere it measures
at lowering.

``AlgorithmSelectorCache.__call__`` is wrapped: torch 2.11 lacks 2.13's ``add_preprocessing_fn``.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from .. import counters, measured, predicted
from ..compile_estimate import estimates
from ..logs import log
from ..policy import Ranking, combined_confidence, keeps_alone, rank_candidates, select_candidates
from ..problem import KernelConfig
from ..scorer import Prediction
from . import compat
from .context import GemmContext, contained, entry_identity
from .decision import Decision, count, mark_of
from .group_configs import CandidateMark, DecidedMark, FallbackMark
from .measure import Measurement, NotMeasurable, PendingMeasurement, start_measurement


def patch_autotuner(select_algorithm: ModuleType) -> None:
    """Wrap ``AlgorithmSelectorCache.__call__`` (idempotent); choices DIODE did not mark pass
    through untouched."""
    cls = select_algorithm.AlgorithmSelectorCache
    original = cls.__call__
    if getattr(original, "_diode_wrapped", False):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __call__(self, name, choices, *args, **kwargs):
        def arguments() -> dict[str, Any]:
            """The autotuner call's arguments by name."""
            return signature.bind(self, name, choices, *args, **kwargs).arguments

        def call() -> tuple[Any, Any, Any]:
            """The autotuner call's ``(input_nodes, layout, input_gen_fns)``, for measuring."""
            bound = arguments()
            return bound["input_nodes"], bound["layout"], bound.get("input_gen_fns")

        selected = _select(choices, call, lambda: compat.selection_deferred(arguments()))
        if not isinstance(selected, DeferredSelection):
            return original(self, name, selected, *args, **kwargs)
        bound = signature.bind(self, name, list(selected.choices), *args, **kwargs)
        bound.arguments["precompilation_timeout_seconds"] = 0  # DIODE compiled them: Inductor starts nothing
        inputs = bound.arguments["input_nodes"]  # the buffer Inductor returns reads them: a one-element bias as its view
        bound.arguments["input_nodes"] = contained(lambda: compat.broadcast_bias_nodes(inputs, name), "final_selection") or inputs
        result = original(*bound.args, **bound.kwargs)
        contained(lambda: selected.attach(result), "measurement")
        return result

    __call__._diode_wrapped = True
    cls.__call__ = __call__


def _select(choices, call, deferred):
    from .context import diode_requested

    def select() -> list[Any]:
        if diode_requested() and not _choices_class_has_diode():
            counters.record_fallback("choices_class_override")
            counters.warn_once(
                "choices_class_override",
                "DIODE is in max_autotune_gemm_backends but config.inductor_choices_class does not "
                "include DIODE, so Inductor autotunes as usual. Wrap your class: "
                "config.inductor_choices_class = diode_backend.with_diode(YourChoices)",
            )
            return choices
        return choices_to_benchmark(choices, call, deferred)

    return contained(select, "final_selection", fallback=choices)


def _choices_class_has_diode() -> bool:
    from torch._inductor.virtualized import V

    from .choices import DiodeChoicesMixin

    return isinstance(V.choices, DiodeChoicesMixin)


def choices_to_benchmark(
    choices: Sequence[Any], call: Callable[[], tuple[Any, Any, Any]] | None = None, deferred: Callable[[], bool] | None = None
) -> list[Any] | DeferredSelection:  # fmt: skip
    """The op's whole choice list -> the choices Inductor benchmarks (one: none), or, where DIODE
    measures what it kept when the scheduler asks (``deferred()``: Inductor's autotuner would
    return a ``MultiTemplateBuffer``), a :class:`DeferredSelection` of them. ``call`` gives the
    autotuner call's ``(input_nodes, layout, input_gen_fns)``; without it DIODE does not measure
    and Inductor benchmarks what DIODE kept."""
    marks = [mark_of(choice) for choice in choices]
    fallback = next((m for m in marks if isinstance(m, FallbackMark)), None)
    if fallback is not None:
        return _not_ranked(choices, fallback)
    known = next((i for i, mark in enumerate(marks) if isinstance(mark, DecidedMark)), None)
    if known is not None:
        return [_decided_before(choices[known], marks[known], len(choices))]
    marked = [i for i, mark in enumerate(marks) if isinstance(mark, CandidateMark)]
    if not marked:
        return list(choices)
    candidate_marks: list[CandidateMark] = [marks[i] for i in marked]
    context = candidate_marks[0].context
    ranking = _union_ranking(candidate_marks)
    unscored_group = next((m.fallback for m in candidate_marks if m.fallback is not None), None)
    if not ranking.order and unscored_group is not None:  # no group of the op was scored
        return _not_ranked(choices, unscored_group)
    configs = [m.config for m in candidate_marks]
    selection = select_candidates(
        ranking, context.options, [c.kind for c in configs], lambda: estimates(context.problem, configs, context.hardware)
    )
    if selection.fallback:
        counters.record_fallback(selection.fallback)
    keep = {marked[i] for i in selection.keep}
    kept = tuple(c for i, c in enumerate(choices) if i in keep or marks[i] is None)
    groups = {m.group: m.group_size for m in candidate_marks}
    decision = Decision(
        context=context,
        best=candidate_marks[ranking.order[0]] if ranking.order else candidate_marks[0],
        confidence=ranking.confidence,
        candidates=sum(groups.values()) + sum(m is None for m in marks),
        kept=kept,
        fallback=selection.fallback,
        marks=tuple(candidate_marks),
    )
    if len(kept) == 1 and selection.fallback is None and keeps_alone(ranking.confidence, context.options):
        _remember_pick(context, decision.best.config, ranking.confidence)
    if len(kept) == 1 or call is None:
        return decision.conclude(None)
    pending = _start_measurement(kept)
    if pending is not None and deferred is not None and deferred():
        return DeferredSelection(decision, pending, call)
    return decision.conclude(_finish_measurement(pending, decision, call) if pending is not None else None)


@dataclass(frozen=True)
class DeferredSelection:
    """The choices DIODE kept for one op, whose compiles it has started (``pending``), measured
    when Inductor's scheduler asks for their timings, after the whole graph is lowered, as
    Inductor defers its own benchmarking: the compiles of a graph's GEMMs then overlap. The
    timings Inductor gets name the measured winner (milliseconds), the other ATen choices as
    never faster (infinite, for the scheduler's ATen fallback), and no other Triton choice, so
    that an epilogue fusion the scheduler weighs is one into DIODE's winner."""

    decision: Decision
    pending: PendingMeasurement
    call: Callable[[], tuple[Any, Any, Any]]

    @property
    def choices(self) -> tuple[Any, ...]:
        return self.decision.kept

    def attach(self, result: Any) -> None:
        """Have the autotuner call's ``result`` (Inductor's ``MultiTemplateBuffer``) take its
        timings from DIODE; where it holds none (Inductor chose at once), the decision stands
        unmeasured, counted."""
        if not compat.defer_timings(result, self.timings):
            counters.record_fallback("measurement_not_deferred")
            self.decision.conclude(None)

    def timings(self, hint_override: int | None, inductor_timings: Callable[[int | None], dict]) -> dict:
        """Milliseconds by choice for the scheduler; Inductor's own timings (it benchmarks the
        kept choices) where DIODE has no winner or fails."""

        def measured() -> dict | None:
            measurement = _finish_measurement(self.pending, self.decision, self.call)
            self.decision.conclude(measurement)
            if measurement is None or measurement.winner is None:
                return None
            counters.record_decision_counter("deferred_measurements")
            winner = measurement.winner
            return {
                choice: (time_us / 1000.0 if i == winner else math.inf)
                for i, (choice, time_us) in enumerate(zip(self.choices, measurement.times_us))
                if i == winner or compat.is_extern(choice)
            }

        timings = contained(measured, "measurement") if hint_override is None else None
        return timings if timings is not None else inductor_timings(hint_override)


def _not_ranked(choices: Sequence[Any], fallback: FallbackMark) -> list[Any]:
    """DIODE did not rank the op: every choice step 1 kept goes to Inductor, counted and logged."""
    counters.record_fallback(fallback.reason)
    what = "its own ATen kernel, nothing benchmarked" if fallback.kept_own_aten else f"Inductor benchmarks {count(len(choices))}"
    log.info("%s: not ranked by DIODE (%s): %s", fallback.problem, fallback.reason, what)
    return list(choices)


def _decided_before(choice: Any, mark: DecidedMark, candidates: int) -> Any:
    """A stored decision answers: its kernel alone, counted and logged."""
    context = mark.context
    decision = context.decision
    if isinstance(decision, predicted.PredictedDecision):
        counters.record_decision_counter("predicted_decision_hits")
        confidence = decision.confidence
        sure = "none" if confidence is None else f"{confidence:.2f}"
        why = f"predicted before by {decision.model} with confidence {sure} (a predicted decision)"
    else:
        counters.record_decision_counter("measured_decision_hits")
        confidence, why = None, "measured fastest before (a measured decision)"
    counters.record_decision(
        model=context.entry.name, kind=mark.config.kind, candidates=candidates, kept=1, confidence=confidence,
        problem=context.problem.describe(), pick=mark.config.describe(),
    )  # fmt: skip
    log.info("%s: %s alone, %s", context.problem.describe(), mark.config.describe(), why)
    return choice


def _remember_pick(context: GemmContext, pick: KernelConfig, confidence: float | None) -> None:
    """Store a pick kept alone on the model's word as a predicted decision (with
    ``diode_cache_predictions``), so that a later compile of the GEMM needs no model."""
    if not context.options.diode_cache_predictions:
        return
    identity = entry_identity(context.entry)
    decision = predicted.PredictedDecision(context.problem, context.hardware, pick, confidence, context.entry.name, identity, context.space)
    predicted.remember(decision)
    counters.record_decision_counter("predicted_decisions")


def _start_measurement(kept: Sequence[Any]) -> PendingMeasurement | None:
    """Start DIODE's measurement of ``kept`` (their compiles); None where Inductor must benchmark
    them instead (``config.deterministic``, a choice DIODE cannot launch, an internal error:
    counted, logged once)."""
    from torch._inductor import config

    if config.deterministic:  # Inductor then picks without timing anything; leave that to it
        return None

    def start() -> PendingMeasurement | None:
        try:
            return start_measurement(kept)
        except NotMeasurable:
            counters.record_fallback("not_measurable")
            return None

    return contained(start, "measurement")


def _finish_measurement(pending: PendingMeasurement, decision: Decision, call: Callable[[], tuple[Any, Any, Any]]) -> Measurement | None:
    """Time the choices of ``pending`` and remember the winner; None where Inductor must
    benchmark them instead (every one failing, an internal error: counted, logged once)."""
    measurement = contained(lambda: pending.finish(*call()), "measurement")
    if measurement is None:
        return None
    counters.record_decision_counter("measure_failed_candidates", measurement.failed)
    if measurement.winner is None:
        counters.record_fallback("measurement_failed")
        return None
    counters.record_decision_counter("measured_decisions")
    kept, context = decision.kept, decision.context
    winner = mark_of(kept[measurement.winner])
    if context.options.diode_cache_predictions and isinstance(winner, CandidateMark):
        timed = [(m.config, t) for c, t in zip(kept, measurement.times_us) if isinstance(m := mark_of(c), CandidateMark)]
        configs, times = zip(*timed)
        measured.remember(measured.MeasuredDecision(context.problem, context.hardware, configs, times, context.space))
    return measurement


def _union_ranking(marks: list[CandidateMark]) -> Ranking:
    """The op's kept candidates of every group ranked together (NaN times: unscored), with the
    confidence of the predicted best among the scored ones."""
    ranking = Ranking.of(Prediction(tuple(m.time_us for m in marks)))
    if not ranking.order:
        return ranking
    best = marks[ranking.order[0]]
    scored = [marks[i] for i in sorted(ranking.order)]
    if len({m.group for m in scored}) == 1:  # the unscored say nothing about the pick
        confidence = best.group_confidence
    else:
        # The pick was best in its group; how sure is the scorer it also beats the other winners?
        context = best.context
        union = rank_candidates(context.scorer, context.problem, [m.config for m in scored], context.hardware)
        confidence = combined_confidence(best.group_confidence, union.confidence)
    return replace(ranking, confidence=confidence)
