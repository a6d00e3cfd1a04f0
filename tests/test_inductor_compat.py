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
