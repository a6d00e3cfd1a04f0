"""Join result files of ``benchmarks/e2e_validation.py`` made in parallel into one run.

    python benchmarks/e2e_merge.py OUT.json PART.json [PART.json ...]

Each part is one process's run (``--shard I/N`` of a cold run, one GPU each, or the warm pass
from such a part's file). The parts must agree on what makes their rows comparable: modes,
timing method, hardware, dataset hardware and graph size (``--graph-size``); their problems
must not overlap. ``OUT.json`` has every part's rows, one summary over all of them
(``e2e_results.summarize``) and, per part, its shard, environment, caches and elapsed time
(``parts``). Warm passes with the kernel caches kept (``--kernel-cache``) join too: each row
carries its second pass's compile times, which the summary compares with the all-caches-off
ones, and each part keeps its passes' record (``kernel_cache``); parts with and without those
passes are not joined.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_results  # noqa: E402

from diode_backend.files import read_json  # noqa: E402

#: What the parts must share for their rows to be one run's.
SHARED = ("benchmark", "method", "timing", "hardware", "dataset_hardware", "modes", "graph_size")
#: What each part records of itself.
OWN = (
    "shard", "environment", "caches", "elapsed_s", "earlier_calls", "stopped_early", "warm_from", "kernel_cache",
    "compile_workers_warmed",
)  # fmt: skip


def merge(parts: list[dict], names: list[str]) -> dict:
    """One result from ``parts`` (read from the files ``names``); ValueError naming the file
    and the fix where they cannot be joined."""
    first = parts[0]
    seen: dict[str, str] = {}
    for part, name in zip(parts, names):
        for key in SHARED:
            if part.get(key) != first.get(key):
                raise ValueError(f"{name}: its {key} differs from {names[0]}'s; join only parts of one run")
        if ("kernel_cache" in part) != ("kernel_cache" in first):
            raise ValueError(f"{name}: only some parts have kernel-cache passes; join those of one kind")
        for row in part["rows"]:
            if row["describe"] in seen:
                raise ValueError(f"{name}: {row['describe']} is also in {seen[row['describe']]}; each problem must be in one part")
            seen[row["describe"]] = name
    rows = [row for part in parts for row in part["rows"]]
    merged = {key: first[key] for key in SHARED if key in first}
    merged["parts"] = [{key: part[key] for key in OWN if key in part} for part in parts]
    merged["rows"] = rows
    merged["summary"] = e2e_results.summarize(rows, list(first["modes"]))
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("parts", nargs="+", help="results files of e2e_validation.py, one per process")
    args = parser.parse_args(argv)
    parts = []
    for name in args.parts:
        try:
            parts.append(read_json(name))
        except (OSError, ValueError) as err:
            parser.error(f"{name}: not a readable results file of e2e_validation.py ({err})")
    try:
        merged = merge(parts, args.parts)
    except ValueError as err:
        parser.error(str(err))
    e2e_results.write_result(args.out, merged)
    print(f"{len(merged['rows'])} rows from {len(parts)} parts -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
