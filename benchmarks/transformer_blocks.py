"""Small transformer blocks whose GEMMs `diode collect shapes --model` traces.

`trace()` runs a Llama-style block (no biases, grouped-query attention) and a GPT-2-style block
(biases) on meta tensors in bfloat16, so nothing is computed and no GPU is needed; the GEMMs
they execute (projections as mm/addmm with nn.Linear's transposed weight, attention as bmm) are
what the collector records. Used for the H100 dataset: benchmarks/h100_plan.py.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, hidden: int, intermediate: int, heads: int, kv_heads: int, bias: bool) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q = nn.Linear(hidden, hidden, bias=bias)
        self.kv = nn.Linear(hidden, 2 * kv_heads * self.head_dim, bias=bias)
        self.o = nn.Linear(hidden, hidden, bias=bias)
        self.up = nn.Linear(hidden, intermediate, bias=bias)
        self.down = nn.Linear(intermediate, hidden, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.head_dim), dim=-1)
        x = x + self.o((p @ v).transpose(1, 2).reshape(b, s, h))
        return x + self.down(torch.nn.functional.silu(self.up(x)))


BLOCKS = {"llama-1b": (2048, 8192, 32, 8, False), "gpt2-medium": (1024, 4096, 16, 16, True)}


def trace(tokens=(128, 512, 2048), batch: int = 1) -> None:
    """Run every block at each sequence length (the collector records the GEMMs)."""
    with torch.device("meta"):
        for hidden, intermediate, heads, kv_heads, bias in BLOCKS.values():
            block = Block(hidden, intermediate, heads, kv_heads, bias).to(torch.bfloat16)
            for s in tokens:
                block(torch.randn(batch, s, hidden, dtype=torch.bfloat16))
