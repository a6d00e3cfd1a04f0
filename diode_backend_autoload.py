"""The ``torch.backends`` entry point of diode-backend: it runs inside ``import torch``.

A module of its own, beside the ``diode_backend`` package rather than in it, so that importing
it cannot fail however broken that package is (a syntax error, a missing dependency, its files
gone): :func:`install` imports the package itself and turns any failure into one warning. An
exception here would break ``import torch`` for everyone, so nothing escapes but Ctrl-C.
"""

import os


def install() -> None:
    """Arm DIODE (``diode_backend._autoload.install``) unless ``DIODE_DISABLE`` is set, which is
    checked before the package is imported, so that it also silences a broken one."""
    if os.environ.get("DIODE_DISABLE", "") not in ("", "0"):
        return
    try:
        from diode_backend._autoload import install as install_diode
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # SystemExit too: `import torch` must survive a broken package
        import logging

        logging.getLogger("diode_backend").warning(
            "diode-backend cannot be imported and is off (%s: %s); reinstall it, or set "
            "DIODE_DISABLE=1 to switch it off quietly", type(err).__name__, err,
        )  # fmt: skip
        return
    install_diode()
