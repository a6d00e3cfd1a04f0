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
benchmarks/h100_precision_plan.py, 2026-11-24-regions and 2026-11-24-regions-2 those of the
first and second draws of benchmarks/h100_regions_plan.py;
a run of RUNS not yet in ``runs/`` is left out. Run
2026-11-24-tf32 times again, under torch 2.11's TF32 rule (``always``), the TF32 problems whose
Triton kernels the earlier runs timed without TF32 (benchmarks/h100_tf32_plan.py): a run of
RETIMES gives the timings of the problems it holds, the earlier runs' are left out. The shard's
environment records this.

A shard has one TF32 rule (diode_backend.tf32; every run up to 2026-11-24 timed ``alignment``),
so problems keep theirs by going to one combined shard per rule: ``h100-sweep.msgpack.gz`` for
the first run's rule, ``h100-sweep-<rule>.msgpack.gz`` for each other (gzip-compressed, as every
committed shard), whose environment is that of the runs of its rule and records the rule.
"""

from __future__ import annotations

from pathlib import Path

from diode_backend.offline.dataset import (
    DatasetMeta, load_dataset, meta_of_rule, read_shard, shard_paths, timed_tf32_rule, write_shard,
)  # fmt: skip

ROOT = Path(__file__).resolve().parents[1] / "trained_models" / "data" / "h100"
RUNS = (
    "2026-11-23", "2026-11-23-b", "2026-11-23-zoo", "2026-11-23-zoo-b", "2026-11-24-zoo", "2026-11-24-attn", "2026-11-24-gaps",
    "2026-11-24-precision", "2026-11-24-tf32", "2026-11-24-regions", "2026-11-24-regions-2",
    "2026-11-24-alignment",
)  # fmt: skip
#: Runs that time again problems of earlier runs: theirs are the timings kept.
RETIMES = ("2026-11-24-tf32",)


def main() -> None:
    runs = [name for name in RUNS if (ROOT / "runs" / name).is_dir()]  # a run not yet committed is left out
    # load_dataset keeps a problem's first occurrence: the runs that time problems again go first
    data = load_dataset([ROOT / "runs" / name for name in sorted(runs, key=lambda name: name not in RETIMES)])
    shards = [(name, *read_shard(file)) for name in runs for file in shard_paths(ROOT / "runs" / name)]
    by_rule: dict[str, list] = {timed_tf32_rule(*shards[0][1:]): []}  # the first run's rule first: its shard keeps the name it had
    for item in data.problems:
        by_rule.setdefault(item.tf32_rule, []).append(item)
    for i, (rule, problems) in enumerate(by_rule.items()):
        timed = [(name, meta) for name, meta, items in shards if timed_tf32_rule(meta, items) == rule]
        names = list(dict.fromkeys(name for name, _ in timed))
        environment = {
            **timed[0][1].environment,
            "combined": f"runs {' and '.join(names)} whole ({len(problems)} problems; benchmarks/h100_combine.py)",
            "runs": [meta.environment["date"] for _, meta in timed],
            "timing_by_run": [meta.environment.get("timing") for _, meta in timed],
        }
        name = "h100-sweep.msgpack.gz" if i == 0 else f"h100-sweep-{rule}.msgpack.gz"
        meta = meta_of_rule(DatasetMeta(data.hardware, environment), rule, problems)
        write_shard(ROOT / "dataset" / name, meta, problems)
        print(f"{len(problems)} problems of TF32 rule {rule!r} -> {ROOT / 'dataset' / name}")


if __name__ == "__main__":
    main()
