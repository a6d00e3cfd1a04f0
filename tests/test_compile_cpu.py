"""DIODE inside real torch.compile on the CPU.

CPU Inductor offers ATen candidates here (two for addmm with an expanded bias: ``addmm`` and
``bias_addmm``), which is enough to see DIODE rank, pick, fall back and count.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys

import pytest
import torch
import torch._inductor.choices  # noqa: F401  (RecordingChoices below subclasses InductorChoices)
import torch.nn.functional as F
from torch._inductor import config
from torch._inductor.utils import run_and_get_code

import diode_backend
from diode_backend import plugins, predicted
from diode_backend.cache import default_cache
from diode_backend.options import OPTIONS_BY_NAME
from diode_backend.scorer import Prediction

DIODE = {"max_autotune": True, "max_autotune_gemm_backends": "DIODE", "fx_graph_cache": False}


def refresh_choices_handler() -> None:
    """Make the next compile in this thread build its choices object from
    ``config.inductor_choices_class`` again (Inductor builds it once per thread)."""
    from torch._inductor import virtualized

    key = virtualized._choices._key
    if hasattr(virtualized.threadlocal, key):
        delattr(virtualized.threadlocal, key)


def biased_addmm(bias, x, w):
    return torch.addmm(bias.expand(x.shape[0], w.shape[1]), x, w)


def biased_inputs(dtype=torch.float32):
    return torch.randn(32, dtype=dtype), torch.randn(8, 64, dtype=dtype), torch.randn(64, 32, dtype=dtype)


class PreferScorer:
    """A throwaway scorer that predicts the named template fastest."""

    def __init__(self, template: str, confidence: float | None = 1.0, fail: bool = False):
        self.template, self.confidence, self.fail = template, confidence, fail
        self.name = f"prefer-{template}"
        self.identity = f"{self.name}-{confidence}-{fail}"

    def predict(self, problem, configs, hardware):
        if self.fail:
            raise RuntimeError("scorer exploded")
        times = tuple(1.0 if c.template == self.template else 2.0 + i for i, c in enumerate(configs))
        return Prediction(times, self.confidence)


class CountingScorer(PreferScorer):
    """A PreferScorer that counts how often it is built (a model load, counted by whoever builds
    it) and asked (scoring); a test resets both before it counts."""

    loads = predictions = 0

    def predict(self, problem, configs, hardware):
        CountingScorer.predictions += 1
        return super().predict(problem, configs, hardware)


def compile_code(fn, args, **options):
    with config.patch(**options):
        out, code = run_and_get_code(torch.compile(fn), *args)
    return out, code[0]


def test_the_example_plugin_is_discovered_and_its_scorer_changes_the_pick(benchmarked):
    args = biased_inputs()
    out, code = compile_code(biased_addmm, args, **DIODE, fast_autotune=True, diode_model="example-bias-epilogue")
    torch.testing.assert_close(out, biased_addmm(*args))
    assert "extern_kernels.bias_addmm(" in code
    assert benchmarked == []  # one candidate reached Inductor: nothing was benchmarked
    stats = diode_backend.stats()
    assert stats["picks_by_model"] == {"example-bias-epilogue": 1}
    assert stats["single_pick"] == 1 and stats["candidates_seen"] == 2 and stats["candidates_kept"] == 1
    assert "example" in [p["name"] for p in plugins.plugin_report()]


def test_another_scorer_picks_the_other_kernel(scorer_plugin, benchmarked):
    name = scorer_plugin(PreferScorer("aten::addmm"))
    args = biased_inputs()
    out, code = compile_code(biased_addmm, args, **DIODE, fast_autotune=True, diode_model=name)
    torch.testing.assert_close(out, biased_addmm(*args))
    assert "extern_kernels.addmm(" in code and "bias_addmm" not in code
    assert benchmarked == []


def test_low_confidence_measures_and_inductor_benchmarks_nothing(scorer_plugin, benchmarked):
    name = scorer_plugin(PreferScorer("aten::addmm", confidence=0.2))
    args = biased_inputs()
    out, _ = compile_code(biased_addmm, args, **DIODE, fast_autotune=True, diode_model=name, diode_measure_ratio=3.0)
    torch.testing.assert_close(out, biased_addmm(*args))
    assert benchmarked == []  # DIODE timed both candidates itself and handed Inductor the fastest
    stats = diode_backend.stats()
    assert stats["fallbacks"] == {"low_confidence": 1} and stats["benchmarked_top_k"] == 1
    assert stats["counters"]["measured_decisions"] == 1 and stats["candidates_kept"] == 2
    assert stats["mean_confidence"] == pytest.approx(0.2)


def test_every_aten_call_is_measured_whatever_top_k_and_the_ratio(scorer_plugin, benchmarked, tmp_path, monkeypatch):
    """The CPU's biased addmm offers two ATen calls (addmm, bias_addmm) and nothing else: both are
    measured even where top_k and the ratio would keep one (test_policy.py covers those limits)."""
    name = scorer_plugin(PreferScorer("aten::addmm", confidence=None))  # predicts 1.0 and 3.0 us
    for top_k, ratio in [(1, 3.0), (2, 1.5), (2, 3.0)]:
        monkeypatch.setenv("DIODE_CACHE_DIR", str(tmp_path / f"{top_k}-{ratio}"))  # no decision stored before
        diode_backend.reset_stats()
        torch._dynamo.reset()
        compile_code(biased_addmm, biased_inputs(), **DIODE, diode_top_k=top_k, diode_measure_ratio=ratio, diode_model=name)
        assert diode_backend.stats()["counters"].get("measured_decisions", 0) == 1, (top_k, ratio)
        assert diode_backend.stats()["candidates_kept"] == 2
    assert benchmarked == []


def test_no_fallback_uses_the_best_guess_even_when_unsure(scorer_plugin, benchmarked):
    name = scorer_plugin(PreferScorer("aten::bias_addmm", confidence=0.1))
    _, code = compile_code(
        biased_addmm, biased_inputs(), **DIODE, fast_autotune=True, diode_fallback_to_autotune=False, diode_model=name
    )
    assert "extern_kernels.bias_addmm(" in code and benchmarked == []


def test_without_a_model_inductor_autotunes_as_usual(benchmarked):
    args = biased_inputs()
    out, _ = compile_code(biased_addmm, args, **DIODE, fast_autotune=True)
    torch.testing.assert_close(out, biased_addmm(*args))
    assert benchmarked == [2]  # no scorer applies to a CPU: Inductor's own autotuning
    assert diode_backend.stats()["fallbacks"] == {"no_model": 1}


def test_without_a_model_and_no_fallback_the_guess_is_aten(benchmarked):
    _, code = compile_code(
        biased_addmm, biased_inputs(), **DIODE, fast_autotune=True, diode_fallback_to_autotune=False
    )
    assert "extern_kernels.addmm(" in code and benchmarked == []


@pytest.mark.parametrize("fallback, expect_benchmarked", [(True, [2]), (False, [])])
def test_a_scorer_that_scores_nothing_leaves_the_choice_to_the_fallback_flag(
    blind_scorer, benchmarked, fallback, expect_benchmarked
):
    args = biased_inputs()
    out, code = compile_code(
        biased_addmm, args, **DIODE, fast_autotune=True, diode_fallback_to_autotune=fallback, diode_model=blind_scorer
    )
    torch.testing.assert_close(out, biased_addmm(*args))
    assert benchmarked == expect_benchmarked  # Inductor's own autotuning, or the ATen guess
    assert fallback or "extern_kernels.addmm(" in code
    assert diode_backend.stats()["fallbacks"] == {"no_scored_candidates": 1}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_every_gemm_op_goes_through_diode(dtype):
    x, w, b = torch.randn(16, 32, dtype=dtype), torch.randn(24, 32, dtype=dtype), torch.randn(24, dtype=dtype)
    p, q, r = torch.randn(3, 16, 32, dtype=dtype), torch.randn(3, 32, 8, dtype=dtype), torch.randn(3, 16, 8, dtype=dtype)
    linear = torch.nn.Linear(32, 24, dtype=dtype)
    cases = {
        "mm": (lambda a, c: a @ c, (x, w.t())),
        "addmm": (lambda s, a, c: torch.addmm(s, a, c), (b, x, w.t())),
        "bmm": (torch.bmm, (p, q)),
        "baddbmm": (torch.baddbmm, (r, p, q)),
        "F.linear": (F.linear, (x, w, b)),
        "nn.Linear": (linear, (x,)),
    }
    tolerance = {"atol": 1e-2, "rtol": 1e-2} if dtype != torch.float32 else {}
    for name, (fn, args) in cases.items():
        diode_backend.reset_stats()
        torch._dynamo.reset()
        with torch.no_grad():
            out, _ = compile_code(fn, args, **DIODE, fast_autotune=True, diode_model="example-bias-epilogue")
            torch.testing.assert_close(out, fn(*args), **tolerance, msg=name)
        stats = diode_backend.stats()
        assert stats["decisions"] >= 1, (name, stats)
        assert stats["fallbacks"] == {} and stats["errors"] == {}, (name, stats)


def test_unsupported_dtype_is_left_to_inductor(benchmarked):
    a, b = torch.randn(8, 8, dtype=torch.float64), torch.randn(8, 8, dtype=torch.float64)
    out, _ = compile_code(lambda x, y: x @ y, (a, b), **DIODE, diode_model="example-bias-epilogue")
    torch.testing.assert_close(out, a @ b)
    assert diode_backend.stats()["fallbacks"] == {"unsupported_dtype": 1}


def test_an_internal_error_falls_back_counts_and_logs_once(scorer_plugin, benchmarked, caplog):
    name = scorer_plugin(PreferScorer("aten::addmm", fail=True))
    args = biased_inputs()
    with caplog.at_level(logging.WARNING, logger="diode_backend"):
        for _ in range(2):
            torch._dynamo.reset()
            out, _ = compile_code(biased_addmm, args, **DIODE, fast_autotune=True, diode_model=name)
            torch.testing.assert_close(out, biased_addmm(*args))
    assert benchmarked == [2, 2]  # Inductor's own autotuning both times
    assert diode_backend.stats()["errors"] == {"ranking:RuntimeError": 2}
    assert len([r for r in caplog.records if "internal error" in r.getMessage()]) == 1


def test_strict_mode_raises_internal_errors(scorer_plugin):
    name = scorer_plugin(PreferScorer("aten::addmm", fail=True))
    with pytest.raises(Exception, match="scorer exploded"):
        compile_code(biased_addmm, biased_inputs(), **DIODE, diode_model=name, diode_strict=True)


def test_an_unknown_model_name_is_a_clear_error():
    with pytest.raises(Exception, match="diode_model='no-such-model': no such model"):
        compile_code(biased_addmm, biased_inputs(), **DIODE, diode_model="no-such-model")


def test_without_diode_in_the_backends_nothing_changes(benchmarked):
    compile_code(biased_addmm, biased_inputs(), max_autotune=True, max_autotune_gemm_backends="ATEN", fx_graph_cache=False)
    assert benchmarked == [2]
    assert diode_backend.stats()["decisions"] == 0 and diode_backend.stats()["fallbacks"] == {}


class RecordingChoices(torch._inductor.choices.InductorChoices):
    """A user's own choices class: records the GEMM groups it saw."""

    seen: list[str] = []

    def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
        RecordingChoices.seen.append(op_name)
        return super()._finalize_template_configs(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)

    def uuid(self):
        return "recording-choices"


@pytest.fixture
def user_choices():
    RecordingChoices.seen = []
    yield
    refresh_choices_handler()


def test_a_users_choices_class_composes_with_diode(user_choices, benchmarked):
    refresh_choices_handler()
    _, code = compile_code(
        biased_addmm, biased_inputs(), **DIODE, fast_autotune=True, diode_model="example-bias-epilogue",
        inductor_choices_class=diode_backend.with_diode(RecordingChoices),
    )
    assert "addmm" in RecordingChoices.seen  # the user's override ran
    assert "extern_kernels.bias_addmm(" in code and benchmarked == []  # and so did DIODE


def test_a_users_choices_class_without_diode_is_reported(user_choices, benchmarked, caplog):
    refresh_choices_handler()
    with caplog.at_level(logging.WARNING, logger="diode_backend"):
        compile_code(
            biased_addmm, biased_inputs(), **DIODE, fast_autotune=True, diode_model="example-bias-epilogue",
            inductor_choices_class=RecordingChoices,
        )
    assert "addmm" in RecordingChoices.seen and benchmarked == [2]
    assert diode_backend.stats()["fallbacks"] == {"choices_class_override": 1}
    assert any("with_diode" in r.getMessage() for r in caplog.records)


# -- what DIODE tells about its decisions -------------------------------------------------------


def _decision_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "diode_backend" and r.levelno == logging.INFO]


def test_each_gemm_decision_is_one_info_line(scorer_plugin, caplog):
    unsure = scorer_plugin(PreferScorer("aten::addmm", confidence=0.2))
    with caplog.at_level(logging.INFO, logger="diode_backend"):
        compile_code(biased_addmm, biased_inputs(), **DIODE, fast_autotune=True, diode_model="example-bias-epilogue")
        torch._dynamo.reset()
        compile_code(biased_addmm, biased_inputs(), **DIODE, fast_autotune=True, diode_model=unsure, diode_measure_ratio=3.0)
        torch._dynamo.reset()
        compile_code(biased_addmm, biased_inputs(), **DIODE, fast_autotune=True)
    measured = re.search(r"fastest (\S+) at ([0-9.]+) us", _decision_lines(caplog)[1])
    fastest, microseconds = measured.groups()
    assert fastest in ("aten::addmm", "aten::bias_addmm") and float(microseconds) > 0
    assert _decision_lines(caplog) == [
        "addmm 8x32x64 float32 row/row bias=row: aten::bias_addmm alone of 2 candidates, nothing benchmarked "
        "(confidence 1.00; model example-bias-epilogue, predicted)",
        "addmm 8x32x64 float32 row/row bias=row: DIODE measured 2 of 2 candidates (0 failed), fastest "
        f"{fastest} at {microseconds} us, predicted best aten::addmm "
        f"(confidence 0.20, under the threshold {OPTIONS_BY_NAME['diode_confidence_threshold'].default:g}; model {unsure}, predicted)",
        "addmm 8x32x64 float32 row/row bias=row: not ranked by DIODE (no_model): Inductor benchmarks 2 candidates",
    ]


def test_a_decision_read_from_the_prediction_cache_says_so(isolated_caches, caplog):
    options = {**DIODE, "fast_autotune": True, "diode_model": "example-bias-epilogue"}
    compile_code(biased_addmm, biased_inputs(), **options)
    default_cache(predicted.FOLDER).clear()  # else the stored pick answers, nothing ranked
    torch._dynamo.reset()
    with caplog.at_level(logging.INFO, logger="diode_backend"):
        compile_code(biased_addmm, biased_inputs(), **options)
    (line,) = _decision_lines(caplog)
    assert line.endswith("(confidence 1.00; model example-bias-epilogue, from the prediction cache)")


_LOGGED_COMPILE = """
import torch, diode_backend
{enable}
bias, x, w = torch.randn(32), torch.randn(8, 64), torch.randn(64, 32)
torch.compile(lambda b, x, w: torch.addmm(b.expand(8, 32), x, w), options={{
    "max_autotune": True, "max_autotune_gemm_backends": "DIODE", "fast_autotune": True,
    "diode_model": "example-bias-epilogue", "fx_graph_cache": False}})(bias, x, w)
print(diode_backend.get_prediction_stats()["total_predictions"])
"""


@pytest.mark.parametrize(
    "enable, env, prefix",
    [
        ('diode_backend.set_log_level("INFO")', {}, "INFO:diode_backend:"),
        ("", {"TORCH_LOGS": "diode_backend"}, "] "),  # torch's own format: time, file and line first
    ],
)
def test_decisions_are_printed_without_any_logging_configuration(isolated_caches, enable, env, prefix):
    done = subprocess.run(
        [sys.executable, "-c", _LOGGED_COMPILE.format(enable=enable)], env={**os.environ, **env},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = "addmm 8x32x64 float32 row/row bias=row: aten::bias_addmm alone of 2 candidates, nothing benchmarked"
    assert f"{prefix}{line}" in done.stderr
    quiet = subprocess.run([sys.executable, "-c", _LOGGED_COMPILE.format(enable="")], capture_output=True, text=True, timeout=300)
    assert quiet.stdout == "1\n" and line not in quiet.stderr  # decided, not shown: the default level is WARNING


def test_set_log_level_refuses_an_unknown_level():
    with pytest.raises(ValueError, match="Unknown level: 'LOUD'"):
        diode_backend.set_log_level("loud")


def test_hook_tracing_prints_without_any_logging_configuration():
    done = subprocess.run(
        [sys.executable, "-m", "diode_backend", "models", "--hardware", "h100"], env={**os.environ, "DIODE_TRACE_HOOKS": "1"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "DEBUG:diode_backend.plugins:  diode_register_scorers [hook]" in done.stderr
    assert "DEBUG:diode_backend.plugins:  finish diode_known_hardware -->" in done.stderr


def test_prediction_stats_and_profiles_count_real_compiles():
    options = {**DIODE, "fast_autotune": True}
    with diode_backend.profile_predictions() as picked:
        compile_code(biased_addmm, biased_inputs(), **options, diode_model="example-bias-epilogue")
        assert picked == {}  # filled when the block ends
    nothing_measured = {"measured_decisions": 0, "deferred_measurements": 0, "measured_decision_hits": 0, "measure_failed_candidates": 0}
    nothing_stored = {**nothing_measured, "predicted_decisions": 0, "predicted_decision_hits": 0}
    stored = {**nothing_stored, "predicted_decisions": 1}  # the confident pick, remembered
    assert picked == {"total_predictions": 1, "avg_confidence": 1.0, "fallbacks": 0, **stored}
    torch._dynamo.reset()
    with diode_backend.profile_predictions() as unranked:
        compile_code(biased_addmm, biased_inputs(), **options)  # no model for a CPU
    assert unranked == {"total_predictions": 0, "avg_confidence": None, "fallbacks": 1, **nothing_stored}
    assert diode_backend.get_prediction_stats() == {
        "total_predictions": 1, "avg_confidence": 1.0, "fallbacks": 1, **stored
    }


@pytest.mark.parametrize("pick", ["triton::mm", "aten::addmm"])
def test_a_one_element_bias_reaches_the_pick_as_a_view_not_a_copy(triton_sources, scorer_plugin, pick):
    """A Linear to one output (N = 1): Inductor copies its one-element bias to the output's shape
    for the Triton group (on torch 2.11 the ATen one too); DIODE hands its pick the bias viewed
    instead, so no copy kernel runs. Triton's templates on the CPU (``cpu_backend="triton"``)
    are generated, not compiled: no Triton CPU backend here."""
    from torch._inductor.utils import get_code

    name = scorer_plugin(PreferScorer(pick))
    options = {**DIODE, "fast_autotune": True, "diode_fallback_to_autotune": False, "cpu_backend": "triton"}
    torch._dynamo.reset()
    with config.patch(**options, diode_model=name):
        (code, *_) = get_code(torch.compile(torch.addmm), torch.randn(1), torch.randn(5, 64), torch.randn(64, 1))
    assert "triton_poi" not in code, code
    # the ATen pick reads the bias itself on torch 2.13, its view on 2.11
    assert ("triton_tem_" if pick == "triton::mm" else "extern_kernels.addmm(") in code, code
    assert diode_backend.stats()["single_pick"] == 1
