"""``benchmarks/e2e_timer_compare.py``: two e2e runs compared on the rows both completed."""

from __future__ import annotations

import gzip
import json

import pytest


@pytest.fixture
def compare(benchmark_scripts):
    (module,) = benchmark_scripts("e2e_timer_compare")
    return module


def row(describe: str, plain_us: float, again_us: float, pick_rounds: list[float], starved: list[int] | None = None) -> dict:
    """A row of no autotuning (an ATen call), its control and a single pick (a Triton kernel)."""
    pick_us = sorted(pick_rounds)[1]
    best = min(plain_us, pick_us)
    modes = {
        "no_autotune": {"compile_s": 0.1, "runtime_us": plain_us, "rounds_us": [plain_us] * 3, "kernels": ["extern_kernels.mm"]},
        "diode_pick": {"compile_s": 0.5, "runtime_us": pick_us, "rounds_us": pick_rounds, "kernels": ["triton_tem_fused_mm_0"]},
        "no_autotune_again": {"compile_s": 0.1, "runtime_us": again_us, "rounds_us": [again_us, again_us, 1.2 * again_us],
                              "kernels": ["extern_kernels.mm"]},
    }  # fmt: skip
    for figures in modes.values():
        figures["vs_best_mode"] = figures["runtime_us"] / best
    if starved is not None:
        modes["diode_pick"]["starved_runs"] = starved
    return {"describe": describe, "modes": modes}


def run(rows: list[dict]) -> dict:
    return {"modes": {"no_autotune": {}, "diode_pick": {}, "no_autotune_again": {}}, "rows": rows}


def test_the_runs_are_compared_on_the_rows_both_completed_by_runtime_band(compare, tmp_path):
    before = run([row("mm a", 10.0, 11.0, [9.0, 9.0, 9.0]), row("mm b", 50.0, 50.5, [40.0, 60.0, 40.0]), row("mm c", 5.0, 5.0, [5.0] * 3)])
    after = run([row("mm b", 50.0, 50.0, [40.0] * 3, starved=[1, 0, 2]), row("mm a", 10.0, 10.1, [9.0] * 3), row("mm d", 1.0, 1.0, [1.0] * 3)])
    (tmp_path / "before.json.gz").write_bytes(gzip.compress(json.dumps(before).encode()))
    (tmp_path / "after.json").write_text(json.dumps(after))
    assert compare.main([str(tmp_path / "before.json.gz"), str(tmp_path / "after.json"), "--out", str(tmp_path / "out.json")]) == 0
    out = json.loads((tmp_path / "out.json").read_text())

    assert out["common_rows"] == 2  # mm a and mm b; c and d are in one run only
    first, second = out["before"], out["after"]
    small = first["control"]["0-15 us"]
    assert (small["problems"], small["median"], small["worst"]) == (1, 1.1, 1.1) and small["p90"] == pytest.approx(1.1)
    assert small["every_round"]["worst"] == pytest.approx(1.1)  # 11 against 10 in every round
    assert first["control"]["30-100 us"]["worst"] == pytest.approx(1.01)
    assert second["control"]["all"]["worst"] == pytest.approx(1.01)
    # each run's control rounds are 1.2 apart (ATen only); the first run's pick of mm b 1.5 apart
    assert first["unsteady"] == {"mode_rows": 3, "aten_only": 2, "far_apart": 1}
    assert second["unsteady"] == {"mode_rows": 2, "aten_only": 2, "far_apart": 0}
    assert first["starved"] == {} and second["starved"] == {"diode_pick": {"rows": 1, "runs": 3}}
    assert set(second["modes"]) == {"no_autotune", "diode_pick"}  # the control is no mode to choose
    assert second["modes"]["diode_pick"]["vs_best_mode"]["rows"] == 2
    assert second["modes"]["no_autotune"]["compile_s_total"] == pytest.approx(0.2)


def test_a_file_that_is_not_a_result_is_named(compare, tmp_path, capsys):
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(SystemExit):
        compare.main([str(tmp_path / "broken.json"), str(tmp_path / "broken.json")])
    assert "broken.json: not a readable result file" in capsys.readouterr().err
