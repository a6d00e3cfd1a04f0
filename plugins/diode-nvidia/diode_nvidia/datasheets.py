"""Dense (no sparsity) peak rates from NVIDIA's datasheets: TFLOP/s per dtype and GB/s.

Keys are matched as substrings of ``torch.cuda.get_device_properties().name``, first match wins,
so more specific names come first.
"""

from __future__ import annotations

_T = dict[str, float]


def _rates(half: float, tf32: float, fp32: float) -> _T:
    return {"float16": half, "bfloat16": half, "tf32": tf32, "float32": fp32}


DATASHEETS: tuple[tuple[str, _T, float], ...] = (
    ("H200", _rates(989.4, 494.7, 66.9), 4800.0),
    ("H100 NVL", _rates(835.0, 417.5, 60.0), 3900.0),
    ("H100 PCIe", _rates(756.0, 378.0, 51.2), 2000.0),
    ("H100", _rates(989.4, 494.7, 66.9), 3350.0),  # SXM5 80GB HBM3
    ("A100-SXM4-80GB", _rates(312.0, 156.0, 19.5), 2039.0),
    ("A100 80GB PCIe", _rates(312.0, 156.0, 19.5), 1935.0),
    ("A100", _rates(312.0, 156.0, 19.5), 1555.0),
    ("L40S", _rates(362.05, 183.0, 91.6), 864.0),
    ("L4", _rates(121.0, 60.0, 30.3), 300.0),
    ("A10G", _rates(70.0, 35.0, 31.2), 600.0),
    ("A10", _rates(125.0, 62.5, 31.2), 600.0),
)


def peaks_for(device_name: str) -> tuple[_T, float] | None:
    """``(tflops_by_dtype, memory_gbps)`` for a device name, or None if it is not listed."""
    for key, tflops, bandwidth in DATASHEETS:
        if key in device_name:
            return tflops, bandwidth
    return None
