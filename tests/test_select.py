"""The selection policy, as pure functions."""

from __future__ import annotations

import math

from diode_backend.options import DiodeOptions
from diode_backend.select import Ranking, combined_confidence, select_candidates

NAN = math.nan


def ranking(confidence, times=(3.0, 1.0, NAN, 2.0, 4.0)):
    order = tuple(sorted((i for i, t in enumerate(times) if not math.isnan(t)), key=lambda i: times[i]))
    return Ranking(order, tuple(i for i, t in enumerate(times) if math.isnan(t)), times, confidence)


def test_confident_fast_pick_keeps_the_predicted_best():
    selection = select_candidates(ranking(0.95), DiodeOptions(fast_autotune=True))
    assert selection.keep == (1,) and selection.fallback is None


def test_unsure_fast_pick_keeps_top_k_and_unscored():
    selection = select_candidates(ranking(0.5), DiodeOptions(fast_autotune=True, diode_top_k=2))
    assert selection.keep == (1, 3, 2) and selection.fallback == "low_confidence"


def test_unknown_confidence_is_not_confident():
    selection = select_candidates(ranking(None), DiodeOptions(fast_autotune=True, diode_confidence_threshold=0.0))
    assert selection.fallback == "low_confidence"


def test_no_fallback_takes_the_best_guess():
    options = DiodeOptions(fast_autotune=True, diode_fallback_to_autotune=False)
    assert select_candidates(ranking(0.1), options).keep == (1,)


def test_without_fast_autotune_top_k_is_benchmarked_without_counting_a_fallback():
    selection = select_candidates(ranking(0.99), DiodeOptions(diode_top_k=3))
    assert selection.keep == (1, 3, 0, 2) and selection.fallback is None


def test_nothing_scored_keeps_everything():
    selection = select_candidates(ranking(None, (NAN, NAN)), DiodeOptions(fast_autotune=True))
    assert selection.keep == (0, 1) and selection.fallback == "no_scored_candidates"


def test_combined_confidence():
    assert combined_confidence(0.9, 0.5) == 0.45
    assert combined_confidence(None, 0.5) is None
