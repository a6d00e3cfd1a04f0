"""The problem lists of the shipped H100 dataset (trained_models/data/h100/problems/).

    python benchmarks/h100_plan.py            # writes the lists, prints their size and cost

Every generator is used; problems are split by problem: the validation problems are timed on the
whole EXHAUSTIVE space, the training problems on its stratified quarter (sample/4). Families
(op, dtype, layouts) are chosen so that every required combination appears while the number of
kernels to compile (one per config and specialization) stays within one GPU session: see
docs/collect.md. The seeds make the lists reproducible.
"""

from __future__ import annotations

import runpy
import sys
from collections import Counter
from pathlib import Path

from diode_backend.offline.collect import kernel, plan, shapes
from diode_backend.problem import HardwareInfo

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "trained_models" / "data" / "h100" / "problems"
H100 = HardwareInfo(name="NVIDIA H100 80GB HBM3", vendor="nvidia", sm_count=132, shared_memory_per_block=232448)
MAX_FLOPS = {"validation": 2**35, "train": 2**36}  # bounds the GPU time per problem

LINEAR = dict(op="mm", dtype="bfloat16", b_layout="col")  # nn.Linear without bias
LINEAR_BIAS = dict(op="addmm", dtype="bfloat16", b_layout="col", bias="row")


def aligned(sizes: list) -> list:
    """Sizes whose every dimension is a multiple of 16 (one kernel specialization class)."""
    return [s for s in sizes if all(v % 16 == 0 for v in s)]


def groups() -> dict[str, dict[str, list]]:
    """{group: {"validation": [...], "train": [...]}} of (generator, problem). Each group is one
    GPU run: its families share compiled kernels between validation and training."""
    x = shapes.expand
    llm = shapes.llm(tokens=(128, 256, 512, 1024, 2048))
    traced = shapes.from_model("transformer_blocks", runpy.run_path(str(ROOT / "benchmarks" / "transformer_blocks.py"))["trace"])
    traced_by_op = {op: [(g, p) for g, p in traced if p.op == op] for op in ("mm", "addmm", "bmm")}
    t_llm, v_llm = plan.split_problems([(None, s) for s in llm], validation=18, seed=1)
    v_llm, t_llm = [s for _, s in v_llm], [s for _, s in t_llm]
    bf16 = {
        "validation": [
            *x("llm", v_llm[:12], **LINEAR),
            *x("decode", shapes.decode(10, seed=101), **LINEAR),
            *x("lognormal", aligned(shapes.lognormal(12, seed=102)), **LINEAR),
            *x("tall_skinny", aligned(shapes.tall_skinny(9, seed=103)), **LINEAR),
            *traced_by_op["mm"][::4],
            *x("llm", v_llm[12:], **LINEAR_BIAS),
            *x("decode", shapes.decode(4, seed=104), **LINEAR_BIAS),
            *traced_by_op["addmm"][::6],
            *x("lognormal", aligned(shapes.lognormal(10, seed=105)), op="bmm", dtype="bfloat16", batch=16),
            *traced_by_op["bmm"][1::8],
        ],
        "train": [
            *x("llm", t_llm, **LINEAR),
            *x("decode", shapes.decode(60, seed=1), **LINEAR),
            *x("lognormal", shapes.lognormal(50, seed=2), **LINEAR),
            *x("tall_skinny", shapes.tall_skinny(27, seed=3), **LINEAR),
            *x("llm", t_llm[::2], **LINEAR_BIAS),
            *x("decode", shapes.decode(20, seed=4), **LINEAR_BIAS),
            *traced,
            *x("lognormal", shapes.lognormal(32, seed=13), op="bmm", dtype="bfloat16", batch=16),
            *x("lognormal", shapes.lognormal(12, seed=14), op="bmm", dtype="bfloat16", batch=8, b_layout="col"),
            *x("lognormal", aligned(shapes.lognormal(28, seed=9)), op="mm", dtype="bfloat16", a_layout="col"),
        ],
    }
    other = {
        "validation": [
            *x("lognormal", shapes.lognormal(22, seed=201), op="mm", dtype="float16"),
            *x("odd", shapes.odd(6, seed=202), op="mm", dtype="float16"),
            *x("lognormal", aligned(shapes.lognormal(10, seed=203)), op="mm", dtype="float32", b_layout="col", allow_tf32=True),
            *x("llm", v_llm[:4], op="mm", dtype="float32", b_layout="col", allow_tf32=True),
        ],
        "train": [
            *x("lognormal", shapes.lognormal(110, seed=5), op="mm", dtype="float16"),
            *x("odd", shapes.odd(35, seed=6), op="mm", dtype="float16"),
            *x("tall_skinny", shapes.tall_skinny(15, seed=7), op="mm", dtype="float16"),
            *shapes.from_json(ROOT / "benchmarks" / "shapes" / "bert_vit.json"),
            *x("lognormal", shapes.lognormal(40, seed=10), op="mm", dtype="float32"),
            *x("odd", shapes.odd(10, seed=11), op="mm", dtype="float32"),
            *x("lognormal", shapes.lognormal(30, seed=12), op="mm", dtype="float32", b_layout="col", allow_tf32=True),
            *x("llm", t_llm[1::3], op="mm", dtype="float32", b_layout="col", allow_tf32=True),
        ],
    }
    out = {}
    for name, group in (("bf16", bf16), ("other", other)):
        val = [(g, p) for g, p in group["validation"] if p.flops <= MAX_FLOPS["validation"]]
        held = {p for _, p in val}
        train = [(g, p) for g, p in group["train"] if p.flops <= MAX_FLOPS["train"] and p not in held]
        out[name] = {"validation": val, "train": train}
    return out


def cost(named: list, split: str, space: str) -> dict:
    planned = plan.plan(named, H100, split=split, space=space)
    keys = {kernel.compile_key(p.problem, c) for p in planned for c in p.configs if c.kind == "triton"}
    return {
        "problems": len(planned),
        "pairs": sum(len(p.configs) for p in planned),
        "kernels": len(keys),
        "by_generator": dict(Counter(p.generator.split(":")[0] for p in planned)),
        "by_family": dict(Counter(f"{p.problem.op} {p.problem.dtype}{'+tf32' if p.problem.allow_tf32 else ''} {p.problem.a_layout}/{p.problem.b_layout}" for p in planned)),
        "keys": keys,
    }


def fidelity(all_groups: dict, count: int = 22) -> list:
    """Problems for `diode collect fidelity`: one of each (family, generator) first, then a
    second round; sizes kept moderate since Inductor compiles each."""
    pool = [item for group in all_groups.values() for item in group["validation"] + group["train"] if item[1].flops <= 2**34]
    picked, seen = [], Counter()
    for round_ in (1, 2):
        for generator, p in pool:
            key = (p.op, p.dtype, p.allow_tf32, p.a_layout, p.b_layout, generator.split(":")[0])
            if seen[key] < round_ and len(picked) < count and (generator, p) not in picked:
                seen[key] += 1
                picked.append((generator, p))
    return picked


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    every = set()
    all_groups = groups()
    shapes.to_json(fidelity(all_groups), OUT / "fidelity.json", "h100-fidelity")
    for name, group in all_groups.items():
        for split, space in (("validation", "exhaustive"), ("train", "sample/4")):
            shapes.to_json(group[split], OUT / f"{name}-{split}.json", f"h100-{name}-{split}")
            c = cost(group[split], split, space)
            every |= c["keys"]
            print(name, split, {k: c[k] for k in ("problems", "pairs", "kernels")}, file=sys.stderr)
            print("  generators", c["by_generator"], file=sys.stderr)
            print("  families", c["by_family"], file=sys.stderr)
    print("kernels in all", len(every), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
