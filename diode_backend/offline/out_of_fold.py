"""The logistic confidence fitted on out-of-fold rankings: ``diode train --confidence logistic
--hit-model-folds K``.

``--confidence logistic`` alone fits the hit model (:mod:`diode_backend.model.hit_model`) on the
early-stopping and calibration families, the only problems the final network ranks without
having trained on them (1,336 problems on the shipped data). Here the families it trains on are
dealt into K folds of whole families (:func:`draw_folds`); a fold model of the same recipe
(options, seed, early-stopping and calibration families) is trained without each fold and ranks
that fold as DIODE ranks a GEMM at compile time, over Inductor's whole candidate list
(:mod:`diode_backend.offline.compile_time`), and the hit model is fitted on every training
problem whose compile-time pick was timed, as ranked by the fold model that never saw it (2,198
problems of 4,719 on the shipped data). Fitted on the timed candidates instead (a quarter of that list), the
signals that count or compare candidates took other values at compile time than in fitting
(``benchmarks/results/h100_runtime_list_confidence.md``). The final model is then trained
exactly as without the option (same data, split and seed, so the same network); only its hit
model differs, and its training record names the folds.

Resumable: fold k's checkpoint goes to ``<output>.folds/fold-<k>.pt`` (its training state beside
it while it trains); ``resume`` reuses a finished one trained on the same data, options and
families and continues an interrupted one. The folder is removed once the final checkpoint is
written.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..features import FeatureExtractor
from ..model.calibration import HIT_TOLERANCE
from ..model.checkpoint import load_checkpoint
from ..model.hit_model import fit_hit_model
from ..problem import GemmProblem, HardwareInfo
from ..workload import workload_class
from .compile_time import compile_time_signals
from .dataset import ProblemTimings
from .families import family_of
from .progress import Progress
from .train import TrainOptions, TrainResult, data_digest, train
from .training_split import MIN_FAMILIES_TO_SPLIT, split_training

#: Balanced first: the class where picks miss most (h100_confidence_crossfold.md).
_BALANCED_CLASS = "attention_bmm"


@dataclass(frozen=True)
class OutOfFoldRow:
    """One training problem as the fold model that did not train on it ranks it at compile
    time: the hit model's signals of its pick, and the pick's time over the fastest timed
    candidate's."""

    fold: int
    family: str
    signals: list[float]
    ratio: float
    #: the pick's outcome read from the pick labels (it was not timed with the problem)
    labelled: bool = False

    @property
    def hit(self) -> bool:
        return self.ratio <= 1 + HIT_TOLERANCE


@dataclass(frozen=True)
class FoldRankings:
    """The folds' families, their models' checkpoints, how many problems each ranked and the
    row of every training problem whose compile-time pick was timed."""

    folds: list[list[str]]
    checkpoints: list[Path]
    ranked: list[int]
    rows: list[OutOfFoldRow]


def draw_folds(records: Sequence[ProblemTimings], count: int) -> list[list[str]]:
    """The families of ``records`` dealt into ``count`` folds of whole families, balanced on
    attention-bmm problems, then on problems: in order of attention-bmm problems, then problems
    (most first), then name, a family with attention bmm goes to the fold with the fewest of them
    (then the fewest problems), any other to the fold with the fewest problems; ties to the
    first fold. Each fold's families are sorted.

    :raises ValueError: fewer than two folds, or fewer families than folds.
    """
    problems: dict[str, int] = {}
    attention: dict[str, int] = {}
    for record in records:
        family = family_of(record)
        problems[family] = problems.get(family, 0) + 1
        attention[family] = attention.get(family, 0) + (workload_class(record.problem) == _BALANCED_CLASS)
    if count < 2:
        raise ValueError(f"--hit-model-folds {count}: give at least 2 folds")
    if len(problems) < count:
        raise ValueError(
            f"--hit-model-folds {count}: the training families are only {len(problems)}; give at most that many folds"
        )
    folds: list[list[str]] = [[] for _ in range(count)]
    attention_sums, problem_sums = [0] * count, [0] * count
    for family in sorted(problems, key=lambda name: (-attention[name], -problems[name], name)):
        if attention[family]:
            fold = min(range(count), key=lambda i: (attention_sums[i], problem_sums[i], i))
        else:
            fold = min(range(count), key=lambda i: (problem_sums[i], i))
        folds[fold].append(family)
        attention_sums[fold] += attention[family]
        problem_sums[fold] += problems[family]
    return [sorted(fold) for fold in folds]


def rank_out_of_fold(
    records: Sequence[ProblemTimings],
    hardware: HardwareInfo,
    extractor: FeatureExtractor,
    output: str | Path,
    options: TrainOptions = TrainOptions(),
    *,
    folds: int = 3,
    resume: bool = False,
    progress: TextIO | None = sys.stderr,
    holdout_families: Sequence[str] = (),
    stopping_families: Sequence[str] = (),
    calibration_families: Sequence[str] = (),
    pick_labels: Mapping[GemmProblem, ProblemTimings] | None = None,
) -> FoldRankings:
    """Train (or, with ``resume``, reuse) the fold models of the model :func:`train` would train
    to ``output`` from these arguments, and rank each fold with the model trained without it,
    judging picks its records did not time from ``pick_labels``, by problem (``compile_time_signals``).
    The fold checkpoints are kept (:func:`train_out_of_fold` removes them).

    :raises ValueError: the split is not by family, too few families for ``folds``, or a fold
        checkpoint to resume from was trained on other data, options or families.
    """
    split = split_training(records, options, holdout_families, stopping_families, calibration_families)
    if not split.named and len(set(split.families)) < MIN_FAMILIES_TO_SPLIT:
        raise ValueError(
            f"--hit-model-folds: the early-stopping and calibration problems are drawn by problem "
            f"(fewer than {MIN_FAMILIES_TO_SPLIT} families), and a fold model needs them as whole families"
        )
    # every fold model stops early on and calibrates with the final model's families
    halves = {key: split.recorded()[key] for key in ("stopping_families", "calibration_families")}
    trained_on = [split.records[i] for i in split.train_ids]
    fold_families = draw_folds(trained_on, folds)
    bar = Progress(folds, enabled=progress is not None, stream=progress, unit="folds")
    checkpoints, counts, rows = [], [], []
    for index, families in enumerate(fold_families):
        path = fold_folder(output) / f"fold-{index}.pt"
        left_out = sorted({*holdout_families, *families})
        if resume and _finished(path, records, hardware, options, left_out, halves):
            bar.line(f"fold {index + 1}/{folds}: reusing {path}")
        else:
            bar.line(f"fold {index + 1}/{folds}: training without {', '.join(families)}")
            train(
                records, hardware, extractor, path, options, resume=resume, progress=progress,
                holdout_families=left_out, **halves,
            )  # fmt: skip
        fold = load_checkpoint(path)
        ranked = [record for record in trained_on if family_of(record) in families]
        found = compile_time_signals(fold.model, fold.novelty["support"], ranked, extractor, hardware, pick_labels)
        new = [OutOfFoldRow(index, family_of(ranked[i]), s, ratio, labelled) for i, s, ratio, labelled in found]
        rows += new
        checkpoints.append(path)
        counts.append(len(ranked))
        bar.line(
            f"fold {index + 1}/{folds}: ranked {len(ranked)} problems, {len(new)} with their pick timed "
            f"({sum(row.labelled for row in new)} by the pick labels), {sum(not row.hit for row in new)} of those picks missed"
        )
    return FoldRankings(fold_families, checkpoints, counts, rows)


def train_out_of_fold(
    records: Sequence[ProblemTimings],
    hardware: HardwareInfo,
    extractor: FeatureExtractor,
    output: str | Path,
    options: TrainOptions = TrainOptions(),
    *,
    folds: int = 3,
    resume: bool = False,
    progress: TextIO | None = sys.stderr,
    metadata: dict[str, Any] | None = None,
    holdout_families: Sequence[str] = (),
    stopping_families: Sequence[str] = (),
    calibration_families: Sequence[str] = (),
    pick_labels: Mapping[GemmProblem, ProblemTimings] | None = None,
) -> TrainResult:
    """:func:`train` with ``confidence="logistic"``, its hit model fitted on the out-of-fold
    rows of :func:`rank_out_of_fold` instead of the early-stopping and calibration problems.
    The checkpoint's training record gains ``"hit_model_folds"``: each fold's families, the
    problems its model ranked, those with their pick timed (the rows), those of them judged from
    ``pick_labels`` and the picks it missed. ``seconds`` counts the fold models too."""
    started = time.monotonic()
    split_by = {
        "holdout_families": holdout_families,
        "stopping_families": stopping_families,
        "calibration_families": calibration_families,
    }
    ranked = rank_out_of_fold(
        records, hardware, extractor, output, options, folds=folds, resume=resume, progress=progress,
        pick_labels=pick_labels, **split_by,
    )  # fmt: skip
    rows = ranked.rows
    hit_model = fit_hit_model([row.signals for row in rows], [row.hit for row in rows], [row.family for row in rows])
    record = []
    for index, families in enumerate(ranked.folds):
        fold_rows = [row for row in rows if row.fold == index]
        record.append({
            "families": families, "ranked": ranked.ranked[index], "problems": len(fold_rows),
            "labelled": sum(row.labelled for row in fold_rows), "misses": sum(not row.hit for row in fold_rows),
        })  # fmt: skip
    result = train(
        records, hardware, extractor, output, options, resume=resume, progress=progress, confidence="logistic",
        hit_model=hit_model, metadata={**(metadata or {}), "hit_model_folds": record}, **split_by,
    )  # fmt: skip
    shutil.rmtree(fold_folder(output))  # finished: nothing left to resume
    return dataclasses.replace(result, seconds=time.monotonic() - started, hit_model_problems=len(rows))


def fold_folder(output: str | Path) -> Path:
    """Where the fold models of the checkpoint ``output`` are written while it trains."""
    return Path(output).with_name(Path(output).name + ".folds")


def _finished(
    path: Path,
    records: Sequence[ProblemTimings],
    hardware: HardwareInfo,
    options: TrainOptions,
    holdout_families: Sequence[str],
    halves: dict[str, list[str]],
) -> bool:
    """Whether ``path`` holds the fold model :func:`train` would write from these arguments.

    :raises ValueError: it holds one of other data, options or families.
    """
    if not path.exists():
        return False
    split = split_training(records, options, holdout_families, **halves)
    wanted = {
        "options": dataclasses.asdict(options),
        "data_digest": data_digest(split.records, hardware),
        "holdout_families": list(holdout_families),
        **split.recorded(),
    }
    training = load_checkpoint(path).training
    differing = sorted(key for key, value in wanted.items() if training.get(key) != value)
    if differing:
        raise ValueError(f"{path}: a fold model of other {', '.join(differing)}; delete it or drop --resume")
    return True
