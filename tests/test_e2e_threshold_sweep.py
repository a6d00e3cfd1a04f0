"""``benchmarks/e2e_threshold_sweep.py`` on a hand-made run: at each threshold the rows whose
recorded confidence reaches it take the single pick's measured figures, the others the
defaults'; a row the run kept alone is not replayed where the threshold would measure it; issue
14's targets are judged on the replayed defaults."""

from __future__ import annotations

import json

import pytest
from e2e_rows import defaults, run, single_pick
from e2e_rows import row as e2e_row


@pytest.fixture
def script(benchmark_scripts):
    return benchmark_scripts("e2e_report", "e2e_replay", "e2e_threshold_sweep")[2]


def row(name: str, confidence: float, pick_us: float, defaults_us: float, kept_alone: bool) -> dict:
    fast = defaults(defaults_us, 0.4 if kept_alone else 2.0, kept_alone)
    return e2e_row(name, single_pick(pick_us, 0.4, confidence), fast, max_autotune=(11.0, 10.0))


@pytest.fixture
def result() -> dict:
    return run([
        row("kept alone", 0.99, 10.0, 10.0, True),
        row("sure enough", 0.90, 10.0, 10.0, False),
        row("unsure and wrong", 0.50, 14.0, 10.0, False),  # its pick runs 1.4x what the defaults measured
    ])


def test_each_threshold_keeps_alone_what_its_confidence_reaches(script, result):
    by_threshold = {s["threshold"]: s for s in script.sweep(result, [0.0, 0.8, 0.95, 1.0])}
    assert [by_threshold[t]["kept_alone"] for t in (0.0, 0.8, 0.95, 1.0)] == [3, 2, 1, 0]
    # at 1 the run's kept pick would be measured, which nothing in the run did
    assert by_threshold[1.0]["not_replayed"] == 1 and by_threshold[1.0]["rows"] == 2
    assert by_threshold[0.95]["compile_over_max_autotune"] == pytest.approx((0.4 + 2.0 + 2.0) / 30.0)
    assert by_threshold[0.8]["compile_over_max_autotune"] == pytest.approx((0.4 + 0.4 + 2.0) / 30.0)
    assert by_threshold[0.0]["run"]["worst"] == pytest.approx(1.4)
    assert [entry["problem"] for entry in by_threshold[0.0]["over_worst_bound"]] == ["unsure and wrong"]
    assert by_threshold[0.8]["run"]["worst"] == pytest.approx(1.0)


def test_issue_14_holds_only_where_runtime_worst_and_compile_all_do(script, result):
    meets = {s["threshold"]: s["meets_issue_14"] for s in script.sweep(result, [0.0, 0.8, 0.95])}
    # 0: compile 0.04 but worst 1.4; 0.8: worst 1.0 and compile 0.093; 0.95: compile 0.147
    assert meets == {0.0: False, 0.8: True, 0.95: False}


def test_the_command_writes_the_sweep_and_refuses_a_run_without_the_modes(script, result, tmp_path, capsys):
    run, out = tmp_path / "e2e.json", tmp_path / "sweep.json"
    run.write_text(json.dumps(result))
    assert script.main([str(run), "--thresholds", "0.95", "0.8", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert [s["threshold"] for s in written["sweep"]] == [0.8, 0.95]
    assert written["run"]["rows"] == 3 and written["what"].startswith("replayed")
    del result["modes"]["diode_fast"]
    run.write_text(json.dumps(result))
    with pytest.raises(SystemExit) as exit_info:
        script.main([str(run)])
    assert exit_info.value.code == 2
    assert "no diode_fast mode" in capsys.readouterr().err


def with_calls(result: dict, *families: str | None) -> dict:
    """``result`` as run by calls given these ``--families`` (None: not given), the first the
    latest call of its part, the others earlier ones."""
    def call(name):
        command = "benchmarks/e2e_validation.py data --modes diode_pick" + (f" --families {name}" if name else "")
        return {"environment": {"command": command}}
    return {**result, "parts": [{**call(families[0]), "earlier_calls": [call(f) for f in families[1:]]}]}


def test_the_rule_selects_the_least_compile_within_the_geomean_slack_and_the_worst_bound(script, result):
    points = script.sweep(result, [0.0, 0.8, 0.95, 1.0])
    # 0 runs a 1.4x worst; 0.8 and 0.95 run alike (geomean 1.0), 0.8 compiling less; 1.0 leaves a row out
    assert script.selected(points)["threshold"] == 0.8
    assert script.selected([p for p in points if p["threshold"] in (0.0, 1.0)])["threshold"] == 0.0
    assert script.selected([p for p in points if p["threshold"] == 1.0]) is None


def test_select_chooses_only_on_a_run_of_the_stopping_families(script, result, tmp_path, capsys):
    run, out = tmp_path / "e2e.json", tmp_path / "sweep.json"
    run.write_text(json.dumps(with_calls(result, "stopping", "stopping")))
    assert script.main([str(run), "--select", "--thresholds", "0.0", "0.8", "0.95", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["selected"]["threshold"] == 0.8 and written["rule"]["selected_on"] == "stopping"
    assert script.main([str(run), "--select", "--out", str(out)]) == 0
    assert [p["threshold"] for p in json.loads(out.read_text())["sweep"]] == sorted(script.THRESHOLD_GRID)
    for families in (("held-out",), ("stopping", None), ("stopping", "held-out")):
        run.write_text(json.dumps(with_calls(result, *families)))
        with pytest.raises(SystemExit) as exit_info:
            script.main([str(run), "--select"])
        assert exit_info.value.code == 2
        assert "--select chooses on a run of --families stopping alone" in capsys.readouterr().err
