"""The candidates Inductor's max-autotune offers for a GEMM, computed from Inductor's own config
lists and pruning (``torch._inductor.template_heuristics``), without compiling anything.

This is the space ``diode collect`` times: the same on torch 2.11 and 2.13 (the methods used
here are identical in both), and independent of the machine it runs on, because the shared-memory
limit comes from the :class:`~diode_backend.problem.HardwareInfo` instead of the current GPU.
"""

from __future__ import annotations

from ..options import SEARCH_SPACES
from ..problem import DTYPE_BYTES, KIND_ATEN, KIND_TRITON, GemmProblem, HardwareInfo, KernelConfig
from .compat import mm_template_configs

#: Inductor's Triton GEMM template for each op (addmm and baddbmm reuse mm and bmm's).
TRITON_TEMPLATES = {"mm": "triton::mm", "addmm": "triton::mm", "bmm": "triton::bmm", "baddbmm": "triton::bmm"}


def aten_candidates(problem: GemmProblem) -> list[KernelConfig]:
    """The ATen (cuBLAS) choices Inductor adds for ``problem``: ``bias_addmm`` (a 1-D bias, which
    takes cuBLASLt's fused epilogue) besides ``addmm`` when the bias is broadcast over rows."""
    names = [problem.op]
    if problem.op == "addmm" and problem.bias == "row":
        names.insert(0, "bias_addmm")
    return [KernelConfig(kind=KIND_ATEN, template=f"aten::{name}") for name in names]


def triton_candidates(
    problem: GemmProblem, hardware: HardwareInfo, search_space: str = "EXHAUSTIVE"
) -> list[KernelConfig]:
    """Inductor's Triton template configs for ``problem``, in Inductor's order.

    The steps of ``BaseConfigHeuristic.preprocess_mm_configs`` with shared-memory pruning on:
    scale block sizes to the shape, drop configs whose estimated shared memory exceeds
    ``hardware.shared_memory_per_block``, drop certain register spills (EXHAUSTIVE only), clamp
    warps to the tile and deduplicate.
    """
    if search_space not in SEARCH_SPACES:
        raise ValueError(f"search_space must be one of {', '.join(SEARCH_SPACES)}, not {search_space!r}")
    try:
        import triton  # noqa: F401  Inductor's heuristics build triton.Config objects
    except ImportError:
        raise ValueError("Inductor's Triton configs need triton: pip install 'diode-backend[triton]' (Linux)") from None
    template = TRITON_TEMPLATES[problem.op]
    configs = mm_template_configs(
        template, problem.op, search_space, (problem.m, problem.n, problem.k), DTYPE_BYTES[problem.dtype],
        hardware.shared_memory_limit,
    )
    return [_kernel_config(template, c) for c in configs]


def candidate_space(
    problem: GemmProblem, hardware: HardwareInfo, search_space: str = "EXHAUSTIVE"
) -> list[KernelConfig]:
    """ATen first, then the Triton configs: what max-autotune benchmarks for ``problem`` with
    backends ``ATEN,TRITON`` (the persistent-TMA, decompose-k and contiguous-addmm templates,
    off or shape-dependent by default, are left out)."""
    return aten_candidates(problem) + triton_candidates(problem, hardware, search_space)


def _kernel_config(template: str, triton_config) -> KernelConfig:
    kwargs = triton_config.kwargs
    return KernelConfig(
        kind=KIND_TRITON,
        template=template,
        block_m=int(kwargs["BLOCK_M"]),
        block_n=int(kwargs["BLOCK_N"]),
        block_k=int(kwargs["BLOCK_K"]),
        num_stages=int(triton_config.num_stages),
        num_warps=int(triton_config.num_warps),
        group_m=int(kwargs.get("GROUP_M", 8)),
    )

