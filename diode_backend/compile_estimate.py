"""How long a Triton GEMM candidate takes to compile, estimated from a table of measured compiles.

Compile time grows with a tile's output block and depends on the precision its dots run in
(float32 without TF32 unrolls into FMAs) and on the template: a 128x128 mm tile can take seconds
where a 32x64 one takes a fraction of one. DIODE's measured set leaves out candidates estimated
above ``diode_max_compile_s`` (:func:`~diode_backend.policy.measured_set`).

A table holds the mean compile seconds of each tile class, ``precision/template``, by output
block area (``block_m * block_n``), as ``benchmarks/compile_time_table.py --fit`` writes it from
timed compiles; the ``diode_compile_seconds`` hook says which table holds for a device (the
built-in: ``compile_seconds.json`` beside this module, timed on an H100, for NVIDIA GPUs). A
tile's estimate is its class's mean at the largest timed area not above its own (the smallest
timed area for a smaller tile); a class the table lacks, or a device with no table, has no
estimate.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path

from . import registry
from .problem import KIND_ATEN, KIND_TRITON, GemmProblem, HardwareInfo, KernelConfig
from .tf32 import triton_tf32_active


def precision(problem: GemmProblem, tf32_rule: str = "") -> str:
    """The precision class of ``problem``'s Triton dots under ``tf32_rule`` (empty: the running
    Inductor's): ``half`` (16-bit inputs), ``tf32`` or ``float32`` (as
    ``benchmarks/compile_outliers.py`` names them)."""
    if problem.dtype != "float32":
        return "half"
    return "tf32" if triton_tf32_active(problem, tf32_rule) else "float32"


@functools.lru_cache(maxsize=8)
def load_table(path: Path) -> dict[str, tuple[tuple[int, float], ...]]:
    """The table at ``path``: per class, ``(area, seconds)`` by area.

    :raises ValueError: naming the file, when it is not such a table.
    """
    try:
        classes = json.loads(Path(path).read_text())["seconds"]
        return {str(key): tuple(sorted((int(a), float(s)) for a, s in by_area.items())) for key, by_area in classes.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(
            f"{path}: not a table of compile seconds ({type(err).__name__}: {err}); "
            "write one with benchmarks/compile_time_table.py --fit"
        ) from None


@functools.lru_cache(maxsize=4096)
def _seconds(path: Path, key: str, area: int) -> float | None:
    """The seconds of class ``key`` at block ``area`` in the table at ``path`` (None: no such class)."""
    timed = load_table(path).get(key)
    if not timed:
        return None
    return next((s for a, s in reversed(timed) if a <= area), timed[0][1])


def _estimate(path: Path, precision_class: str, config: KernelConfig) -> float | None:
    """``config``'s estimate in the table at ``path``; its class is ``precision/template``."""
    if config.kind == KIND_ATEN:
        return 0.0
    if config.kind != KIND_TRITON or not config.block_m:
        return None
    return _seconds(path, f"{precision_class}/{config.template}", config.block_m * config.block_n)


def estimates(problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo | None) -> list[float | None]:
    """Estimated compile seconds of each of ``configs`` as ``problem``'s kernel, by
    ``hardware``'s table (:func:`~diode_backend.registry.compile_table`) under its TF32 rule:
    0.0 for a library call (nothing to compile), None where the table has no class for it
    (another template kind); all None where the hardware has no table."""
    table = registry.compile_table(hardware) if hardware is not None else None
    if table is None:
        return [None] * len(configs)
    precision_class = precision(problem, hardware.triton_tf32_rule)
    return [_estimate(table, precision_class, config) for config in configs]
