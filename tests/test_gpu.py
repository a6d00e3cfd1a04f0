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
    if "H100 80GB HBM3" in hardware.name or "H200" in hardware.name:
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


#: One process of the warm-cache test: compiles ``mm 77x320x768`` fp16 (the shipped model's
#: single pick is a Triton tile) with DIODE, Inductor's FX-graph and autotune caches off and
#: Triton's cache kept (TRITON_CACHE_DIR), then prints DIODE's pick, the Triton kernels it wrote
#: to that cache, Inductor's Triton backend hash and the ptxas path it set. ``plain-first``:
#: before that, the same GEMM compiled without autotuning (a graph with no Triton kernel).
_COMPILE_ONE = """
import json, os, sys
import torch
from torch._inductor import config
import diode_backend
from torch.utils._triton import triton_hash_with_backend
root = os.environ["TRITON_CACHE_DIR"]
def entries():
    return {f"{d}/{f}" for d in os.listdir(root) for f in os.listdir(f"{root}/{d}")} if os.path.isdir(root) else set()
if sys.argv[1] == "hash":  # as a compile worker: the ptxas path set before anything is hashed
    print(json.dumps({"hash": triton_hash_with_backend()}))
    raise SystemExit
a = torch.randn(77, 768, device="cuda", dtype=torch.float16)
b = torch.randn(320, 768, device="cuda", dtype=torch.float16).t()
if "plain-first" in sys.argv:
    torch.compile(torch.mm)(a, b)
    torch._dynamo.reset()
before = entries()
with config.patch(max_autotune=True, max_autotune_gemm_backends="DIODE", fast_autotune=True, diode_fallback_to_autotune=False,
                  fx_graph_cache=False, autotune_local_cache=False):
    torch.compile(torch.mm)(a, b)
written = sorted(e for e in entries() - before if e.endswith(".json") and "_tem_" in e and "__grp__" not in e)
print(json.dumps({"pick": diode_backend.stats()["recent_decisions"][-1]["pick"], "written": written,
                  "hash": triton_hash_with_backend(), "ptxas": os.environ.get("TRITON_PTXAS_PATH")}))
"""


@pytest.mark.parametrize("warm_first", ["", "plain-first"])
def test_a_warm_process_finds_the_triton_winner_in_tritons_cache(tmp_path, warm_first):
    """Triton keys its cache by the ptxas version a process read first. Inductor's compile
    workers set torch's ptxas before anything, the compiling process only when it first compiles
    a Triton kernel, and every graph it compiles reads the version: without DIODE setting it
    first, a winner compiled in one kind of process was compiled again in the other, and a warm
    process that first compiled a graph without Triton kernels (``plain-first``) missed every
    kernel the cold one compiled (benchmarks/results/h100_warm_profile_2026-11-26/)."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_PTXAS_PATH"}
    env.update(TRITON_CACHE_DIR=str(tmp_path / "triton"), DIODE_CACHE_DIR=str(tmp_path / "diode"),
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))  # fmt: skip

    def run(*args, **extra):
        done = subprocess.run([sys.executable, "-c", _COMPILE_ONE, *args], env={**env, **extra},
                              capture_output=True, text=True, check=True)  # fmt: skip
        return json.loads(done.stdout.strip().splitlines()[-1])

    cold = run("compile")
    assert cold["pick"].startswith("triton::") and len(cold["written"]) == 1, cold
    if cold["ptxas"]:  # torch ships a ptxas: the compiling process hashed what its workers hash
        assert run("hash", TRITON_PTXAS_PATH=cold["ptxas"])["hash"] == cold["hash"]
    warm = run("compile", warm_first)
    assert warm["pick"] == cold["pick"] and warm["hash"] == cold["hash"]
    assert warm["written"] == [], warm  # the winner came from Triton's cache


#: One process of the lone-winner test: compiles ``mm 77x320x768`` fp16 with DIODE and a scorer
#: sure of a middle Triton tile of modest shared memory (so every process keeps it alone: a
#: predicted decision; ``measured`` stores it as a measured decision too, which answers first),
#: Inductor's FX-graph and autotune caches off, then prints DIODE's pick and counters, the
#: modules executed inside DIODE's GEMM lowering (there only a Triton choice's benchmark module
#: is; the graph's kernels and wrapper load later) and the Triton kernels of the compiled graph.
_LONE_TRITON = r"""
import json, re, sys
import torch
from torch._inductor import codecache, config
from torch._inductor.utils import run_and_get_code
import diode_backend
from diode_backend import hookimpl, measured, plugins, predicted
from diode_backend.inductor.choices import DiodeChoicesMixin
from diode_backend.problem import KIND_TRITON
from diode_backend.scorer import Prediction, ScorerEntry

class MiddleTile:
    name = identity = "middle-tile"

    def predict(self, problem, configs, hardware):
        modest = [i for i, c in enumerate(configs) if c.kind == KIND_TRITON
                  and 2 * (c.block_m + c.block_n) * c.block_k * c.num_stages <= 96 * 1024]
        best = modest[len(modest) // 2]
        return Prediction(tuple(1.0 if i == best else 2.0 for i in range(len(configs))), 1.0)

class Plugin:
    @hookimpl
    def diode_register_scorers(self, register):
        register(ScorerEntry("middle-tile", MiddleTile, lambda hw: False, identity="middle-tile"))

plugins.get_plugin_manager().register(Plugin())
executed, in_lowering = [], [False]  # the modules executed inside DIODE's GEMM lowering: benchmark modules
reload, lowering = codecache._reload_python_module, DiodeChoicesMixin.get_template_configs
def counting_reload(key, path, *args, **kwargs):
    if in_lowering[0]:
        executed.append(path)
    return reload(key, path, *args, **kwargs)
def flagged_lowering(self, *args, **kwargs):
    in_lowering[0] = True
    try:
        return lowering(self, *args, **kwargs)
    finally:
        in_lowering[0] = False
codecache._reload_python_module = counting_reload
DiodeChoicesMixin.get_template_configs = flagged_lowering
a = torch.randn(77, 768, device="cuda", dtype=torch.float16)
b = torch.randn(320, 768, device="cuda", dtype=torch.float16).t()
with config.patch(max_autotune=True, max_autotune_gemm_backends="DIODE", fast_autotune=True, diode_model="middle-tile",
                  fx_graph_cache=False, autotune_local_cache=False):
    out, (code, *_) = run_and_get_code(torch.compile(torch.mm), a, b)
torch.testing.assert_close(out, a @ b, atol=1e-2, rtol=1e-2)
if sys.argv[1:] == ["cold", "measured"]:
    (pick,) = predicted.stored_decisions()
    measured.remember(measured.MeasuredDecision(pick.problem, pick.hardware, (pick.winner,), (5.0,), pick.space))
stats = diode_backend.stats()
print(json.dumps({"pick": stats["recent_decisions"][-1]["pick"], "counters": stats["counters"], "errors": stats["errors"],
                  "benchmark_modules": executed,
                  "kernels": re.findall(r"async_compile\.triton\('(\w+)', '''(.*?)'''", code, re.DOTALL)}))
"""


@pytest.mark.parametrize("decision", ["predicted", "measured"])
def test_a_warm_triton_winner_compiles_the_same_kernel_and_loads_no_benchmark_module(tmp_path, decision):
    """A Triton tile Inductor gets alone is never benchmarked: neither the cold process that
    kept it alone nor the warm one that found it stored executes its benchmark module, and the
    warm process compiles the cold one's kernel, from Triton's cache."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_PTXAS_PATH"}
    env.update(TRITON_CACHE_DIR=str(tmp_path / "triton"), DIODE_CACHE_DIR=str(tmp_path / "diode"),
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))  # fmt: skip

    def run(*args):
        done = subprocess.run([sys.executable, "-c", _LONE_TRITON, *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    cold = run("cold", decision)
    assert cold["pick"].startswith("triton::") and cold["benchmark_modules"] == [] and cold["errors"] == {}, cold
    assert len(cold["kernels"]) == 1 and "_tem_" in cold["kernels"][0][0], cold["kernels"]
    warm = run("warm", decision)
    assert warm["counters"].get(f"{decision}_decision_hits") == 1, warm
    assert warm["pick"] == cold["pick"] and warm["benchmark_modules"] == [] and warm["errors"] == {}, warm
    assert warm["kernels"] == cold["kernels"]  # the same kernel source


@pytest.mark.parametrize("template, confidence", [("aten::addmm", 1.0), ("triton::mm", 1.0), ("aten::addmm", 0.2)])
def test_a_one_element_bias_runs_no_copy_kernel_beside_the_pick(scorer_plugin, benchmarked, template, confidence):
    """A Linear to one output (N = 1): Inductor copies its one-element bias to the output's shape
    for the groups that take the expanded bias (on torch 2.11 the ATen one too); DIODE's pick,
    kept alone or measured with the selection deferred to the scheduler (unsure), reads it as a
    broadcast view, as plain Inductor's addmm does (compat.broadcast_bias_nodes)."""
    from torch._inductor.utils import run_and_get_code

    from test_compile_cpu import PreferScorer

    bias = torch.randn(1, device="cuda", dtype=torch.float16)
    x, w = (torch.randn(rows, 4392, device="cuda", dtype=torch.float16) for rows in (5, 1))
    name = scorer_plugin(PreferScorer(template, confidence=confidence))
    sure = confidence == 1.0
    with config.patch(**DIODE, fast_autotune=True, diode_fallback_to_autotune=not sure, diode_model=name):
        out, code = run_and_get_code(torch.compile(torch.addmm), bias, x, w.t())
    torch.testing.assert_close(out, torch.addmm(bias, x, w.t()), atol=2e-2, rtol=2e-2)
    code = "\n".join(code)
    assert "triton_poi" not in code, code
    if sure:
        assert ("extern_kernels.addmm(" if template == "aten::addmm" else "triton_tem_") in code, code
    stats = diode_backend.stats()
    assert stats["errors"] == {} and benchmarked == [], stats
    assert stats["single_pick"] == 1 if sure else stats["counters"]["deferred_measurements"] == 1, stats
