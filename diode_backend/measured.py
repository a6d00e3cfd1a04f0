"""Measured decisions: the winner DIODE measured for a GEMM (:mod:`diode_backend.inductor.measure`),
kept on disk so that a later compile of the same GEMM, in any process, is a single pick with no
inference and no measurement, whatever the confidence.

They live in the prediction cache's root, in their own schema folder (:data:`FOLDER`), and use
its store (:class:`~diode_backend.cache.PredictionCache`: atomic synced writes, private folders,
least-recently-used eviction; an unreadable or foreign entry is a miss). An entry holds what
``diode cache export`` turns into training data: the problem, the hardware, the measured configs
and their times. The same store functions (:func:`read_decision`, :func:`write_decision`,
:func:`stored_entries`) keep the predicted decisions (:mod:`diode_backend.predicted`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache as memoized
from typing import TypeVar

import msgpack

from . import codec, counters
from .cache import canonical, default_cache, open_entry
from .problem import GemmProblem, HardwareInfo, KernelConfig

#: Bump when the entry layout or the key recipe changes; old folders are then simply ignored.
SCHEMA_VERSION = 1
FOLDER = f"measured-v{SCHEMA_VERSION}"
ENTRY_TAG = "diode-measured"
T = TypeVar("T")


@dataclass(frozen=True)
class MeasuredDecision:
    """What DIODE measured for one GEMM: ``times_us[i]`` is the median time of ``configs[i]`` in
    microseconds (``inf``: it failed to compile or run). ``space`` names the candidate set they
    were drawn from (:func:`decision_key`); ``versions`` the torch and triton versions."""

    problem: GemmProblem
    hardware: HardwareInfo
    configs: tuple[KernelConfig, ...]
    times_us: tuple[float, ...]
    space: str
    versions: dict[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if len(self.configs) != len(self.times_us) or not any(math.isfinite(t) for t in self.times_us):
            raise ValueError("a measured decision needs one time per config and one that ran")

    @property
    def winner(self) -> KernelConfig:
        """The config measured fastest."""
        return self.configs[min(range(len(self.times_us)), key=self.times_us.__getitem__)]


def decision_key(problem: GemmProblem, hardware: HardwareInfo, space: str) -> str:
    """The entry key (sha256 hex) of a measured decision.

    No model identity: a measurement says which kernel runs fastest whatever model proposed the
    candidates, so it stays valid when the model changes. The hardware, torch and triton
    versions are in it (the kernels themselves change with them), and so is ``space``, the
    backends and Triton search space Inductor generated the candidates from: the winner of
    another candidate set may not be one Inductor offers now.
    """
    payload = [SCHEMA_VERSION, canonical(hardware.to_dict()), *_versions().values(), canonical(problem.to_dict()), space]
    return hashlib.sha256(msgpack.packb(payload, use_bin_type=True)).hexdigest()


def lookup(problem: GemmProblem, hardware: HardwareInfo, space: str) -> MeasuredDecision | None:
    """The measured decision stored for this GEMM, or None. Never raises: a failing store is
    counted (``prediction_cache_errors``) and logged once, as the prediction cache's."""
    return read_decision(
        FOLDER, lambda: decision_key(problem, hardware, space), decode,
        lambda d: d.problem == problem and d.hardware == hardware,
    )  # fmt: skip


def remember(decision: MeasuredDecision) -> None:
    """Store ``decision`` (replacing an earlier one for the same GEMM). Never raises."""
    write_decision(FOLDER, lambda: decision_key(decision.problem, decision.hardware, decision.space), encode, decision)


def stored_decisions() -> Iterator[MeasuredDecision]:
    """Every readable measured decision in the store, in no particular order."""
    return stored_entries(FOLDER, decode)


# The store of decisions, shared with the predicted ones (diode_backend.predicted).


def read_decision(
    folder: str, key_of: Callable[[], str], decode: Callable[[bytes, str], T | None], matches: Callable[[T], bool]
) -> T | None:
    """The entry stored under ``key_of()`` in the schema ``folder``, decoded, or None: absent,
    or damaged (``decode`` returns None, or the decoded entry does not ``match`` the GEMM
    asked for: counted as ``prediction_cache_corrupt``). A hit refreshes the entry for
    eviction. Never raises: a failing store is counted (``prediction_cache_errors``) and
    logged once."""
    try:
        key = key_of()
        store = default_cache(folder)
        data = store.read(key)
        if data is None:
            return None
        decision = decode(data, key)
        if decision is None or not matches(decision):
            counters.record_counter("prediction_cache_corrupt")
            return None
        store.touch(key)
        return decision
    except Exception as err:
        _store_failed(folder, "read", err)
        return None


def write_decision(folder: str, key_of: Callable[[], str], encode: Callable[[str, T], bytes], decision: T) -> None:
    """Store ``decision`` under ``key_of()`` in ``folder``, replacing an earlier one. Never raises."""
    try:
        key = key_of()
        default_cache(folder).write(key, encode(key, decision))
    except Exception as err:
        _store_failed(folder, "write", err)


def stored_entries(folder: str, decode: Callable[[bytes, str], T | None]) -> Iterator[T]:
    """Every readable entry of ``folder``, decoded, in no particular order."""
    store = default_cache(folder)
    for path in store.entries():
        data = store.read(path.stem)
        decision = decode(data, path.stem) if data else None
        if decision is not None:
            yield decision


def encode(key: str, decision: MeasuredDecision) -> bytes:
    return msgpack.packb(
        {
            "tag": ENTRY_TAG,
            "version": SCHEMA_VERSION,
            "key": key,
            "problem": decision.problem.to_dict(),
            "hardware": decision.hardware.to_dict(),
            "configs": [c.to_dict() for c in decision.configs],
            "times_us": codec.pack("d", decision.times_us),
            "space": decision.space,
            "versions": decision.versions or _versions(),
        },
        use_bin_type=True,
    )


def decode(data: bytes, key: str) -> MeasuredDecision | None:
    """The decision in ``data`` if it is a whole, current-version entry for ``key``; None
    otherwise (never raises on bad bytes)."""
    try:
        entry = open_entry(data, key, ENTRY_TAG, SCHEMA_VERSION)
        if entry is None:
            return None
        times = tuple(codec.unpack("d", entry["times_us"]))
        if any(not t > 0 for t in times):  # a time is positive, or inf for a failed candidate
            return None
        return MeasuredDecision(
            problem=GemmProblem.from_dict(entry["problem"]),
            hardware=HardwareInfo.from_dict(entry["hardware"]),
            configs=tuple(KernelConfig.from_dict(c) for c in entry["configs"]),
            times_us=times,
            space=str(entry["space"]),
            versions={str(k): str(v) for k, v in entry["versions"].items()},
        )
    except Exception:  # truncated or garbage: msgpack, array and the dataclasses raise several types
        return None


@memoized
def _versions() -> dict[str, str]:
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "none"
    return {"torch": torch.__version__, "triton": triton_version}


def _store_failed(folder: str, action: str, error: BaseException) -> None:
    counters.record_counter("prediction_cache_errors")
    counters.warn_once(
        f"decisions:{folder}",
        "DIODE could not %s its stored decisions in %s (%s: %s); going on without them "
        "(logged once, counted as prediction_cache_errors in diode_backend.stats())",
        action,
        folder,
        type(error).__name__,
        error,
    )
