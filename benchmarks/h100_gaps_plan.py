"""New H100 training problems where the shipped model lacks data, from the zoo's training families.

    python benchmarks/h100_gaps_plan.py   # writes trained_models/data/h100/problems/zoo-gaps-train.json

A sibling of ``h100_attention_plan.py``, whose attention templates (model, dtype, TF32, heads,
head dims, op, bias and layouts of a traced Q @ K^T and its P @ V) and draws it reuses. An
analysis of the picks of model 8df2f67e found two gaps in its data:
small-q attention, where the data has q = 1 and 7 only and ATen's speed at q = 2..16 differs
from q = 1's; and small-output, long-K products, where cuBLAS fills few SMs and the model
misjudges ATen (whisper's fp32 bmm 12x100x64x1500, 2.56x the best).

Rule, with seed :data:`SEED`, over the training families (every zoo family not in
``zoo-holdout.json``), in three streams:

- ``small-q``: :data:`SMALL_Q_PAIRS` pairs, a Q @ K^T (``batch, q, kv, d``) and its P @ V
  (``batch, q, dv, kv``) of a family's attention template (kind ignored), q log-uniform in 2..16,
  kv a token count in 64..8192 (a vision grid's p*p + 1 a third of the time, else log-uniform),
  batch as the attention plan draws it.
- ``long-k-pv``: :data:`LONG_K_PV` P @ V alone of a template, q a token count in 17..256, kv one
  in 512..8192, batch = heads x b with b log-uniform among those whose output fills less than
  half of the 132 SMs in 128x128 tiles (templates that cannot are skipped).
- ``long-k-mm``: :data:`LONG_K_MM` mm/addmm of a family's traced (op, dtype, TF32, layouts,
  bias), M and N log-uniform in 16..256, K in 512..8192.

Each stream cycles through its families in a seeded order, and through a family's templates in
a seeded order. A draw is made again when any of its problems is already timed (the dataset),
listed in another plan, or a held-out family's traced GEMM. Order as ``zoo-attention-train.json``
within :data:`ROUNDS` rounds, each holding the next eighth of every stream (so of different
families), fewest new kernels first within a round: a collection cut short after any round has
as much of each stream and no family twice before every family of its stream once.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path

from h100_attention_plan import TRIES, draw_batch, known_problems, log_uniform, pair, report, sequence, templates
from h100_plan import H100, MAX_FLOPS, OUT
from h100_zoo_plan import compile_order, kernel_keys, read_zoo

from diode_backend.offline.collect import plan, shapes
from diode_backend.problem import GemmProblem

TARGET = OUT / "zoo-gaps-train.json"
SMALL_Q_PAIRS = 40
LONG_K_PV = 40
LONG_K_MM = 40
SEED = 0
ROUNDS = 8
#: Output tiles (128x128) below this fill under half of the H100's SMs.
HALF_FILL_TILES = H100.sm_count // 2


def output_tiles(problem: GemmProblem) -> int:
    """The number of 128x128 output tiles of ``problem``, over its batch."""
    return problem.batch * math.ceil(problem.m / 128) * math.ceil(problem.n / 128)


def distinct(items: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """``items`` with one of each value of ``keys``, in first-seen order."""
    out = {}
    for t in items:
        out.setdefault(tuple(t[k] for k in keys), t)
    return list(out.values())


def small_q(t: dict, rng: random.Random) -> list[GemmProblem] | None:
    q, kv = log_uniform(rng, 2, 16), sequence(rng, 64, 8192)
    batch = draw_batch(t, rng, q, kv)
    problems = pair(t, batch, q, kv) if batch else None
    return list(problems) if problems else None


def long_k_pv(t: dict, rng: random.Random) -> list[GemmProblem] | None:
    q, kv = sequence(rng, 17, 256), sequence(rng, 512, 8192)
    per_b = t["heads"] * math.ceil(q / 128) * math.ceil(t["dv"] / 128)
    b_max = min((HALF_FILL_TILES - 1) // per_b, int(MAX_FLOPS["train"] // (2 * t["heads"] * q * t["dv"] * kv)))
    if b_max < 1:
        return None
    return [pair(t, t["heads"] * log_uniform(rng, 1, b_max), q, kv)[1]]  # q < kv: never one problem


def long_k_mm(t: dict, rng: random.Random) -> list[GemmProblem]:
    m, n, k = log_uniform(rng, 16, 256), log_uniform(rng, 16, 256), log_uniform(rng, 512, 8192)
    return [GemmProblem(m=m, n=n, k=k, **t)]


def streams(zoo: dict[str, list[dict]], holdout: list[str]) -> dict[str, tuple[int, Callable, dict[str, list[dict]]]]:
    """{stream: (count, draw, {family: templates})} over the training families (module docstring)."""
    attention, pv, mm = {}, {}, {}
    for family in sorted(set(zoo) - set(holdout)):
        ts = templates(zoo[family])
        attention[family] = distinct(ts, ("model", "dtype", "allow_tf32", "heads", "d", "dv", "qk_op", "qk_bias", "qk_layout", "pv_layout"))
        # at q <= 128 the output is heads x b x ceil(dv / 128) tiles: none fits when b = 1 does not
        pv[family] = [t for t in distinct(ts, ("model", "dtype", "allow_tf32", "heads", "dv", "pv_layout"))
                      if t["heads"] * math.ceil(t["dv"] / 128) < HALF_FILL_TILES]
        mm[family] = distinct([{k: e[k] for k in ("op", "dtype", "allow_tf32", "a_layout", "b_layout", "bias")}
                               for e in zoo[family] if e["op"] in ("mm", "addmm")], ("op", "dtype", "allow_tf32", "a_layout", "b_layout", "bias"))
    drop_empty = lambda d: {f: ts for f, ts in d.items() if ts}  # noqa: E731
    return {"small-q": (SMALL_Q_PAIRS, small_q, drop_empty(attention)), "long-k-pv": (LONG_K_PV, long_k_pv, drop_empty(pv)),
            "long-k-mm": (LONG_K_MM, long_k_mm, drop_empty(mm))}


def derive(zoo: dict[str, list[dict]], holdout: list[str], known: set[GemmProblem]) -> tuple[list[list[tuple[str, GemmProblem]]], dict]:
    """The streams' new problems as ROUNDS rounds (round i: the i-th eighth of each stream), and
    {problem: stream}."""
    return draw_rounds(streams(zoo, holdout), known, SEED)


def draw_rounds(by_stream: dict[str, tuple[int, Callable, dict[str, list[dict]]]], known: set[GemmProblem],
                seed: int) -> tuple[list[list[tuple[str, GemmProblem]]], dict]:
    """New problems of ``by_stream`` ({stream: (count, draw, {family: templates})}, draw(template,
    rng) giving a list of problems or None) as ROUNDS rounds, none in ``known``, and {problem:
    stream}: each stream cycles through its families in a seeded order, and through a family's
    templates in a seeded order; round i holds the i-th ROUNDS-th part of every stream."""
    rng = random.Random(seed)
    rounds, seen, stream_of = [[] for _ in range(ROUNDS)], set(known), {}
    for name, (count, draw, by_family) in by_stream.items():
        order = sorted(by_family)
        rng.shuffle(order)
        for family in order:
            rng.shuffle(by_family[family])
        for j in range(count):
            family, i = order[j % len(order)], j // len(order)
            t = by_family[family][i % len(by_family[family])]
            for _ in range(TRIES):
                problems = draw(t, rng)
                if problems and not seen.intersection(problems):
                    break
            else:
                raise RuntimeError(f"{name} {family}: no new problem for {t} in {TRIES} draws")
            seen.update(problems)
            stream_of.update(dict.fromkeys(problems, name))
            rounds[j * ROUNDS // count] += [(f"zoo:{family}", problem) for problem in problems]
    return rounds, stream_of


def plan_rounds(rounds: list[list[tuple[str, GemmProblem]]], space: str = "sample/4") -> list[plan.PlannedProblem]:
    """``rounds`` planned on ``space`` for training, round after round, fewest new kernels first
    within a round; a run of its own: nothing compiled before it."""
    planned, compiled = [], set()
    for named in rounds:
        planned += compile_order(plan.plan(named, H100, split="train", space=space), compiled)
        compiled.update(*map(kernel_keys, planned))
    return planned


def seeded_plan(name: str, streams: Callable[[dict, list[str]], dict], seed: int, space: str) -> tuple[Path, list[plan.PlannedProblem], dict]:
    """A derived plan of the training families: its list's path (``zoo-<name>-train.json``,
    ``zoo-<name>-<seed>-train.json`` for a seed other than 0), the planned problems of
    ``streams(zoo, holdout)`` drawn by :func:`draw_rounds` and planned on ``space`` by
    :func:`plan_rounds`, and {problem: stream}."""
    target = OUT / (f"zoo-{name}-train.json" if seed == 0 else f"zoo-{name}-{seed}-train.json")
    zoo = read_zoo()
    holdout = json.loads((OUT / "zoo-holdout.json").read_text())["families"]
    rounds, stream_of = draw_rounds(streams(zoo, holdout), known_problems(holdout, zoo, target), seed)
    return target, plan_rounds(rounds, space), stream_of


def write_plan(target: Path, planned: list[plan.PlannedProblem], stream_of: dict) -> None:
    """Write ``planned`` to ``target`` and report it, by stream."""
    shapes.to_json([(p.generator, p.problem) for p in planned], target, target.stem.replace("zoo-", "h100-zoo-"))
    report(target, planned, first=120, stream=lambda p: stream_of[p.problem])


def main() -> int:
    zoo = read_zoo()
    holdout = json.loads((OUT / "zoo-holdout.json").read_text())["families"]
    rounds, stream_of = derive(zoo, holdout, known_problems(holdout, zoo, TARGET))
    planned = plan_rounds(rounds)
    long_k = [p.problem for p in planned if stream_of[p.problem] != "small-q"]
    assert all(output_tiles(p) < HALF_FILL_TILES and p.k >= 512 for p in long_k)
    assert all(2 <= p.problem.m <= 16 for p in planned if stream_of[p.problem] == "small-q")
    shapes.to_json([(p.generator, p.problem) for p in planned], TARGET, "h100-zoo-gaps-train")
    report(TARGET, planned, first=80, stream=lambda p: stream_of[p.problem])
    return 0


if __name__ == "__main__":
    sys.exit(main())
