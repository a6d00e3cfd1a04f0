"""Compile time and steady-state runtime of single GEMMs under five compile modes (GPU).

Modes: ``no_autotune`` (plain torch.compile), ``max_autotune_default`` (Inductor's DEFAULT
ATEN+TRITON space, benchmarked), ``diode_fast`` (DIODE alone over the exhaustive space with the
model it picks for the GPU, its top pick compiled, nothing benchmarked),
``diode_fast_analytical`` (the same with the built-in analytical scorer), ``diode_top5`` (DIODE
ranks, Inductor benchmarks the top 5).

Method: one process; a warm-up compile first so one-time costs (Triton import, CUDA context)
stay out of every row; Inductor's caches off (``force_disable_caches``) so each compile is cold;
compile time = wall time of the first call after ``torch._dynamo.reset()``, synchronized;
runtime = ``triton.testing.do_bench`` median (25 ms warm-up, 200 ms of repetitions) of the
compiled function on fresh random inputs (never zeros).

    python benchmarks/gemm_compile_bench.py --out $OUT/gemm_compile.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch
import torch._inductor.config
import torch.nn.functional as F

# (name, op, batch, m, n, k, dtype, b transposed like nn.Linear's weight)
SHAPES = [
    ("decode M=1 proj", "mm", 1, 1, 4096, 4096, torch.bfloat16, True),
    ("decode M=8 mlp", "mm", 1, 8, 14336, 4096, torch.bfloat16, True),
    ("decode M=16 mlp", "mm", 1, 16, 11008, 4096, torch.float16, True),
    ("square 1024x4096x2048", "mm", 1, 1024, 4096, 2048, torch.float16, False),
    ("square 4096", "mm", 1, 4096, 4096, 4096, torch.bfloat16, False),
    ("tall-skinny 65536x128x64", "mm", 1, 65536, 128, 64, torch.bfloat16, False),
    ("LLM q-proj 2048x4096x4096", "addmm", 1, 2048, 4096, 4096, torch.bfloat16, True),
    ("LLM up-proj 2048x11008x4096", "mm", 1, 2048, 11008, 4096, torch.bfloat16, True),
    ("odd 1000^3 fp32", "mm", 1, 1000, 1000, 1000, torch.float32, False),
    ("attention bmm 32x512x512x64", "bmm", 32, 512, 512, 64, torch.bfloat16, False),
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


def make_case(op, batch, m, n, k, dtype, transposed):
    def rand(*shape):
        return torch.randn(*shape, device="cuda", dtype=dtype)

    if op == "bmm":
        return torch.bmm, (rand(batch, m, k), rand(batch, k, n))
    weight = rand(n, k) if transposed else rand(k, n).t()  # F.linear wants (n, k)
    if op == "addmm":
        return F.linear, (rand(m, k), weight, rand(n))
    return (lambda x, w: F.linear(x, w)), (rand(m, k), weight)


def measure(fn, args, options):
    import triton

    import diode_backend

    torch._dynamo.reset()
    diode_backend.reset_stats()
    compiled = torch.compile(fn, options=options)
    torch.cuda.synchronize()
    # an alias of torch.compiler.config's flag: config.patch takes it, compile options do not
    with torch._inductor.config.patch(force_disable_caches=True):
        start = time.perf_counter()
        out = compiled(*args)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - start
    reference = fn(*[a.double() for a in args]).float()
    error = ((out.float() - reference).norm() / reference.norm()).item()
    runtime_ms = triton.testing.do_bench(lambda: compiled(*args), warmup=25, rep=200, return_mode="median")
    stats = diode_backend.stats()
    return {
        "compile_s": round(compile_s, 3),
        "runtime_us": round(runtime_ms * 1e3, 2),
        "rel_error": error,
        "diode": stats["recent_decisions"][-1] if stats["recent_decisions"] else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    import triton

    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 rows measure true fp32
    warm_fn, warm_args = make_case("mm", 1, 256, 256, 256, torch.float16, False)
    for options in MODES.values():
        measure(warm_fn, warm_args, options)

    rows: list[dict] = []
    result = {
        "what": "single-GEMM compile time and runtime: no autotune vs max-autotune DEFAULT vs DIODE "
        "(each row's diode.model names the scorer DIODE picked)",
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "host": platform.node(),
        "command": "python benchmarks/gemm_compile_bench.py --out $OUT/gemm_compile.json",
        "rows": rows,
    }
    for name, op, batch, m, n, k, dtype, transposed in SHAPES:
        fn, fn_args = make_case(op, batch, m, n, k, dtype, transposed)
        row = {"shape": name, "op": op, "batch": batch, "m": m, "n": n, "k": k, "dtype": str(dtype)[6:], "b_transposed": transposed}
        for mode in args.modes.split(","):
            row[mode] = measure(fn, fn_args, MODES[mode])
            print(name, mode, row[mode], flush=True)
        rows.append(row)
        with open(args.out, "w") as f:  # after every row, so a cut-off run keeps what it measured
            json.dump(result, f, indent=2)
    header = f"{'shape':32} " + " ".join(f"{m:>22}" for m in args.modes.split(","))
    print(header)
    for row in rows:
        cells = [f"{row[m]['runtime_us']:9.1f}us {row[m]['compile_s']:6.2f}s" for m in args.modes.split(",")]
        print(f"{row['shape']:32} " + " ".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
