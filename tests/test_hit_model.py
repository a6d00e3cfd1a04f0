"""The logistic confidence: signals of a problem and its pick, fitting, and the checkpoint block."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest
import torch

from diode_backend import catalog, registry
from diode_backend.model.calibration import auroc, pick_statistics, separation
from diode_backend.model.checkpoint import ModelLoadError
from diode_backend.model.hit_model import L2_STRENGTHS, SIGNALS, SIGNALS_OF_VERSION, fit_hit_model, hit_probability, pick_signals
from diode_backend.model.learned import LearnedScorer
from diode_backend.problem import GemmProblem, KernelConfig

from model_files import write_checkpoint

ATEN = KernelConfig("aten", "aten::bmm")
DEEP_K = KernelConfig("triton", "triton::bmm", 16, 16, 256, 5, 1, 8)
CONFIGS = [ATEN, DEEP_K] + [
    KernelConfig("triton", "triton::bmm", bm, bn, bk, 3, warps, 8)
    for bm in (32, 64, 128) for bn in (64, 128) for bk in (32, 64) for warps in (4, 8)
]  # fmt: skip
#: tests/data/gemm-v5-model.pt's confidences for these problems, computed before the hit model existed.
V5_CONFIDENCES = [
    (GemmProblem("mm", 1024, 4096, 2048, dtype="bfloat16", b_layout="col"), 0.7021977091982718),
    (GemmProblem("bmm", 197, 197, 64, batch=96, dtype="float16"), 0.8017260946131093),
    (GemmProblem("mm", 7, 4096, 4096, dtype="float32", allow_tf32=True), 0.8033512345667274),
]
V5_CONFIGS = [KernelConfig("aten", "aten::{op}")] + [
    KernelConfig("triton", "triton::{op}", bm, bn, bk, stages, warps, 8)
    for bm in (32, 64, 128) for bn in (32, 64, 128, 256) for bk in (32, 64) for stages in (2, 3, 4) for warps in (4, 8)
]  # fmt: skip


def signal(values, name):
    return values[SIGNALS.index(name)]


def members_ranking(*rows):
    """Members' predicted log times ``[E, n]``, one row per member."""
    return torch.tensor(rows, dtype=torch.float64)


TOLERANCE = math.log(1.05)  # a gap of one hit tolerance, in log time


def test_signals_say_what_the_pick_and_the_problem_are():
    # an attention score product with an odd sequence length: fp16 rows of 197 elements are not
    # 16-byte aligned, which cuBLAS wants
    odd = GemmProblem("bmm", 197, 197, 64, batch=96, dtype="float16")
    # every member puts ATen first, one hit tolerance ahead of the deep-K tile
    aten = pick_signals(odd, [ATEN, DEEP_K], members_ranking([0.0, TOLERANCE]), distance=0.0)
    assert signal(aten, "pick_aten") == signal(aten, "pick_aten_unaligned") == signal(aten, "batched") == 1.0
    assert (signal(aten, "raw"), signal(aten, "log_gap"), signal(aten, "log_distance")) == (
        pytest.approx(1 - math.exp(-1)), pytest.approx(math.log(2)), 0.0)  # fmt: skip
    assert signal(aten, "fp32") == signal(aten, "tf32") == signal(aten, "baddbmm") == 0.0
    assert signal(aten, "log2_m") == pytest.approx(math.log2(197))
    deep_k = pick_signals(odd, [ATEN, DEEP_K], members_ranking([TOLERANCE, 0.0]), 0.0)
    assert signal(deep_k, "pick_block_k_256") == 1.0
    assert signal(deep_k, "pick_aten_unaligned") == 0.0  # Triton pick
    aligned = GemmProblem("mm", 256, 256, 64, dtype="float32", allow_tf32=True)
    flags = pick_signals(aligned, [ATEN], members_ranking([0.0]), 3.0)  # one candidate: the gap is infinite
    assert (signal(flags, "pick_aten_unaligned"), signal(flags, "tf32"), signal(flags, "batched")) == (0.0, 1.0, 0.0)
    assert math.isfinite(signal(flags, "log_gap")) and signal(flags, "log_distance") == math.log(4.0)


def test_signals_say_how_the_members_see_the_pick_against_aten_and_the_other_tiles():
    problem = GemmProblem("mm", 4096, 4096, 4096)
    wide, narrow = CONFIGS[2], CONFIGS[3]
    configs = [ATEN, DEEP_K, wide, narrow]
    # three members put ATen first; the third puts the wide tile first, ATen 2 tolerances behind it
    split = members_ranking(
        [0.0, 4 * TOLERANCE, TOLERANCE, 8 * TOLERANCE],
        [0.0, 4 * TOLERANCE, TOLERANCE, 8 * TOLERANCE],
        [2 * TOLERANCE, 4 * TOLERANCE, 0.0, 8 * TOLERANCE],
        [0.0, 4 * TOLERANCE, TOLERANCE, 8 * TOLERANCE],
    )
    values = pick_signals(problem, configs, split, 0.0)
    assert signal(values, "pick_aten") == 1.0 and signal(values, "log_aten_margin") == 0.0  # ATen is the pick
    assert signal(values, "pick_first") == 0.75
    # the members' own view of the pick, behind their fastest: 0, 0, 2, 0 tolerances
    assert signal(values, "log_pick_spread") == pytest.approx(math.log1p(math.sqrt(3) / 2))
    # the two fastest non-ATen candidates by the mean: the wide tile (0.75) and the deep-K one (4)
    assert signal(values, "log_triton_gap") == pytest.approx(math.log1p(3.25))
    # all members agree on the wide tile, 3 tolerances ahead of ATen, 1 of the deep-K tile
    agreed = pick_signals(problem, configs, members_ranking([3 * TOLERANCE, TOLERANCE, 0.0, 8 * TOLERANCE]), 0.0)
    assert (signal(agreed, "pick_aten"), signal(agreed, "pick_first"), signal(agreed, "log_pick_spread")) == (0.0, 1.0, 0.0)
    assert signal(agreed, "log_aten_margin") == pytest.approx(math.log(4))
    assert signal(agreed, "log_triton_gap") == pytest.approx(math.log(2))
    # no ATen candidate: no margin; one non-ATen candidate: the gap is capped
    alone = pick_signals(problem, [ATEN, wide], members_ranking([TOLERANCE, 0.0]), 0.0)
    assert signal(alone, "log_aten_margin") == pytest.approx(math.log(2)) and signal(alone, "log_triton_gap") == math.log1p(20)
    assert signal(pick_signals(problem, [wide, narrow], members_ranking([0.0, TOLERANCE]), 0.0), "log_aten_margin") == 0.0


def test_signals_say_how_the_problem_fits_tiles():
    linear = GemmProblem("addmm", 4096, 768, 3072, dtype="bfloat16", b_layout="col", bias="row")
    values = pick_signals(linear, [ATEN, DEEP_K], members_ranking([0.0, TOLERANCE]), 0.0)
    assert [signal(values, name) for name in ("n_multiple_64", "k_multiple_64", "n_multiple_128", "k_multiple_128")] == [1.0] * 4
    assert (signal(values, "bias"), signal(values, "bf16")) == (1.0, 1.0)
    assert (signal(values, "log2_n"), signal(values, "log2_k")) == (pytest.approx(math.log2(768)), pytest.approx(math.log2(3072)))
    odd = pick_signals(GemmProblem("bmm", 197, 197, 64, batch=96), [ATEN, DEEP_K], members_ranking([0.0, TOLERANCE]), 0.0)
    assert [signal(odd, name) for name in ("n_multiple_64", "k_multiple_64", "n_multiple_128", "k_multiple_128")] == [0, 1, 0, 0]
    assert (signal(odd, "bias"), signal(odd, "bf16")) == (0.0, 0.0)


def test_signals_say_how_crowded_the_top_is_and_what_kind_of_gemm_it_is():
    problem = GemmProblem("bmm", 197, 197, 64, batch=96, dtype="float16")
    wide, narrow = CONFIGS[2], CONFIGS[3]
    configs = [ATEN, DEEP_K, wide, narrow]
    # by the mean ATen is fastest, the deep-K tile half a tolerance behind it, the others far
    # behind; the members see ATen at 0, 0, 0 and 2 tolerances
    members = members_ranking(
        [0.0, 0.0, 8 * TOLERANCE, 9 * TOLERANCE],
        [0.0, 0.0, 8 * TOLERANCE, 9 * TOLERANCE],
        [0.0, 0.0, 8 * TOLERANCE, 9 * TOLERANCE],
        [2 * TOLERANCE, 4 * TOLERANCE, 8 * TOLERANCE, 9 * TOLERANCE],
    )
    values = pick_signals(problem, configs, members, 0.0)
    assert signal(values, "pick_aten") == 1.0
    assert signal(values, "log_crowding") == pytest.approx(math.log(2))  # ATen and the deep-K tile
    # the members' standard deviation of ATen's predicted time: sqrt(3) / 2 tolerances
    assert signal(values, "log_pick_member_std") == pytest.approx(math.log1p(math.sqrt(3) / 2))
    assert signal(values, "log2_candidates") == 2.0
    classes = [name for name in SIGNALS if name.startswith("class_")]
    assert classes == ["class_attention_bmm", "class_decode", "class_narrow", "class_prefill_linear"]
    assert [signal(values, name) for name in classes] == [1.0, 0.0, 0.0, 0.0]
    alone = pick_signals(problem, configs, members_ranking([0.0, 8 * TOLERANCE, 9 * TOLERANCE, 9 * TOLERANCE]), 0.0)
    assert (signal(alone, "log_crowding"), signal(alone, "log_pick_member_std")) == (0.0, 0.0)
    for gemm, kind in (
        (GemmProblem("mm", 1, 4096, 4096, dtype="bfloat16", b_layout="col"), "class_decode"),
        (GemmProblem("addmm", 4096, 320, 320, dtype="float16", b_layout="col", bias="row"), "class_narrow"),
        (GemmProblem("mm", 4096, 4096, 4096, dtype="bfloat16"), "class_prefill_linear"),
        (GemmProblem("mm", 4096, 4096, 4096, dtype="float32"), None),  # fp32: a flag of version 1
        (GemmProblem("baddbmm", 197, 197, 64, batch=96, bias="full"), None),
    ):
        flags = pick_signals(gemm, configs, members, 0.0)
        assert [name for name in classes if signal(flags, name)] == ([kind] if kind else [])


def _synthetic(count, seed, effect):
    """Held-out rows with random signals whose hits depend on the raw score and, by ``effect``
    in log-odds, on whether the pick is an unaligned ATen pick; 8 families."""
    rng = random.Random(seed)
    rows, hits, families = [], [], []
    for index in range(count):
        row = [rng.random() for _ in SIGNALS]
        row[SIGNALS.index("pick_aten_unaligned")] = float(rng.random() < 0.3)
        logit = 1.5 + 2.0 * (row[0] - 0.5) + effect * row[SIGNALS.index("pick_aten_unaligned")]
        rows.append(row)
        hits.append(rng.random() < 1 / (1 + math.exp(-logit)))
        families.append(f"family{index % 8}")
    return rows, hits, families


def test_the_fit_recovers_a_signal_the_raw_score_misses():
    # 2,000 problems: with 24 signals the raw score's weight from 600 spreads from 0.9 to 1.9 over seeds
    rows, hits, families = _synthetic(2000, seed=0, effect=-3.0)
    block = fit_hit_model(rows, hits, families)
    assert signal(block["weights"], "pick_aten_unaligned") == pytest.approx(-3.0, abs=0.8)
    assert signal(block["weights"], "raw") == pytest.approx(2.0, abs=0.8)
    # on fresh rows of the same kind it tells hits from misses better than the raw score alone
    test_rows, test_hits, _ = _synthetic(600, seed=1, effect=-3.0)
    fitted = [hit_probability(block, row) for row in test_rows]
    assert auroc(fitted, test_hits) > auroc([row[0] for row in test_rows], test_hits) + 0.1


def test_noise_gets_the_strongest_penalty_and_the_base_rate():
    rng = random.Random(2)
    rows = [[rng.random() for _ in SIGNALS] for _ in range(300)]
    hits = [rng.random() < 0.8 for _ in rows]
    block = fit_hit_model(rows, hits, [f"family{i % 6}" for i in range(300)])
    assert block["l2"] == max(L2_STRENGTHS)
    probabilities = [hit_probability(block, row) for row in rows]
    # chance still moves it a little: 24 noise signals under the strongest penalty spread it by
    # a standard deviation of 0.05 (12 signals: 0.03)
    assert statistics.pstdev(probabilities) < 0.06
    assert sum(probabilities) / len(rows) == pytest.approx(sum(hits) / len(hits), abs=0.02)


def test_only_hits_never_give_certainty():
    rows, _, families = _synthetic(40, seed=3, effect=0.0)
    block = fit_hit_model(rows, [True] * 40, families[:40])
    assert all(0.5 < hit_probability(block, row) < 1.0 for row in rows)
    with pytest.raises(ValueError, match="at least one"):
        fit_hit_model([], [], [])


def test_a_checkpoint_with_a_hit_model_round_trips_and_gives_its_probability(tmp_path):
    h100 = catalog.resolve_hardware("h100")
    rows, hits, families = _synthetic(200, seed=4, effect=-2.0)
    block = fit_hit_model(rows, hits, families)
    assert (block["version"], block["signals"], len(block["weights"])) == (3, list(SIGNALS), 31)
    calibration = {"edges": [0.0, 1.0], "values": [0.1, 0.9]}
    path = write_checkpoint(tmp_path / "model.pt", calibration=calibration, hit_model=block)
    assert torch.load(path, weights_only=True)["hit_model"] == block  # plain data
    scorer = LearnedScorer.load(path)
    assert scorer.checkpoint.hit_model == block
    problem = GemmProblem("bmm", 197, 197, 64, batch=96, dtype="float16")
    features = registry.feature_extractors()["gemm"].extract(problem, CONFIGS, h100)
    member_log_times = scorer.model(features)
    expected = hit_probability(block, pick_signals(problem, CONFIGS, member_log_times, 0.0))
    assert scorer.predict(problem, CONFIGS, h100).confidence == pytest.approx(expected, abs=1e-5)
    _, agreement, gap = pick_statistics(member_log_times)
    without = LearnedScorer.load(write_checkpoint(tmp_path / "calibrated.pt", calibration=calibration))
    assert without.predict(problem, CONFIGS, h100).confidence == pytest.approx(0.1 + 0.8 * agreement * separation(gap), abs=1e-5)


@pytest.mark.parametrize("version", [1, 2])
def test_an_earlier_hit_model_still_gives_its_probability_from_its_own_signals(tmp_path, version):
    """Checkpoints of `diode train --confidence logistic` before the signals of the next version."""
    h100 = catalog.resolve_hardware("h100")
    count = len(SIGNALS_OF_VERSION[version])
    assert SIGNALS[:count] == SIGNALS_OF_VERSION[version]  # each version's signals open the next one's
    rows, hits, families = _synthetic(200, seed=6, effect=-2.0)
    fitted = fit_hit_model([row[:count] for row in rows], hits, families)
    block = {**fitted, "version": version, "signals": list(SIGNALS[:count])}
    scorer = LearnedScorer.load(write_checkpoint(tmp_path / "model.pt", hit_model=block))
    problem = GemmProblem("mm", 1024, 4096, 2048, dtype="bfloat16", b_layout="col")
    configs = [KernelConfig(c.kind, c.template.replace("bmm", "mm"), *_tile(c)) for c in CONFIGS]
    features = registry.feature_extractors()["gemm"].extract(problem, configs, h100)
    own = pick_signals(problem, configs, scorer.model(features), 0.0)[:count]
    expected = 1 / (1 + math.exp(-(block["bias"] + sum(w * x for w, x in zip(block["weights"], own)))))
    assert scorer.predict(problem, configs, h100).confidence == pytest.approx(expected, abs=1e-5)


def test_a_version_2_hit_model_gives_the_confidence_it_gave_before_version_3(tmp_path):
    """Pinned: the confidences this block gave with the code of version 2 (commit e57c030)."""
    weights = [round(0.02 * ((i * 7) % 11) - 0.1, 2) for i in range(24)]
    block = {"version": 2, "signals": list(SIGNALS[:24]), "weights": weights, "bias": 3.5, "l2": 1.0}
    scorer = LearnedScorer.load(write_checkpoint(tmp_path / "model.pt", hit_model=block))
    h100 = catalog.resolve_hardware("h100")
    for problem, confidence in (
        (GemmProblem("bmm", 197, 197, 64, batch=96, dtype="float16"), 0.5169890788368005),
        (GemmProblem("bmm", 1024, 1024, 128, batch=8, dtype="bfloat16"), 0.3540363949033639),
    ):
        # float32 rounding: the network's sums differ in their last bits between CPUs (MKL picks
        # its kernels by instruction set); a changed signal or weight moves the confidence far more
        assert scorer.predict(problem, CONFIGS, h100).confidence == pytest.approx(confidence, rel=1e-6)


@pytest.mark.parametrize(
    "damage",
    [
        {"version": 4},
        {"version": 2},  # version 2 with version 3's signals
        {"signals": list(SIGNALS[:-1])},
        {"weights": [0.0] * (len(SIGNALS) - 1)},
        {"bias": math.nan},
    ],
    ids=["version", "signals-of-another-version", "signals", "weights", "bias"],
)
def test_a_malformed_hit_model_is_refused(tmp_path, damage):
    rows, hits, families = _synthetic(50, seed=5, effect=0.0)
    path = write_checkpoint(tmp_path / "model.pt", hit_model={**fit_hit_model(rows, hits, families), **damage})
    with pytest.raises(ModelLoadError, match="'hit_model'") as error:
        LearnedScorer.load(path)
    assert str(path) in str(error.value)


def test_a_model_without_a_hit_model_keeps_its_calibrated_confidence():
    """tests/data/gemm-v5-model.pt is the H100 model shipped before the hit model existed."""
    scorer = LearnedScorer.load(Path(__file__).resolve().parent / "data" / "gemm-v5-model.pt")
    assert scorer.checkpoint.hit_model is None
    h100 = catalog.resolve_hardware("h100")
    for problem, confidence in V5_CONFIDENCES:
        configs = [KernelConfig(c.kind, c.template.format(op=problem.op), *_tile(c)) for c in V5_CONFIGS]
        # to rounding: torch versions differ in the last bits of the same network's output
        assert scorer.predict(problem, configs, h100).confidence == pytest.approx(confidence, rel=1e-9)


def _tile(config):
    return (config.block_m, config.block_n, config.block_k, config.num_stages, config.num_warps, config.group_m)
