"""Which Triton GEMM kernels run TF32: the rules, Inductor's per torch version checked against the
installed Inductor's own template heuristic, and the sweep's against the H100 timings."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch

from diode_backend.offline.dataset import load_dataset
from diode_backend.problem import GemmProblem
from diode_backend.tf32 import RULES, inductor_rule, torch_release, triton_tf32_active

DATASET = Path(__file__).resolve().parents[1] / "trained_models" / "data" / "h100" / "dataset"
RETIMED = DATASET.parent / "runs" / "2026-11-24-tf32"


def tf32(m: int, n: int, k: int, **fields) -> GemmProblem:
    return GemmProblem("mm", m, n, k, dtype="float32", allow_tf32=True, **fields)


# (problem, active by "always", "alignment", "size")
CASES = [
    (tf32(1024, 1024, 1024), True, True, True),
    (tf32(16, 1024, 1024), True, True, True),  # bert's addmm rows
    (tf32(1028, 768, 3072), True, False, True),  # M = 1028 is not a multiple of 16
    (tf32(1024, 72, 1024), True, False, False),  # N = 72: unaligned, and under 512
    (tf32(1024, 1024, 36), True, False, False),  # K = 36: not a multiple of 8, and under 512
    (tf32(1024, 256, 1024), True, True, False),  # aligned, but N under 512
    (tf32(8, 4096, 4096), True, False, False),  # M under 16 (and not a multiple of it)
    (GemmProblem("bmm", 2705, 2705, 72, batch=16, dtype="float32", allow_tf32=True), True, False, False),
]


@pytest.mark.parametrize("problem, always, alignment, size", CASES, ids=[c[0].describe() for c in CASES])
def test_each_rule_decides_by_its_test(problem, always, alignment, size):
    assert [triton_tf32_active(problem, rule) for rule in RULES] == [always, alignment, size]


def test_inductor_turns_tf32_on_always_until_2_12_and_by_size_from_2_13():
    """Inductor's default rule per torch version (``force_same_precision`` off until 2.12, gone in
    2.13); a nightly counts as the release it leads to."""
    assert [inductor_rule(v) for v in ("2.11.0+cu130", "2.12.1", "2.13.0+cpu", "2.14.0.dev20261101+cu130")] == [
        "always", "always", "size", "size",
    ]  # fmt: skip
    assert inductor_rule() == inductor_rule(torch.__version__)
    for problem, *_ in CASES:  # no rule: the running Inductor's
        assert triton_tf32_active(problem) is triton_tf32_active(problem, inductor_rule(torch.__version__))


def test_only_float32_that_allows_tf32_runs_it():
    for rule in RULES:
        assert not triton_tf32_active(GemmProblem("mm", 1024, 1024, 1024, dtype="float32"), rule)
        assert not triton_tf32_active(GemmProblem("mm", 1024, 1024, 1024, dtype="bfloat16", allow_tf32=True), rule)


def test_unknown_rules_and_versions_are_refused():
    assert torch_release("2.13.0a0+gitcf30153") == (2, 13)
    with pytest.raises(ValueError, match="not a torch version"):
        inductor_rule("unknown")
    with pytest.raises(ValueError, match="'sometimes' is not a TF32 rule"):
        triton_tf32_active(tf32(64, 64, 64), "sometimes")


def inductors_allow_tf32(problem: GemmProblem) -> bool:
    """``ALLOW_TF32`` as the installed Inductor's CUDA mm-template heuristic hands it to the
    template (``get_extra_kwargs``, torch 2.11 and 2.13 alike), with TF32 allowed for matmuls."""
    from torch._inductor import ir
    from torch._inductor.kernel_inputs import MMKernelInputs
    from torch._inductor.sizevars import SizeVarAllocator
    from torch._inductor.template_heuristics.registry import get_template_heuristic
    from torch._inductor.virtualized import V

    device, dtype = torch.device("cuda"), torch.float32  # layouts only: no GPU needed
    a = ir.InputBuffer(name="a", layout=ir.FixedLayout(device, dtype, [problem.m, problem.k], [problem.k, 1]))
    b = ir.InputBuffer(name="b", layout=ir.FixedLayout(device, dtype, [problem.k, problem.n], [problem.n, 1]))
    heuristic = get_template_heuristic("triton::mm", "cuda", "mm")
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")  # TF32 allowed, as the sweep allows it
    try:
        with V.set_graph_handler(types.SimpleNamespace(sizevars=SizeVarAllocator())):
            return bool(heuristic.get_extra_kwargs(MMKernelInputs([a, b]), "mm")["ALLOW_TF32"])
    finally:
        torch.set_float32_matmul_precision(before)


def test_the_rule_is_the_installed_inductors():
    """A torch that changes its rule again fails here (torch 2.13 on the CPU machines, 2.11 on the
    GPU ones, where ``force_same_precision`` on gives the alignment rule)."""
    from torch._inductor import config

    for problem, *_ in CASES[:-1]:
        assert inductors_allow_tf32(problem) is triton_tf32_active(problem), problem.describe()
    if hasattr(config, "force_same_precision"):
        with config.patch(force_same_precision=True):
            for problem, *_ in CASES[:-1]:
                assert inductors_allow_tf32(problem) is triton_tf32_active(problem, "alignment"), problem.describe()


def test_the_h100_timings_follow_the_sweeps_alignment_rule():
    """Every H100 shard was timed by the sweep while its kernels turned TF32 on by alignment (not
    torch 2.11 Inductor's rule, which turns it on always: 73 TFLOP/s for 1028x768x3072 on the
    H100, against 16 in the data). The best Triton kernel of a large float32 problem allowing
    TF32 runs at FP32 speed (under 67 TFLOP/s) wherever the alignment test fails, also where
    2.13's size test would turn TF32 on, and faster where it passes."""
    from test_analytical import alignment_runs

    dataset = load_dataset(alignment_runs())
    assert dataset.hardware.triton_tf32_rule == "alignment"
    fast, slow = [], []
    for item in dataset.problems:
        p = item.problem
        triton = [t for c, t in zip(item.configs, item.times_us) if c.kind == "triton"]
        if p.dtype == "float32" and p.allow_tf32 and p.flops > 2e9 and triton:
            tflops = p.flops / min(triton) / 1e6
            (fast if triton_tf32_active(p, dataset.hardware.triton_tf32_rule) else slow).append((tflops, p))
    assert len(slow) >= 40 and len(fast) >= 100
    assert max(t for t, _ in slow) < 45
    assert sum(t > 67 for t, p in fast) >= 0.9 * len(fast)
    # the size rule would call 11 of the 40 slow ones of the 3,116-problem dataset TF32
    assert sum(triton_tf32_active(p, "size") for _, p in slow) >= 11


def test_the_retimed_tf32_problems_ran_tf32_on_every_triton_kernel():
    """Run 2026-11-24-tf32 timed the problems the alignment rule kept off TF32 again, under torch
    2.11's rule (``always``): on every large one (over 2 GFLOP) its best Triton kernel beats the
    best of the same problem's alignment-rule timings, on most by far (median 2.2x over all 266),
    and the combined dataset keeps the new timings."""
    from test_analytical import alignment_runs

    retimed = load_dataset(RETIMED)
    assert retimed.hardware.triton_tf32_rule == "always"
    before = {item.problem: item for item in load_dataset(alignment_runs()).problems}

    def best_triton(item) -> float:
        return min(t for c, t in zip(item.configs, item.times_us) if c.kind == "triton")

    gains = sorted(best_triton(before[item.problem]) / best_triton(item) for item in retimed.problems)
    large = [best_triton(before[item.problem]) / best_triton(item) for item in retimed.problems if item.problem.flops > 2e9]
    assert len(gains) >= 250 and len(large) >= 40
    assert min(large) > 1.0 and gains[len(gains) // 2] > 1.5
    combined = {item.problem: item for item in load_dataset(DATASET).problems}
    assert all(combined[item.problem].tf32_rule == "always" and combined[item.problem].times_us == item.times_us for item in retimed.problems)
