"""The warm-cache mode of ``benchmarks/e2e_validation.py`` (a GPU benchmark) in what runs without a
GPU: its arguments and the figures it reports from the rows of two runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "e2e_validation.py"


@pytest.fixture
def e2e(tmp_path, monkeypatch):
    """The script as a module; its import-time cache folders are the test's."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    spec = importlib.util.spec_from_file_location("e2e_validation", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def decided(pick: str, kept: int, compile_s: float) -> dict:
    """A DIODE mode's figures as ``compile_mode`` records them."""
    diode = {"single_pick": int(kept == 1), "benchmarked_top_k": int(kept > 1), "fallbacks": {}, "errors": {}}
    return {"compile_s": compile_s, "diode": {**diode, "decision": {"pick": pick, "kept": kept}}}


def test_diode_warm_needs_an_earlier_run(e2e, tmp_path, capsys):
    with pytest.raises(SystemExit):
        e2e.main(["data", "--modes", "no_autotune,diode_warm", "--out", str(tmp_path / "out.json")])
    assert "mode diode_warm needs --warm-from" in capsys.readouterr().err


def test_an_earlier_run_whose_cache_folder_is_gone_is_refused(e2e, tmp_path, capsys):
    cold = tmp_path / "cold.json"
    cold.write_text(json.dumps({"caches": {"diode": str(tmp_path / "gone")}, "rows": []}))
    with pytest.raises(SystemExit):
        e2e.main(["data", "--warm-from", str(cold), "--out", str(tmp_path / "out.json")])
    assert "names no DIODE cache folder on this machine" in capsys.readouterr().err


def test_the_warm_summary_compares_compile_times_and_picks(e2e):
    cold = [
        {"modes": {"diode_fast": decided("aten::mm", 1, 0.3)}},
        {"modes": {"diode_fast": decided("triton::mm 64x64x32 s3 w4 g8", 5, 3.0)}},
    ]
    warm = [
        {"modes": {"no_autotune": {"compile_s": 0.20}, "diode_warm": decided("aten::mm", 1, 0.21)}},
        {"modes": {"no_autotune": {"compile_s": 0.10}, "diode_warm": decided("aten::mm", 1, 0.40)}},
    ]
    for before, after in zip(cold, warm):
        after["warm"] = e2e.warm_comparison(before, after)
    assert warm[0]["warm"] == {"cold_pick": "aten::mm", "cold_kept": 1, "warm_pick": "aten::mm", "warm_kept": 1, "same_pick": True}
    assert warm[1]["warm"]["same_pick"] is False
    summary = e2e.summarize(warm, list(e2e.WARM_MODES))["warm"]
    assert summary["problems"] == 2
    assert summary["compile_over_no_autotune_geomean"] == pytest.approx((1.05 * 4.0) ** 0.5)
    assert summary["compile_over_no_autotune_total"] == pytest.approx(0.61 / 0.30)
    assert (summary["within_bound_share"], summary["same_pick_share"], summary["single_pick_share"]) == (0.5, 0.5, 1.0)


def test_a_failed_warm_compile_is_no_match(e2e):
    cold = {"modes": {"diode_fast": decided("aten::mm", 1, 0.3)}}
    warm = {"modes": {"no_autotune": {"compile_s": 0.2}, "diode_warm": {"error": "RuntimeError: boom"}}}
    assert e2e.warm_comparison(cold, warm)["same_pick"] is False
