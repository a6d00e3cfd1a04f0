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
from typing import Any

import pluggy

from . import counters, hookspecs, logs

log = logging.getLogger("diode_backend.plugins")

ENTRY_POINT_GROUP = "diode"
#: Modules whose hook implementations make up DIODE's own behaviour.
BUILTIN_PLUGINS = ("diode_backend.builtin", "diode_backend.inductor.candidates")

_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None
_distributions: dict[str, str] = {}  # plugin name -> "project version"


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
    _drop_unknown_hooks(pm)
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


def _drop_unknown_hooks(pm: pluggy.PluginManager) -> None:
    """pluggy's ``check_pending()``: a plugin implementing a hook DIODE does not specify (a
    misspelled name, a hook of another version) is named in a warning with that hook, counted
    (``plugin_errors``) and unregistered, so that it changes nothing. DIODE's built-ins must pass."""
    while True:
        try:
            pm.check_pending()
            return
        except pluggy.PluginValidationError as err:
            name = pm.get_name(err.plugin)
            if name is None or name in BUILTIN_PLUGINS:
                raise
            unknown = sorted(h.name for h in pm.get_hookcallers(err.plugin) or [] if not h.has_spec())
            counters.record_counter("plugin_errors")
            log.warning(
                "diode plugin %s implements %s, which %s no diode hook (misspelled?), and is skipped; "
                "its hooks must be among those in docs/plugins.md",
                _distributions.get(name, name), ", ".join(unknown), "is" if len(unknown) == 1 else "are",
            )
            pm.unregister(err.plugin)


def hook() -> pluggy.HookRelay:
    """The hook relay, e.g. ``hook().diode_detect_hardware(device="cuda:0")``. Calls through it
    are not isolated: DIODE itself calls hooks through :func:`call_first` and :func:`collect`."""
    return get_plugin_manager().hook


def call_first(hook_name: str, **kwargs: Any) -> Any:
    """A ``firstresult`` hook's answer, from one call through pluggy (wrappers included).

    When a third-party plugin's implementation raises anything but ``KeyboardInterrupt``
    (``SystemExit`` included), the plugin is named in one warning per hook, counted
    (``plugin_errors``) and the hook is called again without it, so the other plugins and the
    built-ins still answer. A failure in DIODE's built-ins, or one no plugin can be blamed for,
    propagates.
    """
    pm = get_plugin_manager()
    excluded: list[object] = []
    while True:
        caller = pm.subset_hook_caller(hook_name, excluded) if excluded else getattr(pm.hook, hook_name)
        try:
            return caller(**kwargs)
        except KeyboardInterrupt:
            raise
        except BaseException as err:
            name = _failing_plugin(caller, err)
            if name is None or name in BUILTIN_PLUGINS:
                raise
            _warn_failed(name, hook_name, err)
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
    """Call a "contribute many" hook with a ``register`` callback and return what was registered,
    in pluggy's order (isolated as :func:`collect_by_plugin` says)."""
    return [item for _, item in collect_by_plugin(hook_name)]


def collect_by_plugin(hook_name: str) -> list[tuple[str, Any]]:
    """``(plugin name, item)`` for everything each implementation of a "contribute many" hook
    registers (``register(item)``; several arguments make a tuple), each implementation called
    once, through pluggy, in pluggy's order. A third-party plugin that fails registers nothing
    (see :func:`_run_alone`)."""
    items: list[tuple[str, Any]] = []
    for impl in _implementations(hook_name):
        found: list[Any] = []
        ok, _ = _run_alone(hook_name, impl, {"register": lambda *args: found.append(args[0] if len(args) == 1 else args)})
        if ok:
            items += [(impl.plugin_name, item) for item in found]
    return items


def _implementations(hook_name: str) -> list[Any]:
    """The hook's implementations in the order pluggy calls them, wrappers left out (they wrap
    each implementation's call)."""
    impls = getattr(get_plugin_manager().hook, hook_name).get_hookimpls()
    return [impl for impl in reversed(impls) if not (impl.hookwrapper or impl.wrapper)]


def _run_alone(hook_name: str, impl: Any, kwargs: dict[str, Any]) -> tuple[bool, Any]:
    """``(True, result)`` of calling one implementation through pluggy (the hook minus every
    other implementing plugin: tracing and argument selection as for a whole call), or
    ``(False, None)`` when it raised anything but ``KeyboardInterrupt`` (``SystemExit``
    included): the plugin is named in one warning per hook and counted (``plugin_errors``), and
    the other plugins and the built-ins still answer. A failure of DIODE's built-ins propagates."""
    pm = get_plugin_manager()
    others = [other.plugin for other in _implementations(hook_name) if other.plugin is not impl.plugin]
    try:
        return True, pm.subset_hook_caller(hook_name, others)(**kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException as err:
        if impl.plugin_name in BUILTIN_PLUGINS:
            raise
        _warn_failed(impl.plugin_name, hook_name, err)
        return False, None


def _warn_failed(name: str, hook_name: str, err: BaseException) -> None:
    counters.record_counter("plugin_errors")
    counters.warn_once(
        f"plugin:{name}:{hook_name}",
        "diode plugin %r failed in %s (%s: %s) and is skipped for that hook; the other "
        "plugins and DIODE's own models still work. Fix or uninstall the plugin, or set "
        "DIODE_DISABLE_PLUGINS=1",
        name, hook_name, type(err).__name__, err,
    )  # fmt: skip


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
