"""Replay, not measure: what the defaults would have run in one end-to-end run of
``benchmarks/e2e_validation.py`` had another model's confidence, over the same network, decided
which picks are kept alone.

    python benchmarks/e2e_replay.py E2E.json --old OLD_MODEL --new NEW_MODEL [--out REPLAY.json]

Valid only when both models have the same network (so the same single pick on every row, which
is checked) and the run timed the single pick (``diode_pick``) and the defaults (``diode_fast``,
decided by OLD_MODEL's confidence). Each row's confidence is computed as DIODE computes it at
compile time, on the CPU: the model ranks Inductor's whole EXHAUSTIVE candidate list for the
problem (``tradeoff.runtime_ranking``: ``registry.candidate_configs`` and
``policy.rank_candidates``, as ``diode predict`` does) under the run's TF32 rule. OLD_MODEL's figure is checked against the confidence the run
recorded. Then, at ``--threshold`` (default: the runtime's default, :data:`THRESHOLD`):

- a row NEW_MODEL trusts takes the single pick's measured runtime and compile time;
- a row it does not trust takes the defaults' where OLD_MODEL did not trust it either (the run
  measured that set);
- a row OLD_MODEL trusted and NEW_MODEL would measure cannot be replayed: nothing in the run
  measured its set. It is listed and left out.

The replayed rows are reported by ``e2e_report.report`` against its three references, each row's
references unchanged (the run's own defaults stay in the row as ``diode_fast_old``, so the
fastest mode of the row is the one the run timed), beside the same figures of the run's defaults
on the same rows; the new confidence's trusted picks and AUROC over every row are reported too.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_report  # noqa: E402

from diode_backend import catalog, registry  # noqa: E402
from diode_backend.files import read_json  # noqa: E402
from diode_backend.model.calibration import HIT_TOLERANCE, auroc  # noqa: E402
from diode_backend.offline.tradeoff import runtime_ranking  # noqa: E402
from diode_backend.offline.validate import TRUSTED  # noqa: E402
from diode_backend.problem import GemmProblem, HardwareInfo  # noqa: E402
from diode_backend.scorer import GemmScorer  # noqa: E402

#: The name the run's own defaults keep in a replayed row.
OLD_DEFAULTS = "diode_fast_old"
#: The runtime's default confidence threshold, as the validation report counts trusted picks.
THRESHOLD = TRUSTED


def load_model(model: str, hardware: HardwareInfo) -> GemmScorer:
    """The scorer of ``model`` (a folder or a name), loaded as ``diode predict`` loads it."""
    entry = catalog.pick_entry(hardware, model)
    if entry is None:
        raise ValueError(f"model {model!r} does not apply to {hardware.name}")
    return registry.load_scorer(entry)


def runtime_pick(scorer: GemmScorer, problem: GemmProblem, hardware: HardwareInfo) -> tuple[str, float | None]:
    """(pick, confidence) of ``scorer`` for ``problem`` as DIODE ranks it at compile time
    (:func:`~diode_backend.offline.tradeoff.runtime_ranking`; ``hardware``'s
    ``triton_tf32_rule`` should be the run's)."""
    configs, ranking = runtime_ranking(scorer, problem, hardware)
    return configs[ranking.order[0]].describe(), ranking.confidence


def old_trusted(row: dict) -> bool:
    """Whether the run's defaults kept the row's pick alone (OLD_MODEL's confidence reached the
    threshold): it compiled a single pick and measured nothing."""
    stats = row["modes"][e2e_report.DEFAULTS]["diode"]
    return stats["single_pick"] > 0 and stats["benchmarked_top_k"] == 0


def replay_source(row: dict, new_confidence: float | None, threshold: float) -> str | None:
    """The mode whose measured figures the row's replayed defaults take, None when no mode of
    the run measured what they would have run."""
    if new_confidence is not None and new_confidence >= threshold:
        return e2e_report.SINGLE_PICK
    return None if old_trusted(row) else e2e_report.DEFAULTS


def replayed_result(result: dict, new_confidences: list[float | None], threshold: float) -> tuple[dict, list[dict]]:
    """The run as the new confidence would have run its defaults: each replayable row's
    ``diode_fast`` replaced by its source's figures (the run's own kept as :data:`OLD_DEFAULTS`)
    and the single pick's recorded confidence replaced by the new one; and the rows that cannot
    be replayed."""
    rows, skipped = [], []
    for row, confidence in zip(result["rows"], new_confidences, strict=True):
        source = replay_source(row, confidence, threshold)
        if source is None:
            skipped.append({"problem": row["describe"], "family": row["family"], "workload_class": row["workload_class"],
                            "new_confidence": confidence, "old_confidence": e2e_report.confidence(row["modes"][e2e_report.SINGLE_PICK])})  # fmt: skip
            continue
        replayed = copy.deepcopy(row)
        modes = replayed["modes"]
        modes[OLD_DEFAULTS] = modes[e2e_report.DEFAULTS]
        modes[e2e_report.DEFAULTS] = {**copy.deepcopy(row["modes"][source]), "replayed_from": source}
        modes[e2e_report.SINGLE_PICK]["diode"]["decision"]["confidence"] = confidence
        rows.append(replayed)
    names = {**result["modes"], OLD_DEFAULTS: result["modes"][e2e_report.DEFAULTS]}
    return {**result, "modes": names, "rows": rows}, skipped


def run_tf32_rule(result: dict) -> str:
    """The TF32 rule the run's Inductor had (every part of a merged run must agree)."""
    rules = {part["environment"]["triton_tf32_rule"] for part in result.get("parts", [result])}
    if len(rules) != 1:
        raise ValueError(f"the run's parts disagree on the TF32 rule: {sorted(rules)}")
    return rules.pop()


def offline_comparison(rows: list[dict], old_report: Path, new_report: Path, threshold: float) -> dict:
    """Each row's confidence as ``diode validate`` computes it (over the dataset's timed
    candidates) against the runtime one (over the whole list): added to ``rows`` as
    ``old_offline`` and ``new_offline``; returns the mean and median of runtime minus offline,
    the picks each trusts, and the AUROC of each against the report's hits (the single pick
    within ``1 + HIT_TOLERANCE`` of the dataset's best), over the rows the report scored."""
    out = {}
    for name, path in (("old", old_report), ("new", new_report)):
        scored = {p["problem"]: p["model"] for p in read_json(path)["per_problem"]}
        both = [(row, scored[row["problem"]]) for row in rows if row["problem"] in scored]
        for row, model in both:
            row[f"{name}_offline"] = model["confidence"]
        differences = [row[name] - model["confidence"] for row, model in both]
        hits = [model["top1_regret"] <= 1 + HIT_TOLERANCE for _, model in both]
        out[name] = {
            "report": str(path), "rows": len(both),
            "runtime_minus_offline_mean": statistics.fmean(differences) if differences else None,
            "runtime_minus_offline_median": statistics.median(differences) if differences else None,
            "trusted_offline": sum(model["confidence"] >= threshold for _, model in both),
            "trusted_runtime": sum(row[name] >= threshold for row, _ in both),
            "auroc_offline": auroc([model["confidence"] for _, model in both], hits),
            "auroc_runtime": auroc([row[name] for row, _ in both], hits),
        }  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", type=Path, help="a result file of benchmarks/e2e_validation.py (or e2e_merge.py)")
    parser.add_argument("--old", required=True, help="the model the run used (folder or name)")
    parser.add_argument("--new", required=True, help="the model whose confidence is replayed (same network)")
    parser.add_argument("--offline", nargs=2, type=Path, metavar=("OLD_REPORT", "NEW_REPORT"),
                        help="the models' `diode validate --report` files on the run's problems: each row's "
                             "offline confidence (over the dataset's timed candidates) beside the runtime one")  # fmt: skip
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help=f"the new confidence's threshold (default {THRESHOLD})")
    parser.add_argument("--out", type=Path, help="write the replay here as JSON (default: print it)")
    args = parser.parse_args(argv)
    result = read_json(args.result)
    # the device the run recorded, under its Inductor's TF32 rule (the CPU's torch may have another)
    hardware = dataclasses.replace(HardwareInfo.from_dict(result["hardware"]), triton_tf32_rule=run_tf32_rule(result))
    old_model, new_model = load_model(args.old, hardware), load_model(args.new, hardware)
    threshold = args.threshold
    rows, check = [], {"rows": 0, "max_abs_difference": 0.0, "pick_differs": []}
    for row in result["rows"]:
        problem = GemmProblem.from_dict(row["problem"])
        old_pick, old_confidence = runtime_pick(old_model, problem, hardware)
        new_pick, new_confidence = runtime_pick(new_model, problem, hardware)
        decision = row["modes"][e2e_report.SINGLE_PICK]["diode"]["decision"]
        if not old_pick == new_pick == decision["pick"]:
            check["pick_differs"].append({"problem": row["describe"], "run": decision["pick"], "old": old_pick, "new": new_pick})
        check["rows"] += 1
        check["max_abs_difference"] = max(check["max_abs_difference"], abs(old_confidence - decision["confidence"]))
        rows.append({"problem": row["describe"], "recorded": decision["confidence"], "old": old_confidence, "new": new_confidence})
    if check["pick_differs"]:
        parser.error(f"{len(check['pick_differs'])} rows' picks differ: not the same network, nothing to replay")
    check["threshold_side_differs"] = sum((r["old"] >= threshold) != (r["recorded"] >= threshold) for r in rows)
    replay, skipped = replayed_result(result, [r["new"] for r in rows], threshold)
    every_row = copy.deepcopy(result)
    for row, r in zip(every_row["rows"], rows, strict=True):
        row["modes"][e2e_report.SINGLE_PICK]["diode"]["decision"]["confidence"] = r["new"]
    confidence_new, confidence_old = e2e_report.report(every_row), e2e_report.report(result)
    new_trusted = [r["new"] >= threshold for r in rows]
    old_trusted_rows = [old_trusted(row) for row in result["rows"]]
    out = {
        "benchmark": "e2e_replay",
        "what": "replayed from a run of the old confidence, not measured",
        "method": __doc__.split("\n\n", 1)[1].strip(),
        "run": {"path": str(args.result), "rows": len(result["rows"]), "tf32_rule": hardware.triton_tf32_rule},
        "models": {"old": {"path": str(args.old), "identity": old_model.identity},
                   "new": {"path": str(args.new), "identity": new_model.identity}},  # fmt: skip
        "threshold": threshold,
        "check_old_confidence": check,
        "trust": {
            "both": sum(a and b for a, b in zip(old_trusted_rows, new_trusted)),
            "new_only": sum(b and not a for a, b in zip(old_trusted_rows, new_trusted)),
            "old_only": sum(a and not b for a, b in zip(old_trusted_rows, new_trusted)),
            "neither": sum(not a and not b for a, b in zip(old_trusted_rows, new_trusted)),
            "new_only_problems": [r["problem"] for r, a, b in zip(rows, old_trusted_rows, new_trusted) if b and not a],
        },
        "not_replayed": skipped,
        "replayed": e2e_report.report(replay),
        "new_confidence_every_row": {k: confidence_new[k] for k in ("rows", "trusted", "confidence_auroc")},
        "old_confidence_every_row": {k: confidence_old[k] for k in ("rows", "trusted", "confidence_auroc")},
        "confidences": rows,
    }
    if args.offline:
        out["offline"] = offline_comparison(rows, *args.offline, threshold)
    e2e_report.emit(out, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
