"""Runtime against compile time as DIODE's defaults move, simulated on the timed H100 dataset (CPU
only): the threshold, top-k and measure ratio chosen by a stated rule on the early-stopping
families, then reported on the held-out families.

Per problem (``diode_backend.offline.tradeoff``): a confident pick runs at its measured time,
an unsure one at the fastest measured time of its measured set (measurement taken as exact).
Compile time: ``CompileCost``, what a GEMM adds to its graph's compile, fitted to an end-to-end
run on the early-stopping families (``benchmarks/e2e_validation.py --families stopping
--graph-size N``) that compiled each graph under DIODE's single pick and under measured sets of
several sizes (``diode_fast+diode_top_k=K`` modes), each decision's Triton kernels and measured
candidates read from the run; max-autotune DEFAULT's compiles, where the run has them, check the
model outside the range it was fitted on. The dataset timed a stratified quarter of Inductor's
EXHAUSTIVE space per problem (plus its DEFAULT list on the held-out families) where DIODE ranks
the whole space at run time: the simulation picks, measures and judges within the timed subset,
but keeps a pick alone or measures by the run-time confidence, the model's over the whole
EXHAUSTIVE list under the problem's TF32 rule (``tradeoff.runtime_ranking``, as
``benchmarks/e2e_replay.py`` computes it).

Example::

    python benchmarks/defaults_tradeoff.py trained_models/data/h100/dataset \\
        --e2e benchmarks/results/h100_e2e_graphs_one_thread_3de1b786_2026-11-27/stopping/e2e.json.gz \\
        --out benchmarks/results/h100_defaults_tradeoff.json.gz --plot docs/images/h100-defaults-tradeoff.png
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from pathlib import Path

from diode_backend import catalog, registry
from diode_backend.files import compressed_as_named, read_json
from diode_backend.offline.dataset import load_dataset, shard_paths, timed_hardware
from diode_backend.offline.families import of_families, stopping_problems
from diode_backend.offline.plots import regret_ticks
from diode_backend.offline.train import inference_hardware
from diode_backend.offline.tradeoff import (
    GEOMEAN_SLACK,
    THRESHOLD_GRID,
    WORST_BOUND,
    CompiledGraph,
    SimulatedProblem,
    choose_defaults,
    fit_compile_cost,
    selection_record,
    simulate_grid,
    simulated_problem,
)
from diode_backend.options import DiodeOptions
from diode_backend.problem import KIND_ATEN, GemmProblem

TOP_KS = tuple(range(1, 11))
RATIOS = tuple(round(1.0 + 0.05 * i, 2) for i in range(21))
#: Where the compile-time axis is labelled.
COMPILE_TICKS_S = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
#: A (top_k, ratio) drawn for comparison: five candidates, as Inductor's benchmarker was handed.
COMPARED = (5, 1.25)


def simulated(problems, scorer, hardware) -> list[SimulatedProblem]:
    hardware_of = timed_hardware(hardware)  # each problem ranked under its own TF32 rule
    return [simulated_problem(scorer, p, hardware_of(p)) for p in problems]


def compiled_graphs(e2e: dict, path: Path, problems: dict[str, GemmProblem], hardware) -> dict[str, list[CompiledGraph]]:
    """Each timed compile of the end-to-end run, by what compiled it: ``diode`` (every DIODE mode
    that measures when the scheduler asks, as the runtime does where Inductor defers), per GEMM
    its decision's Triton kernels compiled (a measured set's non-ATen candidates, or a Triton pick
    alone) and candidates measured; ``max_autotune_default``, per GEMM its DEFAULT list's;
    ``no_autotune``."""
    compiles: dict[str, list[CompiledGraph]] = {"diode": [], "max_autotune_default": [], "no_autotune": []}
    for row in e2e["rows"]:
        members = row.get("members", [row["describe"]])
        for mode, figures in row["modes"].items():
            options = e2e["modes"].get(mode, {})
            deferred = options.get("max_autotune_gemm_backends") == "DIODE" and options.get("benchmark_epilogue_fusion", True)
            if "compile_s" not in figures:
                continue
            if mode == "no_autotune":
                gemms = [(0, 1)] * len(members)
            elif mode == "max_autotune_default":
                listed = [registry.candidate_configs(problems[m], hardware, "DEFAULT") or [] for m in members]
                gemms = [(sum(c.kind != KIND_ATEN for c in configs), len(configs)) for configs in listed]
            elif deferred:
                gemms = [decision_terms(d, path) for d in figures["diode"].get("decisions") or [figures["diode"]["decision"]]]
            else:
                continue
            compiles["diode" if deferred else mode].append(CompiledGraph(row["describe"], tuple(gemms), figures["compile_s"]))
    return compiles


def decision_terms(decision: dict, path: Path) -> tuple[int, int]:
    """A DIODE decision's ``(compiled, measured)``: its Triton pick alone, or its measured set."""
    if decision["kept"] == 1:
        return int(not decision["pick"].startswith(f"{KIND_ATEN}::")), 1
    if "measured_us" not in decision:
        raise SystemExit(f"{path}: a measured decision without measured_us; give a run of e2e_validation that records it")
    measured = decision["measured_us"]
    return sum(not name.startswith(f"{KIND_ATEN}::") for name in measured), len(measured)


def totals(compiles: list[CompiledGraph], cost) -> dict:
    """Measured and predicted total seconds of ``compiles``, with their GEMMs and the median
    number of Triton kernels a GEMM compiled."""
    return {
        "compiles": len(compiles),
        "gemms": sum(len(c.gemms) for c in compiles),
        "compiled_median": statistics.median(g[0] for c in compiles for g in c.gemms),
        "measured_total_s": sum(c.seconds for c in compiles),
        "predicted_total_s": sum(cost.seconds(*g) for c in compiles for g in c.gemms),
    }


def per_gemm_s(compiles: list[CompiledGraph]) -> float | None:
    """Compile seconds per GEMM over ``compiles``, None when there are none."""
    gemms = sum(len(c.gemms) for c in compiles)
    return sum(c.seconds for c in compiles) / gemms if gemms else None


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+", type=Path, help="the timed dataset (every candidate of a problem measured)")
    parser.add_argument("--model", default="trained_models/nvidia-h100-gemm", help="a model name or folder (default: the shipped H100 model)")
    parser.add_argument("--e2e", type=Path, required=True,
                        help="an end-to-end results JSON of graphs compiled under DIODE's single pick and measured sets of several sizes")
    parser.add_argument("--out", type=Path, required=True, help="results JSON to write (gzip-compressed where the name ends in .gz)")
    parser.add_argument("--plot", type=Path, help="PNG to write (needs matplotlib)")
    args = parser.parse_args(argv)

    dataset = load_dataset(args.data)
    hardware = inference_hardware(dataset.hardware)
    entry = catalog.pick_entry(hardware, args.model)
    scorer = registry.load_scorer(entry)
    training = scorer.checkpoint.training
    # the families the model stopped early on are where it may be tuned; its held-out ones are reported
    try:
        stopping = stopping_problems(dataset.problems, training)
    except ValueError as err:
        raise SystemExit(str(err)) from None
    held_out = of_families(dataset.problems, training["holdout_families"])

    e2e = read_json(args.e2e)
    problems = {p.problem.describe(): p.problem for p in dataset.problems}
    compiles = compiled_graphs(e2e, args.e2e, problems, hardware)
    try:
        cost, fit = fit_compile_cost(compiles["diode"])
    except ValueError as err:
        raise SystemExit(f"--e2e {args.e2e}: {err}") from None
    check = totals(compiles["max_autotune_default"], cost) if compiles["max_autotune_default"] else None
    reference = {
        "no_autotune_mean_s": per_gemm_s(compiles["no_autotune"]),
        "max_autotune_default_mean_s": per_gemm_s(compiles["max_autotune_default"]),
        "rows": len(e2e["rows"]),
    }

    sets = {"stopping": simulated(stopping, scorer, hardware), "held_out": simulated(held_out, scorer, hardware)}
    grids = {name: simulate_grid(problems, cost, THRESHOLD_GRID, TOP_KS, RATIOS) for name, problems in sets.items()}
    chosen = choose_defaults(grids["stopping"], GEOMEAN_SLACK, WORST_BOUND)
    key = (chosen["threshold"], chosen["top_k"], chosen["ratio"])
    options = DiodeOptions()
    shipped = (options.diode_confidence_threshold, options.diode_top_k, options.diode_measure_ratio)

    def at(name: str, point: tuple) -> dict:
        return next(r for r in grids[name] if (r["threshold"], r["top_k"], r["ratio"]) == point)

    result = {
        "benchmark": "defaults_tradeoff",
        "device": "none: a CPU computation on timings recorded on the GPU",
        "data": {
            "paths": [str(p) for p in args.data],
            "sha256": {str(path): sha256(path) for p in args.data for path in shard_paths(p)},
            "hardware": dataset.hardware.key,
        },
        "method": " ".join(__doc__.split("\n\n")[1].split()),
        "model": {"path": args.model, "identity": scorer.identity},
        "e2e": {"path": str(args.e2e), "sha256": sha256(args.e2e)},
        "families": {
            "stopping": {"names": training["stopping_families"], "problems": len(stopping)},
            "held_out": {"names": training["holdout_families"], "problems": len(held_out)},
        },
        "compile_cost": {
            "constants_s": dict(zip(("base", "alone", "measure", "candidate"), cost.constants())),
            "fit": fit,
            "max_autotune_default_check": check,
            "reference": reference,
        },
        "grid": {"thresholds": THRESHOLD_GRID, "top_ks": TOP_KS, "ratios": RATIOS},
        "rule": selection_record(),
        "chosen": {"threshold": key[0], "top_k": key[1], "ratio": key[2], "stopping": chosen, "held_out": at("held_out", key)},
        "shipped": {
            "threshold": shipped[0], "top_k": shipped[1], "ratio": shipped[2], "is_chosen": shipped == key,
            "stopping": at("stopping", shipped), "held_out": at("held_out", shipped),
        },  # fmt: skip
        "points": {name: table(rows) for name, rows in grids.items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(compressed_as_named(args.out, (render(result) + "\n").encode()))
    if args.plot:
        plot(result, grids, args.plot, [key[1:], COMPARED, (1, 1.0), (TOP_KS[-1], RATIOS[-1])])
    print(json.dumps({k: result[k] for k in ("compile_cost", "chosen", "shipped")}, indent=2))
    return 0


def render(value, depth: int = 0) -> str:
    """JSON with one key per line and every list of plain values on one line (a grid row)."""
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(key)}: {render(item, depth + 1)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, (list, tuple)) and any(isinstance(item, (dict, list, tuple)) for item in value):
        return "[\n" + ",\n".join(inner + render(item, depth + 1) for item in value) + f"\n{pad}]"
    return json.dumps(value)


def table(rows: list[dict]) -> dict:
    """Grid rows as a column table (one list per row, figures to 5 decimals): a quarter of the
    size of a list of objects."""
    columns = list(rows[0])
    return {"columns": columns, "rows": [[round(r[c], 5) for c in columns] for r in rows]}


def plot(result: dict, grids: dict[str, list[dict]], path: Path, settings: list[tuple]) -> None:
    """Geomean and worst runtime over best against mean compile seconds per GEMM as the threshold
    moves, one curve per (top_k, ratio) of ``settings``; the chosen point marked; the stopping
    families (where it was chosen) and the held-out ones side by side."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    chosen, reference = result["chosen"], result["compile_cost"]["reference"]
    settings = list(dict.fromkeys(settings))
    figure, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    titles = {"stopping": "early-stopping families (chosen here)", "held_out": "held-out families (reported)"}
    for column, name in enumerate(("stopping", "held_out")):
        points = [r for r in grids[name] if (r["top_k"], r["ratio"]) in settings]
        for row, figure_name in enumerate(("geomean", "worst")):
            ax = axes[row][column]
            for top_k, ratio in settings:
                curve = sorted((r for r in points if (r["top_k"], r["ratio"]) == (top_k, ratio)), key=lambda r: r["threshold"])
                label = f"top_k {top_k}, ratio {ratio:g}" + (" (chosen)" if (top_k, ratio) == (chosen["top_k"], chosen["ratio"]) else "")
                ax.plot([r["compile_s_mean"] for r in curve], [r[figure_name] for r in curve], marker=".", label=label)
            mark = chosen[name]
            ax.plot([mark["compile_s_mean"]], [mark[figure_name]], marker="*", markersize=14, color="black", linestyle="none",
                    label=f"chosen: threshold {chosen['threshold']:g}")  # fmt: skip
            if reference["no_autotune_mean_s"] is not None:
                ax.axvline(reference["no_autotune_mean_s"], color="grey", linestyle=":", label="no autotuning (e2e)")
            if reference["max_autotune_default_mean_s"] is not None:
                ax.axvline(0.1 * reference["max_autotune_default_mean_s"], color="grey", linestyle="--", label="0.1x max-autotune DEFAULT (e2e)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ticks = regret_ticks(max(r[figure_name] for r in points))
            ax.yaxis.set_major_locator(FixedLocator(ticks))
            ax.yaxis.set_minor_locator(NullLocator())
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))
            ax.xaxis.set_major_locator(FixedLocator(COMPILE_TICKS_S))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g} s"))
            ax.set_ylim(1.0, ticks[-1])
            ax.grid(True, alpha=0.3)
            ax.set_ylabel(f"runtime over best, {figure_name}")
            if row == 0:
                ax.set_title(f"{titles[name]}, {result['families'][name]['problems']} problems")
            else:
                ax.set_xlabel("simulated compile time per GEMM (mean)")
    axes[0][1].legend(fontsize=7, loc="upper right")
    figure.suptitle("DIODE's defaults: threshold 0 (left end of each curve) to 1 (right end)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    sys.exit(main())
