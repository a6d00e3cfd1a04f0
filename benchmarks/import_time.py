"""What diode-backend adds to ``import torch``.

Two measurements, each over many fresh processes (median):
1. ``python -X importtime -c "import torch"``: the cumulative import time of the modules the
   entry point loads (``diode_backend*`` and ``wrapt*``), read from the interpreter's own report;
2. wall-clock time of ``import torch`` with the plugin on, with ``DIODE_DISABLE=1`` (entry point
   found and returns at once) and with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` (no entry point runs).

    python benchmarks/import_time.py --runs 40 --out benchmarks/results/import_time_<device>.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time


def plugin_import_us() -> float:
    """Microseconds of import time spent in modules the entry point imports (self times)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import torch"], capture_output=True, text=True, check=True
    )
    total = 0
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        self_us, _cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        if name.startswith(("diode_backend", "wrapt")) and self_us.isdigit():
            total += int(self_us)
    return float(total)


def wall_ms(env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], env={**os.environ, **env}, check=True)
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--out", help="write the JSON result here")
    args = parser.parse_args()

    variants = {"plugin_on": {}, "diode_disable": {"DIODE_DISABLE": "1"}, "no_autoload": {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}}
    walls: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.runs):  # interleaved so drift affects every variant alike
        for name, env in variants.items():
            walls[name].append(wall_ms(env))
    importtime = [plugin_import_us() for _ in range(args.runs)]

    import torch

    result = {
        "what": "import torch cost added by diode-backend",
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "runs": args.runs,
        "plugin_modules_import_ms_median": statistics.median(importtime) / 1e3,
        "wall_ms_median": {name: statistics.median(values) for name, values in walls.items()},
        "wall_ms_stdev": {name: statistics.stdev(values) for name, values in walls.items()},
    }
    med = result["wall_ms_median"]
    result["added_wall_ms_vs_no_autoload"] = med["plugin_on"] - med["no_autoload"]
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
