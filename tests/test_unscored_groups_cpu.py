"""An op with a template group its model scores none of, in real torch.compile on the CPU.

With ``cpu_backend="triton"`` a biased addmm asks Inductor for two groups of choices: its ATen
calls (``addmm``, ``bias_addmm``) and its Triton template's tiles (torch 2.13 in a call each,
2.11 in one call). The model here is a real
model folder whose manifest names the ``aten`` kind alone, so the Triton group has no scored
candidate, as the shipped H100 model's (``aten``, ``triton``) leaves Inductor's decompose-k
unscored. Such a group joins the op's ranking unscored: never kept alone, measured with the rest
when DIODE measures. Only when no group of the op is scored does the op fall back as a whole.

No Triton CPU backend is installed, so Triton kernels are generated, not compiled, and DIODE's
measurement, which would run them, is replaced by one that records what it was given.
"""

from __future__ import annotations

import logging
import math
import re

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import get_code

import diode_backend
from diode_backend import measured, predicted, registry
from diode_backend.inductor import benchmarked_choices, compat
from diode_backend.inductor.choices import DiodeChoicesMixin
from diode_backend.inductor.group_configs import MARK
from diode_backend.inductor.measure import Measurement, PendingMeasurement
from diode_backend.model.entries import manifest_entry
from diode_backend.problem import KIND_ATEN, KIND_TRITON, KernelConfig
from test_compile_cpu import DIODE, biased_addmm, biased_inputs

from model_files import write_model_folder

TRITON_ON_CPU = {**DIODE, "fast_autotune": True, "cpu_backend": "triton"}


@pytest.fixture(autouse=True)
def _triton_sources(triton_sources):
    """Every test here generates Triton kernel sources without a Triton driver."""


@pytest.fixture
def aten_model(tmp_path):
    """A model folder whose manifest says it learnt ATen kernels alone; its path is the value."""
    return str(write_model_folder(tmp_path / "aten-only", "aten-only", hardware=(), kinds=("aten",)))


@pytest.fixture
def measuring(monkeypatch):
    """DIODE's timing of the choices it compiled replaced: the marks of the choices it is given
    are recorded (one list per measurement), the first Triton tile is timed fastest (5 us), the
    ATen calls at 10 and 12 us, the other tiles as failed."""
    given: list[list] = []

    def finish(self, *call):
        marks = [c.annotations[MARK] for c in self.choices]
        given.append(marks)
        tiles = [i for i, m in enumerate(marks) if m.config.kind == KIND_TRITON]
        atens = iter((10.0, 12.0))
        return Measurement(tuple(
            next(atens) if m.config.kind == KIND_ATEN else 5.0 if i == tiles[0] else math.inf for i, m in enumerate(marks)
        ))  # fmt: skip

    monkeypatch.setattr(PendingMeasurement, "finish", finish)
    return given


def compile_addmm(**options) -> str:
    """A new process's compile of the biased addmm: the generated code."""
    registry.clear()
    torch._dynamo.reset()
    with config.patch(**TRITON_ON_CPU, **options):
        (code, *_) = get_code(torch.compile(biased_addmm), *biased_inputs())
    return code


def triton_kernels(code: str) -> list[str]:
    return re.findall(r"async_compile\.triton\('\w+', '{3}(.*?)'{3}", code, re.DOTALL)


@pytest.mark.parametrize(
    "options",
    [{"diode_confidence_threshold": 0.0}, {"diode_confidence_threshold": 1.0, "diode_fallback_to_autotune": False}],
    ids=["confident", "no-fallback"],
)
def test_the_single_pick_is_the_scored_best_never_an_unscored_candidate(aten_model, measuring, benchmarked, options):
    code = compile_addmm(diode_model=aten_model, **options)
    stats = diode_backend.stats()
    assert stats["fallbacks"] == {} and stats["errors"] == {}  # not a no_scored_candidates fallback
    assert stats["single_pick"] == 1 and stats["picks_by_kind"] == {"aten": 1}
    assert stats["candidates_seen"] > 2  # the Triton group's tiles were candidates
    assert benchmarked == [] and measuring == [] and triton_kernels(code) == []
    (pick,) = predicted.stored_decisions()
    aten = [KernelConfig(KIND_ATEN, "aten::addmm"), KernelConfig(KIND_ATEN, "aten::bias_addmm")]
    times = manifest_entry(aten_model).load().predict(pick.problem, aten, pick.hardware).times_us
    assert pick.winner == aten[times.index(min(times))]  # the predicted best of the scored candidates
    assert f"extern_kernels.{pick.winner.template.removeprefix('aten::')}(" in code


def test_a_measuring_selection_includes_the_unscored_and_remembers_an_unscored_winner(
    aten_model, measuring, benchmarked, caplog
):
    with caplog.at_level(logging.INFO, logger="diode_backend"):
        code = compile_addmm(diode_model=aten_model, diode_confidence_threshold=1.0)
    ((*given,),) = measuring
    kinds = [m.config.kind for m in given]
    assert kinds.count("aten") == 2 and kinds.count("triton") > 1  # both ATen calls and the tiles
    assert all(math.isnan(m.time_us) for m in given if m.config.kind == "triton")
    (line,) = [r.getMessage() for r in caplog.records if "DIODE measured" in r.getMessage()]
    assert line.endswith(f"predicted; {kinds.count('triton')} unscored)"), line
    stats = diode_backend.stats()
    assert stats["fallbacks"] == {"low_confidence": 1} and stats["errors"] == {} and benchmarked == []
    assert stats["counters"]["measured_decisions"] == 1 and stats["picks_by_kind"] == {"triton": 1}
    (decision,) = measured.stored_decisions()
    # the confidence is the ATen group's: the unscored group says nothing about the pick
    aten = [m.config for m in given if m.config.kind == "aten"]
    confidence = manifest_entry(aten_model).load().predict(decision.problem, aten, decision.hardware).confidence
    assert stats["mean_confidence"] == pytest.approx(confidence) and 0 < confidence < 1
    tile = next(m.config for m in given if m.config.kind == "triton")
    assert decision.winner == tile and len(decision.configs) == len(given)  # the unscored winner, remembered
    (kernel,) = triton_kernels(code)
    assert f"BLOCK_M : tl.constexpr = {tile.block_m}" in kernel
    # a later compile takes it, measuring nothing (the ATen group, asked for first, is ranked
    # from the prediction cache, then dropped)
    diode_backend.reset_stats()
    warm = compile_addmm(diode_model=aten_model, diode_confidence_threshold=1.0)
    counters = diode_backend.stats()["counters"]
    assert counters["measured_decision_hits"] == 1 and "measured_decisions" not in counters
    assert len(measuring) == 1 and triton_kernels(warm) == [kernel] and benchmarked == []


def test_the_scheduler_is_given_the_measured_tile_and_the_aten_calls_never_faster(aten_model, measuring, monkeypatch):
    """With ``cpu_backend="triton"`` Inductor defers the choice to its scheduler (a
    ``MultiTemplateBuffer``): the timings DIODE gives it hold the measured winner (5 us, in
    milliseconds), both ATen calls as infinite, and none of the other tiles, so an epilogue
    fusion the scheduler weighs can only be one into DIODE's winner."""
    given: list[dict] = []
    defer = compat.defer_timings

    def spy(result, timings):
        return defer(result, lambda hint, inductor: given.append(timings(hint, inductor)) or given[-1])

    monkeypatch.setattr(compat, "defer_timings", spy)
    code = compile_addmm(diode_model=aten_model, diode_confidence_threshold=1.0)
    ((*kept,),) = measuring
    (timings,) = given
    kinds = sorted((type(choice).__name__, ms) for choice, ms in timings.items())
    assert kinds == [("ExternKernelCaller", math.inf), ("ExternKernelCaller", math.inf), ("TritonTemplateCaller", 0.005)]
    assert len(kept) > len(timings) and diode_backend.stats()["counters"]["deferred_measurements"] == 1
    (tile,) = [choice for choice in timings if type(choice).__name__ == "TritonTemplateCaller"]
    (kernel,) = triton_kernels(code)
    assert f"BLOCK_M : tl.constexpr = {tile.annotations[MARK].config.block_m}" in kernel


@pytest.mark.parametrize("fallback", [True, False])
def test_with_no_group_scored_the_op_still_falls_back_as_a_whole(blind_scorer, measuring, monkeypatch, fallback):
    handed: list[tuple[set[str], list[str]]] = []  # per call: the templates asked, the kinds DIODE
    # hands Inductor (Inductor's own autotuning then drops the tiles that fail to compile
    # without a Triton CPU backend on torch 2.11)
    ranked = DiodeChoicesMixin.get_template_configs

    def spy(self, kernel_inputs, templates, *args, **kwargs):
        templates = list(templates)
        choices = list(ranked(self, kernel_inputs, templates, *args, **kwargs))
        kinds = ["aten" if type(c).__name__ == "ExternKernelCaller" else "triton" for c in choices]
        handed.append(({t.uid.split("::")[0] for t in templates}, kinds))
        return choices

    monkeypatch.setattr(DiodeChoicesMixin, "get_template_configs", spy)
    compile_addmm(diode_model=blind_scorer, diode_fallback_to_autotune=fallback)
    stats = diode_backend.stats()
    assert stats["fallbacks"] == {"no_scored_candidates": 1} and stats["decisions"] == 0 and measuring == []
    # what step 1 keeps goes to Inductor's autotuning: the ATen calls (or, without the fallback,
    # the op's own), and the Triton tiles unless the call that asks for them also asks for an
    # ATen call to guess (torch 2.13 asks for each template group apart, 2.11 for all at once)
    kinds = [kind for _, given in handed for kind in given]
    tiles_alone = any(asked == {"triton"} for asked, _ in handed)
    assert kinds.count("aten") == (2 if fallback else 1)
    assert kinds.count("triton") > 1 if fallback or tiles_alone else kinds.count("triton") == 0
