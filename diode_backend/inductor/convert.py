"""Inductor objects -> DIODE's domain types (GemmProblem, KernelConfig)."""

from __future__ import annotations

from typing import Any

import torch

from ..problem import KIND_ATEN, KIND_TRITON, SUPPORTED_DTYPES, GemmProblem, KernelConfig

#: Triton templates whose tiles mean what the plain GEMM template's mean.
_PLAIN_TRITON_TEMPLATES = ("triton::mm", "triton::bmm")
#: Decompose-k's one parameter, how many slices K is cut into (``KernelConfig.block_k`` keeps it).
_K_SPLIT = "k_split"


class UnsupportedProblem(Exception):
    """The GEMM is outside what DIODE ranks; ``reason`` is a stats fallback reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def problem_from_inputs(kernel_inputs: Any, op_name: str) -> GemmProblem:
    """Describe the GEMM behind Inductor's ``MMKernelInputs`` (hinted sizes for dynamic shapes)."""
    nodes = kernel_inputs.nodes()
    mat1, mat2 = kernel_inputs.mat1mat2()
    strides = kernel_inputs.strides_hinted()
    shapes = kernel_inputs.shapes_hinted()
    i1, i2 = _index_of(nodes, mat1), _index_of(nodes, mat2)
    dtype = dtype_name(mat1.get_dtype())
    if dtype not in SUPPORTED_DTYPES or dtype_name(mat2.get_dtype()) != dtype:
        raise UnsupportedProblem("unsupported_dtype", f"{op_name} on {dtype}")
    m, n, k = kernel_inputs.mnk_hinted()
    bias = "none"
    extra = [i for i in range(len(nodes)) if i not in (i1, i2)]
    if op_name in ("addmm", "baddbmm") and extra:
        bias_shape, bias_stride = shapes[extra[0]], strides[extra[0]]
        broadcast_rows = len(bias_shape) == 1 or (len(bias_stride) >= 2 and bias_stride[-2] == 0)
        bias = "row" if broadcast_rows else "full"
    # Inductor's own TF32 test (template_heuristics/triton.py), the same on torch 2.11 and 2.13
    allow_tf32 = dtype == "float32" and torch.backends.cuda.matmul.fp32_precision == "tf32"
    return GemmProblem(
        op=op_name,
        m=int(m),
        n=int(n),
        k=int(k),
        batch=int(kernel_inputs.batch_hinted()),
        dtype=dtype,
        out_dtype=dtype_name(kernel_inputs.out_dtype()),
        a_layout=_layout(strides[i1]),
        b_layout=_layout(strides[i2]),
        bias=bias,
        allow_tf32=bool(allow_tf32),
    )


def config_from_choice(template_uid: str, params: dict[str, Any]) -> KernelConfig:
    """Describe one Inductor template choice (its template uid and template kwargs). Decompose-k's
    ``k_split`` goes into ``block_k``: each split is a candidate of its own, so a measured winner
    names the split that won."""
    if template_uid.startswith("aten::"):
        kind = KIND_ATEN
    elif template_uid in _PLAIN_TRITON_TEMPLATES:
        kind = KIND_TRITON
    else:
        kind = template_uid.split("::")[-1]
    return KernelConfig(
        kind=kind,
        template=template_uid,
        block_m=int(params.get("BLOCK_M", 0)),
        block_n=int(params.get("BLOCK_N", 0)),
        block_k=int(params.get("BLOCK_K", params.get(_K_SPLIT, 0))),
        num_stages=int(params.get("num_stages", 0)),
        num_warps=int(params.get("num_warps", 0)),
        group_m=int(params.get("GROUP_M", 0)),
    )


def _index_of(nodes: list[Any], node: Any) -> int:
    return next(i for i, candidate in enumerate(nodes) if candidate is node)


def _layout(stride: tuple[int, ...]) -> str:
    if stride[-1] == 1:
        return "row"
    if len(stride) >= 2 and stride[-2] == 1:
        return "col"
    return "strided"
