"""New H100 training problems across the alignment grid of 16-bit Linear products, from the zoo's
training families.

    python benchmarks/h100_alignment_plan.py      # writes trained_models/data/h100/problems/zoo-alignment-train.json

Whether cuBLAS or a Triton tile wins a 16-bit Linear product of M >= 1024 turns on how N and K
are aligned: in the training data, ATen wins where both are multiples of 128 (273 problems,
ATen over the best tile 0.85 geomean) and loses where either is not a multiple of 8 (1.4-1.8),
but the cells between hold a handful of problems each (3 with N and K odd multiples of 64, 11
with N an odd multiple of 64 and K a multiple of 128, 9 with both multiples of 8 and not of 64),
the eleven families kept out of gradient training fewer still, so no figure says whether the
model is right there. A held-out family's product in such a cell (N = K = 320 with a bias) is
what pointed here; the plan is drawn over the grid, not near that product.

Rule, with seed :data:`SEED`, over the training families (every zoo family not in
``zoo-holdout.json``) and their traced float16/bfloat16 mm and addmm (op, dtype, layouts, bias):
:data:`PER_CELL` problems in each of the 16 cells (N class, K class) of :data:`CLASSES`, M
log-uniform in :data:`M_RANGE`, N and K log-uniform in :data:`NK_RANGE` and moved to the nearest
size of their class. A draw is made again when its FLOPs exceed ``MAX_FLOPS["train"]``, or when
it is already timed (the dataset), listed in another plan, or a held-out family's traced GEMM.
Planned on ``default`` (ATen and Inductor's DEFAULT tiles: the question is ATen against Triton)
in eight rounds, each the next eighth of every cell, fewest new kernels first within a round.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable

from h100_attention_plan import log_uniform
from h100_gaps_plan import distinct, seeded_plan, write_plan
from h100_plan import MAX_FLOPS

from diode_backend.problem import GemmProblem

SPACE = "default"
PER_CELL = 48
SEED = 0
M_RANGE = (1024, 16384)
NK_RANGE = (64, 8192)
LINEAR = ("op", "dtype", "allow_tf32", "a_layout", "b_layout", "bias")
#: the alignment classes of N and K (:func:`alignment`)
CLASSES = ("128", "64", "8", "odd")


def alignment(size: int) -> str:
    """A size's class: a multiple of 128, an odd multiple of 64, a multiple of 8 and not of 64,
    or not a multiple of 8."""
    if size % 128 == 0:
        return "128"
    if size % 64 == 0:
        return "64"
    return "8" if size % 8 == 0 else "odd"


def in_class(size: int, cls: str, rng: random.Random) -> int:
    """The size of class ``cls`` nearest ``size`` (a random step off a multiple of 8 for odd)."""
    if cls == "128":
        return max(128, round(size / 128) * 128)
    if cls == "64":
        return 64 * (2 * max(0, round((size / 64 - 1) / 2)) + 1)
    if cls == "8":
        near = max(8, round(size / 8) * 8)
        return near + 8 if near % 64 == 0 else near
    return size if size % 8 else size + rng.randint(1, 7)


def cell(n_class: str, k_class: str) -> Callable[[dict, random.Random], list[GemmProblem] | None]:
    """A draw of one product of template ``t`` in the cell (N class, K class)."""

    def draw(t: dict, rng: random.Random) -> list[GemmProblem] | None:
        m = log_uniform(rng, *M_RANGE)
        n = in_class(log_uniform(rng, *NK_RANGE), n_class, rng)
        k = in_class(log_uniform(rng, *NK_RANGE), k_class, rng)
        problem = GemmProblem(m=m, n=n, k=k, **t)
        return [problem] if problem.flops <= MAX_FLOPS["train"] else None

    return draw


def streams(zoo: dict[str, list[dict]], holdout: list[str]) -> dict[str, tuple[int, Callable, dict[str, list[dict]]]]:
    """{"n<class>-k<class>": (PER_CELL, draw, {family: templates})} over the training families."""
    by_family = {}
    for family in sorted(set(zoo) - set(holdout)):
        products = [{key: e[key] for key in LINEAR} for e in zoo[family] if e["op"] in ("mm", "addmm") and e["dtype"] != "float32"]
        if products:
            by_family[family] = distinct(products, LINEAR)
    return {f"n{n}-k{k}": (PER_CELL, cell(n, k), {f: list(ts) for f, ts in by_family.items()}) for n in CLASSES for k in CLASSES}


def main(argv: list[str]) -> int:
    target, planned, stream_of = seeded_plan("alignment", streams, int(argv[0]) if argv else SEED, SPACE)
    assert all(p.flops <= MAX_FLOPS["train"] and p.dtype != "float32" for p in stream_of)
    assert all(stream == f"n{alignment(p.n)}-k{alignment(p.k)}" for p, stream in stream_of.items())
    write_plan(target, planned, stream_of)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
