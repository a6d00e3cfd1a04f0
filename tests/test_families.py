"""Model families: what a problem's family is, and splitting by whole families."""

from __future__ import annotations

import pytest
from synthetic_timings import synthetic_problems

from diode_backend.offline.families import (
    check_families,
    family_of,
    of_families,
    parse_families,
    stopping_problems,
    without_families,
)
from diode_backend.offline.training_split import split_families


def test_a_zoo_problem_belongs_to_its_family_any_other_to_its_generator():
    llama, lognormal = synthetic_problems(1, generator="zoo:llama") + synthetic_problems(1, generator="lognormal")
    assert (family_of(llama), family_of(lognormal)) == ("llama", "lognormal")
    assert parse_families("whisper, zoo:llama,") == ["whisper", "llama"]
    assert of_families([llama, lognormal], ["llama"]) == [llama]
    assert without_families([llama, lognormal], ["llama"]) == [lognormal]


def test_an_unknown_family_is_named_with_the_known_ones():
    records = synthetic_problems(1, generator="zoo:llama") + synthetic_problems(1, generator="zoo:bert")
    assert check_families(records, ["llama", "bert", "llama"]) == ["bert", "llama"]
    with pytest.raises(ValueError, match="unknown family 'gpt'; the data has: bert, llama"):
        check_families(records, ["gpt"])


def test_held_out_halves_are_whole_families_within_the_fraction():
    families = ["a"] * 10 + ["b"] * 10 + ["c"] * 40 + ["d"] * 5 + ["e"] * 35
    train_ids, stop_ids, calibration_ids = split_families(families, 0.2, seed=0)
    assert sorted(train_ids + stop_ids + calibration_ids) == list(range(100))
    held = {families[i] for i in stop_ids} | {families[i] for i in calibration_ids}
    assert not held & {families[i] for i in train_ids}  # no family straddles
    assert not {families[i] for i in stop_ids} & {families[i] for i in calibration_ids}
    assert stop_ids and calibration_ids and len(stop_ids) + len(calibration_ids) <= 20
    seeds = {tuple(split_families(families, 0.2, seed=s)[1]) for s in range(6)}
    assert len(seeds) > 1  # the seed chooses the families


def test_two_families_are_held_out_even_when_none_fits_the_fraction():
    families = ["a"] * 30 + ["b"] * 30 + ["c"] * 30 + ["d"] * 10
    _, stop_ids, calibration_ids = split_families(families, 0.05, seed=0)
    held = sorted({families[i] for i in stop_ids + calibration_ids})
    assert held == ["a", "d"] or held == ["b", "d"] or held == ["c", "d"]


def test_few_families_split_by_problem():
    train_ids, stop_ids, calibration_ids = split_families(["a"] * 30 + ["b"] * 20, 0.2, seed=0)
    assert (len(train_ids), len(stop_ids), len(calibration_ids)) == (40, 5, 5)


def test_defaults_are_chosen_on_the_training_split_of_the_families_the_model_stopped_on():
    bert = synthetic_problems(3, generator="zoo:bert")
    records = bert + synthetic_problems(2, split="validation", generator="zoo:bert") + synthetic_problems(2, generator="zoo:llama")
    training = {"stopping_families": ["bert"], "stopping_problems": 3}
    assert stopping_problems(records, training) == bert
    with pytest.raises(ValueError, match="2 early-stopping problems in the data, the model stopped on 3"):
        stopping_problems(bert[:2], training)
