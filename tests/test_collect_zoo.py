"""The shape zoo: tracing real model code on the meta device, the GEMMs derived from a config
(tensor-parallel shards, routed experts), and the committed zoo files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from diode_backend.offline.collect import zoo
from diode_backend.offline.collect.zoo.families import ARCHITECTURES, GROUPS
from diode_backend.offline.collect.zoo.trace import (
    TracedGemm, expert_gemms, expert_token_counts, fp32_precision, tensor_parallel, trace_gemms,
)  # fmt: skip
from diode_backend.problem import GemmProblem
from diode_backend.tf32 import triton_tf32_active
from diode_backend.workload import WORKLOAD_CLASSES, workload_class

ZOO = Path(__file__).resolve().parent.parent / "trained_models" / "data" / "zoo"


class Attention(torch.nn.Module):
    """A Llama-style attention layer (one sequence of 10 tokens, 4 heads of 16)."""

    def __init__(self, fused: bool):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj = (torch.nn.Linear(64, 64) for _ in range(3))
        self.o_proj = torch.nn.Linear(64, 64, bias=False)
        self.fused = fused

    def forward(self, x):
        q, k, v = (proj(x).view(1, 10, 4, 16).transpose(1, 2) for proj in (self.q_proj, self.k_proj, self.v_proj))
        if self.fused:
            out = F.scaled_dot_product_attention(q, k, v)
        else:
            out = (q @ k.transpose(-1, -2)).softmax(-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(1, 10, 64))


def test_linear_is_addmm_with_a_row_bias_and_eager_attention_a_bmm_with_k_column_major():
    with torch.device("meta"):
        model, x = Attention(fused=False), torch.randn(1, 10, 64)
    traced = trace_gemms(model, lambda: model(x))
    linear = GemmProblem("addmm", 10, 64, 64, dtype="float32", b_layout="col", bias="row")
    assert traced == [
        TracedGemm(linear, "q_proj"),
        TracedGemm(linear, "k_proj"),
        TracedGemm(linear, "v_proj"),
        TracedGemm(GemmProblem("bmm", 10, 10, 16, batch=4, dtype="float32", b_layout="col"), ""),
        TracedGemm(GemmProblem("bmm", 10, 16, 10, batch=4, dtype="float32"), ""),
        TracedGemm(GemmProblem("mm", 10, 64, 64, dtype="float32", b_layout="col"), "o_proj"),
    ]


def test_fused_attention_records_no_gemm_though_the_meta_device_computes_it_with_bmm():
    with torch.device("meta"):
        model, x = Attention(fused=True), torch.randn(1, 10, 64)
    assert [gemm.module for gemm in trace_gemms(model, lambda: model(x))] == ["q_proj", "k_proj", "v_proj", "o_proj"]


def test_tf32_is_recorded_as_traced_and_the_precision_restored():
    saved = torch.backends.cuda.matmul.fp32_precision
    with torch.device("meta"):
        layer, x = torch.nn.Linear(32, 16), torch.randn(4, 32)
    for tf32 in (True, False):
        with fp32_precision(tf32):
            (gemm,) = trace_gemms(layer, lambda: layer(x))
        assert gemm.problem.allow_tf32 is tf32
        assert torch.backends.cuda.matmul.fp32_precision == saved


def test_tensor_parallel_splits_columns_n_rows_k_by_module_name_and_attention_heads():
    def linear(n, k, module):
        return TracedGemm(GemmProblem("mm", 100, n, k, b_layout="col"), module)

    traced = [
        linear(4096, 4096, "model.layers.0.self_attn.q_proj"),
        linear(4096, 4096, "model.layers.0.self_attn.o_proj"),
        linear(14336, 4096, "model.layers.0.mlp.up_proj"),
        linear(4096, 14336, "model.layers.0.mlp.down_proj"),
        linear(8, 4096, "model.layers.0.mlp.gate"),  # a router: replicated
        linear(4544, 4100, "model.layers.0.self_attn.o_proj"),  # K = 4100 does not split in 8
        TracedGemm(GemmProblem("bmm", 100, 100, 128, batch=32), "model.layers.0.self_attn"),
    ]
    assert [(p.n, p.k, p.batch) for p in tensor_parallel(traced, 8, heads=32)] == [
        (512, 4096, 1), (4096, 512, 1), (1792, 4096, 1), (4096, 1792, 1), (100, 128, 4),
    ]  # fmt: skip
    assert tensor_parallel(traced, 8, heads=12)[-1].op == "mm"  # 12 heads do not split in 8


def test_routed_experts_get_the_mean_token_count_with_imbalance_and_at_least_one_row():
    assert expert_token_counts(1000, experts=8, top_k=2) == [125, 250, 375, 500]
    assert expert_token_counts(77, experts=60, top_k=4) == [3, 6, 8, 11]
    assert expert_token_counts(1, experts=64, top_k=8) == [1]
    # Mixtral's experts: one fused gate/up projection and the down projection, nn.Linear's layout
    assert expert_gemms(4096, 14336, 8, 2, tokens=4, dtype="bfloat16") == [
        GemmProblem("mm", 1, 28672, 4096, dtype="bfloat16", b_layout="col"),
        GemmProblem("mm", 1, 4096, 14336, dtype="bfloat16", b_layout="col"),
        GemmProblem("mm", 2, 28672, 4096, dtype="bfloat16", b_layout="col"),
        GemmProblem("mm", 2, 4096, 14336, dtype="bfloat16", b_layout="col"),
    ]


def _committed() -> dict[str, list[dict]]:
    return {name: json.loads((ZOO / f"{name}.json").read_text())["problems"] for name in zoo.families_in(ZOO)}


def test_the_committed_zoo_covers_every_workload_class_and_group_from_40_architectures():
    families = _committed()
    entries = [entry for family in families.values() for entry in family]
    assert set(families) == set(zoo.family_names()) and len(families) >= 25
    assert {e["workload_class"] for e in entries} == set(WORKLOAD_CLASSES)
    assert {e["group"] for e in entries} == set(GROUPS)
    assert len({e["model"] for e in entries}) >= 40
    assert any(e["op"] == "addmm" and e["bias"] == "row" and e["m"] % 2 for e in entries)  # bias at odd token counts


def test_each_committed_problem_is_listed_once_per_family_with_its_class_and_within_the_flop_bound():
    tables = {a.model: a for a in ARCHITECTURES}
    index = json.loads((ZOO / zoo.INDEX).read_text())
    for name, entries in _committed().items():
        problems = [GemmProblem.from_dict(e) for e in entries]
        assert len(set(problems)) == len(problems), name
        assert index[name]["problems"] == len(problems)
        for entry, problem in zip(entries, problems):
            arch = tables[entry["model"]]
            assert (entry["generator"], entry["family"], entry["group"]) == (f"zoo:{name}", arch.family, arch.group)
            assert entry["workload_class"] == workload_class(problem)
            assert problem.flops <= zoo.MAX_FLOPS


def test_load_filters_families_and_refuses_unknown_ones():
    bert = zoo.load(ZOO, families=["bert"])
    assert bert and {generator for generator, _ in bert} == {"zoo:bert"}
    rest = zoo.load(ZOO, exclude=["bert"])
    assert len(rest) + len(bert) == len(zoo.load(ZOO)) and "zoo:bert" not in {g for g, _ in rest}
    with pytest.raises(ValueError, match="no zoo family bret"):
        zoo.load(ZOO, families=["bret"])


def test_the_attention_plan_trains_only_on_new_attention_bmm_of_training_families():
    """benchmarks/h100_attention_plan.py's list: a problem of a held-out family (or one equal to a
    held-out GEMM, or already in another list) would leak into training or be timed twice."""
    problems = _a_new_training_plan("zoo-attention-train.json")
    assert len(problems) >= 200
    assert {workload_class(p) for p in problems} == {"attention_bmm", "baddbmm"}


def test_the_gaps_plan_trains_only_on_new_small_q_attention_and_small_output_long_k_products():
    """benchmarks/h100_gaps_plan.py's list: new problems of training families only, each in one of
    its two gaps (q of 2..16, or an output under half the SMs in 128x128 tiles with K >= 512)."""
    problems = _a_new_training_plan("zoo-gaps-train.json")
    assert len(problems) >= 150
    small_q = [p for p in problems if p.op != "mm" and p.op != "addmm" and 2 <= p.m <= 16]
    long_k = [p for p in problems if p not in small_q]
    assert {p.m for p in small_q} - {8, 16} and len(small_q) >= len(problems) // 3
    assert all(p.batch * -(-p.m // 128) * -(-p.n // 128) < 66 and p.k >= 512 for p in long_k) and len(long_k) >= len(problems) // 3


def test_the_precision_plan_trains_only_on_new_fp32_linear_around_the_bias_step_and_tf32_either_side_of_tritons_alignment():
    """benchmarks/h100_precision_plan.py's list: float32 nn.Linear addmm with bias at M 17..128,
    without and with TF32, many at the step of M 33..64; TF32 products with Triton's TF32 on
    (M, N multiples of 16, K of 8) and off by each of M, N, K alone."""
    problems = _a_new_training_plan("zoo-precision-train.json")
    assert len(problems) >= 100 and {p.dtype for p in problems} == {"float32"}
    linear = [p for p in problems if (p.op, p.a_layout, p.b_layout, p.bias) == ("addmm", "row", "col", "row")
              and 17 <= p.m <= 128 and 512 <= p.n <= 3072 and 512 <= p.k <= 3072]
    tf32 = [p for p in problems if p.allow_tf32 and 16 <= p.m <= 512 and 256 <= p.n <= 4096 and 256 <= p.k <= 4096]
    assert set(linear) | set(tf32) == set(problems) and all(p.allow_tf32 for p in set(problems) - set(linear))
    for allowed in (False, True):
        ms = [p.m for p in linear if p.allow_tf32 is allowed]
        assert len(ms) >= 20 and sum(33 <= m <= 64 for m in ms) >= len(ms) // 3 and min(ms) < 33 and max(ms) > 64
    assert sum(triton_tf32_active(p, "alignment") and p.m <= 64 for p in tf32) >= 10  # the sweep's rule when it ran
    misses = {tuple(dim for dim, size, multiple in (("m", p.m, 16), ("n", p.n, 16), ("k", p.k, 8)) if size % multiple) for p in tf32}
    assert {("m",), ("n",), ("k",), ("m", "n", "k")} <= misses


def test_the_regions_plan_trains_only_on_new_problems_in_the_regions_where_the_single_pick_was_worst():
    """benchmarks/h100_regions_plan.py's list: every problem in one of its streams' regions (16-bit
    prefill Linear, TF32 Linear, K <= 512 with M >= 1024, N <= 16, float32 attention bmm), every
    stream present, float32 bmm among them at q of 2..16."""
    problems = _a_new_training_plan("zoo-regions-train.json")
    assert len(problems) >= 1000
    linear = [p for p in problems if p.op in ("mm", "addmm")]
    regions = {
        "prefill": [p for p in linear if p.dtype != "float32" and (p.a_layout, p.b_layout) == ("row", "col")
                    and 256 <= p.m <= 8192 and 1024 <= p.n <= 16384 and 512 <= p.k <= 16384],
        "tf32": [p for p in linear if p.dtype == "float32" and p.allow_tf32 and 64 <= p.m <= 8192 and 64 <= p.n <= 4096 and 64 <= p.k <= 4096],
        "short-k": [p for p in linear if 1024 <= p.m <= 16384 and 32 <= p.n <= 4096 and 16 <= p.k <= 512],
        "narrow": [p for p in linear if p.n <= 16 and p.m <= 4096 and 256 <= p.k <= 8192],
        "attention": [p for p in problems if p.op in ("bmm", "baddbmm") and p.dtype == "float32"],
    }
    assert set().union(*regions.values()) == set(problems)
    assert all(len(region) >= 100 for region in regions.values())
    assert sum(2 <= p.m <= 16 for p in regions["attention"]) >= 100
    assert {p.dtype for p in regions["short-k"]} == {"float16", "bfloat16", "float32"}


def test_the_alignment_plan_trains_only_on_new_16_bit_linear_products_in_every_cell_of_the_alignment_grid():
    """benchmarks/h100_alignment_plan.py's list: float16/bfloat16 mm and addmm at M 1024..16384,
    as many in each cell of (N, K) alignment classes (multiple of 128, odd multiple of 64,
    multiple of 8 and not of 64, not of 8), with and without a bias."""
    def alignment(size: int) -> str:
        return "128" if size % 128 == 0 else "64" if size % 64 == 0 else "8" if size % 8 == 0 else "odd"

    problems = _a_new_training_plan("zoo-alignment-train.json")
    assert {p.dtype for p in problems} == {"float16", "bfloat16"} and {p.op for p in problems} == {"mm", "addmm"}
    assert all(1024 <= p.m <= 16384 for p in problems) and {p.bias for p in problems} == {"none", "row"}
    cells = Counter((alignment(p.n), alignment(p.k)) for p in problems)
    assert len(cells) == 16 and len(set(cells.values())) == 1 and len(problems) >= 700


#: Lists of problems already timed, to time again (benchmarks/h100_tf32_plan.py): not new problems.
def _retiming(name: str) -> bool:
    """Whether list ``name`` times problems already in the dataset again: the TF32 plan's lists
    and every round of pick labels (``pick-labels*``)."""
    return name in ("zoo-tf32-train.json", "zoo-tf32-validation.json") or name.startswith("pick-labels")


def test_the_tf32_plan_times_again_every_tf32_problem_whose_triton_kernels_ran_without_tf32():
    """benchmarks/h100_tf32_plan.py's lists: every float32 problem allowing TF32 that the sweep's
    alignment rule timed with Triton's TF32 off, each once, the held-out families' as validation."""
    from diode_backend.offline.dataset import load_dataset
    from diode_backend.tf32 import triton_tf32_active
    from test_analytical import alignment_runs

    lists = ZOO.parent / "h100" / "problems"
    held_out = set(json.loads((lists / "zoo-holdout.json").read_text())["families"])
    planned = {split: json.loads((lists / f"zoo-tf32-{split}.json").read_text())["problems"] for split in ("train", "validation")}
    off = {item.problem: item.generator for item in load_dataset(alignment_runs()).problems
           if item.problem.dtype == "float32" and item.problem.allow_tf32 and not triton_tf32_active(item.problem, "alignment")}
    listed = {GemmProblem.from_dict(e): e["generator"] for entries in planned.values() for e in entries}
    assert len(listed) == sum(map(len, planned.values())) and listed == off and len(off) >= 250
    assert all((e["generator"].removeprefix("zoo:") in held_out) == (split == "validation") for split, entries in planned.items() for e in entries)


def _a_new_training_plan(name: str) -> list[GemmProblem]:
    """The problems of plan ``name`` (trained_models/data/h100/problems/), checked to be distinct,
    of training families only, in no other list and no held-out GEMM, and within
    benchmarks/h100_plan.py's flop bound for training."""
    lists = ZOO.parent / "h100" / "problems"
    held_out = json.loads((lists / "zoo-holdout.json").read_text())["families"]
    planned = json.loads((lists / name).read_text())["problems"]
    problems = [GemmProblem.from_dict(e) for e in planned]
    others = {
        GemmProblem.from_dict(e)
        for path in lists.glob("*.json")
        if path.name not in ("zoo-holdout.json", name) and not _retiming(path.name)
        for e in json.loads(path.read_text())["problems"]
    }
    committed = _committed()
    held_out_gemms = {GemmProblem.from_dict(e) for family in held_out for e in committed[family]}
    families = {e["generator"].removeprefix("zoo:") for e in planned}
    assert len(set(problems)) == len(problems)
    assert not families & set(held_out) and families <= set(committed)
    assert not set(problems) & (others | held_out_gemms)
    assert all(p.flops <= 2**36 for p in problems)
    return problems
