"""The timing network: an ensemble of small MLPs predicting log runtime per candidate.

The members' weights are stacked (``[E, in, out]``) so the whole ensemble runs as one batched
matrix product per layer: ranking 2,000 candidates must take about a millisecond on one CPU core.
The ensemble's disagreement feeds the confidence estimate; see ``diode_backend.model``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


_ACTIVATIONS = {"silu": torch.nn.functional.silu, "relu": torch.relu}


class TimingModel(nn.Module):
    """``forward(features[n, F]) -> log_time_us[E, n]``, one row per ensemble member; the
    output is the natural log of the runtime in microseconds.

    Inputs are normalised inside the model (``mean``/``std`` buffers are saved with the
    weights), so callers pass raw feature rows; ``target_mean``/``target_std`` rescale the
    members' outputs to log microseconds. Training may pass ``features[E, n, F]``, a different
    batch per member.

    :param arch: ``{"num_features": F, "hidden": H, "layers": L, "ensemble": E}`` and optionally
        ``"activation"``: ``"silu"`` (default) or ``"relu"``; ``"base_feature"``: the index of a
        feature holding a prior estimate in log2 microseconds (0 where there is none), which the
        members then correct rather than replace (default -1: none).
    """

    def __init__(self, arch: dict[str, Any]) -> None:
        super().__init__()
        self.arch = dict(arch)
        features, hidden = int(arch["num_features"]), int(arch["hidden"])
        layers, members = int(arch["layers"]), int(arch["ensemble"])
        activation = arch.get("activation", "silu")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation {activation!r}: expected one of {', '.join(_ACTIVATIONS)}")
        self.activation = _ACTIVATIONS[activation]
        self.base_feature = int(arch.get("base_feature", -1))
        self.register_buffer("mean", torch.zeros(features))
        self.register_buffer("std", torch.ones(features))
        self.register_buffer("target_mean", torch.zeros(()))
        self.register_buffer("target_std", torch.ones(()))
        widths = [features] + [hidden] * layers + [1]
        self.weights = nn.ParameterList(
            nn.Parameter(torch.empty(members, fan_in, fan_out)) for fan_in, fan_out in zip(widths, widths[1:])
        )
        self.biases = nn.ParameterList(
            nn.Parameter(torch.empty(members, 1, fan_out)) for fan_out in widths[1:]
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """nn.Linear's default initialisation, member by member (draws from torch's global RNG)."""
        for weight, bias in zip(self.weights, self.biases):
            bound = 1.0 / math.sqrt(weight.shape[1])
            nn.init.uniform_(weight, -bound, bound)
            nn.init.uniform_(bias, -bound, bound)

    @property
    def ensemble(self) -> int:
        return self.weights[0].shape[0]

    def base(self, features: torch.Tensor) -> torch.Tensor:
        """The prior estimate in natural-log microseconds per row (zeros without one)."""
        if self.base_feature < 0:
            return features.new_zeros(features.shape[:-1])
        return features[..., self.base_feature] * math.log(2.0)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = (features - self.mean) / self.std
        if x.dim() == 2:
            x = x.expand(self.ensemble, *x.shape)
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            x = torch.baddbmm(bias, x, weight)
            if index < last:
                x = self.activation(x)
        return x.squeeze(-1) * self.target_std + self.target_mean + self.base(features)
