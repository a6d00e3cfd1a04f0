"""``diode validate``: judge a model on validation problems against the baselines."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from .validate_text import FIGURES, lookup, print_summary

#: Report figures (:data:`FIGURES`) copied into a model's manifest by --update-manifest.
_MANIFEST_METRICS = (
    "top1_regret_geomean", "top1_regret_p90", "top1_regret_worst", "top5_regret_geomean", "top10_regret_geomean",
    "kendall_tau_median", "rmse_log", "mape", "calibration_ece", "confidence_auroc", "compile_time_calibration_ece",
    "compile_time_confidence_auroc", "compile_time_judged", "compile_time_top1_regret_geomean",
    "compile_time_top1_regret_p90", "compile_time_top1_regret_worst", "analytical_top1_regret_geomean",
    "inductor_default_top1_regret_geomean", "aten_top1_regret_geomean",
)  # fmt: skip


def register(subparsers: argparse._SubParsersAction) -> None:
    from .labels import add_pick_labels

    parser = subparsers.add_parser(
        "validate",
        help="judge a model on held-out problems against the baselines",
        description="Rank every validation problem's measured candidates with MODEL and report "
        "log-time RMSE, MAPE, per-problem Kendall tau, top-1/5/10 regret (the fastest measured "
        "time among the top k over the fastest of all), the same figures for the baselines (the "
        "analytical scorer, the nearest training problem, Inductor's max-autotune DEFAULT list "
        "and ATen alone), a reliability table of the confidence with its expected calibration "
        "error and AUROC, and whether the targets are met; then the model's figures per workload "
        "class and per model family. Problems of the 'train' split are the "
        "nearest-neighbour baseline's lookup table, never scored.",
        epilog="example: diode validate models/my-h100 timings/ --report report.json --plots plots/",
    )
    parser.add_argument("model", help="a model name (`diode models`), a model folder or a .pt file")
    parser.add_argument("data", nargs="+", type=Path, help="dataset shard files or directories")
    parser.add_argument(
        "--split",
        default="validation",
        choices=("validation", "train", "all"),
        help="which problems to score (default validation; 'all' for a dataset recorded from "
        "your own program's max-autotune run)",
    )
    parser.add_argument(
        "--families",
        metavar="A,B,...",
        default="",
        help="score only these model families' problems (of --split; with --split all, a "
        "family held out from training is validated whole), and leave them out of the "
        "nearest-neighbour lookup; 'held-out' names the families MODEL's training left out",
    )
    parser.add_argument(
        "--train-data",
        nargs="+",
        type=Path,
        help="datasets whose 'train' problems the nearest-neighbour baseline looks up (default: DATA)",
    )
    add_pick_labels(
        parser,
        "datasets that timed compile-time picks DATA did not (`diode collect sweep --space listed`): "
        "such a pick is judged from them in compile_time_calibration",
    )
    parser.add_argument("--no-default-baseline", action="store_true", help="skip Inductor's DEFAULT list and the confidence over the compile-time list (both import Inductor)")
    parser.add_argument("--report", type=Path, help="write the full JSON report here")
    parser.add_argument("--plots", type=Path, metavar="DIR", help="write PNG plots here (needs matplotlib: pip install 'diode-backend[plots]')")
    parser.add_argument(
        "--update-manifest",
        action="store_true",
        help="copy the headline figures into MODEL's manifest.json (MODEL must be a model folder)",
    )
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1 when the model misses a target (a bound on a figure, or beating every baseline)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ... import catalog, registry
    from ..dataset import load_dataset
    from ..families import check_families, of_families, parse_families, without_families
    from .labels import read_pick_labels
    from ..train import inference_hardware
    from ..validate import validate
    from . import CommandError, UsageError

    dataset = load_dataset(args.data)
    problems = dataset.problems if args.split == "all" else dataset.split(args.split)
    if not problems:
        raise CommandError(f"{', '.join(map(str, args.data))}: no problems in split {args.split!r}")
    hardware = inference_hardware(dataset.hardware)
    entry = catalog.pick_entry(hardware, args.model)
    scorer = registry.load_scorer(entry)
    manifest = getattr(entry, "manifest", None)
    if manifest is not None and not manifest.applies_to(hardware):
        meant = " or ".join(manifest.hardware) or "no hardware by itself"
        print(
            f"diode validate: warning: {entry.name} is meant for {meant}, but the data was measured on "
            f"{hardware.name}: its figures say how it ranks that device's kernels, which it never saw",
            file=sys.stderr,
        )
    training = getattr(getattr(scorer, "checkpoint", None), "training", {})
    train_problems = (load_dataset(args.train_data) if args.train_data else dataset).split("train")
    families: list[str] = []
    if args.families:
        names = training.get("holdout_families", []) if args.families == "held-out" else parse_families(args.families)
        if not names:
            raise UsageError(f"--families held-out: {args.model} was trained without held-out families")
        try:
            families = check_families(dataset.problems, names)
        except ValueError as err:
            raise UsageError(f"--families: {err}") from None
        problems = of_families(problems, families)
        if not problems:
            raise UsageError(f"--families: no problem of {', '.join(families)} in split {args.split!r}")
        train_problems = without_families(train_problems, families)
    pick_labels = None
    if args.pick_labels:
        if args.no_default_baseline:
            raise UsageError("--pick-labels: judges the picks over the compile-time list, which --no-default-baseline skips")
        pick_labels = read_pick_labels(args.pick_labels, dataset.hardware.key)
    default_candidates = compile_time_candidates = None
    if not args.no_default_baseline:

        def default_candidates(problem):
            return registry.candidate_configs(problem, hardware, "DEFAULT") or []

        compile_time_candidates = registry.compile_time_configs

    report = validate(
        scorer, problems, hardware, train_problems=train_problems, default_candidates=default_candidates,
        compile_time_candidates=compile_time_candidates, pick_labels=pick_labels,
        progress=_progress if sys.stderr.isatty() else None,
    )  # fmt: skip
    report["model"] = {
        "name": entry.name,
        "identity": scorer.identity,
        "holdout_families": training.get("holdout_families", []),
    }
    report["families_selected"] = families
    report["data"] = [str(path) for path in args.data]
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(_strict(report), indent=2, allow_nan=False) + "\n")
    if args.plots:
        from ..plots import write_plots

        written = write_plots(report, args.plots)
        print("plots: " + (", ".join(map(str, written)) if written else "skipped (matplotlib is not installed: pip install 'diode-backend[plots]')"), file=sys.stderr)
    if args.update_manifest:
        _update_manifest(Path(args.model), report)
    if args.json:
        print(json.dumps(_strict(report), indent=2, allow_nan=False))
    else:
        print_summary(report)
    missed = [name for name, target in report["targets"].items() if not target["met"]]
    if args.strict and missed:
        print(f"diode validate: {entry.name} misses the targets {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


def _strict(value: Any) -> Any:
    """The report as strict JSON holds it: ``null`` for a figure that is not a number."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _strict(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_strict(inner) for inner in value]
    return value


def _update_manifest(folder: Path, report: dict[str, Any]) -> None:
    from ...model.manifest import replace_metrics
    from . import UsageError

    if not folder.is_dir():
        raise UsageError(f"--update-manifest: {folder} is not a model folder")
    metrics = {name: lookup(report, list(FIGURES[name])) for name in _MANIFEST_METRICS}
    metrics["validation_problems"] = report["problems"]
    # figures validate does not compute (end to end ones, say) stay as they were
    replace_metrics(folder, metrics, metrics.__contains__)


def _progress(done: int, total: int) -> None:
    sys.stderr.write(f"\rvalidating {done}/{total}" + ("\n" if done == total else ""))
    sys.stderr.flush()
