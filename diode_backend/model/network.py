"""The timing network: an ensemble of small MLPs predicting log runtime per candidate.

The members' weights are stacked (``[E, in, out]``) so the whole ensemble runs as one batched
matrix product per layer. :class:`FrozenTimingModel` is the same function laid out for ranking
(one feature batch shared by every member): 2,000 candidates must take well under a millisecond
on one CPU core. The ensemble's disagreement feeds the confidence estimate; see
``diode_backend.model``.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import torch
from torch import nn


# Both take ``inplace=True``, which FrozenTimingModel uses.
_ACTIVATIONS = {"silu": torch.nn.functional.silu, "relu": torch.nn.functional.relu}


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


class FrozenTimingModel:
    """``TimingModel.forward`` for inference on one feature batch ``[n, F]`` that all members
    share, with equal outputs up to float32 rounding, laid out for speed on one CPU core.

    The first layer of all members runs as one matrix product (weights ``[F, E*H]``) over the
    columns that vary between rows (the others are folded into its bias), later layers as
    batched products on a strided view, activations in place, the last layer as
    ``[1, H] @ [H, n]`` per member (faster in torch than ``[n, H] @ [H, 1]``). The intermediate
    buffers are kept per thread and reused: fresh megabyte buffers on every call page-fault.

    The weights are copied when this is built: build it from a loaded model, not during
    training. The returned tensor is new on every call (never a view of the kept buffers).
    """

    def __init__(self, model: TimingModel) -> None:
        members = model.ensemble
        layers = [(weight.detach(), bias.detach()) for weight, bias in zip(model.weights, model.biases)]
        weight, bias = layers[0]
        self._first = (weight.permute(1, 0, 2).reshape(weight.shape[1], -1).contiguous(), bias.reshape(-1).clone())
        self._hidden = [(weight.clone(), bias.clone()) for weight, bias in layers[1:-1]]
        weight, bias = layers[-1]
        self._last = (weight.transpose(1, 2).contiguous(), bias.clone()) if len(layers) > 1 else None
        self.ensemble = members
        self._activation = model.activation
        self._mean, self._std = model.mean.clone(), model.std.clone()
        self._target_std, self._target_mean = model.target_std.clone(), model.target_mean.clone()
        self._base = model.base
        # Each buffer holds the widest layer's output, or the normalised features.
        self._buffer_row = max([model.mean.numel()] + [members * bias.shape[-1] for _, bias in layers])
        self._local = threading.local()

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        """``features[n, F] -> log_time_us[E, n]``, natural log of microseconds."""
        n, members = features.shape[0], self.ensemble
        if not n:
            return features.new_empty(members, 0)
        with torch.inference_mode():
            free, spare = self._buffers(n * self._buffer_row)
            x = self._first_layer(features, free, spare)
            x = x.view(n, members, -1).transpose(0, 1)  # [E, n, H], strided
            for weight, bias in self._hidden:
                self._activation(x, inplace=True)
                free, spare = spare, free
                x = torch.baddbmm(bias, x, weight, out=free[: members * n * bias.shape[-1]].view(members, n, -1))
            if self._last is None:
                log_times = x.squeeze(-1)
            else:
                self._activation(x, inplace=True)
                weight, bias = self._last
                log_times = torch.baddbmm(bias, weight, x.transpose(1, 2)).squeeze(1)
            return log_times * self._target_std + self._target_mean + self._base(features)

    def _first_layer(self, features: torch.Tensor, out: torch.Tensor, scratch: torch.Tensor) -> torch.Tensor:
        """The first layer of all members, ``[n, E*H]`` in ``out``. Columns equal in every row
        (the problem's own features: a ranking is of one problem) are folded into the bias, so
        the matrix product runs over the varying columns only."""
        n = features.shape[0]
        weight, bias = self._first
        spread = torch.sub(features, features[0], out=scratch[: features.numel()].view(features.shape)).abs_().sum(0)
        constant, varying = (spread == 0).nonzero().squeeze(1), (spread != 0).nonzero().squeeze(1)  # NaN varies
        first_row = (features[0, constant] - self._mean[constant]) / self._std[constant]
        bias = torch.addmv(bias, weight.index_select(0, constant).t(), first_row)
        x = torch.index_select(features, 1, varying, out=scratch[: n * varying.numel()].view(n, -1))
        x.sub_(self._mean[varying]).div_(self._std[varying])
        return torch.addmm(bias, x, weight.index_select(0, varying), out=out[: n * bias.numel()].view(n, -1))

    def _buffers(self, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """This thread's two buffers of at least ``size`` floats (grown, never shrunk)."""
        buffers = getattr(self._local, "buffers", None)
        if buffers is None or buffers[0].numel() < size:
            buffers = self._local.buffers = (torch.empty(size), torch.empty(size))
        return buffers
