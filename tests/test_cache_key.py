"""The diode options and the model are part of Inductor's compile cache key."""

from __future__ import annotations

import torch
from torch._dynamo.utils import counters
from torch._inductor import config

from diode_backend import hookimpl, plugins
from diode_backend.scorer import Prediction, ScorerEntry

# caches on whatever an earlier test left set (e2e_validation's main turns force_disable_caches on)
DIODE = {"max_autotune": True, "max_autotune_gemm_backends": "DIODE", "fx_graph_cache": True, "force_disable_caches": False}


def gemm(a, b):
    return (a @ b).relu()


def compile_once(**options) -> str:
    """Compile ``gemm`` from scratch with FX graph caching on; 'hit' or 'miss'."""
    torch._dynamo.reset()
    counters.clear()
    with config.patch(**DIODE, **options):
        torch.compile(gemm)(torch.randn(16, 16), torch.randn(16, 16))
    hits, misses = counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]
    assert hits + misses == 1
    return "hit" if hits else "miss"


def test_compiles_differing_only_in_a_diode_option_never_share_an_artifact(isolated_caches):
    assert compile_once(diode_top_k=3) == "miss"
    assert compile_once(diode_top_k=3) == "hit"
    assert compile_once(diode_top_k=4) == "miss"
    assert compile_once(diode_top_k=3, fast_autotune=True) == "miss"
    assert compile_once(diode_top_k=3, diode_confidence_threshold=0.5) == "miss"
    assert compile_once(diode_top_k=3) == "hit"


class VersionedScorer:
    """The same name, two versions: like a model file replaced on disk."""

    name = "versioned"

    def __init__(self, identity):
        self.identity = identity

    def predict(self, problem, configs, hardware):
        return Prediction(tuple(1.0 for _ in configs), 1.0)


def register_versioned(identity):
    class Plugin:
        @hookimpl
        def diode_register_scorers(self, register):
            register(ScorerEntry("versioned", lambda: VersionedScorer(identity), lambda hw: False, identity=identity))

    plugin = Plugin()
    plugins.get_plugin_manager().register(plugin)
    return plugin


def test_a_different_model_never_shares_an_artifact(isolated_caches):
    pm = plugins.get_plugin_manager()
    first = register_versioned("v1")
    try:
        assert compile_once(diode_model="versioned") == "miss"
        assert compile_once(diode_model="versioned") == "hit"
    finally:
        pm.unregister(first)
    second = register_versioned("v2")
    try:
        assert compile_once(diode_model="versioned") == "miss"
    finally:
        pm.unregister(second)
    assert compile_once(diode_model="example-bias-epilogue") == "miss"
