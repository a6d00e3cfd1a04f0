"""Measured decisions on disk: what they are keyed by, and damage read as a miss."""

from __future__ import annotations

import math

import diode_backend
from diode_backend import measured
from diode_backend.cache import default_cache
from diode_backend.problem import GemmProblem, KernelConfig
from synthetic_timings import H100

PROBLEM = GemmProblem("mm", 4096, 1024, 2048, dtype="bfloat16", a_layout="row", b_layout="col")
CONFIGS = (KernelConfig("aten", "aten::mm"), KernelConfig("triton", "triton::mm", 128, 128, 64, 3, 8, 8))
DECISION = measured.MeasuredDecision(PROBLEM, H100, CONFIGS, (41.5, 38.25), "DIODE/EXHAUSTIVE")


def test_a_stored_decision_is_found_again_whole():
    measured.remember(DECISION)
    found = measured.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE")
    assert found == DECISION and found.winner == CONFIGS[1]
    assert found.versions["torch"] and "triton" in found.versions


def test_another_candidate_set_problem_or_torch_version_misses(monkeypatch):
    measured.remember(DECISION)
    assert measured.lookup(PROBLEM, H100, "ATEN,TRITON/DEFAULT") is None
    assert measured.lookup(GemmProblem("mm", 4096, 1024, 2048), H100, "DIODE/EXHAUSTIVE") is None
    monkeypatch.setattr(measured, "_versions", lambda: {"torch": "9.9.9", "triton": "9.9.9"})
    assert measured.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE") is None


def test_a_damaged_entry_is_a_miss_and_counted():
    measured.remember(DECISION)
    (path,) = default_cache(measured.FOLDER).entries()
    path.write_bytes(path.read_bytes()[:-7])
    assert measured.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE") is None
    assert diode_backend.stats()["counters"]["prediction_cache_corrupt"] == 1


def test_a_failed_candidate_is_kept_as_infinite_and_never_wins():
    decision = measured.MeasuredDecision(PROBLEM, H100, CONFIGS, (math.inf, 50.0), "DIODE/EXHAUSTIVE")
    measured.remember(decision)
    assert measured.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE").winner == CONFIGS[1]


def test_an_unwritable_store_is_counted_not_raised(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DIODE_CACHE_DIR", str(blocker))  # a file where the folder should be
    measured.remember(DECISION)
    assert measured.lookup(PROBLEM, H100, "DIODE/EXHAUSTIVE") is None
    assert diode_backend.stats()["counters"]["prediction_cache_errors"] >= 1
