"""The study of ``benchmarks/results/h100_runtime_list_confidence.md``: a hit model fitted on
the timed candidates (T, as model 74042f8a's) against one fitted on the candidate list DIODE
ranks at compile time (R, the rows ``diode train --hit-model-folds`` fits on), both scored on R
rows of training families no fitted model saw, and that file's rule applied. CPU only; the fold
models are trained (or, with ``--resume``, reused from ``OUTPUT.folds``) exactly as
``diode train --confidence logistic --hit-model-folds 3`` trains them for the shipped recipe.

    python benchmarks/runtime_list_confidence.py trained_models/data/h100/dataset \\
        --output /tmp/oof/model.pt --resume --out benchmarks/results/h100_runtime_list_confidence.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

from diode_backend import registry
from diode_backend.model.calibration import HIT_TOLERANCE
from diode_backend.model.checkpoint import load_checkpoint
from diode_backend.model.hit_model import fit_hit_model, hit_probability
from diode_backend.offline.dataset import load_dataset
from diode_backend.offline.families import family_of
from diode_backend.offline.out_of_fold import rank_out_of_fold
from diode_backend.offline.train import TrainOptions, held_out_signals, inference_hardware
from diode_backend.offline.training_split import usable
from diode_backend.offline.validate import TRUSTED, reliability

#: The shipped recipe's families (trained_models/nvidia-h100-gemm/manifest.json).
HOLDOUT = ("bart", "electra", "mamba2", "mistral", "qwen-moe", "sd-unet", "vit", "wav2vec2")
STOPPING = ("beit", "bert", "eva", "llm", "odd", "xlm-roberta")
CALIBRATION = ("deepseek-v2", "deit", "mamba", "mbart", "opt")
#: The rule: R ships if its pooled log loss is lower and its AUROC not lower by more than this.
AUROC_SLACK = 0.01
#: A trusted pick slower than this over the fastest timed is counted against the confidence.
OVER = 1.2


def log_loss(probabilities: list[float], hits: list[bool]) -> float:
    clipped = [min(max(p, 1e-6), 1 - 1e-6) for p in probabilities]
    return -sum(math.log(p) if h else math.log(1 - p) for p, h in zip(clipped, hits)) / len(hits)


def scored(probabilities: list[float], ratios: list[float]) -> dict:
    """Pooled figures of one hit model's probabilities of R rows whose picks ran ``ratios``."""
    hits = [r <= 1 + HIT_TOLERANCE for r in ratios]
    table = reliability(probabilities, hits)
    trusted = [r for p, r in zip(probabilities, ratios) if p >= TRUSTED]
    return {
        "rows": len(hits),
        "hits": sum(hits),
        "auroc": table["auroc"],
        "log_loss": log_loss(probabilities, hits),
        "ece": table["ece"],
        "mean_confidence": table["mean_confidence"],
        "trusted": len(trusted),
        f"trusted_over_{OVER}": sum(r > OVER for r in trusted),
        "trusted_worst": max(trusted, default=None),
    }


def fold_study_parser(doc: str, output_help: str = "the fold models go to OUTPUT.folds") -> argparse.ArgumentParser:
    """The arguments every study of the shipped recipe's fold models takes: the dataset, where
    the fold models go (``--resume`` reuses them) and the results JSON."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("data", nargs="+")
    parser.add_argument("--output", required=True, help=output_help)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = fold_study_parser(__doc__).parse_args(argv)
    torch.set_num_threads(1)
    dataset = load_dataset(args.data)
    records = dataset.split("train")
    hardware = inference_hardware(dataset.hardware)
    extractor = registry.feature_extractors()["gemm"]
    ranked = rank_out_of_fold(
        records, hardware, extractor, args.output, TrainOptions(), folds=3, resume=args.resume,
        holdout_families=HOLDOUT, stopping_families=STOPPING, calibration_families=CALIBRATION,
    )  # fmt: skip
    runtime = {fold: [row for row in ranked.rows if row.fold == fold] for fold in range(len(ranked.folds))}
    timed = {}  # each fold's problems ranked over their timed candidates, as 74042f8a's hit model was fitted
    for fold, (families, path) in enumerate(zip(ranked.folds, ranked.checkpoints)):
        checkpoint = load_checkpoint(path)
        members = usable([r for r in records if family_of(r) in families])
        signals, hits = held_out_signals(checkpoint.model, checkpoint.novelty["support"], members, extractor, hardware)
        timed[fold] = [(family_of(r), s, h) for r, s, h in zip(members, signals, hits)]
    probabilities: dict[str, list[float]] = {"T": [], "R": []}
    ratios: list[float] = []
    for fold in runtime:
        others = [f for f in runtime if f != fold]
        fitted = {
            "T": fit_hit_model(
                [s for f in others for _, s, _ in timed[f]], [h for f in others for _, _, h in timed[f]],
                [family for f in others for family, _, _ in timed[f]],
            ),
            "R": fit_hit_model(
                [r.signals for f in others for r in runtime[f]], [r.hit for f in others for r in runtime[f]],
                [r.family for f in others for r in runtime[f]],
            ),
        }  # fmt: skip
        for name, block in fitted.items():
            probabilities[name] += [hit_probability(block, r.signals) for r in runtime[fold]]
        ratios += [r.ratio for r in runtime[fold]]
    figures = {name: scored(p, ratios) for name, p in probabilities.items()}
    ships = figures["R"]["log_loss"] < figures["T"]["log_loss"] and figures["R"]["auroc"] >= figures["T"]["auroc"] - AUROC_SLACK
    result = {
        "study": "benchmarks/results/h100_runtime_list_confidence.md",
        "folds": ranked.folds,
        "ranked": ranked.ranked,
        "timed_rows": {fold: len(rows) for fold, rows in timed.items()},
        "runtime_rows": {fold: len(rows) for fold, rows in runtime.items()},
        "pooled_on_runtime_rows": figures,
        "rule": f"R ships if its log loss is lower than T's and its AUROC not lower by more than {AUROC_SLACK}",
        "decision": "R" if ships else "T",
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
