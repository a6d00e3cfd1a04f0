"""``benchmarks/compile_time_table.py``: its jobs and summary (the compiles need a GPU). Each
test loads ``e2e_validation`` first, so the scripts' imports of it find the fixture's module,
which leaves with the test."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from diode_backend import catalog, registry

ROOT = Path(__file__).resolve().parents[1]


def test_each_problem_gets_diodes_first_tiles_and_inductors_default_list_shared_among_workers(benchmark_scripts):
    *_, table = benchmark_scripts("e2e_validation", "compile_outliers", "compile_time_table")
    h100 = catalog.resolve_hardware("h100")
    scorer = registry.load_scorer(catalog.pick_entry(h100))
    problem = table.PROBLEMS[2]  # the large projection, float32 allowing TF32
    assert problem.allow_tf32 and problem.dtype == "float32"
    tiles = table.tiles_of(problem, h100, scorer, 3)
    assert all(t.kind == "triton" for t in tiles) and len(set(tiles)) == len(tiles)
    assert len(tiles) > 3  # Inductor's DEFAULT list adds to DIODE's three
    shares = table.plan([problem], h100, scorer, 3, 4)
    assert len(shares) == 4 and sorted(len(s) for s in shares)[-1] - sorted(len(s) for s in shares)[0] <= 1
    planned = [job["tile"] for share in shares for job in share]
    assert sorted(map(str, planned)) == sorted(str(t.to_dict()) for t in tiles)


def test_the_summary_groups_the_applied_tiles_by_precision_and_block(benchmark_scripts):
    *_, table = benchmark_scripts("e2e_validation", "compile_outliers", "compile_time_table")
    tf32 = "addmm 3992x768x768 float32 row/col bias=row tf32"
    rows = [
        {"problem": tf32, "tile": "triton::mm 128x256x32 s4 w8 g8", "cost_s": 9.0, "applied": True},
        {"problem": tf32, "tile": "triton::mm 128x128x32 s3 w4 g8", "cost_s": 3.0, "applied": True},
        {"problem": tf32, "tile": "triton::mm 16x16x64 s5 w1 g8", "cost_s": 0.4, "applied": True},
        {"problem": tf32, "tile": "triton::mm 16x32x64 s5 w2 g8", "cost_s": 0.1, "applied": False},
    ]
    assert table.summarize(rows) == {
        "tf32/big": {"tiles": 2, "median_s": 6.0, "max_s": 9.0},
        "tf32/small": {"tiles": 1, "median_s": 0.4, "max_s": 0.4},
    }


def test_a_worker_compiles_each_job_and_writes_its_rows(benchmark_scripts, tmp_path):
    """On the CPU, where DIODE has no Triton tile to compile, the stored tile is not applied;
    what runs is the worker's own path: the baseline, the stored decision, the compile, the rows."""
    *_, table = benchmark_scripts("e2e_validation", "compile_outliers", "compile_time_table")
    precision = torch.get_float32_matmul_precision()  # the worker sets the problem's
    problem = table.GemmProblem("mm", 32, 48, 64, dtype="float32")
    tile = table.KernelConfig("triton", "triton::mm", 32, 32, 32, 2, 4, 8)
    out = tmp_path / "rows.json"
    try:
        table.work([{"problem": problem.to_dict(), "tile": tile.to_dict()}], out, device="cpu")
    finally:
        torch.set_float32_matmul_precision(precision)
    (row,) = json.loads(out.read_text())
    assert row["problem"] == problem.describe() and row["tile"] == tile.describe()
    assert row["compile_s"] > 0 and row["no_autotune_s"] > 0 and row["cost_s"] == row["compile_s"] - row["no_autotune_s"]
    assert row["applied"] is False


def test_the_shipped_compile_table_is_the_fit_of_its_committed_sources(benchmark_scripts):
    *_, table = benchmark_scripts("e2e_validation", "compile_outliers", "compile_time_table")
    from diode_backend.builtin import COMPILE_SECONDS

    shipped = json.loads(COMPILE_SECONDS.read_text())
    results = [json.loads((ROOT / source).read_text()) for source in shipped["sources"]]
    assert table.fit(results, shipped["sources"]) == shipped


def test_the_fit_takes_the_mean_of_applied_tiles_by_class_and_area_and_refuses_other_tf32_rules(benchmark_scripts):
    *_, table = benchmark_scripts("e2e_validation", "compile_outliers", "compile_time_table")
    tf32 = "addmm 3992x768x768 float32 row/col bias=row tf32"
    rows = [{"problem": tf32, "tile": "triton::mm 128x128x32 s3 w4 g8", "cost_s": s, "applied": True} for s in (1.0, 2.0, 6.0)]
    rows += [
        {"problem": tf32, "tile": "triton::mm 128x128x64 s3 w4 g8", "cost_s": 90.0, "applied": False},  # not compiled as stored
        {"problem": tf32, "tile": "triton::mm 32x32x32 s3 w4 g8", "cost_s": 0.5, "applied": True},  # too few of its area
    ]
    result = {"device": "NVIDIA H100 80GB HBM3", "torch": "2.11.0+cu130", "triton": "3.6.0", "rows": rows}
    fitted = table.fit([result], ["run.json"])
    assert fitted["seconds"] == {"tf32/triton::mm": {"16384": 3.0}}
    assert fitted["sources"] == ["run.json"] and fitted["torch"] == ["2.11.0+cu130"]
    with pytest.raises(ValueError, match="run.json: timed on torch 2.13.0"):
        table.fit([{**result, "torch": "2.13.0"}], ["run.json"])


def test_a_worker_past_the_budget_is_stopped_and_one_within_it_gives_its_code(benchmark_scripts):
    *_, table = benchmark_scripts("e2e_validation", "compile_outliers", "compile_time_table")
    started = time.monotonic()
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert table.finish(slow, started, budget_s=0.5) is None and slow.poll() is not None
    quick = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    assert table.finish(quick, time.monotonic(), budget_s=60) == 3
    assert table.finish(subprocess.Popen([sys.executable, "-c", "pass"]), started, budget_s=None) == 0


def test_problems_from_the_dataset_spread_over_op_and_dtype(benchmark_scripts):
    *_, table = benchmark_scripts("e2e_validation", "compile_outliers", "compile_time_table")
    assert table.problems_to_time(None, "unused") == list(table.PROBLEMS)
    problems = table.problems_to_time(12, str(ROOT / "trained_models" / "data" / "h100" / "dataset"))
    assert len(problems) == len(set(problems)) == 12
    assert len({p.op for p in problems}) >= 3 and len({p.dtype for p in problems}) >= 2


def test_fit_on_the_command_line_writes_the_table_builtin_ships(benchmark_scripts, tmp_path, monkeypatch):
    *_, table = benchmark_scripts("e2e_validation", "compile_outliers", "compile_time_table")
    from diode_backend import builtin

    shipped = json.loads(builtin.COMPILE_SECONDS.read_text())
    target = tmp_path / "compile_seconds.json"
    monkeypatch.setattr(builtin, "COMPILE_SECONDS", target)  # the package's own file stays as it is
    monkeypatch.chdir(ROOT)  # the sources are recorded as given, relative to the repository
    assert table.main(["--fit", *shipped["sources"]]) == 0
    assert json.loads(target.read_text()) == shipped
