"""``benchmarks/trusted_miss_coverage.py`` on hand-made out-of-fold rows: the picks kept alone
are those of highest probability, their misses over issue 14's bound are counted per share, and
each fold is scored by a hit model fitted on the other folds alone."""

from __future__ import annotations

import math

import pytest

from diode_backend.offline.out_of_fold import OutOfFoldRow


@pytest.fixture
def script(benchmark_scripts):
    return benchmark_scripts("e2e_report", "runtime_list_confidence", "trusted_miss_coverage")[2]


def test_the_kept_picks_are_the_most_probable_and_their_misses_are_counted(script):
    probabilities = [0.9, 0.8, 0.7, 0.6]
    ratios = [1.0, 1.2, 1.4, 1.0]
    half, everything = script.coverage(probabilities, ratios, [0.5, 1.0], run_rows=100)
    assert half["kept"] == 2 and half["over_bound"] == 1 and half["over_far"] == 0 and half["worst"] == 1.2
    assert half["least_probability"] == 0.8 and half["geomean"] == pytest.approx(math.sqrt(1.2))
    # a run of 100 GEMMs keeping half alone: 50 kept, one in two over the bound
    assert half["run_expected_over_bound"] == pytest.approx(25.0)
    assert half["run_chance_none_over_bound"] == pytest.approx(math.exp(-25.0))
    assert everything["kept"] == 4 and everything["over_bound"] == 2 and everything["over_far"] == 1


def rows_where_the_first_signal_tells_misses() -> list[OutOfFoldRow]:
    rows = []
    for i in range(120):
        miss = i % 4 == 0
        signals = [1.0 if miss else 0.0, float(i % 7)]
        rows.append(OutOfFoldRow(fold=i % 3, family=f"f{i % 6}", signals=signals, ratio=1.5 if miss else 1.0))
    return rows


def test_a_signal_that_tells_misses_keeps_none_alone_until_the_hits_run_out(script):
    result = script.study(rows_where_the_first_signal_tells_misses(), run_rows=173, shares=[0.5, 0.75, 1.0])
    assert result["rows"] == 120 and result["over_bound"] == 30
    for model in result["models"].values():
        assert model["auroc"]["within_bound"] == pytest.approx(1.0)
        by_share = {entry["share"]: entry for entry in model["coverage"]}
        assert by_share[0.5]["over_bound"] == 0 and by_share[0.75]["over_bound"] == 0
        assert by_share[1.0]["over_bound"] == 30


def test_each_fold_is_scored_by_a_fit_on_the_others(script):
    rows = rows_where_the_first_signal_tells_misses()
    # fold 0's rows say the opposite of the other folds': a fit that saw them would score them right
    flipped = [
        OutOfFoldRow(r.fold, r.family, [1.0 - r.signals[0], r.signals[1]], r.ratio) if r.fold == 0 else r for r in rows
    ]
    probabilities = script.cross_fitted(flipped, within=1.15)
    fold_0 = [(p, r.ratio) for p, r in zip(probabilities, flipped) if r.fold == 0]
    hits = [p for p, ratio in fold_0 if ratio <= 1.15]
    misses = [p for p, ratio in fold_0 if ratio > 1.15]
    assert max(hits) < min(misses)
