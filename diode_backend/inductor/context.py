"""What one GEMM lowering needs resolved before DIODE decides anything: the options, the problem,
the hardware, a stored decision (measured or predicted) and the scorer (wrapped in the prediction
cache when ``diode_cache_predictions``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import catalog, counters, measured, predicted, registry
from ..cache import CachingScorer
from ..options import DiodeOptionError, DiodeOptions, parse_backends
from ..policy import keeps_alone
from ..problem import SUPPORTED_OPS, GemmProblem, HardwareInfo, KernelConfig
from ..scorer import GemmScorer, Prediction, ScorerEntry
from .convert import UnsupportedProblem, problem_from_inputs
from .options import current_options


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
    #: the backends and Triton search space the candidates come from (a measured decision's key)
    space: str = ""
    #: what DIODE measured, or else predicted and kept alone, for this GEMM before (with
    #: ``diode_cache_predictions``): its ``winner`` is kept alone
    decision: measured.MeasuredDecision | predicted.PredictedDecision | None = None


def contained(fn: Callable[[], Any], where: str, fallback: Any = None) -> Any:
    """Run DIODE code during a compile; an internal error is counted under ``where``, logged once
    and turned into ``fallback`` (re-raised under ``diode_strict`` or when it is a user's option
    error). ``SystemExit`` from a plugin is contained like any error: it must not end the
    compiling process."""
    from torch._inductor import config

    try:
        return fn()
    except (DiodeOptionError, KeyboardInterrupt):
        raise
    except BaseException as err:
        if config.diode_strict:
            raise
        counters.record_error(where, err)
        return fallback


def diode_requested() -> bool:
    """Whether this lowering runs under max-autotune with DIODE among the GEMM backends."""
    from torch._inductor import config

    if not (config.max_autotune or config.max_autotune_gemm):
        return False
    return parse_backends(config.max_autotune_gemm_backends)[0]


def candidate_set(options: DiodeOptions) -> str:
    """The backends and Triton search space Inductor generates a GEMM's candidates from under
    the current config and ``options``: the ``space`` of a decision stored for it."""
    from torch._inductor import config

    _, others = parse_backends(config.max_autotune_gemm_backends)
    search_space = options.diode_search_space if not others else config.max_autotune_gemm_search_space
    return f"{','.join(sorted(others)) or 'DIODE'}/{search_space}"


def resolve_context(kernel_inputs: Any, op_name: str) -> GemmContext:
    """Options, problem, hardware and scorer for one lowering (the scorer behind the prediction
    cache when ``diode_cache_predictions``). A bad option raises
    :class:`~diode_backend.options.DiodeOptionError`; everything else becomes a fallback."""
    from torch._inductor import config

    options = current_options()
    _, others = parse_backends(config.max_autotune_gemm_backends)
    space = candidate_set(options)
    context = GemmContext(options=options, op=op_name, diode_alone=not others, space=space)
    if op_name not in SUPPORTED_OPS:
        return replace(context, fallback="unsupported_op")
    try:
        problem = problem_from_inputs(kernel_inputs, op_name)
    except UnsupportedProblem as err:
        return replace(context, fallback=err.reason)
    hardware = registry.detect_hardware(str(kernel_inputs.device()))
    if hardware is None:
        return replace(context, problem=problem, fallback="no_hardware")
    # a stored decision answers without the model (unless a group without its kernel comes
    # first), so the model is loaded only when there is none
    entry = catalog.pick_entry(hardware, options.diode_model, load=False)
    decision = None
    if entry is not None and options.diode_cache_predictions:
        decision = stored_decision(problem, hardware, space, entry, options)
    if decision is None:
        entry = catalog.pick_entry(hardware, options.diode_model)
    if entry is None:
        return replace(context, problem=problem, hardware=hardware, fallback="no_model")
    if decision is not None:
        scorer: GemmScorer = DeferredScorer(entry)
    else:
        scorer = registry.load_scorer(entry)
        if options.diode_cache_predictions:
            scorer = CachingScorer(scorer)
    return replace(context, problem=problem, hardware=hardware, entry=entry, scorer=scorer, decision=decision)


def stored_decision(
    problem: GemmProblem, hardware: HardwareInfo, space: str, entry: ScorerEntry, options: DiodeOptions
) -> measured.MeasuredDecision | predicted.PredictedDecision | None:
    """The measured decision for this GEMM, else the one ``entry``'s model predicted before if
    the options still keep a pick of its confidence alone (:func:`~diode_backend.policy.keeps_alone`)."""
    found = measured.lookup(problem, hardware, space)
    if found is not None:
        return found
    pick = predicted.lookup(problem, hardware, space, entry.name, entry_identity(entry))
    return pick if pick is not None and keeps_alone(pick.confidence, options) else None


def entry_identity(entry: ScorerEntry) -> str:
    """The identity of ``entry``'s model: the entry's own, else its loaded scorer's."""
    return entry.identity or registry.load_scorer(entry).identity


class DeferredScorer:
    """``entry``'s scorer behind the prediction cache, loaded at its first prediction: a GEMM a
    stored decision answers has nothing to rank, so it must not pay for loading a model."""

    def __init__(self, entry: ScorerEntry) -> None:
        self.name = entry.name
        self._entry = entry

    @functools.cached_property
    def _scorer(self) -> CachingScorer:
        return CachingScorer(registry.load_scorer(self._entry))

    @property
    def identity(self) -> str:
        return entry_identity(self._entry)

    def predict(self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo) -> Prediction:
        return self._scorer.predict(problem, configs, hardware)
