"""``diode status``: plugins, hardware, models and the options in effect."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status",
        help="show plugins, detected hardware, models and the options in effect",
        description="Show what DIODE sees: installed plugins and their hooks, the detected "
        "hardware, the models that apply to it (and which one is picked), the diode options in "
        "effect (after TORCHINDUCTOR_* environment variables) and this process's stats.",
    )
    parser.add_argument("--device", help="device to describe (default: cuda if available, else cpu)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..report import status

    report = status(args.device)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    print(f"diode-backend {report['version']}  device: {report['device']}")
    hardware = report["hardware"]
    print(f"hardware: {hardware['name']} ({hardware['vendor']})" if hardware else "hardware: unknown")
    print("plugins:")
    for plugin in report["plugins"]:
        print(f"  {plugin['name']}  [{plugin['distribution']}]  {', '.join(plugin['hooks'])}")
    print("models:")
    for model in report["models"]:
        mark = "*" if model["selected"] else ("+" if model["applies"] else " ")
        print(f"  {mark} {model['name']}: {model['description']}")
    print("  (* picked for this device, + applies to it)")
    print("options:")
    for name, value in report["options"].items():
        print(f"  {name} = {value!r}")
    from ..cache import default_cache

    cache = default_cache().info()
    print(f"prediction cache: {cache.directory} ({cache.entries} entries; `diode cache info`)")
    return 0
