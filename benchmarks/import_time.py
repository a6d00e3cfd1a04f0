"""What diode-backend adds to ``import torch``.

Three measurements, each over many fresh processes (median):
1. ``python -X importtime -c "import torch"``: the import time of the modules the entry point
   loads (``diode_backend*`` and ``wrapt*``, self times), read from the interpreter's own report;
2. the entry point itself, timed in-process: with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``,
   ``import torch``, then load and call the ``diode`` entry point as torch would. This is what
   the plugin adds to ``import torch`` (it runs last there), free of the noise of the seconds
   that the rest of ``import torch`` takes;
3. wall-clock time of ``import torch`` with the plugin on, with ``DIODE_DISABLE=1`` (entry point
   found and returns at once) and with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` (no entry point
   runs), in a shuffled order each round. Its spread is hundreds of ms, so it only bounds
   gross regressions.

    python benchmarks/import_time.py --runs 40 --out benchmarks/results/import_time_<device>.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
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


_ENTRY_POINT = """
import time
from importlib.metadata import entry_points
import torch
start = time.perf_counter()
for ep in entry_points(group="torch.backends"):
    if ep.name == "diode":
        ep.load()()
print((time.perf_counter() - start) * 1e3)
"""


def entry_point_ms() -> float:
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    result = subprocess.run([sys.executable, "-c", _ENTRY_POINT], env=env, capture_output=True, text=True, check=True)
    return float(result.stdout.strip().splitlines()[-1])


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
    order = list(variants)
    for _ in range(args.runs):  # interleaved and shuffled so drift affects every variant alike
        random.shuffle(order)
        for name in order:
            walls[name].append(wall_ms(variants[name]))
    importtime = [plugin_import_us() for _ in range(args.runs)]
    entry = [entry_point_ms() for _ in range(args.runs)]

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
        "entry_point_ms_median": statistics.median(entry),
        "entry_point_ms_max": max(entry),
        "wall_ms_median": {name: statistics.median(values) for name, values in walls.items()},
        "wall_ms_stdev": {name: statistics.stdev(values) for name, values in walls.items()},
    }
    med = result["wall_ms_median"]
    result["added_wall_ms_vs_no_autoload"] = med["plugin_on"] - med["no_autoload"]
    result["added_wall_ms_vs_diode_disable"] = med["plugin_on"] - med["diode_disable"]
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
