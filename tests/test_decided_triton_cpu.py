"""A warm compile whose stored winner is a Triton tile, in real torch.compile on the CPU.

With ``cpu_backend="triton"`` Inductor offers its Triton GEMM templates on the CPU, over the
whole EXHAUSTIVE space that DIODE ranks. No Triton CPU backend is installed here, so the kernels
are generated but not compiled (``get_code``), and the backend hash in the kernel source is a
stand-in. The stored winner sits in the middle of its template's configs: a warm compile scales
only configs that could become it (its stages and group), and of those converts only the
winner's own.
"""

from __future__ import annotations

import re

import pytest
import torch
from torch._inductor import config
from torch._inductor.choices import InductorChoices
from torch._inductor.utils import get_code

import diode_backend
from diode_backend import measured, predicted, registry
from diode_backend.inductor import group_configs
from diode_backend.problem import KIND_TRITON, KernelConfig
from diode_backend.scorer import Prediction
from test_compile_cpu import DIODE, refresh_choices_handler

SURE = {**DIODE, "fast_autotune": True, "cpu_backend": "triton"}


class MiddleTileScorer:
    """Predicts the middle Triton config it is shown fastest, sure of it; keeps what it was shown."""

    name = identity = "middle-tile"

    def __init__(self) -> None:
        self.shown: list = []

    def predict(self, problem, configs, hardware):
        self.shown = list(configs)
        tiles = [i for i, c in enumerate(configs) if c.kind == KIND_TRITON]
        best = tiles[len(tiles) // 2] if tiles else 0
        return Prediction(tuple(1.0 if i == best else 2.0 for i in range(len(configs))), 1.0)


@pytest.fixture
def middle_tile(triton_sources, scorer_plugin):
    """The registered MiddleTileScorer; Triton kernel sources generated without a Triton driver."""
    scorer = MiddleTileScorer()
    scorer_plugin(scorer)
    return scorer


@pytest.fixture
def generated(monkeypatch):
    """Per compile: how many KernelTemplateChoices Inductor generated (``"ktcs"``) and DIODE
    converted to KernelConfigs (``"converted"``)."""
    counts = {"ktcs": 0, "converted": 0}
    finalize, convert = InductorChoices._finalize_template_configs, group_configs.config_from_choice

    def counting_finalize(self, *args, **kwargs):
        ktcs = finalize(self, *args, **kwargs)
        counts["ktcs"] += len(ktcs)
        return ktcs

    def counting_convert(*args):
        counts["converted"] += 1
        return convert(*args)

    monkeypatch.setattr(InductorChoices, "_finalize_template_configs", counting_finalize)
    monkeypatch.setattr(group_configs, "config_from_choice", counting_convert)
    return counts


def compile_mm(counts: dict) -> list[str]:
    """A new process's compile of one mm: the sources of the kernels it generated; ``counts``
    start from zero."""
    registry.clear()
    diode_backend.reset_stats()
    counts.update(ktcs=0, converted=0)
    with config.patch(**SURE, diode_model=MiddleTileScorer.name):
        (code, *_) = get_code(torch.compile(torch.mm), torch.randn(64, 128), torch.randn(128, 64))
    return re.findall(r"async_compile\.triton\('\w+', '{3}(.*?)'{3}", code, re.DOTALL)


@pytest.mark.parametrize("decision", ["predicted", "measured"])
def test_a_warm_compile_generates_the_winners_template_only_up_to_the_winner(middle_tile, generated, decision):
    cold = compile_mm(generated)
    (pick,) = predicted.stored_decisions()
    tiles = [c for c in middle_tile.shown if c.template == pick.winner.template]
    assert pick.winner == tiles[len(tiles) // 2] and len(cold) == 1
    assert f"BLOCK_M : tl.constexpr = {pick.winner.block_m}" in cold[0]
    assert generated == {"ktcs": len(middle_tile.shown), "converted": len(middle_tile.shown)}  # the ATen kernel too
    if decision == "measured":  # a measured decision answers before a predicted one
        measured.remember(measured.MeasuredDecision(pick.problem, pick.hardware, (pick.winner,), (5.0,), pick.space))
    warm = compile_mm(generated)
    assert diode_backend.stats()["counters"] == {f"{decision}_decision_hits": 1}
    # only configs that could become the winner are scaled, and of those only the winner's own
    # becomes template kwargs, a KernelTemplateChoice and a KernelConfig
    assert generated == {"ktcs": 1, "converted": 1} and tiles.index(pick.winner) > 0
    assert warm == cold  # the same kernel


class RebuildingChoices(InductorChoices):
    """A user's choices class that builds its groups' KernelTemplateChoices itself (as Inductor's
    LookupTableChoices does for the configs its table names) instead of taking the generators."""

    def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
        overrides = kwarg_overrides or {}
        return [ktc for t in templates for ktc in self.get_ktc(kernel_inputs, t, op_name, overrides.get(t.uid, {}))]

    def uuid(self):
        return "rebuilding-choices"


def test_the_winner_is_found_among_choices_a_users_class_built_itself(middle_tile, generated, monkeypatch):
    cold = compile_mm(generated)
    (pick,) = predicted.stored_decisions()
    refresh_choices_handler()
    monkeypatch.setitem(SURE, "inductor_choices_class", diode_backend.with_diode(RebuildingChoices))
    try:
        warm = compile_mm(generated)
    finally:
        refresh_choices_handler()
    assert diode_backend.stats()["counters"] == {"predicted_decision_hits": 1}
    tiles = [c for c in middle_tile.shown if c.template == pick.winner.template]
    could_become = [c for c in tiles if (c.num_stages, c.group_m) == (pick.winner.num_stages, pick.winner.group_m)]
    assert pick.winner in could_become and generated["converted"] <= len(could_become) < len(tiles)
    assert warm == cold


def test_a_failed_narrowing_still_compiles_the_winner_and_is_counted(middle_tile, generated, monkeypatch):
    from diode_backend.inductor import compat

    cold = compile_mm(generated)
    (pick,) = predicted.stored_decisions()
    tiles = [c for c in middle_tile.shown if c.template == pick.winner.template]

    class NoHeuristic(Exception):
        """An error of its own: errors are logged once per place and type in a process."""

    def broken(*args):
        raise NoHeuristic("no heuristic here")

    monkeypatch.setattr(compat, "configs_narrowed", broken)
    warm = compile_mm(generated)
    stats = diode_backend.stats()
    assert stats["counters"]["predicted_decision_hits"] == 1 and stats["errors"] == {"ranking:NoHeuristic": 1}
    assert generated["converted"] == tiles.index(pick.winner) + 1  # the whole list walked, up to the winner
    assert warm == cold


def test_a_stored_winner_no_longer_offered_has_its_group_ranked_on_every_config(middle_tile, generated):
    import dataclasses

    cold = compile_mm(generated)
    (pick,) = predicted.stored_decisions()
    shown_cold = list(middle_tile.shown)
    gone = dataclasses.replace(pick.winner, block_m=4096, block_n=4096)  # its stages and group, a tile never generated
    measured.remember(measured.MeasuredDecision(pick.problem, pick.hardware, (gone,), (5.0,), pick.space))
    middle_tile.shown = []
    warm = compile_mm(generated)
    # ranked on the winner's whole template (the only one a decided GEMM asks for), not the narrowed list
    assert middle_tile.shown == [c for c in shown_cold if c.template == gone.template]
    assert diode_backend.stats()["errors"] == {} and warm == cold


def test_a_finished_config_is_the_winners_only_with_its_tile_stages_warps_and_group():
    from types import SimpleNamespace

    winner = KernelConfig(KIND_TRITON, "triton::mm", 64, 32, 64, num_stages=4, num_warps=4, group_m=8)
    search = group_configs.WinnerSearch(winner)

    def finished(num_warps=4, **kwargs):  # as triton.Config: kwargs, num_stages, num_warps
        return SimpleNamespace(kwargs={"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 64, "GROUP_M": 8, **kwargs}, num_stages=4, num_warps=num_warps)

    assert search.is_winner(finished())
    assert not search.is_winner(finished(num_warps=2)) and not search.is_winner(finished(BLOCK_K=32))
    assert not search.is_winner(finished(GROUP_M=4))
    no_group = finished()
    del no_group.kwargs["GROUP_M"]  # the heuristic gives it its default later: not ruled out here
    assert search.is_winner(no_group) and search.is_winner(object())  # an unknown kind is kept for the walk to check
