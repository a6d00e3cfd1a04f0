"""DIODE measures its candidates itself, inside real torch.compile on the CPU: the ATen choices
of a biased addmm (``addmm``, ``bias_addmm``) are compiled, run and timed by the host clock;
Inductor gets the fastest alone. Failures are injected into the real choice objects."""

from __future__ import annotations

import concurrent.futures
import logging
import statistics
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch
from torch._inductor import config
from torch._inductor.select_algorithm import ExternKernelCaller

import diode_backend
from diode_backend import hookimpl, measured, plugins, registry
from diode_backend.inductor import compat, measure
from diode_backend.scorer import ScorerEntry
from test_compile_cpu import DIODE, CountingScorer, PreferScorer, biased_addmm, biased_inputs, compile_code

#: unsure, and both candidates within the measure ratio: DIODE measures both
UNSURE = {**DIODE, "fast_autotune": True, "diode_measure_ratio": 3.0}


@pytest.fixture
def unsure(scorer_plugin):
    return scorer_plugin(PreferScorer("aten::addmm", confidence=0.2))


def counters() -> dict:
    return diode_backend.stats()["counters"]


def test_the_measured_winner_is_remembered_with_its_times(unsure, benchmarked):
    _, code = compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure)
    (decision,) = measured.stored_decisions()
    assert decision.problem.describe() == "addmm 8x32x64 float32 row/row bias=row"
    assert decision.hardware.name and decision.space == "DIODE/EXHAUSTIVE"
    assert sorted(c.template for c in decision.configs) == ["aten::addmm", "aten::bias_addmm"]
    assert all(0 < t < 1e6 for t in decision.times_us)  # real host-clock medians, microseconds
    assert f"extern_kernels.{decision.winner.template.removeprefix('aten::')}(" in code
    assert benchmarked == [] and counters()["measured_decisions"] == 1
    recent = diode_backend.stats()["recent_decisions"][-1]
    assert recent["pick"] == decision.winner.describe()
    # the stats show what DIODE timed: the times it stored, by candidate
    assert recent["measured_us"] == {c.describe(): t for c, t in zip(decision.configs, decision.times_us)}


def test_a_measured_decision_answers_a_later_compile_even_with_another_model(scorer_plugin, unsure, benchmarked, caplog):
    compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure)
    (decision,) = measured.stored_decisions()
    other = scorer_plugin(PreferScorer("aten::bias_addmm", confidence=0.1))  # a different model, as unsure
    diode_backend.reset_stats()
    torch._dynamo.reset()
    with caplog.at_level(logging.INFO, logger="diode_backend"):
        _, code = compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=other)
    assert f"extern_kernels.{decision.winner.template.removeprefix('aten::')}(" in code
    assert counters()["measured_decision_hits"] == 1 and "measured_decisions" not in counters()
    assert benchmarked == [] and diode_backend.stats()["single_pick"] == 1
    assert any("measured fastest before" in r.getMessage() for r in caplog.records)


def test_a_measured_decision_has_inductor_generate_only_the_winners_template(unsure, monkeypatch):
    from torch._inductor.choices import InductorChoices

    generated: list[list[str]] = []  # the templates Inductor generates configs for, per call
    real = InductorChoices.get_template_configs

    def spy(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
        if templates:
            generated.append(sorted(t.uid for t in templates))
        return real(self, kernel_inputs, templates, op_name, kwarg_overrides)

    monkeypatch.setattr(InductorChoices, "get_template_configs", spy)
    compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure)
    (decision,) = measured.stored_decisions()
    torch._dynamo.reset()
    compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure)
    assert generated == [["aten::addmm", "aten::bias_addmm"], [decision.winner.template]]


@pytest.fixture
def counting():
    """Registers an unsure CountingScorer, built anew at each load; the fixture's value is its class."""

    def load():
        CountingScorer.loads += 1
        return CountingScorer("aten::addmm", confidence=0.2)

    scorer = load()

    class Plugin:
        @hookimpl
        def diode_register_scorers(self, register):
            register(ScorerEntry(scorer.name, load, lambda hw: False, identity=scorer.identity))

    plugin = Plugin()
    plugins.get_plugin_manager().register(plugin)
    CountingScorer.loads = CountingScorer.predictions = 0
    yield scorer.name
    plugins.get_plugin_manager().unregister(plugin)


def test_a_measured_decision_loads_no_model_and_scores_nothing(counting):
    compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=counting)
    assert (CountingScorer.loads, CountingScorer.predictions) == (1, 1)  # the cold compile ranked the ATen group
    (decision,) = measured.stored_decisions()
    registry.clear()  # as in a new process: no model loaded yet
    CountingScorer.loads = CountingScorer.predictions = 0
    diode_backend.reset_stats()
    torch._dynamo.reset()
    _, code = compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=counting)
    assert f"extern_kernels.{decision.winner.template.removeprefix('aten::')}(" in code
    assert counters()["measured_decision_hits"] == 1
    assert (CountingScorer.loads, CountingScorer.predictions) == (0, 0)


def test_the_op_groups_after_the_measured_kernels_are_not_generated(unsure, monkeypatch):
    """addmm asks for its ATen group, then (where Triton templates apply, as on a GPU) for its
    contiguous and Triton groups: once the ATen group offered the measured kernel, Inductor
    generates nothing for the others."""
    from torch._inductor.choices import InductorChoices
    from torch._inductor.kernel import mm

    compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure)
    (decision,) = measured.stored_decisions()
    generated: list[list[str]] = []
    real = InductorChoices.get_template_configs

    def spy(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
        generated.append(sorted(t.uid for t in templates))
        return real(self, kernel_inputs, templates, op_name, kwarg_overrides)

    monkeypatch.setattr(InductorChoices, "get_template_configs", spy)
    monkeypatch.setattr(mm, "use_triton_template", lambda *args, **kwargs: True)
    torch._dynamo.reset()
    _, code = compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure)
    assert generated == [[decision.winner.template]]
    assert f"extern_kernels.{decision.winner.template.removeprefix('aten::')}(" in code


_PROCESS = textwrap.dedent(
    """
    import torch, diode_backend
    from torch._inductor.utils import run_and_get_code
    bias, x, w = torch.randn(32), torch.randn(8, 64), torch.randn(64, 32)
    fn = torch.compile(lambda b, x, w: torch.addmm(b.expand(8, 32), x, w), options={
        "max_autotune": True, "max_autotune_gemm_backends": "DIODE", "fx_graph_cache": False,
        "diode_model": "example-bias-epilogue", "diode_measure_ratio": 10.0})
    _, (code,) = run_and_get_code(fn, bias, x, w)
    stats = diode_backend.get_prediction_stats()
    kernel = "bias_addmm" if "extern_kernels.bias_addmm(" in code else "addmm"
    print(stats["measured_decisions"], stats["measured_decision_hits"], kernel)
    """
)


def test_a_measured_decision_holds_across_processes(isolated_caches):
    """fast_autotune=False: DIODE measures whenever it keeps more than one candidate."""
    runs = [
        subprocess.run([sys.executable, "-c", _PROCESS], capture_output=True, text=True, timeout=300, env=os.environ)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    first, second = (run.stdout.split() for run in runs)
    assert first[:2] == ["1", "0"] and second[:2] == ["0", "1"]  # measured once, then remembered
    assert first[2] == second[2]  # the same kernel


def test_a_candidate_failing_to_compile_is_dropped_and_counted(unsure, benchmarked, monkeypatch):
    def precompile(choice):
        if choice.choice.name == "bias_addmm":
            raise RuntimeError("cannot compile")

    monkeypatch.setattr(ExternKernelCaller, "precompile", precompile, raising=False)
    args = biased_inputs()
    out, code = compile_code(biased_addmm, args, **UNSURE, diode_model=unsure)
    torch.testing.assert_close(out, biased_addmm(*args))
    assert "extern_kernels.addmm(" in code and "bias_addmm" not in code and benchmarked == []
    assert counters()["measure_failed_candidates"] == 1 and counters()["measured_decisions"] == 1
    measured_us = diode_backend.stats()["recent_decisions"][-1]["measured_us"]
    assert measured_us["aten::bias_addmm"] is None and measured_us["aten::addmm"] > 0  # the failure shown
    assert diode_backend.get_prediction_stats()["measure_failed_candidates"] == 1


def test_a_candidate_failing_to_compile_in_inductors_workers_is_dropped_not_compiled_again(unsure, benchmarked, monkeypatch):
    """Triton templates compile in Inductor's compile workers on a CUDA device (none here): a
    failed worker compile stands in for one, whose choice is then not compiled in this process."""
    failed = concurrent.futures.Future()
    failed.set_exception(RuntimeError("out of shared memory"))
    monkeypatch.setattr(compat, "compile_in_workers", lambda choice: failed if choice.choice.name == "bias_addmm" else None)
    compiled_here = []
    monkeypatch.setattr(ExternKernelCaller, "precompile", lambda choice: compiled_here.append(choice.choice.name), raising=False)
    args = biased_inputs()
    out, code = compile_code(biased_addmm, args, **UNSURE, diode_model=unsure)
    torch.testing.assert_close(out, biased_addmm(*args))
    assert "extern_kernels.addmm(" in code and benchmarked == [] and compiled_here == ["addmm"]
    assert counters()["measure_failed_candidates"] == 1
    assert diode_backend.stats()["recent_decisions"][-1]["measured_us"]["aten::bias_addmm"] is None


def test_a_candidate_failing_to_run_is_dropped_and_counted(unsure, benchmarked, monkeypatch):
    real = compat.run_callable

    def run_callable(choice, autotune_args):
        run, release = real(choice, autotune_args)
        if choice.choice.name != "addmm":
            return run, release

        def broken():
            raise RuntimeError("illegal memory access")

        return broken, release

    monkeypatch.setattr(compat, "run_callable", run_callable)
    _, code = compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure)
    assert "extern_kernels.bias_addmm(" in code and benchmarked == []
    assert counters()["measure_failed_candidates"] == 1


def check_inductor_benchmarks_when_every_candidate_fails(options: dict, unsure: str, benchmarked: list, monkeypatch) -> None:
    """Every candidate of the biased addmm, compiled under ``options``, fails to compile:
    Inductor benchmarks the list DIODE would have measured, and nothing is stored."""
    def precompile(choice):
        raise RuntimeError("cannot compile")

    monkeypatch.setattr(ExternKernelCaller, "precompile", precompile, raising=False)
    monkeypatch.setattr(ExternKernelCaller, "benchmark", lambda self, *args, out: 1.0)  # Inductor's own timing
    args = biased_inputs()
    out, _ = compile_code(biased_addmm, args, **options, diode_model=unsure)
    torch.testing.assert_close(out, biased_addmm(*args))
    assert benchmarked == [2]  # the list DIODE would have measured, benchmarked by Inductor
    assert diode_backend.stats()["fallbacks"] == {"low_confidence": 1, "measurement_failed": 1}
    assert counters()["measure_failed_candidates"] == 2 and list(measured.stored_decisions()) == []


def test_when_every_candidate_fails_inductor_benchmarks_them(unsure, benchmarked, monkeypatch):
    check_inductor_benchmarks_when_every_candidate_fails(UNSURE, unsure, benchmarked, monkeypatch)


def test_an_internal_error_while_measuring_falls_back_counts_and_logs_once(unsure, benchmarked, monkeypatch, caplog):
    def broken(*args):
        raise RuntimeError("measuring exploded")

    monkeypatch.setattr(compat, "benchmark_inputs", broken)
    with caplog.at_level(logging.WARNING, logger="diode_backend"):
        for _ in range(2):
            torch._dynamo.reset()
            out, _ = compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure)
    assert benchmarked == [2, 2]
    assert diode_backend.stats()["errors"] == {"measurement:RuntimeError": 2}
    assert len([r for r in caplog.records if "internal error in measurement" in r.getMessage()]) == 1


def test_choices_diode_cannot_launch_are_left_to_inductor(unsure, benchmarked, monkeypatch):
    monkeypatch.setattr(compat, "can_launch", lambda choice: choice.choice.name != "bias_addmm")
    compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure)
    assert benchmarked == [2] and diode_backend.stats()["fallbacks"]["not_measurable"] == 1


def test_strict_mode_raises_measuring_errors(unsure, monkeypatch):
    monkeypatch.setattr(compat, "benchmark_inputs", lambda *args: 1 / 0)
    with pytest.raises(Exception, match="division by zero"):
        compile_code(biased_addmm, biased_inputs(), **UNSURE, diode_model=unsure, diode_strict=True)


_NEW_PRECISION_API = textwrap.dedent(
    """
    import sys, torch
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    bias, x, w = torch.randn(32), torch.randn(8, 64), torch.randn(64, 32)
    backends = sys.argv[1]
    fn = torch.compile(lambda b, x, w: torch.addmm(b.expand(8, 32), x, w), options={
        "max_autotune": True, "max_autotune_gemm_backends": backends, "fx_graph_cache": False,
        "diode_model": "example-bias-epilogue", "diode_measure_ratio": 10.0})
    try:
        fn(bias, x, w)
        print("compiled")
    except Exception as err:
        print("raised", type(err).__name__)
    """
)


def test_fp32_with_the_new_precision_api_compiles_under_diode(isolated_caches):
    """Inductor's autotuner reads ``torch.get_float32_matmul_precision()`` for its precompile key
    and timing cache, which refuses to answer once the new API has set a precision; a one-choice
    list returns before it."""
    def run(backends):
        done = subprocess.run([sys.executable, "-c", _NEW_PRECISION_API, backends], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run("ATEN") == "raised InductorError"  # Inductor's own max-autotune
    assert run("DIODE") == "compiled"  # DIODE measured the two and handed Inductor one


def test_a_contender_whose_estimate_run_hiccups_still_gets_its_full_runs():
    """One slow estimate run (a hiccup) must not leave a candidate with a single timed run."""
    runs = []

    def hiccup_once():
        runs.append(None)
        if len(runs) == 1:
            time.sleep(0.05)

    samples = measure._timer(torch.device("cpu"), False).time([lambda: None, hiccup_once])
    assert len(samples[1]) >= 1 + measure.METHOD.min_reps
    assert statistics.median(samples[1]) < 10_000  # microseconds: the hiccup is one sample of many


@pytest.mark.parametrize("mode, replayed", [("max-autotune", True), ("max-autotune-no-cudagraphs", False)])
def test_the_measurement_knows_whether_the_compiled_graph_will_run_as_cuda_graphs(unsure, benchmarked, monkeypatch, mode, replayed):
    """On a GPU the timer follows this (CUDA-graph replay only for a graph that will be replayed):
    here, inside a real compile, it reads what ``torch.compile``'s mode set."""
    seen = []
    timer = measure._timer
    monkeypatch.setattr(measure, "_timer", lambda *args: seen.append(compat.runs_as_cuda_graph()) or timer(*args))
    with config.patch(**UNSURE, diode_model=unsure):
        torch.compile(biased_addmm, mode=mode)(*biased_inputs())
    assert seen == [replayed] and counters()["measured_decisions"] == 1
