"""Shape generators, problem lists and plans: what a collection will time."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import statistics

import pytest
import torch

from diode_backend import registry
from diode_backend.offline.collect import plan, shapes
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig

H100 = HardwareInfo(name="NVIDIA H100 80GB HBM3", vendor="nvidia", sm_count=132, shared_memory_per_block=232448)


def test_lognormal_sizes_center_on_torch_diode_medians_in_two_divisibility_classes():
    sizes = shapes.lognormal(3000, seed=0)
    for axis, median in enumerate(shapes.LOGNORMAL_MEDIANS):
        assert abs(math.log(statistics.median(s[axis] for s in sizes) / median)) < 0.15
    odd = [s for s in sizes if all(v % 2 for v in s)]
    aligned = [s for s in sizes if s[0] % 16 == 0 and s[1] % 16 == 0 and (s[2] % 256 == 0 or s[2] in (16, 32, 64, 128))]
    assert len(odd) + len(aligned) == len(sizes)
    assert 0.2 < len(odd) / len(sizes) < 0.3
    assert sizes == shapes.lognormal(3000, seed=0) != shapes.lognormal(3000, seed=1)


def test_special_generators_cover_decode_skinny_llm_and_odd_sizes():
    assert {m for m, _, _ in shapes.decode(400)} == set(range(1, 17))
    assert all(v % 2 == 1 for s in shapes.odd(50) for v in s)
    for m, n, k in shapes.tall_skinny(30):
        assert max(m, n, k) >= 4096 and min(m, n) <= 256
    llm = shapes.llm(tokens=(128,), models=["llama3-8b"])
    assert (128, 6144, 4096) in llm and (128, 4096, 14336) in llm  # fused qkv with GQA, MLP down


def test_json_lists_round_trip(tmp_path):
    named = shapes.expand("odd", shapes.odd(3), op="addmm", dtype="float16", b_layout="col", bias="row")
    named += shapes.expand("lognormal", [(64, 64, 64)], op="bmm", dtype="float32", allow_tf32=True, batch=4)
    shapes.to_json(named, tmp_path / "set.json", "set")
    assert shapes.from_json(tmp_path / "set.json") == named
    assert named[-1][1] == GemmProblem("bmm", 64, 64, 64, batch=4, dtype="float32", allow_tf32=True)
    (tmp_path / "bare.json").write_text('[{"op": "mm", "m": 1, "n": 2, "k": 3}]')
    assert shapes.from_json(tmp_path / "bare.json") == [("json:bare", GemmProblem("mm", 1, 2, 3))]


def test_a_list_named_gz_is_written_and_read_gzip_compressed(tmp_path):
    problem = GemmProblem("mm", 64, 64, 64, dtype="bfloat16")
    tiles = tuple(c for c in plan.candidate_configs(problem, H100) if c.kind == "triton")[:3]
    named = [("round:x", problem), ("round:y", GemmProblem("bmm", 8, 77, 40, batch=16, dtype="float16"))]
    shapes.to_json(named, tmp_path / "round.json.gz", "round", configs={problem: tiles})
    shapes.to_json(named, tmp_path / "round.json", "round", configs={problem: tiles})
    compressed = (tmp_path / "round.json.gz").read_bytes()
    assert gzip.decompress(compressed) == (tmp_path / "round.json").read_bytes()  # the same list, compressed
    assert len(compressed) < (tmp_path / "round.json").stat().st_size
    assert shapes.from_json(tmp_path / "round.json.gz") == named
    assert shapes.listed_configs(tmp_path / "round.json.gz") == {problem: tiles}
    (tmp_path / "bare.json.gz").write_bytes(gzip.compress(b'[{"op": "mm", "m": 1, "n": 2, "k": 3}]'))
    assert shapes.from_json(tmp_path / "bare.json.gz") == [("json:bare", GemmProblem("mm", 1, 2, 3))]


def test_from_model_records_the_gemms_a_model_runs_with_their_layouts():
    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(64, 192)
            self.out = torch.nn.Linear(64, 64, bias=False)

        def forward(self, x):
            q, k, v = self.qkv(x).view(2, 10, 3, 4, 16).permute(2, 0, 3, 1, 4)
            # a contiguous k: its transpose reaches bmm as a column-major view
            scores = q @ k.contiguous().transpose(-1, -2)
            return self.out(scores.softmax(-1).matmul(v).transpose(1, 2).reshape(2, 10, 64))

    with torch.device("meta"):
        model, x = Attention(), torch.randn(2, 10, 64)
    problems = [p for _, p in shapes.from_model("attn", lambda: model(x))]
    assert problems == [
        GemmProblem("addmm", 20, 192, 64, dtype="float32", b_layout="col", bias="row"),
        GemmProblem("bmm", 10, 10, 16, batch=8, dtype="float32", b_layout="col"),
        GemmProblem("bmm", 10, 16, 10, batch=8, dtype="float32"),
        GemmProblem("mm", 20, 64, 64, dtype="float32", b_layout="col"),
    ]


def test_stratified_quarter_keeps_every_parameter_value_and_a_quarter_at_least():
    for problem in (GemmProblem("mm", 2048, 2048, 2048), GemmProblem("mm", 8, 4096, 4096), GemmProblem("mm", 33, 17, 999)):
        space = plan.candidate_configs(problem, H100)
        sample = plan.stratified_quarter(space)
        triton = [c for c in space if c.kind == "triton"]
        kept = [c for c in sample if c.kind == "triton"]
        assert [c for c in sample if c.kind == "aten"] == [c for c in space if c.kind == "aten"]
        assert len(triton) / 4 <= len(kept) < len(triton) / 2
        for field in ("block_m", "block_n", "block_k", "num_stages", "num_warps"):
            assert {getattr(c, field) for c in kept} == {getattr(c, field) for c in triton}, (problem, field)


def test_plan_takes_candidates_from_the_hook_and_splits_by_problem():
    named = shapes.expand("lognormal", [(1024, 1024, 1024), (1024, 1024, 1024), (8, 512, 256)], dtype="float16")
    planned = plan.plan(named, H100, split="validation", space="exhaustive")
    assert len(planned) == 2  # the duplicate is dropped
    assert planned[0].configs[0] == KernelConfig("aten", "aten::mm")
    assert len(planned[0].configs) == 1 + 1206  # Inductor's whole EXHAUSTIVE space at fp16
    train, validation = plan.split_problems(named * 10, validation=7, seed=3)
    assert len(validation) == 7 and len(train) == 23


def test_default_space_is_aten_and_inductors_default_configs_alone():
    problem = GemmProblem("addmm", 41, 613, 666, dtype="float32", b_layout="col", bias="row")
    (planned,) = plan.plan([("x", problem)], H100, split="train", space="default")
    space = plan.candidate_configs(problem, H100)
    default = [c for c in registry.candidate_configs(problem, H100, "DEFAULT") if c.kind == "triton"]
    assert [c for c in planned.configs if c.kind == "aten"] == [c for c in space if c.kind == "aten"]
    assert len([c for c in space if c.kind == "aten"]) == 2  # addmm and bias_addmm
    assert [c for c in planned.configs if c.kind == "triton"] == default and 5 < len(default) < 30
    assert planned.space == "default"


def test_listed_space_is_aten_and_the_configs_the_list_names_for_each_problem(tmp_path):
    problem = GemmProblem("addmm", 41, 613, 666, dtype="float32", b_layout="col", bias="row")
    other = GemmProblem("mm", 64, 64, 64, dtype="bfloat16")
    space = plan.candidate_configs(problem, H100)
    triton = [c for c in space if c.kind == "triton"]
    named = [("x", problem), ("y", other)]
    shapes.to_json(named, tmp_path / "picks.json", "picks", configs={problem: (triton[7], triton[2])})
    assert shapes.from_json(tmp_path / "picks.json") == named  # the configs ride along
    listed = shapes.listed_configs(tmp_path / "picks.json")
    assert listed == {problem: (triton[7], triton[2])}

    (planned,) = plan.plan(named[:1], H100, split="train", space="listed", listed=listed)
    assert planned.configs == (*[c for c in space if c.kind == "aten"], triton[2], triton[7])  # the space's order
    assert planned.space == "listed"
    with pytest.raises(ValueError, match="lists none"):
        plan.plan(named, H100, split="train", space="listed", listed=listed)
    foreign = dataclasses.replace(triton[0], block_m=48)
    with pytest.raises(ValueError, match=r"not in its candidate space: triton::mm 48x"):
        plan.plan(named[:1], H100, split="train", space="listed", listed={problem: (foreign,)})


def test_a_list_gives_configs_by_position_and_a_list_of_field_dicts_still_reads(tmp_path):
    problem = GemmProblem("bmm", 11, 64, 226, batch=128, dtype="float32")
    tiles = (KernelConfig("triton", "triton::bmm", 16, 64, 64, 4, 4, 8), KernelConfig("aten", "aten::bmm"))
    shapes.to_json([("x", problem)], tmp_path / "new.json", "new", configs={problem: tiles})
    written = json.loads((tmp_path / "new.json").read_text())
    assert written["config_fields"] == [f.name for f in dataclasses.fields(KernelConfig)]
    assert written["problems"][0]["configs"][0] == ["triton", "triton::bmm", 16, 64, 64, 4, 4, 8]
    entry = {**problem.to_dict(), "configs": [c.to_dict() for c in tiles]}
    (tmp_path / "old.json").write_text(json.dumps({"name": "old", "problems": [entry]}))
    assert shapes.listed_configs(tmp_path / "new.json") == shapes.listed_configs(tmp_path / "old.json") == {problem: tiles}
