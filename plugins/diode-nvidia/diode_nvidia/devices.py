"""NVIDIA devices that can be named without having one (``diode predict --hardware h100``).

Each row is what ``torch.cuda.get_device_properties()`` reports on that device (name, SM count,
compute capability, memory, L2, opt-in shared memory per block, clock), so that offline
descriptions equal detected ones. H100 and H200 rows were read on real devices (torch 2.11);
the others come from NVIDIA's datasheets and CUDA's per-architecture limits.
"""

from __future__ import annotations

from diode_backend.problem import HOPPER_SHARED_MEMORY_PER_BLOCK, HardwareInfo

from .datasheets import peaks_for

_MIB = 2**20
_HOPPER_SMEM = HOPPER_SHARED_MEMORY_PER_BLOCK  # 227 KiB opt-in per block, sm_90
_AMPERE_SMEM = 166912  # 163 KiB, sm_80
_ADA_SMEM = 101376  # 99 KiB, sm_86 / sm_89

# short names, device name, SMs, compute capability, memory MiB, L2 MiB, smem per block, clock MHz
KNOWN_DEVICES: tuple[tuple[tuple[str, ...], str, int, tuple[int, int], int, int, int, int], ...] = (
    (("h100", "h100-sxm"), "NVIDIA H100 80GB HBM3", 132, (9, 0), 81559, 50, _HOPPER_SMEM, 1980),
    (("h100-pcie",), "NVIDIA H100 PCIe", 114, (9, 0), 81559, 50, _HOPPER_SMEM, 1755),
    (("h200",), "NVIDIA H200", 132, (9, 0), 143771, 60, _HOPPER_SMEM, 1980),
    (("a100", "a100-80gb"), "NVIDIA A100-SXM4-80GB", 108, (8, 0), 81038, 40, _AMPERE_SMEM, 1410),
    (("a100-40gb",), "NVIDIA A100-SXM4-40GB", 108, (8, 0), 40536, 40, _AMPERE_SMEM, 1410),
    (("l40s",), "NVIDIA L40S", 142, (8, 9), 45589, 96, _ADA_SMEM, 2520),
    (("l4",), "NVIDIA L4", 58, (8, 9), 22478, 48, _ADA_SMEM, 2040),
    (("a10g",), "NVIDIA A10G", 80, (8, 6), 22564, 6, _ADA_SMEM, 1710),
)  # fmt: skip


def known_devices() -> list[tuple[str, HardwareInfo]]:
    """``(short name, description)`` for every short name, peak rates included."""
    rows = []
    for names, device, sms, capability, memory_mib, l2_mib, smem, clock in KNOWN_DEVICES:
        tflops, bandwidth = peaks_for(device) or ({}, None)
        hardware = HardwareInfo(
            name=device,
            vendor="nvidia",
            device_type="cuda",
            sm_count=sms,
            compute_capability=capability,
            memory_bytes=memory_mib * _MIB,
            l2_bytes=l2_mib * _MIB,
            shared_memory_per_block=smem,
            clock_mhz=clock,
            peak_tflops=dict(tflops),
            memory_bandwidth_gbps=bandwidth,
        )
        rows += [(name, hardware) for name in names]
    return rows
