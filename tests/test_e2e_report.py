"""``benchmarks/e2e_report.py`` on a hand-made run: each reference divides by what it names, the
defaults are compared with max-autotune row by row, the confidence's AUROC is over every single
pick, and the trusted misses are the picks the defaults kept alone."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

SHIPPED = Path(__file__).resolve().parents[1] / "trained_models" / "nvidia-h100-gemm"


@pytest.fixture
def reporter(benchmark_scripts):
    return benchmark_scripts("e2e_report")[0]


def mode(runtime_us: float, compile_s: float = 1.0, confidence: float | None = None, alone: bool | None = None, **extra) -> dict:
    figures = {"runtime_us": runtime_us, "compile_s": compile_s, **extra}
    if confidence is not None:
        figures["diode"] = {"decision": {"confidence": confidence}}
    if alone is not None:
        figures["diode"] = {"single_pick": int(alone)}
    return figures


def row(name: str, best: float, workload_class: str, **modes) -> dict:
    return {"describe": name, "family": "f", "workload_class": workload_class, "best_measured_us": best, "modes": modes}


@pytest.fixture
def result() -> dict:
    rows = [
        # the single pick trusted (kept alone by the defaults; here their runtime differs, as a
        # noisy row's can) and 1.3x the run's best: a trusted miss; the control is faster than
        # every mode but is no reference
        row("a", 8.0, "decode",
            diode_pick=mode(13.0, 0.5, confidence=0.99), diode_fast=mode(10.0, 2.0, alone=True),
            max_autotune_default=mode(12.0, 20.0), no_autotune_again=mode(5.0),
            best_known=mode(11.0, applied=True)),
        # a hit at low confidence; best_known compiled another kernel (not applied): no
        # best_known reference, yet a kernel timed in the row
        row("b", 10.0, "narrow",
            diode_pick=mode(10.0, 0.5, confidence=0.2), diode_fast=mode(12.0, 2.0, alone=False),
            max_autotune_default=mode(11.0, 20.0), no_autotune_again=mode(10.0),
            best_known=mode(10.0, applied=False)),
    ]  # fmt: skip
    modes = ["diode_pick", "diode_fast", "max_autotune_default", "no_autotune_again", "best_known"]
    return {"modes": {m: {} for m in modes}, "rows": rows}


def test_each_reference_divides_by_what_it_names(reporter, result):
    out = reporter.report(result)
    defaults = out["modes"]["diode_fast"]
    assert defaults["collector"]["worst"] == pytest.approx(10.0 / 8.0)
    # row a: the fastest mode but the control is the defaults' 10; row b: the single pick's and
    # the unapplied best_known's 10
    assert defaults["run"]["worst"] == pytest.approx(12.0 / 10.0)
    assert defaults["run"]["geomean"] == pytest.approx(((10.0 / 10.0) * (12.0 / 10.0)) ** 0.5)
    assert defaults["best_known"]["rows"] == 1 and defaults["best_known"]["worst"] == pytest.approx(10.0 / 11.0)
    assert "no_autotune_again" not in out["modes"]
    assert out["by_class"]["decode"]["diode_pick"]["run"]["worst"] == pytest.approx(1.3)
    assert [r["problem"] for r in out["defaults_over_bound"]["run"]] == ["b"]


def test_every_variant_of_the_diode_modes_is_reported_by_class(reporter, result):
    variant = "diode_pick+diode_model='analytical'"
    result["modes"][variant] = {}
    for one, runtime in zip(result["rows"], (16.0, 20.0)):
        one["modes"][variant] = mode(runtime, 0.5)
    out = reporter.report(result)
    assert out["by_class"]["narrow"][variant]["run"]["worst"] == pytest.approx(2.0)
    assert out["by_class"]["decode"][variant]["run"]["worst"] == pytest.approx(1.6)
    assert "max_autotune_default" not in out["by_class"]["decode"]


def test_the_defaults_face_max_autotune_row_by_row_and_in_compile_time(reporter, result):
    out = reporter.report(result)
    versus = out["defaults_over_max_autotune"]
    assert versus["best"] == pytest.approx(10.0 / 12.0) and versus["worst"] == pytest.approx(12.0 / 11.0)
    assert versus["slower_by_over_5pct"] == 1
    assert out["modes"]["diode_fast"]["compile_over_max_autotune"] == pytest.approx(4.0 / 40.0)


def test_trusted_misses_are_the_picks_the_defaults_kept_alone(reporter, result):
    out = reporter.report(result)
    assert out["trusted"]["count"] == 1
    assert [r["problem"] for r in out["trusted"]["over_1.2_run"]] == ["a"]
    assert out["trusted"]["over_1.2_collector"][0]["ratio"] == pytest.approx(13.0 / 8.0)
    # the one hit (b) scored below the one miss (a)
    assert out["confidence_auroc"]["run"] == {"auroc": 0.0, "hits": 1, "rows": 2}


def test_the_command_writes_the_report_and_names_an_unreadable_file(reporter, result, tmp_path, capsys):
    source, out = tmp_path / "e2e.json", tmp_path / "report.json"
    source.write_text(json.dumps(result))
    assert reporter.main([str(source), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == json.loads(json.dumps(reporter.report(result)))
    with pytest.raises(SystemExit):
        reporter.main([str(tmp_path / "missing.json")])
    assert "missing.json: cannot read an e2e result" in capsys.readouterr().err
    source.write_text(json.dumps({**result, "graph_size": 8}))
    with pytest.raises(SystemExit):
        reporter.main([str(source)])
    assert "e2e.json: a run of graphs of up to 8 GEMMs (--graph-size)" in capsys.readouterr().err


def test_rows_of_another_run_restrict_the_report_to_its_problems_or_are_left_out(reporter, result, tmp_path):
    source, other, out = tmp_path / "e2e.json", tmp_path / "other.json", tmp_path / "report.json"
    source.write_text(json.dumps(result))
    other.write_text(json.dumps({**result, "rows": result["rows"][1:]}))  # row b only
    assert reporter.main([str(source), "--rows-of", str(other), "--out", str(out)]) == 0
    restricted = json.loads(out.read_text())
    assert restricted["rows"] == 1 and restricted["modes"]["diode_fast"]["run"]["worst"] == pytest.approx(12.0 / 10.0)
    assert restricted["defaults_over_max_autotune"]["best"] == pytest.approx(12.0 / 11.0)
    assert reporter.main([str(source), "--without-rows-of", str(other), "--out", str(out)]) == 0
    rest = json.loads(out.read_text())  # row a only
    assert rest["rows"] == 1 and rest == json.loads(json.dumps(reporter.report({**result, "rows": result["rows"][:1]})))


def test_update_manifest_replaces_the_e2e_metrics_and_keeps_the_rest(reporter, result, tmp_path, capsys):
    from diode_backend.model.manifest import read_manifest, write_manifest

    folder, source = tmp_path / "model", tmp_path / "e2e.json"
    shipped = read_manifest(SHIPPED)
    stale = {**shipped.metrics, "e2e_problems": 999, "e2e_from_an_older_run": 1.5}
    write_manifest(dataclasses.replace(shipped, metrics=stale), folder)
    source.write_text(json.dumps(result))
    assert reporter.main([str(source), "--out", str(tmp_path / "r.json"), "--update-manifest", str(folder)]) == 0
    metrics = read_manifest(folder).metrics
    assert "e2e_from_an_older_run" not in metrics
    assert metrics["top1_regret_geomean"] == shipped.metrics["top1_regret_geomean"]
    assert metrics["e2e_problems"] == 2 and metrics["e2e_defaults_kept_alone"] == 1
    assert metrics["e2e_defaults_runtime_worst"] == pytest.approx(12.0 / 10.0)
    assert metrics["e2e_defaults_compile_over_max_autotune"] == pytest.approx(4.0 / 40.0)
    assert metrics["e2e_confidence_auroc"] == 0.0
    with pytest.raises(SystemExit):
        reporter.main([str(source), "--out", str(tmp_path / "r.json"), "--update-manifest", str(tmp_path / "none")])
    assert "--update-manifest:" in capsys.readouterr().err


def test_rows_inductor_reshaped_are_listed_with_the_problem_diode_ranked(reporter, result):
    assert reporter.report(result)["reshaped"] == []
    # Inductor padded b's M before DIODE saw it, in both DIODE modes
    for name in ("diode_pick", "diode_fast"):
        result["rows"][1]["modes"][name].setdefault("diode", {})["decision"] = {"problem": "mm 16x8x8", "pick": "aten::mm", "confidence": 0.2}
    result["rows"][0]["modes"]["diode_pick"]["diode"]["decision"]["problem"] = "a"
    assert reporter.report(result)["reshaped"] == [{"problem": "b", "ranked": ["mm 16x8x8"]}]
