"""The feature schema and the analytical scorer it embeds: one vectorised computation."""

from __future__ import annotations

import dataclasses
import hashlib
import math
from pathlib import Path

import pytest
import torch

from diode_backend.analytical import AnalyticalScorer, estimate_times_us
from diode_backend.config_table import ConfigTable
from diode_backend.features import GemmFeatures
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig
from diode_backend.tf32 import inductor_rule

H100 = HardwareInfo(
    name="NVIDIA H100 80GB HBM3", vendor="nvidia", sm_count=132, compute_capability=(9, 0),
    shared_memory_per_block=232448,
)  # fmt: skip
PROBLEM = GemmProblem("addmm", 1000, 4096, 1536, dtype="bfloat16", b_layout="col", bias="row")
CONFIGS = [
    KernelConfig("triton", "triton::mm", 128, 128, 64, 3, 8, 8),
    KernelConfig("triton", "triton::mm", 64, 32, 32, 5, 4, 8),
    KernelConfig("triton", "triton::mm", 256, 256, 128, 5, 8, 8),  # 1.3 MB of shared memory
    KernelConfig("aten", "aten::addmm"),
    KernelConfig("aten", "aten::bias_addmm"),
    KernelConfig("decompose_k", "decompose_k"),
]
#: float32 with TF32 allowed, M = 1028 not a multiple of 16: the H100 sweep's Triton tiles ran it
#: without TF32 (15.9-21 TFLOP/s for 1028x768x3072 and 1028x3072x768), Inductor (2.11 and 2.13)
#: with it; cuBLAS runs TF32 either way.
UNALIGNED_TF32 = GemmProblem("addmm", 1028, 768, 3072, dtype="float32", b_layout="col", bias="row", allow_tf32=True)
#: bert's addmm rows: TF32 by every rule
BERT_TF32 = GemmProblem("addmm", 16, 1024, 1024, dtype="float32", b_layout="col", bias="row", allow_tf32=True)
FP32_CONFIGS = [
    KernelConfig("aten", "aten::bias_addmm"), KernelConfig("aten", "aten::addmm"),
    KernelConfig("triton", "triton::mm", 128, 128, 32, 3, 4, 8), KernelConfig("triton", "triton::mm", 16, 32, 256, 3, 2, 8),
]  # fmt: skip
DATA = Path(__file__).resolve().parent / "data"


def by(rule: str) -> HardwareInfo:
    """The H100 with Triton kernels that run TF32 by ``rule``."""
    return dataclasses.replace(H100, triton_tf32_rule=rule)


def column(features: torch.Tensor, name: str) -> list[float]:
    return features[:, GemmFeatures.names.index(name)].tolist()


def test_one_row_per_candidate_one_column_per_name():
    features = GemmFeatures().extract(PROBLEM, CONFIGS, H100)
    assert features.dtype == torch.float32
    assert features.shape == (len(CONFIGS), len(GemmFeatures.names))
    assert column(features, "log2_m") == [torch.tensor(math.log2(1000)).float().item()] * len(CONFIGS)
    assert column(features, "kind_aten") == [0, 0, 0, 1, 1, 0]
    assert column(features, "kind_other") == [0, 0, 0, 0, 0, 1]
    assert column(features, "log2_block_n")[:2] == [7.0, 5.0]


def test_no_candidates_gives_an_empty_matrix():
    assert GemmFeatures().extract(PROBLEM, [], H100).shape == (0, len(GemmFeatures.names))


def test_the_analytical_estimate_is_a_feature():
    features = GemmFeatures().extract(PROBLEM, CONFIGS, H100)
    times = estimate_times_us(PROBLEM, ConfigTable.of(CONFIGS), H100).tolist()
    estimate, scored = column(features, "log2_analytical_us"), column(features, "analytical_scored")
    for got, want in zip(estimate[:2] + estimate[3:5], times[:2] + times[3:5]):
        assert abs(got - math.log2(want)) < 1e-5
    assert math.isinf(times[2]) and estimate[2] == 30.0  # cannot launch: a large stand-in
    assert math.isnan(times[5]) and (estimate[5], scored[5]) == (0.0, 0.0)
    assert scored[:5] == [1.0] * 5


def test_the_feature_charges_the_spills_the_scorer_charges():
    """The schema takes analytical v3's estimate: the 2-warp tile that ran 8x slower on the H100
    (fp16 1157x427x561) spills, and the feature sees it as the scorer does."""
    problem = GemmProblem("mm", 1157, 427, 561, dtype="float16")
    configs = [KernelConfig("triton", "triton::mm", 128, 64, 64, 4, 2, 8), KernelConfig("triton", "triton::mm", 128, 64, 64, 4, 4, 8)]
    scorer = AnalyticalScorer().predict(problem, configs, H100).times_us
    assert scorer[0] > 1.5 * scorer[1]
    feature = column(GemmFeatures().extract(problem, configs, H100), "log2_analytical_us")
    assert feature == torch.tensor(scorer, dtype=torch.float64).log2().float().tolist()


def test_analytical_scorer_orders_what_it_models():
    times = AnalyticalScorer().predict(PROBLEM, CONFIGS, H100).times_us
    assert times[0] < times[1]  # a 128x128 tile beats a 64x32 one on a large problem
    assert times[4] == times[3] - 0.5  # cuBLASLt fuses the bias
    assert all(t > 0 for t in times[:2] + times[3:5])


def test_alignment_of_sizes_and_leading_dimensions():
    # attention scores of 77 tokens, B = K^T: A's rows are 64 apart, B's (col) 64, the output's 77
    scores = GemmProblem("bmm", 77, 77, 64, batch=12, dtype="float16", b_layout="col")
    configs = [KernelConfig("aten", "aten::bmm"), CONFIGS[0]]
    features = GemmFeatures().extract(scores, configs, H100)
    assert column(features, "m_odd") == [1.0, 1.0] and column(features, "m_mult8") == [0.0, 0.0]
    assert column(features, "lda_mult64") == column(features, "ldb_mult64") == [1.0, 1.0]
    assert column(features, "ldb_mult128") == [0.0, 0.0]
    assert column(features, "aten_unaligned") == [1.0, 0.0]  # 77 halves a row: not 16-byte aligned
    assert column(features, "aten_bmm") == [1.0, 0.0]
    # the same product transposed to col/row: A's rows are now M = 77 apart
    transposed = GemmFeatures().extract(GemmProblem("bmm", 77, 64, 77, batch=12, dtype="float16", a_layout="col"), configs, H100)
    assert column(transposed, "lda_odd") == [1.0, 1.0] and column(transposed, "ldb_mult64") == [1.0, 1.0]


def test_each_aten_call_is_its_own_column():
    features = GemmFeatures().extract(PROBLEM, CONFIGS, H100)
    assert column(features, "aten_addmm") == [0, 0, 0, 1, 0, 0]
    assert column(features, "aten_bias_addmm") == [0, 0, 0, 0, 1, 0]
    assert column(features, "aten_mm") == column(features, "aten_baddbmm") == [0] * 6
    # 1000 x 4096 bf16 with 1536-element rows: every row 16-byte aligned
    assert column(features, "aten_unaligned") == [0] * 6


def test_decode_rows_are_flagged_apart_from_m_1():
    """cuBLAS's GEMV path is for M = 1 only; M = 2..16 is a decode row that behaves otherwise."""
    decode = [GemmFeatures().extract(GemmProblem("bmm", m, 3323, 64, batch=180), CONFIGS[:1], H100) for m in (1, 2, 16, 17)]
    assert [(column(f, "m_is_1")[0], column(f, "m_le_16")[0]) for f in decode] == [(1.0, 1.0), (0.0, 1.0), (0.0, 1.0), (0.0, 0.0)]


def test_aten_alignment_per_operand_and_its_growth_with_size():
    # fp16 attention scores of 77 tokens: A's (64) and B's (col, 64) rows aligned, the output's 77 not
    scores = GemmProblem("bmm", 77, 77, 64, batch=12, dtype="float16", b_layout="col")
    features = GemmFeatures().extract(scores, [KernelConfig("aten", "aten::bmm"), CONFIGS[0]], H100)
    assert [column(features, f"aten_unaligned_{x}") for x in "abc"] == [[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]]
    assert column(features, "aten_unaligned_log2_flops") == pytest.approx([math.log2(scores.flops), 0.0])
    # P @ V with 77 tokens: A's rows are K = 77 apart, B's and the output's N = 64
    pv = GemmProblem("bmm", 77, 64, 77, batch=12, dtype="float16")
    features = GemmFeatures().extract(pv, [KernelConfig("aten", "aten::bmm")], H100)
    assert [column(features, f"aten_unaligned_{x}") for x in "abc"] == [[1.0], [0.0], [0.0]]
    # fp32 rows are 16-byte aligned at multiples of 4 elements
    features = GemmFeatures().extract(GemmProblem("mm", 64, 64, 36, dtype="float32", b_layout="col"), [KernelConfig("aten", "aten::mm")], H100)
    assert column(features, "aten_unaligned") == [0.0]


def test_aten_gets_a_cublas_like_grid_and_long_k_underfill_is_marked():
    """whisper fp32 12x100x64x1500: 12 CTAs of 128x128 on 132 SMs, each a 1,500-long K loop,
    where ATen ran 2.56x slower than a Triton tile."""
    whisper = GemmProblem("bmm", 100, 64, 1500, batch=12, dtype="float32")
    configs = [KernelConfig("aten", "aten::bmm"), KernelConfig("triton", "triton::bmm", 16, 32, 64, 5, 2, 8),
               KernelConfig("triton", "triton::bmm", 128, 128, 64, 5, 4, 8)]  # fmt: skip
    features = GemmFeatures().extract(whisper, configs, H100)
    assert column(features, "aten_log2_ctas") == pytest.approx([math.log2(12), 0.0, 0.0])
    assert column(features, "aten_sm_fill") == pytest.approx([12 / 132, 0.0, 0.0])
    assert column(features, "log2_tiles")[0] == pytest.approx(math.log2(12))  # the full-problem tile: the batch only
    # 7 x 2 x 12 = 168 Triton tiles of 16x32 fill the SMs; 12 of 128x128 do not
    assert column(features, "log2_k_underfilled") == pytest.approx([math.log2(1500), 0.0, math.log2(1500)])
    # a large output fills the SMs for ATen as well
    assert column(GemmFeatures().extract(PROBLEM, CONFIGS, H100), "aten_sm_fill")[3:5] == [1.0, 1.0]


def test_stages_beyond_the_k_loop_are_counted():
    short = GemmProblem("mm", 1024, 1024, 64, dtype="float16")  # one K step of 64, two of 32
    configs = [KernelConfig("triton", "triton::mm", 128, 128, 64, 4, 8, 8), KernelConfig("triton", "triton::mm", 128, 128, 32, 3, 8, 8),
               KernelConfig("triton", "triton::mm", 128, 128, 16, 3, 8, 8), KernelConfig("aten", "aten::mm")]  # fmt: skip
    assert column(GemmFeatures().extract(short, configs, H100), "stages_over_k_steps") == pytest.approx([1 / 4, 2 / 3, 1.0, 0.0])


def test_tf32_is_marked_on_the_triton_tiles_that_run_it():
    """v7's ``triton_tf32_active``: 1 on Triton tiles whose dots run as TF32 by the hardware's
    rule; 0 on ATen rows, tile-less kinds and other problems."""
    configs = FP32_CONFIGS + [KernelConfig("decompose_k", "decompose_k")]
    aligned = dataclasses.replace(UNALIGNED_TF32, m=1024)

    def marks(problem: GemmProblem, rule: str) -> list[float]:
        return column(GemmFeatures().extract(problem, configs, by(rule)), "triton_tf32_active")

    assert marks(aligned, "alignment") == [0, 0, 1, 1, 0]
    assert marks(UNALIGNED_TF32, "alignment") == [0, 0, 0, 0, 0]
    assert marks(UNALIGNED_TF32, "size") == marks(UNALIGNED_TF32, "always") == [0, 0, 1, 1, 0]
    assert marks(BERT_TF32, "alignment") == marks(BERT_TF32, "size") == [0, 0, 1, 1, 0]
    assert marks(dataclasses.replace(aligned, allow_tf32=False), "always") == [0] * 5
    assert marks(dataclasses.replace(aligned, dtype="bfloat16"), "always") == [0] * 5
    assert marks(dataclasses.replace(UNALIGNED_TF32, m=8), "size") == [0] * 5
    # no rule: the running Inductor's
    assert marks(UNALIGNED_TF32, "") == marks(UNALIGNED_TF32, inductor_rule())


def test_v7_costs_triton_tiles_without_tf32_as_fp32_and_v6_keeps_its_estimate():
    """Where the rule leaves TF32 off, v7's analytical estimate of a Triton tile is the FP32 one
    (slower); cuBLAS keeps TF32. v6 still embeds analytical v3's estimate, TF32 everywhere."""
    hardware = by("alignment")
    v7 = GemmFeatures().extract(UNALIGNED_TF32, FP32_CONFIGS, hardware)
    v6 = GemmFeatures().at_version(6).extract(UNALIGNED_TF32, FP32_CONFIGS, hardware)
    estimate_v7, estimate_v6 = column(v7, "log2_analytical_us"), v6[:, GemmFeatures.names.index("log2_analytical_us")].tolist()
    assert estimate_v7[:2] == estimate_v6[:2]
    assert all(new > old + 1 for new, old in zip(estimate_v7[2:], estimate_v6[2:]))  # over 2x slower
    fp32 = dataclasses.replace(UNALIGNED_TF32, allow_tf32=False)
    as_fp32 = estimate_times_us(fp32, ConfigTable.of(FP32_CONFIGS), hardware)[2:]
    assert estimate_v7[2:] == pytest.approx(torch.log2(as_fp32).tolist(), abs=1e-5)
    legacy = estimate_times_us(UNALIGNED_TF32, ConfigTable.of(FP32_CONFIGS), hardware, follow_tf32_rule=False)
    assert estimate_v6 == pytest.approx(torch.log2(legacy).tolist(), abs=1e-5)
    # every other v6 column is v7's
    others = [i for i, name in enumerate(GemmFeatures.names) if name not in ("log2_analytical_us", "triton_tf32_active")]
    assert torch.equal(v6[:, others], v7[:, others])  # v6's columns are v7's first ones


def pinned(path: Path):
    """The shipped checkpoint at ``path`` ranking with the description it is given, as its
    predictions below were pinned: :data:`H100` names no rates (the analytical defaults stand in),
    where a checkpoint otherwise ranks with the datasheet rates it recorded (``trained_rates``)."""
    from diode_backend.model.learned import LearnedScorer

    scorer = LearnedScorer.load(path)
    scorer.trained_rates = {}
    return scorer


def test_version_6_is_the_columns_and_predictions_it_always_was():
    """Models trained on v6 keep loading with their inputs unchanged: v7 only added a column and
    v6 keeps its analytical estimate. tests/data/gemm-v6-model.pt is the H100 model shipped
    with v6 (sha256 a4b4dd61); its predictions below are those of before v7."""
    v6 = GemmFeatures().at_version(6)
    assert (v6.schema, v6.version, len(v6.names)) == ("gemm", 6, 79)
    # sha256 of the v6 names joined by commas, as v6's own extractor listed them
    assert hashlib.sha256(",".join(v6.names).encode()).hexdigest()[:16] == "c9a2cc8b39c31ab5"
    assert v6.names == GemmFeatures.names[:-1] and GemmFeatures.names[-1] == "triton_tf32_active"
    shipped = pinned(DATA / "gemm-v6-model.pt")
    assert shipped.extractor.version == 6
    for hardware in (H100, by("alignment"), by("size")):  # v6 does not read the rule
        assert shipped.predict(PROBLEM, CONFIGS[:2] + CONFIGS[3:5], hardware).times_us == pytest.approx(
            [28.0788, 79.8465, 35.5038, 27.8399], abs=1e-4
        )
        unaligned = shipped.predict(UNALIGNED_TF32, FP32_CONFIGS, hardware)
        assert unaligned.times_us == pytest.approx([36.915, 43.009, 423.4305, 942.6385], abs=1e-4)
        assert unaligned.confidence == pytest.approx(0.98442, abs=1e-5)
        bert = shipped.predict(BERT_TF32, FP32_CONFIGS, hardware)
        assert bert.times_us == pytest.approx([11.8661, 13.6147, 44.421, 15.8818], abs=1e-4)


def test_version_5_is_the_columns_it_always_was():
    """Models trained on v5 keep loading: v6 only added columns, and the v5 extractor gives the
    columns, and a v5 model the predictions, that they were before v6. tests/data/gemm-v5-model.pt
    is the H100 model shipped before v6 (sha256 8df2f67e)."""
    v5 = GemmFeatures().at_version(5)
    assert (v5.schema, v5.version, len(v5.names)) == ("gemm", 5, 69)
    # sha256 of the v5 names joined by commas, as v5's own extractor listed them
    assert hashlib.sha256(",".join(v5.names).encode()).hexdigest()[:16] == "9f1dfa26d8a10d66"
    assert v5.names[-6:] == ("aten_mm", "aten_addmm", "aten_bias_addmm", "aten_bmm", "aten_baddbmm", "aten_unaligned")
    assert not {"m_is_1", "log2_k_underfilled", "aten_unaligned_a", "aten_log2_ctas"} & set(v5.names)
    current = GemmFeatures().extract(PROBLEM, CONFIGS, H100)
    assert torch.equal(v5.extract(PROBLEM, CONFIGS, H100), current[:, [GemmFeatures.names.index(n) for n in v5.names]])
    shipped = pinned(DATA / "gemm-v5-model.pt")
    assert shipped.extractor.version == 5
    # microseconds the model predicted with the v5 extractor, before v6
    scores = GemmProblem("bmm", 77, 77, 64, batch=12, dtype="float16", b_layout="col")
    assert shipped.predict(PROBLEM, CONFIGS[:2] + CONFIGS[3:5], H100).times_us == pytest.approx([28.1362, 82.4818, 35.2217, 27.9142], abs=1e-4)
    assert shipped.predict(scores, [KernelConfig("aten", "aten::bmm"), CONFIGS[0]], H100).times_us == pytest.approx([7.7854, 5.9515], abs=1e-4)
    # a TF32 problem whose Triton tiles the sweep ran without TF32: v5's inputs as before v7
    for hardware in (H100, by("alignment")):
        assert shipped.predict(UNALIGNED_TF32, FP32_CONFIGS, hardware).times_us == pytest.approx(
            [42.3261, 49.8014, 585.6356, 780.3528], abs=1e-4
        )


def test_version_4_is_the_subset_of_columns_it_always_was():
    """Models trained on v4 keep loading: v5 and v6 only added columns. tests/data/gemm-v4-model.pt
    is the H100 model shipped before v5 (sha256 05ffd14e)."""
    v4 = GemmFeatures().at_version(4)
    assert (v4.schema, v4.version, len(v4.names)) == ("gemm", 4, 38)
    assert "m_odd" not in v4.names and "aten_bias_addmm" not in v4.names
    current = GemmFeatures().extract(PROBLEM, CONFIGS, H100)
    older = v4.extract(PROBLEM, CONFIGS, H100)
    assert torch.equal(older[:, v4.names.index("log2_analytical_us")], torch.tensor(column(current, "log2_analytical_us")))
    assert GemmFeatures().at_version(3) is None
    earlier = pinned(DATA / "gemm-v4-model.pt")
    assert earlier.extractor.version == 4
    assert all(t > 0 for t in earlier.predict(PROBLEM, CONFIGS[:2] + CONFIGS[3:5], H100).times_us)
    # predictions of before v7 on a TF32 problem whose Triton tiles the sweep ran without TF32
    assert earlier.predict(UNALIGNED_TF32, FP32_CONFIGS, by("alignment")).times_us == pytest.approx(
        [29.8148, 30.3448, 50.7344, 141.4132], abs=1e-4
    )


def test_each_decompose_k_split_is_a_candidate_of_its_own_with_the_features_of_a_tileless_kind():
    """Inductor offers decompose-k once per K split (``k_split``): each is a config of its own, so a
    measured winner names its split, and ``block_k`` holding the split leaves the features (and so
    every model's scores) as they were for decompose-k without one."""
    from torch._inductor.kernel.mm import decompose_k_subgraph_template

    from diode_backend.inductor.convert import config_from_choice

    problem = GemmProblem("mm", 16, 16, 8192, dtype="float16")
    splits = [config_from_choice(decompose_k_subgraph_template.uid, {"k_split": s}) for s in (16, 32, 64)]
    assert len(set(splits)) == 3 and {c.kind for c in splits} == {"decompose_k"}
    assert [c.describe() for c in splits] == [f"decompose_k k_split {s}" for s in (16, 32, 64)]
    tileless = KernelConfig("decompose_k", "decompose_k")
    features = GemmFeatures().extract(problem, [tileless, *splits], H100)
    assert all(torch.equal(features[0], row) for row in features[1:])
