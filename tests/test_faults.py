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

from diode_backend.model.checkpoint import ModelLoadError
from diode_backend.model.manifest import read_manifest

from model_files import write_model_folder

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


def _make_hostile(path: Path, hostile: str) -> None:
    path.unlink(missing_ok=True)
    if hostile == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)


def _last_line_of(code: str, *args: str) -> str:
    """Run ``code`` in a fresh Python (60 s and 6 GiB at most) and return the last line it
    printed; a hang fails the test instead of the test run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), *args],
            env=env, capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"{code.strip().splitlines()[0]} ... hung")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


_READ = """
    import sys
    from diode_backend.dataset import load_dataset
    from diode_backend.model.checkpoint import load_checkpoint
    from diode_backend.model.manifest import read_manifest
    try:
        {"manifest": read_manifest, "model": load_checkpoint, "shard": load_dataset}[sys.argv[1]](sys.argv[2])
        print("read")
    except Exception as err:
        print(f"{type(err).__name__}: {err}")
"""


@pytest.mark.parametrize("hostile", ["fifo", "link_to_dev_zero"])
@pytest.mark.parametrize("what", ["manifest", "model", "shard"])
def test_hostile_model_manifest_or_shard_is_a_clear_error_never_a_hang(tmp_path, what, hostile):
    """Issue 16 failure 1 for the other files DIODE reads: a FIFO or a device where a manifest,
    a model file or a dataset shard should be is refused at once, naming the file."""
    folder = write_model_folder(tmp_path / "m", "x")
    path = {"manifest": folder / "manifest.json", "model": folder / "model.pt", "shard": tmp_path / "part-000.msgpack"}[what]
    _make_hostile(path, hostile)
    outcome = _last_line_of(_READ, what, str(path if what != "shard" else tmp_path))
    error = "DatasetError" if what == "shard" else "ModelLoadError"
    assert outcome.startswith(f"{error}: {path}: not a regular file"), outcome


@pytest.mark.parametrize("name", ["/dev/zero", "../other/model.pt", "sub/../../model.pt", ""])
def test_manifest_file_must_stay_in_its_folder(tmp_path, name):
    """Issue 16 failure 1: a manifest whose ``file`` is /dev/zero grew memory without limit."""
    folder = write_model_folder(tmp_path / "m", "x")
    data = json.loads((folder / "manifest.json").read_text())
    data["file"] = name
    (folder / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ModelLoadError, match="must name a file in the manifest's own folder") as error:
        read_manifest(folder)
    assert str(folder / "manifest.json") in str(error.value)


def test_model_file_in_a_subfolder_of_its_manifest_is_fine(tmp_path):
    folder = write_model_folder(tmp_path / "m", "x", file="weights/model.pt")
    assert read_manifest(folder).file == "weights/model.pt"
