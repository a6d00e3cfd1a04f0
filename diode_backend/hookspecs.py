"""The hook specifications that hardware plugins implement.

A plugin is a module (or object) with functions decorated by :data:`diode_backend.hookimpl`,
exposed through the ``diode`` entry-point group. Built-in behaviour is registered the same way,
after the entry points, with ``trylast=True`` so that any installed plugin wins.
See ``docs/plugins.md`` for a walk-through built on ``plugins/diode-example``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .features import FeatureExtractor
    from .problem import GemmProblem, HardwareInfo, KernelConfig
    from .scorer import ScorerEntry

PROJECT_NAME = "diode"
hookspec = pluggy.HookspecMarker(PROJECT_NAME)


# -- hardware ---------------------------------------------------------------------------------


@hookspec(firstresult=True)
def diode_detect_hardware(device: str) -> HardwareInfo | None:
    """Describe the device that a GEMM will run on.

    Called once per device per process, when DIODE first ranks a GEMM on it.
    Stops at the first non-None result.

    :param device: a ``torch.device`` string, e.g. ``"cuda:0"`` or ``"cpu"``.
    :return: the hardware description, or ``None`` if this plugin does not know the device.
    """


@hookspec
def diode_known_hardware(register: Callable[[str, HardwareInfo], None]) -> None:
    """Contribute descriptions of devices that users can name without having one.

    Called once, when a device is named offline (``diode predict --hardware h100``,
    ``diode models --hardware h100``). The description should equal what
    :func:`diode_detect_hardware` returns on the real device, so that offline predictions match.

    :param register: call it as ``register(name, hardware)`` for each short name (matched
        case-insensitively, e.g. ``"h100"``); the first registration of a name wins.
    """


# -- features ---------------------------------------------------------------------------------


@hookspec
def diode_register_feature_extractors(register: Callable[[FeatureExtractor], None]) -> None:
    """Contribute feature extractors, each under its own schema name.

    Called once, when DIODE first needs a feature extractor. A learned model records the schema
    name and version it was trained with and is given the extractor registered under that name.

    :param register: call it with each :class:`~diode_backend.features.FeatureExtractor`.
    """


# -- candidates -------------------------------------------------------------------------------


@hookspec(firstresult=True)
def diode_candidate_configs(
    problem: GemmProblem, hardware: HardwareInfo, search_space: str
) -> list[KernelConfig] | None:
    """The candidate kernel configs of ``problem`` outside ``torch.compile``: what ``diode
    collect`` times, ``diode predict`` ranks and ``diode validate`` takes as Inductor's list.

    Inside ``torch.compile`` the candidates are Inductor's own. DIODE's built-in answer is
    Inductor's (``diode_backend.inductor.candidates``). Stops at the first non-None result.

    :param problem: the GEMM.
    :param hardware: the device it runs on.
    :param search_space: ``"EXHAUSTIVE"`` (every config max-autotune can generate) or
        ``"DEFAULT"`` (its short list); an implementation may leave it out of its signature.
    :return: the configs, or ``None`` to leave the choice to the next plugin.
    """


@hookspec(firstresult=True)
def diode_compile_seconds(hardware: HardwareInfo) -> Path | None:
    """The table of how long Triton GEMM tiles take to compile on ``hardware``, from which DIODE
    estimates its candidates' compile time and leaves the slow ones out of what it measures
    (``diode_max_compile_s``).

    Called once per hardware per process, when DIODE first measures on it. DIODE's built-in
    answer is its H100 table for NVIDIA GPUs. Stops at the first non-None result.

    :param hardware: the device the kernels compile for.
    :return: the path of a JSON table in the format of ``diode_backend/compile_seconds.json``
        (``benchmarks/compile_time_table.py --fit`` writes one from timed compiles), or ``None``
        to leave the choice to the next plugin.
    """


# -- models -----------------------------------------------------------------------------------


@hookspec
def diode_register_scorers(register: Callable[[ScorerEntry], None]) -> None:
    """Contribute scorers (analytical or learned models) that rank candidates.

    Called once, when DIODE first needs a scorer. Entries are loaded lazily: only the one that is
    picked (automatically by hardware and priority, or by name through ``diode_model``) is built.

    :param register: call it with each :class:`~diode_backend.scorer.ScorerEntry`.
    """
