"""Fault injection (issue 16): hostile files, plugins and values, with real files, processes and
plugin classes. Each test reproduces one failure the issue lists and fails without its fix."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A second ranking of one GEMM with the cache entry replaced by something hostile; prints the
# cache counters and whether the entry is a regular file again (repaired) afterwards.
_HOSTILE_ENTRY = textwrap.dedent(
    """
    import json, os, stat, sys
    import diode_backend
    from diode_backend import cache
    from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig
    from diode_backend.scorer import Prediction

    class Scorer:
        name = identity = "fixed"
        def predict(self, problem, configs, hardware):
            return Prediction(tuple(float(i + 1) for i in range(len(configs))), 0.5)

    hw = HardwareInfo("NVIDIA H100", "nvidia")
    problem = GemmProblem("mm", 64, 64, 64)
    configs = [KernelConfig("aten", "aten::mm"), KernelConfig("triton", "triton::mm", 32, 32, 32, 2, 4, 8)]
    cache.cached_rank(Scorer(), problem, configs, hw, enabled=True)
    path = cache.default_cache().path_of(cache.prediction_key(Scorer(), problem, configs, hw))
    path.unlink()
    if sys.argv[1] == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    ranking = cache.cached_rank(Scorer(), problem, configs, hw, enabled=True)
    print(json.dumps({"order": list(ranking.order), "counters": diode_backend.stats()["counters"],
                      "repaired": stat.S_ISREG(os.lstat(path).st_mode)}))
    """
)


def _limit_memory() -> None:
    # without the fix /dev/zero is read until memory runs out: fail fast instead of swapping
    resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))


@pytest.mark.parametrize("hostile", ["fifo", "link_to_dev_zero"])
def test_hostile_cache_entry_is_a_counted_miss_and_is_repaired(tmp_path, hostile):
    """Issue 16 failure 1: a FIFO entry hung torch.compile; a link to /dev/zero took 11 GB."""
    env = {**os.environ, "DIODE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _HOSTILE_ENTRY, hostile],
            env=env, capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading a {hostile} cache entry hung")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["order"] == [0, 1]
    counters = result["counters"]
    assert counters["prediction_cache_corrupt"] == 1 and counters["prediction_cache_misses"] == 2
    assert "prediction_cache_errors" not in counters
    assert result["repaired"]
