"""What the plugins offer, resolved and memoized: hardware per device, scorers by name.

Results are memoized per set of registered plugins, so registering or unregistering a plugin
(tests, ``diode`` subcommands) is seen at the next call.
"""

from __future__ import annotations

import threading

from . import plugins
from .features import FeatureExtractor
from .options import DiodeOptionError
from .problem import HardwareInfo
from .scorer import GemmScorer, ScorerEntry

_lock = threading.Lock()
_memo: dict[tuple, object] = {}


def _memoized(key: tuple, compute):
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
    return _memoized(("hardware", device), lambda: plugins.hook().diode_detect_hardware(device=device))


def scorer_entries() -> dict[str, ScorerEntry]:
    """Every registered scorer by name; on a name clash the first registered (a plugin's) wins."""

    def compute() -> dict[str, ScorerEntry]:
        entries: dict[str, ScorerEntry] = {}
        for entry in plugins.collect("diode_register_scorers"):
            entries.setdefault(entry.name, entry)
        return entries

    return _memoized(("scorers",), compute)


def feature_extractors() -> dict[str, FeatureExtractor]:
    """Every registered feature extractor by schema name (a plugin's wins on a clash)."""

    def compute() -> dict[str, FeatureExtractor]:
        extractors: dict[str, FeatureExtractor] = {}
        for extractor in plugins.collect("diode_register_feature_extractors"):
            extractors.setdefault(extractor.schema, extractor)
        return extractors

    return _memoized(("features",), compute)


def pick_entry(hardware: HardwareInfo, requested: str = "") -> ScorerEntry | None:
    """The scorer entry to use: the one named by ``requested``, else the highest-priority entry
    that applies to ``hardware``; None if none applies. An unknown name is a user error."""
    entries = scorer_entries()
    if requested:
        if requested not in entries:
            known = ", ".join(sorted(entries)) or "none"
            raise DiodeOptionError(
                f"diode_model={requested!r}: no such model. Registered models: {known} "
                "(`diode models` lists them)"
            )
        return entries[requested]
    applicable = [e for e in entries.values() if e.applies_to(hardware)]
    return max(applicable, key=lambda e: e.priority, default=None)


def load_scorer(entry: ScorerEntry) -> GemmScorer:
    """Build the entry's scorer once per process (per plugin set)."""
    return _memoized(("scorer", entry.name), entry.load)
