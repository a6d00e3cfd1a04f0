"""DIODE's built-in ``diode_candidate_configs``: the candidates Inductor's max-autotune offers
(ATen plus its Triton configs, :mod:`.configs`). A built-in plugin of its own, registered after
the third-party ones, because it needs Inductor; ``trylast``, so a vendor's candidates win."""

from __future__ import annotations

from .. import hookimpl
from ..problem import GemmProblem, HardwareInfo, KernelConfig


@hookimpl(trylast=True)
def diode_candidate_configs(problem: GemmProblem, hardware: HardwareInfo, search_space: str) -> list[KernelConfig] | None:
    """ATen plus Inductor's ``search_space`` Triton configs for the shape, as max-autotune would
    generate them (scaled, shared-memory and spill pruned)."""
    from .configs import TRITON_TEMPLATES, candidate_space

    if problem.op not in TRITON_TEMPLATES:
        return None
    return candidate_space(problem, hardware, search_space)
