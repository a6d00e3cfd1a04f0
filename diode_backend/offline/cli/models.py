"""``diode models``: every model DIODE can use, where it comes from, whether it applies to the
hardware and which one would be picked."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "models",
        help="list models: source, whether each applies to the hardware, which is picked",
        description="List every model (scorer) DIODE can rank with: built-in, shipped in "
        "trained_models/, on DIODE_MODELS_PATH, or registered by plugins. For each: where it "
        "comes from, whether it applies to the hardware, whether it would be picked (the "
        "TORCHINDUCTOR_DIODE_MODEL environment variable is honoured), and its manifest (version, "
        "hardware, ops, dtypes, candidate kinds, feature schema, validation metrics); then why the picked one "
        "was picked. Among the models that apply, the highest priority wins; at equal "
        "priority, the lowest validated top-1 regret (a model without validation figures last).",
    )
    parser.add_argument(
        "--hardware",
        metavar="NAME",
        help="a known device name (e.g. h100; see `diode predict --help`) or a device such as "
        "cuda:0 (default: the detected device)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="load every model (weights, checksum, feature schema) and report which cannot be used",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ... import catalog, registry
    from ...options import OPTIONS_BY_NAME, env_default

    hardware = catalog.resolve_hardware(args.hardware)
    requested, error = env_default(OPTIONS_BY_NAME["diode_model"])
    if error:
        raise ValueError(error)
    picked = catalog.pick_entry(hardware, requested)
    reason = catalog.pick_reason(hardware, picked, requested)
    sources = _source_labels(registry.scorer_sources())
    entries = list(catalog.scorer_entries().values())
    if picked is not None and picked.name not in {entry.name for entry in entries}:
        entries.append(picked)  # a model named by path
    rows = [_row(entry, hardware, picked, sources, args.check) for entry in entries]
    from ...model.entries import broken_manifests

    broken = {str(folder): error for folder, error in broken_manifests().items()}
    failed = args.check and (bool(broken) or not all(row["usable"] for row in rows))
    if args.json:
        report = {"hardware": hardware.to_dict(), "models": rows, "picked_because": reason, "broken_manifests": broken}
        print(json.dumps(report, indent=2, default=str))
        return 1 if failed else 0
    print(f"hardware: {hardware.name}")
    for row in rows:
        mark = "*" if row["picked"] else ("+" if row["applies"] else " ")
        print(f"{mark} {row['name']}  [{row['source']}]  priority {row['priority']}")
        print(f"      {row['description']}")
        manifest = row.get("manifest")
        if manifest:
            print(
                f"      hardware {', '.join(manifest['hardware']) or '(by name only)'}; "
                f"ops {', '.join(manifest['ops'])}; dtypes {', '.join(manifest['dtypes'])}; "
                + (f"kinds {', '.join(manifest['kinds'])}; " if "kinds" in manifest else "")
                + f"features {manifest['feature_schema']} v{manifest['feature_version']}"
            )
            if manifest["metrics"]:
                metrics = ", ".join(f"{k} {_number(v)}" for k, v in manifest["metrics"].items())
                print(f"      metrics: {metrics}")
        if "usable" in row:
            print(f"      check: {'ok' if row['usable'] else row['error']}")
    for error in broken.values():  # the error names the manifest and what is wrong with it
        print(f"! skipped: {error}")
    print("(* picked for this hardware, + applies to it)")
    print(f"picked {picked.name if picked else 'nothing'}: {reason}")
    return 1 if failed else 0


def _row(entry: Any, hardware: Any, picked: Any, sources: dict[str, str], check: bool) -> dict[str, Any]:
    from ... import catalog, registry

    manifest = getattr(entry, "manifest", None)
    row: dict[str, Any] = {
        "name": entry.name,
        "source": getattr(entry, "source", "") or sources.get(entry.name, "registered"),
        "applies": bool(catalog.entry_applies(entry, hardware)),
        "picked": picked is not None and picked.name == entry.name,
        "priority": entry.priority,
        "description": entry.description,
        "path": getattr(entry, "path", ""),
        "manifest": manifest.to_dict() if manifest is not None else None,
    }
    if check:
        try:
            registry.load_scorer(entry)
            row.update(usable=True, error="")
        except KeyboardInterrupt:
            raise
        except BaseException as err:  # every kind of failure, a plugin's sys.exit() too: one line each
            row.update(usable=False, error=f"{type(err).__name__}: {err}")
    return row


def _source_labels(plugin_of: dict[str, str]) -> dict[str, str]:
    """Scorer name -> ``built-in`` or ``plugin NAME (DISTRIBUTION VERSION)``."""
    from ...plugins import plugin_report

    distributions = {p["name"]: p["distribution"] for p in plugin_report()}
    labels = {}
    for name, plugin in plugin_of.items():
        distribution = distributions.get(plugin, "-")
        labels[name] = "built-in" if distribution == "built-in" else f"plugin {plugin} ({distribution})"
    return labels


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
