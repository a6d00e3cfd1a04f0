"""DIODE's own behaviour, registered as a plugin after the third-party ones (with
:mod:`diode_backend.inductor.candidates`, the built-in that needs Inductor).

Every implementation here is ``trylast``: a vendor plugin that answers the same hook wins.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path

import torch

from . import hookimpl
from .analytical import AnalyticalScorer
from .features import FeatureExtractor, GemmFeatures
from .problem import HardwareInfo
from .scorer import ScorerEntry


@hookimpl(trylast=True)
def diode_detect_hardware(device: str) -> HardwareInfo | None:
    dev = torch.device(device)
    if dev.type == "cpu":
        return HardwareInfo(name=platform.processor() or platform.machine(), vendor="cpu", device_type="cpu")
    if dev.type != "cuda" or not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(dev)
    vendor = "amd" if torch.version.hip else "nvidia"
    return HardwareInfo(
        name=props.name,
        vendor=vendor,
        device_type="cuda",
        sm_count=props.multi_processor_count,
        compute_capability=(props.major, props.minor),
        memory_bytes=props.total_memory,
        l2_bytes=getattr(props, "L2_cache_size", 0),
        shared_memory_per_block=getattr(props, "shared_memory_per_block_optin", 0),
        clock_mhz=getattr(props, "clock_rate", 0) // 1000,
    )


#: DIODE's table of compile seconds, timed on an H100
#: (``benchmarks/results/h100_compile_time_table_2026-11-28/``).
COMPILE_SECONDS = Path(__file__).with_name("compile_seconds.json")


@hookimpl(trylast=True)
def diode_compile_seconds(hardware: HardwareInfo) -> Path | None:
    """The shipped table for any NVIDIA GPU: the order of its tile classes follows the compiler
    more than the chip; none elsewhere (no estimate, no tile left out)."""
    return COMPILE_SECONDS if hardware.vendor == "nvidia" else None


@hookimpl(trylast=True)
def diode_register_feature_extractors(register: Callable[[FeatureExtractor], None]) -> None:
    register(GemmFeatures())


@hookimpl(trylast=True)
def diode_register_scorers(register: Callable[[ScorerEntry], None]) -> None:
    from .model.entries import installed_entries  # reads manifests only, never weights

    for entry in installed_entries():  # DIODE_MODELS_PATH, then the shipped trained_models/
        register(entry)
    register(
        ScorerEntry(
            name="analytical",
            load=AnalyticalScorer,
            applies_to=lambda hw: hw.vendor == "nvidia",
            priority=-100,  # the fallback every learned model should outrank
            description="roofline + wave quantization + tile efficiency; no training data",
            identity=AnalyticalScorer.identity,
        )
    )
