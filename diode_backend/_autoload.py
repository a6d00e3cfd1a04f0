"""The ``torch.backends`` entry point: runs inside ``import torch``.

It must be cheap (it imports nothing of Inductor; the work waits for post-import hooks) and
must never raise: an exception here would break ``import torch`` for everyone. Set
``DIODE_DISABLE=1`` to switch the whole plugin off.
"""

from __future__ import annotations

import os


def install() -> None:
    if os.environ.get("DIODE_DISABLE", "") not in ("", "0"):
        return
    try:
        from .inductor import install as install_hooks

        install_hooks()
    except Exception as err:  # never break `import torch`
        import logging

        logging.getLogger("diode_backend").warning("diode-backend disabled itself: %s", err, exc_info=True)
