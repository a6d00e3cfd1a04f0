"""Confidence of a top pick: ensemble agreement and its calibration."""

from __future__ import annotations

import math

import pytest
import torch

from diode_backend.model.calibration import auroc, calibrate, fit_calibration, pick_statistics, separation


def raw_score(member_log_times):
    _, agreement, gap = pick_statistics(member_log_times)
    return agreement * separation(gap)


def test_raw_score_is_agreement_times_separation():
    # Three candidates; the mean (log space) puts candidate 0 first and candidate 1 behind it,
    # candidate 2 far behind.
    log_times = torch.log(
        torch.tensor(
            [
                [10.0, 10.5, 20.0],  # picks 0
                [10.4, 10.0, 20.0],  # picks 1: 3% behind by the mean, agrees
                [10.0, 10.8, 9.0],  # picks 2: far behind by the mean, disagrees
                [10.0, 10.5, 20.0],  # picks 0
            ]
        )
    )
    mean = log_times.mean(0)
    gap = float(mean[1] - mean[0])
    assert pick_statistics(log_times) == (0, 0.75, pytest.approx(gap))
    assert raw_score(log_times) == pytest.approx(0.75 * (1 - math.exp(-gap / math.log(1.05))))
    # a clear winner every member agrees on scores near 1; a tie scores 0
    assert raw_score(torch.log(torch.tensor([[1.0, 3.0], [1.0, 3.0]]))) > 0.99
    assert raw_score(torch.log(torch.tensor([[1.0, 1.0, 3.0]]))) == 0.0
    assert pick_statistics(torch.zeros(3, 1)) == (0, 1.0, math.inf) and raw_score(torch.zeros(3, 1)) == 1.0


def test_calibration_interpolates_between_edges_and_is_flat_outside():
    calibration = {"edges": [0.2, 0.6, 1.0], "values": [0.1, 0.5, 0.9]}
    assert calibrate(calibration, 0.0) == 0.1
    assert calibrate(calibration, 0.4) == pytest.approx(0.3)
    assert calibrate(calibration, 0.8) == pytest.approx(0.7)
    assert calibrate(calibration, 1.0) == 0.9
    assert calibrate({"edges": [0.5], "values": [0.7]}, 0.9) == 0.7


def test_fit_bins_by_score_shrinks_and_is_monotone():
    # 32 problems: four groups of 8 by score; hit counts 2, 6, 5, 8 (the third violates the order).
    raw = [i / 32 for i in range(32)]
    hits = [i < 2 for i in range(8)] + [i < 6 for i in range(8)] + [i < 5 for i in range(8)] + [True] * 8
    calibration = fit_calibration(raw, hits, bins=4)
    overall = (21 + 0.5) / 33
    edges, values = calibration["edges"], calibration["values"]
    assert edges == pytest.approx([3.5 / 32, 11.5 / 32, 19.5 / 32, 27.5 / 32])
    assert values == sorted(values) and all(0 < v < 1 for v in values)
    assert values[0] == pytest.approx((2 + overall) / 9)
    pooled = ((6 + overall) / 9 + (5 + overall) / 9) / 2  # PAV merges the violating pair
    assert values[1] == pytest.approx(pooled) and values[2] == pytest.approx(pooled)
    assert values[3] == pytest.approx((8 + overall) / 9)


def test_fit_with_few_problems_is_one_group():
    calibration = fit_calibration([0.2, 0.9, 0.5], [True, True, False])
    assert calibration == {"edges": [pytest.approx(1.6 / 3)], "values": [pytest.approx((2 + 2.5 / 4) / 4)]}


def test_fit_needs_data():
    with pytest.raises(ValueError, match="at least one"):
        fit_calibration([], [])


def test_auroc_is_the_chance_a_hit_scores_above_a_miss():
    assert auroc([0.9, 0.8, 0.3, 0.2], [True, True, False, False]) == 1.0
    assert auroc([0.9, 0.8, 0.3, 0.2], [False, False, True, True]) == 0.0
    # hits 0.9 and 0.5 against misses 0.5 and 0.1: wins 1 + 1 + 0.5 (tie) + 1 of 4 pairs
    assert auroc([0.9, 0.5, 0.5, 0.1], [True, True, False, False]) == pytest.approx(3.5 / 4)
    assert math.isnan(auroc([0.9, 0.8], [True, True]))
