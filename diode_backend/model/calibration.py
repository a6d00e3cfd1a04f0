"""How sure a timing model is of its top pick: a raw score, its calibration, and fitting that
calibration on held-out problems.

``raw`` in [0, 1] is the product of two signals from the ensemble's per-member predictions
(:func:`pick_statistics`; a scorer multiplies it by the problem's familiarity,
:mod:`diode_backend.model.novelty`, before calibrating): the fraction of members whose own fastest
candidate is, by the ensemble mean, within 5% of the mean's fastest (agreement), and
``1 - exp(-gap / log 1.05)`` where ``gap`` is how far, in log time, the mean puts the runner-up
behind its pick (:func:`separation`): the members share the model's bias, so their agreement
alone says little, and a crowded predicted top is where picks go wrong (docs/decisions.md). The
calibration, stored in the checkpoint as ``{"edges": [...], "values": [...]}``, maps ``raw``
piecewise-linearly (:func:`calibrate`) to the probability that the mean's pick is truly within 5%
of the fastest."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

import torch

#: A pick within this fraction of the fastest time is a hit: what the confidence is the
#: probability of (sweep.ACCURACY_TOLERANCE is about numerical results, not times).
HIT_TOLERANCE = 0.05


def pick_statistics(member_log_times: torch.Tensor) -> tuple[int, float, float]:
    """``(pick, agreement, gap)`` of per-member predictions ``[E, n]`` (natural-log
    microseconds): the ensemble mean's fastest candidate, the fraction of members whose own
    fastest the mean puts within 5% of it, and how far (log time) the mean puts the runner-up
    behind it. One candidate: ``(0, 1.0, inf)``."""
    mean = member_log_times.mean(0)
    if mean.numel() < 2:
        return 0, 1.0, math.inf
    picks = member_log_times.argmin(1)
    agreement = float((mean[picks] <= mean.min() + math.log1p(HIT_TOLERANCE)).double().mean())
    best, runner_up = torch.topk(mean, 2, largest=False).values.tolist()
    return int(mean.argmin()), agreement, runner_up - best


def separation(gap: float) -> float:
    """``1 - exp(-gap / log 1.05)``: how clearly a pick ``gap`` (log time) ahead of the runner-up
    stands out, in [0, 1]."""
    return 1.0 - math.exp(-gap / math.log1p(HIT_TOLERANCE))


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


def fit_calibration(raw: Sequence[float], hits: Sequence[bool], bins: int = 8) -> dict[str, list[float]]:
    """Fit ``(edges, values)`` from held-out ``(raw, hit)`` pairs.

    The pairs are sorted by ``raw`` and cut into at most ``bins`` groups of equal size (at least
    8 pairs each); a group's edge is its mean ``raw``, its value its hit rate shrunk towards the
    overall rate by one pseudo observation (the overall rate itself shrunk by half a pseudo
    observation each way, so no group claims certainty from finite data), then made
    non-decreasing by pool-adjacent-violators (a higher score never means less confidence).
    Groups with equal mean ``raw`` are merged.
    """
    if not raw:
        raise ValueError("calibration needs at least one held-out problem")
    pairs = sorted(zip(raw, map(bool, hits)))
    overall = (sum(hit for _, hit in pairs) + 0.5) / (len(pairs) + 1)
    count = max(1, min(bins, len(pairs) // 8))
    groups: list[list[tuple[float, bool]]] = []
    for index in range(count):
        group = pairs[index * len(pairs) // count : (index + 1) * len(pairs) // count]
        edge = statistics.fmean(r for r, _ in group)
        if groups and statistics.fmean(r for r, _ in groups[-1]) == edge:
            groups[-1] += group
        else:
            groups.append(group)
    edges = [statistics.fmean(r for r, _ in group) for group in groups]
    rates = [(sum(hit for _, hit in group) + overall) / (len(group) + 1) for group in groups]
    return {"edges": edges, "values": _pool_adjacent_violators(rates, [len(group) for group in groups])}


def auroc(scores: Sequence[float], hits: Sequence[bool]) -> float:
    """Area under the ROC curve of ``scores`` predicting ``hits``: the probability that a hit
    scores above a miss (ties count half); ``nan`` unless there are both hits and misses."""
    hit_scores = [s for s, hit in zip(scores, hits) if hit]
    miss_scores = [s for s, hit in zip(scores, hits) if not hit]
    if not hit_scores or not miss_scores:
        return math.nan
    wins = sum((h > m) + 0.5 * (h == m) for h in hit_scores for m in miss_scores)
    return wins / (len(hit_scores) * len(miss_scores))


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
