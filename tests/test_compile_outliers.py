"""``benchmarks/compile_outliers.py``: the single pick's compile cost by precision and tile, and
the share of each mode's compile spent on graphs holding a TF32 GEMM."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "compile_outliers.py"


def single(problem: str, pick: str, pick_s: float, plain_s: float) -> dict:
    decision = {"problem": problem, "pick": pick}
    return {"describe": problem, "modes": {"diode_pick": {"compile_s": pick_s, "diode": {"decision": decision}},
                                           "no_autotune": {"compile_s": plain_s}}}  # fmt: skip


def graph(problems: list[str], seconds: dict[str, float]) -> dict:
    return {"describe": "fam graph: " + "; ".join(problems), "modes": {m: {"compile_s": s} for m, s in seconds.items()}}


def test_pick_costs_are_grouped_by_precision_and_tile_and_tf32_graphs_are_told_apart(tmp_path):
    tf32 = "addmm 4928x768x768 float32 row/col bias=row tf32"
    singles = {"rows": [
        single(tf32, "triton::mm 128x256x32 s4 w8 g8", 10.5, 0.5),
        single(tf32, "triton::mm 16x16x64 s5 w1 g8", 0.9, 0.5),
        single("mm 512x512x512 float32 row/row", "triton::mm 64x64x32 s3 w4 g8", 1.1, 0.5),
        single("mm 512x512x512 bfloat16 row/col", "aten::mm", 0.55, 0.5),
        {"describe": "mm 8x8x8 bfloat16 row/row", "modes": {"no_autotune": {"compile_s": 0.1}}},
    ]}  # fmt: skip
    graphs = {"rows": [
        graph([tf32, "bmm 4x500x500x64 float32 row/row tf32"], {"diode_fast": 12.0, "no_autotune": 1.0}),
        graph(["mm 512x512x512 bfloat16 row/col"], {"diode_fast": 4.0, "no_autotune": 1.0}),
    ]}  # fmt: skip
    (tmp_path / "singles.json").write_text(json.dumps(singles))
    (tmp_path / "graphs.json").write_text(json.dumps(graphs))
    out = tmp_path / "out.json"
    command = [sys.executable, str(SCRIPT), "--singles", str(tmp_path / "singles.json"), "--graphs", str(tmp_path / "graphs.json"),
               "--out", str(out)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    costs = result["pick_costs"]
    assert set(costs) == {"tf32/big", "tf32/small", "float32/mid", "half/aten", "slowest"}
    assert costs["tf32/big"]["median_s"] == 10.0 and costs["half/aten"]["picks"] == 1
    assert costs["slowest"][0]["pick"] == "triton::mm 128x256x32 s4 w8 g8"
    share = result["tf32_share"][str(tmp_path / "graphs.json")]
    assert share["diode_fast"]["tf32_graphs"] == 1 and share["diode_fast"]["tf32_share"] == 12.0 / 16.0
    assert share["no_autotune"]["tf32_share"] == 0.5


def test_no_runs_is_a_clear_error():
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 2 and "give --singles or --graphs" in done.stderr
