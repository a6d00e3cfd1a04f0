"""The timing network: an ensemble of small MLPs predicting log runtime per candidate.

The ensemble's disagreement feeds the confidence estimate; see ``diode_backend.model``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class TimingModel(nn.Module):
    """``forward(features[n, F]) -> log_time_us[E, n]``, one row per ensemble member.

    Inputs are normalised inside the model (``mean``/``std`` buffers are saved with the
    weights), so callers pass raw feature rows.

    :param arch: ``{"num_features": F, "hidden": H, "layers": L, "ensemble": E}``.
    """

    def __init__(self, arch: dict[str, Any]) -> None:
        super().__init__()
        self.arch = dict(arch)
        features, hidden = int(arch["num_features"]), int(arch["hidden"])
        layers, members = int(arch["layers"]), int(arch["ensemble"])
        self.register_buffer("mean", torch.zeros(features))
        self.register_buffer("std", torch.ones(features))
        self.members = nn.ModuleList(_mlp(features, hidden, layers) for _ in range(members))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = (features - self.mean) / self.std
        return torch.stack([member(x).squeeze(-1) for member in self.members])


def _mlp(features: int, hidden: int, layers: int) -> nn.Sequential:
    modules: list[nn.Module] = []
    width = features
    for _ in range(layers):
        modules += [nn.Linear(width, hidden), nn.SiLU()]
        width = hidden
    modules.append(nn.Linear(width, 1))
    return nn.Sequential(*modules)
