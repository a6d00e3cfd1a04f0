"""DIODE's two decision points inside a GEMM lowering.

1. :func:`rank_template_choices` runs in ``InductorChoices._finalize_template_configs``, once per
   group of template choices, before any kernel source is generated: it scores every
   candidate, keeps the group's best (top-1 when confident, else top-k) and marks each kept
   choice with a :class:`CandidateMark`.
2. :func:`select_final_choices` runs as Inductor's autotuner receives the op's full choice list
   (several groups for addmm): it ranks the marked choices together and keeps one (nothing is
   benchmarked) or the top-k. Choices DIODE never saw (CPP, CUTLASS, ...) pass through.

Each op is counted once in the stats, and logged in one line at INFO on ``diode_backend``, at
step 2.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import cache, catalog, counters, registry
from ..logs import log
from ..options import DiodeOptions, parse_backends
from ..problem import KIND_TRITON, SUPPORTED_OPS, GemmProblem, HardwareInfo, KernelConfig
from ..scorer import GemmScorer, Prediction, ScorerEntry
from ..select import Ranking, combined_confidence, select_candidates
from .convert import UnsupportedProblem, config_from_choice, problem_from_inputs
from .options import current_options

MARK = "diode"  # key in ChoiceCaller.annotations (shared with the KernelTemplateChoice)
_group_ids = itertools.count()


@dataclass(frozen=True)
class GemmContext:
    """Everything resolved for one GEMM lowering; ``fallback`` is set when DIODE cannot rank."""

    options: DiodeOptions
    op: str
    problem: GemmProblem | None = None
    hardware: HardwareInfo | None = None
    entry: ScorerEntry | None = None
    scorer: GemmScorer | None = None
    fallback: str | None = None
    diode_alone: bool = False


@dataclass(frozen=True)
class CandidateMark:
    """What step 1 learned about a kept choice."""

    context: GemmContext
    config: KernelConfig
    time_us: float
    group: int
    group_size: int
    group_confidence: float | None
    from_cache: bool


@dataclass(frozen=True)
class FallbackMark:
    """Step 1 could not rank this op (``reason`` in counters.FALLBACK_REASONS); ``problem``
    describes it, ``kept_own_aten`` says its own ATen kernel was kept (nothing benchmarked)."""

    reason: str
    problem: str
    kept_own_aten: bool


def diode_requested() -> bool:
    """Whether this lowering runs under max-autotune with DIODE among the GEMM backends."""
    from torch._inductor import config

    if not (config.max_autotune or config.max_autotune_gemm):
        return False
    return parse_backends(config.max_autotune_gemm_backends)[0]


def resolve_context(kernel_inputs: Any, op_name: str) -> GemmContext:
    """Options, problem, hardware and scorer for one lowering. A bad option raises
    :class:`~diode_backend.options.DiodeOptionError`; everything else becomes a fallback."""
    from torch._inductor import config

    options = current_options()
    _, others = parse_backends(config.max_autotune_gemm_backends)
    context = GemmContext(options=options, op=op_name, diode_alone=not others)
    if op_name not in SUPPORTED_OPS:
        return replace(context, fallback="unsupported_op")
    try:
        problem = problem_from_inputs(kernel_inputs, op_name)
    except UnsupportedProblem as err:
        return replace(context, fallback=err.reason)
    hardware = registry.detect_hardware(str(kernel_inputs.device()))
    if hardware is None:
        return replace(context, problem=problem, fallback="no_hardware")
    entry = catalog.pick_entry(hardware, options.diode_model)
    if entry is None:
        return replace(context, problem=problem, hardware=hardware, fallback="no_model")
    scorer = registry.load_scorer(entry)
    return replace(context, problem=problem, hardware=hardware, entry=entry, scorer=scorer)


def rank_template_choices(ktcs: list[Any], context: GemmContext) -> list[Any]:
    """Step 1: score one group of KernelTemplateChoices and return the ones to keep."""
    if not ktcs:
        return ktcs
    if context.fallback is not None:
        return _fall_back(ktcs, context.fallback, context)
    configs = [config_from_choice(ktc.template.uid, ktc.params.to_kwargs()) for ktc in ktcs]
    ranking = cache.cached_rank(
        context.scorer, context.problem, configs, context.hardware, context.options.diode_cache_predictions
    )
    if not ranking.order:
        return _fall_back(ktcs, "no_scored_candidates", context, configs)
    selection = select_candidates(ranking, context.options)
    group = next(_group_ids)
    kept = []
    for index in selection.keep:
        ktcs[index].annotations[MARK] = CandidateMark(
            context, configs[index], ranking.times_us[index], group, len(ktcs), ranking.confidence, ranking.from_cache
        )
        kept.append(ktcs[index])
    return kept


def _fall_back(
    ktcs: list[Any], reason: str, context: GemmContext, configs: list[KernelConfig] | None = None
) -> list[Any]:
    """DIODE cannot rank this group: ``diode_fallback_to_autotune`` keeps what Inductor would
    benchmark without DIODE (:func:`_autotune_set` when the group's ``configs`` were read, else
    all of it); otherwise the best guess is what Inductor picks without autotuning, the op's own
    ATen kernel (torch 2.11 lists aten::bias_addmm before aten::addmm)."""
    autotune = context.options.diode_fallback_to_autotune
    if autotune:
        kept = ktcs if configs is None else _autotune_set(ktcs, configs, context)
    else:
        own = [ktc for ktc in ktcs if ktc.template.uid == f"aten::{context.op}"]
        kept = (own or [ktc for ktc in ktcs if ktc.template.uid.startswith("aten::")])[:1] or ktcs
    problem = context.problem.describe() if context.problem else context.op
    for ktc in kept:
        ktc.annotations[MARK] = FallbackMark(reason, problem, kept_own_aten=not autotune and len(kept) == 1)
    return kept


def _autotune_set(ktcs: list[Any], configs: list[KernelConfig], context: GemmContext) -> list[Any]:
    """What Inductor would benchmark without DIODE. DIODE widened the Triton space to
    ``diode_search_space`` for its scorer; benchmarking all of EXHAUSTIVE would take minutes, so
    keep only Inductor's DEFAULT Triton list then (and every other candidate)."""
    widened = context.diode_alone and context.options.diode_search_space == "EXHAUSTIVE"
    if not widened or not any(c.kind == KIND_TRITON for c in configs):
        return ktcs
    from .configs import triton_candidates

    default = set(triton_candidates(context.problem, context.hardware, "DEFAULT"))
    return [ktc for ktc, config in zip(ktcs, configs) if config.kind != KIND_TRITON or config in default]


def select_final_choices(choices: Sequence[Any]) -> list[Any]:
    """Step 2: the op's whole choice list -> the choices Inductor benchmarks (one: none)."""
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
        union = cache.cached_rank(
            context.scorer,
            context.problem,
            [m.config for m in marks],
            context.hardware,
            context.options.diode_cache_predictions,
        )
        confidence = combined_confidence(best.group_confidence, union.confidence)
    return replace(ranking, confidence=confidence)


def _mark_of(choice: Any) -> CandidateMark | FallbackMark | None:
    annotations = getattr(choice, "annotations", None)
    return annotations.get(MARK) if isinstance(annotations, dict) else None
