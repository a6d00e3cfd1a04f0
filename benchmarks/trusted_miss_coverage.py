"""How many of the picks a confidence keeps alone run over issue 14's bound as the share kept
alone grows, and of what kind the misses are: each fold model of a recipe ranks the training
families it was trained without over the compile-time list, as ``diode train --hit-model-folds``
ranks them (``offline.compile_time``), every pick judged against its record joined with every
``--pick-labels`` folder (the fastest candidate known), and a hit model fitted on the other
folds' picks scores each fold's (cross-fitted, by ``fit_hit_model`` on the signals DIODE computes
at compile time). CPU only.

    python benchmarks/trusted_miss_coverage.py trained_models/data/h100/dataset \\
        --fold-models .c2/model.pt.folds --pick-labels D/pick-labels D/pick-labels-2 ... \\
        --out R/trusted_miss_coverage.json

Two hit models on the same signals: the shipped kind (a hit: within ``1 + HIT_TOLERANCE`` of
the fastest) and one fitted to issue 14's bound (within ``tradeoff.WORST_BOUND``). Per share
kept alone (the picks of highest probability first): the picks kept, those over the bound and
over :data:`FAR`, the worst, the geomean, the least probability kept, and what a run of
``--run-rows`` GEMMs keeping that share alone can expect of its kept picks: the mean number over
the bound (share x rows x the rate here) and the chance, were misses independent, that none is
(Poisson). The picks over the bound are counted by kind (ATen or Triton), by workload class and
by what would have caught them: a check of the pick against the ATen calls (which compile nothing), and one that
adds the predicted-best Triton candidate. The ratios are over the fastest candidate the records
and labels timed, not a run's best mode, and the families are training families: the figures
bound what any threshold on such a confidence can do, they choose nothing. The fold models are
those ``benchmarks/h100_pick_labels_plan.py`` or ``benchmarks/pick_labels_training.py --output``
trains (``fold-K.pt``, each recording the families it was trained without).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_report  # noqa: E402
from runtime_list_confidence import HOLDOUT  # noqa: E402

from diode_backend import registry  # noqa: E402
from diode_backend.model.calibration import HIT_TOLERANCE, auroc, pick_statistics  # noqa: E402
from diode_backend.model.checkpoint import load_checkpoint  # noqa: E402
from diode_backend.model.hit_model import fit_hit_model, hit_probability, pick_signals  # noqa: E402
from diode_backend.model.network import FrozenTimingModel  # noqa: E402
from diode_backend.model.novelty import nearest_distance  # noqa: E402
from diode_backend.offline.compile_time import compile_time_predictions  # noqa: E402
from diode_backend.offline.dataset import load_dataset  # noqa: E402
from diode_backend.offline.families import family_of  # noqa: E402
from diode_backend.offline.pick_labels import joined, load_pick_labels  # noqa: E402
from diode_backend.offline.tradeoff import WORST_BOUND  # noqa: E402
from diode_backend.offline.train import inference_hardware  # noqa: E402
from diode_backend.problem import KIND_ATEN  # noqa: E402
from diode_backend.workload import WORKLOAD_CLASSES, workload_class  # noqa: E402

#: A pick this far over the fastest is counted apart: far beyond any bound.
FAR = 1.3
SHARES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)
#: What each hit model calls a hit: a pick within this factor of the fastest.
HIT_WITHIN = {"within_5_percent": 1 + HIT_TOLERANCE, "within_bound": WORST_BOUND}


@dataclass(frozen=True)
class RankedPick:
    """One training problem's compile-time pick by the fold model that did not train on it:
    its signals, and its time, the ATen calls' fastest and the predicted-best Triton
    candidate's over the fastest known (None where not timed)."""

    fold: int
    family: str
    workload: str
    signals: list[float]
    aten: bool
    ratio: float
    aten_ratio: float | None
    triton_ratio: float | None


def ranked_picks(records, fold_models: Sequence[Path], hardware) -> list[RankedPick]:
    """Each fold model's picks of the training families it was trained without (its
    ``holdout_families`` less the held-out ones), judged against ``records``; a pick they did
    not time is left out."""
    extractor = registry.feature_extractors()["gemm"]
    picks = []
    for fold, path in enumerate(fold_models):
        checkpoint = load_checkpoint(path)
        families = set(checkpoint.training["holdout_families"]) - set(HOLDOUT)
        mine = [record for record in records if family_of(record) in families]
        network = FrozenTimingModel(checkpoint.model)
        for record, configs, member_log_times in compile_time_predictions(network, mine, extractor, hardware):
            times = dict(zip(record.configs, record.times_us))
            pick = configs[pick_statistics(member_log_times)[0]] if configs else None
            if pick not in times:
                continue
            fastest = min(times.values())
            aten = [times[c] for c in configs if c.kind == KIND_ATEN and c in times]
            order = member_log_times.mean(0).argsort().tolist()
            triton = next((configs[i] for i in order if configs[i].kind != KIND_ATEN), None)
            picks.append(RankedPick(
                fold, family_of(record), workload_class(record.problem),
                pick_signals(record.problem, configs, member_log_times, nearest_distance(checkpoint.novelty["support"], record.problem)),
                pick.kind == KIND_ATEN, times[pick] / fastest, min(aten) / fastest if aten else None,
                times[triton] / fastest if triton in times else None,
            ))  # fmt: skip
    return picks


def cross_fitted(picks: Sequence[RankedPick], within: float) -> list[float]:
    """Each pick's probability of running within ``within`` of the fastest, by a hit model
    fitted on the other folds' picks."""
    probabilities = [0.0] * len(picks)
    for fold in sorted({pick.fold for pick in picks}):
        others = [pick for pick in picks if pick.fold != fold]
        block = fit_hit_model([p.signals for p in others], [p.ratio <= within for p in others], [p.family for p in others])
        for i, pick in enumerate(picks):
            if pick.fold == fold:
                probabilities[i] = hit_probability(block, pick.signals)
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


def misses(picks: Sequence[RankedPick]) -> dict:
    """The picks over the bound by kind, and how many stay over it when checked against the
    ATen calls, and against those and the predicted-best Triton candidate; and by workload
    class, the picks and those over the bound of each kind."""

    def checked(pick: RankedPick, triton: bool) -> float:
        others = [pick.aten_ratio, pick.triton_ratio if triton else None]
        return min([pick.ratio, *(r for r in others if r is not None)])

    table = {}
    for kind, aten in (("aten", True), ("triton", False)):
        mine = [pick for pick in picks if pick.aten == aten]
        table[kind] = {
            "picks": len(mine),
            "over_bound": sum(p.ratio > WORST_BOUND for p in mine),
            "over_bound_after_aten_check": sum(checked(p, False) > WORST_BOUND for p in mine),
            "over_bound_after_aten_and_triton_check": sum(checked(p, True) > WORST_BOUND for p in mine),
        }
    table["by_class"] = {
        name: {
            "picks": len(mine),
            "over_bound": {kind: sum(p.ratio > WORST_BOUND and p.aten == aten for p in mine) for kind, aten in (("aten", True), ("triton", False))},
        }
        for name in WORKLOAD_CLASSES
        if (mine := [p for p in picks if p.workload == name])
    }
    return table


def study(picks: Sequence[RankedPick], run_rows: int, shares: Sequence[float] = SHARES) -> dict:
    ratios = [pick.ratio for pick in picks]
    models = {}
    for name, within in HIT_WITHIN.items():
        probabilities = cross_fitted(picks, within)
        models[name] = {
            "hit_within": within,
            "auroc": {
                "within_5_percent": auroc(probabilities, [r <= HIT_WITHIN["within_5_percent"] for r in ratios]),
                "within_bound": auroc(probabilities, [r <= WORST_BOUND for r in ratios]),
            },
            "coverage": coverage(probabilities, ratios, shares, run_rows),
        }
    return {
        "picks": len(picks),
        "over_bound": sum(r > WORST_BOUND for r in ratios),
        "over_far": sum(r > FAR for r in ratios),
        "bound": WORST_BOUND,
        "far": FAR,
        "run_rows": run_rows,
        "misses": misses(picks),
        "models": models,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+")
    parser.add_argument("--fold-models", type=Path, required=True, help="a folder of fold-K.pt (the recipe's fold models)")
    parser.add_argument("--pick-labels", nargs="*", default=[], help="label folders joined with the records to judge every pick")
    parser.add_argument("--run-rows", type=int, default=173, help="the GEMMs of the run the expectations are for (default: the held-out run's 173)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    fold_models = sorted(args.fold_models.glob("fold-*.pt"))
    if not fold_models:
        parser.error(f"--fold-models {args.fold_models}: no fold-K.pt there (benchmarks/pick_labels_training.py --output trains them)")
    torch.set_num_threads(1)
    dataset = load_dataset(args.data)
    records = dataset.split("train")
    if args.pick_labels:
        records = joined(records, load_pick_labels(args.pick_labels, dataset.hardware.key))
    picks = ranked_picks(records, fold_models, inference_hardware(dataset.hardware))
    result = {
        "benchmark": "trusted_miss_coverage",
        "what": "out of fold on training families, cross-fitted hit models; chooses nothing",
        "method": " ".join(__doc__.split("\n\n")[2].split()),
        "fold_models": [str(path) for path in fold_models],
        "pick_labels": args.pick_labels,
        **study(picks, args.run_rows),
    }
    e2e_report.emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
