"""Whether Inductor's shape padding (``pad_mm``) weighs padding for small GEMMs on this GPU, and
how often it pads the two held-out addmms it padded in one end-to-end run (GPU).

    python benchmarks/pad_mm_probe.py

``pad_mm`` pads a misaligned dimension only for GEMMs it deems compute-bound
(``is_mm_compute_bound``: arithmetic intensity above half the device's FLOP per byte, from
``get_device_tflops`` and ``get_gpu_dram_gbps``), and then only where its own benchmark at
compile time finds the padded GEMM faster. Prints the device rates Inductor reads, the verdict
for the two addmms, and how many of eight fresh compiles (no autotuning, every cache off) padded
each.
"""

from __future__ import annotations

import torch
import torch._inductor.config as inductor_config
from torch._inductor import utils as inductor_utils
from torch._inductor.fx_passes.pad_mm import is_mm_compute_bound
from torch._inductor.utils import run_and_get_code

#: (M, N, K, dtype) of the two addmms the end-to-end run saw padded.
ADDMMS = ((2, 320, 1280, torch.float16), (20, 768, 768, torch.bfloat16))
COMPILES = 8


def padded_compiles(m: int, n: int, k: int, dtype: torch.dtype) -> int:
    """Of :data:`COMPILES` fresh compiles of the addmm (row bias, B column-major), how many ran a
    pointwise kernel before the GEMM: the padding."""
    padded = 0
    for _ in range(COMPILES):
        torch._dynamo.reset()
        bias = torch.randn(n, device="cuda", dtype=dtype)
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(n, k, device="cuda", dtype=dtype).t()
        _, code = run_and_get_code(torch.compile(torch.addmm), bias, a, b)
        padded += "triton_poi" in code[0]
    return padded


def main() -> None:
    try:
        print("tflops", inductor_utils.get_device_tflops(torch.float16), "dram_gbps", inductor_utils.get_gpu_dram_gbps())
    except Exception as e:  # noqa: BLE001 - the probe reports whatever the rates raise
        print("rates raise:", repr(e))
    for m, n, k, dtype in ADDMMS:
        print(f"compute_bound({m},{k},{n} {dtype}):", is_mm_compute_bound(m, k, n, dtype))
    inductor_config.force_disable_caches = True
    for m, n, k, dtype in ADDMMS:
        print(f"addmm {m}x{n}x{k} {dtype}: padded in {padded_compiles(m, n, k, dtype)} of {COMPILES} fresh compiles (no autotuning)")


if __name__ == "__main__":
    main()
