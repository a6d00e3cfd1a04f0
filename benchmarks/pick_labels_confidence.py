"""The study of ``benchmarks/results/h100_pick_labels_confidence.md``: a hit model fitted on the
out-of-fold compile-time picks the records timed (R, as model 3176e199's) against one fitted on
those and the picks the pick labels timed (L, what ``diode train --hit-model-folds 3
--pick-labels`` fits), both scored on every judged row of training families no fitted model saw,
and that file's rule applied. CPU only; the fold models are trained (or, with ``--resume``,
reused from ``OUTPUT.folds``) as ``diode train --confidence logistic --hit-model-folds 3`` trains
them for the shipped recipe.

    python benchmarks/pick_labels_confidence.py trained_models/data/h100/dataset \\
        --pick-labels trained_models/data/h100/pick-labels --output /tmp/oof/model.pt --resume \\
        --out benchmarks/results/h100_pick_labels_confidence.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtime_list_confidence import AUROC_SLACK, CALIBRATION, HOLDOUT, STOPPING, fold_study_parser, scored  # noqa: E402

from diode_backend import registry  # noqa: E402
from diode_backend.model.hit_model import fit_hit_model, hit_probability  # noqa: E402
from diode_backend.offline.dataset import load_dataset  # noqa: E402
from diode_backend.offline.out_of_fold import OutOfFoldRow, rank_out_of_fold  # noqa: E402
from diode_backend.offline.pick_labels import load_pick_labels  # noqa: E402
from diode_backend.offline.train import TrainOptions, inference_hardware  # noqa: E402

RULE = f"L ships if, on all rows, its log loss is lower than R's and its AUROC not lower by more than {AUROC_SLACK}"


def _fitted(rows: Sequence[OutOfFoldRow]) -> dict:
    return fit_hit_model([r.signals for r in rows], [r.hit for r in rows], [r.family for r in rows])


def compare(rows: Sequence[OutOfFoldRow]) -> dict:
    """R (fitted on the other folds' timed rows) and L (on all their rows) scored on each fold's
    rows, pooled: on all rows, the timed ones and the labelled ones; and the rule's decision."""
    probabilities: dict[str, list[float]] = {"R": [], "L": []}
    held: list[OutOfFoldRow] = []
    for fold in sorted({r.fold for r in rows}):
        others = [r for r in rows if r.fold != fold]
        models = {"R": _fitted([r for r in others if not r.labelled]), "L": _fitted(others)}
        mine = [r for r in rows if r.fold == fold]
        for name, block in models.items():
            probabilities[name] += [hit_probability(block, r.signals) for r in mine]
        held += mine
    subsets = {
        "all": range(len(held)),
        "timed": [i for i, r in enumerate(held) if not r.labelled],
        "labelled": [i for i, r in enumerate(held) if r.labelled],
    }
    figures = {
        subset: {name: scored([probs[i] for i in indices], [held[i].ratio for i in indices]) for name, probs in probabilities.items()}
        for subset, indices in subsets.items()
        if indices
    }
    everything = figures["all"]
    ships = everything["L"]["log_loss"] < everything["R"]["log_loss"] and (
        everything["L"]["auroc"] >= everything["R"]["auroc"] - AUROC_SLACK
    )
    return {"pooled": figures, "rule": RULE, "decision": "L" if ships else "R"}


def main(argv: list[str] | None = None) -> int:
    parser = fold_study_parser(__doc__)
    parser.add_argument("--pick-labels", nargs="+", required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dataset = load_dataset(args.data)
    hardware = inference_hardware(dataset.hardware)
    ranked = rank_out_of_fold(
        dataset.split("train"), hardware, registry.feature_extractors()["gemm"], args.output, TrainOptions(),
        folds=3, resume=args.resume, holdout_families=HOLDOUT, stopping_families=STOPPING,
        calibration_families=CALIBRATION, pick_labels=load_pick_labels(args.pick_labels, dataset.hardware.key),
    )  # fmt: skip
    result = {
        "study": "benchmarks/results/h100_pick_labels_confidence.md",
        "folds": ranked.folds,
        "ranked": ranked.ranked,
        "rows": {
            fold: {"timed": sum(r.fold == fold and not r.labelled for r in ranked.rows),
                   "labelled": sum(r.fold == fold and r.labelled for r in ranked.rows)}
            for fold in range(len(ranked.folds))
        },  # fmt: skip
        **compare(ranked.rows),
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
