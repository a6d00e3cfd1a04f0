"""``benchmarks/pick_labels_confidence.py``: R (fitted on the timed rows) against L (timed and
labelled rows), each scored out of fold on every row, and the rule of
``benchmarks/results/h100_pick_labels_confidence.md``."""

from __future__ import annotations

import random

import pytest

from diode_backend.model.hit_model import SIGNALS
from diode_backend.offline.out_of_fold import OutOfFoldRow


@pytest.fixture
def study(benchmark_scripts):
    return benchmark_scripts("runtime_list_confidence", "pick_labels_confidence")[1]


def _rows(labelled: bool, count: int = 60) -> list[OutOfFoldRow]:
    """Three folds of two families each. Timed picks always hit; a labelled pick hits where its
    first signal is high, which only rows of the labelled kind can teach."""
    rng = random.Random(0)
    rows = []
    for i in range(count):
        fold, first = i % 3, rng.uniform(-1, 1)
        signals = [first] + [0.0] * (len(SIGNALS) - 1)
        is_labelled = labelled and i % 2 == 0
        ratio = (1.0 if first > 0 else 1.5) if is_labelled else 1.0
        rows.append(OutOfFoldRow(fold, f"family-{fold}-{i % 2}", signals, ratio, is_labelled))
    return rows


def test_the_labelled_rows_teach_what_the_timed_ones_cannot_and_l_ships(study):
    result = study.compare(_rows(labelled=True))
    pooled = result["pooled"]
    assert {subset: pooled[subset]["L"]["rows"] for subset in pooled} == {"all": 60, "timed": 30, "labelled": 30}
    assert pooled["all"]["R"]["hits"] == pooled["all"]["L"]["hits"] == 30 + sum(
        r.ratio == 1.0 for r in _rows(labelled=True) if r.labelled
    )
    assert pooled["labelled"]["L"]["auroc"] > 0.9 > pooled["labelled"]["R"]["auroc"]
    assert pooled["all"]["L"]["log_loss"] < pooled["all"]["R"]["log_loss"]
    assert result["decision"] == "L"


def test_without_labelled_rows_l_is_r_and_r_stays(study):
    result = study.compare(_rows(labelled=False))
    assert set(result["pooled"]) == {"all", "timed"}
    assert result["pooled"]["all"]["L"] == result["pooled"]["all"]["R"]
    assert result["decision"] == "R"  # not lower: the rule asks L's log loss to be lower
