"""The candidate space is Inductor's own: same lists, scaling, pruning and order."""

from __future__ import annotations

import dataclasses
import types

import pytest
from torch._inductor import config
from torch._inductor.sizevars import SizeVarAllocator
from torch._inductor.template_heuristics.registry import get_template_heuristic
from torch._inductor.virtualized import V

from diode_backend.inductor.configs import aten_candidates, candidate_space, triton_candidates
from diode_backend.problem import GemmProblem, HardwareInfo

H100 = HardwareInfo(name="NVIDIA H100 80GB HBM3", vendor="nvidia", sm_count=132, shared_memory_per_block=232448)
UNLIMITED = dataclasses.replace(H100, shared_memory_per_block=1 << 30)


def inductor_own(problem: GemmProblem, search_space: str) -> list[tuple]:
    """Inductor's preprocess_mm_configs as a lowering calls it (no GPU here: no smem pruning)."""
    template = "triton::bmm" if problem.op == "bmm" else "triton::mm"
    heuristic = get_template_heuristic(template, "cuda", problem.op)
    configs = heuristic.exhaustive_configs if search_space == "EXHAUSTIVE" else heuristic.mm_configs
    with config.patch(max_autotune_gemm_search_space=search_space):
        with V.set_graph_handler(types.SimpleNamespace(sizevars=SizeVarAllocator())):
            out = heuristic.preprocess_mm_configs(problem.m, problem.n, problem.k, configs=configs, dtype_size=2)
            return [(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_stages, c.num_warps) for c in out]


@pytest.mark.parametrize("search_space", ["DEFAULT", "EXHAUSTIVE"])
@pytest.mark.parametrize("problem", [GemmProblem("mm", 1024, 4096, 2048), GemmProblem("bmm", 7, 300, 64, batch=4)])
def test_same_configs_in_the_same_order_as_inductor(problem, search_space):
    ours = [(c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps) for c in triton_candidates(problem, UNLIMITED, search_space)]
    assert ours == inductor_own(problem, search_space)


def test_shared_memory_pruning_follows_the_hardware():
    big = GemmProblem("mm", 4096, 4096, 4096, dtype="float32")
    h100 = triton_candidates(big, H100)
    assert len(h100) < len(triton_candidates(big, UNLIMITED))
    assert all(c.num_stages * (c.block_m + c.block_n) * c.block_k * 4 + 128 <= 232448 for c in h100)
    assert len(triton_candidates(big, dataclasses.replace(H100, shared_memory_per_block=101376))) < len(h100)


def test_aten_candidates_include_the_cublaslt_bias_epilogue_for_row_bias():
    assert [c.template for c in aten_candidates(GemmProblem("addmm", 8, 8, 8, bias="row"))] == ["aten::bias_addmm", "aten::addmm"]
    assert [c.template for c in aten_candidates(GemmProblem("addmm", 8, 8, 8, bias="full"))] == ["aten::addmm"]
    space = candidate_space(GemmProblem("bmm", 64, 64, 64, batch=2), H100, "DEFAULT")
    assert space[0].template == "aten::bmm" and {c.template for c in space[1:]} == {"triton::bmm"}
    assert set(space) <= set(candidate_space(GemmProblem("bmm", 64, 64, 64, batch=2), H100))
