"""``benchmarks/compile_time_table.py``: its jobs and summary (the compiles need a GPU). Each
test loads ``e2e_validation`` first, so the scripts' imports of it find the fixture's module,
which leaves with the test."""

from __future__ import annotations

import json

import torch

from diode_backend import catalog, registry


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
