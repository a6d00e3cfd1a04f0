"""What a shard records about where it was measured: the device and the software around it."""

from __future__ import annotations

import datetime
import platform
import subprocess
import sys
from typing import Any

import torch

from ... import __version__, registry
from ...options import DiodeOptionError
from ...problem import HardwareInfo
from ...tf32 import inductor_rule

_SMI_FIELDS = ("driver_version", "clocks.max.sm", "clocks.max.memory", "power.limit")


def hardware_of(device: str) -> HardwareInfo:
    """A device of this machine as DIODE's plugins describe it (what models are matched
    against). Raises :class:`DiodeOptionError` for a string that is not a torch device and for
    a device no plugin describes here (a GPU this machine lacks)."""
    try:
        torch.device(device)
    except RuntimeError:
        raise DiodeOptionError(f"{device!r} is not a torch device (cpu, cuda, cuda:1, ...)") from None
    hardware = registry.detect_hardware(device)
    if hardware is None:
        raise DiodeOptionError(f"no plugin describes device {device!r} on this machine")
    return hardware


def environment(device_index: int | None = None, **extra: Any) -> dict[str, Any]:
    """Versions, date, host and the driver's view of the GPU (``nvidia-smi``, when it answers),
    and the rule by which the timed Triton kernels run TF32 (the running Inductor's, which the
    sweep's kernels follow too; see :mod:`diode_backend.tf32`)."""
    env: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "diode_backend": __version__,
        "command": " ".join(sys.argv),
        "triton_tf32_rule": inductor_rule(),
    }
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if device_index is not None:
        env["device_index"] = device_index
        env.update(_nvidia_smi(device_index))
    env.update(extra)
    return env


def _nvidia_smi(index: int) -> dict[str, str]:
    query = ["nvidia-smi", f"--id={_smi_id(index)}", f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader"]
    try:
        out = subprocess.run(query, capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [v.strip() for v in out.strip().split(",")]
    if len(values) != len(_SMI_FIELDS):
        return {}
    return {name.replace(".", "_"): value for name, value in zip(_SMI_FIELDS, values)}


def _smi_id(index: int) -> str:
    """nvidia-smi's name for torch's CUDA device ``index``: its UUID. torch counts only the
    devices ``CUDA_VISIBLE_DEVICES`` leaves, in CUDA's order, nvidia-smi every device in PCI
    order, so the index alone can name another GPU (every part of a sharded run would read GPU
    0). The index where torch gives no UUID."""
    try:
        return f"GPU-{torch.cuda.get_device_properties(index).uuid}"
    except (AssertionError, RuntimeError, AttributeError):  # no CUDA here, or a torch without uuid
        return str(index)
