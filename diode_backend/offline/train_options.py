"""The hyper-parameters of training, apart from the training code so that reading them (the
``diode train`` parser shows their defaults) does not import torch."""

from __future__ import annotations

from dataclasses import dataclass

#: What a trained model's confidence is (``diode train --confidence``): the raw score times the
#: familiarity factor, calibrated in one dimension, or a logistic hit model of the problem's and
#: the pick's signals (:mod:`diode_backend.model.hit_model`).
CONFIDENCES = ("calibrated", "logistic")


@dataclass(frozen=True)
class TrainOptions:
    """Hyper-parameters; every field is recorded in the checkpoint.

    ``candidates`` per problem are drawn as ``floor(u**sample_power * n)`` over the candidates
    sorted fastest first (``u`` uniform), so a power above 1 favours fast candidates.
    ``temperature`` is in natural-log units of time (0.05: a 5% slower candidate weighs
    ``1/e`` as much in the listwise target). ``residual``: the network corrects the analytical
    scorer's estimate (a feature) instead of predicting the time from scratch.
    """

    hidden: int = 32
    layers: int = 2
    ensemble: int = 4
    activation: str = "silu"
    max_epochs: int = 60
    patience: int = 8
    steps_per_epoch: int = 200
    problems_per_step: int = 32
    candidates: int = 64
    sample_power: float = 2.0
    learning_rate: float = 3e-3
    weight_decay: float = 1e-4
    listwise_weight: float = 1.0
    temperature: float = 0.05
    holdout_fraction: float = 0.2
    residual: bool = True
    seed: int = 0
