"""The built-in analytical scorer: a roofline with wave quantization, tile efficiency and
shared-memory/register fit. Tensor-core tiles that spill registers, or that fall back to mma.sync
on Hopper, are slowed accordingly; float32 without TF32, whose dot runs on the FP32 pipes instead
of tensor cores, gets its own throughput and register model, as do the Triton tiles of a float32
problem that allows TF32 where their rule keeps it off (:mod:`diode_backend.tf32`; cuBLAS keeps
it). It needs no training data, so DIODE works on any CUDA GPU before a learned model
exists, and it is the baseline every learned model must beat.

All times are microseconds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch

from .config_table import ConfigTable
from .problem import DTYPE_BYTES, HOPPER_SHARED_MEMORY_PER_BLOCK, GemmProblem, HardwareInfo, KernelConfig
from .scorer import Prediction
from .tf32 import triton_tf32_active

#: v4: Triton tiles run TF32 only where their rule turns it on (v3 costed them all at the TF32 rate).
VERSION = 4

# Fallback peaks (dense TFLOP/s, GB/s) per compute-capability major when the hardware hook
# gives none: roughly an A100 (8.x) and an H100 SXM (9.x), scaled by SM count below.
_DEFAULT_PEAKS = {
    8: ({"float16": 312.0, "bfloat16": 312.0, "tf32": 156.0, "float32": 19.5}, 2039.0, 108),
    9: ({"float16": 989.0, "bfloat16": 989.0, "tf32": 494.0, "float32": 67.0}, 3350.0, 132),
}
_LAUNCH_US = 4.0  # kernel launch plus prologue/epilogue, measured order on Hopper
_K_STEP_US = 0.045  # latency of one K-loop step that pipelining cannot hide
_L2_OVER_DRAM = 2.5  # L2 bandwidth over DRAM bandwidth
_MAX_WARPS_PER_SM = 64
_REGS_PER_SM = 65536
_SMEM_PER_SM = HOPPER_SHARED_MEMORY_PER_BLOCK  # smaller parts are limited by shared_memory_per_block below
_SM_SUBPARTITIONS = 4  # an SM issues from four sub-partitions, 32 FP32 lanes each
# float32 without TF32 runs tl.dot on the FP32 pipes (FFMA), not on tensor cores.
_FMA_PEAK_FRACTION = 0.75  # of the FP32 peak, for a K loop of FFMAs only (clocks, loop overhead)
_FMA_COLS = 4  # Triton's FMA layout gives a thread 4 adjacent accumulator columns (2 if tiny)
_FMA_COPY_INSTRS = 3.0  # instructions per 4-byte cp.async (the FMA path copies unvectorised)
_FMA_BASE_REGS = 64  # registers for pointers, loop state and masks
_FMA_LIVE_K = 0.15  # share of a K step's operand fragments the unrolled loop keeps in registers
_FMA_REG_ONSET = 192  # register demand from which stalls, then spills, slow the loop
_FMA_SPILL_COST = 4.0  # slowdown per 255 registers of demand over the onset
_FMA_LIBRARY_EFFICIENCY = 0.55  # cuBLAS SGEMM: 33-38 of 67 TFLOP/s on large H100 problems
# Tensor-core dots (bf16, fp16, tf32): register demand per thread, fitted to ptxas counts of
# Inductor-style kernels compiled with Triton 3.6 for sm_90a.
_TC_BASE_REGS = 40  # pointers, offsets, loop state, masks
_TC_OPERAND_LIVE = 3.0  # live registers per register of a thread's share of a K step's A and B
_TC_MMA_ACC_LIVE = 2.0  # mma.sync (no wgmma) keeps operand fragments beside each accumulator
_TC_SPILL_COST = 2.0  # slowdown at 255 registers of demand past 255, growing as its square root
_TC_MMA_FRACTION = 0.8  # mma.sync reaches this share of what wgmma does on Hopper


class AnalyticalScorer:
    """Ranks candidates with a roofline model; see the module docstring."""

    name = "analytical"
    identity = f"analytical-v{VERSION}"

    def predict(
        self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
    ) -> Prediction:
        times = estimate_times_us(problem, ConfigTable.of(configs), hardware)
        return Prediction(times_us=tuple(times.tolist()), confidence=None)


def estimate_times_us(
    problem: GemmProblem, table: ConfigTable, hardware: HardwareInfo, *, follow_tf32_rule: bool = True
) -> torch.Tensor:
    """Predicted runtime in microseconds of each config row, float64 ``[n]``: ``inf`` where a
    tile cannot launch (shared memory), ``nan`` for kinds with no model (decompose-k, ...).

    Tiles of a float32 problem allowing TF32 run TF32 where ``hardware.triton_tf32_rule`` says so
    (:mod:`diode_backend.tf32`), cuBLAS always; ``follow_tf32_rule=False`` costs every tile at the
    TF32 rate, as analytical v3 did: the feature schema ``gemm`` v4-v6 is defined on that estimate.
    """
    rates = _Rates.of(problem, hardware)
    tiled_problem, tiled_rates = problem, rates
    tf32_allowed = problem.dtype == "float32" and problem.allow_tf32
    if follow_tf32_rule and tf32_allowed and not triton_tf32_active(problem, hardware.triton_tf32_rule):
        tiled_problem = dataclasses.replace(problem, allow_tf32=False)  # its dots run on the FP32 pipes
        tiled_rates = _Rates.of(tiled_problem, hardware)
    tiled = _tiled_times(tiled_problem, table.tiles, hardware, tiled_rates)
    has_tiles = (table.tiles[:, :3] > 0).all(dim=1)
    library = _library_time(problem, rates) - 0.5 * table.bias_epilogue.double()
    times = torch.where(has_tiles, tiled, torch.full_like(tiled, math.nan))
    return torch.where(table.aten, library, times)


class _Rates:
    """Per-problem device rates: matrix TFLOP/s, DRAM GB/s, bytes per element."""

    def __init__(self, flops_per_us: float, dram_bytes_per_us: float, in_bytes: int) -> None:
        self.flops_per_us = flops_per_us
        self.dram_bytes_per_us = dram_bytes_per_us
        self.in_bytes = in_bytes

    @classmethod
    def of(cls, problem: GemmProblem, hardware: HardwareInfo) -> _Rates:
        major = hardware.compute_capability[0]
        default_peaks, default_bw, default_sms = _DEFAULT_PEAKS.get(major, _DEFAULT_PEAKS[8])
        scale = (hardware.sm_count or default_sms) / default_sms
        rate_key = problem.dtype
        if problem.dtype == "float32" and problem.allow_tf32:
            rate_key = "tf32"
        peak = hardware.peak_tflops.get(rate_key) or default_peaks.get(rate_key, 19.5) * scale
        bandwidth = hardware.memory_bandwidth_gbps or default_bw
        # TFLOP/s -> flop/us is 1e6; GB/s -> bytes/us is 1e3
        return cls(peak * 1e6, bandwidth * 1e3, DTYPE_BYTES.get(problem.dtype, 4))


def _library_time(problem: GemmProblem, rates: _Rates) -> float:
    """cuBLAS-like: near-peak compute, near-peak bandwidth, a larger fixed cost."""
    efficiency = _FMA_LIBRARY_EFFICIENCY if _runs_on_fma(problem) else 0.80
    compute = problem.flops / (rates.flops_per_us * efficiency)
    memory = problem.min_bytes / (rates.dram_bytes_per_us * 0.85)
    return max(compute, memory) + _LAUNCH_US + 2.0


def _tiled_times(problem: GemmProblem, tiles: torch.Tensor, hardware: HardwareInfo, rates: _Rates) -> torch.Tensor:
    """Triton template time per row of ``tiles`` (see :class:`ConfigTable`); rows without tiles
    get meaningless values that the caller masks."""
    bm, bn, bk = (tiles[:, i].clamp(min=1) for i in range(3))
    stages, warps = tiles[:, 3].clamp(min=1), tiles[:, 4].clamp(min=1)
    in_bytes = rates.in_bytes

    smem = stages * (bm * bk + bk * bn) * in_bytes
    smem_limit = hardware.shared_memory_limit
    acc_regs = bm * bn / (32 * warps)  # fp32 accumulator registers per thread
    fma = _runs_on_fma(problem)
    if fma:
        regs, efficiency = _fma_registers_and_efficiency(bm, bn, bk, warps, acc_regs)
    else:
        regs, pressure = _tensor_core_registers_and_pressure(problem, bm, bn, bk, warps, acc_regs, hardware)
        efficiency = _tile_efficiency(bm, bn, bk, warps, stages, problem.dtype) / pressure

    sms = hardware.sm_count or 132
    ctas_per_sm = torch.minimum(
        torch.floor(_MAX_WARPS_PER_SM / warps),
        torch.minimum(
            torch.floor(_SMEM_PER_SM / smem.clamp(min=1)).clamp(min=1),
            torch.floor(_REGS_PER_SM / (regs.clamp(max=255) * 32 * warps)).clamp(min=1),
        ),
    ).clamp(min=1)
    tiles_m, tiles_n = torch.ceil(problem.m / bm), torch.ceil(problem.n / bn)
    n_tiles = tiles_m * tiles_n * problem.batch
    slots = sms * ctas_per_sm
    waves = torch.ceil(n_tiles / slots)
    k_steps = torch.ceil(problem.k / bk)

    # Padded work: the tile grid computes full tiles; wave quantization idles SMs in the last wave.
    padded_flops = 2.0 * n_tiles * bm * bn * k_steps * bk
    busy_fraction = n_tiles / (waves * slots)
    sm_fraction = (n_tiles / sms).clamp(max=1.0)  # fewer tiles than SMs leaves SMs unused
    if fma:  # FFMAs issue only from sub-partitions that hold a warp: 1- and 2-warp CTAs idle lanes
        warps_per_sm = warps * torch.minimum(ctas_per_sm, torch.ceil(n_tiles / sms))
        efficiency = efficiency * (warps_per_sm / _SM_SUBPARTITIONS).clamp(max=1.0)
    compute = padded_flops / (rates.flops_per_us * efficiency * sm_fraction.clamp(min=1e-3))
    compute = torch.where(n_tiles > sms, compute / busy_fraction.clamp(min=1e-3) ** 0.5, compute)

    # Every tile streams its A row panel and B column panel (served from L2 after the first
    # read); DRAM sees each operand roughly once when grouping keeps panels resident.
    tile_bytes = n_tiles * k_steps * bk * (bm + bn) * in_bytes
    l2_time = tile_bytes / (rates.dram_bytes_per_us * _L2_OVER_DRAM)
    dram_time = problem.min_bytes / (rates.dram_bytes_per_us * 0.9)
    memory = l2_time.clamp(min=dram_time)

    # The K loop is a chain: each step costs a latency that only deeper pipelines hide.
    hidden = ((stages - 1) / 3.0).clamp(max=1.0)
    latency = waves * k_steps * _K_STEP_US * (1.0 - 0.7 * hidden)
    times = torch.maximum(compute, memory) + latency + _LAUNCH_US
    return torch.where(smem > smem_limit, math.inf, times)  # does not compile/launch


def _fma_registers_and_efficiency(
    bm: torch.Tensor, bn: torch.Tensor, bk: torch.Tensor, warps: torch.Tensor, acc_regs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Registers per thread and fraction of the FP32 peak (0..1] of Triton's FMA dot, per tile.

    A thread owns ``rows x cols`` accumulators; for every K element it reads ``rows`` A values
    and ``cols`` B values from shared memory (16-byte loads) and issues ``rows * cols`` FFMAs.
    """
    cols = torch.where(acc_regs <= 8, 2.0, float(_FMA_COLS))
    rows = acc_regs / cols
    lanes_n = (bn / cols).clamp(max=32)  # threads of a warp side by side along N
    copies = (bm + bn) / (32 * warps)  # 4-byte global-to-shared copies per thread per K element
    # Shared-memory wavefronts (128 bytes, one per clock per SM) per warp and K element: A rows
    # (the distinct rows a warp reads share banks, an unswizzled tile), B columns, copy writes.
    wavefronts = rows * (32 / lanes_n) / 4 + lanes_n * cols / 32 + copies
    smem_bound = (_SM_SUBPARTITIONS * wavefronts / acc_regs).clamp(min=1.0)
    issue = acc_regs / (acc_regs + (rows + cols) / 4 + _FMA_COPY_INSTRS * copies)
    # The K loop is unrolled: part of each step's A and B fragments is live beside the
    # accumulators. Past the onset ptxas trades latency hiding for registers, past 255 it spills.
    regs = _FMA_BASE_REGS + acc_regs + _FMA_LIVE_K * bk * (rows + cols)
    pressure = 1.0 + _FMA_SPILL_COST * (regs - _FMA_REG_ONSET).clamp(min=0) / 255
    return regs, _FMA_PEAK_FRACTION * issue / smem_bound / pressure


def _tensor_core_registers_and_pressure(
    problem: GemmProblem,
    bm: torch.Tensor,
    bn: torch.Tensor,
    bk: torch.Tensor,
    warps: torch.Tensor,
    acc_regs: torch.Tensor,
    hardware: HardwareInfo,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Register demand per thread and slowdown (>= 1) of a tensor-core tile from register spills
    and, on Hopper, from falling back to mma.sync.

    Each K step's A and B tiles pass through registers (loads, pointers, layout conversion), so
    a thread's share of them costs about ``_TC_OPERAND_LIVE`` times its size. On Hopper Triton
    uses wgmma for 4- and 8-warp tiles with BLOCK_M >= 64 (accumulators only in registers);
    other tiles use mma.sync, which also holds operand fragments beside the accumulators.
    """
    # a thread's registers for the A and B tiles of one K step, times how long they stay live
    operand_regs = bk * (bm + bn) / warps * (_TC_OPERAND_LIVE * DTYPE_BYTES.get(problem.dtype, 4) / 4 / 32)
    hopper = hardware.compute_capability[0] >= 9
    mma_sync = (warps < 4) | (bm < 64) if hopper else torch.ones_like(bm, dtype=torch.bool)
    regs = torch.where(mma_sync, _TC_MMA_ACC_LIVE, 1.0).mul_(acc_regs).add_(operand_regs).add_(_TC_BASE_REGS)
    # Spilled values round-trip through local memory (mostly L1); on the H100 timings the cost
    # grows more slowly than the excess, so it rises as its square root.
    pressure = (regs - 255).clamp_(min=0).div_(255).sqrt_().mul_(_TC_SPILL_COST).add_(1.0)
    if hopper:
        pressure = pressure.mul_(torch.where(mma_sync, 1.0 / _TC_MMA_FRACTION, 1.0))
    return regs, pressure


def _runs_on_fma(problem: GemmProblem) -> bool:
    """float32 without TF32: tl.dot and cuBLAS run on the FP32 pipes, not on tensor cores."""
    return problem.dtype == "float32" and not problem.allow_tf32


def _tile_efficiency(
    bm: torch.Tensor, bn: torch.Tensor, bk: torch.Tensor, warps: torch.Tensor, stages: torch.Tensor, dtype: str
) -> torch.Tensor:
    """Fraction of peak one tile shape reaches when it is not memory bound (0..1]."""
    # Tensor-core instructions want >= 64x64 per warpgroup; smaller tiles waste issue slots.
    shape = (bm / 64.0).clamp(max=1.0) ** 0.5 * (bn / 64.0).clamp(max=1.0) ** 0.5
    depth = (bk * DTYPE_BYTES.get(dtype, 4) / 64.0).clamp(max=1.0) ** 0.3  # short K steps: overhead
    # Too few warps for a big tile serialise the MMA issue; too many for a small tile idle.
    per_warp = bm * bn / warps
    balance = torch.where(per_warp < 512, 0.8, torch.where(per_warp > 4096, 0.85, 1.0))
    pipeline = torch.where(stages == 1, 0.75, 1.0)
    return 0.85 * shape * depth * balance * pipeline
