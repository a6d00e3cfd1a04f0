"""What Inductor emits for an addmm with N = 1 under each autotuning mode (GPU).

    python benchmarks/addmm_n1_probe.py

DIODE's single ATen pick and max-autotune DEFAULT both ran a pointwise kernel
(``triton_poi_fused_addmm_0``) beside the GEMM on addmms with N = 1 that plain Inductor compiles
to one ``extern_kernels.addmm``. Per problem and mode: the kernels of a fresh compile (every
cache off), its kernel calls and runtime, and for the first problem the whole generated code of
each mode, to find which lowering adds the kernel. The runtime is Triton's ``do_bench`` of the
compiled function, host time included: on GEMMs of a few microseconds it reads launch cost, not
the kernels (the e2e run times those rows).
"""

from __future__ import annotations

import re

import torch
import torch._inductor.config as inductor_config
from torch._inductor.utils import run_and_get_code
from triton.testing import do_bench

#: (M, N, K, dtype, TF32): the two N = 1 rows of the e2e runs, and N = 2 and 8 beside them
PROBLEMS = (
    (5, 1, 4392, torch.float32, True),
    (3, 1, 3482, torch.bfloat16, False),
    (5, 2, 4392, torch.float32, True),
    (5, 8, 4392, torch.float32, True),
    (64, 768, 3072, torch.float16, False),
    (1533, 3255, 2584, torch.float16, False),
)
#: mode: the Inductor options it compiles with
MODES = {
    "no_autotune": {},
    "max_autotune_aten": {"max_autotune_gemm": True, "max_autotune_gemm_backends": "ATEN"},
    "max_autotune_default": {"max_autotune_gemm": True},
    "diode_pick": {"max_autotune_gemm": True, "max_autotune_gemm_backends": "DIODE", "diode_fallback_to_autotune": False},
    "aten_no_shape_padding": {"max_autotune_gemm": True, "max_autotune_gemm_backends": "ATEN", "shape_padding": False},
}


def compiled(m, n, k, dtype, options):
    """The generated code of a fresh compile under ``options``, and its runtime (us, median of
    Triton's ``do_bench``, which flushes the L2 between runs)."""
    torch._dynamo.reset()
    bias = torch.randn(n, device="cuda", dtype=dtype)
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t()
    function = torch.compile(torch.addmm)
    with inductor_config.patch(options):
        _, code = run_and_get_code(function, bias, a, b)
        runtime = do_bench(lambda: function(bias, a, b), return_mode="median") * 1000
    return "\n".join(code), runtime


def main() -> None:
    inductor_config.force_disable_caches = True
    for index, (m, n, k, dtype, tf32) in enumerate(PROBLEMS):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for mode, options in MODES.items():
            try:
                code, runtime = compiled(m, n, k, dtype, options)
            except Exception as error:  # noqa: BLE001 - the probe reports what each mode raises
                print(f"addmm {m}x{n}x{k} {dtype} tf32={tf32} {mode}: raises {error!r}"[:400])
                continue
            kernels = sorted(set(re.findall(r"(triton_\w+|extern_kernels\.\w+|aten\.\w+\.\w+)\(", code)))
            calls = [line.strip() for line in code.splitlines() if "extern_kernels." in line or ".run(" in line]
            print(f"addmm {m}x{n}x{k} {dtype} tf32={tf32} {mode}: {runtime:.2f} us {kernels} {calls}")
            if index == 0:
                print(f"----- code of {mode}\n{code}\n-----")


if __name__ == "__main__":
    main()
