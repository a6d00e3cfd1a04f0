"""What the plugins offer, resolved and memoized: hardware per device, scorers and feature
extractors by name, and the scorers built from them.

Results are memoized per set of registered plugins, so registering or unregistering a plugin
(tests, ``diode`` subcommands) is seen at the next call. Which model ranks is decided in
:mod:`diode_backend.catalog`.
"""

from __future__ import annotations

import threading

from . import plugins
from .features import FeatureExtractor
from .problem import GemmProblem, HardwareInfo, KernelConfig
from .scorer import GemmScorer, ScorerEntry

_lock = threading.Lock()
_memo: dict[tuple, object] = {}


def memoized(key: tuple, compute):
    """``compute()``'s value, computed once per ``key`` and set of registered plugins."""
    full_key = (plugins.plugin_signature(), *key)
    with _lock:
        if full_key in _memo:
            return _memo[full_key]
    value = compute()
    with _lock:
        return _memo.setdefault(full_key, value)


def clear() -> None:
    """Forget memoized hardware, entries and loaded scorers."""
    with _lock:
        _memo.clear()


def detect_hardware(device: str) -> HardwareInfo | None:
    """The hardware description for ``device`` (e.g. ``"cuda:0"``), or None if no plugin knows it."""
    return memoized(("hardware", device), lambda: plugins.call_hook("diode_detect_hardware", lambda hook: hook(device=device)))


def known_hardware() -> dict[str, HardwareInfo]:
    """Devices that can be named without having one (``diode predict --hardware h100``), by
    lower-cased short name, from the ``diode_known_hardware`` hook."""

    def compute(hook) -> dict[str, HardwareInfo]:
        table: dict[str, HardwareInfo] = {}
        hook(register=lambda name, hw: table.setdefault(name.lower(), hw))
        return table

    return memoized(("known_hardware",), lambda: plugins.call_hook("diode_known_hardware", compute))


def scorer_entries() -> dict[str, ScorerEntry]:
    """Every scorer the plugins registered, by name; on a name clash the first registered wins."""

    def compute() -> dict[str, ScorerEntry]:
        entries: dict[str, ScorerEntry] = {}
        for entry in plugins.collect("diode_register_scorers"):
            entries.setdefault(entry.name, entry)
        return entries

    return dict(memoized(("scorers",), compute))


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

    return memoized(("scorer_sources",), compute)


def feature_extractors() -> dict[str, FeatureExtractor]:
    """Every registered feature extractor by schema name (a plugin's wins on a clash)."""

    def compute() -> dict[str, FeatureExtractor]:
        extractors: dict[str, FeatureExtractor] = {}
        for extractor in plugins.collect("diode_register_feature_extractors"):
            extractors.setdefault(extractor.schema, extractor)
        return extractors

    return memoized(("features",), compute)


def load_scorer(entry: ScorerEntry) -> GemmScorer:
    """Build the entry's scorer once per process (per plugin set)."""
    return memoized(("scorer", entry.name), entry.load)


def candidate_configs(problem: GemmProblem, hardware: HardwareInfo, search_space: str = "EXHAUSTIVE") -> list[KernelConfig] | None:
    """The plugins' ``diode_candidate_configs`` for ``problem`` (not memoized: each problem is
    asked once), or None when no plugin offers any."""
    configs = plugins.call_hook(
        "diode_candidate_configs",
        lambda hook: hook(problem=problem, hardware=hardware, search_space=search_space),
    )
    return list(configs) if configs else None
