"""KernelConfig sequences as column tensors, built once per ranking and shared by the feature
extractor and the analytical scorer (both vectorised: ranking 2,000 candidates must stay in the
low milliseconds on one CPU core)."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import starmap
from operator import attrgetter

import torch

from .problem import KIND_ATEN, KIND_TRITON, KernelConfig

_TILE_FIELDS = attrgetter("block_m", "block_n", "block_k", "num_stages", "num_warps", "group_m")
_PACK_TILES = struct.Struct("=6i").pack
_KIND = attrgetter("kind")
_KIND_CODES = {KIND_ATEN: 0, KIND_TRITON: 1}  # anything else: 2
#: The ATen calls a candidate can make (``aten::<call>``); :attr:`ConfigTable.aten_calls` indexes it.
ATEN_CALLS = ("mm", "addmm", "bias_addmm", "bmm", "baddbmm")


@dataclass(frozen=True)
class ConfigTable:
    """One row per config.

    ``tiles``: float64 ``[n, 6]`` block_m, block_n, block_k, num_stages, num_warps, group_m (0
    where a kind has none). ``aten``/``triton``/``other``: bool kind flags; ``aten_calls``: int8
    index into :data:`ATEN_CALLS` of an ATen row's call, -1 for other rows and unknown calls;
    ``bias_epilogue``: an ATen ``bias_addmm`` (bias fused in the cuBLASLt epilogue).
    """

    tiles: torch.Tensor
    aten: torch.Tensor
    triton: torch.Tensor
    other: torch.Tensor
    aten_calls: torch.Tensor
    bias_epilogue: torch.Tensor

    @classmethod
    def of(cls, configs: Sequence[KernelConfig]) -> ConfigTable:
        n = len(configs)
        # struct packing in C-level iterators, then frombuffer: several times faster than
        # torch.tensor on nested lists
        packed = bytearray(b"".join(starmap(_PACK_TILES, map(_TILE_FIELDS, configs))))
        tiles = torch.frombuffer(packed, dtype=torch.int32).view(n, 6).double() if n else torch.zeros(0, 6, dtype=torch.float64)
        kinds = list(map(_KIND, configs))
        # one-argument lookups in a table of the kinds present: faster than .get(kind, 2) per row
        code_of = {kind: _KIND_CODES.get(kind, 2) for kind in set(kinds)}
        codes = bytearray(map(code_of.__getitem__, kinds))
        code = torch.frombuffer(codes, dtype=torch.int8) if n else torch.zeros(0, dtype=torch.int8)
        aten = code == 0
        aten_calls = torch.full((n,), -1, dtype=torch.int8)
        for i in aten.nonzero().flatten().tolist():  # a handful of ATen rows at most
            call = configs[i].template.split("::")[-1]
            aten_calls[i] = ATEN_CALLS.index(call) if call in ATEN_CALLS else -1
        bias_epilogue = aten_calls == ATEN_CALLS.index("bias_addmm")
        return cls(tiles, aten, code == 1, code == 2, aten_calls, bias_epilogue)
