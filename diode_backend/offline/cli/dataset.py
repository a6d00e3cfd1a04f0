"""``diode dataset``: inspect and combine timing datasets (docs/dataset.md)."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dataset",
        help="inspect (info) and combine (merge) timing datasets",
        description="`info` prints what a dataset holds: device, runs, problems and pairs per "
        "split, op, dtype, layout, generator and space. `merge` compacts shards (of one device) "
        "into one shard per collection run, dropping duplicate problems.",
    )
    sub = parser.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)
    info = sub.add_parser("info", help="summarize a dataset")
    info.add_argument("paths", nargs="+", help="dataset directories or shard files")
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    info.set_defaults(run=run_info)
    merge = sub.add_parser("merge", help="compact datasets into one directory")
    merge.add_argument("paths", nargs="+", help="dataset directories or shard files")
    merge.add_argument("-o", "--output", required=True, help="directory to write")
    merge.add_argument(
        "--compress", action="store_true", help="write gzip-compressed shards (*.msgpack.gz: a third of the bytes, for committed data)"
    )
    merge.set_defaults(run=run_merge)


def run_info(args: argparse.Namespace) -> int:
    from ..dataset import load_dataset, summarize

    dataset = load_dataset(args.paths)
    summary = summarize(dataset)
    summary["runs"] = [
        {k: run.environment.get(k) for k in ("date", "torch", "triton", "command")} for run in dataset.runs
    ]
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"device: {summary['hardware']}  shards: {summary['shards']}")
    print(f"problems: {summary['problems']:,}  pairs: {summary['pairs']:,}  failed pairs: {summary['failed_pairs']:,}")
    for key in ("split", "pairs_by_split", "op", "dtype", "layout", "bias", "generator", "source", "space"):
        print(f"{key}: " + ", ".join(f"{name} {count:,}" for name, count in summary[key].items()))
    return 0


def run_merge(args: argparse.Namespace) -> int:
    from ..dataset import load_dataset, merge_datasets

    written = merge_datasets(args.paths, args.output, compress=args.compress)
    print(f"{len(load_dataset(args.output)):,} problems in {len(written)} shard(s) -> {args.output}")
    return 0
