"""The Triton path on a CUDA GPU (skipped without one). Run on the H100 before release:

    python -m pytest -q -m gpu tests/test_gpu.py
"""

from __future__ import annotations

import pytest
import torch
from torch._inductor import config

import diode_backend
from diode_backend import catalog, registry

pytestmark = pytest.mark.gpu
DIODE = {
    "max_autotune": True,
    "max_autotune_gemm_backends": "DIODE",
    "force_disable_caches": True,
}


def run_compiled(fn, args, **options):
    with config.patch(**options):
        return torch.compile(fn)(*args)


def test_hardware_detection_uses_the_nvidia_plugin():
    hardware = registry.detect_hardware("cuda")
    assert hardware.vendor == "nvidia" and hardware.sm_count > 0
    if "H100" in hardware.name or "H200" in hardware.name:
        assert hardware.peak_tflops["bfloat16"] == pytest.approx(989.4)
        assert hardware.compute_capability == (9, 0)


def test_fast_pick_compiles_one_kernel_from_the_exhaustive_space(benchmarked):
    a = torch.randn(1024, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(2048, 4096, device="cuda", dtype=torch.float16)
    out = run_compiled(
        torch.mm, (a, b), **DIODE, fast_autotune=True, diode_fallback_to_autotune=False, diode_model="analytical"
    )
    torch.testing.assert_close(out, a @ b, atol=1e-2, rtol=1e-2)
    stats = diode_backend.stats()
    assert benchmarked == [] and stats["single_pick"] == 1
    assert stats["candidates_seen"] > 100, stats  # the exhaustive Triton space plus ATen
    assert stats["picks_by_model"] == {"analytical": 1}


def test_default_search_space_is_smaller(benchmarked):
    a = torch.randn(1024, 2048, device="cuda", dtype=torch.float16)
    b = torch.randn(2048, 4096, device="cuda", dtype=torch.float16)
    run_compiled(torch.mm, (a, b), **DIODE, fast_autotune=True, diode_fallback_to_autotune=False,
                 diode_search_space="DEFAULT")  # fmt: skip
    assert 2 < diode_backend.stats()["candidates_seen"] < 40


def test_unsure_analytical_scorer_measures_what_can_win(benchmarked):
    a = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    out = run_compiled(torch.mm, (a, b), **DIODE, fast_autotune=True, diode_top_k=3, diode_model="analytical")
    torch.testing.assert_close(out, a @ b, atol=2e-2, rtol=2e-2)
    stats = diode_backend.stats()
    assert benchmarked == []  # no calibrated confidence: DIODE measured, Inductor compiled one
    assert stats["fallbacks"] == {"low_confidence": 1} and stats["counters"]["measured_decisions"] == 1
    assert 2 <= stats["candidates_kept"] <= 3 + 2  # top-3 within the ratio, the best ATen and Triton


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_every_op_and_dtype_matches_eager(dtype, benchmarked):
    """The analytical scorer ranks every op; the shipped model's coverage is tested below."""
    def make(*shape):
        return torch.randn(*shape, device="cuda", dtype=dtype)

    x, w, bias = make(96, 256), make(384, 256), make(384)
    p, q, r = make(4, 64, 128), make(4, 128, 96), make(4, 64, 96)
    linear = torch.nn.Linear(256, 384, device="cuda", dtype=dtype)
    cases = {
        "mm": (torch.mm, (x, w.t())),
        "addmm": (torch.addmm, (bias, x, w.t())),
        "bmm": (torch.bmm, (p, q)),
        "baddbmm": (torch.baddbmm, (r, p, q)),
        "nn.Linear": (linear, (x,)),
    }
    tolerance = {"atol": 2e-2, "rtol": 2e-2} if dtype != torch.float32 else {"atol": 1e-2, "rtol": 1e-2}
    for name, (fn, args) in cases.items():
        torch._dynamo.reset()
        diode_backend.reset_stats()
        with torch.no_grad():
            out = run_compiled(
                fn, args, **DIODE, fast_autotune=True, diode_fallback_to_autotune=False, diode_model="analytical"
            )
            torch.testing.assert_close(out, fn(*args), **tolerance, msg=name)
        stats = diode_backend.stats()
        assert stats["decisions"] >= 1 and stats["errors"] == {}, (name, stats)
    assert benchmarked == []


@pytest.mark.parametrize("fallback", [True, False])
def test_a_scorer_that_scores_nothing_leaves_the_choice_to_the_fallback_flag(blind_scorer, benchmarked, fallback):
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    out = run_compiled(
        torch.mm, (a, a), **DIODE, fast_autotune=True, diode_fallback_to_autotune=fallback, diode_model=blind_scorer
    )
    torch.testing.assert_close(out, a @ a, atol=1e-2, rtol=1e-2)
    if fallback:  # Inductor's DEFAULT list, not the ~1,000 candidates of EXHAUSTIVE
        assert len(benchmarked) == 1 and 2 <= benchmarked[0] <= 40
    else:  # the ATen guess
        assert benchmarked == []
    assert diode_backend.stats()["fallbacks"] == {"no_scored_candidates": 1}


def test_the_shipped_model_ranks_by_default_and_ops_it_lacks_fall_back(benchmarked):
    hardware = registry.detect_hardware("cuda")
    entry = catalog.pick_entry(hardware, None)
    if "H100 80GB HBM3" in hardware.name:
        assert entry.name == "nvidia-h100-gemm"
    options = {**DIODE, "fast_autotune": True, "diode_fallback_to_autotune": False}
    a = torch.randn(1024, 2048, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2048, 4096, device="cuda", dtype=torch.bfloat16)
    torch.testing.assert_close(run_compiled(torch.mm, (a, b), **options), a @ b, atol=5e-2, rtol=2e-2)
    assert diode_backend.stats()["picks_by_model"] == {entry.name: 1}
    if "baddbmm" not in getattr(registry.load_scorer(entry), "ops", ("baddbmm",)):
        # an op the model was not trained on: nothing scored, and with no fallback, the ATen guess
        diode_backend.reset_stats()
        torch._dynamo.reset()
        p, q, r = (torch.randn(*s, device="cuda", dtype=torch.bfloat16) for s in ((4, 64, 128), (4, 128, 96), (4, 64, 96)))
        out = run_compiled(torch.baddbmm, (r, p, q), **options)
        torch.testing.assert_close(out, torch.baddbmm(r, p, q), atol=5e-2, rtol=2e-2)
        assert diode_backend.stats()["fallbacks"] == {"no_scored_candidates": 1}
    assert benchmarked == []
