"""The logistic confidence fitted on out-of-fold rankings at compile time: real (tiny) trainings
of fold models on synthetic timings of eight families, timed over the candidates DIODE ranks at
compile time."""

from __future__ import annotations

import dataclasses
import io
from dataclasses import replace

import pytest
import torch
from synthetic_timings import H100, SPACE, on_compile_time_list, synthetic_problems

from diode_backend import registry
from diode_backend.model.checkpoint import load_checkpoint
from diode_backend.model.hit_model import SIGNALS, fit_hit_model, hit_probability, pick_signals
from diode_backend.model.learned import LearnedScorer
from diode_backend.model.network import FrozenTimingModel
from diode_backend.model.novelty import nearest_distance
from diode_backend.offline import out_of_fold
from diode_backend.offline.families import family_of
from diode_backend.offline.compile_time import compile_time_signals
from diode_backend.offline.out_of_fold import draw_folds, fold_folder, rank_out_of_fold, train_out_of_fold
from diode_backend.offline.train import TrainOptions, train
from diode_backend.policy import rank_candidates

FAST = TrainOptions(hidden=16, ensemble=3, max_epochs=4, steps_per_epoch=15, problems_per_step=8, candidates=8, patience=10)
FAMILIES = ("llama", "bert", "gpt", "t5", "vit", "whisper", "opt", "bloom")
#: whisper held out; the final model stops early on vit and calibrates on bert; it trains on the rest
SPLIT = {"holdout_families": ["whisper"], "stopping_families": ["vit"], "calibration_families": ["bert"]}
TRAINED_ON = {"bloom", "gpt", "llama", "opt", "t5"}
EXTRACTOR = registry.feature_extractors()["gemm"]


@pytest.fixture(scope="module")
def problems():
    records = [replace(p, generator=f"zoo:{family}") for seed, family in enumerate(FAMILIES) for p in synthetic_problems(8, seed=seed)]
    return on_compile_time_list(records)


def as_bmm(record):
    return replace(record, problem=replace(record.problem, op="bmm", batch=8))


class _InterruptAt(io.StringIO):
    """A progress stream that interrupts the ``count``-th training to report epoch 2 (fold
    models first, then the final model)."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.left = count

    def write(self, text: str) -> int:
        if "epoch 2:" in text:
            self.left -= 1
            if not self.left:
                raise KeyboardInterrupt
        return super().write(text)


def test_folds_are_whole_families_balanced_on_attention_bmm_then_problems():
    def family(name, count, bmm=0):
        records = [replace(p, generator=f"zoo:{name}") for p in synthetic_problems(count, seed=len(name))]
        return [as_bmm(r) for r in records[:bmm]] + records[bmm:]

    records = (
        family("whisper", 6, bmm=4) + family("bert", 5, bmm=4) + family("t5", 9, bmm=2)
        + family("llama", 10) + family("opt", 3) + family("gpt", 2)
    )  # fmt: skip
    # attention bmm first (whisper 4 -> fold 0, bert 4 -> fold 1, t5 2 -> fold 2), then by problems
    # to the fold with the fewest: llama 10 -> fold 1 (5), opt 3 -> fold 0 (6), gpt 2 -> fold 0
    # (9, tied with fold 2: the first)
    assert draw_folds(records, 3) == [["gpt", "opt", "whisper"], ["bert", "llama"], ["t5"]]
    assert draw_folds(records[::-1], 3) == draw_folds(records, 3)  # the records' order does not matter
    assert draw_folds(records, 6) == [["whisper"], ["bert"], ["t5"], ["llama"], ["opt"], ["gpt"]]
    with pytest.raises(ValueError, match="--hit-model-folds 7: the training families are only 6"):
        draw_folds(records, 7)
    with pytest.raises(ValueError, match="--hit-model-folds 1: give at least 2 folds"):
        draw_folds(records, 1)


def test_out_of_fold_rows_come_only_from_models_that_did_not_train_on_them(problems, tmp_path):
    ranked = rank_out_of_fold(problems, H100, EXTRACTOR, tmp_path / "model.pt", FAST, folds=2, progress=None, **SPLIT)
    # the families the final model trains on, each in one fold
    assert sorted(name for fold in ranked.folds for name in fold) == sorted(TRAINED_ON)
    assert len(ranked.rows) == 8 * len(TRAINED_ON)  # every training problem once: all its candidates were timed
    assert ranked.ranked == [8 * len(fold) for fold in ranked.folds]
    assert ranked.checkpoints == [fold_folder(tmp_path / "model.pt") / f"fold-{k}.pt" for k in range(2)]
    models = [load_checkpoint(path) for path in ranked.checkpoints]
    for fold, model in zip(ranked.folds, models):
        training = model.training
        assert training["holdout_families"] == sorted(["whisper", *fold])
        assert (training["stopping_families"], training["calibration_families"]) == (["vit"], ["bert"])
        assert training["train_problems"] == 8 * (len(TRAINED_ON) - len(fold))
    # each row is the pick of the model trained without the row's family, as that model ranks it
    ranked_records = [p for k, fold in enumerate(ranked.folds) for p in problems if family_of(p) in fold]
    assert [row.family for row in ranked.rows] == [family_of(p) for p in ranked_records]
    differs_with_the_other_model = 0
    for row, record in zip(ranked.rows, ranked_records):
        assert row.family in ranked.folds[row.fold] and len(row.signals) == len(SIGNALS)
        signals = [_signals(model, record.problem, record.configs) for model in models]
        assert row.signals == pytest.approx(signals[row.fold], rel=1e-5, abs=1e-6)
        differs_with_the_other_model += signals[1 - row.fold] != pytest.approx(row.signals, rel=1e-5, abs=1e-6)
    assert differs_with_the_other_model == len(ranked.rows)


def _signals(checkpoint, problem, configs):
    with torch.no_grad():  # the network as DIODE runs it at compile time
        members = FrozenTimingModel(checkpoint.model)(EXTRACTOR.extract(problem, configs, H100))
    return pick_signals(problem, configs, members, nearest_distance(checkpoint.novelty["support"], problem))


def test_the_final_model_is_the_plain_network_with_a_hit_model_fitted_out_of_fold(problems, tmp_path):
    result = train_out_of_fold(problems, H100, EXTRACTOR, tmp_path / "oof.pt", FAST, folds=2, progress=None, **SPLIT)
    train(problems, H100, EXTRACTOR, tmp_path / "plain.pt", FAST, progress=None, confidence="logistic", **SPLIT)
    oof, plain = (torch.load(tmp_path / f"{name}.pt", weights_only=True) for name in ("oof", "plain"))
    # the same network, calibration and novelty as without folds
    assert all(torch.equal(oof["state_dict"][key], plain["state_dict"][key]) for key in plain["state_dict"])
    assert oof["calibration"] == plain["calibration"]
    assert torch.equal(oof["novelty"]["support"], plain["novelty"]["support"])
    with pytest.raises(ValueError, match="a hit model is the logistic confidence; confidence 'calibrated' has none"):
        train(problems, H100, EXTRACTOR, tmp_path / "other.pt", FAST, progress=None, hit_model=oof["hit_model"], **SPLIT)
    # its hit model is the one fitted on every out-of-fold row (the same folds ranked again here)
    again = rank_out_of_fold(problems, H100, EXTRACTOR, tmp_path / "again.pt", FAST, folds=2, progress=None, **SPLIT)
    rows = again.rows
    assert oof["hit_model"] == fit_hit_model([r.signals for r in rows], [r.hit for r in rows], [r.family for r in rows])
    assert oof["hit_model"]["version"] == 3 and oof["hit_model"] != plain["hit_model"]
    assert oof["training"]["hit_model_folds"] == [
        {"families": fold, "ranked": 8 * len(fold), "problems": 8 * len(fold), "labelled": 0,
         "misses": sum(r.fold == k and not r.hit for r in rows)}
        for k, fold in enumerate(again.folds)
    ]  # fmt: skip
    assert (result.hit_model_problems, result.calibration_problems) == (40, 16)
    assert not fold_folder(tmp_path / "oof.pt").exists()  # removed once the checkpoint is written
    confidence = LearnedScorer.load(tmp_path / "oof.pt").predict(problems[0].problem, SPACE, H100).confidence
    signals = _signals(load_checkpoint(tmp_path / "oof.pt"), problems[0].problem, SPACE)
    assert confidence == pytest.approx(hit_probability(oof["hit_model"], signals))  # the scorer's confidence is this hit model's


def test_a_row_is_the_pick_of_the_compile_time_list_with_the_confidence_diode_computes_for_it(problems, tmp_path):
    train(problems, H100, EXTRACTOR, tmp_path / "model.pt", FAST, progress=None, confidence="logistic", **SPLIT)
    checkpoint, scorer = load_checkpoint(tmp_path / "model.pt"), LearnedScorer.load(tmp_path / "model.pt")
    record = problems[0]
    ranking = rank_candidates(scorer, record.problem, record.configs, H100)  # as DIODE ranks it at compile time
    pick = ranking.order[0]
    untimed_pick = replace(record, configs=record.configs[:pick] + record.configs[pick + 1 :],
                           times_us=record.times_us[:pick] + record.times_us[pick + 1 :])  # fmt: skip
    kept = sorted({*range(0, len(record.configs), 4), pick})  # a quarter timed, the pick among them
    quarter = replace(record, configs=tuple(record.configs[i] for i in kept), times_us=tuple(record.times_us[i] for i in kept))
    rows = compile_time_signals(checkpoint.model, checkpoint.novelty["support"], [untimed_pick, record, quarter], EXTRACTOR, H100)
    # the pick is made over the whole list whatever was timed; a pick not timed has no row
    assert [(index, labelled) for index, _, _, labelled in rows] == [(1, False), (2, False)]
    (_, signals, ratio, _), (_, quarter_signals, quarter_ratio, _) = rows
    assert quarter_signals == signals  # what was timed changes the outcome, never the signals
    assert ratio == pytest.approx(record.times_us[pick] / min(record.times_us))
    assert quarter_ratio == pytest.approx(record.times_us[pick] / min(quarter.times_us))
    assert len(signals) == len(SIGNALS)
    assert hit_probability(checkpoint.hit_model, signals) == pytest.approx(ranking.confidence, rel=1e-4, abs=1e-6)

    # the untimed pick judged from a pick label: the pick timed on another day beside a reference
    reference = min((i for i in range(len(record.configs)) if i != pick), key=record.times_us.__getitem__)
    label = replace(record, configs=(record.configs[pick], record.configs[reference]), times_us=(6.0, 5.0))
    together = [untimed_pick, record, quarter]  # (the kinds ranked are those the records timed)
    labelled = compile_time_signals(checkpoint.model, checkpoint.novelty["support"], together, EXTRACTOR, H100, {record.problem: label})
    assert [(index, judged) for index, _, _, judged in labelled] == [(0, True), (1, False), (2, False)]
    assert labelled[0][1] == signals and labelled[0][2] == pytest.approx(6.0 / 5.0)
    assert record.problem.dtype != "float32"  # so a label timed under another TF32 rule judges it too (test_pick_labels)
    other_rule = replace(label, tf32_rule="size" if record.tf32_rule != "size" else "always")
    assert compile_time_signals(checkpoint.model, checkpoint.novelty["support"], together, EXTRACTOR, H100, {record.problem: other_rule}) == labelled


@pytest.mark.parametrize("interrupted, retrained", [(2, [1, "final"]), (3, ["final"])], ids=["in-fold-1", "in-the-final-model"])
def test_resume_reuses_the_finished_fold_models(problems, tmp_path, monkeypatch, interrupted, retrained):
    train_out_of_fold(problems, H100, EXTRACTOR, tmp_path / "whole.pt", FAST, folds=2, progress=None, **SPLIT)
    with pytest.raises(KeyboardInterrupt):
        train_out_of_fold(problems, H100, EXTRACTOR, tmp_path / "cut.pt", FAST, folds=2, progress=_InterruptAt(interrupted), **SPLIT)
    trainings = []

    def counted(records, hardware, extractor, output, *args, **kwargs):
        trainings.append(int(output.stem.removeprefix("fold-")) if output.name.startswith("fold-") else "final")
        return train(records, hardware, extractor, output, *args, **kwargs)

    monkeypatch.setattr(out_of_fold, "train", counted)
    stream = io.StringIO()
    train_out_of_fold(problems, H100, EXTRACTOR, tmp_path / "cut.pt", FAST, folds=2, resume=True, progress=stream, **SPLIT)
    assert trainings == retrained
    assert f"fold 1/2: reusing {fold_folder(tmp_path / 'cut.pt') / 'fold-0.pt'}" in stream.getvalue()
    whole, resumed = (torch.load(tmp_path / f"{name}.pt", weights_only=True) for name in ("whole", "cut"))
    assert all(torch.equal(whole["state_dict"][key], resumed["state_dict"][key]) for key in whole["state_dict"])
    assert (resumed["hit_model"], resumed["training"]) == (whole["hit_model"], whole["training"])


def test_resume_refuses_a_fold_model_of_other_options_or_data(problems, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        train_out_of_fold(problems, H100, EXTRACTOR, tmp_path / "model.pt", FAST, folds=2, progress=_InterruptAt(2), **SPLIT)
    fold_0 = fold_folder(tmp_path / "model.pt") / "fold-0.pt"
    with pytest.raises(ValueError, match=f"{fold_0}: a fold model of other options; delete it or drop --resume"):
        other = dataclasses.replace(FAST, learning_rate=0.1)
        train_out_of_fold(problems, H100, EXTRACTOR, tmp_path / "model.pt", other, folds=2, resume=True, progress=None, **SPLIT)
    with pytest.raises(ValueError, match="a fold model of other data_digest"):
        train_out_of_fold(problems[:-1], H100, EXTRACTOR, tmp_path / "model.pt", FAST, folds=2, resume=True, progress=None, **SPLIT)


def test_folds_need_the_halves_as_whole_families(tmp_path):
    three = [replace(p, generator=f"zoo:{name}") for seed, name in enumerate(("a", "b", "c")) for p in synthetic_problems(8, seed=seed)]
    with pytest.raises(ValueError, match="drawn by problem"):
        rank_out_of_fold(three, H100, EXTRACTOR, tmp_path / "model.pt", FAST, folds=2, progress=None)
