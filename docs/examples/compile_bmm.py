"""A program that compiles with max-autotune, for `diode collect feedback` to record
(docs/collect.md): one batched matrix multiplication, on the GPU when there is one; Inductor
autotunes bmm on the CPU too."""

import argparse

import torch

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--size", type=int, default=64, help="M and N of the product")
args = parser.parse_args()
device = "cuda" if torch.cuda.is_available() else "cpu"
a = torch.randn(4, args.size, 32, device=device)
b = torch.randn(4, 32, args.size, device=device)
torch.compile(torch.bmm, mode="max-autotune-no-cudagraphs")(a, b)
