"""Where the sweep's timing goes once every kernel is loaded (GPU): the GPU worker's per-problem
work (:func:`time_problem`: operands, checks, the timer) under cProfile, in one process.

    python benchmarks/sweep_profile.py LIST [--every N] [--out DIR]

LIST is a problem list on the listed space, as ``diode collect sweep LIST --space listed``
takes it; every N-th problem is profiled. Every Triton kernel is loaded first (modules
included), as the sweep's GPU worker does while it waits for compiles, so the profile shows
what is left of the timing when no load falls in it. Kernels come from Triton's cache
(``TRITON_CACHE_DIR``): run this after a sweep of the same problems filled it, or it compiles
them here, one at a time. DIR gets ``profile.txt`` (the top functions by own and cumulative
time), ``profile.pstats`` and ``phases.json``: the sweep's own split of the profiled seconds,
and the seconds of a second, unprofiled pass over the same problems (the profile's own cost).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import time
from pathlib import Path

import torch

from diode_backend.offline.collect import plan, shapes
from diode_backend.offline.collect.environment import hardware_of
from diode_backend.offline.collect.sweep import _compile_keys, _load, _load_compiled, time_problem
from diode_backend.timing import TimingMethod, make_timer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("list")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("sweep-profile"))
    args = parser.parse_args()
    device = "cuda:0"
    torch.cuda.set_device(device)
    torch.cuda.set_stream(torch.cuda.Stream())  # as the GPU worker: the graph timer captures there
    named = shapes.from_json(args.list)[:: args.every]
    planned = plan.plan(named, hardware_of(device), split="train", space="listed", listed=shapes.listed_configs(args.list))
    # loaded as the GPU worker loads what compiled while it waits, every kernel compiled
    keys = {key: index for index, key in enumerate(dict.fromkeys(k for item in planned for k in _compile_keys(item)))}
    known, kernels = dict.fromkeys(keys.values(), ""), {}
    started = time.perf_counter()
    _load_compiled(list(keys), keys, kernels, known)
    load_seconds = time.perf_counter() - started
    load = lambda key: _load(key, keys, kernels, known)  # noqa: E731

    timer = make_timer(TimingMethod())
    time_problem(planned[0], timer, load, device)  # first-use costs (cuBLAS handles, graph pools)
    phases: dict[str, float] = {}
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    pairs = sum(len(time_problem(item, timer, load, device, phases)[0].times_us) for item in planned)
    profile.disable()
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    for item in planned:  # cProfile's own cost: the same problems again, unprofiled
        time_problem(item, timer, load, device)
    again = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    profile.dump_stats(args.out / "profile.pstats")
    text = io.StringIO()
    for order in ("tottime", "cumulative"):
        pstats.Stats(profile, stream=text).sort_stats(order).print_stats(40)
    (args.out / "profile.txt").write_text(text.getvalue())
    summary = {
        "problems": len(planned), "pairs": pairs, "kernels": len(keys), "load_seconds": load_seconds,
        "profiled_seconds": seconds, "phases": phases, "unprofiled_seconds": again,
        "pairs_per_unprofiled_second": pairs / again,
    }  # fmt: skip
    (args.out / "phases.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
