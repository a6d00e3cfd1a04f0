"""How many runs each candidate of a problem gets (the timing method's repetition rule), and
which of them count."""

from __future__ import annotations

from diode_backend.timing import TimingMethod, unstarved


def test_runs_follow_the_budget_between_the_bounds():
    method = TimingMethod(budget_us=1500.0, min_reps=3, max_reps=10, slow_ratio=0.0)
    assert method.reps([5.0, 100.0, 300.0, 2000.0]) == [10, 10, 5, 3]


def test_candidates_far_slower_than_the_fastest_are_run_once_more():
    method = TimingMethod(budget_us=1500.0, slow_ratio=2.0, slow_reps=1)
    assert method.reps([5.0, 9.9, 10.1, 2000.0]) == [10, 10, 1, 1]
    assert method.reps([400.0, 700.0]) == [4, 3]  # within the ratio: by the budget
    assert method.reps([]) == []


def test_starved_runs_are_left_out_unless_every_run_was():
    # a starved run timed the host's pace as well as the kernel: 44.9 where the kernel took 10
    assert unstarved([10.1, 44.9, 9.8, 10.0], [False, True, False, False]) == [10.1, 9.8, 10.0]
    assert unstarved([44.9, 41.0], [True, True]) == [44.9, 41.0]
    assert unstarved([], []) == []
