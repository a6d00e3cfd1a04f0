"""Put the diode options into ``torch._inductor.config`` and validate them on assignment."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..options import OPTIONS, OPTIONS_BY_NAME, DiodeOptionError, DiodeOptions, env_default
from .compat import make_config_entry, mark_config_dirty

#: Environment variables that held invalid values, reported at the first DIODE decision.
_env_errors: dict[str, str] = {}


def inject_options(config: ModuleType) -> None:
    """Add every diode option to Inductor's config (idempotent) and make assignment validate.

    The options become ordinary config keys: ``config.patch``, ``torch.compile(options=...)``
    and the compile cache key see them like Inductor's own.
    """
    for spec in OPTIONS:
        if spec.name in config._config:
            continue
        default, error = env_default(spec)
        if error:
            _env_errors[spec.name] = error
        config._config[spec.name] = make_config_entry(spec.name, default, spec.value_type)
    if not getattr(type(config), "_diode_validating", False):
        validating = type("DiodeValidatingConfig", (type(config),), {
            "__setattr__": _validating_setattr,
            "_diode_validating": True,
        })  # fmt: skip
        # the config class's own __setattr__ only accepts config keys
        ModuleType.__setattr__(config, "__class__", validating)
    mark_config_dirty(config)


def _validating_setattr(self: ModuleType, name: str, value: Any) -> None:
    spec = OPTIONS_BY_NAME.get(name)
    if spec is not None:
        value = spec.check(name, value)
    super(type(self), self).__setattr__(name, value)


def current_options() -> DiodeOptions:
    """The validated options in effect now; raises :class:`DiodeOptionError` for a bad value
    (including an invalid ``TORCHINDUCTOR_DIODE_*`` environment variable)."""
    from torch._inductor import config

    for name, error in _env_errors.items():
        if getattr(config, name) == OPTIONS_BY_NAME[name].default:  # not overridden in code
            raise DiodeOptionError(error)
    return DiodeOptions.from_values(lambda name: getattr(config, name))
