"""A Triton choice DIODE hands Inductor alone is never benchmarked, so Inductor writes its
benchmark module but does not load it, in real torch.compile on the CPU (``cpu_backend="triton"``,
as in test_decided_triton_cpu.py: kernels generated, not compiled). Whatever uses the module
later loads it from the file, as Inductor's benchmark request always does.
"""

from __future__ import annotations

import os
import re
import types

import pytest
from torch._inductor import codecache, select_algorithm
from torch._inductor.codecache import PyCodeCache

import diode_backend
from diode_backend import measured, predicted
from diode_backend.inductor import compat
from diode_backend.inductor.convert import config_from_choice
from test_decided_triton_cpu import compile_mm, generated, middle_tile  # noqa: F401 (fixtures)

#: a benchmark module's kernel is named for its template (``triton_mm``), a compiled graph's
#: kernels for the graph (``triton_tem_fused_mm_0``)
_BENCHMARK_KERNEL = re.compile(r"^def triton_(?!tem_)\w+\(", re.MULTILINE)


@pytest.fixture
def loads(monkeypatch):
    """The modules executed (``PyCodeCache`` loads that were not in its memory), by path, and
    the Triton template choices Inductor turned into its graph's node (the ones it got alone)."""
    seen = {"paths": [], "lone": []}
    reload, output_node = codecache._reload_python_module, select_algorithm.TritonTemplateCaller.output_node

    def counting_reload(key, path, *args, **kwargs):
        seen["paths"].append(path)
        return reload(key, path, *args, **kwargs)

    def recording_output_node(self):
        seen["lone"].append(self)
        return output_node(self)

    monkeypatch.setattr(codecache, "_reload_python_module", counting_reload)
    monkeypatch.setattr(select_algorithm.TritonTemplateCaller, "output_node", recording_output_node)
    return seen


def benchmark_modules(paths: list[str]) -> list[str]:
    out = []
    for path in paths:
        with open(path) as f:
            if _BENCHMARK_KERNEL.search(f.read()):
                out.append(path)
    return out


@pytest.mark.parametrize("decision", ["predicted", "measured"])
def test_a_warm_compile_hands_inductor_the_stored_winner_without_loading_its_module(middle_tile, generated, loads, decision):
    cold = compile_mm(generated)
    (pick,) = predicted.stored_decisions()
    (cold_choice,) = loads["lone"]
    assert benchmark_modules(loads["paths"]) == []  # a pick kept alone on a cold compile too
    if decision == "measured":
        measured.remember(measured.MeasuredDecision(pick.problem, pick.hardware, (pick.winner,), (5.0,), pick.space))
    loads.update(paths=[], lone=[])
    warm = compile_mm(generated)
    assert diode_backend.stats()["counters"] == {f"{decision}_decision_hits": 1}
    (choice,) = loads["lone"]
    ktc = choice.annotations["ktc"]
    assert config_from_choice(ktc.template.uid, ktc.params.to_kwargs()) == pick.winner
    assert generated == {"ktcs": 1, "converted": 1}  # of the template's configs only the winner's became kwargs
    assert loads["paths"] == [] and warm == cold  # nothing executed, the same kernel
    # the module (the cold compile's code) was written where loading it would have put it, and
    # loads from there on use
    assert choice.bmreq.module_cache_key == cold_choice.bmreq.module_cache_key
    assert os.path.isfile(choice.bmreq.module_path) and choice.bmreq.module_cache_key in choice.bmreq.module_path
    module = PyCodeCache.load_by_key_path(choice.bmreq.module_cache_key, choice.bmreq.module_path)
    assert hasattr(module, choice.bmreq.kernel_name) and benchmark_modules(loads["paths"]) == [choice.bmreq.module_path]


def test_the_group_search_without_a_winner_loads_the_ranked_choices_as_before(middle_tile, generated, loads):
    import dataclasses

    compile_mm(generated)
    (pick,) = predicted.stored_decisions()
    gone = dataclasses.replace(pick.winner, block_m=4096, block_n=4096)  # never generated today
    measured.remember(measured.MeasuredDecision(pick.problem, pick.hardware, (gone,), (5.0,), pick.space))
    loads.update(paths=[], lone=[])
    compile_mm(generated)  # the group is ranked anew: the model's confident pick, alone
    (choice,) = loads["lone"]
    ktc = choice.annotations["ktc"]
    assert config_from_choice(ktc.template.uid, ktc.params.to_kwargs()) == pick.winner
    assert benchmark_modules(loads["paths"]) == []  # the narrowed pass generated nothing to load


def test_a_module_that_cannot_be_left_unloaded_is_loaded_as_before_and_counted(middle_tile, generated, loads, monkeypatch):
    cold = compile_mm(generated)

    class NoStandIn(Exception):
        """An error of its own: errors are logged once per place and type in a process."""

    def broken(*args):
        raise NoStandIn("no stand-in module")

    monkeypatch.setattr(compat, "UnloadedModule", broken)
    loads.update(paths=[], lone=[])
    warm = compile_mm(generated)
    stats = diode_backend.stats()
    assert stats["counters"] == {"predicted_decision_hits": 1} and stats["errors"] == {"unloaded_module:NoStandIn": 1}
    (choice,) = loads["lone"]
    assert benchmark_modules(loads["paths"]) == [choice.bmreq.module_path] and warm == cold


def test_template_modules_are_left_unloaded_only_inside_a_scope_after_it_is_asked(isolated_caches):
    """The shim alone, on a stand-in ``select_algorithm``: ``load`` is Inductor's except between
    ``leave_template_modules_unloaded`` and the end of its scope."""
    fake = types.SimpleNamespace(PyCodeCache=PyCodeCache)
    compat.install_unloaded_template_modules(fake)
    compat.install_unloaded_template_modules(fake)  # idempotent
    deferring = fake.PyCodeCache
    assert deferring.__bases__ == (PyCodeCache,)
    code = "def get_args():\n    return 'loaded'\n"
    key, path = PyCodeCache.write(code, "diode-test")
    failures = []
    with compat.template_loads_scope():
        assert not isinstance(deferring.load(code, "diode-test"), compat.UnloadedModule)
        compat.leave_template_modules_unloaded(failures.append)
        module = deferring.load(code, "diode-test")
        assert isinstance(module, compat.UnloadedModule) and (module.key, module.__file__) == (key, path)
        with compat.template_loads_scope():  # a nested scope starts loading again
            assert not isinstance(deferring.load(code, "diode-test"), compat.UnloadedModule)
        assert isinstance(deferring.load(code, "diode-test"), compat.UnloadedModule)
    assert not isinstance(deferring.load(code, "diode-test"), compat.UnloadedModule)
    assert module.get_args() == "loaded" and failures == []  # another attribute loads the module
