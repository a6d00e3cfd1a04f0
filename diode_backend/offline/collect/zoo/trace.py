"""Recording the GEMMs a model runs, with the name of the module that ran each, and deriving the
GEMMs that tracing cannot run: tensor-parallel shards and routed MoE experts.

Nothing here imports transformers, timm or diffusers: it works on any ``nn.Module``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from ....problem import GemmProblem

#: Last components of the module names of column-parallel layers (their output features split).
COLUMN_PARALLEL = frozenset(
    {"q_proj", "k_proj", "v_proj", "qkv_proj", "query_key_value", "c_attn", "gate_proj", "up_proj",
     "gate_up_proj", "fc1", "c_fc", "dense_h_to_4h", "lm_head"}
)  # fmt: skip
#: Last components of the module names of row-parallel layers (their input features split).
ROW_PARALLEL = frozenset({"o_proj", "out_proj", "down_proj", "fc2", "dense", "dense_4h_to_h", "c_proj"})
#: Fractions of the mean routed token count an expert receives: routing is never balanced.
EXPERT_LOAD = (0.5, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class TracedGemm:
    """One GEMM a model ran: the problem and the qualified name of the innermost module running."""

    problem: GemmProblem
    module: str


def trace_gemms(model: Any, run: Callable[[], Any]) -> list[TracedGemm]:
    """The GEMMs ``run()`` executes, in first-call order, each listed once per module.

    ``aten.mm/addmm/bmm/baddbmm`` are recorded at dispatch level (so ``nn.Linear`` appears as
    Inductor sees it: addmm with a row bias, or mm, with the weight a column-major operand).
    GEMMs inside ``F.scaled_dot_product_attention`` are not recorded: on a GPU, Inductor runs
    it as one fused attention kernel, not as matrix products. Module names come from forward
    hooks on every submodule of ``model`` (None: no names); a GEMM outside any submodule has
    the name ``""``.
    """
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    ops = {aten.mm.default: "mm", aten.addmm.default: "addmm", aten.bmm.default: "bmm", aten.baddbmm.default: "baddbmm"}
    stack: list[str] = []
    in_sdpa = [0]
    seen: dict[TracedGemm, None] = {}

    class SkipFusedAttention(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is not F.scaled_dot_product_attention:
                return func(*args, **(kwargs or {}))
            in_sdpa[0] += 1
            try:
                return func(*args, **(kwargs or {}))
            finally:
                in_sdpa[0] -= 1

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            op = ops.get(func)
            if op is not None and not in_sdpa[0]:
                seen.setdefault(TracedGemm(_problem_of(op, args), stack[-1] if stack else ""), None)
            return func(*args, **(kwargs or {}))

    def enter(name: str) -> Callable:
        return lambda module, args: stack.append(name)

    def leave(module, args, output):
        stack.pop()

    handles = []
    for name, module in model.named_modules() if model is not None else ():
        if name:
            handles.append(module.register_forward_pre_hook(enter(name)))
            handles.append(module.register_forward_hook(leave))
    try:
        with SkipFusedAttention(), Recorder():
            run()
    finally:
        for handle in handles:
            handle.remove()
    return list(seen)


def _problem_of(op: str, args: Sequence[Any]) -> GemmProblem:
    import torch

    bias, (a, b) = (args[0], args[1:3]) if op in ("addmm", "baddbmm") else (None, args[:2])
    bias_kind = "none"
    if bias is not None:
        bias_kind = "row" if bias.dim() == 1 or bias.stride(-2) == 0 else "full"
    dtype = str(a.dtype).removeprefix("torch.")
    return GemmProblem(
        op=op, m=a.shape[-2], n=b.shape[-1], k=a.shape[-1], batch=a.shape[0] if a.dim() == 3 else 1,
        dtype=dtype, a_layout=_layout(a), b_layout=_layout(b), bias=bias_kind,
        allow_tf32=dtype == "float32" and torch.backends.cuda.matmul.fp32_precision == "tf32",
    )  # fmt: skip


def _layout(t) -> str:
    if t.stride(-1) == 1:
        return "row"
    if t.stride(-2) == 1:
        return "col"
    return "strided"


@contextmanager
def fp32_precision(tf32: bool) -> Iterator[None]:
    """Trace with float32 matmuls allowed to use TF32 (as ``allow_tf32`` says) or not; restored after."""
    import torch

    matmul = torch.backends.cuda.matmul
    saved = matmul.fp32_precision
    matmul.fp32_precision = "tf32" if tf32 else "ieee"
    try:
        yield
    finally:
        matmul.fp32_precision = saved


def parallel_kind(module: str) -> str | None:
    """``"column"``, ``"row"`` or None (replicated) for a layer of a tensor-parallel decoder,
    by the last component of its module name."""
    last = module.rpartition(".")[2]
    if last in COLUMN_PARALLEL:
        return "column"
    if last in ROW_PARALLEL:
        return "row"
    return None


def tensor_parallel(traced: Iterable[TracedGemm], degree: int, heads: int | None = None) -> list[GemmProblem]:
    """What one of ``degree`` tensor-parallel ranks runs (Megatron-style sharding): a
    column-parallel layer keeps 1/degree of its output features (N), a row-parallel one 1/degree
    of its input features (K), and attention products 1/degree of their batch x heads when
    ``heads`` (the attention heads) divides by ``degree``. Replicated layers and sizes that do
    not divide are left out: they are the unsharded model's problems."""
    out = []
    for gemm in traced:
        p = gemm.problem
        if p.op in ("bmm", "baddbmm"):
            if heads and heads % degree == 0:
                out.append(replace(p, batch=p.batch // degree))
            continue
        kind = parallel_kind(gemm.module)
        if kind is None or (p.n if kind == "column" else p.k) % degree:
            continue
        out.append(replace(p, n=p.n // degree) if kind == "column" else replace(p, k=p.k // degree))
    return out


def expert_token_counts(tokens: int, experts: int, top_k: int) -> list[int]:
    """Rows one routed expert multiplies when ``tokens`` tokens each pick ``top_k`` of
    ``experts``: the mean ``tokens * top_k / experts`` scaled by :data:`EXPERT_LOAD`, at least 1."""
    mean = tokens * top_k / experts
    return sorted({max(1, math.ceil(mean * load)) for load in EXPERT_LOAD})


def expert_gemms(
    hidden: int, intermediate: int, experts: int, top_k: int, tokens: int, dtype: str, gated: bool = True
) -> list[GemmProblem]:
    """One routed expert's GEMMs as transformers' expert modules run them (``F.linear`` on the
    expert's weight, so mm with the weight a column-major operand, no bias): the fused gate and
    up projection (N = 2 x intermediate when ``gated``) and the down projection, at each of
    :func:`expert_token_counts`."""
    up = 2 * intermediate if gated else intermediate
    return [
        GemmProblem("mm", m, n, k, dtype=dtype, b_layout="col")
        for m in expert_token_counts(tokens, experts, top_k)
        for n, k in ((up, hidden), (hidden, intermediate))
    ]
