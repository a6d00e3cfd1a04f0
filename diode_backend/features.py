"""Problem x config -> feature matrix, batched: the input of learned scorers.

One interface (:class:`FeatureExtractor`), registered by schema name through the
``diode_register_feature_extractors`` hook. A model checkpoint records the schema name and
version it was trained with; loading refuses a mismatch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import torch

from .problem import DTYPE_BYTES, KIND_ATEN, KIND_TRITON, GemmProblem, HardwareInfo, KernelConfig


@runtime_checkable
class FeatureExtractor(Protocol):
    """Turns one problem and its candidates into a float32 matrix, one row per candidate."""

    schema: str
    version: int
    names: tuple[str, ...]

    def extract(
        self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
    ) -> torch.Tensor: ...


_DTYPES = ("float16", "bfloat16", "float32")
_PROBLEM_NAMES = (
    "log2_m", "log2_n", "log2_k", "log2_batch",
    "dtype_f16", "dtype_bf16", "dtype_f32", "allow_tf32",
    "a_col", "b_col", "bias_row", "bias_full", "batched",
    "log2_flops", "log2_min_bytes", "log2_intensity",
)  # fmt: skip
_CONFIG_NAMES = (
    "kind_aten", "kind_triton", "kind_other",
    "log2_block_m", "log2_block_n", "log2_block_k", "num_stages", "num_warps", "log2_group_m",
    "log2_tiles", "waves", "wave_efficiency", "sm_fill",
    "pad_waste_m", "pad_waste_n", "pad_waste_k", "smem_fraction", "log2_k_steps",
    "acc_regs_per_thread", "log2_tile_intensity",
)  # fmt: skip


class GemmFeatures:
    """Schema ``gemm`` v1: size logs, dtype/layout flags, tile, wave and padding features."""

    schema = "gemm"
    version = 1
    names = _PROBLEM_NAMES + _CONFIG_NAMES

    def extract(
        self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
    ) -> torch.Tensor:
        n = len(configs)
        p = problem
        in_bytes = DTYPE_BYTES.get(p.dtype, 4)
        problem_row = torch.tensor(
            [
                math.log2(p.m), math.log2(p.n), math.log2(p.k), math.log2(p.batch),
                *(float(p.dtype == d) for d in _DTYPES), float(p.allow_tf32),
                float(p.a_layout == "col"), float(p.b_layout == "col"),
                float(p.bias == "row"), float(p.bias == "full"), float(p.batch > 1),
                math.log2(p.flops), math.log2(p.min_bytes), math.log2(p.flops / p.min_bytes),
            ],
            dtype=torch.float64,
        )  # fmt: skip
        tiles_int = torch.tensor(
            [[c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps, c.group_m] for c in configs],
            dtype=torch.float64,
        ).reshape(n, 6)
        kinds = torch.tensor(
            [[c.kind == KIND_ATEN, c.kind == KIND_TRITON, c.kind not in (KIND_ATEN, KIND_TRITON)] for c in configs],
            dtype=torch.float64,
        ).reshape(n, 3)  # fmt: skip
        has_tile = tiles_int[:, 0] > 0
        # Tile-less kinds (ATen) are described as one full-problem tile.
        bm = torch.where(has_tile, tiles_int[:, 0], float(p.m))
        bn = torch.where(has_tile, tiles_int[:, 1], float(p.n))
        bk = torch.where(has_tile, tiles_int[:, 2], float(p.k))
        stages, warps, group = tiles_int[:, 3], tiles_int[:, 4], tiles_int[:, 5]
        sms = float(hardware.sm_count or 1)
        tiles_m, tiles_n = torch.ceil(p.m / bm), torch.ceil(p.n / bn)
        k_steps = torch.ceil(p.k / bk)
        tiles = tiles_m * tiles_n * p.batch
        waves = torch.ceil(tiles / sms)
        smem = stages * (bm * bk + bk * bn) * in_bytes
        smem_limit = float(hardware.shared_memory_per_block or 232448)
        config_cols = torch.stack(
            [
                *kinds.unbind(1),
                torch.log2(bm), torch.log2(bn), torch.log2(bk), stages, warps,
                torch.log2(group.clamp(min=1)),
                torch.log2(tiles), waves, tiles / (waves * sms), torch.clamp(tiles / sms, max=1.0),
                1 - p.m / (tiles_m * bm), 1 - p.n / (tiles_n * bn), 1 - p.k / (k_steps * bk),
                torch.where(has_tile, smem / smem_limit, torch.zeros_like(smem)),
                torch.log2(k_steps),
                torch.where(has_tile, bm * bn / (32 * warps.clamp(min=1)), torch.zeros_like(bm)),
                torch.log2(bm * bn / (bm + bn)),
            ],
            dim=1,
        )  # fmt: skip
        return torch.cat([problem_row.expand(n, -1), config_cols], dim=1).to(torch.float32)
