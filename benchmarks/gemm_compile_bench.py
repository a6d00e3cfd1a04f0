"""Compile time and steady-state runtime of single GEMMs under five compile modes (GPU).

Modes: ``no_autotune`` (plain torch.compile), ``max_autotune_default`` (Inductor's DEFAULT
ATEN+TRITON space, benchmarked), ``diode_fast`` (DIODE alone over the exhaustive space with the
model it picks for the GPU, its top pick compiled, nothing benchmarked),
``diode_fast_analytical`` (the same with the built-in analytical scorer), ``diode_top5`` (DIODE
ranks, Inductor benchmarks the top 5).

Method: ``benchmarks/e2e_validation.py``'s, shared with it: one process; a warm-up compile per
mode first so one-time costs (Triton import, CUDA context) stay out of every row; Inductor's
caches off and Triton's cache in a fresh folder, so each compile is cold; compile time = wall
time of the mode's first call, synchronized; every mode's compiled function timed together, runs
interleaved; runtime = its GPU time as the dataset's candidates are timed (``diode_backend.timing``:
CUDA events, L2 flushed and the launch's host time covered before each run, median of 20 to
200 runs), on fresh random inputs (never zeros). Runs before commit c66420c (2026-11-23) used
``triton.testing.do_bench`` of the compiled function, which counts the host's dispatch time on
small GEMMs: the same kernel read 14.3 us in one run and 23.6 us in the next.

    python benchmarks/gemm_compile_bench.py --out $OUT/gemm_compile.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time

from e2e_validation import TIMING, make_case, measure_row, set_tf32  # sets up the caches before torch loads

import torch

from diode_backend.timing import Timer, TimingMethod
from diode_backend.problem import GemmProblem

SHAPES = [
    ("decode M=1 proj", GemmProblem("mm", 1, 4096, 4096, dtype="bfloat16", b_layout="col")),
    ("decode M=8 mlp", GemmProblem("mm", 8, 14336, 4096, dtype="bfloat16", b_layout="col")),
    ("decode M=16 mlp", GemmProblem("mm", 16, 11008, 4096, dtype="float16", b_layout="col")),
    ("square 1024x4096x2048", GemmProblem("mm", 1024, 4096, 2048, dtype="float16")),
    ("square 4096", GemmProblem("mm", 4096, 4096, 4096, dtype="bfloat16")),
    ("tall-skinny 65536x128x64", GemmProblem("mm", 65536, 128, 64, dtype="bfloat16")),
    ("LLM q-proj 2048x4096x4096", GemmProblem("addmm", 2048, 4096, 4096, dtype="bfloat16", b_layout="col", bias="row")),
    ("LLM up-proj 2048x11008x4096", GemmProblem("mm", 2048, 11008, 4096, dtype="bfloat16", b_layout="col")),
    ("odd 1000^3 fp32", GemmProblem("mm", 1000, 1000, 1000, dtype="float32")),  # true fp32, no TF32
    ("attention bmm 32x512x512x64", GemmProblem("bmm", 512, 512, 64, batch=32, dtype="bfloat16")),
]

MODES = {
    "no_autotune": {},
    "max_autotune_default": {"max_autotune": True, "max_autotune_gemm_backends": "ATEN,TRITON"},
    "diode_fast": {
        "max_autotune": True,
        "max_autotune_gemm_backends": "DIODE",
        "fast_autotune": True,
        "diode_fallback_to_autotune": False,
    },
    "diode_fast_analytical": {
        "max_autotune": True,
        "max_autotune_gemm_backends": "DIODE",
        "fast_autotune": True,
        "diode_fallback_to_autotune": False,
        "diode_model": "analytical",
    },
    "diode_top5": {"max_autotune": True, "max_autotune_gemm_backends": "DIODE", "diode_top_k": 5},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    modes = args.modes.split(",")
    import triton

    from torch._inductor import config

    config.force_disable_caches = True  # every compile cold (not a torch.compile option)
    timer = Timer(TimingMethod(**TIMING))
    caches = tempfile.mkdtemp(prefix="diode-gemm-bench-")  # each DIODE mode's prediction cache, fresh
    warm_fn, warm_args = make_case(GemmProblem("mm", 256, 256, 256))
    measure_row(warm_fn, warm_args, modes, timer, caches, MODES)

    rows: list[dict] = []
    result = {
        "what": "single-GEMM compile time and runtime: no autotune vs max-autotune DEFAULT vs DIODE "
        "(each row's diode.decision.model names the scorer DIODE picked)",
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "host": platform.node(),
        "command": "python " + " ".join(sys.argv),
        "timing": timer.method.describe(),
        "rows": rows,
    }
    for name, problem in SHAPES:
        set_tf32(problem)
        fn, fn_args = make_case(problem)
        row = {"shape": name, "problem": problem.describe(), **measure_row(fn, fn_args, modes, timer, caches, MODES)}
        for mode in modes:
            print(name, mode, row[mode], flush=True)
        rows.append(row)
        with open(args.out, "w") as f:  # after every row, so a cut-off run keeps what it measured
            json.dump(result, f, indent=2)
    print(f"{'shape':32} " + " ".join(f"{m:>22}" for m in modes))
    for row in rows:
        cells = [f"{row[m]['runtime_us']:9.1f}us {row[m]['compile_s']:6.2f}s" for m in modes]
        print(f"{row['shape']:32} " + " ".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
