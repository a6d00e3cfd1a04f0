"""``diode_backend.status()``: plugins, hardware, models and the options in effect."""

from __future__ import annotations

from typing import Any

from . import __version__, catalog, counters, plugins
from .options import OPTIONS, env_default


def status(hardware: str | None = None) -> dict[str, Any]:
    """What DIODE sees now.

    :param hardware: the hardware to describe: a known name (``"h100"``) or a device
        (``"cuda:0"``); default ``cuda`` when available, else ``cpu``.
    :return: ``version``, ``plugins`` (name, distribution, hooks), ``requested`` (``hardware``
        or the default device), ``hardware`` (its description, None if no plugin describes it),
        ``models`` (name, description, whether it applies to the hardware, which one would be
        picked), ``options`` (effective values of every diode option and of
        ``max_autotune_gemm_backends``), ``option_errors`` (option name -> what is wrong with
        its ``TORCHINDUCTOR_*`` variable; such an option shows its default here, and the first
        compile that uses DIODE fails on it) and ``stats``.
    :raises DiodeOptionError: ``hardware`` is neither a known name nor a device.
    """
    from .inductor.options import effective_options

    requested = hardware or catalog.default_device()
    described = catalog.get_detected_hardware(requested)
    options = effective_options()
    option_errors = {spec.name: error for spec in OPTIONS if (error := env_default(spec)[1])}
    picked = catalog.pick_entry(described, options["diode_model"]) if described else None
    models = [
        {
            "name": entry.name,
            "description": entry.description,
            "priority": entry.priority,
            "applies": bool(described and catalog.entry_applies(entry, described)),
            "selected": picked is not None and picked.name == entry.name,
        }
        for entry in catalog.scorer_entries().values()
    ]
    return {
        "version": __version__,
        "plugins": plugins.plugin_report(),
        "requested": requested,
        "hardware": described.to_dict() if described else None,
        "models": models,
        "options": options,
        "option_errors": option_errors,
        "stats": counters.stats(),
    }
