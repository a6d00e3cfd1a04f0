"""DIODE's log: the ``diode_backend`` logger and how to see it without configuring logging.

At INFO it has one line per GEMM DIODE decides (``inductor/benchmarked_choices.py``), at WARNING what went
wrong (once each), at DEBUG the hook calls when ``DIODE_TRACE_HOOKS=1``. Like any Python log it
is shown through the handlers logging has (``TORCH_LOGS=diode_backend`` sets one up as torch
does for its own components, ``+diode_backend`` for DEBUG); :func:`set_log_level` also works
where logging has none.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("diode_backend")
_lock = threading.Lock()


def set_log_level(level: int | str) -> None:
    """Show DIODE's log from ``level`` up (``"INFO"``: a line per GEMM decision; ``"DEBUG"``;
    ``"WARNING"``, the default: only what went wrong), as the original torch-diode API did.

    Records go to the handlers logging already has (``TORCH_LOGS``, ``logging.basicConfig``);
    when it has none, to standard error.

    :raises ValueError: an unknown level name.
    """
    log.setLevel(level.upper() if isinstance(level, str) else level)
    show(log)


def show(logger: logging.Logger) -> None:
    """Make sure ``logger`` (``diode_backend`` or one under it) reaches a handler: when no
    logging configuration would print its records, give ``diode_backend`` one on standard
    error (once; the loggers under it share it)."""
    with _lock:
        if not logger.hasHandlers():
            handler = logging.StreamHandler()  # standard error
            handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
            log.addHandler(handler)
