"""Combine the H100 sweep runs into the dataset DIODE trains on.

    python benchmarks/h100_combine.py    # runs/2026-11-22-b + runs/2026-11-22-a -> dataset/

Run b timed all 720 problems, run a (same code, same machine type, 10 minutes earlier) the
first 361 of them. Both timing errors seen in these runs only ever make a pair slower (host
launch gaps, docs/collect.md), so where both runs timed a pair the dataset keeps the smaller of
the two medians; elsewhere run b's median. The shard's environment records this.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from diode_backend.dataset import DatasetMeta, load_dataset, write_shard

ROOT = Path(__file__).resolve().parents[1] / "trained_models" / "data" / "h100"


def main() -> None:
    main_run, other = load_dataset(ROOT / "runs" / "2026-11-22-b"), load_dataset(ROOT / "runs" / "2026-11-22-a")
    second = {item.problem: dict(zip(item.configs, item.times_us)) for item in other}
    combined, both = [], 0
    for item in main_run:
        times = second.get(item.problem)
        if times is not None:
            both += 1
            item = dataclasses.replace(item, times_us=tuple(min(t, times.get(c, t)) for c, t in zip(item.configs, item.times_us)))
        combined.append(item)
    environment = {
        **main_run.runs[0].environment,
        "combined": f"per-pair minimum of the medians of runs 2026-11-22-b and 2026-11-22-a for {both} problems "
        f"timed by both, run b alone for {len(combined) - both} (benchmarks/h100_combine.py)",
        "runs": [run.environment["date"] for run in (*main_run.runs, *other.runs)],
    }
    write_shard(ROOT / "dataset" / "h100-sweep.msgpack", DatasetMeta(main_run.hardware, environment), combined)
    print(f"{len(combined)} problems ({both} from both runs) -> {ROOT / 'dataset'}")


if __name__ == "__main__":
    main()
