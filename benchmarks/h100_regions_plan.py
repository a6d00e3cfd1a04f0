"""New H100 training problems in the regions where the shipped model's single pick is worst on
the training families, from the zoo's training families.

    python benchmarks/h100_regions_plan.py       # writes trained_models/data/h100/problems/zoo-regions-train.json
    python benchmarks/h100_regions_plan.py 2     # a second draw (seed 2): zoo-regions-2-train.json

A sibling of ``h100_gaps_plan.py``, whose round drawing and compile ordering it reuses. An analysis
of model 1c861337's picks on the eleven non-held-out families (in-sample, top-1 regret over the
measured candidates) found its error in: attention bmm in float32 (TF32 bmm p90 1.33, a trusted
``aten::bmm`` pick 1.53x the best), large 16-bit prefill products (a trusted Triton tile at 1.36x
cuBLAS on bf16 mm 1024x4096x4096), float32 TF32 Linear products (trusted picks at 1.2-1.4x),
products with K <= 512 (65% of the log-regret over 13% of the problems, 21 16-bit addmm among
them in the data) and narrow or tiny products (14 mm/addmm with N <= 16, 8 float32 bmm with
K <= 16 in the data).

Rule, with seed :data:`SEED`, over the training families (every zoo family not in
``zoo-holdout.json``); each stream draws from a family's traced (op, dtype, TF32, layouts, bias)
of mm and addmm (``Linear``) or from its attention templates (``h100_attention_plan.templates``):

- ``prefill``: :data:`PREFILL` float16/bfloat16 Linear products, A row-major, B column-major,
  M log-uniform in 256..8192, N in 1024..16384, K in 512..16384;
- ``tf32-linear``: :data:`TF32_LINEAR` float32 Linear products with TF32, M in 64..8192, N and K
  in 64..4096;
- ``short-k``: :data:`SHORT_K` Linear products of any dtype, M in 1024..16384, N in 32..4096,
  K in 16..512;
- ``narrow``: :data:`NARROW` Linear products of any dtype, N in 1..16, M in 1..4096, K in
  256..8192;
- ``fp32-attention``: :data:`FP32_ATTENTION` (Q @ K^T, P @ V) pairs of a float32 attention
  template, drawn as ``h100_attention_plan.draw_pair`` does;
- ``tiny-bmm``: :data:`TINY_BMM` pairs of a float32 attention template at q log-uniform in 2..16
  (``h100_gaps_plan.small_q``).

Sizes are log-uniform, FLOPs at most ``MAX_FLOPS["train"]`` (a draw over it is made again). A
draw is made again when it is already timed (the dataset), listed in another plan, or a held-out
family's traced GEMM. Planned on ``default`` (ATen and Inductor's DEFAULT tiles: most of the
worst picks misjudge ATen against Triton, and ``sample/4`` would compile six times the kernels
per problem, so one GPU call would time a sixth of the problems), in eight rounds, each the next
eighth of every stream, fewest new kernels first within a round.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable

from h100_attention_plan import draw_pair, log_uniform, templates
from h100_gaps_plan import distinct, seeded_plan, small_q, write_plan
from h100_plan import MAX_FLOPS

from diode_backend.problem import GemmProblem

SPACE = "default"
PREFILL = 256
TF32_LINEAR = 128
SHORT_K = 256
NARROW = 128
FP32_ATTENTION = 128
TINY_BMM = 64
SEED = 0
LINEAR = ("op", "dtype", "allow_tf32", "a_layout", "b_layout", "bias")
#: (M, N, K) ranges of the Linear streams
RANGES = {
    "prefill": ((256, 8192), (1024, 16384), (512, 16384)),
    "tf32-linear": ((64, 8192), (64, 4096), (64, 4096)),
    "short-k": ((1024, 16384), (32, 4096), (16, 512)),
    "narrow": ((1, 4096), (1, 16), (256, 8192)),
}


#: which of a family's traced Linear templates each Linear stream draws from
LINEAR_TEMPLATES: dict[str, Callable[[dict], bool]] = {
    "prefill": lambda t: t["dtype"] != "float32" and (t["a_layout"], t["b_layout"]) == ("row", "col"),
    "tf32-linear": lambda t: t["dtype"] == "float32" and t["allow_tf32"],
    "short-k": lambda t: True,
    "narrow": lambda t: True,
}


def linear(stream: str) -> Callable[[dict, random.Random], list[GemmProblem] | None]:
    """A draw of one Linear product of template ``t`` in ``stream``'s ranges."""
    ranges = RANGES[stream]

    def draw(t: dict, rng: random.Random) -> list[GemmProblem] | None:
        m, n, k = (log_uniform(rng, *r) for r in ranges)
        problem = GemmProblem(m=m, n=n, k=k, **t)
        return [problem] if problem.flops <= MAX_FLOPS["train"] else None

    return draw


def pair_draw(t: dict, rng: random.Random) -> list[GemmProblem] | None:
    problems = draw_pair(t, rng)
    return list(problems) if problems else None


def streams(zoo: dict[str, list[dict]], holdout: list[str]) -> dict[str, tuple[int, Callable, dict[str, list[dict]]]]:
    """{stream: (count, draw, {family: templates})} over the training families (module docstring)."""
    by_stream: dict[str, dict[str, list[dict]]] = {name: {} for name in (*RANGES, "fp32-attention", "tiny-bmm")}
    for family in sorted(set(zoo) - set(holdout)):
        products = distinct([{key: e[key] for key in LINEAR} for e in zoo[family] if e["op"] in ("mm", "addmm")], LINEAR)
        for name, keep in LINEAR_TEMPLATES.items():
            by_stream[name][family] = [t for t in products if keep(t)]
        attention = [t for t in templates(zoo[family]) if t["dtype"] == "float32"]
        by_stream["fp32-attention"][family] = attention
        by_stream["tiny-bmm"][family] = attention
    counts = {"prefill": PREFILL, "tf32-linear": TF32_LINEAR, "short-k": SHORT_K, "narrow": NARROW,
              "fp32-attention": FP32_ATTENTION, "tiny-bmm": TINY_BMM}
    draws = {name: linear(name) for name in RANGES} | {"fp32-attention": pair_draw, "tiny-bmm": small_q}
    return {name: (counts[name], draws[name], {f: ts for f, ts in by_family.items() if ts})
            for name, by_family in by_stream.items()}


def main(argv: list[str]) -> int:
    target, planned, stream_of = seeded_plan("regions", streams, int(argv[0]) if argv else SEED, SPACE)
    assert all(p.flops <= MAX_FLOPS["train"] for p in stream_of)
    for name, ((m0, m1), (n0, n1), (k0, k1)) in RANGES.items():
        assert all(m0 <= p.m <= m1 and n0 <= p.n <= n1 and k0 <= p.k <= k1 for p, s in stream_of.items() if s == name)
    assert all(p.dtype == "float32" for p, s in stream_of.items() if s in ("fp32-attention", "tiny-bmm", "tf32-linear"))
    write_plan(target, planned, stream_of)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
