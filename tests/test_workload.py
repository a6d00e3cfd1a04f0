"""Workload classes: each GEMM of a real model falls in exactly one."""

from __future__ import annotations

from diode_backend.problem import GemmProblem
from diode_backend.workload import WORKLOAD_CLASSES, workload_class


def test_each_kind_of_gemm_lands_in_its_class():
    cases = {
        GemmProblem("baddbmm", 77, 77, 64, batch=16, dtype="float32", bias="full"): "baddbmm",
        GemmProblem("bmm", 1500, 1500, 64, batch=20, dtype="float32", b_layout="col"): "attention_bmm",
        GemmProblem("addmm", 1, 768, 768, dtype="float32", b_layout="col", bias="row"): "fp32",
        GemmProblem("mm", 512, 768, 3072, dtype="float32", allow_tf32=True): "tf32",
        GemmProblem("mm", 8, 4096, 4096, dtype="bfloat16", b_layout="col"): "decode",
        GemmProblem("addmm", 333, 384, 4096, dtype="bfloat16", b_layout="col", bias="row"): "narrow",
        GemmProblem("addmm", 333, 4096, 4096, dtype="float16", b_layout="col", bias="row"): "prefill_linear",
    }
    assert {p.describe(): workload_class(p) for p in cases} == {p.describe(): c for p, c in cases.items()}
    assert set(cases.values()) == set(WORKLOAD_CLASSES)
