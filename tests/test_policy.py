"""The selection policy, as pure functions."""

from __future__ import annotations

import math

from diode_backend.options import DiodeOptions
from diode_backend.scorer import Prediction
from diode_backend.policy import Ranking, combined_confidence, measured_set, select_candidates

NAN = math.nan


def ranking(confidence, times=(3.0, 1.0, NAN, 2.0, 4.0)):
    return Ranking.of(Prediction(times, confidence))


TRITON = ("triton",) * 5  # the kinds of ranking()'s candidates, unless a test says otherwise
#: every scored candidate within the ratio: only diode_top_k limits the measured set
WIDE = {"diode_measure_ratio": 10.0}


def test_a_prediction_orders_scored_candidates_fastest_first_and_lists_the_unscored():
    inf = math.inf
    times = (3.0, NAN, 1.0, inf, 1.0, NAN, 0.5, inf)
    assert Prediction(times).split() == ([6, 2, 4, 0, 3, 7], [1, 5])  # ties and infs keep input order
    assert Prediction(times).order() == [6, 2, 4, 0, 3, 7]
    assert Prediction((NAN, NAN)).split() == ([], [0, 1]) and Prediction(()).split() == ([], [])


def test_confident_fast_pick_keeps_the_predicted_best():
    selection = select_candidates(ranking(0.95), DiodeOptions(fast_autotune=True, diode_confidence_threshold=0.9), TRITON)
    assert selection.keep == (1,) and selection.fallback is None


def test_unsure_fast_pick_keeps_top_k_and_unscored():
    selection = select_candidates(ranking(0.5), DiodeOptions(fast_autotune=True, diode_top_k=2, **WIDE), TRITON)
    assert selection.keep == (1, 3, 2) and selection.fallback == "low_confidence"


def test_unknown_confidence_is_not_confident():
    selection = select_candidates(ranking(None), DiodeOptions(fast_autotune=True, diode_confidence_threshold=0.0), TRITON)
    assert selection.fallback == "low_confidence"


def test_no_fallback_takes_the_best_guess():
    options = DiodeOptions(fast_autotune=True, diode_fallback_to_autotune=False)
    assert select_candidates(ranking(0.1), options, TRITON).keep == (1,)


def test_without_fast_autotune_top_k_is_measured_without_counting_a_fallback():
    selection = select_candidates(ranking(0.99), DiodeOptions(diode_top_k=3, **WIDE), TRITON)
    assert selection.keep == (1, 3, 0, 2) and selection.fallback is None


def test_nothing_scored_keeps_everything():
    selection = select_candidates(ranking(None, (NAN, NAN)), DiodeOptions(fast_autotune=True), TRITON[:2])
    assert selection.keep == (0, 1) and selection.fallback == "no_scored_candidates"


def test_only_candidates_within_the_ratio_of_the_best_are_measured():
    # predicted 3.0, 1.0, -, 2.0, 4.0 us: within 2.0x of 1.0 are 1.0 and 2.0
    assert measured_set(ranking(0.5), TRITON, DiodeOptions(diode_measure_ratio=2.0)) == (1, 3, 2)
    assert measured_set(ranking(0.5), TRITON, DiodeOptions(diode_measure_ratio=1.0)) == (1, 2)
    assert measured_set(ranking(0.5), TRITON, DiodeOptions(diode_measure_ratio=3.0, diode_top_k=1)) == (1, 2)


def test_every_aten_call_and_the_best_triton_candidate_are_always_measured():
    kinds = ("aten", "triton", "triton", "triton", "aten")  # both ATen calls (3.0, 4.0 us) far behind
    assert measured_set(ranking(0.5), kinds, DiodeOptions(diode_measure_ratio=1.0)) == (1, 0, 4, 2)
    kinds = ("triton", "aten", "triton", "triton", "triton")  # an ATen pick brings the best Triton
    assert measured_set(ranking(0.5), kinds, DiodeOptions(diode_measure_ratio=1.0)) == (1, 3, 2)
    kinds = ("bespoke", "bespoke", "triton", "bespoke", "bespoke")  # the unscored Triton is measured once
    assert measured_set(ranking(0.5), kinds, DiodeOptions(diode_measure_ratio=1.0)) == (1, 2)


def test_nothing_scored_measures_the_unscored():
    assert measured_set(ranking(0.5, (NAN, NAN)), TRITON[:2], DiodeOptions()) == (0, 1)


def test_the_measure_ratio_is_validated():
    import pytest

    from diode_backend.options import OPTIONS_BY_NAME, DiodeOptionError

    check = OPTIONS_BY_NAME["diode_measure_ratio"].check
    assert check("diode_measure_ratio", "1.5") == 1.5 and check("diode_measure_ratio", 1) == 1.0
    for bad in (0.99, "x", True, float("inf"), float("nan")):
        with pytest.raises(DiodeOptionError, match="diode_measure_ratio"):
            check("diode_measure_ratio", bad)


def test_combined_confidence():
    assert combined_confidence(0.9, 0.5) == 0.45
    assert combined_confidence(None, 0.5) is None


def test_candidates_estimated_to_compile_too_long_are_left_out_of_the_measured_set():
    # predicted 3.0, 1.0, -, 2.0, 4.0 us; the predicted best (1) takes 5 s to compile
    compile_s = (0.5, 5.0, None, 0.5, 0.5)
    options = DiodeOptions(diode_measure_ratio=2.0, diode_max_compile_s=2.0)
    assert measured_set(ranking(0.5), TRITON, options) == (1, 3, 2)  # no estimates: no bound
    # the ratio counts from the best left in (2.0 us): 2.0, 3.0 and 4.0 are within 2x of it
    assert measured_set(ranking(0.5), TRITON, options, compile_s) == (3, 0, 4, 2)
    assert measured_set(ranking(0.5), TRITON, DiodeOptions(diode_measure_ratio=2.0, diode_max_compile_s=5.0), compile_s) == (1, 3, 2)
    kinds = ("aten", "triton", "triton", "triton", "aten")  # the best Triton left in is 3, not 1
    assert measured_set(ranking(0.5), kinds, DiodeOptions(diode_measure_ratio=1.0, diode_max_compile_s=2.0), compile_s) == (3, 0, 4, 2)


def test_when_every_scored_candidate_compiles_too_long_the_bound_is_dropped():
    compile_s = (9.0, 9.0, None, 9.0, 9.0)
    options = DiodeOptions(diode_measure_ratio=2.0, diode_max_compile_s=2.0)
    assert measured_set(ranking(0.5), TRITON, options, compile_s) == (1, 3, 2)


def test_a_candidate_without_an_estimate_is_never_left_out():
    compile_s = (9.0, None, None, 9.0, 9.0)
    options = DiodeOptions(diode_measure_ratio=2.0, diode_max_compile_s=2.0)
    assert measured_set(ranking(0.5), TRITON, options, compile_s) == (1, 2)


def test_the_compile_bound_applies_to_measuring_only():
    compile_s = (0.5, 5.0, None, 0.5, 0.5)
    confident = DiodeOptions(fast_autotune=True, diode_confidence_threshold=0.9, diode_max_compile_s=2.0)
    asked = []

    def estimates():
        asked.append(1)
        return compile_s

    assert select_candidates(ranking(0.95), confident, TRITON, estimates).keep == (1,)
    assert asked == []  # a pick kept alone asks for no estimate
    unsure = DiodeOptions(fast_autotune=True, diode_measure_ratio=2.0, diode_max_compile_s=2.0)
    assert select_candidates(ranking(0.5), unsure, TRITON, estimates).keep == (3, 0, 4, 2)
    assert asked == [1]
