"""Shared test fixtures. Tests run real torch.compile on the CPU; GPU tests are marked ``gpu``
and skipped without CUDA."""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

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


BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def benchmark_scripts(tmp_path, monkeypatch):
    """Loads scripts of ``benchmarks/`` by name as modules, in order (a script may import one
    loaded before it); their import-time cache folders are the test's."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("DIODE_CACHE_DIR", str(tmp_path / "diode"))
    monkeypatch.syspath_prepend(str(BENCHMARKS))

    def load(*names: str) -> list:
        modules = []
        for name in names:
            spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            monkeypatch.setitem(sys.modules, name, module)
            spec.loader.exec_module(module)
            modules.append(module)
        return modules

    return load


@pytest.fixture
def e2e(benchmark_scripts):
    """``benchmarks/e2e_validation.py`` as a module; its import-time cache folders are the test's."""
    (module,) = benchmark_scripts("e2e_validation")
    return module


@pytest.fixture
def e2e_results(benchmark_scripts):
    """``benchmarks/e2e_results.py``: what an e2e run's rows add up to."""
    (module,) = benchmark_scripts("e2e_results")
    return module


@pytest.fixture
def e2e_warm(benchmark_scripts):
    """``benchmarks/e2e_warm.py``: an e2e run's warm passes."""
    (module,) = benchmark_scripts("e2e_warm")
    return module


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


#: a runtime loop bound, as every collector kernel has
_INTERPRETER_PROBE = textwrap.dedent(
    """
    import torch, triton, triton.language as tl
    @triton.jit
    def count(out, n):
        total = 0
        for i in range(0, tl.cdiv(n, 2)):
            total += 1
        tl.store(out, total)
    out = torch.zeros(1, dtype=torch.int32)
    count[(1,)](out, 5)
    assert out.item() == 3
    """
)


@functools.cache
def _interpreter_unusable() -> str | None:
    """Why Triton's interpreter cannot run the collector's kernels here, or None. Before
    triton-lang/triton#9171 was fixed (after Triton 3.6) it turns a runtime loop bound into an int
    through numpy, which numpy 2.4 refuses."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    probe = subprocess.run([sys.executable, "-c", _INTERPRETER_PROBE], env=env, capture_output=True, text=True, timeout=120)
    if probe.returncode == 0:
        return None
    if "only 0-dimensional arrays can be converted" in probe.stderr:
        return "this Triton's interpreter cannot loop over a runtime bound with this numpy (triton-lang/triton#9171)"
    raise AssertionError(probe.stderr[-3000:])


@pytest.fixture
def triton_interpreter():
    """For tests whose Triton kernels run in Triton's interpreter: skipped where it cannot run them."""
    reason = _interpreter_unusable()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def isolated_caches(tmp_path, monkeypatch):
    """Inductor's and DIODE's on-disk caches in a temporary folder."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("DIODE_CACHE_DIR", str(tmp_path / "diode"))
    return tmp_path


@pytest.fixture
def triton_sources(isolated_caches, monkeypatch):
    """Triton kernel sources generated without a Triton driver (``cpu_backend="triton"`` on a
    machine with no Triton CPU backend), in this test's caches: the backend hash they embed is a
    stand-in."""
    import torch.utils._triton

    monkeypatch.setattr(torch.utils._triton, "triton_hash_with_backend", lambda: "no-triton-backend-here")


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
