"""What one GEMM lowering needs resolved before DIODE decides anything: the options, the problem,
the hardware and the scorer (wrapped in the prediction cache when ``diode_cache_predictions``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .. import catalog, measured, registry
from ..cache import CachingScorer
from ..options import DiodeOptions, parse_backends
from ..problem import SUPPORTED_OPS, GemmProblem, HardwareInfo
from ..scorer import GemmScorer, ScorerEntry
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
    #: what DIODE measured for this GEMM before (with ``diode_cache_predictions``)
    measured_decision: measured.MeasuredDecision | None = None


def diode_requested() -> bool:
    """Whether this lowering runs under max-autotune with DIODE among the GEMM backends."""
    from torch._inductor import config

    if not (config.max_autotune or config.max_autotune_gemm):
        return False
    return parse_backends(config.max_autotune_gemm_backends)[0]


def resolve_context(kernel_inputs: Any, op_name: str) -> GemmContext:
    """Options, problem, hardware and scorer for one lowering (the scorer behind the prediction
    cache when ``diode_cache_predictions``). A bad option raises
    :class:`~diode_backend.options.DiodeOptionError`; everything else becomes a fallback."""
    from torch._inductor import config

    options = current_options()
    _, others = parse_backends(config.max_autotune_gemm_backends)
    search_space = options.diode_search_space if not others else config.max_autotune_gemm_search_space
    space = f"{','.join(sorted(others)) or 'DIODE'}/{search_space}"
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
    entry = catalog.pick_entry(hardware, options.diode_model)
    if entry is None:
        return replace(context, problem=problem, hardware=hardware, fallback="no_model")
    scorer = registry.load_scorer(entry)
    decision = None
    if options.diode_cache_predictions:
        scorer = CachingScorer(scorer)
        decision = measured.lookup(problem, hardware, space)
    return replace(context, problem=problem, hardware=hardware, entry=entry, scorer=scorer, measured_decision=decision)
