"""The version shims, exercised on the installed torch (2.13 here, 2.11 on the GPU machine)."""

from __future__ import annotations

from torch._inductor import config

from diode_backend.inductor.backends import candidate_backends
from diode_backend.inductor.compat import configs_narrowed, make_config_entry, mark_config_dirty, set_in_code


def test_a_made_entry_behaves_like_inductors_own():
    entry = make_config_entry("diode_probe", 3, int)
    assert entry.default == 3 and entry.value_type is int


def test_marking_dirty_refreshes_the_memoized_config_hash():
    probe = make_config_entry("diode_probe", 1, int)
    config._config["diode_probe"] = probe
    try:
        mark_config_dirty(config)
        first = config.get_hash()
        probe.default = 2
        mark_config_dirty(config)
        assert config.get_hash() != first  # a stale memo would hand back the first hash
        assert config.save_config_portable()["diode_probe"] == 2
    finally:
        del config._config["diode_probe"]
        mark_config_dirty(config)


def test_an_option_set_in_code_is_told_from_one_left_alone():
    probe = make_config_entry("diode_probe", 1, int)
    config._config["diode_probe"] = probe
    try:
        assert not set_in_code(probe)
        with config.patch(diode_probe=1):  # its default, but given in code
            assert set_in_code(probe)
    finally:
        del config._config["diode_probe"]
        mark_config_dirty(config)


def test_the_backend_check_understands_diode():
    from torch._inductor import utils

    assert candidate_backends("DIODE") == ("ATEN", "TRITON")
    assert candidate_backends("DIODE,TRITON") == ("TRITON",)
    with config.patch(max_autotune_gemm_backends="DIODE"):
        assert utils._use_autotune_backend("ATEN") and utils._use_autotune_backend("TRITON")
        assert not utils._use_autotune_backend("CPP")
    with config.patch(max_autotune_gemm_backends="DIODE,CPP"):
        assert utils._use_autotune_backend("CPP") and not utils._use_autotune_backend("ATEN")
    with config.patch(max_autotune_gemm_backends="ATEN"):
        assert utils._use_autotune_backend("ATEN") and not utils._use_autotune_backend("TRITON")


def test_a_narrowed_heuristic_filters_its_own_configs_and_is_restored_after():
    from torch._inductor.template_heuristics.registry import get_template_heuristic

    heuristic = get_template_heuristic("triton::mm", "cuda", "mm")
    everything = heuristic._filter_configs(list(heuristic.exhaustive_configs))
    with configs_narrowed("triton::mm", "cuda", "mm", lambda c: c.num_warps == 4 and c.num_stages == 3):
        narrowed = heuristic._filter_configs(list(heuristic.exhaustive_configs))
    assert narrowed == [c for c in everything if c.num_warps == 4 and c.num_stages == 3] and 0 < len(narrowed) < len(everything)
    assert "_filter_configs" not in vars(heuristic)  # the class's own method again
    assert heuristic._filter_configs(list(heuristic.exhaustive_configs)) == everything


def test_the_compile_workers_come_up_and_take_jobs_or_report_none(tmp_path):
    """``compile_workers_ready`` in fresh processes: with two compile threads Inductor's worker
    pool is started and ready (Inductor then hands kernels to it); with one there is none.
    ``e2e_validation.warm_compile_workers`` then gives each worker a kernel of its own."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = """
import json, sys
sys.path.insert(0, "benchmarks")
from torch._inductor import config
from torch._inductor.async_compile import AsyncCompile
config.compile_threads = int(sys.argv[1])
import e2e_validation
from diode_backend.inductor import compat
ready = compat.compile_workers_ready(120.0)
print(json.dumps({"ready": ready, "pool": AsyncCompile.use_process_pool() if ready else None,
                  "warmed": e2e_validation.warm_compile_workers("cpu")}))
"""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "DIODE_CACHE_DIR": str(tmp_path / "diode")}
    found = {}
    for threads in (1, 2):
        done = subprocess.run([sys.executable, "-c", script, str(threads)], cwd=root, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        found[threads] = json.loads(done.stdout.strip().splitlines()[-1])
    assert found[1] == {"ready": 0, "pool": None, "warmed": 0}
    assert found[2] == {"ready": 2, "pool": True, "warmed": 2}


def _expanded_biases(monkeypatch, fn, *args):
    """Compile ``fn`` on the CPU; for each addmm or baddbmm lowered, what ``broadcast_bias_view``
    makes of the bias Inductor expanded (``mm_args``): None, or the view's strides, whether it
    reads a graph input, and the bias DIODE describes before and after."""
    import torch
    import torch._inductor.kernel.bmm as bmm
    import torch._inductor.kernel.mm as mm
    from torch._inductor.kernel_inputs import MMKernelInputs
    from torch._inductor.virtualized import V

    from diode_backend.inductor.compat import broadcast_bias_view
    from diode_backend.inductor.convert import problem_from_inputs

    seen = []

    def recording(module, op_name):
        real = module.mm_args

        def mm_args(*args, **kwargs):
            out = real(*args, **kwargs)
            _, _, _, _, mat1, mat2, *others = out
            if others:
                inputs = MMKernelInputs([others[0], mat1, mat2])
                viewed = broadcast_bias_view(inputs, op_name)
                if viewed is None:
                    seen.append(None)
                else:
                    view = viewed.nodes()[0]
                    before, after = (problem_from_inputs(i, op_name).bias for i in (inputs, viewed))
                    seen.append((list(view.get_stride()), view.get_name() in V.graph.graph_inputs, before, after))
            return out

        monkeypatch.setattr(module, "mm_args", mm_args)

    recording(mm, "addmm")
    recording(bmm, "baddbmm")
    torch._dynamo.reset()
    with config.patch(force_disable_caches=True):
        out = torch.compile(fn)(*args)
    torch.testing.assert_close(out, fn(*args))
    return seen


def test_a_one_element_bias_is_viewed_at_the_output_shape_not_copied(monkeypatch):
    import torch

    x, w = torch.randn(5, 64), torch.randn(64, 1)
    # Inductor copies the one-element bias to (5, 1), a full matrix to DIODE; the view reads the input
    assert _expanded_biases(monkeypatch, torch.addmm, torch.randn(1), x, w) == [([0, 0], True, "full", "row")]
    a, b = torch.randn(3, 5, 64), torch.randn(3, 64, 1)
    assert _expanded_biases(monkeypatch, torch.baddbmm, torch.randn(1), a, b) == [([0, 0, 0], True, "full", "row")]


def test_a_bias_inductor_views_already_is_left_and_a_computed_one_is_viewed_where_it_is_stored(monkeypatch):
    import torch

    x = torch.randn(5, 64)
    assert _expanded_biases(monkeypatch, torch.addmm, torch.randn(8), x, torch.randn(64, 8)) == [None]
    # the doubling is stored in a buffer of its own before the expand, which the view reads
    computed = lambda bias, x, w: torch.addmm(bias * 2, x, w)  # noqa: E731
    assert _expanded_biases(monkeypatch, computed, torch.randn(1), x, torch.randn(64, 1)) == [([0, 0], False, "full", "row")]


def test_outside_a_lowering_no_bias_is_viewed():
    from diode_backend.inductor.compat import broadcast_bias_nodes

    assert broadcast_bias_nodes(["bias", "mat1", "mat2"], "addmm") is None
