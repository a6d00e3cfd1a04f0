"""``diode_backend.status()``: plugins, hardware, models and the options in effect."""

from __future__ import annotations

from typing import Any

from . import __version__, counters, plugins, registry
from .options import OPTIONS


def status(device: str | None = None) -> dict[str, Any]:
    """What DIODE sees now.

    :param device: the device to describe; default ``cuda`` when available, else ``cpu``.
    :return: ``version``, ``plugins`` (name, distribution, hooks), ``hardware``, ``models``
        (name, description, whether it applies to the hardware, which one would be picked),
        ``options`` (effective values of every diode option and of
        ``max_autotune_gemm_backends``) and ``stats``.
    """
    import torch
    from torch._inductor import config

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    hardware = registry.detect_hardware(device)
    options = {spec.name: getattr(config, spec.name) for spec in OPTIONS}
    picked = registry.pick_entry(hardware, options["diode_model"]) if hardware else None
    models = [
        {
            "name": entry.name,
            "description": entry.description,
            "priority": entry.priority,
            "applies": bool(hardware and registry.entry_applies(entry, hardware)),
            "selected": picked is not None and picked.name == entry.name,
        }
        for entry in registry.scorer_entries().values()
    ]
    return {
        "version": __version__,
        "plugins": plugins.plugin_report(),
        "device": device,
        "hardware": hardware.to_dict() if hardware else None,
        "models": models,
        "options": {"max_autotune_gemm_backends": config.max_autotune_gemm_backends, **options},
        "stats": counters.stats(),
    }
