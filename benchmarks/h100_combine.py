"""Combine the H100 sweep runs into the dataset DIODE trains on.

    python benchmarks/h100_combine.py    # runs/2026-11-23 (+ runs/2026-11-22-b, -a) -> dataset/

Run 2026-11-23 timed 495 of the 730 planned problems (all 101 validation problems) with the
timer that covers the host's launch time (docs/collect.md); it is taken whole. Runs b and a
of 2026-11-22 used the earlier timer, which floored small kernels at the host's pace (cuBLAS
was timed 6.5x too slow at the median on problems whose fastest candidate takes under 12 us).
Of the problems only they timed, the dataset keeps those whose fastest candidate takes 12 us
or more, where the old and new timers agree (`benchmarks/results/h100_collection.md`), with the
per-pair minimum of the two runs' medians (both errors only ever make a pair slower). The
shard's environment records this.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from diode_backend.dataset import DatasetMeta, load_dataset, write_shard

ROOT = Path(__file__).resolve().parents[1] / "trained_models" / "data" / "h100"
NEW, OLD_B, OLD_A = "2026-11-23", "2026-11-22-b", "2026-11-22-a"
MIN_OLD_BEST_US = 12.0


def main() -> None:
    new, old_b, old_a = (load_dataset(ROOT / "runs" / name) for name in (NEW, OLD_B, OLD_A))
    timed = {item.problem for item in new}
    second = {item.problem: dict(zip(item.configs, item.times_us)) for item in old_a}
    kept_old, dropped = [], 0
    for item in old_b:
        if item.problem in timed:
            continue
        times = second.get(item.problem)
        if times is not None:
            item = dataclasses.replace(item, times_us=tuple(min(t, times.get(c, t)) for c, t in zip(item.configs, item.times_us)))
        if item.best_us >= MIN_OLD_BEST_US:
            kept_old.append(item)
        else:
            dropped += 1
    environment = {
        **new.runs[-1].environment,
        "combined": f"run {NEW} whole ({len(new.problems)} problems); {len(kept_old)} problems only runs {OLD_B} "
        f"and {OLD_A} timed (per-pair minimum of their medians), those whose fastest candidate takes "
        f">= {MIN_OLD_BEST_US:g} us; {dropped} faster ones dropped (benchmarks/h100_combine.py)",
        "runs": [run.environment["date"] for run in (*new.runs, *old_b.runs, *old_a.runs)],
    }
    combined = [*new.problems, *kept_old]
    write_shard(ROOT / "dataset" / "h100-sweep.msgpack", DatasetMeta(new.hardware, environment), combined)
    print(f"{len(combined)} problems ({len(kept_old)} from the 2026-11-22 runs, {dropped} dropped) -> {ROOT / 'dataset'}")


if __name__ == "__main__":
    main()
