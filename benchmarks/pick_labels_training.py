"""The study of ``benchmarks/results/h100_pick_labels_training.md``: fold models of the shipped
recipe trained on the records joined with their pick labels (J) against the shipped model's fold
models (B), each ranking the training families it was trained without over the compile-time
list, every pick judged against the joined records; and the untimed picks of both listed to time
next. CPU only.

    python benchmarks/pick_labels_training.py trained_models/data/h100/dataset \\
        --pick-labels trained_models/data/h100/pick-labels [trained_models/data/h100/pick-labels-2] \\
        --train-labels trained_models/data/h100/pick-labels --baseline /tmp/oof/model.pt \\
        --output /tmp/joined/model.pt --resume --out benchmarks/results/h100_pick_labels_training.json \\
        --target trained_models/data/h100/problems/pick-labels-2-train.json.gz

J trains on the records joined with ``--train-labels`` (default: ``--pick-labels``), with the
shipped recipe's options but ``--hidden`` and ``--layers``; every pick
is judged against the records joined with all of ``--pick-labels``, a folder per round. B's fold
models are ``BASELINE.folds`` (as ``h100_pick_labels_plan.py --output BASELINE`` trains
them: the same folds); J's go to ``OUTPUT.folds``, trained there or, with ``--resume``, reused.
``--target`` lists the untimed out-of-fold picks of J and of B to time (the rule judges every pick
of both); with ``--dense N``, J's are the untimed configs among the first N of each of its
out-of-fold rankings (a dense round of labels).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from h100_pick_labels_plan import listed_picks  # noqa: E402
from runtime_list_confidence import CALIBRATION, HOLDOUT, STOPPING, fold_study_parser  # noqa: E402

from diode_backend import registry  # noqa: E402
from diode_backend.model.checkpoint import load_checkpoint  # noqa: E402
from diode_backend.model.network import FrozenTimingModel  # noqa: E402
from diode_backend.offline.collect import shapes  # noqa: E402
from diode_backend.offline.compile_time import compile_time_signals  # noqa: E402
from diode_backend.offline.dataset import load_dataset  # noqa: E402
from diode_backend.offline.families import family_of  # noqa: E402
from diode_backend.offline.out_of_fold import fold_folder, rank_out_of_fold  # noqa: E402
from diode_backend.offline.pick_labels import joined, load_pick_labels  # noqa: E402
from diode_backend.offline.train import TrainOptions, inference_hardware  # noqa: E402
from diode_backend.offline.validate import spread  # noqa: E402
from diode_backend.workload import workload_class  # noqa: E402


def regret_figures(ratios: list[float]) -> dict:
    """Geomean, p90 and worst of top-1 regrets (as the validation report: ``validate.spread``),
    None for none."""
    if not ratios:
        return {"problems": 0, "geomean": None, "p90": None, "worst": None}
    return {"problems": len(ratios), **spread(ratios)}


#: The rule: J ships if its geomean is lower than B's by at least this, and its p90 not higher.
GEOMEAN_MARGIN = 0.005


def compare(picks: dict[str, dict[int, float]], classes: list[str]) -> dict:
    """B's and J's pick ratios by problem index (judged picks only) compared where both are
    judged, overall and per workload class (``classes`` by index), with J's unjudged count, and
    the rule of ``h100_pick_labels_training.md`` applied to them: binding once every pick of
    both is judged (``complete``). Until then ``j_at_best`` applies it to all of B's picks
    against J's with each unjudged one at regret 1: where that cannot ship J, no timing can."""
    both = sorted(picks["B"].keys() & picks["J"].keys())
    out = {
        "judged": {name: len(found) for name, found in picks.items()},
        "j_unjudged_where_b_judged": len(picks["B"].keys() - picks["J"].keys()),
        "both": {name: regret_figures([picks[name][i] for i in both]) for name in picks},
        "by_class": {},
    }
    for cls in sorted({classes[i] for i in both}):
        members = [i for i in both if classes[i] == cls]
        out["by_class"][cls] = {name: regret_figures([picks[name][i] for i in members]) for name in picks}
    b, j = out["both"]["B"], out["both"]["J"]
    ships = bool(both) and j["geomean"] <= b["geomean"] - GEOMEAN_MARGIN and j["p90"] <= b["p90"]
    out["rule"] = f"J ships if its geomean is lower than B's by at least {GEOMEAN_MARGIN} and its p90 not higher"
    out["complete"] = len(both) == len(classes)
    out["decision"] = "J" if ships else "B"
    if not out["complete"]:
        # whether timing J's unjudged picks can still ship it: each at its best (regret 1)
        b_all = regret_figures(list(picks["B"].values()))
        j_best = regret_figures([picks["J"].get(i, 1.0) for i in picks["B"]])
        can_ship = j_best["geomean"] <= b_all["geomean"] - GEOMEAN_MARGIN and j_best["p90"] <= b_all["p90"]
        out["j_at_best"] = {"B": b_all, "J": j_best, "can_ship": can_ship}
    return out


def merged(record, *lists: tuple) -> tuple:
    """Several models' configs to time for ``record`` as one list: the untimed ones of all, each
    once, then the timed reference tile each list ends with (``to_time``), last as the sweep
    expects it."""
    timed = set(record.configs)
    every = [config for configs in lists for config in configs]
    return tuple(dict.fromkeys([c for c in every if c not in timed] + [c for c in every if c in timed]))


def main(argv: list[str] | None = None) -> int:
    parser = fold_study_parser(__doc__, output_help="J's fold models go to OUTPUT.folds")
    parser.add_argument("--pick-labels", nargs="+", required=True, help="the labels picks are judged by, a folder per round")
    parser.add_argument("--train-labels", nargs="+", help="the labels J trains on (default: --pick-labels)")
    parser.add_argument("--baseline", type=Path, required=True, help="B's fold models are BASELINE.folds")
    parser.add_argument("--target", type=Path, help="write the untimed picks of J and B to time here")
    parser.add_argument("--round", default="2", help="the round of labels --target lists (names it pick-labels-ROUND-train; "
                        "a round timing two candidates' picks names each: 3, 3-capacity)")  # fmt: skip
    parser.add_argument(
        "--dense", type=int, default=0, metavar="N",
        help="with --target: list the untimed configs among the first N of J's out-of-fold rankings, not only its untimed picks",
    )  # fmt: skip
    parser.add_argument("--hidden", type=int, default=TrainOptions.hidden, help="J's hidden units per layer (B's are what they were trained with)")
    parser.add_argument("--layers", type=int, default=TrainOptions.layers, help="J's hidden layers")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    dataset = load_dataset(args.data)
    hardware = inference_hardware(dataset.hardware)
    extractor = registry.feature_extractors()["gemm"]
    records = dataset.split("train")
    judged_by = joined(records, load_pick_labels(args.pick_labels, dataset.hardware.key))
    trained_on = joined(records, load_pick_labels(args.train_labels or args.pick_labels, dataset.hardware.key))
    recipe = {"folds": 3, "holdout_families": HOLDOUT, "stopping_families": STOPPING, "calibration_families": CALIBRATION}
    options = TrainOptions(hidden=args.hidden, layers=args.layers)
    new = rank_out_of_fold(trained_on, hardware, extractor, args.output, options, resume=args.resume, **recipe)
    baseline = [fold_folder(args.baseline) / f"fold-{k}.pt" for k in range(len(new.folds))]
    if not all(path.is_file() for path in baseline):
        raise SystemExit(f"{fold_folder(args.baseline)}: B's fold models are missing (h100_pick_labels_plan.py --output trains them)")
    picks: dict[str, dict[int, float]] = {"B": {}, "J": {}}
    ranked, classes, listed = [], [], {}
    kinds = {config.kind for record in records for config in record.configs}
    for families, *paths in zip(new.folds, baseline, new.checkpoints):
        members = [r for r in judged_by if family_of(r) in families]
        offset = len(ranked)
        ranked += members
        classes += [workload_class(r.problem) for r in members]
        for name, path, dense in zip(picks, paths, (0, args.dense)):  # B's untimed picks listed, then J's
            checkpoint = load_checkpoint(path)
            for index, _, ratio, _ in compile_time_signals(checkpoint.model, checkpoint.novelty["support"], members, extractor, hardware):
                picks[name][offset + index] = ratio
            for record, wanted in listed_picks(FrozenTimingModel(checkpoint.model), members, hardware, kinds, dense).items():
                listed[record] = merged(record, listed.get(record, ()), wanted)
    result = {
        "study": "benchmarks/results/h100_pick_labels_training.md",
        "folds": new.folds,
        "ranked": len(ranked),
        "trained_on_labels": sum(a is not b for a, b in zip(records, trained_on)),
        "judged_by_labels": sum(a is not b for a, b in zip(records, judged_by)),
        **compare(picks, classes),
        "untimed_listed": len(listed),
    }
    if args.target:
        named = [(f"pick-labels-{args.round}:{family_of(record)}", record.problem) for record in listed]
        configs = {record.problem: wanted for record, wanted in listed.items()}
        shapes.to_json(named, args.target, f"pick-labels-{args.round}-train", configs=configs)
        result["listed_by_class"] = dict(sorted(Counter(workload_class(r.problem) for r in listed).items()))
        result["listed_pairs"] = sum(len(w) for w in listed.values())
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
