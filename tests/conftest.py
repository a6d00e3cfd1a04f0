"""Shared test fixtures. Tests run real torch.compile on the CPU; GPU tests are marked ``gpu``
and skipped without CUDA."""

from __future__ import annotations

import pytest
import torch
from torch._inductor.select_algorithm import add_feedback_saver, clear_feedback_savers

import diode_backend
from diode_backend import catalog, hookimpl, plugins
from diode_backend.scorer import Prediction, ScorerEntry


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_diode_state(tmp_path, monkeypatch):
    """Each test starts with empty stats, freshly resolved plugins, a reset Dynamo and its own
    prediction cache (never the user's)."""
    monkeypatch.setenv("DIODE_CACHE_DIR", str(tmp_path / "diode-cache"))
    diode_backend.reset_stats()
    catalog.clear()
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def isolated_caches(tmp_path, monkeypatch):
    """Inductor's and DIODE's on-disk caches in a temporary folder."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("DIODE_CACHE_DIR", str(tmp_path / "diode"))
    return tmp_path


@pytest.fixture
def benchmarked():
    """Lists the number of candidates Inductor benchmarked, per autotuned op."""
    sizes: list[int] = []
    add_feedback_saver(lambda timings, *args: sizes.append(len(timings)))
    yield sizes
    clear_feedback_savers()


@pytest.fixture
def scorer_plugin():
    """Register throwaway scorers by name for one test; unregistered afterwards."""
    registered = []

    def register(scorer):
        class Plugin:
            @hookimpl
            def diode_register_scorers(self, register):
                register(ScorerEntry(scorer.name, lambda: scorer, lambda hw: False, identity=scorer.identity))

        plugin = Plugin()
        plugins.get_plugin_manager().register(plugin)
        registered.append(plugin)
        return scorer.name

    yield register
    for plugin in registered:
        plugins.get_plugin_manager().unregister(plugin)


class _BlindScorer:
    """A scorer that scores nothing (every prediction NaN)."""

    name = identity = "blind"

    def predict(self, problem, configs, hardware):
        return Prediction(tuple(float("nan") for _ in configs), None)


@pytest.fixture
def blind_scorer(scorer_plugin):
    """Registers the scorer that scores nothing; the fixture's value is its name."""
    return scorer_plugin(_BlindScorer())
