"""``benchmarks/sweep_time_split.py``: a sweep's timing seconds split into kernel runs (from the
stored medians and the recorded method), kernel loads and the rest, on a real dataset folder."""

from __future__ import annotations

import json

import pytest

from diode_backend.offline.dataset import DatasetMeta, ProblemTimings, write_shard
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig
from diode_backend.timing import TimingMethod

H100 = HardwareInfo(name="NVIDIA H100 80GB HBM3", vendor="nvidia", sm_count=132)
CONFIGS = (KernelConfig("aten", "aten::mm"), KernelConfig("triton", "triton::mm", 64, 64, 32, 3, 4, 8))


@pytest.fixture
def script(benchmark_scripts):
    return benchmark_scripts("sweep_time_split")[0]


def test_the_split_counts_each_pairs_runs_by_the_recorded_method(script, tmp_path, capsys):
    # 100 us and 300 us: the slow one (over 2x the fastest) gets 1 run, the fast one 15 -> 10
    problem = ProblemTimings(GemmProblem("mm", 64, 64, 64), CONFIGS, (100.0, 300.0))
    write_shard(tmp_path / "data" / "part-000.msgpack.gz", DatasetMeta(H100), [problem])
    timing = TimingMethod().describe()
    report = {"environment": {"timing": timing}, "pairs": 2, "timing_seconds": 0.01, "load_seconds": 0.002, "noise_pairs": 2}
    (tmp_path / "run.json").write_text(json.dumps(report))
    assert script.main([str(tmp_path / "data"), str(tmp_path / "run.json"), "--out", str(tmp_path / "split.json")]) == 0
    result = json.loads((tmp_path / "split.json").read_text())
    assert json.loads(capsys.readouterr().out) == result  # printed as written
    once = ((2 + 10) * 100 + (2 + 1) * 300) / 1e6  # check and estimate runs, then the timed ones
    assert result["kernel_run_seconds"] == pytest.approx(2 * once)  # timed again for the noise floor
    assert result["rest_seconds"] == pytest.approx(0.01 - 0.002 - 2 * once)
    assert result["pairs_per_timing_second_without_loads"] == pytest.approx(2 / 0.008)
    assert "steps" not in result  # a report from before the collector split its seconds
    halves = [{**report, "pairs": 1, "noise_pairs": 1, "timing_split": {"operands": 0.001, "timer_replay": r}} for r in (0.004, 0.002)]
    for i, half in enumerate(halves):  # the dataset timed by two runs, a pair each
        (tmp_path / f"half-{i}.json").write_text(json.dumps(half))
    script.main([str(tmp_path / "data"), str(tmp_path / "half-0.json"), str(tmp_path / "half-1.json")])
    result = json.loads(capsys.readouterr().out)
    assert result["steps"] == {"operands": pytest.approx(0.002), "timer_replay": pytest.approx(0.006)}
    assert result["replay_over_kernel_runs"] == pytest.approx(0.006 / (2 * once))
    slow = TimingMethod(budget_us=600.0, slow_ratio=0.0)  # the method is the report's, not the default
    report["environment"]["timing"] = slow.describe()
    (tmp_path / "run.json").write_text(json.dumps(report))
    script.main([str(tmp_path / "data"), str(tmp_path / "run.json")])
    assert json.loads(capsys.readouterr().out)["kernel_run_seconds"] == pytest.approx(2 * ((2 + 6) * 100 + (2 + 3) * 300) / 1e6)
    report["pairs"] = 3
    (tmp_path / "run.json").write_text(json.dumps(report))
    with pytest.raises(SystemExit, match="its pairs are not the reports' pairs"):
        script.main([str(tmp_path / "data"), str(tmp_path / "run.json")])
