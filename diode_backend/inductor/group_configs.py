"""Step 1 of a DIODE decision, in ``InductorChoices._finalize_template_configs``: which configs of
one group of template choices Inductor goes on to generate code for.

It runs once per group, before any kernel source exists: it scores every candidate, keeps the
group's best (top-1 when confident, else the set worth measuring) and marks each kept choice with a
:class:`CandidateMark` for step 2 (:mod:`.benchmarked_choices`); a group DIODE cannot rank gets
a :class:`FallbackMark` instead. A group holding the kernel of a stored decision for this GEMM
(DIODE measured it fastest, or kept it alone on its model's word, before) keeps that kernel alone
(:class:`DecidedMark`), unscored; other groups are ranked as usual (from the prediction cache
when it holds them) and step 2 drops them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..policy import rank_candidates, select_candidates
from ..problem import KIND_TRITON, KernelConfig
from .context import GemmContext
from .convert import config_from_choice

MARK = "diode"  # key in ChoiceCaller.annotations (shared with the KernelTemplateChoice)
_group_ids = itertools.count()


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
class DecidedMark:
    """The winner of the decision stored for this GEMM (``context.decision``, measured or
    predicted)."""

    context: GemmContext
    config: KernelConfig


@dataclass(frozen=True)
class FallbackMark:
    """Step 1 could not rank this op (``reason`` in counters.FALLBACK_REASONS); ``problem``
    describes it, ``kept_own_aten`` says its own ATen kernel was kept (nothing benchmarked)."""

    reason: str
    problem: str
    kept_own_aten: bool


def keep_group_configs(ktcs: list[Any], context: GemmContext) -> list[Any]:
    """Score one group of KernelTemplateChoices and return the ones to keep, marked."""
    if not ktcs:
        return ktcs
    if context.fallback is not None:
        return _fall_back(ktcs, context.fallback, context)
    configs = [config_from_choice(ktc.template.uid, ktc.params.to_kwargs()) for ktc in ktcs]
    if context.decision is not None and context.decision.winner in configs:
        # decided before: that kernel alone, nothing ranked (step 2 hands it to Inductor alone)
        winner = configs.index(context.decision.winner)
        ktcs[winner].annotations[MARK] = DecidedMark(context, configs[winner])
        return [ktcs[winner]]
    ranking = rank_candidates(context.scorer, context.problem, configs, context.hardware)
    if not ranking.order:
        return _fall_back(ktcs, "no_scored_candidates", context, configs)
    selection = select_candidates(ranking, context.options, [c.kind for c in configs])
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
