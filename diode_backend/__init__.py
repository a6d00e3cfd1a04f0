"""diode-backend: learned GEMM kernel selection for ``torch.compile(mode="max-autotune")``.

After ``pip install diode-backend`` nothing needs importing: set
``torch._inductor.config.max_autotune_gemm_backends = "DIODE"`` (see docs/options.md).
This package's root stays cheap to import; its public names load on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "__version__", "hookimpl", "stats", "reset_stats", "status", "with_diode", "DiodeOptionError",
    "list_available_models", "get_detected_hardware", "register_model", "set_log_level",
    "get_prediction_stats", "profile_predictions",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name == "hookimpl":
        import pluggy

        from .hookspecs import PROJECT_NAME

        value = pluggy.HookimplMarker(PROJECT_NAME)
    elif name in ("stats", "reset_stats", "get_prediction_stats", "profile_predictions"):
        from . import counters

        value = getattr(counters, name)
    elif name == "set_log_level":
        from .logs import set_log_level as value
    elif name == "status":
        from .report import status as value
    elif name == "with_diode":
        from .inductor.factory import with_diode as value
    elif name == "DiodeOptionError":
        from .options import DiodeOptionError as value
    elif name in ("list_available_models", "get_detected_hardware", "register_model"):
        from . import catalog

        value = getattr(catalog, name)
    else:
        raise AttributeError(f"module 'diode_backend' has no attribute {name!r}")
    globals()[name] = value
    return value
