"""DIODE measures a graph's GEMMs when Inductor's scheduler asks for their timings, after the whole
graph is lowered, where Inductor would defer its own benchmarking (a ``MultiTemplateBuffer``):
the kept choices' compiles start at lowering, so a graph's compiles overlap.

Inductor builds such buffers on a CPU only with ``cpu_backend="triton"``, and no Triton CPU
driver is installed here, so these graphs hold ATen GEMMs alone (``max_autotune_gemm_backends
= "DIODE,ATEN"``): real choices, compiled, run and timed by the host clock, in a real compile
whose scheduler finalizes a real buffer.
"""

from __future__ import annotations

import inspect
import logging

import pytest
import torch

import diode_backend
from diode_backend import measured
from diode_backend.inductor import compat, measure
from test_compile_cpu import biased_addmm, biased_inputs, compile_code
from test_measure_cpu import UNSURE, check_inductor_benchmarks_when_every_candidate_fails, counters, unsure  # noqa: F401 (a fixture)

#: DIODE unsure over a biased addmm's two ATen calls, in a compile whose scheduler picks
DEFERRED = {**UNSURE, "max_autotune_gemm_backends": "DIODE,ATEN", "cpu_backend": "triton"}


def two_addmms(bias, x, w, bias2, w2):
    """Two GEMMs of different shapes in one graph, the second fed by the first."""
    return biased_addmm(bias2, biased_addmm(bias, x, w), w2)


def two_inputs():
    return torch.randn(32), torch.randn(8, 32), torch.randn(32, 32), torch.randn(16), torch.randn(32, 16)


@pytest.fixture
def events(monkeypatch):
    """What DIODE's measurement did, in order: ``("start", n)`` when it started compiling the n
    choices of a GEMM, ``("finish", n)`` when it timed them."""
    seen: list[tuple[str, int]] = []
    start, finish = measure.start_measurement, measure.PendingMeasurement.finish

    def spy_start(choices):
        seen.append(("start", len(choices)))
        return start(choices)

    def spy_finish(self, *call):
        seen.append(("finish", len(self.choices)))
        return finish(self, *call)

    monkeypatch.setattr("diode_backend.inductor.benchmarked_choices.start_measurement", spy_start)
    monkeypatch.setattr(measure.PendingMeasurement, "finish", spy_finish)
    return seen


def test_a_graphs_gemms_are_compiled_at_lowering_and_timed_after_it(unsure, benchmarked, events):
    args = two_inputs()
    out, code = compile_code(two_addmms, args, **DEFERRED, diode_model=unsure)
    torch.testing.assert_close(out, two_addmms(*args))
    assert events == [("start", 2), ("start", 2), ("finish", 2), ("finish", 2)]
    assert benchmarked == []  # Inductor timed nothing itself
    assert counters()["measured_decisions"] == 2 and counters()["deferred_measurements"] == 2
    stats = diode_backend.stats()
    assert stats["decisions"] == 2 and stats["errors"] == {}
    winners = [d.winner.template.removeprefix("aten::") for d in measured.stored_decisions()]
    assert len(winners) == 2 and all(f"extern_kernels.{w}(" in code for w in winners)
    # the stats hold each decision with what DIODE timed
    assert [len(d["measured_us"]) for d in stats["recent_decisions"]] == [2, 2]


def test_a_deferred_decision_answers_a_later_compile_alone(unsure, benchmarked, events):
    compile_code(biased_addmm, biased_inputs(), **DEFERRED, diode_model=unsure)
    (decision,) = measured.stored_decisions()
    diode_backend.reset_stats()
    torch._dynamo.reset()
    _, code = compile_code(biased_addmm, biased_inputs(), **DEFERRED, diode_model=unsure)
    assert f"extern_kernels.{decision.winner.template.removeprefix('aten::')}(" in code
    assert counters()["measured_decision_hits"] == 1 and "measured_decisions" not in counters()
    assert events == [("start", 2), ("finish", 2)] and benchmarked == []


def test_without_benchmark_epilogue_fusion_each_gemm_is_measured_at_its_lowering(unsure, benchmarked, events):
    args = two_inputs()
    out, _ = compile_code(two_addmms, args, **DEFERRED, diode_model=unsure, benchmark_epilogue_fusion=False)
    torch.testing.assert_close(out, two_addmms(*args))
    assert events == [("start", 2), ("finish", 2), ("start", 2), ("finish", 2)]
    assert counters()["measured_decisions"] == 2 and "deferred_measurements" not in counters()
    assert benchmarked == []


def test_when_every_candidate_fails_the_scheduler_gets_inductors_own_timings(unsure, benchmarked, monkeypatch):
    check_inductor_benchmarks_when_every_candidate_fails(DEFERRED, unsure, benchmarked, monkeypatch)
    assert "deferred_measurements" not in counters()


def test_an_internal_error_in_a_deferred_measurement_falls_back_counts_and_logs_once(unsure, benchmarked, monkeypatch, caplog):
    monkeypatch.setattr(compat, "benchmark_inputs", lambda *args: 1 / 0)
    with caplog.at_level(logging.WARNING, logger="diode_backend"):
        for _ in range(2):
            torch._dynamo.reset()
            args = biased_inputs()
            out, _ = compile_code(biased_addmm, args, **DEFERRED, diode_model=unsure)
            torch.testing.assert_close(out, biased_addmm(*args))
    assert benchmarked == [2, 2]
    assert diode_backend.stats()["errors"] == {"measurement:ZeroDivisionError": 2}
    assert len([r for r in caplog.records if "internal error in measurement" in r.getMessage()]) == 1


def test_strict_mode_raises_deferred_measuring_errors(unsure, monkeypatch):
    monkeypatch.setattr(compat, "benchmark_inputs", lambda *args: 1 / 0)
    with pytest.raises(Exception, match="division by zero"):
        compile_code(biased_addmm, biased_inputs(), **DEFERRED, diode_model=unsure, diode_strict=True)


def test_a_result_without_a_buffer_leaves_the_decision_unmeasured_and_counted(unsure, benchmarked, monkeypatch):
    """Should Inductor choose at once where DIODE expected a buffer, Inductor has benchmarked
    the kept choices itself: the decision stands unmeasured, counted."""
    monkeypatch.setattr(compat, "defer_timings", lambda result, timings: False)
    args = biased_inputs()
    out, _ = compile_code(biased_addmm, args, **DEFERRED, diode_model=unsure)
    torch.testing.assert_close(out, biased_addmm(*args))
    stats = diode_backend.stats()
    assert stats["fallbacks"]["measurement_not_deferred"] == 1 and stats["decisions"] == 1
    assert "measured_decisions" not in counters()


@pytest.mark.parametrize(
    "change, buffer, deferred",
    [
        ({}, True, True),
        ({"benchmark_epilogue_fusion": False}, False, False),
        ({"cpu_backend": "cpp"}, False, False),
        ({"deterministic": True}, False, False),
        ({"multi_kernel_hints": [64]}, True, False),  # one timing per hint: DIODE measures at lowering
    ],
)
def test_diode_defers_only_where_inductor_builds_a_buffer(change, buffer, deferred, monkeypatch):
    """Inductor's autotuner itself, over the two ATen calls of a biased addmm, returns a
    ``MultiTemplateBuffer`` (``buffer``: ``defer_timings`` finds one); ``selection_deferred``
    says DIODE defers only where it does."""
    from torch._inductor import select_algorithm

    seen: list[tuple[bool, bool]] = []
    real = select_algorithm.AlgorithmSelectorCache.__call__
    signature = inspect.signature(real)

    def spy(self, name, choices, *args, **kwargs):
        predicted = compat.selection_deferred(signature.bind(self, name, choices, *args, **kwargs).arguments)
        result = real(self, name, choices, *args, **kwargs)
        seen.append((len(choices), compat.defer_timings(result, lambda hint, inductor: inductor(hint)), predicted))
        return result

    monkeypatch.setattr(select_algorithm.AlgorithmSelectorCache, "__call__", spy)
    args = biased_inputs()
    out, _ = compile_code(biased_addmm, args, **{**DEFERRED, "max_autotune_gemm_backends": "ATEN", **change})
    torch.testing.assert_close(out, biased_addmm(*args))
    assert seen == [(2, buffer, deferred)]


def test_a_deferred_selection_reads_a_one_element_bias_as_its_view(unsure, benchmarked, triton_sources):
    """A Linear to one output (N = 1), DIODE unsure between ATen and Triton: the buffer Inductor
    returns lists the autotuner call's inputs, where the one-element bias was a copy (a Triton
    pointwise kernel, which cannot run here); it gets the bias's view, so no copy is left. The
    Triton candidates fail to compile (no Triton CPU driver) and are dropped; ATen wins."""
    args = torch.randn(1), torch.randn(5, 64), torch.randn(64, 1)
    out, code = compile_code(torch.addmm, args, **{**DEFERRED, "max_autotune_gemm_backends": "DIODE"}, diode_model=unsure)
    torch.testing.assert_close(out, torch.addmm(*args))
    assert "triton_poi" not in code and "extern_kernels.addmm(" in code, code
    assert counters()["deferred_measurements"] == 1 and counters()["measure_failed_candidates"] >= 1
    assert benchmarked == []
