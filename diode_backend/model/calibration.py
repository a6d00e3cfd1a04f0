"""How sure a timing model is of its top pick: the raw ensemble agreement, its calibration, and
fitting that calibration on held-out problems.

``raw`` (:func:`confidence_raw`): the fraction of ensemble members whose own fastest candidate
is, by the ensemble-mean prediction, within 5% of the mean's fastest; it takes the values
``0, 1/E, ..., 1``. The calibration, stored in the checkpoint as ``{"edges": [...], "values":
[...]}``, maps it piecewise-linearly (:func:`calibrate`) to the probability that the mean's pick
is truly within 5% of the fastest candidate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

#: A pick within this fraction of the fastest time counts as right.
TOLERANCE = 0.05


def confidence_raw(member_log_times: torch.Tensor) -> float:
    """Raw agreement in [0, 1] from per-member predictions ``[E, n]`` (natural-log
    microseconds); the ensemble mean is taken in log space."""
    mean = member_log_times.mean(0)
    picks = member_log_times.argmin(1)
    agree = mean[picks] <= mean.min() + math.log1p(TOLERANCE)
    return float(agree.double().mean())


def calibrate(calibration: Mapping[str, Sequence[float]], raw: float) -> float:
    """The calibrated probability for ``raw``: linear between edges, constant beyond them."""
    edges, values = calibration["edges"], calibration["values"]
    if raw <= edges[0]:
        return float(values[0])
    for x0, x1, y0, y1 in zip(edges, edges[1:], values, values[1:]):
        if raw < x1:
            return float(y0 + (y1 - y0) * (raw - x0) / (x1 - x0))
        if raw == x1:
            return float(y1)
    return float(values[-1])


def fit_calibration(raw: Sequence[float], hits: Sequence[bool], members: int) -> dict[str, list[float]]:
    """Fit values at the raw levels ``0, 1/E, ..., 1`` from held-out ``(raw, hit)`` pairs.

    Each level's value is its observed hit rate shrunk towards the overall rate (itself shrunk
    by half a pseudo observation each way, so no level claims certainty from finite data) by one
    pseudo observation (few held-out problems sit at low agreement), then made non-decreasing by
    pool-adjacent-violators (more agreement never means less confidence). Levels no problem
    reached are interpolated from their neighbours.
    """
    if not raw:
        raise ValueError("calibration needs at least one held-out problem")
    levels = [k / members for k in range(members + 1)]
    counts = [0] * len(levels)
    successes = [0] * len(levels)
    for value, hit in zip(raw, hits):
        level = round(value * members)
        counts[level] += 1
        successes[level] += int(hit)
    overall = (sum(successes) + 0.5) / (sum(counts) + 1)
    present = [k for k in range(len(levels)) if counts[k]]
    rates = [(successes[k] + overall) / (counts[k] + 1) for k in present]
    fitted = {
        "edges": [levels[k] for k in present],
        "values": _pool_adjacent_violators(rates, [counts[k] for k in present]),
    }
    return {"edges": levels, "values": [calibrate(fitted, level) for level in levels]}


def _pool_adjacent_violators(values: list[float], weights: list[int]) -> list[float]:
    """The non-decreasing sequence closest to ``values`` in weighted least squares."""
    blocks: list[list[float]] = []  # [mean, weight, length]
    for value, weight in zip(values, weights):
        blocks.append([value, float(weight), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean2, weight2, length2 = blocks.pop()
            mean1, weight1, length1 = blocks[-1]
            total = weight1 + weight2
            blocks[-1] = [(mean1 * weight1 + mean2 * weight2) / total, total, length1 + length2]
    return [mean for mean, _, length in blocks for _ in range(length)]
