"""``benchmarks/trusted_miss_coverage.py`` on hand-made picks: the picks kept alone are those of
highest probability, their misses over issue 14's bound are counted per share and by what a
check would have caught, and each fold is scored by a hit model fitted on the other folds alone."""

from __future__ import annotations

import math

import pytest


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


def pick(script, fold=0, signal=0.0, ratio=1.0, aten=False, aten_ratio=None, triton_ratio=None, family="f", workload="decode"):
    return script.RankedPick(fold, family, workload, [signal, 0.0], aten, ratio, aten_ratio, triton_ratio)


def test_misses_are_counted_by_kind_and_by_the_check_that_would_catch_them(script):
    picks = [
        pick(script, aten=True, ratio=1.5, aten_ratio=1.0),  # another ATen call is the fastest
        pick(script, aten=True, ratio=1.5, aten_ratio=1.5, triton_ratio=1.0),  # a Triton tile is
        pick(script, ratio=1.4, aten_ratio=1.1),  # a Triton pick where cuBLAS is within the bound
        pick(script, ratio=1.4, aten_ratio=2.0, triton_ratio=1.4, workload="fp32"),  # the pick is the predicted-best Triton
        pick(script, ratio=1.0, aten_ratio=1.3, workload="fp32"),
    ]
    assert script.misses(picks) == {
        "aten": {"picks": 2, "over_bound": 2, "over_bound_after_aten_check": 1, "over_bound_after_aten_and_triton_check": 0},
        "triton": {"picks": 3, "over_bound": 2, "over_bound_after_aten_check": 1, "over_bound_after_aten_and_triton_check": 1},
        "by_class": {
            "fp32": {"picks": 2, "over_bound": {"aten": 0, "triton": 1}},
            "decode": {"picks": 3, "over_bound": {"aten": 2, "triton": 1}},
        },
    }


def picks_where_the_first_signal_tells_misses(script) -> list:
    return [
        pick(script, fold=i % 3, family=f"f{i % 6}", signal=1.0 if i % 4 == 0 else 0.0, ratio=1.5 if i % 4 == 0 else 1.0)
        for i in range(120)
    ]


def test_a_signal_that_tells_misses_keeps_none_alone_until_the_hits_run_out(script):
    result = script.study(picks_where_the_first_signal_tells_misses(script), run_rows=173, shares=[0.5, 0.75, 1.0])
    assert result["picks"] == 120 and result["over_bound"] == 30
    for model in result["models"].values():
        assert model["auroc"]["within_bound"] == pytest.approx(1.0)
        by_share = {entry["share"]: entry for entry in model["coverage"]}
        assert by_share[0.5]["over_bound"] == 0 and by_share[0.75]["over_bound"] == 0
        assert by_share[1.0]["over_bound"] == 30


def test_each_fold_is_scored_by_a_fit_on_the_others(script):
    picks = picks_where_the_first_signal_tells_misses(script)
    # fold 0's picks say the opposite of the other folds': a fit that saw them would score them right
    flipped = [
        pick(script, p.fold, 1.0 - p.signals[0], p.ratio, family=p.family) if p.fold == 0 else p for p in picks
    ]
    probabilities = script.cross_fitted(flipped, within=1.15)
    fold_0 = [(prob, p.ratio) for prob, p in zip(probabilities, flipped) if p.fold == 0]
    hits = [prob for prob, ratio in fold_0 if ratio <= 1.15]
    misses = [prob for prob, ratio in fold_0 if ratio > 1.15]
    assert max(hits) < min(misses)


def test_the_command_refuses_a_folder_without_fold_models(script, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        script.main(["data", "--fold-models", str(tmp_path), "--out", str(tmp_path / "out.json")])
    assert exit_info.value.code == 2
    assert "no fold-K.pt there" in capsys.readouterr().err
