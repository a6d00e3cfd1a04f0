"""Small synthetic timing datasets for training and validation tests, written through the real
dataset format. The "measured" time is the analytical scorer's estimate times a hidden penalty
(8-warp kernels run ``PENALTY`` times slower) times 1% noise, so a model can only match the data
by learning the penalty."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace
from pathlib import Path

from diode_backend import registry
from diode_backend.analytical import AnalyticalScorer
from diode_backend.offline.dataset import DatasetMeta, ProblemTimings, write_shard
from diode_backend.options import DiodeOptions
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig

H100 = HardwareInfo(
    name="NVIDIA H100 80GB HBM3", vendor="nvidia", sm_count=132, compute_capability=(9, 0),
    shared_memory_per_block=232448,
)  # fmt: skip
PENALTY = 1.5
SPACE = [KernelConfig("aten", "aten::mm")] + [
    KernelConfig("triton", "triton::mm", bm, bn, bk, stages, warps, 8)
    for bm, bn, bk, stages, warps in itertools.product((32, 64, 128), (64, 128), (32, 64), (3,), (4, 8))
]


def synthetic_problems(count: int, split: str = "train", seed: int = 0, generator: str = "synthetic") -> list[ProblemTimings]:
    """``count`` mm problems with log-normal sizes, every config of :data:`SPACE` timed."""
    rng = random.Random(f"{seed}-{split}")
    scorer = AnalyticalScorer()
    problems = []
    for _ in range(count):
        m, n, k = (int(math.exp(rng.gauss(7.0, 1.2))) + 16 for _ in range(3))
        problem = GemmProblem("mm", m, n, k, dtype=rng.choice(("float16", "bfloat16")))
        estimates = scorer.predict(problem, SPACE, H100).times_us
        times = tuple(
            t * (PENALTY if c.num_warps == 8 else 1.0) * math.exp(rng.gauss(0.0, 0.01))
            for c, t in zip(SPACE, estimates)
        )
        problems.append(ProblemTimings(problem, tuple(SPACE), times, split=split, generator=generator, space="exhaustive"))
    return problems


def on_compile_time_list(records: list[ProblemTimings]) -> list[ProblemTimings]:
    """``records`` timed again, the same way, over the candidates DIODE ranks at compile time for
    their problems (Inductor's list for the default ``diode_search_space``), so that every pick
    made at compile time was timed."""
    scorer = AnalyticalScorer()
    timed = []
    for record in records:
        rng = random.Random(record.problem.describe())
        configs = tuple(registry.candidate_configs(record.problem, H100, DiodeOptions().diode_search_space))
        estimates = scorer.predict(record.problem, configs, H100).times_us
        times = tuple(
            t * (PENALTY if c.num_warps == 8 else 1.0) * math.exp(rng.gauss(0.0, 0.01))
            for c, t in zip(configs, estimates)
        )
        timed.append(replace(record, configs=configs, times_us=times))
    return timed


def write_dataset(folder: Path, train: int = 40, validation: int = 10, seed: int = 0, families: tuple[str, ...] = ()) -> Path:
    """A one-shard dataset with ``train`` and ``validation`` problems; returns ``folder``. With
    ``families``, the problems are dealt out to ``zoo:<family>`` generators in turn."""
    problems = synthetic_problems(train, "train", seed) + synthetic_problems(validation, "validation", seed)
    if families:
        problems = [replace(p, generator=f"zoo:{families[i % len(families)]}") for i, p in enumerate(problems)]
    write_shard(folder / "part-000.msgpack", DatasetMeta(H100, {"note": "synthetic"}), problems)
    return folder
