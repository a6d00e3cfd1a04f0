"""``benchmarks/e2e_pick_change.py``: two runs of the same problems, the single picks that changed."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def script(benchmark_scripts):
    return benchmark_scripts("e2e_validation", "e2e_report", "e2e_pick_change")[2]


def row(name: str, pick: str, pick_us: float, base_us: float, vs_known: float | None = None, ranked: str | None = None) -> dict:
    decision = {"diode": {"decision": {"pick": pick, "problem": ranked or name}}, "runtime_us": pick_us}
    if vs_known is not None:
        decision["vs_best_known"] = vs_known
    return {"describe": name, "workload_class": "decode", "modes": {"diode_pick": decision, "no_autotune": {"runtime_us": base_us}}}


def test_a_changed_pick_is_judged_over_each_runs_own_no_autotuning(script, tmp_path):
    before = {"rows": [row("a", "aten::mm", 10.0, 10.0, 2.0), row("b", "triton::x", 5.0, 10.0, 1.0)]}
    before["rows"].append(row("c", "aten::mm", 4.0, 4.0))
    # the second run's machine is 10% slower: b's unchanged pick moves with it, a's new pick wins
    after = {"rows": [row("a", "triton::y", 5.5, 11.0, 1.0), row("b", "triton::x", 5.5, 11.0, 1.0)]}
    after["rows"].append(row("d", "aten::mm", 1.0, 1.0))
    changed = script.change(before, after)
    assert changed["changed"]["rows"] == 1 and changed["unchanged"]["rows"] == 1  # c and d: in one run only
    assert changed["changed"]["after_over_before"]["geomean"] == pytest.approx(0.5)
    assert changed["changed"]["after_over_before"]["faster"] == 1 and changed["changed"]["after_over_before"]["slower"] == 0
    assert changed["unchanged"]["after_over_before"]["geomean"] == pytest.approx(1.0)
    assert changed["changed"]["before_over_best_known"]["worst"] == 2.0 and changed["changed"]["after_over_best_known"]["worst"] == 1.0
    assert changed["changed"]["problems"][0]["before"] == "aten::mm" and changed["changed"]["problems"][0]["after"] == "triton::y"
    paths = [tmp_path / "before.json", tmp_path / "after.json", tmp_path / "change.json"]
    for path, result in zip(paths, (before, after)):
        path.write_text(json.dumps(result))
    assert script.main([str(paths[0]), str(paths[1]), "--out", str(paths[2])]) == 0
    assert json.loads(paths[2].read_text()) == json.loads(json.dumps(changed))


def test_rows_without_both_timings_are_left_out(script):
    untimed = row("a", "aten::mm", 1.0, 1.0)
    del untimed["modes"]["no_autotune"]["runtime_us"]
    empty = {"rows": 0, "before_over_best_known": None, "after_over_best_known": None, "problems": []}
    assert script.change({"rows": [row("a", "aten::mm", 1.0, 1.0)]}, {"rows": [untimed]}) == {
        "changed": empty,
        "unchanged": empty,
        "reshaped": empty,
    }


def test_a_gemm_inductor_padded_in_either_run_is_reshaped_not_changed(script):
    """Inductor's pad_mm padded the GEMM in one run: the pick changed with the problem, not the ranking."""
    before = {"rows": [row("mm 2x8x8", "aten::mm", 10.0, 10.0), row("mm 3x8x8", "aten::mm", 10.0, 10.0)]}
    after = {"rows": [row("mm 2x8x8", "triton::x", 9.0, 10.0, ranked="mm 8x8x8"), row("mm 3x8x8", "aten::mm", 10.0, 10.0)]}
    # the padding showed in the other DIODE mode alone: still reshaped
    before["rows"][1]["modes"]["diode_fast"] = {"diode": {"decision": {"pick": "aten::mm", "problem": "mm 8x8x8"}}}
    changed = script.change(before, after)
    assert changed["changed"]["rows"] == 0 and changed["unchanged"]["rows"] == 0
    assert changed["reshaped"]["rows"] == 2
    assert {tuple(entry["ranked"]) for entry in changed["reshaped"]["problems"]} == {
        ("mm 2x8x8", "mm 8x8x8"),
        ("mm 3x8x8", "mm 3x8x8"),
    }
