"""The plugin manager: third-party plugins from the ``diode`` entry-point group, then the
built-in ones (registered after, marked ``trylast``), loaded lazily and once.

Environment:
    ``DIODE_DISABLE_PLUGINS=1``  load no third-party plugins (built-ins only).
    ``DIODE_TRACE_HOOKS=1``      print every hook call and its result (logger ``diode_backend.plugins``
                                 at DEBUG, shown without any logging configuration).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pluggy

from . import counters, hookspecs, logs

log = logging.getLogger("diode_backend.plugins")

ENTRY_POINT_GROUP = "diode"
#: Modules whose hook implementations make up DIODE's own behaviour.
BUILTIN_PLUGINS = ("diode_backend.builtin", "diode_backend.inductor.candidates")

_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None
_distributions: dict[str, str] = {}  # plugin name -> "project version"
T = TypeVar("T")


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, created and loaded on first use."""
    global _manager
    if _manager is None:
        with _lock:
            if _manager is None:
                _manager = _create_manager()
    return _manager


def _create_manager() -> pluggy.PluginManager:
    import importlib

    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    if os.environ.get("DIODE_DISABLE_PLUGINS", "") not in ("", "0"):
        log.info("DIODE_DISABLE_PLUGINS is set: loading built-in plugins only")
    else:
        for dist_name, error in _load_entry_points(pm):
            log.warning("diode plugin %s failed to load and is skipped: %s", dist_name, error)
    for module_name in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(module_name), name=module_name)
    if os.environ.get("DIODE_TRACE_HOOKS", "") not in ("", "0"):
        pm.trace.root.setwriter(lambda message: log.debug("%s", message.rstrip()))
        pm.enable_tracing()
        log.setLevel(logging.DEBUG)
        logs.show(log)
    return pm


def _load_entry_points(pm: pluggy.PluginManager) -> list[tuple[str, str]]:
    """Register every ``diode`` entry point; a broken plugin is reported, never fatal."""
    from importlib.metadata import entry_points

    failures = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            pm.register(ep.load(), name=ep.name)
            if ep.dist is not None:
                _distributions[ep.name] = f"{ep.dist.name} {ep.dist.version}"
        except KeyboardInterrupt:
            raise
        except BaseException as err:  # SystemExit too: a plugin's import must not end torch.compile
            failures.append((ep.name, f"{type(err).__name__}: {err}"))
    return failures


def hook() -> pluggy.HookRelay:
    """The hook relay, e.g. ``hook().diode_detect_hardware(device="cuda:0")``. Calls through it
    are not isolated: DIODE itself calls hooks through :func:`call_hook`."""
    return get_plugin_manager().hook


def call_hook(hook_name: str, call: Callable[[Any], T]) -> T:
    """``call(hook_caller)`` with each third-party plugin's failure contained to that plugin.

    When a plugin's implementation raises anything but ``KeyboardInterrupt`` (``SystemExit``
    included), the plugin is named in one warning per hook, counted (``plugin_errors``) and
    ``call`` runs again on a caller without it, so the other plugins and the built-ins still
    answer. ``call`` must start afresh each time (it may run more than once). A failure in
    DIODE's built-ins, or one no plugin can be blamed for, propagates.
    """
    pm = get_plugin_manager()
    excluded: list[object] = []
    while True:
        caller = pm.subset_hook_caller(hook_name, excluded) if excluded else getattr(pm.hook, hook_name)
        try:
            return call(caller)
        except KeyboardInterrupt:
            raise
        except BaseException as err:
            name = _failing_plugin(caller, err)
            if name is None or name in BUILTIN_PLUGINS:
                raise
            counters.record_counter("plugin_errors")
            counters.warn_once(
                f"plugin:{name}:{hook_name}",
                "diode plugin %r failed in %s (%s: %s) and is skipped for that hook; the other "
                "plugins and DIODE's own models still work. Fix or uninstall the plugin, or set "
                "DIODE_DISABLE_PLUGINS=1",
                name, hook_name, type(err).__name__, err,
            )  # fmt: skip
            excluded.append(pm.get_plugin(name))


def _failing_plugin(caller: Any, error: BaseException) -> str | None:
    """The plugin whose hook implementation raised ``error``: the innermost traceback frame
    that runs one of the hook's implementations."""
    codes = {}
    for impl in caller.get_hookimpls():
        code = getattr(impl.function, "__code__", None)
        if code is not None:
            codes[code] = impl.plugin_name
    name, tb = None, error.__traceback__
    while tb is not None:
        name = codes.get(tb.tb_frame.f_code, name)
        tb = tb.tb_next
    return name


def collect(hook_name: str) -> list:
    """Call a "contribute many" hook with a ``register`` callback and return what was registered
    (isolated as :func:`call_hook` says)."""

    def call(caller: Any) -> list:
        items: list = []
        caller(register=items.append)
        return items

    return call_hook(hook_name, call)


def plugin_report() -> list[dict]:
    """One record per registered plugin: name, distribution (if any), implemented hooks."""
    pm = get_plugin_manager()
    return [
        {
            "name": name,
            "distribution": _distributions.get(name, "built-in" if name in BUILTIN_PLUGINS else "-"),
            "hooks": sorted(h.name for h in pm.get_hookcallers(plugin) or []),
        }
        for name, plugin in pm.list_name_plugin()
    ]


def plugin_signature() -> tuple[str, ...]:
    """Names of the registered plugins: memoized hook results are keyed on this."""
    return tuple(name for name, _ in get_plugin_manager().list_name_plugin())
