"""The sweep's Triton GEMM kernels: Inductor's ``mm`` and ``bmm`` templates (torch 2.11's
``triton_mm.py.jinja`` and ``triton_bmm.py.jinja``) with the sizes as run-time arguments.

Inductor compiles one kernel per shape, with sizes and strides as constants. These kernels are
compiled once per config and *specialization* (:func:`specialization`) and then time any shape
of that specialization. The specialization carries what the constants tell Triton's compiler
about memory access, so both generate the same loads and stores:

* the layouts (which stride is 1) and the bias mode, as constexprs;
* ``DIV_*``: the power of two (at most 16) dividing each size that a memory stride is made of.
  Sizes are passed as ``size // DIV`` and multiplied back, so Triton knows exactly the
  divisibility a constant would have shown (16 elements is beyond the widest vector access);
* ``EVEN_K`` and the templates' contiguity hints (``M >= BLOCK_M`` ...), which Inductor decides
  at compile time from the constant shape.

Operands are contiguous (``row``: the last dimension has stride 1, ``col``: the transpose of a
contiguous matrix, as nn.Linear's weight); the output is row-major; a ``row`` bias is broadcast
over rows (stride 0), a ``full`` bias is a contiguous addend.
"""

from __future__ import annotations

import os
from typing import Any

import triton
import triton.language as tl

from ...problem import GemmProblem, KernelConfig
from ...tf32 import triton_tf32_active

BIAS_MODES = {"none": 0, "row": 1, "full": 2}
_SIZE_ARGS = ["M_q", "N_q", "K_q"]


@triton.jit
def _prologue(
    M_q, N_q, K_q, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, DIV_M: tl.constexpr, DIV_N: tl.constexpr, DIV_K: tl.constexpr,
    HINT_A: tl.constexpr, HINT_B: tl.constexpr,
):  # fmt: skip
    """What both templates compute first: sizes, strides, the tile's position (grouped for L2
    reuse) and its row and column offsets, wrapped around M and N (``rm % M``: no load masks)."""
    M = M_q * DIV_M
    N = N_q * DIV_N
    K = K_q * DIV_K
    if A_COL:
        stride_am = 1
        stride_ak = M
    else:
        stride_am = K
        stride_ak = 1
    if B_COL:
        stride_bk = 1
        stride_bn = K
    else:
        stride_bk = N
        stride_bn = 1

    pid = tl.program_id(0)
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // (group_size)
    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if HINT_A:
        offs_m = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    else:
        offs_m = rm % M
    if HINT_B:
        offs_n = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    else:
        offs_n = rn % N
    return M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n, offs_m, offs_n


@triton.jit
def _epilogue(
    C, BIAS, acc, pid_m, pid_n, M, N, idx_q,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BIAS_MODE: tl.constexpr, ACC_TYPE: tl.constexpr,
):  # fmt: skip
    """Add the bias and store the tile, masked to the output (batch ``idx_q``, 0 for mm)."""
    # rematerialize rm and rn to save registers (as the templates do)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    idx_m = rm[:, None]
    idx_n = rn[None, :]
    mask = (idx_m < M) & (idx_n < N)
    if BIAS_MODE == 1:
        acc += tl.load(BIAS + idx_n, mask).to(ACC_TYPE)
    elif BIAS_MODE == 2:
        acc += tl.load(BIAS + (idx_n + N * idx_m + M * N * idx_q), mask).to(ACC_TYPE)
    tl.store(C + (idx_n + N * idx_m + M * N * idx_q), acc.to(C.dtype.element_ty), mask)


@triton.jit(do_not_specialize=_SIZE_ARGS)
def mm_kernel(
    A, B, C, BIAS, M_q, N_q, K_q,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr, ALLOW_TF32: tl.constexpr, ACC_TYPE: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, BIAS_MODE: tl.constexpr,
    DIV_M: tl.constexpr, DIV_N: tl.constexpr, DIV_K: tl.constexpr,
    HINT_A: tl.constexpr, HINT_B: tl.constexpr,
):  # fmt: skip
    M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n, offs_a_m, offs_b_n = _prologue(
        M_q, N_q, K_q, BLOCK_M, BLOCK_N, GROUP_M, A_COL, B_COL, DIV_M, DIV_N, DIV_K, HINT_A, HINT_B
    )
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)

    for k_idx in range(0, tl.cdiv(K, BLOCK_K)):
        a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)
        b_k_idx_vals = offs_k[:, None] + (k_idx * BLOCK_K)
        a_ptrs = A + (offs_a_m[:, None] * stride_am + a_k_idx_vals * stride_ak)
        b_ptrs = B + (b_k_idx_vals * stride_bk + offs_b_n[None, :] * stride_bn)
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=offs_k[None, :] < (K - k_idx * BLOCK_K), other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < (K - k_idx * BLOCK_K), other=0.0)
        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)

    _epilogue(C, BIAS, acc, pid_m, pid_n, M, N, 0, BLOCK_M, BLOCK_N, BIAS_MODE, ACC_TYPE)


@triton.jit(do_not_specialize=_SIZE_ARGS)
def bmm_kernel(
    A, B, C, BIAS, M_q, N_q, K_q,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EVEN_K: tl.constexpr, ALLOW_TF32: tl.constexpr, ACC_TYPE: tl.constexpr,
    A_COL: tl.constexpr, B_COL: tl.constexpr, BIAS_MODE: tl.constexpr,
    DIV_M: tl.constexpr, DIV_N: tl.constexpr, DIV_K: tl.constexpr,
    HINT_A: tl.constexpr, HINT_B: tl.constexpr,
):  # fmt: skip
    M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n, ram, rbn = _prologue(
        M_q, N_q, K_q, BLOCK_M, BLOCK_N, GROUP_M, A_COL, B_COL, DIV_M, DIV_N, DIV_K, HINT_A, HINT_B
    )
    rk = tl.arange(0, BLOCK_K)

    idx_q = tl.program_id(1)  # batch dimension for BMM
    A = A + (ram[:, None] * stride_am + rk[None, :] * stride_ak + idx_q * (M * K))
    B = B + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn + idx_q * (K * N))

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    for k in range(K, 0, -BLOCK_K):
        if EVEN_K:
            a = tl.load(A)
            b = tl.load(B)
        else:
            a = tl.load(A, mask=rk[None, :] < k, other=0.0)
            b = tl.load(B, mask=rk[:, None] < k, other=0.0)
        acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)
        A += BLOCK_K * stride_ak
        B += BLOCK_K * stride_bk

    _epilogue(C, BIAS, acc, pid_m, pid_n, M, N, idx_q, BLOCK_M, BLOCK_N, BIAS_MODE, ACC_TYPE)


def divisibility(size: int) -> int:
    """The largest power of two dividing ``size``, at most 16 (what Triton can use)."""
    div = 1
    while div < 16 and size % (div * 2) == 0:
        div *= 2
    return div


def specialization(problem: GemmProblem, config: KernelConfig) -> dict[str, Any]:
    """The constexprs of ``config`` on ``problem``; problems with equal values share a kernel.

    A size's divisibility is kept only where it reaches a memory stride (the sizes along
    which an operand is contiguous, and N for the row-major output), so that problems that
    compile to the same code share one kernel.
    """
    a_col, b_col = problem.a_layout == "col", problem.b_layout == "col"
    if problem.a_layout not in ("row", "col") or problem.b_layout not in ("row", "col"):
        raise ValueError(f"the sweep times contiguous operands only, not {problem.describe()}")
    batched = problem.op in ("bmm", "baddbmm")
    # The mm template adds `M >= BLOCK_M` to its contiguity hints, the bmm template does not. A
    # hint changes the generated code only along the dimension an operand is contiguous in
    # (tests/test_collect_kernel.py compares the PTX), elsewhere it is fixed to share kernels.
    hint_a = batched or not a_col or (problem.m >= config.block_m and problem.k > 1)
    hint_b = batched or b_col or (problem.n >= config.block_n and problem.k > 1)
    return {
        "BLOCK_M": config.block_m,
        "BLOCK_N": config.block_n,
        "BLOCK_K": config.block_k,
        "GROUP_M": config.group_m,
        "EVEN_K": problem.k % config.block_k == 0,
        # as the running Inductor's template does; shards that record no rule were timed by alignment
        "ALLOW_TF32": triton_tf32_active(problem),
        "ACC_TYPE": tl.float32,
        "A_COL": a_col,
        "B_COL": b_col,
        "BIAS_MODE": BIAS_MODES[problem.bias],
        "DIV_M": divisibility(problem.m) if a_col else 1,
        "DIV_N": divisibility(problem.n),
        "DIV_K": divisibility(problem.k) if (b_col or not a_col) else 1,
        "HINT_A": hint_a,
        "HINT_B": hint_b,
    }


def compile_key(problem: GemmProblem, config: KernelConfig) -> tuple:
    """Identity of the compiled kernel that times ``config`` on ``problem``."""
    spec = specialization(problem, config)
    spec["ACC_TYPE"] = "fp32"
    return (
        problem.op in ("bmm", "baddbmm"),
        problem.dtype,
        problem.out_dtype,
        config.num_stages,
        config.num_warps,
        tuple(sorted(spec.items())),
    )


def grid(problem: GemmProblem, config: KernelConfig) -> tuple[int, int, int]:
    """The launch grid: one program per output tile (and per batch for bmm)."""
    tiles = triton.cdiv(problem.m, config.block_m) * triton.cdiv(problem.n, config.block_n)
    return (tiles, problem.batch if problem.op in ("bmm", "baddbmm") else 1, 1)


def size_args(problem: GemmProblem, config: KernelConfig) -> tuple[int, int, int]:
    """``M_q, N_q, K_q``: the sizes divided by the divisors of their specialization."""
    spec = specialization(problem, config)
    return problem.m // spec["DIV_M"], problem.n // spec["DIV_N"], problem.k // spec["DIV_K"]


def launch_args(problem: GemmProblem, config: KernelConfig, a, b, c, bias=None) -> tuple:
    """The kernel's positional arguments for ``problem``'s tensors, constexprs included (as
    Triton's launchers take them). Without a bias the output stands in for the unused pointer."""
    return (a, b, c, c if bias is None else bias, *size_args(problem, config), *specialization(problem, config).values())


def compile_for(key: tuple):
    """Compile (or load from Triton's cache) the kernel of a :func:`compile_key`; returns
    Triton's ``CompiledKernel``. Needs no tensors: Triton's ``warmup`` takes dtypes."""
    import torch

    batched, dtype, out_dtype, num_stages, num_warps, spec_items = key
    spec = dict(spec_items, ACC_TYPE=tl.float32)
    fn = bmm_kernel if batched else mm_kernel
    if os.environ.get("TRITON_INTERPRET") == "1":
        return fn  # Triton's interpreter (tests) compiles nothing: the function itself launches
    in_type, out_type = getattr(torch, dtype), getattr(torch, out_dtype)
    # pointers as dtypes (16-byte aligned, as allocations are) and sizes as unspecialized ints
    return fn.warmup(
        in_type, in_type, out_type, out_type, 1, 1, 1, grid=(1,), num_warps=num_warps, num_stages=num_stages, **spec
    )


def load_module(compiled) -> None:
    """Load a compiled kernel's module into the current CUDA context and build its launcher, as
    Triton does at the kernel's first launch (which then costs no more than any other launch).
    Raises what that launch would (too little shared memory, too many threads)."""
    # Triton's CompiledKernel; the interpreter's function has no handles, and a Triton without
    # this method loads them at the first launch
    init_handles = getattr(compiled, "_init_handles", None)
    if init_handles is not None:
        init_handles()
