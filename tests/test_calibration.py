"""Confidence of a top pick: ensemble agreement and its calibration."""

from __future__ import annotations

import math

import pytest
import torch

from diode_backend.model.calibration import calibrate, confidence_raw, fit_calibration


def test_agreement_counts_members_whose_pick_the_mean_puts_within_5_percent():
    # Three candidates; the mean (log space) puts candidate 0 first and candidate 1 3% behind it,
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
    assert confidence_raw(log_times) == 0.75


def test_calibration_interpolates_between_edges_and_is_flat_outside():
    calibration = {"edges": [0.2, 0.6, 1.0], "values": [0.1, 0.5, 0.9]}
    assert calibrate(calibration, 0.0) == 0.1
    assert calibrate(calibration, 0.4) == pytest.approx(0.3)
    assert calibrate(calibration, 0.8) == pytest.approx(0.7)
    assert calibrate(calibration, 1.0) == 0.9
    assert calibrate({"edges": [0.5], "values": [0.7]}, 0.9) == 0.7


def test_fit_is_monotone_at_every_level_and_shrinks_sparse_levels():
    # 4 members: levels 0, .25, .5, .75, 1. Level .5 is seen once and hit, level .75 mostly missed.
    raw = [1.0] * 20 + [0.75] * 4 + [0.5] + [0.0] * 3
    hits = [True] * 18 + [False] * 2 + [True, False, False, False] + [True] + [False] * 3
    calibration = fit_calibration(raw, hits, members=4)
    assert calibration["edges"] == [0.0, 0.25, 0.5, 0.75, 1.0]
    values = calibration["values"]
    assert values == sorted(values)
    overall = (20 + 0.5) / (28 + 1)
    assert values[-1] == pytest.approx((18 + overall) / 21)
    assert values[0] == pytest.approx((0 + overall) / 4)
    # .5 (1 of 1) and .75 (1 of 4) violate the order: pooled, weighted by their counts
    pooled = ((1 + overall) / 2 * 1 + (1 + overall) / 5 * 4) / 5
    assert values[2] == pytest.approx(pooled) and values[3] == pytest.approx(pooled)
    assert values[1] == pytest.approx((values[0] + values[2]) / 2)  # never seen: interpolated
    assert all(0 <= v <= 1 and not math.isnan(v) for v in values)


def test_fit_needs_data():
    with pytest.raises(ValueError, match="at least one"):
        fit_calibration([], [], members=4)
