"""Step 1 of a DIODE decision, in ``InductorChoices._finalize_template_configs``: which configs of
one group of template choices Inductor goes on to generate code for.

It runs once per group, before any kernel source exists: it scores every candidate, keeps the
group's best (top-1 when confident, else the set worth measuring) and marks each kept choice with a
:class:`CandidateMark` for step 2 (:mod:`.benchmarked_choices`). A group with no scored candidate
keeps what a fallback keeps, each choice a :class:`CandidateMark` of unknown (NaN) time carrying
its :class:`FallbackMark`; the choices of an op DIODE cannot rank (no model, an unsupported op,
...) get a :class:`FallbackMark` alone. A group holding the kernel of a stored decision for this GEMM
(DIODE measured it fastest, or kept it alone on its model's word, before) keeps that kernel alone
(:class:`DecidedMark`), unscored: a :class:`WinnerSearch` finds it as Inductor generates the group
and stops the generator there. Other groups are ranked as usual (from the prediction cache when
it holds them) and step 2 drops them.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from ..compile_estimate import estimates
from ..policy import Ranking, rank_candidates, select_candidates
from ..problem import KIND_TRITON, KernelConfig
from .context import GemmContext, contained
from .convert import config_from_choice

MARK = "diode"  # key in ChoiceCaller.annotations (shared with the KernelTemplateChoice)
_group_ids = itertools.count()


@dataclass(frozen=True)
class CandidateMark:
    """What step 1 learned about a kept choice: its predicted time (NaN: unscored), its group's
    size and confidence. ``fallback`` is set on the choices of a group the scorer scored none of:
    what the op falls back as when no other group of it was scored either."""

    context: GemmContext
    config: KernelConfig
    time_us: float
    group: int
    group_size: int
    group_confidence: float | None
    from_cache: bool
    fallback: FallbackMark | None = None


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


class WinnerSearch:
    """Looks for the winner of a stored decision in one template group while Inductor generates
    it, and ends the winner template's generator right after the winner: the configs after it
    get no template kwargs, no KernelTemplateChoice and no :class:`KernelConfig`. Before that,
    the configs that could not become the winner (:meth:`could_become_winner`) are left out of
    the list Inductor scales and prunes, and of a plain GEMM template's finished configs only
    the winner's (:meth:`is_winner`) becomes template kwargs
    (``DiodeChoicesMixin.get_template_configs``)."""

    def __init__(self, winner: KernelConfig) -> None:
        self.winner = winner
        self.found: Any = None  # the winner's KernelTemplateChoice, once generated

    @classmethod
    def of(cls, context: GemmContext | None, template_uids: Collection[str]) -> WinnerSearch | None:
        """The search for ``context``'s stored winner when the group has the winner's template."""
        decision = context.decision if context is not None else None
        if decision is None or decision.winner.template not in template_uids:
            return None
        return cls(decision.winner)

    def could_become_winner(self, config: Any) -> bool:
        """Whether one of Inductor's configs (a ``BaseConfig`` of the winner's template, before
        it is scaled to the shape) could be generated as the winner: scaling changes only block
        sizes and deduplication only lowers warps to what the tile can use, so its stages and
        group must be the winner's and its warps at least the winner's."""
        w = self.winner
        return config.num_stages == w.num_stages and config.num_warps >= w.num_warps and (getattr(config, "group_m", None) or 0) == w.group_m

    def is_winner(self, config: Any) -> bool:
        """Whether one of Inductor's finished configs of a plain GEMM template (a
        ``triton.Config``: scaled, pruned and deduplicated, not yet template kwargs) becomes the
        winner: its tile, stages and warps are the winner's, and its group where it names one
        (the heuristic gives a config without one its default)."""
        w, kwargs = self.winner, getattr(config, "kwargs", None)
        if not isinstance(kwargs, dict):  # not a config this knows: kept, the walk checks it
            return True
        return (
            (kwargs.get("BLOCK_M"), kwargs.get("BLOCK_N"), kwargs.get("BLOCK_K")) == (w.block_m, w.block_n, w.block_k)
            and (getattr(config, "num_stages", None), getattr(config, "num_warps", None)) == (w.num_stages, w.num_warps)
            and kwargs.get("GROUP_M", w.group_m) == w.group_m
        )

    def generators(self, template_choices: dict[str, Iterator[Any]]) -> dict[str, Iterator[Any]]:
        """Inductor's ``{template uid: KernelTemplateChoice generator}``, the winner's template's
        generator ending at the winner."""
        return {
            uid: self._until_winner(ktcs) if uid == self.winner.template else ktcs
            for uid, ktcs in template_choices.items()
        }

    def _until_winner(self, ktcs: Iterator[Any]) -> Iterator[Any]:
        for ktc in ktcs:
            if contained(lambda: _config_of(ktc) == self.winner, "ranking", fallback=False):
                self.found = ktc
                yield ktc
                return
            yield ktc


def keep_group_configs(ktcs: list[Any], context: GemmContext, search: WinnerSearch | None = None) -> list[Any]:
    """Score one group of KernelTemplateChoices and return the ones to keep, marked. ``search``
    is the group's :class:`WinnerSearch`, when it has one."""
    if not ktcs:
        return ktcs
    if context.fallback is not None:
        return _fall_back(ktcs, context.fallback, context)
    if search is not None and any(ktc is search.found for ktc in ktcs):
        return [_decided(search.found, search.winner, context)]
    configs = [_config_of(ktc) for ktc in ktcs]
    if context.decision is not None and context.decision.winner in configs:
        # a choices class behind DIODE may build its own KernelTemplateChoices, unseen by a search
        winner = configs.index(context.decision.winner)
        return [_decided(ktcs[winner], configs[winner], context)]
    ranking = rank_candidates(context.scorer, context.problem, configs, context.hardware)
    if not ranking.order:
        return _unscored(ktcs, configs, ranking, context)
    selection = select_candidates(
        ranking, context.options, [c.kind for c in configs], lambda: estimates(context.problem, configs, context.hardware)
    )
    group = next(_group_ids)
    kept = []
    for index in selection.keep:
        ktcs[index].annotations[MARK] = CandidateMark(
            context, configs[index], ranking.times_us[index], group, len(ktcs), ranking.confidence, ranking.from_cache
        )
        kept.append(ktcs[index])
    return kept


def _config_of(ktc: Any) -> KernelConfig:
    return config_from_choice(ktc.template.uid, ktc.params.to_kwargs())


def _decided(ktc: Any, config: KernelConfig, context: GemmContext) -> Any:
    """Decided before: that kernel alone, nothing ranked (step 2 hands it to Inductor alone)."""
    ktc.annotations[MARK] = DecidedMark(context, config)
    return ktc


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


def _unscored(ktcs: list[Any], configs: list[KernelConfig], ranking: Ranking, context: GemmContext) -> list[Any]:
    """A group the scorer scored none of (a template the model never learnt, such as decompose-k)
    keeps what :func:`_fall_back` keeps, each choice an unscored candidate (NaN time) carrying its
    :class:`FallbackMark`. The group cannot tell whether another group of the op was scored; step 2
    can: it ranks these with the scored ones (measured, never picked alone), or, when no group of
    the op was scored, falls back as the marks say."""
    kept = _fall_back(ktcs, "no_scored_candidates", context, configs)
    index = {id(ktc): i for i, ktc in enumerate(ktcs)}
    group = next(_group_ids)
    for ktc in kept:
        i = index[id(ktc)]
        fallback = ktc.annotations[MARK]
        ktc.annotations[MARK] = CandidateMark(
            context, configs[i], ranking.times_us[i], group, len(ktcs), ranking.confidence, ranking.from_cache, fallback
        )
    return kept
