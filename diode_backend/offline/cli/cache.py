"""``diode cache info|list|export|clear``: where the prediction cache is, what it holds (cached
rankings, measured decisions and predicted decisions apart), the measured decisions as a dataset
shard, and purging it."""

from __future__ import annotations

import argparse
import json
import math
import secrets
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cache",
        help="show or clear the on-disk prediction cache",
        description="The prediction cache keeps DIODE's rankings on disk so that a GEMM seen "
        "before costs a new process a file read instead of an inference "
        "(option diode_cache_predictions), the winners DIODE measured itself (measured "
        "decisions) and the picks it kept alone on its model's word (predicted decisions), "
        "which answer a later compile of the same GEMM without inference or measurement. It "
        "lives in the user cache folder, or in $DIODE_CACHE_DIR when set; see docs/cache.md.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True, help="what to do")
    info = actions.add_parser(
        "info",
        help="print the cache folder, its entries, their size and the limits",
        description="Print the cache folder, the number of entries, their total size and the "
        "limits (DIODE_CACHE_MAX_ENTRIES, DIODE_CACHE_MAX_BYTES) past which the least recently "
        "used entries are evicted.",
    )
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    info.set_defaults(run=run_info)
    listing = actions.add_parser(
        "list",
        help="list the measured and the predicted decisions",
        description="One line per measured decision: the GEMM, the hardware, the kernel measured "
        "fastest and its time, and how many candidates were measured; then one line per "
        "predicted decision: the GEMM, the hardware, the kernel kept, the model and its "
        "confidence.",
    )
    listing.set_defaults(run=run_list)
    export = actions.add_parser(
        "export",
        help="write the measured decisions as a dataset shard",
        description="Write every measured decision as training data: one new shard per "
        "hardware in OUTPUT (the dataset format, source 'measured'; written atomically, never "
        "overwriting a shard), which `diode train` reads like any dataset. Predicted decisions "
        "are not timings and are left out.",
    )
    export.add_argument("--output", "-o", type=Path, required=True, help="dataset folder to add shards to")
    export.add_argument("--split", choices=("train", "validation"), default="train", help="split to tag them with (default train)")
    export.set_defaults(run=run_export)
    clear = actions.add_parser(
        "clear",
        help="delete every cached prediction, measured and predicted decision",
        description="Delete every entry of the prediction cache, measured and predicted "
        "decisions included (the next compiles rank, and measure, afresh).",
    )
    clear.set_defaults(run=run_clear)


def run_info(args: argparse.Namespace) -> int:
    from ... import measured as measured_decisions, predicted as predicted_decisions
    from ...cache import default_cache

    rankings = default_cache().info()
    measured, picks = default_cache(measured_decisions.FOLDER).info(), default_cache(predicted_decisions.FOLDER).info()
    if args.json:
        print(json.dumps({
            "directory": str(rankings.directory), "entries": rankings.entries, "bytes": rankings.bytes,
            "max_entries": rankings.max_entries, "max_bytes": rankings.max_bytes,
            "measured": {"directory": str(measured.directory), "entries": measured.entries, "bytes": measured.bytes},
            "predicted": {"directory": str(picks.directory), "entries": picks.entries, "bytes": picks.bytes},
        }, indent=2))  # fmt: skip
        return 0
    print(f"location: {rankings.directory}{'' if rankings.directory.is_dir() else '  (not created yet)'}")
    print(f"entries:  {rankings.entries} predicted (limit {rankings.max_entries})")
    print(f"size:     {_size(rankings.bytes)} (limit {_size(rankings.max_bytes)})")
    print(f"measured: {measured.entries} decisions, {_size(measured.bytes)} in {measured.directory}")
    print(f"picks:    {picks.entries} predicted decisions, {_size(picks.bytes)} in {picks.directory}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from ... import measured, predicted

    decisions = sorted(measured.stored_decisions(), key=lambda d: (d.hardware.name, d.problem.describe()))
    for d in decisions:
        best = min(d.times_us)
        ran = sum(math.isfinite(t) for t in d.times_us)
        print(f"{d.problem.describe()} on {d.hardware.name}: {d.winner.describe()} {best:.1f} us "
              f"(fastest of {ran} measured{f', {len(d.times_us) - ran} failed' if ran < len(d.times_us) else ''})")  # fmt: skip
    print(f"{len(decisions)} measured decision{'' if len(decisions) == 1 else 's'}")
    picks = sorted(predicted.stored_decisions(), key=lambda d: (d.hardware.name, d.problem.describe(), d.model))
    for d in picks:
        sure = "no confidence" if d.confidence is None else f"confidence {d.confidence:.2f}"
        print(f"{d.problem.describe()} on {d.hardware.name}: {d.winner.describe()} (predicted by {d.model}, {sure})")
    print(f"{len(picks)} predicted decision{'' if len(picks) == 1 else 's'}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from ...measured import stored_decisions
    from ..dataset import DatasetMeta, ProblemTimings, ShardWriter

    by_hardware: dict = {}
    for d in stored_decisions():
        by_hardware.setdefault(d.hardware, []).append(d)
    for hardware, decisions in sorted(by_hardware.items(), key=lambda item: item[0].name):
        environment = {"command": "diode cache export", **decisions[0].versions}
        # a random tag: two exports in one second by one process never share a shard name
        tag = f"measured-{secrets.token_hex(4)}"
        writer = ShardWriter(args.output, DatasetMeta(hardware, environment), tag=tag, every=len(decisions) + 1, seconds=math.inf)
        for d in decisions:
            ran = [(c, t) for c, t in zip(d.configs, d.times_us) if math.isfinite(t)]
            writer.add(ProblemTimings(
                d.problem, tuple(c for c, _ in ran), tuple(t for _, t in ran), split=args.split,
                generator="measured", source="measured", space=d.space, failed=len(d.times_us) - len(ran),
            ))  # fmt: skip
        path = writer.flush()
        print(f"{len(decisions)} measured problems on {hardware.name} -> {path}")
    if not by_hardware:
        print("no measured decisions to export")
    return 0


def run_clear(args: argparse.Namespace) -> int:
    from ... import measured, predicted
    from ...cache import default_cache

    folders = ((default_cache(), "predicted"), (default_cache(measured.FOLDER), "measured"),
               (default_cache(predicted.FOLDER), "predicted decision"))  # fmt: skip
    for cache, what in folders:
        before = cache.info()
        removed = cache.clear()
        print(f"removed {removed} {what} entries ({_size(before.bytes)}) from {cache.directory}")
    return 0


def _size(count: int) -> str:
    """Bytes in the largest unit that keeps the number at least 1 (B, KiB, MiB, GiB)."""
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
