"""NVIDIA hardware for diode-backend: adds datasheet peak rates to the detected device, which
the analytical scorer and the learned models' features use, and describes known devices for
offline use (``diode predict --hardware h100``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from diode_backend import hookimpl
from diode_backend.problem import HardwareInfo

from .datasheets import peaks_for
from .devices import known_devices


@hookimpl(wrapper=True)
def diode_detect_hardware(device: str):
    hardware: HardwareInfo | None = yield
    if hardware is None or hardware.vendor != "nvidia":
        return hardware
    peaks = peaks_for(hardware.name)
    if peaks is None:
        return hardware
    tflops, bandwidth_gbps = peaks
    return dataclasses.replace(hardware, peak_tflops=dict(tflops), memory_bandwidth_gbps=bandwidth_gbps)


@hookimpl
def diode_known_hardware(register: Callable[[str, HardwareInfo], None]) -> None:
    for name, hardware in known_devices():
        register(name, hardware)
