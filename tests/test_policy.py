"""The selection policy, as pure functions."""

from __future__ import annotations

import math

from diode_backend.options import DiodeOptions
from diode_backend.scorer import Prediction
from diode_backend.policy import Ranking, combined_confidence, select_candidates

NAN = math.nan


def ranking(confidence, times=(3.0, 1.0, NAN, 2.0, 4.0)):
    return Ranking.of(Prediction(times, confidence))


def test_a_prediction_orders_scored_candidates_fastest_first_and_lists_the_unscored():
    inf = math.inf
    times = (3.0, NAN, 1.0, inf, 1.0, NAN, 0.5, inf)
    assert Prediction(times).split() == ([6, 2, 4, 0, 3, 7], [1, 5])  # ties and infs keep input order
    assert Prediction(times).order() == [6, 2, 4, 0, 3, 7]
    assert Prediction((NAN, NAN)).split() == ([], [0, 1]) and Prediction(()).split() == ([], [])


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
