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

import torch, torch._inductor.config as cfg
from torch._inductor.fx_passes.pad_mm import is_mm_compute_bound
from torch._inductor import utils as u
from torch._inductor.utils import run_and_get_code
try:
    print("tflops", u.get_device_tflops(torch.float16), "dram_gbps", u.get_gpu_dram_gbps())
except Exception as e:
    print("rates raise:", repr(e))
print("compute_bound(2,1280,320 fp16):", is_mm_compute_bound(2, 1280, 320, torch.float16))
print("compute_bound(20,768,768 bf16):", is_mm_compute_bound(20, 768, 768, torch.bfloat16))
cfg.force_disable_caches = True
for m, n, k, dt in [(2, 320, 1280, torch.float16), (20, 768, 768, torch.bfloat16)]:
    padded = 0
    for i in range(8):
        torch._dynamo.reset()
        bias = torch.randn(n, device="cuda", dtype=dt); a = torch.randn(m, k, device="cuda", dtype=dt); b = torch.randn(n, k, device="cuda", dtype=dt).t()
        _, code = run_and_get_code(torch.compile(torch.addmm), bias, a, b)
        padded += "triton_poi" in code[0]
    print(f"addmm {m}x{n}x{k} {dt}: padded in {padded} of 8 fresh compiles (no autotuning)")
