"""``benchmarks/e2e_replay.py`` on a hand-made run: a row the new confidence trusts takes the
single pick's measured figures, one it does not takes the run's defaults where they measured,
and one the old confidence trusted but the new would measure is not replayed; each row's
references stay those of the run."""

from __future__ import annotations

import pytest
from e2e_rows import defaults, run, single_pick
from e2e_rows import row as e2e_row


@pytest.fixture
def replay(benchmark_scripts):
    return benchmark_scripts("e2e_report", "e2e_replay")[1]


def row(name: str, old_confidence: float, pick_us: float, defaults_us: float, old_trusted: bool) -> dict:
    fast = defaults(defaults_us, 0.5 if old_trusted else 2.0, old_trusted)
    return e2e_row(name, single_pick(pick_us, 0.5, old_confidence), fast, max_autotune=(12.0, 20.0))


@pytest.fixture
def result() -> dict:
    return run([
        row("trusted by both", 0.99, 11.0, 11.0, True),
        row("trusted by the new only", 0.90, 13.0, 10.0, False),  # its defaults measured the 10
        row("trusted by the old only", 0.97, 10.0, 10.0, True),
        row("trusted by neither", 0.50, 14.0, 10.5, False),
    ])


#: the new confidences: the first two over any default threshold, the others under
NEW = [0.999, 0.998, 0.90, 0.40]


def test_each_row_takes_the_measured_figures_its_new_decision_would_have_run(replay, result):
    replayed, skipped = replay.replayed_result(result, NEW, 0.95)
    assert [r["problem"] for r in skipped] == ["trusted by the old only"]
    assert skipped[0]["new_confidence"] == 0.90 and skipped[0]["old_confidence"] == 0.97
    by_name = {r["describe"]: r["modes"] for r in replayed["rows"]}
    assert by_name["trusted by the new only"]["diode_fast"]["runtime_us"] == 13.0
    assert by_name["trusted by the new only"]["diode_fast"]["replayed_from"] == "diode_pick"
    assert by_name["trusted by neither"]["diode_fast"]["compile_s"] == 2.0
    assert by_name["trusted by neither"]["diode_fast"]["replayed_from"] == "diode_fast"
    # the single pick carries the new confidence; the run's defaults stay in the row
    assert by_name["trusted by the new only"]["diode_pick"]["diode"]["decision"]["confidence"] == 0.998
    assert by_name["trusted by the new only"]["diode_fast_old"]["runtime_us"] == 10.0
    assert result["rows"][1]["modes"]["diode_fast"]["runtime_us"] == 10.0  # the run is not changed


def test_a_replayed_row_keeps_the_run_s_fastest_mode_as_its_reference(replay, result):
    import e2e_report

    replayed, _ = replay.replayed_result(result, NEW, replay.THRESHOLD)
    out = e2e_report.report(replayed)
    # "trusted by the new only": 13 over the run's 10, which its old defaults measured
    assert out["modes"]["diode_fast"]["run"]["worst"] == pytest.approx(13.0 / 10.0)
    assert out["modes"]["diode_fast_old"]["run"]["worst"] == pytest.approx(1.0)
    assert out["modes"]["diode_fast"]["compile_s_total"] == pytest.approx(0.5 + 0.5 + 2.0)
    assert out["trusted"]["count"] == 2


def test_the_run_s_tf32_rule_is_one_rule(replay):
    parts = [{"environment": {"triton_tf32_rule": "always"}}] * 2
    assert replay.run_tf32_rule({"parts": parts}) == "always"
    with pytest.raises(ValueError, match="disagree"):
        replay.run_tf32_rule({"parts": parts + [{"environment": {"triton_tf32_rule": "size"}}]})


def test_the_report_splits_the_defaults_compile_time_by_what_they_did_and_who_won(benchmark_scripts):
    (report,) = benchmark_scripts("e2e_report")

    def decided(pick_name: str, compile_s: float, measured: dict | None) -> dict:
        decision = {"pick": pick_name, "confidence": 0.5, "measured_us": measured}
        return {"describe": pick_name, "family": "f", "workload_class": "decode", "best_measured_us": 1.0,
                "modes": {"diode_fast": {"runtime_us": 1.0, "compile_s": compile_s, "diode": {"decision": decision}}}}  # fmt: skip

    rows = [
        decided("aten::mm", 0.1, None),
        decided("aten::mm", 0.3, {"aten::mm": 5.0}),  # one measured is a pick kept alone
        decided("triton::mm 64x64x32 s3 w4 g8", 1.5, {"aten::mm": 6.0, "triton::mm 64x64x32 s3 w4 g8": 5.0}),
        decided("triton::mm 64x64x32 s3 w4 g8", 1.0, {"aten::mm": 6.0, "triton::mm 64x64x32 s3 w4 g8": 5.0}),
        decided("decompose_k 8", 2.0, {"aten::mm": 6.0, "decompose_k 8": 5.0}),
        {"describe": "failed", "family": "f", "workload_class": "decode", "best_measured_us": 1.0, "modes": {"diode_fast": {"error": "x"}}},
    ]
    assert report.compile_breakdown(rows) == {
        "alone aten": {"rows": 2, "total_s": pytest.approx(0.4), "median_s": pytest.approx(0.2)},
        "measured decompose_k 8": {"rows": 1, "total_s": 2.0, "median_s": 2.0},
        "measured triton": {"rows": 2, "total_s": 2.5, "median_s": pytest.approx(1.25)},
    }
