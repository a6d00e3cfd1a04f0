"""Process-wide counters that answer "what did DIODE do?" (``diode_backend.stats()``)."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter, deque
from collections.abc import Iterator
from typing import Any

from .logs import log

#: Why a GEMM was left to Inductor's own choice (or to the best guess), for the stats.
FALLBACK_REASONS = (
    "no_hardware",  # no plugin could describe the device
    "no_model",  # no scorer applies to this hardware
    "unsupported_op",  # not mm/addmm/bmm/baddbmm
    "unsupported_dtype",  # not fp16/bf16/fp32
    "no_scored_candidates",  # the scorer could score none of the op's candidates, in any group
    "low_confidence",  # fast_autotune asked for one pick but confidence was under the threshold
    "internal_error",  # DIODE raised; Inductor's own behaviour was used
    "choices_class_override",  # the user's inductor_choices_class does not include DIODE
    "measurement_failed",  # every candidate DIODE measured failed: Inductor benchmarked them
    "not_measurable",  # a candidate DIODE cannot launch (CUTLASS, CPP, ...): Inductor benchmarked
    "measurement_not_deferred",  # Inductor chose at once where DIODE expected it to ask later
)

_lock = threading.Lock()
_counts: Counter[str] = Counter()
_fallbacks: Counter[str] = Counter()
_picks_by_kind: Counter[str] = Counter()
_picks_by_model: Counter[str] = Counter()
_errors: Counter[str] = Counter()
_confidence = [0.0, 0]  # sum, count of decisions that had a confidence
_recent: deque[dict[str, Any]] = deque(maxlen=32)  # the last decisions, newest last
_logged: set[tuple[str, str]] = set()
_profiles: list[_Tally] = []  # one per profile_predictions() block open now


class _Tally:
    """What get_prediction_stats() reports, counted from some moment on."""

    def __init__(self) -> None:
        self.predictions = self.fallbacks = self.confident = 0
        self.confidence_sum = 0.0
        self.decision_counts = dict.fromkeys(DECISION_COUNTERS, 0)

    def summary(self) -> dict[str, Any]:
        return {
            "total_predictions": self.predictions,
            "avg_confidence": self.confidence_sum / self.confident if self.confident else None,
            "fallbacks": self.fallbacks,
            **self.decision_counts,
        }


#: What DIODE's own measurement and its stored decisions did (in :func:`get_prediction_stats` and
#: ``stats()["counters"]``): GEMMs decided by measuring, those of them measured after the graph
#: was lowered (their compiles overlapping), later compiles answered by a stored measured
#: decision, candidates dropped because they failed to compile or run, picks kept alone on the
#: model's word and stored as predicted decisions, and later compiles answered by one.
DECISION_COUNTERS = (
    "measured_decisions", "deferred_measurements", "measured_decision_hits", "measure_failed_candidates",
    "predicted_decisions", "predicted_decision_hits",
)  # fmt: skip


def record_decision(
    *, model: str, kind: str, candidates: int, kept: int, confidence: float | None,
    problem: str = "", pick: str = "", measured_us: dict[str, float | None] | None = None,
) -> None:
    """One GEMM ranked: ``kept`` of ``candidates`` go on to Inductor (1 means no benchmarking).
    ``problem`` and ``pick`` are human-readable descriptions kept in ``recent_decisions``, with
    ``measured_us`` where DIODE timed the kept choices itself (each choice's median time, None
    for one that failed to compile or run)."""
    with _lock:
        decision = {"problem": problem, "pick": pick, "model": model, "candidates": candidates,
                    "kept": kept, "confidence": confidence}  # fmt: skip
        if measured_us is not None:
            decision["measured_us"] = measured_us
        _recent.append(decision)
        _counts["decisions"] += 1
        _counts["candidates_seen"] += candidates
        _counts["candidates_kept"] += kept
        _counts["single_pick" if kept == 1 else "benchmarked_top_k"] += 1
        _picks_by_kind[kind] += 1
        _picks_by_model[model] += 1
        if confidence is not None:
            _confidence[0] += confidence
            _confidence[1] += 1
        for tally in _profiles:
            tally.predictions += 1
            if confidence is not None:
                tally.confidence_sum += confidence
                tally.confident += 1


def record_decision_counter(name: str, amount: int = 1) -> None:
    """Bump one of :data:`DECISION_COUNTERS`."""
    with _lock:
        _counts[name] += amount
        for tally in _profiles:
            tally.decision_counts[name] += amount


def record_fallback(reason: str) -> None:
    with _lock:
        _fallbacks[reason] += 1
        for tally in _profiles:
            tally.fallbacks += 1


def record_counter(name: str, amount: int = 1) -> None:
    """Bump a free-form counter (cache hits, misses, ...)."""
    with _lock:
        _counts[name] += amount


def record_error(where: str, error: BaseException) -> None:
    """Count an internal error and log it once per (place, error type), with its traceback."""
    key = (where, type(error).__name__)
    with _lock:
        _errors[f"{where}:{type(error).__name__}"] += 1
        _fallbacks["internal_error"] += 1
        first = key not in _logged
        _logged.add(key)
    if first:
        log.warning(
            "DIODE fell back to Inductor's own choice after an internal error in %s "
            "(logged once; counted in diode_backend.stats())",
            where,
            exc_info=error,
        )


def warn_once(key: str, message: str, *args: Any) -> None:
    """Log a warning the first time ``key`` is seen in this process."""
    with _lock:
        first = ("warn", key) not in _logged
        _logged.add(("warn", key))
    if first:
        log.warning(message, *args)


def stats() -> dict[str, Any]:
    """A snapshot: decisions, kept/seen candidates, picks by kind and model, fallbacks by
    reason, internal errors, mean confidence (``None`` before any confident scorer ran) and the
    last 32 decisions (problem, pick, model, candidates, kept, confidence)."""
    with _lock:
        total, n = _confidence
        return {
            "decisions": _counts["decisions"],
            "single_pick": _counts["single_pick"],
            "benchmarked_top_k": _counts["benchmarked_top_k"],
            "candidates_seen": _counts["candidates_seen"],
            "candidates_kept": _counts["candidates_kept"],
            "picks_by_kind": dict(_picks_by_kind),
            "picks_by_model": dict(_picks_by_model),
            "fallbacks": dict(_fallbacks),
            "errors": dict(_errors),
            "mean_confidence": total / n if n else None,
            "recent_decisions": list(_recent),
            "counters": {k: v for k, v in _counts.items() if k not in _DECISION_KEYS},
        }


_DECISION_KEYS = {"decisions", "single_pick", "benchmarked_top_k", "candidates_seen", "candidates_kept"}


def get_prediction_stats() -> dict[str, Any]:
    """The original torch-diode summary of :func:`stats`: ``total_predictions`` (GEMMs DIODE
    ranked), ``avg_confidence`` (their mean confidence; None before any had one) and
    ``fallbacks`` (GEMMs DIODE did not pick alone although asked: no model, an unsupported op
    or dtype, low confidence, an internal error, ...; by reason in ``stats()["fallbacks"]``),
    and the :data:`DECISION_COUNTERS`."""
    tally = _Tally()
    with _lock:
        tally.predictions, tally.fallbacks = _counts["decisions"], sum(_fallbacks.values())
        tally.confidence_sum, tally.confident = _confidence
        tally.decision_counts = {name: _counts[name] for name in DECISION_COUNTERS}
    return tally.summary()


@contextlib.contextmanager
def profile_predictions() -> Iterator[dict[str, Any]]:
    """``with profile_predictions() as profile:`` counts what DIODE decides inside the block,
    in every thread of the process; when the block ends, ``profile`` holds the keys of
    :func:`get_prediction_stats` for those decisions alone."""
    tally, profile = _Tally(), {}
    with _lock:
        _profiles.append(tally)
    try:
        yield profile
    finally:
        with _lock:
            _profiles.remove(tally)
        profile.update(tally.summary())


def reset_stats() -> None:
    with _lock:
        for counter in (_counts, _fallbacks, _picks_by_kind, _picks_by_model, _errors):
            counter.clear()
        _confidence[:] = [0.0, 0]
        _recent.clear()
