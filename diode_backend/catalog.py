"""Which model ranks: the user's choice (``diode_model``, :func:`register_model`, a path to a
model file) or the automatic pick for the hardware, the hardware a user names, and the error
texts that say what to do when a choice cannot be used.

It asks :mod:`diode_backend.registry` for what the plugins offer and keeps the one piece of
state of its own: the model :func:`register_model` chose.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from . import counters, registry
from .model import entries as model_entries
from .options import DiodeOptionError
from .problem import HardwareInfo
from .scorer import ScorerEntry

_lock = threading.Lock()
_registered: dict[str, ScorerEntry] = {}  # models registered by path (register_model)
_preferred: list[str] = []  # the name register_model chose, if any


def clear() -> None:
    """Forget memoized hook answers and loaded scorers (:func:`registry.clear`), broken manifests
    found, and what :func:`register_model` registered."""
    registry.clear()
    with _lock:
        _registered.clear()
        _preferred.clear()
    model_entries.forget_broken_manifests()  # found by the scans whose memoized results were just dropped


def scorer_entries() -> dict[str, ScorerEntry]:
    """Every scorer the plugins registered by name, then models registered by path; on a name
    clash the first registered (a plugin's) wins."""
    entries = dict(registry.scorer_entries())
    with _lock:
        for name, entry in _registered.items():
            entries.setdefault(name, entry)
    return entries


def default_device() -> str:
    """``cuda`` when a GPU is visible, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def get_detected_hardware(hardware: str | None = None) -> HardwareInfo | None:
    """The hardware DIODE sees for ``hardware``: a known short name (``"h100"``, from the
    ``diode_known_hardware`` hook), or a device (``"cuda:0"``, ``"cpu"``; default ``cuda`` when
    available, else ``cpu``) to detect. None when no plugin can describe that device.

    :raises DiodeOptionError: ``hardware`` is neither a known name nor a device, naming the known names.
    """
    import torch

    known = registry.known_hardware()
    if hardware and hardware.lower() in known:
        return known[hardware.lower()]
    device = hardware or default_device()
    try:
        torch.device(device)
    except RuntimeError:
        names = ", ".join(sorted(known)) or "none (install a hardware plugin such as diode-nvidia)"
        raise DiodeOptionError(
            f"unknown hardware {hardware!r}: name a known device ({names}) or a torch device such as cuda:0"
        ) from None
    return registry.detect_hardware(device)


def resolve_hardware(spec: str | None = None) -> HardwareInfo:
    """The hardware a user names (:func:`get_detected_hardware`), which must be describable.
    Raises :class:`DiodeOptionError` naming the known names, or saying no plugin describes it."""
    hardware = get_detected_hardware(spec)
    if hardware is None:
        raise DiodeOptionError(
            f"no plugin can describe device {spec or default_device()!r}; name known hardware instead (e.g. h100)"
        )
    return hardware


def list_available_models(hardware: HardwareInfo | str | None = None) -> list[str]:
    """Names of the models DIODE can use (built-in, shipped, plugins', registered paths); with
    ``hardware`` (a description, a known name such as ``"h100"`` or a device), only those meant
    for it, the one picked automatically first."""
    entries = scorer_entries()
    if hardware is None:
        return list(entries)
    if isinstance(hardware, str):
        hardware = resolve_hardware(hardware)
    return [e.name for e in automatic_order(hardware)]


def register_model(name_or_path: str | os.PathLike[str] | None) -> str | None:
    """Use this model whenever ``diode_model`` is not set, in this process and on any hardware:
    a registered name (``list_available_models()``) or a path to a model file or folder. The
    model is loaded now, so a bad file fails here. ``None`` returns to automatic selection.

    :return: the name DIODE knows the model by (the absolute path for a path), or None.
    :raises DiodeOptionError: unknown name, or a model that cannot be used.
    """
    if name_or_path is None:
        with _lock:
            _preferred.clear()
        return None
    entry = _named_entry(os.fspath(name_or_path))
    try:
        registry.load_scorer(entry)
    except KeyboardInterrupt:
        raise
    except BaseException as err:
        raise DiodeOptionError(f"register_model({os.fspath(name_or_path)!r}) cannot use it: {err}") from err
    is_new = entry.name not in scorer_entries()
    with _lock:
        if is_new:
            _registered[entry.name] = entry
        _preferred[:] = [entry.name]
    return entry.name


def pick_entry(hardware: HardwareInfo, requested: str = "", load: bool = True) -> ScorerEntry | None:
    """The scorer entry to use, its scorer loaded (so a broken model file is known here).

    - ``requested`` (``diode_model``), else the model :func:`register_model` chose: that
      registered name or model path, whatever the hardware; an unknown name or a model that
      cannot load raises :class:`DiodeOptionError` naming the file and the fix;
    - otherwise the first entry of :func:`automatic_order` that loads; one that fails to load
      is skipped, counted (``model_load_failures``) and logged once; None if none.

    ``load=False`` loads nothing, for a GEMM that needs no model (a measured decision answers
    it): the named entry (an unknown name still raises), else the first that applies.
    """
    if not requested:
        with _lock:
            requested = _preferred[0] if _preferred else ""
    if requested:
        entry = _named_entry(requested)
        if not load:
            return entry
        try:
            registry.load_scorer(entry)
        except (DiodeOptionError, KeyboardInterrupt):
            raise
        except BaseException as err:  # SystemExit from a plugin's load too: a clear error, not an exit
            raise DiodeOptionError(f"diode_model={requested!r} cannot be used: {type(err).__name__}: {err}") from err
        return entry
    for entry in automatic_order(hardware):
        if not load or _load_error(entry) is None:
            return entry
    return None


def automatic_order(hardware: HardwareInfo) -> list[ScorerEntry]:
    """The entries that apply to ``hardware`` in the order automatic selection tries them:
    the highest ``priority`` first; among equal priorities the lowest ``validated_regret``, an
    unvalidated entry after every validated one; then the order of registration (the order
    ``diode models`` lists them in). So a model a user trains outranks a shipped one only
    when its manifest says so (a higher priority) or validation measured it better."""
    applicable = [e for e in scorer_entries().values() if entry_applies(e, hardware)]
    unvalidated = float("inf")
    return sorted(applicable, key=lambda e: (-e.priority, unvalidated if e.validated_regret is None else e.validated_regret))


def pick_reason(hardware: HardwareInfo, picked: ScorerEntry | None, requested: str = "") -> str:
    """Why :func:`pick_entry` gave ``picked`` (for ``diode models``): the choice that named
    it, or how it outranks the next model that applies."""
    if picked is None:
        return f"no model applies to {hardware.name}: DIODE leaves its GEMMs to Inductor"
    if requested:
        return f"named by diode_model={requested!r}"
    with _lock:
        if _preferred:
            return "chosen with register_model()"
    others = [e for e in automatic_order(hardware) if e.name != picked.name and _load_error(e) is None]
    if not others:
        return f"the only usable model that applies to {hardware.name}"
    runner = others[0]
    if picked.priority != runner.priority:
        return f"priority {picked.priority}, above {runner.name}'s {runner.priority}"
    tie = f"priority {picked.priority} like {runner.name}"
    if picked.validated_regret is None:
        return f"{tie}, and neither is validated: listed first"
    if picked.validated_regret == runner.validated_regret:
        return f"{tie}, and the same validated top-1 regret: listed first"
    theirs = "is not validated" if runner.validated_regret is None else f"has {runner.validated_regret:.3f}"
    return f"{tie}, and a validated top-1 regret of {picked.validated_regret:.3f} where {runner.name} {theirs}"


def _named_entry(requested: str) -> ScorerEntry:
    """A registered name, else a path to a model file or folder."""
    entries = scorer_entries()
    if requested in entries:
        return entries[requested]
    if _looks_like_path(requested):
        try:
            # memoized: resolve_context and the compile cache key ask for every GEMM
            return registry.memoized(("path_entry", os.path.abspath(os.path.expanduser(requested))), lambda: model_entries.path_entry(requested))
        except model_entries.ModelLoadError as err:
            raise DiodeOptionError(f"diode_model={requested!r}: {err}") from err
    # a model whose manifest is broken is skipped, so it looks unknown: say what is wrong instead
    broken = [error for folder, error in model_entries.broken_manifests().items() if folder.name == requested]
    if broken:
        raise DiodeOptionError(f"diode_model={requested!r} cannot be used: {broken[0]}")
    known = ", ".join(sorted(entries)) or "none"
    raise DiodeOptionError(
        f"diode_model={requested!r}: no such model. Registered models: {known} "
        "(`diode models` lists them), or give a path to a model file or folder"
    )


def _looks_like_path(text: str) -> bool:
    return os.sep in text or "/" in text or text.endswith(".pt") or text.startswith(("~", "."))


def _contained(call: Callable[[], Any], counter: str, key: str, message: str, name: str) -> tuple[Any, BaseException | None]:
    """``(call(), None)``, or ``(None, error)`` when a plugin's code raised (``SystemExit``
    included): the failure is counted under ``counter`` and ``message`` is logged once per
    ``key``, with the entry's ``name``, the error's type and the error."""
    try:
        return call(), None
    except KeyboardInterrupt:
        raise
    except BaseException as err:
        counters.record_counter(counter)
        counters.warn_once(key, message, name, type(err).__name__, err)
        return None, err


def entry_applies(entry: ScorerEntry, hardware: HardwareInfo) -> bool:
    """``entry.applies_to(hardware)``; an entry whose check raises (a plugin's bug) does not apply,
    with one warning naming it, so that it cannot hide the other models."""
    applies, _ = _contained(
        lambda: bool(entry.applies_to(hardware)), "plugin_errors", f"applies_to:{entry.name}",
        "DIODE skips scorer %r: its applies_to(hardware) raised %s: %s; the other models are "
        "unaffected, and it can still be chosen by name (diode_model)",
        entry.name,
    )  # fmt: skip
    return applies is True


def _load_error(entry: ScorerEntry) -> BaseException | None:
    """The error loading ``entry`` raised, or None if it loads. Memoized like a success; the
    first failure is counted (``model_load_failures``) and logged. Any failure of a model picked
    automatically is a fallback to the next."""

    def compute() -> BaseException | None:
        return _contained(
            lambda: registry.load_scorer(entry), "model_load_failures", f"load:{entry.name}",
            "DIODE skips model %r, which applies to this hardware but cannot be used (%s: %s); "
            "the next model that applies is used instead",
            entry.name,
        )[1]  # fmt: skip

    return registry.memoized(("load_error", entry.name), compute)
