"""What the plugins offer, resolved and memoized: hardware per device, scorers and feature
extractors by name, and the scorers built from them.

Results are memoized per set of registered plugins, so registering or unregistering a plugin
(tests, ``diode`` subcommands) is seen at the next call. Which model ranks is decided in
:mod:`diode_backend.catalog`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from . import plugins
from .options import DiodeOptions
from .problem import GemmProblem, HardwareInfo, KernelConfig
from .scorer import GemmScorer, ScorerEntry

if TYPE_CHECKING:
    from .features import FeatureExtractor

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
    return memoized(("hardware", device), lambda: plugins.call_first("diode_detect_hardware", device=device))


def known_hardware() -> dict[str, HardwareInfo]:
    """Devices that can be named without having one (``diode predict --hardware h100``), by
    lower-cased short name, from the ``diode_known_hardware`` hook."""

    def compute() -> dict[str, HardwareInfo]:
        table: dict[str, HardwareInfo] = {}
        for name, hardware in plugins.collect("diode_known_hardware"):
            table.setdefault(name.lower(), hardware)
        return table

    return memoized(("known_hardware",), compute)


def scorer_entries() -> dict[str, ScorerEntry]:
    """Every scorer the plugins registered, by name; on a name clash the first registered wins."""
    entries: dict[str, ScorerEntry] = {}
    for _, entry in _registered_scorers():
        entries.setdefault(entry.name, entry)
    return entries


def scorer_sources() -> dict[str, str]:
    """Which plugin registered each scorer (name -> plugin name), for ``diode models``."""
    sources: dict[str, str] = {}
    for plugin, entry in _registered_scorers():
        sources.setdefault(entry.name, plugin)
    return sources


def _registered_scorers() -> list[tuple[str, ScorerEntry]]:
    """``(plugin name, entry)`` of the ``diode_register_scorers`` hook, asked once per plugin set."""
    return memoized(("scorers",), lambda: plugins.collect_by_plugin("diode_register_scorers"))


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


def compile_table(hardware: HardwareInfo) -> Path | None:
    """The plugins' ``diode_compile_seconds`` table for ``hardware``, or None when none offers one."""
    return memoized(("compile_table", hardware), lambda: plugins.call_first("diode_compile_seconds", hardware=hardware))


def candidate_configs(problem: GemmProblem, hardware: HardwareInfo, search_space: str = "EXHAUSTIVE") -> list[KernelConfig] | None:
    """The plugins' ``diode_candidate_configs`` for ``problem`` (not memoized: each problem is
    asked once), or None when no plugin offers any."""
    configs = plugins.call_first("diode_candidate_configs", problem=problem, hardware=hardware, search_space=search_space)
    return list(configs) if configs else None


def compile_time_configs(problem: GemmProblem, hardware: HardwareInfo) -> list[KernelConfig]:
    """What DIODE ranks for ``problem`` at compile time with the default ``diode_search_space``
    (:func:`candidate_configs`); empty when no plugin offers any."""
    return candidate_configs(problem, hardware, DiodeOptions().diode_search_space) or []
