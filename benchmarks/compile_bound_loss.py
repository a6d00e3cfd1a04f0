"""What leaving slow-compiling tiles out of DIODE's measured set costs in runtime, read from the
timed dataset (CPU).

    python benchmarks/compile_bound_loss.py DATASET [--families stopping] [--bound S] [--out FILE]

For each problem of ``--families`` (``e2e_validation``'s: ``stopping``, ``held-out`` or names),
the fastest timed candidate that the compile bound keeps (its estimate at most ``--bound``,
default ``diode_max_compile_s``'s default, by the hardware's table: ``compile_estimate``; ATen
calls and candidates without an estimate are always kept) over the fastest of all, grouped by the
precision the timed Triton kernels ran in. This is the most the bound can cost a measured GEMM
when the measurement finds the fastest; it judges only what the collector timed, not Inductor's
whole list.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diode_backend.compile_estimate import estimates, precision  # noqa: E402
from diode_backend.offline.dataset import ProblemTimings  # noqa: E402
from diode_backend.offline.validate import spread  # noqa: E402
from diode_backend.problem import HardwareInfo  # noqa: E402


def loss(item: ProblemTimings, hardware: HardwareInfo, bound: float) -> float:
    """The fastest candidate of ``item`` the bound keeps over its fastest."""
    seconds = estimates(item.problem, item.configs, hardware)
    kept = [t for t, s in zip(item.times_us, seconds) if s is None or s <= bound]
    return min(kept) / min(item.times_us) if kept else 1.0


def summary(losses: list[float]) -> dict:
    """How many, :func:`~diode_backend.offline.validate.spread`, and the share over 1.02."""
    return {"problems": len(losses), **spread(losses), "over_1.02": sum(x > 1.02 for x in losses) / len(losses)}


def bound_loss(items: list[ProblemTimings], hardware_of: Callable[[ProblemTimings], HardwareInfo], bound: float) -> dict:
    """Per precision and over all: :func:`summary` of each problem's :func:`loss`."""
    groups: dict[str, list[float]] = defaultdict(list)
    for item in items:
        hardware = hardware_of(item)
        value = loss(item, hardware, bound)
        groups[precision(item.problem, hardware.triton_tf32_rule)].append(value)
        groups["all"].append(value)
    return {key: summary(values) for key, values in sorted(groups.items())}


def main(argv: list[str] | None = None) -> int:
    import e2e_validation as e2e

    from diode_backend.offline.dataset import load_dataset, timed_hardware
    from diode_backend.offline.train import inference_hardware
    from diode_backend.options import DiodeOptions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="+", help="dataset(s)")
    parser.add_argument("--families", default="stopping", help="e2e_validation's --families (default stopping)")
    parser.add_argument("--bound", type=float, default=DiodeOptions().diode_max_compile_s, help="seconds (default the option's)")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.data)
    items, families = e2e.problems_of(dataset, args.families)
    figures = {
        "benchmark": "compile_bound_loss",
        "data": args.data,
        "families": families,
        "bound_s": args.bound,
        "by_precision": bound_loss(items, timed_hardware(inference_hardware(dataset.hardware)), args.bound),
    }
    text = json.dumps(figures, indent=1) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
