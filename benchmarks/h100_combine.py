"""Combine the H100 sweep runs into the dataset DIODE trains on.

    python benchmarks/h100_combine.py    # runs/2026-11-23, -b and -zoo -> dataset/

Runs 2026-11-23 and 2026-11-23-b timed the 730 problems of benchmarks/h100_plan.py between them
(495 and 235; all 101 validation problems in the first) with the timer that covers the host's
launch time (docs/collect.md; run -b with the lighter guard of a lead per pass). Run
2026-11-23-zoo timed 1,633 problems of the real-workload zoo (benchmarks/h100_zoo_plan.py; its
175 validation problems are the held-out families') with the CUDA-graph timer. Runs a and b of 2026-11-22
used the earlier timer, which floored small kernels at the host's pace; every problem they
timed is in the two later runs, so they stay in ``runs/`` as a record and are not used. Run
2026-11-24-attn times the attention bmm of benchmarks/h100_attention_plan.py, 2026-11-24-gaps the
problems of benchmarks/h100_gaps_plan.py, 2026-11-24-precision those of
benchmarks/h100_precision_plan.py; a run of RUNS not yet in ``runs/`` is left out. The shard's
environment records this.
"""

from __future__ import annotations

from pathlib import Path

from diode_backend.offline.dataset import DatasetMeta, load_dataset, write_shard

ROOT = Path(__file__).resolve().parents[1] / "trained_models" / "data" / "h100"
RUNS = (
    "2026-11-23", "2026-11-23-b", "2026-11-23-zoo", "2026-11-23-zoo-b", "2026-11-24-zoo", "2026-11-24-attn", "2026-11-24-gaps",
    "2026-11-24-precision",
)  # fmt: skip


def main() -> None:
    runs = [name for name in RUNS if (ROOT / "runs" / name).is_dir()]  # a run not yet committed is left out
    data = load_dataset([ROOT / "runs" / name for name in runs])
    environment = {
        **data.runs[0].environment,
        "combined": f"runs {' and '.join(runs)} whole ({len(data.problems)} problems; benchmarks/h100_combine.py)",
        "runs": [run.environment["date"] for run in data.runs],
        "timing_by_run": [run.environment.get("timing") for run in data.runs],
    }
    write_shard(ROOT / "dataset" / "h100-sweep.msgpack", DatasetMeta(data.hardware, environment), data.problems)
    print(f"{len(data.problems)} problems -> {ROOT / 'dataset'}")


if __name__ == "__main__":
    main()
