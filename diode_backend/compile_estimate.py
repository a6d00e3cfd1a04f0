"""How long a Triton GEMM candidate takes to compile, estimated from a table of measured compiles.

Compile time grows with a tile's output block and depends on the precision its dots run in
(float32 without TF32 unrolls into FMAs) and on the template: a 128x128 mm tile can take seconds
where a 32x64 one takes a fraction of one. DIODE's measured set leaves out candidates estimated
above ``diode_max_compile_s`` (:func:`~diode_backend.policy.measured_set`).

The table (``compile_seconds.json`` beside this module) holds the mean compile seconds of each
tile class, ``precision/template`` by output block area (``block_m * block_n``), as
``benchmarks/compile_time_table.py --fit`` writes it from its timed compiles. A tile's estimate is
its class's mean at the largest timed area not above its own (the smallest timed area for a
smaller tile); a class the table lacks has no estimate. Pure apart from reading the table once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path

from .problem import KIND_ATEN, KIND_TRITON, GemmProblem, HardwareInfo, KernelConfig
from .tf32 import triton_tf32_active

TABLE = Path(__file__).with_name("compile_seconds.json")


def precision(problem: GemmProblem, tf32_rule: str = "") -> str:
    """The precision class of ``problem``'s Triton dots under ``tf32_rule`` (empty: the running
    Inductor's): ``half`` (16-bit inputs), ``tf32`` or ``float32`` (as
    ``benchmarks/compile_outliers.py`` names them)."""
    if problem.dtype != "float32":
        return "half"
    return "tf32" if triton_tf32_active(problem, tf32_rule) else "float32"


def tile_class(problem: GemmProblem, config: KernelConfig, tf32_rule: str = "") -> str:
    """The table's key of ``config``'s class on ``problem``: ``precision/template``."""
    return f"{precision(problem, tf32_rule)}/{config.template}"


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, list[tuple[int, float]]]:
    classes = json.loads(TABLE.read_text())["seconds"]
    return {key: sorted((int(area), float(s)) for area, s in by_area.items()) for key, by_area in classes.items()}


@functools.lru_cache(maxsize=4096)
def _seconds(key: str, area: int) -> float | None:
    """The table's seconds for class ``key`` at block ``area`` (None: no such class)."""
    timed = _table().get(key)
    if not timed:
        return None
    return next((s for a, s in reversed(timed) if a <= area), timed[0][1])


def _estimate(precision_class: str, config: KernelConfig) -> float | None:
    if config.kind == KIND_ATEN:
        return 0.0
    if config.kind != KIND_TRITON or not config.block_m:
        return None
    return _seconds(f"{precision_class}/{config.template}", config.block_m * config.block_n)


def estimated_seconds(problem: GemmProblem, config: KernelConfig, tf32_rule: str = "") -> float | None:
    """Estimated compile seconds of ``config`` as ``problem``'s kernel: 0.0 for a library call
    (nothing to compile), None where the table has no class for it (another template kind)."""
    return _estimate(precision(problem, tf32_rule), config)


def estimates(problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo | None) -> list[float | None]:
    """:func:`estimated_seconds` of each of ``configs`` under ``hardware``'s TF32 rule (None: the
    running Inductor's)."""
    precision_class = precision(problem, hardware.triton_tf32_rule if hardware is not None else "")
    return [_estimate(precision_class, config) for config in configs]
