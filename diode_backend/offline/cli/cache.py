"""``diode cache info|clear``: where the prediction cache is, what it holds, and purging it."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cache",
        help="show or clear the on-disk prediction cache",
        description="The prediction cache keeps DIODE's rankings on disk so that a GEMM seen "
        "before costs a new process a file read instead of an inference "
        "(option diode_cache_predictions). It lives in the user cache folder, or in "
        "$DIODE_CACHE_DIR when set; see docs/cache.md.",
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
    clear = actions.add_parser(
        "clear",
        help="delete every cached prediction",
        description="Delete every entry of the prediction cache (the next compiles rank afresh).",
    )
    clear.set_defaults(run=run_clear)


def run_info(args: argparse.Namespace) -> int:
    from ...cache import default_cache

    info = default_cache().info()
    if args.json:
        print(json.dumps({
            "directory": str(info.directory), "entries": info.entries, "bytes": info.bytes,
            "max_entries": info.max_entries, "max_bytes": info.max_bytes,
        }, indent=2))  # fmt: skip
        return 0
    print(f"location: {info.directory}{'' if info.directory.is_dir() else '  (not created yet)'}")
    print(f"entries:  {info.entries} (limit {info.max_entries})")
    print(f"size:     {_size(info.bytes)} (limit {_size(info.max_bytes)})")
    return 0


def run_clear(args: argparse.Namespace) -> int:
    from ...cache import default_cache

    cache = default_cache()
    before = cache.info()
    removed = cache.clear()
    print(f"removed {removed} entries ({_size(before.bytes)}) from {cache.directory}")
    return 0


def _size(count: int) -> str:
    """Bytes in the largest unit that keeps the number at least 1 (B, KiB, MiB, GiB)."""
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
