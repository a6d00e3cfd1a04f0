"""How many of the picks a confidence keeps alone run over issue 14's bound as the share kept
alone grows: the fold models of a recipe rank the training families each was trained without,
over the compile-time list (``offline.out_of_fold.rank_out_of_fold``, as ``diode train
--hit-model-folds 3`` ranks them; a pick its record did not time is judged from
``--pick-labels``), and a hit model fitted on the other folds' picks scores each fold's
(cross-fitted, by ``fit_hit_model`` on the signals DIODE computes at compile time). CPU only.

    python benchmarks/trusted_miss_coverage.py trained_models/data/h100/dataset \\
        --pick-labels D/pick-labels D/pick-labels-2 ... --train-labels D/pick-labels D/pick-labels-2 \\
        --hidden 64 --layers 3 --output .c2/model.pt --resume --out R/trusted_miss_coverage.json

Two hit models on the same signals: the shipped kind (a hit: within ``1 + HIT_TOLERANCE`` of
the fastest) and one fitted to issue 14's bound (within ``tradeoff.WORST_BOUND``). Per share
kept alone (the picks of highest probability first): the picks kept, those over the bound and
over :data:`FAR`, the worst, the geomean, the least probability kept, and what a run of
``--run-rows`` GEMMs keeping that share alone can expect of its kept picks: the mean number over
the bound (share x rows x the rate here) and the chance, were misses independent, that none is
(Poisson). The ratios are over the fastest candidate the records and labels timed, not a run's
best mode, and the families are training families: the figures bound what any threshold on
such a confidence can do, they choose nothing.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_report  # noqa: E402
from runtime_list_confidence import CALIBRATION, HOLDOUT, STOPPING, fold_study_parser  # noqa: E402

from diode_backend import registry  # noqa: E402
from diode_backend.model.calibration import HIT_TOLERANCE, auroc  # noqa: E402
from diode_backend.model.hit_model import fit_hit_model, hit_probability  # noqa: E402
from diode_backend.offline.dataset import load_dataset  # noqa: E402
from diode_backend.offline.out_of_fold import OutOfFoldRow, rank_out_of_fold  # noqa: E402
from diode_backend.offline.pick_labels import joined, load_pick_labels  # noqa: E402
from diode_backend.offline.tradeoff import WORST_BOUND  # noqa: E402
from diode_backend.offline.train import TrainOptions, inference_hardware  # noqa: E402

#: A pick this far over the fastest is counted apart: far beyond any bound.
FAR = 1.3
SHARES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)
#: What each hit model calls a hit: a pick within this factor of the fastest.
HIT_WITHIN = {"within_5_percent": 1 + HIT_TOLERANCE, "within_bound": WORST_BOUND}


def cross_fitted(rows: Sequence[OutOfFoldRow], within: float) -> list[float]:
    """Each row's probability of running within ``within`` of the fastest, by a hit model
    fitted on the other folds' rows."""
    probabilities = [0.0] * len(rows)
    for fold in sorted({row.fold for row in rows}):
        others = [row for row in rows if row.fold != fold]
        block = fit_hit_model([r.signals for r in others], [r.ratio <= within for r in others], [r.family for r in others])
        for i, row in enumerate(rows):
            if row.fold == fold:
                probabilities[i] = hit_probability(block, row.signals)
    return probabilities


def coverage(probabilities: Sequence[float], ratios: Sequence[float], shares: Sequence[float], run_rows: int) -> list[dict]:
    """Per share kept alone, highest probability first: what the kept picks ran."""
    order = sorted(range(len(ratios)), key=lambda i: -probabilities[i])
    table = []
    for share in shares:
        kept = order[: max(1, round(share * len(order)))]
        ran = [ratios[i] for i in kept]
        over = sum(r > WORST_BOUND for r in ran)
        expected = share * run_rows * over / len(ran)
        table.append({
            "share": share, "kept": len(ran), "least_probability": probabilities[kept[-1]],
            "over_bound": over, "over_far": sum(r > FAR for r in ran), "worst": max(ran),
            "geomean": math.exp(sum(map(math.log, ran)) / len(ran)),
            "run_expected_over_bound": expected, "run_chance_none_over_bound": math.exp(-expected),
        })  # fmt: skip
    return table


def study(rows: Sequence[OutOfFoldRow], run_rows: int, shares: Sequence[float] = SHARES) -> dict:
    ratios = [row.ratio for row in rows]
    models = {}
    for name, within in HIT_WITHIN.items():
        probabilities = cross_fitted(rows, within)
        models[name] = {
            "hit_within": within,
            "auroc": {
                "within_5_percent": auroc(probabilities, [r <= HIT_WITHIN["within_5_percent"] for r in ratios]),
                "within_bound": auroc(probabilities, [r <= WORST_BOUND for r in ratios]),
            },
            "coverage": coverage(probabilities, ratios, shares, run_rows),
        }
    return {
        "rows": len(rows),
        "labelled": sum(row.labelled for row in rows),
        "over_bound": sum(r > WORST_BOUND for r in ratios),
        "over_far": sum(r > FAR for r in ratios),
        "bound": WORST_BOUND,
        "far": FAR,
        "run_rows": run_rows,
        "models": models,
    }


def main(argv: list[str] | None = None) -> int:
    parser = fold_study_parser(__doc__, output_help="the recipe's fold models are OUTPUT.folds (trained there or, with --resume, reused)")
    parser.add_argument("--pick-labels", nargs="+", required=True, help="the labels untimed picks are judged by, a folder per round")
    parser.add_argument("--train-labels", nargs="*", default=[], help="the labels the recipe trains on (joined with the records)")
    parser.add_argument("--hidden", type=int, default=TrainOptions.hidden)
    parser.add_argument("--layers", type=int, default=TrainOptions.layers)
    parser.add_argument("--run-rows", type=int, default=173, help="the GEMMs of the run the expectations are for (default: the held-out run's 173)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dataset = load_dataset(args.data)
    records = dataset.split("train")
    if args.train_labels:
        records = joined(records, load_pick_labels(args.train_labels, dataset.hardware.key))
    ranked = rank_out_of_fold(
        records, inference_hardware(dataset.hardware), registry.feature_extractors()["gemm"], args.output,
        TrainOptions(hidden=args.hidden, layers=args.layers), folds=3, resume=args.resume, holdout_families=HOLDOUT,
        stopping_families=STOPPING, calibration_families=CALIBRATION,
        pick_labels=load_pick_labels(args.pick_labels, dataset.hardware.key),
    )  # fmt: skip
    result = {
        "benchmark": "trusted_miss_coverage",
        "what": "out of fold on training families, cross-fitted hit models; chooses nothing",
        "method": " ".join(__doc__.split("\n\n")[2].split()),
        "recipe": {"hidden": args.hidden, "layers": args.layers, "train_labels": args.train_labels, "fold_models": str(args.output) + ".folds"},
        "pick_labels": args.pick_labels,
        "folds": ranked.folds,
        **study(ranked.rows, args.run_rows),
    }
    e2e_report.emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
