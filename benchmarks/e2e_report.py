"""Issues 12 and 14's end-to-end figures from one run of ``benchmarks/e2e_validation.py``, each
against three references, so that the choice of reference is visible rather than made here.

    python benchmarks/e2e_report.py E2E.json [--rows-of OTHER_E2E.json] [--without-rows-of OTHER_E2E.json]
        [--out REPORT.json]
        [--update-manifest MODEL_FOLDER]

References of a row's runtimes:

- ``collector``: the dataset's fastest candidate of the problem (``vs_best``), timed by the
  collector on another day;
- ``run``: the fastest mode of the row, timed in the same interleaved rounds: every timed mode
  but the control (``e2e_results.CONTROL``), ``best_known`` and max-autotune DEFAULT included;
- ``best_known``: the dataset's fastest candidate compiled alone in the row (``vs_best_known``).

Reported per mode and reference: geometric mean, 90th percentile and worst; compile time; per
workload class for the single pick (``diode_pick``), the defaults (``diode_fast``) and any variant
of them the run has (``diode_pick+diode_model='analytical'``: ``e2e_validation.mode_options``); the
defaults against max-autotune DEFAULT row by row; the defaults' rows over issue 14's bound
(``tradeoff.WORST_BOUND``); the single picks the defaults kept alone in the run (at the run's
own threshold, whatever the default is now) that run over :data:`TRUSTED_BOUND`; the AUROC of the
single pick's confidence predicting a hit (within ``1 + calibration.HIT_TOLERANCE`` of the
reference), with ``calibration.auroc``; and the defaults' compile time by what they did (kept
one alone or measured) and the kind of kernel that won (``aten``, ``triton``, or the choice's
name for another): a Triton winner is compiled once more for the graph after DIODE measured it.
The rows Inductor reshaped (:func:`reshaped`) are listed with the problem DIODE ranked.

``--update-manifest`` writes the figures of :data:`MANIFEST_METRICS` (against the run's best)
into the model folder's manifest as its ``e2e_*`` metrics, replacing every ``e2e_*`` metric it
had; the manifest's description says which run they come from.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_results  # noqa: E402

from diode_backend.files import read_json  # noqa: E402
from diode_backend.model.calibration import HIT_TOLERANCE, auroc  # noqa: E402
from diode_backend.model.manifest import ModelLoadError, replace_metrics  # noqa: E402
from diode_backend.offline import validate  # noqa: E402
from diode_backend.offline.cli.validate_text import lookup  # noqa: E402
from diode_backend.offline.tradeoff import WORST_BOUND  # noqa: E402

SINGLE_PICK, DEFAULTS, MAX_AUTOTUNE = "diode_pick", "diode_fast", "max_autotune_default"
REFERENCES = ("collector", "run", "best_known")
#: Issue 12's bound on a trusted single pick (``WORST_BOUND``: issue 14's on the defaults' worst row).
TRUSTED_BOUND = 1.2
#: The manifest's ``e2e_*`` metrics and where each is in :func:`report`'s output.
MANIFEST_METRICS = {
    "e2e_problems": ("rows",),
    **{
        f"e2e_{name}_runtime_{figure}": ("modes", mode, "run", figure)
        for name, mode in (("single_pick", SINGLE_PICK), ("defaults", DEFAULTS), ("max_autotune_default", MAX_AUTOTUNE))
        for figure in ("geomean", "p90", "worst")
    },
    "e2e_single_pick_compile_over_max_autotune": ("modes", SINGLE_PICK, "compile_over_max_autotune"),
    "e2e_defaults_compile_over_max_autotune": ("modes", DEFAULTS, "compile_over_max_autotune"),
    "e2e_defaults_kept_alone": ("trusted", "count"),
    "e2e_confidence_auroc": ("confidence_auroc", "run", "auroc"),
}


def reference_us(row: dict, reference: str) -> float | None:
    """The runtime ``row``'s modes are divided by under ``reference`` (None where it has none)."""
    modes = row["modes"]
    if reference == "collector":
        return row["best_measured_us"]
    if reference == "best_known":
        known = modes.get(e2e_results.BEST_KNOWN, {})
        return known.get("runtime_us") if known.get("applied") else None
    timed = [f["runtime_us"] for mode, f in modes.items() if mode != e2e_results.CONTROL and "runtime_us" in f]
    return min(timed) if timed else None


def ratios(rows: list[dict], mode: str, reference: str) -> list[tuple[dict, float]]:
    """(row, runtime over the reference) for the rows where ``mode`` was timed and the reference exists."""
    out = []
    for row in rows:
        figures, best = row["modes"].get(mode, {}), reference_us(row, reference)
        if "runtime_us" in figures and best:
            out.append((row, figures["runtime_us"] / best))
    return out


def spread(values: list[float]) -> dict | None:
    """Rows, geometric mean, 90th percentile and worst (``validate.spread``, as
    ``e2e_results.summarize_rows``)."""
    return {"rows": len(values), **validate.spread(values)} if values else None


def kept_alone(row: dict) -> bool:
    """Whether the defaults compiled ``row``'s pick alone, trusting its confidence."""
    return bool(((row["modes"].get(DEFAULTS) or {}).get("diode") or {}).get("single_pick"))


def confidence(figures: dict) -> float | None:
    decision = (figures.get("diode") or {}).get("decision") or {}
    return decision.get("confidence")


def ranked(figures: dict) -> str | None:
    """The problem a DIODE mode ranked: the row's, unless Inductor reshaped the GEMM first."""
    return ((figures.get("diode") or {}).get("decision") or {}).get("problem")


def reshaped(row: dict) -> bool:
    """Whether a DIODE mode of ``row`` ranked a GEMM of another shape than the row's problem:
    Inductor's shape padding (``pad_mm``) padded a misaligned dimension, where its own benchmark
    at compile time found the padded GEMM faster, in every mode of the row alike (``best_known``,
    keyed on the row's problem, then does not apply). The choice is noisy on small GEMMs, so one
    run may pad a row another does not."""
    return any(ranked(figures) not in (None, row["describe"]) for figures in row["modes"].values())


def winner_kind(pick: str) -> str:
    """``aten`` or ``triton`` for a DIODE config's description (``aten::mm``, ``triton::mm 64x64x32
    ...``), else the description itself (decompose-k, ...)."""
    kind, _, _ = pick.partition("::")
    return kind if kind in ("aten", "triton") else pick


def compile_breakdown(rows: list[dict]) -> dict:
    """The defaults' compile time by ``alone`` / ``measured`` and :func:`winner_kind` of the pick:
    rows, total and median seconds."""
    groups: dict[str, list[float]] = {}
    for row in rows:
        figures = row["modes"].get(DEFAULTS, {})
        decision = (figures.get("diode") or {}).get("decision")
        if "compile_s" not in figures or not decision:
            continue
        how = "measured" if len(decision.get("measured_us") or {}) > 1 else "alone"
        groups.setdefault(f"{how} {winner_kind(decision['pick'])}", []).append(figures["compile_s"])
    return {
        name: {"rows": len(seconds), "total_s": sum(seconds), "median_s": statistics.median(seconds)}
        for name, seconds in sorted(groups.items())
    }


def report(result: dict) -> dict:
    rows = result["rows"]
    modes = [m for m in result["modes"] if m != e2e_results.CONTROL]
    out: dict = {"rows": len(rows), "modes": {}}
    for mode in modes:
        done = [row["modes"][mode] for row in rows if "runtime_us" in row["modes"].get(mode, {})]
        compile_s = [f["compile_s"] for f in done]
        out["modes"][mode] = {
            "compile_s_total": sum(compile_s),
            **{ref: spread([r for _, r in ratios(rows, mode, ref)]) for ref in REFERENCES},
        }
    if MAX_AUTOTUNE in out["modes"]:
        total = out["modes"][MAX_AUTOTUNE]["compile_s_total"]
        for mode in modes:
            out["modes"][mode]["compile_over_max_autotune"] = out["modes"][mode]["compile_s_total"] / total
        pairs = [
            row["modes"][DEFAULTS]["runtime_us"] / row["modes"][MAX_AUTOTUNE]["runtime_us"]
            for row in rows
            if "runtime_us" in row["modes"].get(DEFAULTS, {}) and "runtime_us" in row["modes"].get(MAX_AUTOTUNE, {})
        ]
        out["defaults_over_max_autotune"] = {**spread(pairs), "slower_by_over_5pct": sum(p > 1.05 for p in pairs), "best": min(pairs)}
    classes = sorted({row["workload_class"] for row in rows})
    diode_modes = [m for m in modes if m.split("+")[0] in (SINGLE_PICK, DEFAULTS)]
    out["by_class"] = {
        c: {mode: {ref: spread([r for row, r in ratios(rows, mode, ref) if row["workload_class"] == c]) for ref in REFERENCES} for mode in diode_modes}
        for c in classes
    }
    out["defaults_compile"] = compile_breakdown(rows)
    out["defaults_over_bound"] = {
        ref: [{"problem": row["describe"], "family": row["family"], "ratio": r} for row, r in ratios(rows, DEFAULTS, ref) if r > WORST_BOUND]
        for ref in REFERENCES
    }
    out["reshaped"] = [
        {"problem": row["describe"], "ranked": sorted({ranked(f) for f in row["modes"].values()} - {None})}
        for row in rows
        if reshaped(row)
    ]
    out["trusted"] = {"count": sum(map(kept_alone, rows))}
    out["confidence_auroc"] = {}
    for ref in REFERENCES:
        scored = [(confidence(row["modes"][SINGLE_PICK]), r) for row, r in ratios(rows, SINGLE_PICK, ref) if confidence(row["modes"][SINGLE_PICK]) is not None]
        hits = [r <= 1 + HIT_TOLERANCE for _, r in scored]
        value = auroc([c for c, _ in scored], hits)
        out["confidence_auroc"][ref] = {"auroc": None if math.isnan(value) else value, "hits": sum(hits), "rows": len(scored)}
        out["trusted"][f"over_{TRUSTED_BOUND}_{ref}"] = [
            {"problem": row["describe"], "ratio": r} for row, r in ratios(rows, SINGLE_PICK, ref)
            if kept_alone(row) and r > TRUSTED_BOUND
        ]  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", type=Path, help="a result file of benchmarks/e2e_validation.py (or e2e_merge.py)")
    parser.add_argument("--rows-of", type=Path, metavar="E2E",
                        help="report only the problems this other run has (to compare two runs on the same rows)")  # fmt: skip
    parser.add_argument("--without-rows-of", type=Path, metavar="E2E",
                        help="leave out the problems this other run has (the rows a run added after it, on their own)")  # fmt: skip
    parser.add_argument("--out", type=Path, help="write the report here as JSON (default: print it)")
    parser.add_argument("--update-manifest", type=Path, metavar="MODEL_FOLDER",
                        help="write the run's figures into this model folder's manifest as its e2e_* metrics")  # fmt: skip
    args = parser.parse_args(argv)
    result = read_result(args.result, parser)
    for other, keep in ((args.rows_of, True), (args.without_rows_of, False)):
        if other:
            named = {row["describe"] for row in read_result(other, parser)["rows"]}
            result["rows"] = [row for row in result["rows"] if (row["describe"] in named) == keep]
    figures = report(result)
    emit(figures, args.out)
    if args.update_manifest:
        update_manifest(args.update_manifest, figures, parser)
    return 0


def update_manifest(folder: Path, figures: dict, parser: argparse.ArgumentParser) -> None:
    """Replace the ``e2e_*`` metrics of ``folder``'s manifest by :data:`MANIFEST_METRICS` of
    ``figures``; a figure the run lacks (no max-autotune mode, no AUROC) is left out."""
    measured = {name: lookup(figures, list(path)) for name, path in MANIFEST_METRICS.items()}
    try:
        replace_metrics(folder, measured, lambda name: name.startswith("e2e_"))
    except ModelLoadError as exc:
        parser.error(f"--update-manifest: {exc}")


def read_result(path: Path, parser: argparse.ArgumentParser) -> dict:
    """The e2e result at ``path``; a file that cannot be read, or a run of several GEMMs a graph,
    is a usage error naming it."""
    try:
        result = read_json(path)
    except (OSError, ValueError) as exc:
        parser.error(f"{path}: cannot read an e2e result ({exc})")
    if result.get("graph_size", 1) != 1:
        parser.error(
            f"{path}: a run of graphs of up to {result['graph_size']} GEMMs (--graph-size), which have no single "
            "problem, class or decision to report on; its summary has the figures of each mode"
        )
    return result


def emit(value: dict, out: Path | None) -> None:
    """``value`` as indented JSON to the file ``out``, or to standard output when None."""
    text = json.dumps(value, indent=1)
    if out:
        out.write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    raise SystemExit(main())
