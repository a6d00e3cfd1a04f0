"""``diode train``: train a timing model on a dataset's training problems."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

_OPTION_HELP = {
    "hidden": "hidden units per layer",
    "layers": "hidden layers",
    "ensemble": "ensemble members (their agreement is the confidence)",
    "max_epochs": "most epochs",
    "patience": "stop after this many epochs without a lower loss on the early-stopping problems",
    "steps_per_epoch": "optimiser steps per epoch",
    "problems_per_step": "problems per step",
    "candidates": "candidates drawn per problem per step",
    "sample_power": "candidates are drawn as floor(u**power * n) over the problem's fastest first: above 1 favours fast ones",
    "learning_rate": "AdamW learning rate (cosine decay over max-epochs)",
    "listwise_weight": "weight of the ranking (listwise) term against the MSE of log times",
    "temperature": "listwise softmax temperature, natural-log units of time",
    "holdout_fraction": "training problems held out: half for early stopping, all for calibrating the confidence",
    "seed": "seed of initialisation, sampling and the hold-out split",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    from ..train_options import CONFIDENCES, TrainOptions
    from .labels import add_pick_labels

    parser = subparsers.add_parser(
        "train",
        help="train a timing model on collected timings",
        description="Train a timing model on the 'train' problems of one or more datasets "
        "(`diode collect` output; validation problems are never used) and write a model folder: "
        "model.pt and manifest.json, usable at once through DIODE_MODELS_PATH or "
        "`diode_model=<folder>`. A fraction of the training problems is held out for early "
        "stopping and for calibrating the confidence. The training state is saved after every "
        "epoch (model.pt.state); --resume continues an interrupted run to the same result.",
        epilog="example: diode train timings/ --output models/my-h100",
    )
    parser.add_argument("data", nargs="+", type=Path, help="dataset shard files or directories")
    parser.add_argument("--output", "-o", type=Path, required=True, help="model folder to write")
    parser.add_argument("--name", help="model name in the manifest (default: the folder's name)")
    parser.add_argument(
        "--hardware-match",
        action="append",
        metavar="TEXT",
        help="device-name text the model is picked for automatically, repeatable (default: the "
        "dataset's full device name)",
    )
    parser.add_argument("--priority", type=int, default=10, help="priority among models that apply (default 10)")
    parser.add_argument(
        "--holdout-families",
        metavar="A,B,...",
        default="",
        help="model families to leave out of training, early stopping and calibration, so that "
        "`diode validate --families held-out` measures them as unseen (a family is a problem's "
        "generator without its 'zoo:' prefix; `diode dataset info` lists the generators)",
    )
    for half, role in (("stopping", "early stopping"), ("calibration", "calibrating the confidence only")):
        parser.add_argument(
            f"--{half}-families",
            metavar="A,B,...",
            default="",
            help=f"model families used for {role}, instead of drawing the split by seed (give "
            "both or neither; to retrain like-for-like on grown data, the families the checkpoint "
            "recorded: docs/models.md)",
        )
    parser.add_argument(
        "--confidence",
        choices=CONFIDENCES,
        default=CONFIDENCES[0],
        help="how the confidence is fitted on the held-out families: 'calibrated', the raw score "
        "calibrated in one dimension; 'logistic', a logistic model of the raw score and of the "
        f"problem's and the pick's kind (docs/models.md; default {CONFIDENCES[0]})",
    )
    parser.add_argument(
        "--hit-model-folds",
        type=int,
        default=0,
        metavar="K",
        help="with --confidence logistic: fit it on out-of-fold rankings instead, from K more "
        "models of this recipe, each trained without one of K folds of whole training families "
        "and ranking that fold (K+1 trainings; --resume reuses the finished ones; default 0: "
        "fit on the early-stopping and calibration families)",
    )
    add_pick_labels(
        parser,
        "with --hit-model-folds: datasets that timed picks the training data did not "
        "(`diode collect sweep --space listed`, e.g. of benchmarks/h100_pick_labels_plan.py's list): "
        "a fold model's untimed pick is judged from them, so the confidence is fitted on those too",
    )
    parser.add_argument(
        "--train-on-pick-labels",
        nargs="+",
        type=Path,
        default=[],
        metavar="DATA",
        help="pick labels to train the network on too, one folder per round: a training problem's "
        "record gains the candidates its label timed, scaled to the record's day by the candidates "
        "both timed (a pick they timed is then judged from the record)",
    )
    parser.add_argument("--resume", action="store_true", help="continue from the saved training state")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads for torch (default: torch's choice)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    defaults = TrainOptions()
    for field in dataclasses.fields(TrainOptions):
        if field.name in _OPTION_HELP:
            default = getattr(defaults, field.name)
            parser.add_argument(
                f"--{field.name.replace('_', '-')}",
                type=type(default),
                default=default,
                help=f"{_OPTION_HELP[field.name]} (default {default})",
            )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from ... import registry
    from ..dataset import load_dataset
    from ..families import check_families, family_of, parse_families, without_families
    from ..out_of_fold import train_out_of_fold
    from ..pick_labels import joined
    from .labels import read_pick_labels
    from ..train import TrainOptions, inference_hardware, train, write_model_manifest
    from ..training_split import check_named_split
    from . import CommandError, UsageError

    if args.hit_model_folds and args.confidence != "logistic":
        raise UsageError("--hit-model-folds: fits the logistic confidence; add --confidence logistic")
    if args.pick_labels and not args.hit_model_folds:
        raise UsageError("--pick-labels: judges the picks of fold models; add --confidence logistic --hit-model-folds K")
    if args.threads:
        torch.set_num_threads(args.threads)
    dataset = load_dataset(args.data)
    problems = dataset.split("train")
    if not problems:
        raise CommandError(f"{', '.join(map(str, args.data))}: no problems tagged 'train'")
    held_out: list[str] = []
    if args.holdout_families:
        try:
            held_out = check_families(dataset.problems, parse_families(args.holdout_families))
        except ValueError as err:
            raise UsageError(f"--holdout-families: {err}") from None
        if not without_families(problems, held_out):
            raise UsageError("--holdout-families: that leaves no training problem")
    kept = without_families(problems, held_out)
    stopping, calibration = parse_families(args.stopping_families), parse_families(args.calibration_families)
    try:
        check_named_split([family_of(p) for p in kept], held_out, stopping, calibration)
    except ValueError as err:
        raise UsageError(str(err)) from None
    pick_labels = read_pick_labels(args.pick_labels, dataset.hardware.key) if args.pick_labels else {}
    metadata = {}
    if args.train_on_pick_labels:
        plain = problems
        problems = joined(plain, read_pick_labels(args.train_on_pick_labels, dataset.hardware.key, "--train-on-pick-labels"))
        metadata["trained_on_pick_labels"] = sum(a is not b for a, b in zip(plain, problems))
    hardware = inference_hardware(dataset.hardware)
    extractor = registry.feature_extractors()["gemm"]
    options = TrainOptions(**{name: getattr(args, name) for name in _OPTION_HELP})
    split_by = {"holdout_families": held_out, "stopping_families": stopping, "calibration_families": calibration}
    output = args.output / "model.pt"
    progress = sys.stderr  # the stream of now, not of import time
    if args.hit_model_folds:
        result = train_out_of_fold(
            problems, hardware, extractor, output, options, folds=args.hit_model_folds, resume=args.resume,
            progress=progress, pick_labels=pick_labels, metadata=metadata, **split_by,
        )  # fmt: skip
    else:
        result = train(
            problems, hardware, extractor, output, options, resume=args.resume, confidence=args.confidence,
            progress=progress, metadata=metadata, **split_by,
        )  # fmt: skip
    manifest = write_model_manifest(
        args.output,
        name=args.name or args.output.resolve().name,
        hardware_match=args.hardware_match or [hardware.name],
        problems=kept,
        description=f"timing model trained by `diode train` without the families {', '.join(held_out)}" if held_out else "",
        priority=args.priority,
    )
    summary = {**dataclasses.asdict(result), "checkpoint": str(result.checkpoint), "manifest": str(manifest)}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"trained {result.epochs} epochs in {result.seconds:.0f} s (best: epoch {result.best_epoch}, "
        f"held-out top-1 regret {result.holdout_top1_regret:.4f}) on {result.train_problems} problems"
    )
    if held_out:
        print(f"held out families: {', '.join(held_out)}")
    if result.unusable_problems:
        print(f"left out {result.unusable_problems} training problems with fewer than two timed candidates")
    if metadata:
        print(f"trained on the pick labels of {metadata['trained_on_pick_labels']} training problems")
    if result.hit_model_problems:
        where = f"out-of-fold rankings of {args.hit_model_folds} fold models" if args.hit_model_folds else "held-out families"
        print(f"logistic confidence fitted on {result.hit_model_problems} problems ({where})")
    print(f"wrote {result.checkpoint} and {manifest}")
    families = " --split all --families held-out" if held_out else ""
    print(f"next: diode validate {args.output} {' '.join(map(str, args.data))}{families}")
    return 0
