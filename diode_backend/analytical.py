"""The built-in analytical scorer: a roofline with wave quantization, tile efficiency and
shared-memory/register fit. It needs no training data, so DIODE works on any CUDA GPU before a
learned model exists, and it is the baseline every learned model must beat.

All times are microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .problem import DTYPE_BYTES, KIND_ATEN, GemmProblem, HardwareInfo, KernelConfig
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
        rates = _Rates.of(problem, hardware)
        times = tuple(_predict_one(problem, c, hardware, rates) for c in configs)
        return Prediction(times_us=times, confidence=None)


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


def _predict_one(
    problem: GemmProblem, config: KernelConfig, hardware: HardwareInfo, rates: _Rates
) -> float:
    if config.kind == KIND_ATEN:
        return _library_time(problem, rates, config.template)
    if config.block_m and config.block_n and config.block_k:
        return _tiled_time(problem, config, hardware, rates)
    return math.nan  # decompose-k, subgraphs, unknown kinds: no model for them


def _library_time(problem: GemmProblem, rates: _Rates, template: str) -> float:
    """cuBLAS-like: near-peak compute, near-peak bandwidth, a larger fixed cost."""
    compute = problem.flops / (rates.flops_per_us * 0.80)
    memory = problem.min_bytes / (rates.dram_bytes_per_us * 0.85)
    fixed = _LAUNCH_US + 2.0
    if template.endswith("bias_addmm"):
        fixed -= 0.5  # bias fused in the cuBLASLt epilogue
    return max(compute, memory) + fixed


def _tiled_time(
    problem: GemmProblem, c: KernelConfig, hardware: HardwareInfo, rates: _Rates
) -> float:
    bm, bn, bk = c.block_m, c.block_n, c.block_k
    stages, warps = max(c.num_stages, 1), max(c.num_warps, 1)
    in_bytes = rates.in_bytes

    smem = stages * (bm * bk + bk * bn) * in_bytes
    smem_limit = hardware.shared_memory_per_block or 232448
    if smem > smem_limit:
        return math.inf  # does not compile/launch
    acc_regs = bm * bn / (32 * warps)  # fp32 accumulator registers per thread
    regs = acc_regs + (bm * bk + bk * bn) * in_bytes / 4 / (32 * warps) + 32
    spill = 1.0 if regs <= 255 else (regs / 255.0) ** 2

    sms = hardware.sm_count or 132
    ctas_per_sm = min(
        _MAX_WARPS_PER_SM // warps,
        max(_SMEM_PER_SM // max(smem, 1), 1),
        max(int(_REGS_PER_SM // (min(regs, 255) * 32 * warps)), 1),
    )
    ctas_per_sm = max(ctas_per_sm, 1)
    tiles_m, tiles_n = math.ceil(problem.m / bm), math.ceil(problem.n / bn)
    tiles = tiles_m * tiles_n * problem.batch
    slots = sms * ctas_per_sm
    waves = math.ceil(tiles / slots)
    k_steps = math.ceil(problem.k / bk)

    # Padded work: the tile grid computes full tiles; wave quantization idles SMs in the last wave.
    padded_flops = 2.0 * tiles * bm * bn * k_steps * bk
    busy_fraction = tiles / (waves * slots) if waves else 1.0
    sm_fraction = min(1.0, tiles / sms)  # fewer tiles than SMs leaves SMs unused
    efficiency = _tile_efficiency(bm, bn, bk, warps, stages, problem.dtype) / spill
    compute = padded_flops / (rates.flops_per_us * efficiency * max(sm_fraction, 1e-3))
    compute /= max(busy_fraction, 1e-3) ** 0.5 if tiles > sms else 1.0

    # Every tile streams its A row panel and B column panel (served from L2 after the first
    # read); DRAM sees each operand roughly once when grouping keeps panels resident.
    tile_bytes = tiles * k_steps * bk * (bm + bn) * in_bytes
    l2_time = tile_bytes / (rates.dram_bytes_per_us * _L2_OVER_DRAM)
    dram_time = problem.min_bytes / (rates.dram_bytes_per_us * 0.9)
    memory = max(l2_time, dram_time)

    # The K loop is a chain: each step costs a latency that only deeper pipelines hide.
    hidden = min(1.0, (stages - 1) / 3.0)
    latency = waves * k_steps * _K_STEP_US * (1.0 - 0.7 * hidden)
    return max(compute, memory) + latency + _LAUNCH_US


def _tile_efficiency(bm: int, bn: int, bk: int, warps: int, stages: int, dtype: str) -> float:
    """Fraction of peak one tile shape reaches when it is not memory bound (0..1]."""
    # Tensor-core instructions want >= 64x64 per warpgroup; smaller tiles waste issue slots.
    shape = min(1.0, bm / 64.0) ** 0.5 * min(1.0, bn / 64.0) ** 0.5
    depth = min(1.0, bk * DTYPE_BYTES.get(dtype, 4) / 64.0) ** 0.3  # short K steps: overhead
    # Too few warps for a big tile serialise the MMA issue; too many for a small tile idle.
    per_warp = bm * bn / warps
    balance = 1.0 if 512 <= per_warp <= 4096 else (0.8 if per_warp < 512 else 0.85)
    pipeline = 0.75 if stages == 1 else 1.0
    return 0.85 * shape * depth * balance * pipeline
