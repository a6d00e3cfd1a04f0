"""Rank candidates and decide which go on to Inductor: the pure policy, no Inductor here."""

from __future__ import annotations

import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .options import DiodeOptions
from .problem import GemmProblem, HardwareInfo, KernelConfig
from .scorer import GemmScorer, Prediction


@dataclass(frozen=True)
class Ranking:
    """Candidates of one problem ordered by predicted time.

    ``order`` holds scored indices, fastest first; ``unscored`` those the scorer had no
    prediction for; ``confidence`` is the scorer's probability that ``order[0]`` is within 5% of
    the fastest (None: unknown); ``from_cache``: read from the prediction cache, not computed.
    """

    order: tuple[int, ...]
    unscored: tuple[int, ...]
    times_us: tuple[float, ...]
    confidence: float | None
    from_cache: bool = field(default=False, compare=False)  # where it came from, not what it says

    @classmethod
    def of(cls, prediction: Prediction) -> Ranking:
        order, unscored = prediction.split()
        return cls(tuple(order), tuple(unscored), prediction.times_us, prediction.confidence)


def rank_candidates(
    scorer: GemmScorer,
    problem: GemmProblem,
    configs: Sequence[KernelConfig],
    hardware: HardwareInfo,
) -> Ranking:
    """Ask ``scorer`` for runtimes and order the candidates; infinite times (cannot launch) are
    ranked last but stay scored.

    :raises ValueError: naming the scorer, when its answer is not one time per candidate (each
        positive, ``inf`` or NaN) and a confidence in [0, 1] or None: a scorer's bug must not
        decide a kernel, nor be cached.
    """
    prediction = scorer.predict(problem, configs, hardware)
    times, confidence = tuple(prediction.times_us), prediction.confidence
    if len(times) != len(configs):
        raise ValueError(f"scorer {scorer.name!r} returned {len(times)} times for {len(configs)} candidates")
    if not valid_times(times):
        bad = next(t for t in times if not _valid_time(t))
        raise ValueError(
            f"scorer {scorer.name!r} predicted {bad!r} us; a time must be positive (inf: cannot launch) or NaN (unscored)"
        )
    if confidence is not None:
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0:
            raise ValueError(f"scorer {scorer.name!r} returned confidence {confidence!r}; it must be in [0, 1] or None")
        confidence = float(confidence)  # an int 1 would be refused when read back from the cache
    return Ranking.of(Prediction(times, confidence))


def valid_times(times: Sequence[float]) -> bool:
    """Whether every predicted time is usable: a number, positive (``inf``: cannot launch) or NaN
    (unscored); never zero, negative or ``-inf``."""
    if not times:
        return True
    try:
        column = torch.frombuffer(array.array("d", times), dtype=torch.float64)  # 2,000 in ~10 us
    except TypeError:  # not numbers
        return False
    return bool(((column > 0) | column.isnan()).all())


def _valid_time(time: Any) -> bool:
    return isinstance(time, (int, float)) and not isinstance(time, bool) and (time > 0 or time != time)


@dataclass(frozen=True)
class Selection:
    """Which candidate indices Inductor gets, and why.

    ``fallback`` names the reason when DIODE did not make a confident single pick although
    ``fast_autotune`` asked for one (see :data:`diode_backend.counters.FALLBACK_REASONS`).
    """

    keep: tuple[int, ...]
    fallback: str | None = None


def select_candidates(ranking: Ranking, options: DiodeOptions) -> Selection:
    """Apply the options to a ranking.

    - no scored candidate: keep everything (nothing to guess with);
    - ``fast_autotune`` and confidence >= threshold, or ``diode_fallback_to_autotune=False``:
      keep the single best;
    - otherwise: keep the predicted top ``diode_top_k`` plus the unscored candidates, for
      Inductor to benchmark.
    """
    everything = tuple(sorted(ranking.order + ranking.unscored))
    if not ranking.order:
        return Selection(everything, "no_scored_candidates")
    confident = ranking.confidence is not None and ranking.confidence >= options.diode_confidence_threshold
    if options.fast_autotune and (confident or not options.diode_fallback_to_autotune):
        return Selection((ranking.order[0],))
    top_k = ranking.order[: options.diode_top_k] + ranking.unscored
    return Selection(top_k, "low_confidence" if options.fast_autotune else None)


def combined_confidence(
    group_confidence: float | None, union_confidence: float | None
) -> float | None:
    """Confidence of a pick made in two steps (best within its group, then best of the group
    winners), assuming the steps err independently."""
    if group_confidence is None or union_confidence is None:
        return None
    return group_confidence * union_confidence
