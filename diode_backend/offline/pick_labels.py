"""Compile-time picks judged on timings taken beside them.

A problem's record times a quarter of the candidates DIODE ranks at compile time, so a model's
pick over the whole list is often a config the record never timed, and whether it is a hit is
unknown. ``diode collect sweep --space listed`` times such picks beside the fastest tile known,
on one day, into a dataset of their own (the pick labels); ``diode train --pick-labels`` and
``diode validate --pick-labels`` judge an untimed pick from it, and ``diode train
--train-on-pick-labels`` also trains the network on them (:func:`joined`): a pick that was
slow is what a model that picked it has to learn.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from ..problem import GemmProblem, KernelConfig
from ..tf32 import triton_tf32_active
from .dataset import DatasetError, ProblemTimings, load_dataset


def load_pick_labels(paths: Iterable[str | os.PathLike], hardware_key: str) -> dict[GemmProblem, ProblemTimings]:
    """The pick labels under ``paths``, by problem. Each path is one collection (a round of
    labels): a problem labelled in several is one label, the later rounds' candidates joined
    into the earliest's as :func:`joined` joins a label into a record.

    :raises DatasetError: no shards under a path, or timed on another device than ``hardware_key``.
    """
    labels: dict[GemmProblem, ProblemTimings] = {}
    for path in paths:
        round_ = load_dataset([path])
        if round_.hardware.key != hardware_key:
            raise DatasetError(f"timed on {round_.hardware.key}, the data judged on {hardware_key}")
        for label in round_.problems:
            earlier = labels.get(label.problem)
            labels[label.problem] = label if earlier is None else _joined(earlier, label)
    return labels


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
    times = _timed(record)
    return times[pick] / min(times.values()) if pick in times else None


def joined(records: Sequence[ProblemTimings], labels: Mapping[GemmProblem, ProblemTimings]) -> list[ProblemTimings]:
    """``records``, each with its problem's label joined in where the label's Triton kernels ran
    the same precision: the candidates the label timed and the record did not, their times
    scaled to the record's day by the median ratio of the candidates both timed (ATen's calls and
    the reference tile). A record without such a label, or sharing no timed candidate with it,
    is returned as it was."""
    return [_joined(record, label) if (label := labels.get(record.problem)) is not None else record for record in records]


def _joined(record: ProblemTimings, label: ProblemTimings) -> ProblemTimings:
    """``record`` with ``label`` (of its problem) joined in as :func:`joined` joins it."""
    if not _same_precision(record, label):
        return record
    mine = _timed(record)
    theirs = _timed(label)
    common = [mine[c] / t for c, t in theirs.items() if c in mine]
    extra = [(c, t) for c, t in theirs.items() if c not in record.configs]
    if not common or not extra:
        return record
    scale = statistics.median(common)
    return replace(
        record,
        configs=record.configs + tuple(c for c, _ in extra),
        times_us=record.times_us + tuple(t * scale for _, t in extra),
    )


def _timed(record: ProblemTimings) -> dict[KernelConfig, float]:
    return {c: t for c, t in zip(record.configs, record.times_us) if math.isfinite(t) and t > 0}
