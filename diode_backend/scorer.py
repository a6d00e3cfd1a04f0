"""The scorer contract: anything that predicts GEMM kernel runtimes for DIODE to rank.

Built-in, shipped and plugin models all implement :class:`GemmScorer` and are offered to DIODE as
:class:`ScorerEntry` records through the ``diode_register_scorers`` hook.
"""

from __future__ import annotations

import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch

from .problem import GemmProblem, HardwareInfo, KernelConfig


@dataclass(frozen=True)
class Prediction:
    """A scorer's answer for one problem and its candidates.

    ``times_us[i]`` is the predicted runtime of ``configs[i]`` in microseconds, ``nan`` where the
    scorer cannot score that candidate. ``confidence`` is the probability that the candidate
    with the lowest predicted time is within 5% of the truly fastest of these candidates, or
    ``None`` where the scorer has no calibrated estimate (treated as not confident).
    ``from_cache``: read from the prediction cache rather than computed (where it came from, not
    what it says).
    """

    times_us: tuple[float, ...]
    confidence: float | None = None
    from_cache: bool = field(default=False, compare=False)

    def order(self) -> list[int]:
        """Indices of scored candidates, fastest first (ties keep the input order)."""
        return self.split()[0]

    def split(self) -> tuple[list[int], list[int]]:
        """``(order, unscored)``: the scored indices fastest first (ties keep the input order,
        infinite times last) and the unscored (NaN) indices in input order, from one stable
        sort in torch (NaN sorts last; several times faster than Python's ``sorted``)."""
        if not self.times_us:
            return [], []
        # array's C loop reads the floats in a third of torch.tensor's time
        times = torch.frombuffer(array.array("d", self.times_us), dtype=torch.float64)
        ranked = torch.sort(times, stable=True).indices.tolist()
        scored = len(ranked) - int(times.isnan().sum())
        return ranked[:scored], sorted(ranked[scored:])


def checked_prediction(scorer: GemmScorer, prediction: Prediction, candidates: int) -> Prediction:
    """``prediction`` with its confidence as a float, once it is known to be one time per
    candidate (each positive, ``inf`` or NaN) and a confidence in [0, 1] or None.

    :raises ValueError: naming the scorer otherwise: a scorer's bug must not decide a kernel,
        nor be cached.
    """
    times, confidence = tuple(prediction.times_us), prediction.confidence
    if len(times) != candidates:
        raise ValueError(f"scorer {scorer.name!r} returned {len(times)} times for {candidates} candidates")
    if not valid_times(times):
        bad = next(t for t in times if not _valid_time(t))
        raise ValueError(
            f"scorer {scorer.name!r} predicted {bad!r} us; a time must be positive (inf: cannot launch) or NaN (unscored)"
        )
    if confidence is not None:
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0:
            raise ValueError(f"scorer {scorer.name!r} returned confidence {confidence!r}; it must be in [0, 1] or None")
        confidence = float(confidence)  # an int 1 would be refused when read back from the cache
    return Prediction(times, confidence, prediction.from_cache)


def valid_times(times: Sequence[float]) -> bool:
    """Whether every predicted time is usable: a number, positive (``inf``: cannot launch) or NaN
    (unscored); never zero, negative or ``-inf``."""
    if not times:
        return True
    try:
        column = torch.frombuffer(array.array("d", times), dtype=torch.float64)
    except TypeError:  # not numbers
        return False
    return bool(((column > 0) | column.isnan()).all())


def _valid_time(time: Any) -> bool:
    return isinstance(time, (int, float)) and not isinstance(time, bool) and (time > 0 or time != time)


@runtime_checkable
class GemmScorer(Protocol):
    """Predicts runtimes of candidate kernels.

    ``identity`` must change whenever predictions could change (weights, code version); it is
    part of Inductor's compile cache key and of the prediction cache key.
    """

    name: str
    identity: str

    def predict(
        self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
    ) -> Prediction: ...


@dataclass(frozen=True)
class ScorerEntry:
    """A scorer offered to DIODE, loaded only when chosen.

    :param name: unique name users pass as ``diode_model``.
    :param load: builds the scorer (may read files); called at most once per process.
    :param applies_to: whether the scorer is meant for this hardware (automatic selection).
    :param priority: among scorers that apply, the highest priority is picked automatically.
    :param description: one line for ``diode models`` and ``diode_backend.status()``.
    :param identity: the scorer's identity known without loading it (e.g. a manifest's
        checksum); empty means "load the scorer and ask it".
    :param validated_regret: the geometric mean of the top-1 regret measured by validation
        (a manifest's ``top1_regret_geomean``; 1.0: every pick was the fastest), or None when
        not validated: among scorers of equal priority, the lowest is picked, an unvalidated
        one last.
    """

    name: str
    load: Callable[[], GemmScorer]
    applies_to: Callable[[HardwareInfo], bool]
    priority: int = 0
    description: str = ""
    identity: str = ""
    validated_regret: float | None = None
