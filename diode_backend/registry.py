"""What the plugins offer, resolved and memoized: hardware per device, scorers by name, and
the model a user chose (``diode_model``, :func:`register_model`, a path to a model file).

Results are memoized per set of registered plugins, so registering or unregistering a plugin
(tests, ``diode`` subcommands) is seen at the next call.
"""

from __future__ import annotations

import os
import threading

from . import counters, plugins
from .features import FeatureExtractor
from .options import DiodeOptionError
from .problem import HardwareInfo
from .scorer import GemmScorer, ScorerEntry

_lock = threading.Lock()
_memo: dict[tuple, object] = {}
_registered: dict[str, ScorerEntry] = {}  # models registered by path (register_model)
_preferred: list[str] = []  # the name register_model chose, if any


def _memoized(key: tuple, compute):
    full_key = (plugins.plugin_signature(), *key)
    with _lock:
        if full_key in _memo:
            return _memo[full_key]
    value = compute()
    with _lock:
        return _memo.setdefault(full_key, value)


def clear() -> None:
    """Forget memoized hardware, entries and loaded scorers, broken manifests found, and what
    :func:`register_model` registered."""
    from .model.entries import forget_broken_manifests

    with _lock:
        _memo.clear()
        _registered.clear()
        _preferred.clear()
    forget_broken_manifests()  # found by the scans whose memoized results were just dropped


def detect_hardware(device: str) -> HardwareInfo | None:
    """The hardware description for ``device`` (e.g. ``"cuda:0"``), or None if no plugin knows it."""
    return _memoized(("hardware", device), lambda: plugins.call_hook("diode_detect_hardware", lambda hook: hook(device=device)))


def known_hardware() -> dict[str, HardwareInfo]:
    """Devices that can be named without having one (``diode predict --hardware h100``), by
    lower-cased short name, from the ``diode_known_hardware`` hook."""

    def compute(hook) -> dict[str, HardwareInfo]:
        table: dict[str, HardwareInfo] = {}
        hook(register=lambda name, hw: table.setdefault(name.lower(), hw))
        return table

    return _memoized(("known_hardware",), lambda: plugins.call_hook("diode_known_hardware", compute))


def resolve_hardware(spec: str | None = None) -> HardwareInfo:
    """The hardware a user names (:func:`get_detected_hardware`), which must be describable.
    Raises :class:`DiodeOptionError` naming the known names, or saying no plugin describes it."""
    hardware = get_detected_hardware(spec)
    if hardware is None:
        raise DiodeOptionError(
            f"no plugin can describe device {spec or default_device()!r}; name known hardware instead (e.g. h100)"
        )
    return hardware


def default_device() -> str:
    """``cuda`` when a GPU is visible, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def scorer_entries() -> dict[str, ScorerEntry]:
    """Every registered scorer by name, then models registered by path; on a name clash the
    first registered (a plugin's) wins."""

    def compute() -> dict[str, ScorerEntry]:
        entries: dict[str, ScorerEntry] = {}
        for entry in plugins.collect("diode_register_scorers"):
            entries.setdefault(entry.name, entry)
        return entries

    entries = dict(_memoized(("scorers",), compute))
    with _lock:
        for name, entry in _registered.items():
            entries.setdefault(name, entry)
    return entries


def scorer_sources() -> dict[str, str]:
    """Which plugin registered each scorer (name -> plugin name), for ``diode models``."""

    def compute() -> dict[str, str]:
        sources: dict[str, str] = {}
        # pluggy calls implementations last-registered first; mirror it so the winner matches
        for impl in reversed(plugins.get_plugin_manager().hook.diode_register_scorers.get_hookimpls()):
            try:
                impl.function(register=lambda entry, plugin=impl.plugin_name: sources.setdefault(entry.name, plugin))
            except KeyboardInterrupt:
                raise
            except BaseException:  # scorer_entries() warned about it already: it registered nothing
                pass
        return sources

    return _memoized(("scorer_sources",), compute)


def feature_extractors() -> dict[str, FeatureExtractor]:
    """Every registered feature extractor by schema name (a plugin's wins on a clash)."""

    def compute() -> dict[str, FeatureExtractor]:
        extractors: dict[str, FeatureExtractor] = {}
        for extractor in plugins.collect("diode_register_feature_extractors"):
            extractors.setdefault(extractor.schema, extractor)
        return extractors

    return _memoized(("features",), compute)


def pick_entry(hardware: HardwareInfo, requested: str = "") -> ScorerEntry | None:
    """The scorer entry to use, its scorer loaded (so a broken model file is known here).

    - ``requested`` (``diode_model``), else the model :func:`register_model` chose: that
      registered name or model path, whatever the hardware; an unknown name or a model that
      cannot load raises :class:`DiodeOptionError` naming the file and the fix;
    - otherwise the first entry of :func:`automatic_order` that loads; one that fails to load
      is skipped, counted (``model_load_failures``) and logged once; None if none.
    """
    if not requested:
        with _lock:
            requested = _preferred[0] if _preferred else ""
    if requested:
        entry = _named_entry(requested)
        try:
            load_scorer(entry)
        except (DiodeOptionError, KeyboardInterrupt):
            raise
        except BaseException as err:  # SystemExit from a plugin's load too: a clear error, not an exit
            raise DiodeOptionError(f"diode_model={requested!r} cannot be used: {type(err).__name__}: {err}") from err
        return entry
    for entry in automatic_order(hardware):
        if _load_error(entry) is None:
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
        from .model.checkpoint import ModelLoadError
        from .model.entries import path_entry

        try:
            # memoized: resolve_context and the compile cache key ask for every GEMM
            return _memoized(("path_entry", os.path.abspath(os.path.expanduser(requested))), lambda: path_entry(requested))
        except ModelLoadError as err:
            raise DiodeOptionError(f"diode_model={requested!r}: {err}") from err
    from .model.entries import broken_manifests

    # a model whose manifest is broken is skipped, so it looks unknown: say what is wrong instead
    broken = [error for folder, error in broken_manifests().items() if folder.name == requested]
    if broken:
        raise DiodeOptionError(f"diode_model={requested!r} cannot be used: {broken[0]}")
    known = ", ".join(sorted(entries)) or "none"
    raise DiodeOptionError(
        f"diode_model={requested!r}: no such model. Registered models: {known} "
        "(`diode models` lists them), or give a path to a model file or folder"
    )


def _looks_like_path(text: str) -> bool:
    return os.sep in text or "/" in text or text.endswith(".pt") or text.startswith(("~", "."))


def entry_applies(entry: ScorerEntry, hardware: HardwareInfo) -> bool:
    """``entry.applies_to(hardware)``; an entry whose check raises (a plugin's bug) does not apply,
    with one warning naming it, so that it cannot hide the other models."""
    try:
        return bool(entry.applies_to(hardware))
    except KeyboardInterrupt:
        raise
    except BaseException as err:
        counters.record_counter("plugin_errors")
        counters.warn_once(
            f"applies_to:{entry.name}",
            "DIODE skips scorer %r: its applies_to(hardware) raised %s: %s; the other models are "
            "unaffected, and it can still be chosen by name (diode_model)",
            entry.name, type(err).__name__, err,
        )  # fmt: skip
        return False


def _load_error(entry: ScorerEntry) -> BaseException | None:
    """The error loading ``entry`` raised, or None if it loads. Memoized like a success; the
    first failure is counted (``model_load_failures``) and logged."""

    def compute() -> BaseException | None:
        try:
            load_scorer(entry)
            return None
        except KeyboardInterrupt:
            raise
        except BaseException as err:  # any failure of a model picked automatically is a fallback
            counters.record_counter("model_load_failures")
            counters.warn_once(
                f"load:{entry.name}",
                "DIODE skips model %r, which applies to this hardware but cannot be used (%s: %s); "
                "the next model that applies is used instead",
                entry.name, type(err).__name__, err,
            )  # fmt: skip
            return err

    return _memoized(("load_error", entry.name), compute)


def load_scorer(entry: ScorerEntry) -> GemmScorer:
    """Build the entry's scorer once per process (per plugin set)."""
    return _memoized(("scorer", entry.name), entry.load)


def get_detected_hardware(hardware: str | None = None) -> HardwareInfo | None:
    """The hardware DIODE sees for ``hardware``: a known short name (``"h100"``, from the
    ``diode_known_hardware`` hook), or a device (``"cuda:0"``, ``"cpu"``; default ``cuda`` when
    available, else ``cpu``) to detect. None when no plugin can describe that device.

    :raises DiodeOptionError: ``hardware`` is neither a known name nor a device, naming the known names.
    """
    import torch

    known = known_hardware()
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
    return detect_hardware(device)


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
        load_scorer(entry)
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
