"""Which Triton kernels make DIODE's compiles slow, read from committed end-to-end runs (CPU).

    python benchmarks/compile_outliers.py --singles RUN.json [...] --graphs RUN.json [...] [--out FILE]

``--singles``: runs of one GEMM a graph (``e2e_validation`` without ``--graph-size``). For each
row DIODE's single pick compiled, the pick's cost is its compile time less no autotuning's for
the same GEMM in the same process (an ATen pick costs about nothing more, so for a Triton pick it
is about its kernel's compile), grouped by the GEMM's precision (half: float16 and bfloat16;
float32 with and without TF32) and the tile's output block (small: under 64x64, mid: under
128x128, big: 128x128 or more).

``--graphs``: runs of graphs (``--graph-size N``). Per mode, its total compile time, and how much
of it went to the graphs that hold a float32 GEMM allowed TF32.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

from e2e_validation import members_of

from diode_backend.files import read_json

TILE = re.compile(r"^triton::\w+ (\d+)x(\d+)x(\d+) s(\d+) w(\d+)")


def precision(problem: str) -> str:
    """``half``, ``float32`` or ``tf32`` of a problem's ``describe()``."""
    if "float32" not in problem.split():
        return "half"
    return "tf32" if problem.endswith(" tf32") else "float32"


def tile_class(pick: str) -> str:
    """``aten``, or the size class of a Triton tile's output block (BLOCK_M x BLOCK_N)."""
    found = TILE.match(pick)
    if not found:
        return "aten"
    block = int(found.group(1)) * int(found.group(2))
    return "small" if block < 64 * 64 else "mid" if block < 128 * 128 else "big"


def pick_costs(runs: list[dict]) -> dict[str, dict]:
    """Per ``precision/tile class``: the single pick's compile over no autotuning's (seconds)."""
    costs: dict[str, list[float]] = defaultdict(list)
    slowest: list[tuple[float, str, str]] = []
    for run in runs:
        for row in run["rows"]:
            modes = row["modes"]
            pick, plain = modes.get("diode_pick"), modes.get("no_autotune")
            decision = ((pick or {}).get("diode") or {}).get("decision")
            if not decision or plain is None:
                continue
            extra = pick["compile_s"] - plain["compile_s"]
            costs[f"{precision(decision['problem'])}/{tile_class(decision['pick'])}"].append(extra)
            slowest.append((extra, decision["problem"], decision["pick"]))
    table = {
        key: {
            "picks": len(values),
            "median_s": statistics.median(values),
            "p90_s": sorted(values)[int(0.9 * (len(values) - 1))],
            "max_s": max(values),
        }
        for key, values in sorted(costs.items())
    }
    table["slowest"] = [{"extra_s": s, "problem": p, "pick": k} for s, p, k in sorted(slowest, reverse=True)[:10]]
    return table


def tf32_share(run: dict) -> dict[str, dict]:
    """Per mode: total compile seconds, and those of graphs holding a TF32 GEMM."""
    out: dict[str, dict] = {}
    for row in run["rows"]:
        tf32 = any(precision(member) == "tf32" for member in members_of(row))
        for mode, result in row["modes"].items():
            if "compile_s" not in result:
                continue
            totals = out.setdefault(mode, {"graphs": 0, "compile_s": 0.0, "tf32_graphs": 0, "tf32_compile_s": 0.0})
            totals["graphs"] += 1
            totals["compile_s"] += result["compile_s"]
            totals["tf32_graphs"] += tf32
            totals["tf32_compile_s"] += result["compile_s"] if tf32 else 0.0
    for totals in out.values():
        totals["tf32_share"] = totals["tf32_compile_s"] / totals["compile_s"] if totals["compile_s"] else 0.0
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--singles", nargs="*", type=Path, default=[], help="e2e runs of one GEMM a graph")
    parser.add_argument("--graphs", nargs="*", type=Path, default=[], help="e2e runs of graphs")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    if not args.singles and not args.graphs:
        parser.error("give --singles or --graphs (e2e_validation.py result files)")
    result = {
        "benchmark": "compile_outliers",
        "singles": [str(p) for p in args.singles],
        "graphs": [str(p) for p in args.graphs],
        "pick_costs": pick_costs([read_json(p) for p in args.singles]) if args.singles else {},
        "tf32_share": {str(p): tf32_share(read_json(p)) for p in args.graphs},
    }
    for key, row in result["pick_costs"].items():
        if key != "slowest":
            print(f"{key:16s} {row['picks']:4d} picks  median {row['median_s']:.2f} s  p90 {row['p90_s']:.2f} s  max {row['max_s']:.2f} s")
    for path, modes in result["tf32_share"].items():
        for mode, totals in modes.items():
            print(f"{Path(path).parent.name}/{mode}: {totals['compile_s']:.1f} s, {totals['tf32_share']:.0%} in {totals['tf32_graphs']} TF32 graphs")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
