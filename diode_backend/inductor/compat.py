"""Version shims: the places where torch 2.11 (GPU machines) and 2.13 differ internally.

Each shim names the versions it covers; tests/test_inductor_compat.py exercises them.
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar
from types import ModuleType
from typing import Any


def make_config_entry(name: str, default: Any, value_type: Any) -> Any:
    """A ``_ConfigEntry`` for an injected option.

    torch 2.11: ``_ConfigEntry(config)``; torch 2.13: ``_ConfigEntry(config, name)`` (the name
    labels the per-thread ContextVar that holds user overrides).
    """
    from torch.utils._config_module import _Config, _ConfigEntry

    config = _Config(default=default, value_type=value_type)
    if len(inspect.signature(_ConfigEntry.__init__).parameters) >= 3:
        return _ConfigEntry(config, name)
    return _ConfigEntry(config)


def mark_config_dirty(module: ModuleType) -> None:
    """Invalidate a config module's memoized hash and ``save_config`` dictionaries.

    torch 2.13 keeps them in ContextVars (``_hash_dirty_var``, ``_get_dict_dirty_keys_var``,
    ``None`` meaning "fully dirty"); torch 2.11 in ``_is_dirty``/``_hash_digest`` attributes.
    """
    if hasattr(module, "_hash_dirty_var"):
        module._hash_dirty_var.set(True)
        module._get_dict_dirty_keys_var.set(None)
    else:
        module._is_dirty = True
        module._hash_digest = None


def set_in_code(entry: Any) -> bool:
    """Whether code has given a config entry a value: assignment, ``config.patch`` (also the
    value a finished patch restores), ``torch.compile(options=...)``.

    torch 2.13 keeps that value in a per-thread ContextVar (``user_override``), torch 2.11 in a
    plain attribute; unset, either holds ``_UNSET_SENTINEL``.
    """
    from torch.utils._config_module import _UNSET_SENTINEL

    value = entry.user_override
    if isinstance(value, ContextVar):
        value = value.get()
    return value is not _UNSET_SENTINEL
