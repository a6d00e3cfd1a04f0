"""Which confidence tells hits from misses on families a model never saw (CPU only): the
shipped recipe's fold models of ``h100_capacity_crossfold.md``, each on its own left-out fold,
for the runtime's raw confidence and the candidate scores of ``h100_confidence_crossfold.md``
(which states them and the decision rule).

Each problem of fold F is ranked by the model trained without F (``/tmp/crossfold/fF-ship-sS``)
as ``diode validate --split all --families <F>`` ranks it; the pick, its regret and the
runtime's confidence inputs come from the package's own loader, ranking and
``pick_statistics`` / ``separation`` / ``nearest_distance`` / ``familiarity`` /
``pick_signals``. A fitted candidate score is fitted (``hit_model.fit_hit_model``) on the other
two folds' problems of the same seed and scores fold F. The eight held-out families are dropped
by family name as the dataset is read and are never ranked, scored or looked at. Figures added
after the verdict (the hit model's signals alone, ECE, trusted picks, a fit on all folds) are
kept apart under ``post_hoc`` and decide nothing.

Two steps, so that the rule can be committed before any candidate's figure exists::

    python benchmarks/confidence_crossfold.py trained_models/data/h100/dataset \\
        --rows /tmp/confidence_crossfold_rows.json --collect-only
    python benchmarks/confidence_crossfold.py trained_models/data/h100/dataset \\
        --rows /tmp/confidence_crossfold_rows.json --out benchmarks/results/h100_confidence_crossfold.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from diode_backend import catalog
from diode_backend.model.calibration import HIT_TOLERANCE, auroc, calibrate, pick_statistics, separation
from diode_backend.model.hit_model import SIGNALS_OF_VERSION, fit_hit_model, hit_probability, pick_signals
from diode_backend.model.novelty import familiarity, nearest_distance
from diode_backend.offline.dataset import load_dataset, timed_hardware
from diode_backend.offline.families import family_of, of_families
from diode_backend.offline.train import inference_hardware
from diode_backend.offline.validate import fallback_candidate, reliability, score_problem
from diode_backend.workload import WORKLOAD_CLASSES, workload_class
from diode_backend.problem import KIND_ATEN

_HOLDOUT_FILE = Path(__file__).resolve().parents[1] / "trained_models" / "data" / "h100" / "problems" / "zoo-holdout.json"
#: The project's reported families: never ranked or scored here.
HELD_OUT = tuple(json.loads(_HOLDOUT_FILE.read_text())["families"])
SEEDS = (0, 1)
#: The hit model's signals this study recorded: version 2's (version 3 then took S3's into the hit model).
SIGNALS = SIGNALS_OF_VERSION[2]
#: The rule of h100_confidence_crossfold.md: pooled gain over the raw confidence, both seeds.
MARGIN = 0.02
_TOLERANCE = math.log1p(HIT_TOLERANCE)


# -- step 1: one row per (model, problem of its left-out fold) ------------------------------------


def collect(data: Sequence[str], folds: list[list[str]], models: Path) -> tuple[list[dict], dict]:
    """Rank every problem of each fold with that fold's two shipped-recipe models and record the
    pick's hit, the runtime's confidence inputs and the candidate features."""
    assert not set(HELD_OUT) & {name for fold in folds for name in fold}, "a held-out family is in a fold"
    dataset = load_dataset(data)
    # only the folds' rows are kept; the held-out families' rows are dropped by family name, unread
    kept = {f: [p for p in of_families(dataset.problems, fold) if len(p.times_us) >= 2] for f, fold in enumerate(folds)}
    del dataset.problems[:]
    hardware = inference_hardware(dataset.hardware)
    hardware_of = timed_hardware(hardware)
    rows, checks = [], {}
    for f, problems in kept.items():
        for seed in SEEDS:
            name = f"f{f}-ship-s{seed}"
            started = time.perf_counter()
            # entry.load, not registry.load_scorer: that memoizes by the manifest's name, which the six share
            scorer = catalog.pick_entry(hardware, str(models / name), load=False).load()
            checkpoint = scorer.checkpoint
            assert set(folds[f]) <= set(checkpoint.training["holdout_families"]), f"{name} trained on its own fold"
            support, scale = checkpoint.novelty["support"], checkpoint.novelty["scale"]
            mismatched = 0
            for item in problems:
                hw = hardware_of(item)
                prediction = scorer.predict(item.problem, item.configs, hw)  # what validate and the runtime rank with
                regret = score_problem(prediction, item.times_us, fallback_candidate(item)).regrets[1]
                features = scorer.extractor.extract(item.problem, item.configs, hw)
                with torch.inference_mode():
                    members = scorer.network(features)  # [E, n] log microseconds, as LearnedScorer._predict
                pick, agreement, gap = pick_statistics(members)
                mismatched += pick != prediction.order()[0]
                distance = nearest_distance(support, item.problem)
                raw = agreement * separation(gap)
                mean = members.double().mean(0)
                config = item.configs[pick]
                rows.append({
                    "fold": f, "seed": seed, "family": family_of(item), "problem": item.problem.describe(),
                    "class": workload_class(item.problem), "op": item.problem.op,
                    "precision": "tf32" if item.problem.dtype == "float32" and item.problem.allow_tf32 else item.problem.dtype,
                    "regret": regret, "hit": regret <= 1 + HIT_TOLERANCE,
                    "confidence": prediction.confidence,  # calibrated, as validate reports it
                    "agreement": agreement, "gap": gap, "separation": separation(gap), "raw": raw,
                    "distance": distance, "familiarity": familiarity(distance, scale), "raw_familiarity": raw * familiarity(distance, scale),
                    # candidates the ensemble mean puts within 1.05x of its own best, the pick included
                    "crowding": int((mean <= mean.min() + _TOLERANCE).sum()),
                    # members' spread of the pick's predicted log time, in hit tolerances
                    "pick_spread": float(members[:, pick].double().std(correction=0)) / _TOLERANCE,
                    "candidates": len(item.configs), "pick_aten": config.kind == KIND_ATEN,
                    "log2_flops": math.log2(item.problem.flops),
                    "signals": pick_signals(item.problem, item.configs, members, distance)[: len(SIGNALS)],
                })  # fmt: skip
                assert abs(rows[-1]["confidence"] - calibrate(checkpoint.calibration, rows[-1]["raw_familiarity"])) < 1e-9
            checks[name] = {
                "model_sha256": checkpoint.sha256, "problems": len(problems), "pick_differs_from_predict": mismatched,
                "seconds": round(time.perf_counter() - started, 1), "novelty_scale": scale,
            }  # fmt: skip
            print(f"{name}: {len(problems)} problems, {checks[name]['seconds']} s", file=sys.stderr)
    return rows, checks


def check_against_reports(rows: list[dict], models: Path) -> dict[str, int]:
    """Problems whose regret or confidence differs from the model's `diode validate` report."""
    differing = {}
    for f in range(3):
        for seed in SEEDS:
            name = f"f{f}-ship-s{seed}"
            report = json.loads((models / f"{name}.json").read_text())["per_problem"]
            mine = [r for r in rows if r["fold"] == f and r["seed"] == seed]
            assert len(mine) == len(report), name
            differing[name] = sum(
                a["problem"] != b["problem"]
                or abs(a["regret"] - b["model"]["top1_regret"]) > 1e-9
                or abs(a["confidence"] - b["model"]["confidence"]) > 1e-9
                for a, b in zip(mine, report)
            )
    return differing


# -- step 2: the scores and their figures ---------------------------------------------------------


def compact_features(row: dict) -> list[float]:
    """S2's eight features (h100_confidence_crossfold.md)."""
    return [
        row["agreement"], row["separation"], math.log1p(row["distance"]), math.log(row["crowding"]),
        math.log1p(row["pick_spread"]), float(row["pick_aten"]), math.log2(row["candidates"]), row["log2_flops"],
    ]  # fmt: skip


COMPACT = ("agreement", "separation", "log1p_distance", "log_crowding", "log1p_pick_spread", "pick_aten", "log2_candidates", "log2_flops")
_CLASS_FLAGS = ("attention_bmm", "decode", "narrow", "prefill_linear")  # baddbmm, fp32, tf32 are flags of SIGNALS
WIDE = (*SIGNALS, "log_crowding", "log1p_pick_spread", "log2_candidates", *(f"class_{c}" for c in _CLASS_FLAGS))


def wide_features(row: dict) -> list[float]:
    """S3's features: the hit model's 24 signals, crowding, the pick's spread, the candidate count
    and four class flags."""
    extra = [math.log(row["crowding"]), math.log1p(row["pick_spread"]), math.log2(row["candidates"])]
    return row["signals"] + extra + [float(row["class"] == c) for c in _CLASS_FLAGS]


#: The current confidence (comparator first) and the three candidates, as named in the md before any figure.
FIXED: dict[str, Callable[[dict], float]] = {
    "C_raw_familiarity": lambda r: r["raw_familiarity"],
    "C_raw": lambda r: r["raw"],
    "C_calibrated": lambda r: r["confidence"],
    "S1_crowded": lambda r: r["raw_familiarity"] / r["crowding"],
}
FITTED: dict[str, tuple[tuple[str, ...], Callable[[dict], list[float]]]] = {
    "S2_compact": (COMPACT, compact_features),
    "S3_wide": (WIDE, wide_features),
}
CANDIDATES = ("S1_crowded", "S2_compact", "S3_wide")
#: Added after the verdict, deciding nothing: the hit model's 24 signals alone (what S3 adds to
#: ``--confidence logistic``'s signals), fitted out of fold as S2 and S3 are.
POST_HOC: dict[str, tuple[tuple[str, ...], Callable[[dict], list[float]]]] = {
    "X_hit_model_signals": (SIGNALS, lambda r: list(r["signals"])),
}
#: What fast_autotune trusts alone by default (validate.TRUSTED), and a regret that hurts.
TRUSTED, OVER = 0.95, 1.2


def out_of_fold(rows: list[dict], seed: int, fitted: dict = FITTED) -> tuple[dict[str, list[float]], list[dict], dict]:
    """Every score of every row of ``seed`` (rows in order), the ``fitted`` ones fitted on the
    other two folds; also the rows and the fits (weights on the features as computed, and
    standardised), with one more fit on all three folds (``all_folds``, scoring nothing here)."""
    mine = [r for r in rows if r["seed"] == seed]
    scores = {name: [score(r) for r in mine] for name, score in FIXED.items()}
    fits: dict = {}
    for name, (names, features) in fitted.items():
        scores[name] = [math.nan] * len(mine)
        fits[name] = {}
        for f in (0, 1, 2, None):
            train = [r for r in mine if r["fold"] != f]
            x = [features(r) for r in train]
            block = fit_hit_model(x, [r["hit"] for r in train], [r["family"] for r in train])
            std = torch.tensor(x, dtype=torch.float64).std(0, correction=0).tolist()
            fits[name][f"fold{f}" if f is not None else "all_folds"] = {
                "fitted_on_folds": [g for g in range(3) if g != f], "l2": block["l2"], "bias": block["bias"],
                "weights": dict(zip(names, block["weights"])),
                "standardised_weights": {n: w * s for n, w, s in zip(names, block["weights"], std)},
            }  # fmt: skip
            for i, r in enumerate(mine):
                if r["fold"] == f:
                    scores[name][i] = hit_probability(block, features(r))
    return scores, mine, fits


def figures(scores: dict[str, list[float]], mine: list[dict], keep: Callable[[dict], bool]) -> dict:
    """AUROC of every score over the rows ``keep`` selects, with problem and miss counts."""
    chosen = [i for i, r in enumerate(mine) if keep(r)]
    hits = [mine[i]["hit"] for i in chosen]
    block = {"problems": len(chosen), "misses": hits.count(False)}
    for name, values in scores.items():
        value = auroc([values[i] for i in chosen], hits)
        block[name] = None if math.isnan(value) else round(value, 4)
    return block


def trust(scores: dict[str, list[float]], mine: list[dict], names: Sequence[str]) -> dict:
    """For the probability-like scores ``names``: pooled ECE (validate's reliability table) and
    the picks trusted alone at :data:`TRUSTED`, those over :data:`OVER` and the worst."""
    hits = [r["hit"] for r in mine]
    block = {}
    for name in names:
        trusted = [r["regret"] for r, value in zip(mine, scores[name]) if value >= TRUSTED]
        block[name] = {
            "ece": round(reliability(scores[name], hits)["ece"], 4), "mean": round(statistics.fmean(scores[name]), 4),
            "hit_rate": round(statistics.fmean(map(float, hits)), 4), "trusted": len(trusted),
            "trusted_over_1.2x": sum(t > OVER for t in trusted), "trusted_worst": round(max(trusted, default=1.0), 4),
        }  # fmt: skip
    return block


def decide(per_seed: dict) -> dict:
    """The rule: a candidate passes if, for both seeds, its pooled AUROC is at least the raw
    confidence's (with familiarity) + MARGIN and its pooled attention-bmm AUROC is not below it."""
    verdict = {}
    for name in CANDIDATES:
        conditions = {}
        for seed, block in per_seed.items():
            pooled, attention = block["pooled"], block["pooled_by_class"]["attention_bmm"]
            gain = pooled[name] - pooled["C_raw_familiarity"]
            conditions[seed] = {
                "pooled_gain": round(gain, 4), "gain_met": gain >= MARGIN - 1e-12,
                "attention_bmm_change": round(attention[name] - attention["C_raw_familiarity"], 4),
                "attention_met": attention[name] >= attention["C_raw_familiarity"],
            }  # fmt: skip
        passes = all(c["gain_met"] and c["attention_met"] for c in conditions.values())
        verdict[name] = {"seeds": conditions, "passes": passes}
    return verdict


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+")
    parser.add_argument("--models", type=Path, default=Path("/tmp/crossfold"), help="the fold models (fF-ship-sS)")
    parser.add_argument("--folds", type=Path, default=Path("/tmp/folds.json"), help="the three folds' family lists")
    parser.add_argument("--rows", type=Path, required=True, help="per-problem rows: written by step 1, read by step 2")
    parser.add_argument("--collect-only", action="store_true", help="step 1 only: no AUROC is computed")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    folds = json.loads(args.folds.read_text())
    if args.collect_only:
        started = time.perf_counter()
        rows, checks = collect(args.data, folds, args.models)
        seconds = time.perf_counter() - started
        differing = check_against_reports(rows, args.models)
        args.rows.write_text(json.dumps({"rows": rows, "checks": checks, "differing_from_reports": differing, "seconds": seconds}))
        print(json.dumps({"checks": checks, "differing_from_reports": differing, "seconds": round(seconds, 1)}, indent=1))
        return 0
    stored = json.loads(args.rows.read_text())
    rows = stored["rows"]
    started = time.perf_counter()
    per_seed, fits = {}, {}
    for seed in SEEDS:
        scores, mine, fits[seed] = out_of_fold(rows, seed)
        per_seed[seed] = {
            "pooled": figures(scores, mine, lambda r: True),
            "by_fold": {f: figures(scores, mine, lambda r, f=f: r["fold"] == f) for f in range(3)},
            "pooled_by_class": {c: figures(scores, mine, lambda r, c=c: r["class"] == c) for c in WORKLOAD_CLASSES},
        }
    verdict = decide(per_seed)
    post_hoc: dict = {
        "note": "computed after the verdict, deciding nothing: X_hit_model_signals (the hit model's 24 signals alone, "
        "fitted out of fold as S2 and S3), and for the probability-like scores the pooled ECE and the picks trusted at 0.95",
        "per_seed": {}, "fits": {},
    }  # fmt: skip
    for seed in SEEDS:
        scores, mine, post_hoc["fits"][seed] = out_of_fold(rows, seed, {**FITTED, **POST_HOC})
        post_hoc["per_seed"][seed] = {
            "pooled": figures(scores, mine, lambda r: True),
            "by_fold": {f: figures(scores, mine, lambda r, f=f: r["fold"] == f) for f in range(3)},
            "pooled_by_class": {c: figures(scores, mine, lambda r, c=c: r["class"] == c) for c in WORKLOAD_CLASSES},
            "trust": trust(scores, mine, ("C_calibrated", "S2_compact", "S3_wide", *POST_HOC)),
        }
        for name in FITTED:
            post_hoc["fits"][seed].pop(name)  # the same fits as above
    report = {
        "command": "python " + " ".join(sys.argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__, "python": platform.python_version(), "machine": platform.processor() or platform.machine(),
        "note": "CPU only. Out of sample by fold: each problem is ranked by the shipped-recipe model trained without its "
        "fold's families, and each fitted score is fitted on the other two folds (same seed). The eight held-out families' "
        "rows were dropped by family name as the dataset was read, and were never ranked or scored. Step 1 (the rows "
        "and their checks) ran as the same command with --collect-only in place of --out.",
        "folds": folds, "scores": {"comparator": "C_raw_familiarity", "candidates": list(CANDIDATES)},
        "features": {name: list(names) for name, (names, _) in FITTED.items()},
        "collection": {"models": stored["checks"], "differing_from_validate_reports": stored["differing_from_reports"],
                       "seconds": round(stored["seconds"], 1)},
        "analysis_seconds": round(time.perf_counter() - started, 1),
        "per_seed": per_seed, "fits": fits, "verdict": verdict,
        "passes": [name for name in CANDIDATES if verdict[name]["passes"]],
        "post_hoc": post_hoc,
    }  # fmt: skip
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
