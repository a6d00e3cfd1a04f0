"""How many runs each candidate of a problem gets: the timing method's repetition rule."""

from __future__ import annotations

from diode_backend.timing import TimingMethod


def test_runs_follow_the_budget_between_the_bounds():
    method = TimingMethod(budget_us=1500.0, min_reps=3, max_reps=10, slow_ratio=0.0)
    assert method.reps([5.0, 100.0, 300.0, 2000.0]) == [10, 10, 5, 3]


def test_candidates_far_slower_than_the_fastest_are_run_once_more():
    method = TimingMethod(budget_us=1500.0, slow_ratio=2.0, slow_reps=1)
    assert method.reps([5.0, 9.9, 10.1, 2000.0]) == [10, 10, 1, 1]
    assert method.reps([400.0, 700.0]) == [4, 3]  # within the ratio: by the budget
    assert method.reps([]) == []
