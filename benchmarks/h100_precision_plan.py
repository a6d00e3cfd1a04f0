"""New H100 training problems for float32 Linear and TF32 products, from the zoo's training families.

    python benchmarks/h100_precision_plan.py   # writes trained_models/data/h100/problems/zoo-precision-train.json

A sibling of ``h100_gaps_plan.py``, whose round drawing and compile ordering it reuses. Two biases
of the model, found on non-held-out data:
float32 ``bias_addmm`` (ATen's addmm with the bias in cuBLAS's epilogue, nn.Linear's layout) steps
up in time at M about 33..64 (N = K = 768: 16.1 us at M = 32, 27-29 us at M = 40..64, plain addmm
17.6 us), and the data holds few fp32/TF32 addmm with bias at M 17..128; and Triton's template
ran TF32 only when M and N are multiples of 16 and K of 8 (the ``alignment`` rule of
``diode_backend.tf32``, the sweep's until it followed Inductor's), while
the data holds 10 TF32 problems at M <= 64 with it on against 83 with it off.

Rule, with seed :data:`SEED`, over the training families (every zoo family not in
``zoo-holdout.json``), in two streams:

- ``bias-step``: :data:`BIAS_STEP` addmm, float32, A row-major, B column-major (nn.Linear's
  weight), a row bias, for every family that traced such an addmm in any dtype: a family that
  traced it only in fp16 or bf16 lends its layout and its sizes, the dtype set to float32. A
  family's four templates: without and with TF32, each with M log-uniform in 33..64 (the step)
  or in 17..32 or 65..128 (a coin, the two about as wide in log). N and K: a third of the
  draws a traced (N, K) of the family's nn.Linear products (any dtype) within 512..3072 where
  it has one, else each log-uniform in 512..3072.
- ``tf32-align``: :data:`TF32_ALIGN` mm and addmm of a family's traced float32 (op, layouts,
  bias), TF32 allowed whether or not it was traced so, each twice: aligned, M a multiple of 16 in
  16..512, N of 16 and K of 8 in 256..4096 (Triton's TF32 on), and not aligned: one to three of
  M, N, K (a non-empty subset drawn uniformly) off their multiple, each odd or else halfway
  (M, N = 8 mod 16, K = 4 mod 8: cuBLAS's 16-byte alignment kept), the rest aligned. Sizes are
  log-uniform before rounding.

A draw is made again when it is already timed (the dataset), listed in another plan, or a held-out
family's traced GEMM. Order as ``zoo-gaps-train.json``: eight rounds (its ``ROUNDS``), each the
next eighth of both streams, fewest new kernels first within a round.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable

from h100_attention_plan import known_problems, log_uniform, report
from h100_gaps_plan import distinct, draw_rounds, plan_rounds
from h100_plan import MAX_FLOPS, OUT
from h100_zoo_plan import read_zoo

from diode_backend.offline.collect import shapes
from diode_backend.tf32 import triton_tf32_active
from diode_backend.problem import GemmProblem

TARGET = OUT / "zoo-precision-train.json"
BIAS_STEP = 60
TF32_ALIGN = 60
SEED = 0
#: nn.Linear with bias: addmm of a row-major input and the transposed (column-major) weight.
LINEAR_BIAS = dict(op="addmm", dtype="float32", a_layout="row", b_layout="col", bias="row")
TEMPLATE = ("op", "a_layout", "b_layout", "bias")
#: bias-step's M: at the step, or beside it below or above (about as wide in log).
STEP_M, BESIDE_STEP_M = (33, 64), ((17, 32), (65, 128))
BIAS_STEP_NK = (512, 3072)
TF32_ALIGN_M, TF32_ALIGN_NK = (16, 512), (256, 4096)


def bias_step(t: dict, rng: random.Random) -> list[GemmProblem]:
    m = log_uniform(rng, *(STEP_M if t["step"] else rng.choice(BESIDE_STEP_M)))
    if t["sizes"] and rng.random() < 1 / 3:
        n, k = rng.choice(t["sizes"])
    else:
        n, k = log_uniform(rng, *BIAS_STEP_NK), log_uniform(rng, *BIAS_STEP_NK)
    return [GemmProblem(m=m, n=n, k=k, allow_tf32=t["allow_tf32"], **LINEAR_BIAS)]


def sized(rng: random.Random, low: int, high: int, multiple: int, aligned: bool) -> int:
    """Log-uniform in low..high (both multiples of ``multiple``) rounded down to a multiple, or when
    not ``aligned`` made odd or else halfway between two multiples (a coin), within low..high."""
    x = log_uniform(rng, low, high)
    if aligned:
        return x - x % multiple
    y = x | 1 if rng.random() < 0.5 else x - x % multiple + multiple // 2
    return y if y <= high else y - multiple


def tf32_align(t: dict, rng: random.Random) -> list[GemmProblem]:
    off = set() if t["aligned"] else rng.choice([{"m"}, {"n"}, {"k"}, {"m", "n"}, {"m", "k"}, {"n", "k"}, {"m", "n", "k"}])
    m = sized(rng, *TF32_ALIGN_M, 16, "m" not in off)
    n = sized(rng, *TF32_ALIGN_NK, 16, "n" not in off)
    k = sized(rng, *TF32_ALIGN_NK, 8, "k" not in off)
    return [GemmProblem(m=m, n=n, k=k, dtype="float32", allow_tf32=True, **{key: t[key] for key in TEMPLATE})]


def streams(zoo: dict[str, list[dict]], holdout: list[str]) -> dict[str, tuple[int, Callable, dict[str, list[dict]]]]:
    """{stream: (count, draw, {family: templates})} over the training families (module docstring)."""
    bias, tf32 = {}, {}
    for family in sorted(set(zoo) - set(holdout)):
        products = [e for e in zoo[family] if e["op"] in ("mm", "addmm")]
        if any(all(e[key] == LINEAR_BIAS[key] for key in TEMPLATE) for e in products):
            sizes = sorted({(e["n"], e["k"]) for e in products if (e["a_layout"], e["b_layout"]) == ("row", "col")
                            and all(BIAS_STEP_NK[0] <= v <= BIAS_STEP_NK[1] for v in (e["n"], e["k"]))})
            bias[family] = [dict(allow_tf32=allowed, step=step, sizes=sizes) for allowed in (False, True) for step in (True, False)]
        fp32 = distinct([{key: e[key] for key in TEMPLATE} for e in products if e["dtype"] == "float32"], TEMPLATE)
        if fp32:
            tf32[family] = [dict(t, aligned=aligned) for t in fp32 for aligned in (True, False)]
    return {"bias-step": (BIAS_STEP, bias_step, bias), "tf32-align": (TF32_ALIGN, tf32_align, tf32)}


def m_range(problem: GemmProblem) -> str:
    return next(label for label, top in (("16", 16), ("17-32", 32), ("33-64", 64), ("65-128", 128), ("129-512", 512)) if problem.m <= top)


def main() -> int:
    zoo = read_zoo()
    holdout = json.loads((OUT / "zoo-holdout.json").read_text())["families"]
    rounds, stream_of = draw_rounds(streams(zoo, holdout), known_problems(holdout, zoo, TARGET), SEED)
    planned = plan_rounds(rounds)
    of = {name: [p.problem for p in planned if stream_of[p.problem] == name] for name in ("bias-step", "tf32-align")}
    assert all(p.flops <= MAX_FLOPS["train"] and p.dtype == "float32" for p in stream_of)
    assert all((p.op, p.a_layout, p.b_layout, p.bias) == ("addmm", "row", "col", "row") and 17 <= p.m <= 128
               and all(BIAS_STEP_NK[0] <= v <= BIAS_STEP_NK[1] for v in (p.n, p.k)) for p in of["bias-step"])
    assert all(p.allow_tf32 and TF32_ALIGN_M[0] <= p.m <= TF32_ALIGN_M[1] and all(TF32_ALIGN_NK[0] <= v <= TF32_ALIGN_NK[1] for v in (p.n, p.k))
               for p in of["tf32-align"])
    shapes.to_json([(p.generator, p.problem) for p in planned], TARGET, "h100-zoo-precision-train")
    report(TARGET, planned, first=80, stream=lambda p: stream_of[p.problem],
           m=lambda p: f"{stream_of[p.problem]} {m_range(p.problem)}",
           triton_tf32=lambda p: f"{stream_of[p.problem]} {'on' if triton_tf32_active(p.problem, 'alignment') else 'off'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
