"""Predicted decisions: a pick DIODE keeps alone on its model's word is remembered, so a later
compile of the same GEMM (in any process) takes it without loading the model or scoring anything.
The compiles are real torch.compile on the CPU, whose addmm offers two ATen candidates."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import textwrap

import msgpack
import pytest
import torch

import diode_backend
from diode_backend import hookimpl, measured, plugins, predicted, registry
from diode_backend.cache import default_cache
from diode_backend.problem import GemmProblem, KernelConfig
from diode_backend.scorer import ScorerEntry
from synthetic_timings import H100
from test_compile_cpu import DIODE, CountingScorer, biased_addmm, biased_inputs, compile_code

SURE = {**DIODE, "fast_autotune": True}
BIAS_ADDMM, ADDMM = KernelConfig("aten", "aten::bias_addmm"), KernelConfig("aten", "aten::addmm")
PROBLEM = GemmProblem("mm", 4096, 1024, 2048, dtype="bfloat16", a_layout="row", b_layout="col")
PICK = predicted.PredictedDecision(PROBLEM, H100, ADDMM, 0.93, "nvidia-h100-gemm", "learned:abc", "DIODE/EXHAUSTIVE")


@contextlib.contextmanager
def model(template: str, confidence: float | None = 1.0, name: str = "counting", identity: str = "v1"):
    """A registered model called ``name`` that predicts ``template`` fastest; built anew at each
    load, counted in :class:`CountingScorer`."""

    def load():
        CountingScorer.loads += 1
        scorer = CountingScorer(template, confidence)
        scorer.name, scorer.identity = name, identity
        return scorer

    class Plugin:
        @hookimpl
        def diode_register_scorers(self, register):
            register(ScorerEntry(name, load, lambda hw: False, identity=identity))

    plugin = Plugin()
    plugins.get_plugin_manager().register(plugin)
    try:
        yield name
    finally:
        plugins.get_plugin_manager().unregister(plugin)


def new_process() -> None:
    """As in a new process: no model loaded, no Dynamo cache, no stats, nothing counted."""
    registry.clear()
    torch._dynamo.reset()
    diode_backend.reset_stats()
    CountingScorer.loads = CountingScorer.predictions = 0


def kernel(code: str) -> str:
    return "bias_addmm" if "extern_kernels.bias_addmm(" in code else "addmm"


def counters() -> dict:
    return diode_backend.stats()["counters"]


# The store


def test_a_stored_pick_is_found_again_whole():
    predicted.remember(PICK)
    assert predicted.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE", "nvidia-h100-gemm", "learned:abc") == PICK
    assert list(predicted.stored_decisions()) == [PICK] and list(measured.stored_decisions()) == []


def test_another_model_candidate_set_problem_or_torch_version_misses(monkeypatch):
    predicted.remember(PICK)
    assert predicted.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE", "nvidia-h100-gemm", "learned:retrained") is None
    assert predicted.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE", "analytical", "learned:abc") is None
    assert predicted.lookup(PROBLEM, H100, "ATEN,TRITON/DEFAULT", "nvidia-h100-gemm", "learned:abc") is None
    assert predicted.lookup(GemmProblem("mm", 4096, 1024, 2048), H100, "DIODE/EXHAUSTIVE", "nvidia-h100-gemm", "learned:abc") is None
    monkeypatch.setattr(predicted, "__version__", "0.0.0-other")
    assert predicted.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE", "nvidia-h100-gemm", "learned:abc") is None
    monkeypatch.undo()
    monkeypatch.setattr(measured, "_versions", lambda: {"torch": "9.9.9", "triton": "9.9.9"})
    assert predicted.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE", "nvidia-h100-gemm", "learned:abc") is None


@pytest.mark.parametrize("damage", ["truncated", "measured-entry", "bad-confidence"])
def test_a_damaged_entry_is_a_miss_and_counted(damage):
    predicted.remember(PICK)
    (path,) = default_cache(predicted.FOLDER).entries()
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:-5])
    elif damage == "measured-entry":  # another kind of entry under this key
        path.write_bytes(measured.encode(path.stem, measured.MeasuredDecision(PROBLEM, H100, (ADDMM,), (5.0,), "DIODE/EXHAUSTIVE")))
    else:  # a whole entry whose confidence is no probability
        entry = msgpack.unpackb(path.read_bytes())
        path.write_bytes(msgpack.packb({**entry, "confidence": 1.5}))
    assert predicted.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE", "nvidia-h100-gemm", "learned:abc") is None
    assert counters()["prediction_cache_corrupt"] == 1


# Real compiles


def test_a_confident_pick_is_stored_and_answers_the_next_compile_without_the_model(benchmarked, caplog):
    with model("aten::bias_addmm") as name:
        _, code = compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
        assert kernel(code) == "bias_addmm" and (CountingScorer.loads, CountingScorer.predictions) == (1, 1)
        (pick,) = predicted.stored_decisions()
        assert (pick.winner, pick.confidence, pick.model, pick.identity) == (BIAS_ADDMM, 1.0, name, "v1")
        assert pick.problem.describe() == "addmm 8x32x64 float32 row/row bias=row" and pick.space == "DIODE/EXHAUSTIVE"
        assert counters()["predicted_decisions"] == 1
        new_process()
        with caplog.at_level(logging.INFO, logger="diode_backend"):
            _, code = compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
    assert kernel(code) == "bias_addmm" and benchmarked == []
    assert (CountingScorer.loads, CountingScorer.predictions) == (0, 0)  # no model loaded, nothing scored
    assert counters() == {"predicted_decision_hits": 1}
    assert diode_backend.get_prediction_stats()["predicted_decision_hits"] == 1
    assert diode_backend.stats()["single_pick"] == 1
    assert any("predicted before by counting with confidence 1.00" in r.getMessage() for r in caplog.records)


def test_another_or_retrained_model_does_not_reuse_the_pick():
    with model("aten::bias_addmm") as name:
        compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
    for other in ({"name": "other"}, {"identity": "v2"}):  # another model; the same name retrained
        new_process()
        with model("aten::addmm", **other) as name:
            _, code = compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
        assert kernel(code) == "addmm" and CountingScorer.predictions == 1
        assert counters()["predicted_decisions"] == 1 and "predicted_decision_hits" not in counters()


def test_another_torch_version_does_not_reuse_the_pick(monkeypatch):
    with model("aten::bias_addmm") as name:
        compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
        new_process()
        monkeypatch.setattr(measured, "_versions", lambda: {"torch": "9.9.9", "triton": "none"})
        compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
    assert CountingScorer.loads == 1 and "predicted_decision_hits" not in counters()
    assert len(list(predicted.stored_decisions())) == 2  # one per torch version


def test_a_measured_decision_wins_over_a_predicted_one():
    with model("aten::bias_addmm") as name:
        compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
        (pick,) = predicted.stored_decisions()
        measured.remember(measured.MeasuredDecision(pick.problem, pick.hardware, (ADDMM, BIAS_ADDMM), (3.0, 4.0), pick.space))
        new_process()
        _, code = compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
    assert kernel(code) == "addmm" and counters() == {"measured_decision_hits": 1}


def test_only_picks_kept_alone_are_stored_and_the_options_still_decide():
    unsure = {**SURE, "diode_measure_ratio": 3.0}  # both candidates are worth measuring
    with model("aten::bias_addmm", confidence=0.2) as name:
        compile_code(biased_addmm, biased_inputs(), **unsure, diode_model=name)
        assert list(predicted.stored_decisions()) == [] and counters()["measured_decisions"] == 1
        default_cache(measured.FOLDER).clear()
        new_process()
        # the best guess whatever the confidence: kept alone, so stored
        compile_code(biased_addmm, biased_inputs(), **unsure, diode_model=name, diode_fallback_to_autotune=False)
        (pick,) = predicted.stored_decisions()
        assert pick.confidence == 0.2 and "measured_decisions" not in counters()
        new_process()
        # the same pick is not kept alone when unsure picks are measured: it measures instead
        compile_code(biased_addmm, biased_inputs(), **unsure, diode_model=name)
    assert counters()["measured_decisions"] == 1 and "predicted_decision_hits" not in counters()


def test_without_diode_cache_predictions_nothing_is_stored_or_reused():
    with model("aten::bias_addmm") as name:
        compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name, diode_cache_predictions=False)
        assert list(predicted.stored_decisions()) == [] and "predicted_decisions" not in counters()
        compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
        new_process()
        compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name, diode_cache_predictions=False)
    assert (CountingScorer.loads, CountingScorer.predictions) == (1, 1) and "predicted_decision_hits" not in counters()


def test_a_damaged_pick_is_a_miss_and_is_rewritten():
    with model("aten::bias_addmm") as name:
        compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
        (path,) = default_cache(predicted.FOLDER).entries()
        path.write_bytes(b"\x00not msgpack")
        new_process()
        _, code = compile_code(biased_addmm, biased_inputs(), **SURE, diode_model=name)
    assert kernel(code) == "bias_addmm" and diode_backend.stats()["errors"] == {}
    # ranked again (from the prediction cache, so the model is loaded but asked nothing)
    assert CountingScorer.loads == 1 and counters()["prediction_cache_hits"] == 1
    assert counters()["prediction_cache_corrupt"] == 1 and counters()["predicted_decisions"] == 1
    assert [p.winner for p in predicted.stored_decisions()] == [BIAS_ADDMM]


_PROCESS = textwrap.dedent(
    """
    import json, torch, diode_backend, diode_example
    from torch._inductor.utils import run_and_get_code

    loads, predictions = [], []  # the example model's loads and the GEMMs it scored, in this process
    scorer = diode_example.BiasEpilogueScorer
    scorer.__init__ = lambda self: loads.append(1)
    real_predict = scorer.predict
    scorer.predict = lambda self, *args: (predictions.append(1), real_predict(self, *args))[1]
    bias, x, w = torch.randn(32), torch.randn(8, 64), torch.randn(64, 32)
    fn = torch.compile(lambda b, x, w: torch.addmm(b.expand(8, 32), x, w), options={
        "max_autotune": True, "max_autotune_gemm_backends": "DIODE", "fx_graph_cache": False,
        "fast_autotune": True, "diode_model": "example-bias-epilogue"})
    _, (code,) = run_and_get_code(fn, bias, x, w)
    stats = diode_backend.get_prediction_stats()
    print(json.dumps({"stored": stats["predicted_decisions"], "hits": stats["predicted_decision_hits"],
                      "loads": len(loads), "predictions": len(predictions),
                      "kernel": "bias_addmm" if "extern_kernels.bias_addmm(" in code else "addmm"}))
    """
)


def test_a_predicted_decision_holds_across_processes(isolated_caches):
    runs = [
        subprocess.run([sys.executable, "-c", _PROCESS], capture_output=True, text=True, timeout=300, env=os.environ)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    first, second = (json.loads(run.stdout.splitlines()[-1]) for run in runs)
    assert first == {"stored": 1, "hits": 0, "loads": 1, "predictions": 1, "kernel": "bias_addmm"}
    assert second == {"stored": 0, "hits": 1, "loads": 0, "predictions": 0, "kernel": "bias_addmm"}
