"""Training problems whose compile-time pick was never timed, with the configs to time beside it (CPU).

    python benchmarks/h100_pick_labels_plan.py trained_models/data/h100/dataset --output /tmp/oof/model.pt [--resume] \
        --target trained_models/data/h100/problems/pick-labels-train.json.gz   # the first round's list
    python benchmarks/h100_pick_labels_plan.py trained_models/data/h100/dataset --heldout trained_models/nvidia-h100-gemm/model.pt
        # writes trained_models/data/h100/problems/pick-labels-validation.json
    python benchmarks/h100_pick_labels_plan.py trained_models/data/h100/dataset --heldout MODEL.pt --round 2 \
        --target trained_models/data/h100/problems/pick-labels-2-validation.json   # a later round's list
    python benchmarks/h100_pick_labels_plan.py trained_models/data/h100/dataset --heldout MODEL.pt --round 3-capacity \
        --pick-labels trained_models/data/h100/pick-labels trained_models/data/h100/pick-labels-2 \
        --target trained_models/data/h100/problems/pick-labels-3-capacity-validation.json
        # ... leaving out the picks earlier rounds' labels timed
    python benchmarks/h100_pick_labels_plan.py trained_models/data/h100/dataset --heldout MODEL.pt --round dense-1 \
        --dense 5 --pick-labels ... --target trained_models/data/h100/problems/pick-labels-dense-1-validation.json
        # ... the untimed configs among the first 5 of each held-out ranking
    python benchmarks/h100_pick_labels_plan.py trained_models/data/h100/dataset --neighbours --round neighbours-1 \
        --pick-labels ... --target trained_models/data/h100/problems/pick-labels-neighbours-1-train.json.gz
        # ... the untimed configs one step from each training problem's fastest timed tile (no model)

The shipped confidence is fitted out of fold on the training problems whose compile-time pick
(DIODE's ranking over Inductor's whole candidate list) was timed: 2,198 of 4,719. The others
have no label, so the hit model never saw a pick the collector did not time, and end to end its
AUROC on such held-out GEMMs is the lowest (``h100_runtime_list_confidence.md``). This lists,
for each training problem whose out-of-fold compile-time pick was not timed, what to time on
one day to judge that pick: the first :data:`TOP` configs of its compile-time ranking that
were not timed (the pick first) and the fastest Triton config the dataset timed for it (the
day's reference; ATen's calls are always timed by the ``listed`` space).

The rankings are the shipped recipe's out-of-fold ones: the three fold models
``diode train ... --confidence logistic --hit-model-folds 3 --seed 0`` trains
(``rank_out_of_fold``, trained into ``OUTPUT.folds`` or reused with ``--resume``), each ranking
the training families it was trained without, as ``compile_time_signals`` ranks them. Time the
list with ``diode collect sweep --space listed`` into its own dataset directory, not the
training dataset's (its problems are already there, timed on another day), and give that to
``diode train ... --hit-model-folds 3 --pick-labels DIR``.

``--heldout MODEL`` lists the same for the held-out families' validation problems as MODEL (the
shipped one) ranks them: not to fit anything, but so that ``diode validate --pick-labels`` can
judge its confidence on every held-out problem, not only those whose pick was timed (118 of 173).
Collect it with ``--validation pick-labels-validation.json --validation-space listed``.

``--neighbours`` lists, for each training problem of the fold families, the untimed configs of
its compile-time list one step from its fastest timed Triton tile, beside that tile
(:func:`neighbours`): most of them were never timed for any problem's fastest tile, so no model
learnt how a step of stages, warps or block moves a tile's time near the best, where most of the
out-of-fold misses lie (``h100_pick_labels_training.md``, "A neighbours round"). It needs no model.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtime_list_confidence import CALIBRATION, HOLDOUT, STOPPING  # noqa: E402

from diode_backend import registry  # noqa: E402
from diode_backend.model.checkpoint import load_checkpoint  # noqa: E402
from diode_backend.model.network import FrozenTimingModel  # noqa: E402
from diode_backend.offline.collect import shapes  # noqa: E402
from diode_backend.offline.dataset import ProblemTimings, load_dataset, timed_hardware  # noqa: E402
from diode_backend.offline.families import family_of  # noqa: E402
from diode_backend.offline.compile_time import compile_time_predictions  # noqa: E402
from diode_backend.offline.out_of_fold import rank_out_of_fold  # noqa: E402
from diode_backend.offline.pick_labels import joined, load_pick_labels  # noqa: E402
from diode_backend.offline.train import TrainOptions, inference_hardware  # noqa: E402
from diode_backend.problem import KIND_TRITON, KernelConfig  # noqa: E402
from diode_backend.workload import workload_class  # noqa: E402

LISTS = Path(__file__).resolve().parents[1] / "trained_models" / "data" / "h100" / "problems"
#: How many untimed configs of the top of a compile-time ranking are listed, the pick first.
TOP = 3


def to_time(order: list[KernelConfig], record: ProblemTimings, dense: int = 0) -> tuple[KernelConfig, ...] | None:
    """What to time for ``record`` given its compile-time ranking ``order`` (fastest predicted
    first), with the fastest timed Triton config beside it (the day's reference): the first
    :data:`TOP` untimed configs where the pick was not timed, else None; with ``dense`` N, the
    untimed configs among the first N of ``order`` (None where all N were timed)."""
    timed = dict(zip(record.configs, record.times_us))
    if dense:
        untimed = [c for c in order[:dense] if c not in timed]
    else:
        untimed = [] if order[0] in timed else [c for c in order if c not in timed][:TOP]
    if not untimed:
        return None
    triton = [c for c in timed if c.kind == KIND_TRITON]
    return (*untimed, *([min(triton, key=timed.__getitem__)] if triton else []))


def one_step(config: KernelConfig, best: KernelConfig) -> bool:
    """Whether ``config`` is one step from ``best``: the same tile at other ``num_stages`` or
    ``num_warps``, or, at the same stages and warps, one of BLOCK_M, BLOCK_N and BLOCK_K halved
    or doubled (the same kind, template and group)."""
    if dataclasses.replace(config, num_stages=best.num_stages, num_warps=best.num_warps) == best:
        return config != best
    if (config.num_stages, config.num_warps) != (best.num_stages, best.num_warps):
        return False
    blocks = [(config.block_m, best.block_m), (config.block_n, best.block_n), (config.block_k, best.block_k)]
    changed = [(new, old) for new, old in blocks if new != old]
    same_rest = dataclasses.replace(config, block_m=best.block_m, block_n=best.block_n, block_k=best.block_k) == best
    return same_rest and len(changed) == 1 and changed[0][0] in (2 * changed[0][1], changed[0][1] / 2)


def neighbours(configs: list[KernelConfig], record: ProblemTimings) -> tuple[KernelConfig, ...] | None:
    """What a neighbours round times for ``record``: the configs of ``configs`` (its compile-time
    list) that ``record`` did not time and that are one step from its fastest timed Triton tile
    (:func:`one_step`), with that tile last (the day's reference); None where it timed no Triton
    tile or every such config."""
    timed = dict(zip(record.configs, record.times_us))
    triton = [c for c in timed if c.kind == KIND_TRITON]
    if not triton:
        return None
    best = min(triton, key=timed.__getitem__)
    untimed = [c for c in configs if c not in timed and one_step(c, best)]
    return (*untimed, best) if untimed else None


def listed_neighbours(records, hardware) -> dict:
    """:func:`neighbours` of each of ``records`` over its compile-time list (under the TF32 rule it
    was timed with, as :func:`listed_picks` ranks it), by record (nothing to time: left out)."""
    hardware_of = timed_hardware(hardware)
    listed = {}
    for record in records:
        wanted = neighbours(registry.compile_time_configs(record.problem, hardware_of(record)), record)
        if wanted:
            listed[record] = wanted
    return listed


def listed_picks(network: FrozenTimingModel, records, hardware, kinds: set[str], dense: int = 0) -> dict:
    """What to time for each of ``records`` ranked by ``network`` over its compile-time list of
    ``kinds`` (``compile_time_predictions``), by record (:func:`to_time`; records with nothing
    to time left out)."""
    extractor = registry.feature_extractors()["gemm"]
    listed = {}
    for record, configs, member_log_times in compile_time_predictions(network, records, extractor, hardware, kinds):
        if not configs:
            continue
        order = [configs[i] for i in torch.argsort(member_log_times.mean(0), stable=True).tolist()]
        wanted = to_time(order, record, dense)
        if wanted:
            listed[record] = wanted
    return listed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+")
    parser.add_argument("--output", help="the fold models go to OUTPUT.folds")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument(
        "--heldout", metavar="MODEL",
        help="instead: the held-out families' validation problems as MODEL (a model.pt) ranks them, to "
        "measure its confidence on them (written to pick-labels-validation.json)",
    )  # fmt: skip
    parser.add_argument("--target", type=Path, help="the list to write (default: trained_models/data/h100/problems/pick-labels[-ROUND]-SPLIT.json)")
    parser.add_argument(
        "--round", default="1",
        help="the round of labels the list is for: a round other than 1 names it pick-labels-ROUND-SPLIT",
    )  # fmt: skip
    parser.add_argument("--pick-labels", nargs="+", default=[], help="earlier rounds' labels, a folder each: the picks they timed are not listed")
    parser.add_argument(
        "--dense", type=int, default=0, metavar="N",
        help="list the untimed configs among the first N of each ranking, not only untimed picks",
    )  # fmt: skip
    parser.add_argument(
        "--neighbours", action="store_true",
        help="instead: the untimed configs one step from each training problem's fastest timed tile (no model)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.neighbours and (args.heldout or args.output or args.dense):
        parser.error("--neighbours ranks nothing: leave out --heldout, --output and --dense")
    if not (args.heldout or args.output or args.neighbours):
        parser.error("give --output (the fold models' folder), --heldout MODEL or --neighbours")
    torch.set_num_threads(1)
    dataset = load_dataset(args.data)
    labels = load_pick_labels(args.pick_labels, dataset.hardware.key)
    records = joined(dataset.split("train"), labels)
    hardware = inference_hardware(dataset.hardware)
    kinds = {config.kind for record in records for config in record.configs}
    def picks_of(groups) -> dict:
        return {record: wanted for network, group in groups for record, wanted in listed_picks(network, group, hardware, kinds, args.dense).items()}

    if args.neighbours:
        folds = [r for r in records if family_of(r) not in {*HOLDOUT, *STOPPING, *CALIBRATION}]
        listed, split = listed_neighbours(folds, hardware), "train"
    elif args.heldout:
        heldout = joined([r for r in dataset.split("validation") if family_of(r) in HOLDOUT], labels)
        listed, split = picks_of([(FrozenTimingModel(load_checkpoint(args.heldout).model), heldout)]), "validation"
    else:
        ranked = rank_out_of_fold(
            records, hardware, registry.feature_extractors()["gemm"], args.output, TrainOptions(), folds=3,
            resume=args.resume, holdout_families=HOLDOUT, stopping_families=STOPPING, calibration_families=CALIBRATION,
        )  # fmt: skip
        groups = [
            (FrozenTimingModel(load_checkpoint(path).model), [r for r in records if family_of(r) in families])
            for families, path in zip(ranked.folds, ranked.checkpoints)
        ]
        listed, split = picks_of(groups), "train"
    prefix = "pick-labels" if args.round == "1" else f"pick-labels-{args.round}"
    name = f"{prefix}-{split}"
    target = args.target or LISTS / f"{name}.json"
    named = [(f"{prefix}:{family_of(record)}", record.problem) for record in listed]
    shapes.to_json(named, target, name, configs={record.problem: wanted for record, wanted in listed.items()})
    classes = Counter(workload_class(record.problem) for record in listed)
    pairs = sum(len(c) for c in listed.values())
    print(f"{len(named)} problems, {pairs} Triton configs listed -> {target}; by class: {dict(sorted(classes.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
