"""Put the diode options into ``torch._inductor.config`` and validate them on assignment and in
``torch.compile(options=...)``."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from ..options import OPTIONS, OPTIONS_BY_NAME, DiodeOptionError, DiodeOptions, env_default
from .compat import make_config_entry, mark_config_dirty, set_in_code

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


def patch_compile_options(torch_module: ModuleType) -> None:
    """Check the diode options given to ``torch.compile(options=...)`` as assignment checks them,
    before torch type-checks them against their config type (``_TorchCompileInductorWrapper.
    apply_options``, torch 2.11 and 2.13), so that a wrong value raises :class:`DiodeOptionError`
    naming the option instead of torch's "Unexpected type of attr"; values are normalised as
    assignment normalises them (``"3"`` for ``diode_top_k`` is 3). Idempotent."""
    cls = torch_module._TorchCompileInductorWrapper
    original = cls.apply_options
    if getattr(original, "_diode_wrapped", False):
        return

    @functools.wraps(original)
    def apply_options(self, options: dict[str, Any] | None) -> None:
        if options:
            options = {key: _checked(key, value) for key, value in options.items()}
        return original(self, options)

    apply_options._diode_wrapped = True
    cls.apply_options = apply_options


def _checked(key: str, value: Any) -> Any:
    spec = OPTIONS_BY_NAME.get(key.replace("-", "_"))  # torch.compile accepts dashed names too
    return value if spec is None else spec.check(spec.name, value)


def current_options() -> DiodeOptions:
    """The validated options in effect now; raises :class:`DiodeOptionError` for a bad value,
    and for an invalid ``TORCHINDUCTOR_DIODE_*`` environment variable unless code has set that
    option (its value wins)."""
    from torch._inductor import config

    for name, error in _env_errors.items():
        if not set_in_code(config._config[name]):
            raise DiodeOptionError(error)
    return DiodeOptions.from_values(lambda name: getattr(config, name))


def effective_options() -> dict[str, Any]:
    """``max_autotune_gemm_backends`` and every diode option as Inductor's config holds them now
    (unvalidated: what the user set, for ``diode_backend.status()``)."""
    from torch._inductor import config

    values = {spec.name: getattr(config, spec.name) for spec in OPTIONS}
    return {"max_autotune_gemm_backends": config.max_autotune_gemm_backends, **values}
