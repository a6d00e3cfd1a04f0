"""How long the ``diode`` command takes to answer, over fresh processes (median, min, max):
``--help`` and ``--version`` (which must not import torch), ``status`` (imports torch and the
plugins) for comparison. Interleaved round robin so that machine drift spreads over all three.

    python benchmarks/cli_startup.py --runs 20 --out benchmarks/results/cli_startup-cpu.json
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
from datetime import datetime, timezone

COMMANDS = {"help": ["--help"], "version": ["--version"], "status": ["status", "--hardware", "h100"]}


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "diode_backend", *argv], capture_output=True, check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", help="JSON file to write")
    args = parser.parse_args(argv)
    for command in COMMANDS.values():
        seconds(command)  # page cache warm for every command alike
    times = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, command in COMMANDS.items():
            times[name].append(seconds(command))
    import torch

    result = {
        "benchmark": "cli_startup",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__},
        "command": "python -m diode_backend ARGS, a fresh process each run",
        "runs": args.runs,
        "seconds": {
            name: {"median": statistics.median(t), "min": min(t), "max": max(t), "argv": COMMANDS[name]} for name, t in times.items()
        },
    }
    text = json.dumps(result, indent=2) + "\n"
    if args.out:
        with open(args.out, "w") as out:
            out.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
