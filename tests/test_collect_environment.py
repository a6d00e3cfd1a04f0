"""What a shard records of the GPU it ran on: ``nvidia-smi`` asked about torch's device by its
UUID (a fake ``nvidia-smi`` here, which records what it was asked; the real one in
``test_collect_gpu.py``)."""

from __future__ import annotations

import os
import types

import torch

from diode_backend.offline.collect.environment import environment

FAKE_SMI = """#!/bin/sh
echo "$@" > "{log}"
echo "580.1, 1980 MHz, 2619 MHz, 700.00 W"
"""


def fake_smi(tmp_path, monkeypatch):
    """A ``nvidia-smi`` first on PATH; returns the file its arguments are written to."""
    log = tmp_path / "args"
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(FAKE_SMI.format(log=log))
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi.parent}:{os.environ['PATH']}")
    return log


def test_the_gpu_is_asked_for_by_its_uuid_not_by_torchs_index(tmp_path, monkeypatch):
    """Under CUDA_VISIBLE_DEVICES=3 torch's device 0 is the host's GPU 3: asking nvidia-smi for
    --id=0 would record GPU 0's clocks and limits."""
    log = fake_smi(tmp_path, monkeypatch)
    uuid = "5c2d4b1e-0a6f-4f3e-9b1d-2a7e8c9d0f11"
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: types.SimpleNamespace(uuid=uuid))
    env = environment(0)
    assert f"--id=GPU-{uuid}" in log.read_text().split()
    assert (env["device_index"], env["driver_version"], env["power_limit"]) == (0, "580.1", "700.00 W")


def test_without_a_uuid_from_torch_the_index_is_asked_for(tmp_path, monkeypatch):
    log = fake_smi(tmp_path, monkeypatch)

    def no_device(index):
        raise RuntimeError(f"no CUDA device {index}")

    monkeypatch.setattr(torch.cuda, "get_device_properties", no_device)
    env = environment(2)
    assert "--id=2" in log.read_text().split()
    assert env["clocks_max_sm"] == "1980 MHz"
