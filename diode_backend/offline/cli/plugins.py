"""``diode plugins``: the installed plugins, the distributions they come from and their hooks."""

from __future__ import annotations

import argparse
import json
import os


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plugins",
        help="list plugins with their distributions and the hooks each implements",
        description="List every registered plugin: third-party ones from the 'diode' entry-point "
        "group (with the distribution and version that installed them), then DIODE's built-in "
        "ones, each with the hooks it implements. DIODE_DISABLE_PLUGINS=1 loads built-ins only.",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ...plugins import plugin_report

    report = plugin_report()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for plugin in report:
        print(f"{plugin['name']}  [{plugin['distribution']}]")
        print(f"    hooks: {', '.join(plugin['hooks']) or '(none)'}")
    if os.environ.get("DIODE_DISABLE_PLUGINS", "") not in ("", "0"):
        print("(DIODE_DISABLE_PLUGINS is set: third-party plugins were not loaded)")
    return 0
