"""Which confidence tells a model's hits from its misses best on families it was not fitted on
(CPU only): leave-one-family-out over the families a checkpoint kept out of gradient training,
for the calibrated confidence, hit models of several signal sets and boosted trees
(``benchmarks/results/h100_confidence_study.md`` states the candidates and the rule).

The network is the checkpoint's, unchanged; each family's confidences come from a fit on the
other families' problems as ``diode train`` fits them, and are pooled. The checkpoint's
held-out families are never read. Example::

    python benchmarks/confidence_study.py trained_models/data/h100/dataset \\
        --model trained_models/nvidia-h100-gemm/model.pt --out /tmp/confidence_study.json
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path

import torch

from diode_backend.model.calibration import HIT_TOLERANCE, auroc, calibrate, fit_calibration, pick_statistics, separation
from diode_backend.model.hit_model import SIGNALS, SIGNALS_OF_VERSION, fit_hit_model, hit_probability, pick_signals
from diode_backend.model.learned import LearnedScorer
from diode_backend.model.novelty import familiarity, fit_scale, nearest_distance
from diode_backend.offline.dataset import load_dataset, timed_hardware
from diode_backend.offline.families import family_of, of_families
from diode_backend.offline.train import inference_hardware
from diode_backend.offline.training_split import usable
from diode_backend.offline.validate import reliability
from diode_backend.workload import WORKLOAD_CLASSES, workload_class

TRUSTED = 0.9
_TOLERANCE = math.log1p(HIT_TOLERANCE)

#: where the study's signal groups end in hit model version 2's signals (hit_model.SIGNALS_OF_VERSION[2]):
#: version 1's twelve (v1), then the ensemble's view of the pick (E), then the problem's (P)
_V1_END = len(SIGNALS_OF_VERSION[1])
_E_END = SIGNALS.index("n_multiple_64")
_V2_END = len(SIGNALS_OF_VERSION[2])


def collect(data: list[str], model: str) -> tuple[list[dict], dict]:
    """Per problem of the checkpoint's stopping and calibration families: family, class, hit,
    regret, raw score, distance and the signal rows."""
    scorer = LearnedScorer.load(model)
    training = scorer.checkpoint.training
    families = training["stopping_families"] + training["calibration_families"]
    dataset = load_dataset(data)
    records = usable(of_families(dataset.split("train"), families))
    hardware_of = timed_hardware(inference_hardware(dataset.hardware))
    support = scorer.checkpoint.novelty["support"]
    rows = []
    for record in records:
        features = scorer.extractor.extract(record.problem, record.configs, hardware_of(record))
        with torch.no_grad():
            members = scorer.model(features)  # float32, as training and the scorer compute them
        pick, agreement, gap = pick_statistics(members)
        truth = torch.tensor(record.times_us, dtype=torch.float64)
        regret = float(truth[pick] / truth.min())
        raw = agreement * separation(gap)
        distance = nearest_distance(support, record.problem)
        signals = pick_signals(record.problem, record.configs, members, distance)
        rows.append({
            "problem": record.problem.describe(), "family": family_of(record), "class": workload_class(record.problem),
            "hit": bool(math.log(regret) <= _TOLERANCE), "regret": regret, "raw": raw, "distance": distance,
            "v1": signals[:_V1_END], "E": signals[_V1_END:_E_END], "P": signals[_E_END:_V2_END],
        })  # fmt: skip
    return rows, {"novelty_scale": scorer.checkpoint.novelty["scale"], "calibration": scorer.checkpoint.calibration}


# -- boosted depth-2 trees (G4), settings fixed by the study's rule -------------------------------

ROUNDS, RATE, MIN_LEAF, LEAF_L2 = 100, 0.1, 20, 1.0


def fit_trees(x: torch.Tensor, y: torch.Tensor) -> dict:
    n, d = x.shape
    quantiles = torch.linspace(0.1, 0.9, 9, dtype=x.dtype)
    thresholds = [torch.unique(torch.quantile(x[:, j], quantiles)) for j in range(d)]
    splits = [(j, float(t)) for j in range(d) for t in thresholds[j].tolist()]
    left = torch.stack([x[:, j] <= t for j, t in splits]).double()  # [S, n]
    base = math.log((float(y.sum()) + 0.5) / (n - float(y.sum()) + 0.5))
    logit = torch.full((n,), base, dtype=x.dtype)
    trees = []

    def best_split(member: torch.Tensor, g: torch.Tensor, h: torch.Tensor):
        gl, hl, cl = left @ (g * member), left @ (h * member), left @ member
        gt, ht, ct = float((g * member).sum()), float((h * member).sum()), float(member.sum())
        gr, hr, cr = gt - gl, ht - hl, ct - cl
        gain = gl**2 / (hl + LEAF_L2) + gr**2 / (hr + LEAF_L2) - gt**2 / (ht + LEAF_L2)
        gain = torch.where((cl >= MIN_LEAF) & (cr >= MIN_LEAF), gain, torch.full_like(gain, -math.inf))
        s = int(gain.argmax())
        return (s if math.isfinite(float(gain[s])) and float(gain[s]) > 0 else None), gt, ht

    for _ in range(ROUNDS):
        p = torch.sigmoid(logit)
        g, h = p - y, p * (1 - p)
        everyone = torch.ones(n, dtype=x.dtype)
        root, gt, ht = best_split(everyone, g, h)
        if root is None:
            break
        tree = {"split": splits[root], "children": []}
        for side in (left[root], 1 - left[root]):
            child, gc, hc = best_split(side, g, h)
            if child is None:
                tree["children"].append({"leaf": -RATE * gc / (hc + LEAF_L2)})
            else:
                values = []
                for leaf in (side * left[child], side * (1 - left[child])):
                    values.append(-RATE * float((g * leaf).sum()) / (float((h * leaf).sum()) + LEAF_L2))
                tree["children"].append({"split": splits[child], "leaves": values})
        trees.append(tree)
        logit = logit + torch.tensor([_tree_value(tree, row) for row in x.tolist()], dtype=x.dtype)
    return {"base": base, "trees": trees}


def _tree_value(tree: dict, row: list[float]) -> float:
    j, t = tree["split"]
    child = tree["children"][0 if row[j] <= t else 1]
    if "leaf" in child:
        return child["leaf"]
    j, t = child["split"]
    return child["leaves"][0 if row[j] <= t else 1]


def trees_probability(model: dict, row: list[float]) -> float:
    z = model["base"] + sum(_tree_value(tree, row) for tree in model["trees"])
    return 1.0 / (1.0 + math.exp(-z))


# -- the candidates --------------------------------------------------------------------------------

CANDIDATES = {
    "C0": None,
    "L1": ("v1",),
    "L2": ("v1", "E"),
    "L3": ("v1", "P"),
    "L4": ("v1", "E", "P"),
    "G4": ("v1", "E", "P"),
}


def signals_of(row: dict, parts: tuple[str, ...]) -> list[float]:
    return [value for part in parts for value in row[part]]


def fit_and_score(name: str, fit_rows: list[dict], score_rows: list[dict], scale_used: list[float]) -> list[float]:
    hits = [r["hit"] for r in fit_rows]
    if name == "C0":
        scale = fit_scale([r["raw"] for r in fit_rows], [r["distance"] for r in fit_rows], hits)
        scale_used.append(scale)
        calibration = fit_calibration([r["raw"] * familiarity(r["distance"], scale) for r in fit_rows], hits)
        return [calibrate(calibration, r["raw"] * familiarity(r["distance"], scale)) for r in score_rows]
    parts = CANDIDATES[name]
    x = [signals_of(r, parts) for r in fit_rows]
    if name.startswith("G"):
        model = fit_trees(torch.tensor(x, dtype=torch.float64), torch.tensor([float(h) for h in hits], dtype=torch.float64))
        return [trees_probability(model, signals_of(r, parts)) for r in score_rows]
    block = fit_hit_model(x, hits, [r["family"] for r in fit_rows])
    return [hit_probability(block, signals_of(r, parts)) for r in score_rows]


def log_loss(p: list[float], hits: list[bool]) -> float:
    return statistics.fmean(-math.log(min(max(q if h else 1 - q, 1e-6), 1.0)) for q, h in zip(p, hits))


def figures(confidences: list[float], rows: list[dict]) -> dict:
    hits = [r["hit"] for r in rows]
    table = reliability(confidences, hits)
    trusted = [r["regret"] for c, r in zip(confidences, rows) if c >= TRUSTED]
    return {
        "problems": len(rows),
        "misses": hits.count(False),
        "auroc": table["auroc"],
        "ece": table["ece"],
        "log_loss": log_loss(confidences, hits),
        "trusted": len(trusted),
        "trusted_over_1_2": sum(t > 1.2 for t in trusted),
        "trusted_worst": max(trusted, default=math.nan),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+")
    parser.add_argument("--model", default="trained_models/nvidia-h100-gemm/model.pt")
    parser.add_argument("--cache", type=Path, help="per-problem signals, computed once")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--bootstrap", type=int, default=400)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.cache and args.cache.exists():
        rows, shipped = json.loads(args.cache.read_text()).values()
    else:
        rows, shipped = collect(args.data, args.model)
        if args.cache:
            args.cache.write_text(json.dumps({"rows": rows, "shipped": shipped}))
    families = sorted({r["family"] for r in rows})
    print(f"{len(rows)} problems, {sum(not r['hit'] for r in rows)} misses, families {', '.join(families)}", file=sys.stderr)
    # C0 fitted on all of them must be the checkpoint's own confidence
    scale = fit_scale([r["raw"] for r in rows], [r["distance"] for r in rows], [r["hit"] for r in rows])
    refit = fit_calibration([r["raw"] * familiarity(r["distance"], scale) for r in rows], [r["hit"] for r in rows])
    same = scale == shipped["novelty_scale"] and all(
        math.isclose(a, b, rel_tol=1e-5) for key in ("edges", "values") for a, b in zip(refit[key], shipped["calibration"][key])
    )
    print(f"C0 refitted on all {len(rows)}: scale {scale}, same as the checkpoint's (to float32 rounding): {same}", file=sys.stderr)

    pooled: dict[str, list[float]] = {}
    for name in CANDIDATES:
        confidences = [math.nan] * len(rows)
        scales: list[float] = []
        for family in families:
            fit_rows = [r for r in rows if r["family"] != family]
            index = [i for i, r in enumerate(rows) if r["family"] == family]
            for i, c in zip(index, fit_and_score(name, fit_rows, [rows[i] for i in index], scales)):
                confidences[i] = c
        pooled[name] = confidences
        print(f"{name}: {figures(confidences, rows)}" + (f" scales {scales}" if scales else ""), file=sys.stderr)

    report = {"problems": len(rows), "c0_reproduces_checkpoint": same, "candidates": {}}
    for name, confidences in pooled.items():
        entry = figures(confidences, rows)
        entry["by_class"] = {
            c: auroc([x for x, r in zip(confidences, rows) if r["class"] == c], [r["hit"] for r in rows if r["class"] == c])
            for c in WORKLOAD_CLASSES
        }
        entry["by_family"] = {
            f: auroc([x for x, r in zip(confidences, rows) if r["family"] == f], [r["hit"] for r in rows if r["family"] == f])
            for f in families
        }
        entry["trusted_over_1_2_problems"] = [
            {"problem": r["problem"], "family": r["family"], "regret": r["regret"], "confidence": x}
            for x, r in zip(confidences, rows) if x >= TRUSTED and r["regret"] > 1.2
        ]  # fmt: skip
        report["candidates"][name] = entry
    report["class_counts"] = {c: [sum(r["class"] == c for r in rows), sum(r["class"] == c and not r["hit"] for r in rows)] for c in WORKLOAD_CLASSES}

    # the rule
    auc = {name: entry["auroc"] for name, entry in report["candidates"].items()}
    baseline = "L1" if auc["L1"] > auc["C0"] else "C0"
    best = max((n for n in CANDIDATES if n != "C0"), key=lambda n: (auc[n], -len(signals_of(rows[0], CANDIDATES[n]))))
    b_entry, w_entry = report["candidates"][baseline], report["candidates"][best]
    adopted = w_entry["auroc"] >= b_entry["auroc"] + 0.02 and w_entry["ece"] <= b_entry["ece"] + 0.01
    report["rule"] = {"baseline": baseline, "best": best, "adopted": adopted}

    # informational: a bootstrap over families of the best's AUROC gain over the baseline
    rng = random.Random(0)
    gains = []
    for _ in range(args.bootstrap):
        drawn = [rng.choice(families) for _ in families]
        index = [i for f in drawn for i, r in enumerate(rows) if r["family"] == f]
        hits = [rows[i]["hit"] for i in index]
        gains.append(auroc([pooled[best][i] for i in index], hits) - auroc([pooled[baseline][i] for i in index], hits))
    gains.sort()
    report["rule"]["bootstrap_gain"] = {
        "median": gains[len(gains) // 2], "p05": gains[int(0.05 * len(gains))], "p95": gains[int(0.95 * len(gains))]
    }  # fmt: skip
    print(json.dumps(report["rule"]), file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
