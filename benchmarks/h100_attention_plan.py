"""More attention bmm for the H100 training set, derived from the zoo's training families.

    python benchmarks/h100_attention_plan.py   # writes trained_models/data/h100/problems/zoo-attention-train.json

A sibling of ``h100_zoo_plan.py`` rather than part of it: that script lists the zoo's own traced
problems, this one derives new ones from them, and regenerating the zoo's lists must not change
with this rule (both files also stay under 300 lines).

Attention bmm is the class the shipped model ranks worst on held-out families, and the zoo timed
each family at the few sequence lengths its traces ran. Rule, with seed :data:`SEED`: each traced
attention pair of a training family (every zoo family not in ``zoo-holdout.json``), a Q @ K^T
(``batch, q, kv, d``) followed by its P @ V (``batch, q, dv, kv``), gives a template: model, dtype,
TF32, heads (the gcd of the model's attention batches), head dims, the op, bias and layouts of
both products, and its kind (self: q == kv, cross, decode: q == 1). Each family gets
:data:`PAIRS_PER_FAMILY` new pairs, round robin over its templates in a seeded order; a pair
draws batch = heads x b (b log-uniform, batch-heads within 8..512), and sequence lengths that
are a vision token count (p*p + 1) a third of the time, else log-uniform integers (mostly not
multiples of 8): self 16..4096, cross q 2..1024 against kv 16..4096, decode kv 64..8192. b is
lowered to fit :data:`MAX_FLOPS` (``train``). A pair is drawn again when either product is
already timed (the dataset), listed in another plan, or a held-out family's traced GEMM.
Order as ``zoo-train.json`` (fewest new kernels first, ties to the family timed least) within
rounds of one pair per family, so a collection cut short after any round is balanced.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

from h100_plan import H100, MAX_FLOPS, OUT
from h100_zoo_plan import compile_order, kernel_keys, read_zoo

from diode_backend.offline.collect import plan, shapes
from diode_backend.offline.dataset import load_dataset
from diode_backend.workload import workload_class
from diode_backend.problem import GemmProblem

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "trained_models" / "data" / "h100" / "dataset"
TARGET = OUT / "zoo-attention-train.json"
PAIRS_PER_FAMILY = 6
BATCH_HEADS = (8, 512)
SEED = 0
TRIES = 200


def attention_pairs(entries: list[dict]) -> list[tuple[dict, dict]]:
    """(Q @ K^T, P @ V) entries traced at most one apart (DeBERTa's relative-position product
    comes between): same batch and q, the second's K is the first's N, and its head dim is at
    most the first's (DeepSeek's 128 after 192)."""
    out = []
    for i, qk in enumerate(entries):
        for pv in entries[i + 1 : i + 3]:
            if qk["op"] in ("bmm", "baddbmm") and pv["op"] == "bmm" and pv["batch"] == qk["batch"] and pv["m"] == qk["m"] and pv["k"] == qk["n"] and pv["n"] <= qk["k"]:
                out.append((qk, pv))
                break
    return out


def templates(entries: list[dict]) -> list[dict]:
    """The distinct attention templates of one family's traced entries (module docstring)."""
    pairs = attention_pairs(entries)
    batches = defaultdict(list)
    for qk, _ in pairs:
        batches[qk["model"], qk["dtype"]].append(qk["batch"])
    out = {}
    for qk, pv in pairs:
        kind = "decode" if qk["m"] == 1 else "self" if qk["m"] == qk["n"] else "cross"
        t = dict(
            model=qk["model"], dtype=qk["dtype"], allow_tf32=qk["allow_tf32"], heads=math.gcd(*batches[qk["model"], qk["dtype"]]),
            d=qk["k"], dv=pv["n"], qk_op=qk["op"], qk_bias=qk["bias"], qk_layout=qk["b_layout"], pv_layout=pv["b_layout"], kind=kind,
        )
        out.setdefault(tuple(t.values()), t)
    return list(out.values())


def log_uniform(rng: random.Random, low: int, high: int) -> int:
    return min(high, max(low, round(math.exp(rng.uniform(math.log(low), math.log(high + 1))))))


def sequence(rng: random.Random, low: int, high: int) -> int:
    """A token count: a vision grid's p*p + 1 a third of the time, else log-uniform."""
    if rng.random() < 1 / 3:
        grids = [p * p + 1 for p in range(3, 91) if low <= p * p + 1 <= high]
        if grids:
            return rng.choice(grids)
    return log_uniform(rng, low, high)


def draw_pair(t: dict, rng: random.Random) -> tuple[GemmProblem, GemmProblem] | None:
    """One (Q @ K^T, P @ V) of template ``t``, or None when no batch fits the flop bound."""
    if t["kind"] == "decode":
        q, kv = 1, sequence(rng, 64, 8192)
    elif t["kind"] == "self":
        q = kv = sequence(rng, 16, 4096)
    else:
        q, kv = sequence(rng, 2, 1024), sequence(rng, 16, 4096)
    batch = draw_batch(t, rng, q, kv)
    return pair(t, batch, q, kv) if batch else None


def draw_batch(t: dict, rng: random.Random, q: int, kv: int) -> int | None:
    """heads x b for template ``t`` (b log-uniform, batch-heads within BATCH_HEADS), b lowered to
    fit the flop bound; None when no batch fits."""
    heads = t["heads"]
    b_low = max(1, -(-BATCH_HEADS[0] // heads))
    b = log_uniform(rng, b_low, max(b_low, BATCH_HEADS[1] // heads))
    b = min(b, int(MAX_FLOPS["train"] // (2 * heads * q * kv * max(t["d"], t["dv"]))))
    return heads * b if b >= 1 else None


def pair(t: dict, batch: int, q: int, kv: int) -> tuple[GemmProblem, GemmProblem] | None:
    """Template ``t``'s (Q @ K^T, P @ V) at these sizes, or None when they are one problem."""
    common = dict(batch=batch, dtype=t["dtype"], allow_tf32=t["allow_tf32"], a_layout="row")
    qk = GemmProblem(op=t["qk_op"], m=q, n=kv, k=t["d"], b_layout=t["qk_layout"], bias=t["qk_bias"], **common)
    pv = GemmProblem(op="bmm", m=q, n=t["dv"], k=kv, b_layout=t["pv_layout"], **common)
    return (qk, pv) if qk != pv else None  # q == kv == d with equal layouts: one problem


def known_problems(holdout: list[str], zoo: dict[str, list[dict]], target: Path = TARGET) -> set[GemmProblem]:
    """What must not be planned again: the dataset, every plan but ``target``, every held-out
    GEMM. A later plan never holds an earlier one's problems, so an earlier plan's draws keep
    their outcome and it regenerates unchanged."""
    known = {record.problem for record in load_dataset(DATASET).problems}
    for path in sorted(OUT.glob("*.json")):
        if path.name not in ("zoo-holdout.json", target.name):
            known.update(problem for _, problem in shapes.from_json(path))
    known.update(GemmProblem.from_dict(e) for f in holdout for e in zoo[f])
    return known


def derive(zoo: dict[str, list[dict]], holdout: list[str], known: set[GemmProblem]) -> list[list[tuple[str, GemmProblem]]]:
    """PAIRS_PER_FAMILY new pairs of each training family with attention (module docstring), as
    rounds: round i holds every family's i-th pair."""
    rng = random.Random(SEED)
    rounds, seen = [[] for _ in range(PAIRS_PER_FAMILY)], set(known)
    for family in sorted(zoo):
        family_templates = templates(zoo[family])
        if family in holdout or not family_templates:
            continue
        rng.shuffle(family_templates)
        for i in range(PAIRS_PER_FAMILY):
            t = family_templates[i % len(family_templates)]
            for _ in range(TRIES):
                pair = draw_pair(t, rng)
                if pair and not seen.intersection(pair):
                    seen.update(pair)
                    rounds[i] += [(f"zoo:{family}", problem) for problem in pair]
                    break
            else:
                raise RuntimeError(f"{family}: no new pair for {t} in {TRIES} draws")
    return rounds


def main() -> int:
    zoo = read_zoo()
    holdout = json.loads((OUT / "zoo-holdout.json").read_text())["families"]
    planned, compiled = [], set()  # a run of its own: nothing compiled before it
    for named in derive(zoo, holdout, known_problems(holdout, zoo)):
        # round by round, so a collection cut short has as many pairs of every family
        planned += compile_order(plan.plan(named, H100, split="train", space="sample/4"), compiled)
        compiled.update(*map(kernel_keys, planned))
    shapes.to_json([(p.generator, p.problem) for p in planned], TARGET, "h100-zoo-attention-train")
    report(TARGET, planned)
    return 0


def report(target: Path, planned: list[plan.PlannedProblem], first: int = 120, **labels) -> None:
    """Print the plan's size and its counts by family, class, dtype and ``labels`` ({name:
    function of a planned problem}), in all and among the ``first`` problems (stderr)."""
    keys = set().union(*map(kernel_keys, planned))
    print(f"{target.name}: {len(planned)} problems, {sum(len(p.configs) for p in planned):,} pairs, {len(keys):,} kernels", file=sys.stderr)
    labels = dict(family=lambda p: p.generator[4:], **{"class": lambda p: workload_class(p.problem)},
                  dtype=lambda p: p.problem.dtype + ("+tf32" if p.problem.allow_tf32 else ""), **labels)
    for label, of in labels.items():
        print(f"  {label}: {dict(sorted(Counter(map(of, planned)).items()))}", file=sys.stderr)
        print(f"    first {first}: {dict(sorted(Counter(map(of, planned[:first])).items()))}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
