"""Teach Inductor's backend check what ``DIODE`` in ``max_autotune_gemm_backends`` means.

``DIODE`` alone generates the candidates of ATEN and TRITON; ``DIODE`` next to other names
generates those backends' candidates. Either way DIODE then ranks them. Without ``DIODE`` the
check is Inductor's own, untouched.
"""

from __future__ import annotations

import functools
from types import ModuleType

from ..options import DEFAULT_CANDIDATE_BACKENDS, parse_backends


def patch_backend_check(utils: ModuleType) -> None:
    """Wrap ``torch._inductor.utils._use_autotune_backend`` (idempotent)."""
    original = utils._use_autotune_backend
    if getattr(original, "_diode_wrapped", False):
        return

    @functools.wraps(original)
    def _use_autotune_backend(backend: str) -> bool:
        from torch._inductor import config

        value = config.max_autotune_gemm_backends
        if "DIODE" not in value.upper():
            return original(backend)
        return backend.upper() in candidate_backends(value)

    _use_autotune_backend._diode_wrapped = True
    utils._use_autotune_backend = _use_autotune_backend


def candidate_backends(value: str) -> tuple[str, ...]:
    """The backends whose candidates DIODE ranks for a ``max_autotune_gemm_backends`` value."""
    active, others = parse_backends(value)
    if active and not others:
        return DEFAULT_CANDIDATE_BACKENDS
    return others
