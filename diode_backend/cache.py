"""The on-disk prediction cache (``diode_cache_predictions``): :class:`CachingScorer` wraps a
scorer, so a GEMM that was scored once costs a later process a file read, not an inference.

Where: ``$DIODE_CACHE_DIR`` if set, else ``platformdirs.user_cache_dir("diode-backend")``, then a
schema folder ``predictions-v1``; one msgpack file per prediction, ``<2 hex>/<64 hex>.msgpack``.

Guarantees (see ``docs/cache.md``):

- The key hashes everything that can change a ranking: the hardware description, the scorer's
  name and identity, the diode-backend and torch versions, the problem (op, sizes, dtypes,
  layouts, bias, TF32) and the ordered candidate list.
- Writes go to a temporary file in the entry's folder, synced, then ``os.replace``
  (:func:`~diode_backend.files.write_atomic`): a reader sees a whole entry or none. Concurrent
  writers of one key write the same bytes; the last rename wins.
- An unreadable, truncated, foreign or wrong-version entry is a miss, as is one whose times are
  out of range, and the prediction computed after it overwrites it; so is anything but a regular file (a FIFO, a link to a device) or an
  entry over :data:`MAX_ENTRY_BYTES`, which is never read past the cap.
- The cache is bounded (entries and bytes, soft limits checked on a sample of writes); the
  least recently used entries go first (a hit refreshes its file's mtime).
- Folders are created ``0o700`` and files ``0o600``: only their owner can read them.
- :class:`CachingScorer` never lets a cache failure fail a compile: it logs once, counts
  ``prediction_cache_errors`` and asks the scorer it wraps.

One module because the key recipe, the entry layout and the store share :data:`SCHEMA_VERSION`
and change together.
"""

from __future__ import annotations

import array
import functools
import hashlib
import os
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgpack

from . import __version__, codec, counters
from .files import RefusedFile, read_regular_file, write_atomic
from .problem import CONFIG_FIELDS, GemmProblem, HardwareInfo, KernelConfig
from .scorer import GemmScorer, Prediction, checked_prediction

APP_NAME = "diode-backend"
#: Bump when the entry layout or the key recipe changes; old folders are then simply ignored.
SCHEMA_VERSION = 1
ENTRY_TAG = "diode-ranking"
PREDICTIONS_FOLDER = f"predictions-v{SCHEMA_VERSION}"
CACHE_DIR_ENV = "DIODE_CACHE_DIR"
MAX_ENTRIES_ENV = "DIODE_CACHE_MAX_ENTRIES"
MAX_BYTES_ENV = "DIODE_CACHE_MAX_BYTES"
DEFAULT_MAX_ENTRIES = 20_000
DEFAULT_MAX_BYTES = 256 * 2**20
#: No entry is near this (2,000 candidates take 48 KiB); bigger is damage, not worth reading.
MAX_ENTRY_BYTES = 16 * 2**20
#: Writes between eviction checks, on average (each write checks with probability 1/this).
EVICTION_SAMPLE = 64
_SUFFIX = ".msgpack"
_TEMP_PREFIX = "."  # write_atomic's temporary files: ".<entry name>.<random>.tmp"
_STALE_TEMP_S = 3600.0  # a temporary file this old belongs to a writer that died
_CONFIG_FIELDS = attrgetter(*CONFIG_FIELDS)


@dataclass(frozen=True)
class CacheInfo:
    """What ``diode cache info`` prints: the folder, its entries and their total size in bytes."""

    directory: Path
    entries: int
    bytes: int
    max_entries: int
    max_bytes: int


class PredictionCache:
    """Predictions on disk under ``directory`` (created on the first write)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        eviction_sample: int = EVICTION_SAMPLE,
    ) -> None:
        self.directory = Path(directory)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.eviction_sample = max(1, eviction_sample)
        self._ready: set[Path] = set()  # folders known to exist, to skip a syscall per write

    def path_of(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}{_SUFFIX}"

    def get(self, key: str, candidates: int) -> Prediction | None:
        """The prediction stored for ``key``, or None (absent, unreadable, or not a prediction
        for ``candidates`` candidates). A hit refreshes the entry's mtime for eviction."""
        data = self.read(key)
        if data is None:
            return None
        prediction = decode_entry(data, key, candidates)
        if prediction is None:
            counters.record_counter("prediction_cache_corrupt")
            return None
        self.touch(key)
        return prediction

    def put(self, key: str, prediction: Prediction) -> None:
        """Store ``prediction`` under ``key`` atomically; sometimes enforce the size limits."""
        self.write(key, encode_entry(key, prediction))

    def read(self, key: str) -> bytes | None:
        """The stored bytes of ``key``: None when absent, ``b""`` when not a regular file or over
        :data:`MAX_ENTRY_BYTES` (damage, to be decoded as a miss)."""
        try:
            # DIODE writes entries as regular files: a link, FIFO or device there is damage
            return read_regular_file(self.path_of(key), MAX_ENTRY_BYTES, follow_links=False)
        except FileNotFoundError:
            return None
        except RefusedFile:
            return b""

    def touch(self, key: str) -> None:
        """Mark ``key`` as just used, for least-recently-used eviction."""
        try:
            os.utime(self.path_of(key))
        except OSError:  # evicted or cleared meanwhile: the hit stands
            pass

    def write(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` atomically; sometimes enforce the size limits."""
        try:
            self._write(key, data)
        except FileNotFoundError:  # the folder was removed (``diode cache clear``) since we saw it
            self._ready.clear()
            self._write(key, data)
        if random.random() * self.eviction_sample < 1.0:
            self.evict()

    def entries(self) -> list[Path]:
        """The path of every entry (temporary files aside)."""
        return [path for _, _, path in self._scan()[0]]

    def _write(self, key: str, data: bytes) -> None:
        final = self.path_of(key)
        folder = final.parent
        if folder not in self._ready:
            # the app folder too: a fresh user cache folder is private from the start
            for path in (self.directory.parent, self.directory, folder):
                _make_private_dir(path)
            self._ready.add(folder)
        write_atomic(final, data, mode=0o600, create_folder=False)

    def evict(self) -> int:
        """Delete least recently used entries until both limits hold with 10% to spare (so the
        next writes do not evict again at once), and temporary files left by dead writers.
        Returns the number of entries deleted."""
        entries, _ = self._scan(remove_stale_temps=True)
        count, size = len(entries), sum(e[1] for e in entries)
        if count <= self.max_entries and size <= self.max_bytes:
            return 0
        target_count, target_size = int(self.max_entries * 0.9), int(self.max_bytes * 0.9)
        removed = 0
        for _, entry_size, path in sorted(entries):
            if count <= target_count and size <= target_size:
                break
            if _unlink_quietly(path):
                removed += 1
            count -= 1
            size -= entry_size
        return removed

    def info(self) -> CacheInfo:
        entries, _ = self._scan()
        return CacheInfo(self.directory, len(entries), sum(e[1] for e in entries), self.max_entries, self.max_bytes)

    def clear(self) -> int:
        """Delete every entry (and temporary file); returns the number of entries deleted."""
        entries, temps = self._scan()
        removed = sum(_unlink_quietly(path) for _, _, path in entries)
        for path in temps:
            _unlink_quietly(path)
        return removed

    def _scan(self, remove_stale_temps: bool = False) -> tuple[list[tuple[float, int, Path]], list[Path]]:
        """(mtime, size, path) of every entry, and the temporary files; races with other
        processes (files vanishing mid-scan) are expected and skipped."""
        entries: list[tuple[float, int, Path]] = []
        temps: list[Path] = []
        now = time.time()
        try:
            shards = [d for d in os.scandir(self.directory) if d.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return entries, temps
        for shard in shards:
            try:
                files = list(os.scandir(shard.path))
            except FileNotFoundError:
                continue
            for item in files:
                try:
                    stat = item.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if item.name.startswith(_TEMP_PREFIX):
                    temps.append(Path(item.path))
                    if remove_stale_temps and now - stat.st_mtime > _STALE_TEMP_S:
                        _unlink_quietly(item.path)
                elif item.name.endswith(_SUFFIX):
                    entries.append((stat.st_mtime, stat.st_size, Path(item.path)))
        return entries, temps


def encode_entry(key: str, prediction: Prediction) -> bytes:
    """The bytes of one entry: a msgpack map tagged with :data:`ENTRY_TAG` and the version, the
    times as a little-endian column (:mod:`diode_backend.codec`)."""
    return msgpack.packb(
        {
            "tag": ENTRY_TAG,
            "version": SCHEMA_VERSION,
            "key": key,
            "candidates": len(prediction.times_us),
            "times_us": codec.pack("d", prediction.times_us),
            "confidence": prediction.confidence,
        },
        use_bin_type=True,
    )


def open_entry(data: bytes, key: str, tag: str, version: int) -> dict | None:
    """The fields of a stored entry whose envelope (``tag``, schema ``version``, ``key``) is the
    one expected; None for another kind, version or key.

    :raises Exception: on bytes that are not msgpack (callers treat any as a miss).
    """
    entry = msgpack.unpackb(data, raw=False)
    if not isinstance(entry, dict) or entry.get("tag") != tag:
        return None
    if entry.get("version") != version or entry.get("key") != key:
        return None
    return entry


def decode_entry(data: bytes, key: str, candidates: int) -> Prediction | None:
    """The prediction in ``data`` if it is a whole, current-version entry for ``key`` scoring
    ``candidates`` candidates; None otherwise (never raises on bad bytes)."""
    try:
        entry = open_entry(data, key, ENTRY_TAG, SCHEMA_VERSION)
        if entry is None or entry.get("candidates") != candidates:
            return None
        times = codec.unpack("d", entry["times_us"])
        confidence = entry.get("confidence")
    except Exception:  # truncated or garbage: msgpack and array raise several types
        return None
    if len(times) != candidates:
        return None
    if confidence is not None and not (isinstance(confidence, float) and 0.0 <= confidence <= 1.0):
        return None
    # a negative or zero time would otherwise be served on every compile and never repaired
    if not _usable_times(times):
        return None
    return Prediction(tuple(times), confidence, from_cache=True)


def _usable_times(times: array.array) -> bool:
    """Every time positive (``inf``: cannot launch) or NaN (unscored), checked on the decoded
    column without a copy."""
    import torch

    if not times:
        return True
    t = torch.frombuffer(times, dtype=torch.float64)
    return bool(((t > 0) | t.isnan()).all())


def prediction_key(
    scorer: GemmScorer, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
) -> str:
    """The entry key (sha256 hex) of ranking ``configs`` (in this order) for ``problem``."""
    import torch

    candidates = hashlib.sha256(
        msgpack.packb([_CONFIG_FIELDS(c) for c in configs], use_bin_type=True)
    ).digest()
    payload = [
        SCHEMA_VERSION,
        canonical(hardware.to_dict()),
        scorer.name,
        scorer.identity,
        __version__,
        torch.__version__,
        canonical(problem.to_dict()),
        candidates,
    ]
    return hashlib.sha256(msgpack.packb(payload, use_bin_type=True)).hexdigest()


def canonical(value: Any) -> Any:
    """Dicts as key-sorted pairs, so that equal data hashes equally whatever its insertion order."""
    if isinstance(value, dict):
        return [[k, canonical(value[k])] for k in sorted(value)]
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def cache_directory(folder: str = PREDICTIONS_FOLDER) -> Path:
    """The folder entries live in: ``$DIODE_CACHE_DIR`` (or the user cache folder) plus the
    schema folder (``folder``: another kind of entry's, e.g. measured decisions')."""
    root = os.environ.get(CACHE_DIR_ENV)
    base = Path(root).expanduser() if root else _user_cache_dir()
    return base / folder


@functools.cache
def _user_cache_dir() -> Path:
    import platformdirs  # only when the cache is used: keeps `import torch` cheap

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


_caches: dict[Path, PredictionCache] = {}
_caches_lock = threading.Lock()


def default_cache(folder: str = PREDICTIONS_FOLDER) -> PredictionCache:
    """The process's cache for the current :func:`cache_directory` of ``folder`` (limits from
    ``DIODE_CACHE_MAX_ENTRIES`` / ``DIODE_CACHE_MAX_BYTES``)."""
    directory = cache_directory(folder)
    with _caches_lock:
        cache = _caches.get(directory)
        if cache is None:
            cache = _caches[directory] = PredictionCache(
                directory,
                max_entries=_env_int(MAX_ENTRIES_ENV, DEFAULT_MAX_ENTRIES),
                max_bytes=_env_int(MAX_BYTES_ENV, DEFAULT_MAX_BYTES),
            )
        return cache


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        value = int(raw)
    except ValueError:
        if raw:
            counters.warn_once(name, "%s=%r is not a whole number; using %d", name, raw, default)
        return default
    return value if value > 0 else default


class CachingScorer:
    """A :class:`~diode_backend.scorer.GemmScorer` that answers from the prediction cache and asks
    ``scorer`` on a miss, storing its answer once
    :func:`~diode_backend.scorer.checked_prediction` accepts it. Same name and identity as
    ``scorer``.

    Counts ``prediction_cache_hits``/``_misses`` and the microseconds each took
    (``prediction_cache_hit_us``/``_miss_us``, a miss including the inference). A failing cache
    is counted (``prediction_cache_errors``), logged once and bypassed; the scorer's own errors
    propagate as without the cache.
    """

    def __init__(self, scorer: GemmScorer, cache: PredictionCache | None = None) -> None:
        self.scorer = scorer
        self.name = scorer.name
        self.identity = scorer.identity
        self._cache = cache  # None: default_cache() at each call (it follows DIODE_CACHE_DIR)

    def predict(self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo) -> Prediction:
        start = time.perf_counter()
        cache = key = prediction = None
        try:
            cache = self._cache or default_cache()
            key = prediction_key(self.scorer, problem, configs, hardware)
            prediction = cache.get(key, len(configs))
        except Exception as err:
            _cache_failed("read", err)
        if prediction is not None:
            counters.record_counter("prediction_cache_hits")
            counters.record_counter("prediction_cache_hit_us", _elapsed_us(start))
            return prediction
        prediction = checked_prediction(self.scorer, self.scorer.predict(problem, configs, hardware), len(configs))
        if cache is not None and key is not None:
            try:
                cache.put(key, prediction)
            except Exception as err:
                _cache_failed("write", err)
        counters.record_counter("prediction_cache_misses")
        counters.record_counter("prediction_cache_miss_us", _elapsed_us(start))
        return prediction


def _elapsed_us(start: float) -> int:
    return round((time.perf_counter() - start) * 1e6)


def _cache_failed(action: str, error: BaseException) -> None:
    counters.record_counter("prediction_cache_errors")
    try:
        where = str(cache_directory())
    except Exception:  # the error may be that the folder cannot be determined
        where = "its folder"
    counters.warn_once(
        "prediction_cache",  # one warning per process: the counter tells how often
        "DIODE could not %s its prediction cache in %s (%s: %s); predicting without it "
        "(logged once, counted as prediction_cache_errors in diode_backend.stats())",
        action,
        where,
        type(error).__name__,
        error,
    )


def _make_private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) readable by its owner only; an existing folder is
    left as it is."""
    if path.is_dir():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return
    os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask


def _unlink_quietly(path: str | os.PathLike[str]) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
