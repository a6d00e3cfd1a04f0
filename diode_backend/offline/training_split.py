"""Which training problems a model learns from, and how they split (:func:`split_training`).

The records with two or more timed candidates (:func:`usable`) of the families not held out are
split into three parts: the problems the network trains on, those that drive early stopping,
and those that fit the confidence calibration with them. The two held-out halves are whole
families (:func:`split_families`), or the families a retrain names (:func:`split_named`, checked
by :func:`check_named_split`), so the calibration measures what an unseen family looks like to
the model; with fewer than :data:`MIN_FAMILIES_TO_SPLIT` families they are drawn by problem
(:func:`split_problems`). Rows of one problem never straddle parts. :mod:`.train` and
:mod:`.out_of_fold` split alike through :func:`split_training`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .dataset import ProblemTimings
from .families import family_of, without_families
from .train_options import TrainOptions

#: Fewest families for the held-out halves to be drawn by family (one for each half, at least
#: two left to train on).
MIN_FAMILIES_TO_SPLIT = 4


def usable(records: Sequence[ProblemTimings]) -> list[ProblemTimings]:
    """The records with at least two candidates, keeping only candidates with a finite positive
    time (a failed or unlaunchable candidate is not something to learn a runtime from)."""
    kept = []
    for record in records:
        pairs = [(c, t) for c, t in zip(record.configs, record.times_us) if math.isfinite(t) and t > 0]
        if len(pairs) >= 2:
            configs, times = zip(*pairs)
            kept.append(dataclasses.replace(record, configs=configs, times_us=times))
    return kept


def split_problems(count: int, fraction: float, seed: int) -> tuple[list[int], list[int], list[int]]:
    """Seeded split of problem indices into (train, early stopping, calibration only): ``fraction``
    held out in two halves; at least one problem in each part when ``count >= 3``. The
    calibration is fitted on both halves."""
    if count < 3:
        raise ValueError(f"need at least 3 problems (train, early stopping, calibration), got {count}")
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(count, generator=generator).tolist()
    held = min(max(round(count * fraction), 2), count - 1)
    return sorted(order[held:]), sorted(order[:held:2]), sorted(order[1:held:2])


def split_families(families: Sequence[str], fraction: float, seed: int) -> tuple[list[int], list[int], list[int]]:
    """Seeded split of problem indices into (train, early stopping, calibration only) by whole
    families (``families[i]`` is problem ``i``'s): families in a seeded order are held out while
    they fit in ``fraction`` of the problems, the two smallest others when fewer than two fit;
    the held-out families alternate between the halves. Fewer than :data:`MIN_FAMILIES_TO_SPLIT`
    families: :func:`split_problems`."""
    names = sorted(set(families))
    if len(names) < MIN_FAMILIES_TO_SPLIT:
        return split_problems(len(families), fraction, seed)
    sizes = {name: families.count(name) for name in names}
    generator = torch.Generator().manual_seed(seed)
    order = [names[i] for i in torch.randperm(len(names), generator=generator).tolist()]
    budget, held = fraction * len(families), []
    for name in order:
        if sum(sizes[h] for h in held) + sizes[name] <= budget:
            held.append(name)
    for name in sorted((n for n in order if n not in held), key=sizes.__getitem__)[: max(0, 2 - len(held))]:
        held.append(name)
    return split_named(families, held[::2], held[1::2])


def split_named(
    families: Sequence[str], stopping: Sequence[str], calibration: Sequence[str]
) -> tuple[list[int], list[int], list[int]]:
    """Problem indices split into (train, early stopping, calibration only): the problems of the
    families ``stopping``, of ``calibration``, and all others (``families[i]`` is problem ``i``'s)."""
    stop, calibrate = set(stopping), set(calibration)
    parts: tuple[list[int], list[int], list[int]] = ([], [], [])
    for index, family in enumerate(families):
        parts[1 if family in stop else 2 if family in calibrate else 0].append(index)
    return parts


def check_named_split(
    known: Sequence[str], holdout: Sequence[str], stopping: Sequence[str], calibration: Sequence[str]
) -> None:
    """Check a split named by family (``diode train --stopping-families/--calibration-families``)
    against the families ``known`` to the training data (the held-out ones among them or not);
    naming neither half passes (the split is then drawn).

    :raises ValueError: one line naming the option at fault and how to fix it.
    """
    if not stopping and not calibration:
        return
    if not calibration:
        raise ValueError("--stopping-families: give --calibration-families too, or neither to draw the split")
    if not stopping:
        raise ValueError("--calibration-families: give --stopping-families too, or neither to draw the split")
    left = sorted(set(known) - set(holdout))
    for option, names in (("--stopping-families", stopping), ("--calibration-families", calibration)):
        for name in names:
            if name in holdout:
                raise ValueError(
                    f"{option}: {name!r} is in --holdout-families; a family is held out or in the split, not both"
                )
            if name not in left:
                raise ValueError(f"{option}: unknown family {name!r}; the training data has: {', '.join(left) or 'none'}")
    for name in stopping:
        if name in calibration:
            raise ValueError(
                f"--calibration-families: {name!r} is also in --stopping-families; name each family in one of them"
            )
    if not set(left) - set(stopping) - set(calibration):
        raise ValueError("--stopping-families, --calibration-families: that leaves no family to train on")


@dataclass(frozen=True)
class TrainingSplit:
    """What :func:`train` learns from: the :func:`usable` records of the families not held out
    (``unusable`` others left out), each one's family, and the indices of its three parts."""

    records: list[ProblemTimings]
    families: list[str]
    train_ids: list[int]
    stop_ids: list[int]
    calibration_ids: list[int]
    named: bool
    unusable: int

    def recorded(self) -> dict[str, Any]:
        """The split as the checkpoint and the training state record it."""
        return {
            "stopping_families": sorted({self.families[i] for i in self.stop_ids}),
            "calibration_families": sorted({self.families[i] for i in self.calibration_ids}),
            # recorded only when given, so that a drawn split's checkpoint keeps its earlier bytes
            **({"split": "given"} if self.named else {}),
        }


def split_training(
    records: Sequence[ProblemTimings],
    options: TrainOptions,
    holdout_families: Sequence[str] = (),
    stopping_families: Sequence[str] = (),
    calibration_families: Sequence[str] = (),
) -> TrainingSplit:
    """``records`` less ``holdout_families``, split as :func:`train` splits them: by the named
    families when given (:func:`check_named_split`), else drawn (:func:`split_families`)."""
    given = without_families(records, holdout_families)
    kept = usable(given)
    unusable = len(given) - len(kept)
    families = [family_of(record) for record in kept]
    named = bool(stopping_families or calibration_families)
    check_named_split(families, holdout_families, stopping_families, calibration_families)
    try:
        if named:
            ids = split_named(families, stopping_families, calibration_families)
        else:
            ids = split_families(families, options.holdout_fraction, options.seed)
    except ValueError as err:
        if not unusable:
            raise
        raise ValueError(
            f"{err}: {unusable} of the {len(given)} training problems have fewer than two timed "
            "candidates, and a ranking is learnt from two or more"
        ) from None
    return TrainingSplit(kept, families, *ids, named, unusable)
