"""The confidence's novelty factor: distance of a problem to the training problems."""

from __future__ import annotations

import math

import pytest
import torch
from synthetic_timings import H100, SPACE, synthetic_problems

from diode_backend import registry
from diode_backend.model.checkpoint import ModelLoadError
from diode_backend.model.learned import LearnedScorer
from diode_backend.model.novelty import fit_scale, nearest_distance, support_of
from diode_backend.offline.train import TrainOptions, train
from diode_backend.problem import GemmProblem

LINEAR = GemmProblem("mm", 4096, 4096, 4096, dtype="bfloat16", b_layout="col")


def test_distance_counts_size_doublings_kind_and_alignment():
    support = support_of([LINEAR, LINEAR])
    assert support.shape[0] == 1  # one point per distinct problem
    assert nearest_distance(support, LINEAR) == 0.0
    assert nearest_distance(support, GemmProblem("mm", 1024, 4096, 4096, dtype="bfloat16", b_layout="col")) == 2.0
    # float32 instead of bfloat16: two kind columns differ by 2 each
    assert nearest_distance(support, GemmProblem("mm", 4096, 4096, 4096, dtype="float32", b_layout="col")) == pytest.approx(math.sqrt(8))
    odd = nearest_distance(support, GemmProblem("mm", 4095, 4096, 4096, dtype="bfloat16", b_layout="col"))
    assert odd == pytest.approx(1.0, abs=1e-3)  # M's alignment (and a hair of size)


def test_the_scale_is_the_one_that_tells_hits_from_misses():
    raw = [0.9] * 8
    distances = [0.0, 0.1, 0.2, 0.3, 3.0, 4.0, 5.0, 6.0]
    far_misses = [True] * 4 + [False] * 4
    assert math.isfinite(fit_scale(raw, distances, far_misses))
    near_misses = [False] * 4 + [True] * 4  # distance is no help: ignore it
    assert fit_scale(raw, distances, near_misses) == math.inf


def test_a_problem_unlike_the_training_problems_gets_less_confidence(tmp_path):
    options = TrainOptions(hidden=16, ensemble=3, max_epochs=3, steps_per_epoch=10, problems_per_step=8, candidates=8)
    problems = synthetic_problems(30)
    train(problems, H100, registry.feature_extractors()["gemm"], tmp_path / "model.pt", options, progress=None)
    saved = torch.load(tmp_path / "model.pt", weights_only=True)
    assert saved["novelty"]["support"].shape[0] == 24  # the problems trained on
    saved["novelty"]["scale"] = 1.0
    del saved["calibration"]  # fitted on 6 problems it is one constant: judge the raw score
    torch.save(saved, tmp_path / "scaled.pt")
    scorer = LearnedScorer.load(tmp_path / "scaled.pt")
    seen = problems[0].problem
    unlike = GemmProblem("mm", seen.m * 64, seen.n, seen.k * 64, dtype="float32")  # none like it was trained on
    near, far = (scorer.predict(p, SPACE, H100).confidence for p in (seen, unlike))
    assert far < near
    saved["novelty"]["scale"] = -1.0
    torch.save(saved, tmp_path / "bad.pt")
    with pytest.raises(ModelLoadError, match="'novelty'"):
        LearnedScorer.load(tmp_path / "bad.pt")
