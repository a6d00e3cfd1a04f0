"""The H100 collection of the real-workload zoo: which families are held out, what is timed, in
what order.

    python benchmarks/h100_zoo_plan.py     # writes trained_models/data/h100/problems/zoo-*.json

Held-out families are drawn by a fixed rule from the zoo's table alone, before anything of the
zoo was timed: in each group (decoder LLM, MoE, text encoder, ...) one family drawn with seed 0
among the families of that group; then, for each workload class no held-out family has, the
family with the most problems of that class (never a class's last family in training). The
draw is made once and written to ``zoo-holdout.json``, which this script, training, validation
and the end-to-end benchmark read from then on: families added to the zoo later are trained on,
so data already collected never becomes held out. They are never trained, calibrated or
early-stopped on.

``zoo-validation.json``: up to :data:`VALIDATION_PER_FAMILY` problems of each held-out family,
drawn evenly over its workload classes, timed on the stratified quarter plus Inductor's DEFAULT
configs (``sample/4+default``): the whole EXHAUSTIVE space of so many kinds of problem would
need about four times the kernels compiled, and DEFAULT's pick is measured all the same.
``zoo-train.json``: every problem of the other families, on the stratified quarter, in the order
that needs the fewest new kernels before each next problem can be timed (ties: the family timed
least so far), so a collection cut short by time has compiled little it did not time.
``zoo-baddbmm-train.json``: a baddbmm twin of each training family's Q @ K^T bmm (K transposed),
its bias over the whole output as diffusers' attention processors and BLOOM's ALiBi pass it:
the zoo traced few baddbmm GEMMs outside the held-out sd-unet, so the model ranked them from bmm
and addmm data. Timed after the zoo's own problems, in the same compile order.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

from h100_plan import H100, MAX_FLOPS, OUT

from diode_backend.offline.collect import kernel, plan, shapes
from diode_backend.problem import GemmProblem
from diode_backend.workload import WORKLOAD_CLASSES, workload_class

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "trained_models" / "data" / "zoo"
VALIDATION_PER_FAMILY = 24
SEED = 0


def read_zoo() -> dict[str, list[dict]]:
    """{family: [problem entries]} of every zoo file."""
    out = {}
    for path in sorted(ZOO.glob("*.json")):
        if path.name == "index.json":
            continue
        entries = json.loads(path.read_text())["problems"]
        if entries:
            out[entries[0]["family"]] = entries
    return out


def held_out(zoo: dict[str, list[dict]]) -> list[str]:
    """The held-out families (see the module docstring)."""
    rng = random.Random(SEED)
    groups = defaultdict(list)
    for family, entries in zoo.items():
        groups[entries[0]["group"]].append(family)
    chosen = [rng.choice(sorted(groups[group])) for group in sorted(groups)]
    classes = {family: Counter(e["workload_class"] for e in entries) for family, entries in zoo.items()}
    for cls in WORKLOAD_CLASSES:
        if any(classes[f][cls] for f in chosen):
            continue
        trained = [f for f in zoo if f not in chosen and classes[f][cls]]
        if len(trained) > 1:
            chosen.append(max(trained, key=lambda f: (classes[f][cls], f)))
    return chosen


def validation_sample(entries: list[dict]) -> list[dict]:
    """Up to VALIDATION_PER_FAMILY entries, round robin over the family's classes."""
    rng = random.Random(SEED)
    by_class = defaultdict(list)
    for entry in entries:
        by_class[entry["workload_class"]].append(entry)
    for group in by_class.values():
        rng.shuffle(group)
    picked = []
    while len(picked) < VALIDATION_PER_FAMILY and any(by_class.values()):
        for cls in WORKLOAD_CLASSES:
            if by_class.get(cls) and len(picked) < VALIDATION_PER_FAMILY:
                picked.append(by_class[cls].pop())
    return picked


def named(entries: list[dict], limit: float) -> list[tuple[str, GemmProblem]]:
    return [(e["generator"], p) for e in entries if (p := GemmProblem.from_dict(e)).flops <= limit]


def kernel_keys(planned: plan.PlannedProblem) -> set:
    return {kernel.compile_key(planned.problem, c) for c in planned.configs if c.kind == "triton"}


def compile_order(planned: list[plan.PlannedProblem], compiled: set) -> list[plan.PlannedProblem]:
    """Greedy: next the problem needing the fewest kernels not yet compiled, ties to the family
    with the fewest problems so far."""
    keys = [kernel_keys(p) for p in planned]
    users = defaultdict(list)
    for i, ks in enumerate(keys):
        for key in ks:
            users[key].append(i)
    new = [len(ks - compiled) for ks in keys]
    compiled = set(compiled)
    left, order, per_family = set(range(len(planned))), [], Counter()
    while left:
        best = min(left, key=lambda i: (new[i], per_family[planned[i].generator], i))
        left.remove(best)
        order.append(planned[best])
        per_family[planned[best].generator] += 1
        for key in keys[best] - compiled:
            compiled.add(key)
            for i in users[key]:
                new[i] -= 1
    return order


def baddbmm_twins(entries: list[dict]) -> list[dict]:
    """A baddbmm with a full-output bias for every distinct Q @ K^T bmm of ``entries``."""
    twins, seen = [], set()
    for entry in entries:
        if entry["op"] == "bmm" and entry["b_layout"] == "col":
            twin = {**entry, "op": "baddbmm", "bias": "full"}
            key = GemmProblem.from_dict(twin)
            if key not in seen:
                seen.add(key)
                twins.append(twin)
    return twins


def main() -> int:
    zoo = read_zoo()
    holdout = OUT / "zoo-holdout.json"
    families = json.loads(holdout.read_text())["families"] if holdout.exists() else held_out(zoo)
    validation = [e for f in families for e in validation_sample(zoo[f])]
    train = [e for f, entries in zoo.items() if f not in families for e in entries]
    v_planned = plan.plan(named(validation, MAX_FLOPS["train"]), H100, split="validation", space="sample/4+default")
    t_planned = plan.plan(named(train, MAX_FLOPS["train"]), H100, split="train", space="sample/4")
    v_keys = set().union(*map(kernel_keys, v_planned))
    t_planned = compile_order(t_planned, v_keys)
    b_planned = plan.plan(named(baddbmm_twins(train), MAX_FLOPS["train"]), H100, split="train", space="sample/4")
    b_planned = compile_order(b_planned, v_keys.union(*map(kernel_keys, t_planned)))
    OUT.mkdir(parents=True, exist_ok=True)
    holdout.write_text(json.dumps({"families": families, "rule": __doc__.split("\n\n")[2]}, indent=1) + "\n")
    for name, items in (("validation", v_planned), ("train", t_planned), ("baddbmm-train", b_planned)):
        shapes.to_json([(p.generator, p.problem) for p in items], OUT / f"zoo-{name}.json", f"h100-zoo-{name}")
        keys = set().union(*map(kernel_keys, items))
        classes = Counter(workload_class(p.problem) for p in items)
        print(f"{name}: {len(items)} problems, {sum(len(p.configs) for p in items):,} pairs, {len(keys):,} kernels", file=sys.stderr)
        print(f"  classes {dict(classes)}", file=sys.stderr)
    print(f"held out: {', '.join(families)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
