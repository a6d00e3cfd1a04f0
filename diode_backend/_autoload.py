"""Arm DIODE inside ``import torch``: what the ``torch.backends`` entry point
(``diode_backend_autoload``, which guards importing this package) runs, and the entry point
itself for installs whose metadata was written before that module existed.

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
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # never break `import torch`, not even by SystemExit
        import logging

        logging.getLogger("diode_backend").warning("diode-backend disabled itself: %s", err, exc_info=True)
