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

from .analytical import estimate_times_us
from .config_table import ATEN_CALLS, ConfigTable
from .problem import DTYPE_BYTES, GemmProblem, HardwareInfo, KernelConfig
from .tf32 import triton_tf32_active


@runtime_checkable
class FeatureExtractor(Protocol):
    """Turns one problem and its candidates into a float32 matrix, one row per candidate.

    An extractor may also offer ``at_version(version) -> FeatureExtractor | None``, an
    extractor of an earlier version of its schema, so that models trained on it still load.
    """

    schema: str
    version: int
    names: tuple[str, ...]

    def extract(
        self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
    ) -> torch.Tensor: ...


class _Columns:
    """An earlier version of :class:`GemmFeatures` whose columns are a subset of the current
    one's, in the same order: it writes only those (gathering them afterwards cost a sixth of
    the extraction on 2,000 candidates)."""

    def __init__(self, current: GemmFeatures, version: int, names: tuple[str, ...]) -> None:
        self.current, self.schema, self.version, self.names = current, current.schema, version, names
        #: v4-v6 embed analytical v3's estimate, which costs every Triton tile of a TF32 problem as TF32
        self.follow_tf32_rule = version >= 7
        positions = [current.names.index(name) for name in names]
        if positions != sorted(positions):
            raise ValueError(f"{current.schema} v{version}'s columns are not in v{current.version}'s order")
        #: for each current column, where it goes in this version's matrix, -1 if nowhere
        self.slots = [names.index(name) if name in names else -1 for name in current.names]

    def extract(self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo) -> torch.Tensor:
        return self.current.extract_into(problem, configs, hardware, self.slots, follow_tf32_rule=self.follow_tf32_rule)


_DTYPES = ("float16", "bfloat16", "float32")
_PROBLEM_NAMES = (
    "log2_m", "log2_n", "log2_k", "log2_batch",
    "dtype_f16", "dtype_bf16", "dtype_f32", "allow_tf32",
    "a_col", "b_col", "bias_row", "bias_full", "batched",
    "log2_flops", "log2_min_bytes", "log2_intensity",
)  # fmt: skip
#: Sizes whose alignment is a feature: M, N, K and the leading dimension (elements between
#: rows) of A and B as their layouts make it.
_ALIGNED = ("m", "n", "k", "lda", "ldb")
#: Alignments (elements) of :data:`_ALIGNED` sizes, each a 0/1 column, plus "odd".
_ALIGNMENTS = (8, 16, 64, 128)
_ALIGNMENT_NAMES = tuple(
    f"{size}_{test}" for size in _ALIGNED for test in (*(f"mult{a}" for a in _ALIGNMENTS), "odd")
)
#: Decode rows: cuBLAS has a GEMV path for M = 1 only, so M = 2..16 behaves unlike M = 1 (v6).
_DECODE_NAMES = ("m_is_1", "m_le_16")
#: cuBLAS's tensor-core kernels want 16-byte aligned leading dimensions (A, B and the output).
_ALIGNED_BYTES = 16
#: Output tile edge of the cuBLAS-like CTA count that stands in for an ATen candidate's grid.
_ATEN_TILE = 128
_CONFIG_NAMES = (
    "kind_aten", "kind_triton", "kind_other",
    "log2_block_m", "log2_block_n", "log2_block_k", "num_stages", "num_warps", "log2_group_m",
    "log2_tiles", "waves", "wave_efficiency", "sm_fill",
    "pad_waste_m", "pad_waste_n", "pad_waste_k", "smem_fraction", "log2_k_steps",
    "acc_regs_per_thread", "log2_tile_intensity",
    "log2_analytical_us", "analytical_scored",
)  # fmt: skip
#: v6: the share of the stages the K loop can fill, and log2(K) where the CTAs underfill the SMs
#: (a few CTAs each run a long K loop: whisper 12x100x64x1500 fp32, ATen 2.56x slower).
_PIPELINE_NAMES = ("stages_over_k_steps", "log2_k_underfilled")
# the ATen call a candidate makes, one column each: cuBLAS picks other kernels per call
_ATEN_NAMES = (*(f"aten_{call}" for call in ATEN_CALLS), "aten_unaligned")
#: v6: which operand's rows are unaligned, the loss growing with size, and a cuBLAS-like grid of
#: 128x128 output tiles (the full-problem tile of the config columns sees only the batch).
_ATEN_SHAPE_NAMES = (
    "aten_unaligned_a", "aten_unaligned_b", "aten_unaligned_c", "aten_unaligned_log2_flops",
    "aten_log2_ctas", "aten_sm_fill",
)  # fmt: skip
#: v7: whether a Triton tile's dots run TF32, which Inductor turns on by a rule that depends on
#: its version (:mod:`diode_backend.tf32`): the others run on the FP32 pipes, several times slower.
_TF32_NAMES = ("triton_tf32_active",)
_V5_NAMES = _PROBLEM_NAMES + _ALIGNMENT_NAMES + _CONFIG_NAMES + _ATEN_NAMES
_V6_NAMES = (
    _PROBLEM_NAMES + _ALIGNMENT_NAMES + _DECODE_NAMES
    + _CONFIG_NAMES + _PIPELINE_NAMES + _ATEN_NAMES + _ATEN_SHAPE_NAMES
)  # fmt: skip
#: log2 of the analytical estimate stands in at this value where the tile cannot launch.
_UNLAUNCHABLE_LOG2_US = 30.0


def leading_dimensions(problem: GemmProblem) -> tuple[int, int]:
    """Elements between consecutive rows (or columns, for ``col``) of A and of B: K or M for A,
    N or K for B (``strided`` operands are taken as ``row``)."""
    lda = problem.m if problem.a_layout == "col" else problem.k
    ldb = problem.k if problem.b_layout == "col" else problem.n
    return lda, ldb


def unaligned_rows(problem: GemmProblem) -> tuple[bool, bool, bool]:
    """Whether A's, B's and the output's rows (lda, ldb, N) are each not 16-byte aligned."""
    in_bytes = DTYPE_BYTES.get(problem.dtype, 4)
    lda, ldb = leading_dimensions(problem)
    return bool(lda * in_bytes % _ALIGNED_BYTES), bool(ldb * in_bytes % _ALIGNED_BYTES), bool(problem.n * in_bytes % _ALIGNED_BYTES)


def aten_rows_unaligned(problem: GemmProblem) -> bool:
    """Whether A's, B's or the output's rows are not 16-byte aligned, which cuBLAS's tensor-core
    kernels want (an ATen candidate then loses several times)."""
    return any(unaligned_rows(problem))


def _aten_only(aten: torch.Tensor, flag: bool, value: float) -> torch.Tensor | float:
    """``value`` on ATen rows where ``flag`` holds; a scalar 0 (cheaper to write) where it does not."""
    return aten * value if flag else 0.0


def _alignment_row(problem: GemmProblem) -> list[float]:
    sizes = (problem.m, problem.n, problem.k, *leading_dimensions(problem))
    return [float(test) for size in sizes for test in (*(size % a == 0 for a in _ALIGNMENTS), size % 2 == 1)]


class GemmFeatures:
    """Schema ``gemm`` v7: size logs, dtype/layout flags, alignment of sizes and leading
    dimensions, decode-row flags (M = 1, M <= 16), tile, wave and padding features, the share of
    the stages the K loop fills and log2(K) where the CTAs underfill the SMs, the analytical
    scorer's estimate (log2 microseconds; 0 with ``analytical_scored`` = 0 for kinds it cannot
    model), and for cuBLAS candidates which ATen call they make, which operand's rows are not
    16-byte aligned (``aten_unaligned``: any of them, where cuBLAS and Triton lose several times;
    times log2 flops, as the loss grows with size) and a cuBLAS-like grid of 128x128 output tiles
    (log2 CTAs, SM fill), and for Triton tiles whether their dots run TF32 by
    ``hardware.triton_tf32_rule`` (which the analytical estimate follows too). Earlier versions
    are in docs/decisions.md; :meth:`at_version` says which still load.
    """

    schema = "gemm"
    version = 7
    names = _V6_NAMES + _TF32_NAMES

    def at_version(self, version: int) -> FeatureExtractor | None:
        """An extractor of ``version`` of this schema, or None: v4's to v6's columns are all
        v7's, and their analytical estimate is still computed, so models trained on them keep
        working."""
        if version == self.version:
            return self
        if version == 6:
            return _Columns(self, version, _V6_NAMES)
        if version == 5:
            return _Columns(self, version, _V5_NAMES)
        if version == 4:
            return _Columns(self, version, _PROBLEM_NAMES + _CONFIG_NAMES)
        return None

    def extract(
        self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
    ) -> torch.Tensor:
        return self.extract_into(problem, configs, hardware, range(len(self.names)))

    def extract_into(
        self,
        problem: GemmProblem,
        configs: Sequence[KernelConfig],
        hardware: HardwareInfo,
        slots: Sequence[int],
        *,
        follow_tf32_rule: bool = True,
    ) -> torch.Tensor:
        """The feature matrix with column ``i`` of :attr:`names` at column ``slots[i]``, left out
        where that is -1 (an earlier version's columns, see :class:`_Columns`);
        ``follow_tf32_rule`` as in :func:`~diode_backend.analytical.estimate_times_us` (False:
        v4-v6's estimate)."""
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
                *_alignment_row(p),
                float(p.m == 1), float(p.m <= 16),
            ],
            dtype=torch.float64,
        )  # fmt: skip
        table = ConfigTable.of(configs)
        has_tile = table.tiles[:, 0] > 0
        # Tile-less kinds (ATen) are described as one full-problem tile.
        bm = torch.where(has_tile, table.tiles[:, 0], float(p.m))
        bn = torch.where(has_tile, table.tiles[:, 1], float(p.n))
        bk = torch.where(has_tile, table.tiles[:, 2], float(p.k))
        stages, warps, group = table.tiles[:, 3], table.tiles[:, 4], table.tiles[:, 5]
        sms = float(hardware.sm_count or 1)
        tiles_m, tiles_n = torch.ceil(p.m / bm), torch.ceil(p.n / bn)
        k_steps = torch.ceil(p.k / bk)
        tiles = tiles_m * tiles_n * p.batch
        waves = torch.ceil(tiles / sms)
        smem = stages * (bm * bk + bk * bn) * in_bytes
        smem_limit = float(hardware.shared_memory_limit)
        estimate = estimate_times_us(p, table, hardware, follow_tf32_rule=follow_tf32_rule)
        scored = ~torch.isnan(estimate)
        log2_estimate = torch.log2(estimate).nan_to_num(nan=0.0, posinf=_UNLAUNCHABLE_LOG2_US)
        unaligned_a, unaligned_b, unaligned_c = unaligned_rows(p)
        unaligned = unaligned_a or unaligned_b or unaligned_c
        sm_fill = torch.clamp(tiles / sms, max=1.0)
        # ATen's grid as cuBLAS would tile the output; problem-wide, so per row only a where
        aten_ctas = p.batch * math.ceil(p.m / _ATEN_TILE) * math.ceil(p.n / _ATEN_TILE)
        aten_fill = min(1.0, aten_ctas / sms)
        log2_k = math.log2(p.k)
        config_cols = (
            table.aten, table.triton, table.other,
            torch.log2(bm), torch.log2(bn), torch.log2(bk), stages, warps,
            torch.log2(group.clamp(min=1)),
            torch.log2(tiles), waves, tiles / (waves * sms), sm_fill,
            1 - p.m / (tiles_m * bm), 1 - p.n / (tiles_n * bn), 1 - p.k / (k_steps * bk),
            torch.where(has_tile, smem / smem_limit, 0.0),
            torch.log2(k_steps),
            torch.where(has_tile, bm * bn / (32 * warps.clamp(min=1)), 0.0),
            torch.log2(bm * bn / (bm + bn)),
            log2_estimate, scored,
            torch.where(table.triton, torch.minimum(stages, k_steps) / stages.clamp(min=1), 0.0),
            torch.where(table.aten, log2_k * (aten_fill < 1), (tiles < sms) * log2_k),
            *(table.aten_calls == code for code in range(len(ATEN_CALLS))),
            table.aten & unaligned,
            *(_aten_only(table.aten, flag, 1.0) for flag in (unaligned_a, unaligned_b, unaligned_c)),
            _aten_only(table.aten, unaligned, math.log2(p.flops)),
            _aten_only(table.aten, aten_ctas > 1, math.log2(aten_ctas)), table.aten * aten_fill,
            has_tile if triton_tf32_active(p, hardware.triton_tf32_rule) else 0.0,
        )  # fmt: skip
        # Column writes into one buffer: torch.stack/cat of columns costs several times more.
        features = torch.empty(n, sum(slot >= 0 for slot in slots), dtype=torch.float32)
        # the problem's columns come first in every version, in order
        problem_kept = [i for i, slot in enumerate(slots[: len(problem_row)]) if slot >= 0]
        features[:, : len(problem_kept)] = problem_row if len(problem_kept) == len(problem_row) else problem_row[problem_kept]
        for slot, column in zip(slots[len(problem_row) :], config_cols):
            if slot >= 0:
                features[:, slot] = column
        return features
