"""Compile-time picks judged on timings taken beside them.

A problem's record times a quarter of the candidates DIODE ranks at compile time, so a model's
pick over the whole list is often a config the record never timed, and whether it is a hit is
unknown. ``diode collect sweep --space listed`` times such picks beside the fastest tile known,
on one day, into a dataset of their own (the pick labels); ``diode train --pick-labels`` and
``diode validate --pick-labels`` judge an untimed pick from it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping

from ..problem import GemmProblem, KernelConfig
from ..tf32 import triton_tf32_active
from .dataset import DatasetError, ProblemTimings, load_dataset


def load_pick_labels(paths: Iterable[str | os.PathLike], hardware_key: str) -> dict[GemmProblem, ProblemTimings]:
    """The pick labels under ``paths``, by problem.

    :raises DatasetError: no shards there, or timed on another device than ``hardware_key``.
    """
    labels = load_dataset(list(paths))
    if labels.hardware.key != hardware_key:
        raise DatasetError(f"timed on {labels.hardware.key}, the data judged on {hardware_key}")
    return {record.problem: record for record in labels.problems}


def pick_ratio(
    pick: KernelConfig, record: ProblemTimings, labels: Mapping[GemmProblem, ProblemTimings] | None = None
) -> tuple[float, bool] | None:
    """``pick``'s time over the fastest candidate timed with it, and whether that came from
    ``labels``: from ``record`` where it timed the pick, else from the label of its problem
    whose Triton kernels ran the same precision as the record's (:func:`_same_precision`); None
    where neither timed it."""
    ratio = _ratio(pick, record)
    if ratio is not None:
        return ratio, False
    label = (labels or {}).get(record.problem)
    ratio = _ratio(pick, label) if label is not None and _same_precision(record, label) else None
    return None if ratio is None else (ratio, True)


def _same_precision(record: ProblemTimings, label: ProblemTimings) -> bool:
    """Whether the Triton kernels of ``record`` and ``label`` (one problem) ran TF32 alike: the
    TF32 rules they were timed under differ only for a float32 problem allowing TF32 that one
    rule runs as TF32 and the other does not."""
    return triton_tf32_active(record.problem, record.tf32_rule) == triton_tf32_active(label.problem, label.tf32_rule)


def _ratio(pick: KernelConfig, record: ProblemTimings) -> float | None:
    times = {c: t for c, t in zip(record.configs, record.times_us) if math.isfinite(t) and t > 0}
    return times[pick] / min(times.values()) if pick in times else None
