"""Training a timing model: real (tiny) training runs on synthetic timings."""

from __future__ import annotations

import dataclasses
import io
import math
from dataclasses import replace

import pytest
import torch
from synthetic_timings import H100, PENALTY, SPACE, synthetic_problems

from diode_backend import registry
from diode_backend.model.checkpoint import ModelLoadError
from diode_backend.model.learned import LearnedScorer
from diode_backend.model.network import TimingModel
from diode_backend.offline.train import TrainOptions, ranking_loss, refit_hit_model, train
from diode_backend.offline.training_split import split_problems

FAST = TrainOptions(hidden=16, ensemble=3, max_epochs=4, steps_per_epoch=15, problems_per_step=8, candidates=8, patience=10)


@pytest.fixture(scope="module")
def problems():
    return synthetic_problems(30)


def run(problems, path, options=FAST, **kwargs):
    return train(problems, H100, registry.feature_extractors()["gemm"], path, options, progress=None, **kwargs)


def test_network_runs_every_member_on_shared_or_own_rows():
    model = TimingModel({"num_features": 5, "hidden": 8, "layers": 2, "ensemble": 3})
    rows = torch.randn(7, 5)
    shared = model(rows)
    assert shared.shape == (3, 7)
    assert torch.allclose(model(rows.expand(3, 7, 5)), shared)
    with pytest.raises(ValueError, match="activation"):
        TimingModel({"num_features": 5, "hidden": 8, "layers": 2, "ensemble": 3, "activation": "tanh"})


def test_ranking_loss_is_zero_only_for_a_perfect_prediction():
    target = torch.log(torch.tensor([[10.0, 11.0, 20.0]]))
    options = TrainOptions()
    assert float(ranking_loss(target, target, torch.tensor(1.0), options)) == pytest.approx(0.0, abs=1e-6)
    swapped = target[:, [1, 0, 2]]  # same spread of times, first two candidates swapped
    assert float(ranking_loss(swapped, target, torch.tensor(1.0), options)) > 0.01


def test_split_is_by_problem_seeded_and_complete():
    train_ids, stop_ids, calibration_ids = split_problems(50, 0.2, seed=3)
    assert (len(train_ids), len(stop_ids), len(calibration_ids)) == (40, 5, 5)
    assert sorted(train_ids + stop_ids + calibration_ids) == list(range(50))
    assert split_problems(50, 0.2, seed=3) == (train_ids, stop_ids, calibration_ids)
    assert split_problems(50, 0.2, seed=4) != (train_ids, stop_ids, calibration_ids)


def test_training_writes_a_checkpoint_the_scorer_loads(problems, tmp_path):
    result = run(problems, tmp_path / "model.pt")
    assert (result.train_problems, result.stopping_problems, result.calibration_problems) == (24, 3, 6)
    assert not (tmp_path / "model.pt.state").exists()  # finished: nothing to resume
    saved = torch.load(tmp_path / "model.pt", weights_only=True)
    assert (saved["format"], saved["feature_schema"], saved["feature_version"]) == ("diode-timing-model", "gemm", 7)
    assert len(saved["calibration"]["edges"]) == 1  # 3 calibration problems: one group
    assert len(saved["training"]["history"]) == result.epochs == 4
    scorer = LearnedScorer.load(tmp_path / "model.pt")
    prediction = scorer.predict(problems[0].problem, SPACE, H100)
    assert len(prediction.times_us) == len(SPACE) and all(t > 0 for t in prediction.times_us)
    assert 0.0 < prediction.confidence < 1.0  # never certain from 3 held-out problems


def test_the_model_learns_what_the_analytical_scorer_misses(tmp_path):
    options = dataclasses.replace(FAST, max_epochs=30, steps_per_epoch=25, patience=30)
    run(synthetic_problems(40), tmp_path / "model.pt", options)
    scorer = LearnedScorer.load(tmp_path / "model.pt")
    # On unseen problems, each 8-warp config must be predicted about PENALTY times slower than
    # its 4-warp twin (the analytical scorer rates the twins nearly alike).
    ratios = []
    for item in synthetic_problems(10, "validation"):
        times = scorer.predict(item.problem, SPACE, H100).times_us
        for i, config in enumerate(SPACE):
            if config.num_warps == 8:
                twin = SPACE.index(dataclasses.replace(config, num_warps=4))
                ratios.append(math.log(times[i] / times[twin]))
    assert math.exp(sum(ratios) / len(ratios)) == pytest.approx(PENALTY, rel=0.1)


def test_same_seed_same_weights_other_seed_other_weights(problems, tmp_path):
    run(problems, tmp_path / "a.pt")
    run(problems, tmp_path / "b.pt")
    run(problems, tmp_path / "c.pt", dataclasses.replace(FAST, seed=1))
    a, b, c = (torch.load(tmp_path / f"{name}.pt", weights_only=True)["state_dict"] for name in "abc")
    assert all(torch.equal(a[key], b[key]) for key in a)
    # byte for byte, whatever the file is called: a manifest's sha256 names the training
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes()
    assert not all(torch.equal(a[key], c[key]) for key in a)


class _InterruptAt(io.StringIO):
    """A progress stream that interrupts training as it reports epoch ``epoch``."""

    def __init__(self, epoch: int) -> None:
        super().__init__()
        self.marker = f"epoch {epoch}:"

    def write(self, text: str) -> int:
        if self.marker in text:
            raise KeyboardInterrupt
        return super().write(text)


def test_resume_continues_to_the_result_of_an_uninterrupted_run(problems, tmp_path):
    extractor = registry.feature_extractors()["gemm"]
    run(problems, tmp_path / "whole.pt")
    with pytest.raises(KeyboardInterrupt):
        train(problems, H100, extractor, tmp_path / "cut.pt", FAST, progress=_InterruptAt(3))
    assert (tmp_path / "cut.pt.state").exists() and not (tmp_path / "cut.pt").exists()
    result = run(problems, tmp_path / "cut.pt", resume=True)
    assert result.epochs == 4
    whole = torch.load(tmp_path / "whole.pt", weights_only=True)
    resumed = torch.load(tmp_path / "cut.pt", weights_only=True)
    assert all(torch.equal(whole["state_dict"][key], resumed["state_dict"][key]) for key in whole["state_dict"])
    assert whole["training"]["history"] == resumed["training"]["history"]


def test_resume_refuses_a_state_from_other_options_or_data(problems, tmp_path):
    extractor = registry.feature_extractors()["gemm"]
    with pytest.raises(KeyboardInterrupt):
        train(problems, H100, extractor, tmp_path / "model.pt", FAST, progress=_InterruptAt(2))
    with pytest.raises(ValueError, match="learning_rate"):
        run(problems, tmp_path / "model.pt", dataclasses.replace(FAST, learning_rate=0.1), resume=True)
    with pytest.raises(ValueError, match="other data"):
        run(problems[:-1], tmp_path / "model.pt", resume=True)


def test_a_checkpoint_of_another_feature_version_is_refused(problems, tmp_path):
    run(problems, tmp_path / "model.pt")
    saved = torch.load(tmp_path / "model.pt", weights_only=True)
    saved["feature_version"] = 1
    torch.save(saved, tmp_path / "old.pt")
    with pytest.raises(ModelLoadError, match="v1"):
        LearnedScorer.load(tmp_path / "old.pt")


def test_features_are_those_of_the_inductor_that_timed_the_data():
    """Training and validation describe a dataset's device as DIODE will see it (the plugin's
    peaks) and its Triton kernels as they ran when timed: the H100 shards hold two rules (the
    sweep's turned TF32 on by alignment, the TF32 retiming's always), so the dataset's
    description names none and each problem is described by its own, whichever torch trains."""
    from pathlib import Path

    from diode_backend.offline.dataset import load_dataset
    from diode_backend.offline.train import inference_hardware

    data = load_dataset(Path(__file__).resolve().parents[1] / "trained_models" / "data" / "h100" / "dataset")
    from diode_backend.offline.dataset import timed_hardware

    hardware = inference_hardware(data.hardware)
    assert hardware.triton_tf32_rule == "" and hardware.peak_tflops["tf32"] > 0
    assert hardware == registry.known_hardware()["h100"]
    described = timed_hardware(hardware)
    assert {described(item).triton_tf32_rule for item in data.problems} == {"alignment", "always"}


def test_each_problem_is_described_by_the_rule_its_kernels_ran_tf32_by():
    """Data of two rules trains together: a float32 problem off the 16/8 alignment has its Triton
    tiles marked TF32 where its shard timed them under ``always``, not where under ``alignment``.
    The data digest names the rules only where a problem's is not the hardware's, so data of one
    rule keeps the digest it had."""
    from diode_backend.features import GemmFeatures
    from diode_backend.offline.dataset import ProblemTimings
    from diode_backend.offline.train import _Rows, data_digest
    from diode_backend.problem import GemmProblem, KernelConfig

    unaligned = GemmProblem("addmm", 1028, 768, 3072, dtype="float32", b_layout="col", bias="row", allow_tf32=True)
    tile = KernelConfig("triton", "triton::mm", 128, 128, 32, 3, 4, 8)
    configs = (KernelConfig("aten", "aten::addmm"), tile)
    timed = [ProblemTimings(unaligned, configs, (10.0, 20.0), tf32_rule=rule) for rule in ("alignment", "always")]
    rows = _Rows.build(timed, GemmFeatures(), H100)
    tf32 = rows.features[:, GemmFeatures.names.index("triton_tf32_active")].tolist()
    assert tf32 == [0.0, 0.0, 0.0, 1.0]  # fastest first: aten, then the tile, per problem

    one_rule = replace(H100, triton_tf32_rule="alignment")
    assert data_digest(timed[:1], one_rule) == data_digest([replace(timed[0], tf32_rule="")], one_rule)
    assert data_digest(timed, H100) != data_digest([timed[0], replace(timed[1], tf32_rule="alignment")], H100)


def test_too_few_problems_is_a_clear_error(problems, tmp_path):
    with pytest.raises(ValueError, match="at least 3 problems"):
        run(problems[:2], tmp_path / "model.pt")


def test_held_out_families_are_left_out_and_the_halves_are_whole_families(tmp_path):
    problems = [
        replace(p, generator=f"zoo:{family}")
        for family, seed in zip(("llama", "bert", "gpt", "t5", "vit", "whisper"), range(6))
        for p in synthetic_problems(8, seed=seed)
    ]
    result = run(problems, tmp_path / "model.pt", holdout_families=["whisper"])
    assert result.train_problems + result.calibration_problems == 40  # whisper's 8 left out
    training = torch.load(tmp_path / "model.pt", weights_only=True)["training"]
    assert training["holdout_families"] == ["whisper"]
    stopping, calibration = set(training["stopping_families"]), set(training["calibration_families"])
    assert stopping and calibration and not stopping & calibration
    assert not (stopping | calibration) & {"whisper"}
    assert result.train_problems == 8 * (5 - len(stopping | calibration))
    assert LearnedScorer.load(tmp_path / "model.pt").checkpoint.training["holdout_families"] == ["whisper"]


def test_a_model_trained_on_baddbmm_scores_baddbmm(tmp_path):
    """baddbmm: a bmm with an addend; its ATen call is its own feature column."""
    from diode_backend.model.entries import manifest_entry
    from diode_backend.offline.train import write_model_manifest

    def as_baddbmm(record):
        configs = tuple(
            dataclasses.replace(c, template="aten::baddbmm" if c.kind == "aten" else "triton::bmm") for c in record.configs
        )
        problem = dataclasses.replace(record.problem, op="baddbmm", batch=4, bias="full")
        return dataclasses.replace(record, problem=problem, configs=configs)

    problems = synthetic_problems(12) + [as_baddbmm(p) for p in synthetic_problems(12, seed=1)]
    run(problems, tmp_path / "model.pt")
    write_model_manifest(tmp_path, name="m", hardware_match=["H100"], problems=problems)
    scorer = manifest_entry(tmp_path).load()
    unseen = as_baddbmm(synthetic_problems(1, "validation")[0])
    prediction = scorer.predict(unseen.problem, unseen.configs, H100)
    assert all(math.isfinite(t) and t > 0 for t in prediction.times_us)
    assert scorer.ops == ("mm", "baddbmm")


def _six_families():
    return [
        replace(p, generator=f"zoo:{family}")
        for family, seed in zip(("llama", "bert", "gpt", "t5", "vit", "whisper"), range(6))
        for p in synthetic_problems(8, seed=seed)
    ]


def test_without_named_families_the_split_is_drawn_as_before(tmp_path):
    # pinned: the families split_families drew for this data before the split could be named,
    # so that a shipped model's recorded command still reproduces it
    run(_six_families(), tmp_path / "model.pt", holdout_families=["whisper"])
    training = torch.load(tmp_path / "model.pt", weights_only=True)["training"]
    assert (training["stopping_families"], training["calibration_families"]) == (["vit"], ["bert"])
    assert "split" not in training  # absent: drawn (the checkpoint keeps its earlier keys)


def test_naming_the_drawn_families_trains_the_same_model_on_grown_data(tmp_path):
    problems = _six_families()
    run(problems, tmp_path / "drawn.pt", holdout_families=["whisper"])
    as_drawn = {"holdout_families": ["whisper"], "stopping_families": ["vit"], "calibration_families": ["bert"]}
    named = run(problems, tmp_path / "named.pt", **as_drawn)
    drawn, given = (torch.load(tmp_path / f"{name}.pt", weights_only=True) for name in ("drawn", "named"))
    assert all(torch.equal(drawn["state_dict"][key], given["state_dict"][key]) for key in drawn["state_dict"])
    assert given["training"]["split"] == "given" and given["training"]["stopping_families"] == ["vit"]
    assert (named.train_problems, named.stopping_problems, named.calibration_problems) == (24, 8, 16)
    # 16 more problems of vit: it no longer fits the drawn hold-out, so the drawn split moves
    grown = problems + [replace(p, generator="zoo:vit") for p in synthetic_problems(16, seed=9)]
    run(grown, tmp_path / "grown-drawn.pt", holdout_families=["whisper"])
    run(grown, tmp_path / "grown.pt", **as_drawn)
    moved, kept = (torch.load(tmp_path / f"{name}.pt", weights_only=True)["training"] for name in ("grown-drawn", "grown"))
    assert (moved["stopping_families"], moved["calibration_families"]) == (["bert"], ["gpt"])
    assert (kept["stopping_families"], kept["calibration_families"], kept["train_problems"]) == (["vit"], ["bert"], 24)


@pytest.mark.parametrize(
    "stopping, calibration, message",
    [
        (["vit"], [], "--stopping-families: give --calibration-families too"),
        (["vit"], ["vit"], "--calibration-families: 'vit' is also in --stopping-families"),
        (["opt"], ["bert"], "--stopping-families: unknown family 'opt'; the training data has: bert, gpt, llama, t5, vit"),
        (["whisper"], ["bert"], "--stopping-families: 'whisper' is in --holdout-families"),
        (["vit", "gpt"], ["bert", "t5", "llama"], "that leaves no family to train on"),
    ],
)
def test_a_named_split_is_checked(tmp_path, stopping, calibration, message):
    with pytest.raises(ValueError) as raised:
        named = {"stopping_families": stopping, "calibration_families": calibration}
        run(_six_families(), tmp_path / "model.pt", holdout_families=["whisper"], **named)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_resume_refuses_a_state_of_another_split(tmp_path):
    extractor = registry.feature_extractors()["gemm"]
    problems = _six_families()
    with pytest.raises(KeyboardInterrupt):
        train(problems, H100, extractor, tmp_path / "model.pt", FAST, progress=_InterruptAt(2))
    with pytest.raises(ValueError, match=r"another split \(drawn: early stopping on .*, now given: early stopping on bert"):
        run(problems, tmp_path / "model.pt", resume=True, stopping_families=["bert"], calibration_families=["gpt"])
    assert run(problems, tmp_path / "model.pt", resume=True).epochs == 4  # the same (drawn) split resumes


def test_a_logistic_confidence_is_fitted_on_the_held_out_families(tmp_path):
    problems = _six_families()
    split = {"holdout_families": ["whisper"], "stopping_families": ["vit"], "calibration_families": ["bert", "gpt"]}
    run(problems, tmp_path / "calibrated.pt", **split)
    run(problems, tmp_path / "logistic.pt", confidence="logistic", **split)
    calibrated, logistic = (torch.load(tmp_path / f"{name}.pt", weights_only=True) for name in ("calibrated", "logistic"))
    assert "hit_model" not in calibrated
    # the same network and 1-D calibration; the hit model is added beside them
    assert all(torch.equal(calibrated["state_dict"][key], logistic["state_dict"][key]) for key in calibrated["state_dict"])
    assert logistic["calibration"] == calibrated["calibration"]
    assert len(logistic["hit_model"]["weights"]) == len(logistic["hit_model"]["signals"])
    scorer = LearnedScorer.load(tmp_path / "logistic.pt")
    assert scorer.checkpoint.hit_model == logistic["hit_model"]
    assert 0.0 < scorer.predict(problems[0].problem, SPACE, H100).confidence < 1.0
    with pytest.raises(ValueError, match="confidence 'isotonic': expected one of calibrated, logistic"):
        run(problems, tmp_path / "other.pt", confidence="isotonic", **split)


@pytest.mark.parametrize("named", [True, False], ids=["given-split", "drawn-split"])
def test_a_hit_model_refitted_on_a_trained_checkpoint_is_the_one_training_fits(tmp_path, named):
    problems = _six_families()
    split = {"holdout_families": ["whisper"]}
    if named:
        split.update(stopping_families=["vit"], calibration_families=["bert", "gpt"])
    run(problems, tmp_path / "calibrated.pt", **split)
    run(problems, tmp_path / "logistic.pt", confidence="logistic", **split)
    fitted = refit_hit_model(tmp_path / "calibrated.pt", problems, H100, tmp_path / "refit.pt")
    assert fitted == (24 if named else 16)  # the early-stopping and calibration families' problems
    calibrated, logistic, refit = (torch.load(tmp_path / f"{n}.pt", weights_only=True) for n in ("calibrated", "logistic", "refit"))
    assert refit["hit_model"] == logistic["hit_model"]
    # nothing else changes: the network, its calibration, novelty and training record
    assert refit.keys() - {"hit_model"} == calibrated.keys()
    assert all(torch.equal(refit["state_dict"][key], calibrated["state_dict"][key]) for key in calibrated["state_dict"])
    assert (refit["calibration"], refit["training"]) == (calibrated["calibration"], calibrated["training"])
    assert torch.equal(refit["novelty"]["support"], calibrated["novelty"]["support"])
    assert LearnedScorer.load(tmp_path / "refit.pt").checkpoint.hit_model == logistic["hit_model"]
    with pytest.raises(ValueError, match="was trained on other data"):
        refit_hit_model(tmp_path / "calibrated.pt", problems[1:], H100, tmp_path / "other.pt")
