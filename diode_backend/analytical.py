"""The built-in analytical scorer: a roofline with wave quantization, tile efficiency and
shared-memory/register fit. It needs no training data, so DIODE works on any CUDA GPU before a
learned model exists, and it is the baseline every learned model must beat.

All times are microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .config_table import ConfigTable
from .problem import DTYPE_BYTES, GemmProblem, HardwareInfo, KernelConfig
from .scorer import Prediction

VERSION = 1

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
_SMEM_PER_SM = 232448  # Hopper; smaller parts are limited by shared_memory_per_block below


class AnalyticalScorer:
    """Ranks candidates with a roofline model; see the module docstring."""

    name = "analytical"
    identity = f"analytical-v{VERSION}"

    def predict(
        self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
    ) -> Prediction:
        times = estimate_times_us(problem, ConfigTable.of(configs), hardware)
        return Prediction(times_us=tuple(times.tolist()), confidence=None)


def estimate_times_us(problem: GemmProblem, table: ConfigTable, hardware: HardwareInfo) -> torch.Tensor:
    """Predicted runtime in microseconds of each config row, float64 ``[n]``: ``inf`` where a
    tile cannot launch (shared memory), ``nan`` for kinds with no model (decompose-k, ...)."""
    rates = _Rates.of(problem, hardware)
    tiled = _tiled_times(problem, table.tiles, hardware, rates)
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
    compute = problem.flops / (rates.flops_per_us * 0.80)
    memory = problem.min_bytes / (rates.dram_bytes_per_us * 0.85)
    return max(compute, memory) + _LAUNCH_US + 2.0


def _tiled_times(
    problem: GemmProblem, tiles: torch.Tensor, hardware: HardwareInfo, rates: _Rates
) -> torch.Tensor:
    """Triton template time per row of ``tiles`` (see :class:`ConfigTable`); rows without tiles
    get meaningless values that the caller masks."""
    bm, bn, bk = (tiles[:, i].clamp(min=1) for i in range(3))
    stages, warps = tiles[:, 3].clamp(min=1), tiles[:, 4].clamp(min=1)
    in_bytes = rates.in_bytes

    smem = stages * (bm * bk + bk * bn) * in_bytes
    smem_limit = hardware.shared_memory_per_block or 232448
    acc_regs = bm * bn / (32 * warps)  # fp32 accumulator registers per thread
    regs = acc_regs + (bm * bk + bk * bn) * in_bytes / 4 / (32 * warps) + 32
    spill = torch.where(regs <= 255, 1.0, (regs / 255.0) ** 2)

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
    efficiency = _tile_efficiency(bm, bn, bk, warps, stages, problem.dtype) / spill
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
