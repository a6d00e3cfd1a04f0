"""``diode status``: plugins, hardware, models and the options in effect."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status",
        help="show plugins, detected hardware, models and the options in effect",
        description="Show what DIODE sees: installed plugins and their hooks, the detected "
        "hardware, the models that apply to it (and which one is picked), the diode options in "
        "effect (after TORCHINDUCTOR_* environment variables) and this process's stats. "
        "An invalid TORCHINDUCTOR_DIODE_* variable is reported and the exit status is non-zero.",
    )
    parser.add_argument(
        "--hardware",
        metavar="NAME",
        help="a known device name (h100, a100, ...; `diode predict --hardware list`) or a device "
        "such as cuda:0 (default: cuda if available, else cpu)",
    )
    parser.add_argument("--device", action=_DeprecatedDevice, dest="hardware", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


class _DeprecatedDevice(argparse.Action):
    """``--device``, the earlier name of ``--hardware``: still accepted, with a note."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: --device is deprecated, use --hardware", file=sys.stderr)
        namespace.hardware = values


def run(args: argparse.Namespace) -> int:
    from ...options import DiodeOptionError
    from ...report import status

    report = status(args.hardware)
    errors = report["option_errors"]
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print(report)
    if errors:
        raise DiodeOptionError("; ".join(errors.values()))
    return 0


def _print(report: dict) -> None:
    print(f"diode-backend {report['version']}")
    hardware = report["hardware"]
    described = f"{hardware['name']} ({hardware['vendor']})" if hardware else "unknown (no plugin describes it)"
    print(f"hardware: {described}  [{report['requested']}]")
    print("plugins:")
    for plugin in report["plugins"]:
        print(f"  {plugin['name']}  [{plugin['distribution']}]  {', '.join(plugin['hooks'])}")
    print("models:")
    for model in report["models"]:
        mark = "*" if model["selected"] else ("+" if model["applies"] else " ")
        print(f"  {mark} {model['name']}: {model['description']}")
    print("  (* picked for this hardware, + applies to it)")
    print("options:")
    for name, value in report["options"].items():
        error = report["option_errors"].get(name)
        print(f"  {name} = {value!r}" + (f"  INVALID {error}" if error else ""))
    from ... import measured as measured_decisions, predicted as predicted_decisions
    from ...cache import default_cache

    cache, measured = default_cache().info(), default_cache(measured_decisions.FOLDER).info()
    picks = default_cache(predicted_decisions.FOLDER).info()
    print(f"prediction cache: {cache.directory} ({cache.entries} entries, "
          f"{measured.entries} measured decisions, {picks.entries} predicted decisions; `diode cache info`)")  # fmt: skip
