"""``benchmarks/inference_latency.py``: the ranking's latency, idle and beside busy processes."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from diode_backend.model import learned

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "inference_latency.py"


def test_each_thread_count_is_ranked_on_idle_then_beside_spinners_and_the_shipped_count_restored(benchmark_scripts):
    (module,) = benchmark_scripts("inference_latency")
    seen = []
    result = module.busy_rankings(
        lambda: seen.append(learned.INFERENCE_THREADS), argparse.Namespace(threads="1,2", busy=1, warmup=0, repeats=2)
    )
    assert seen == [1, 1, 2, 2, 1, 1, 2, 2]
    assert learned.INFERENCE_THREADS == 1
    assert result["processes"] == 1 and set(result["idle"]) == set(result["spinning"]) == {"1", "2"}


def test_the_command_writes_the_busy_figures_beside_the_idle_ones(tmp_path):
    out = tmp_path / "busy.json"
    command = [sys.executable, str(SCRIPT), "--busy", "1", "--threads", "1,2", "--candidates", "40", "--warmup", "1",
               "--repeats", "3", "--out", str(out)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=600)
    result = json.loads(out.read_text())
    assert result["candidates"] == 40 and result["rank_candidates"]["median_ms"] > 0
    for state in ("idle", "spinning"):
        assert all(result["busy"][state][count]["median_ms"] > 0 for count in ("1", "2"))
