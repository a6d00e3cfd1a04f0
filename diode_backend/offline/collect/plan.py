"""What a collection times: each problem with its split, its candidate space and its configs.

The candidate space of a problem comes from the ``diode_candidate_configs`` hook (DIODE's own
answer: Inductor's EXHAUSTIVE space for the shape plus ATen). A problem is timed on the
``exhaustive`` space, on ``sample/4``: ATen plus the stratified quarter of the Triton configs
chosen by :func:`stratified_quarter`, on ``sample/4+default``: that quarter plus Inductor's
max-autotune DEFAULT configs for the shape, so that what DEFAULT would pick is measured too, on
``default``: ATen and the DEFAULT configs alone, a twentieth of the compiles of ``sample/4`` for
plans that target ATen's calls or what Inductor itself would run, or on ``listed``: ATen and the
Triton configs the problem list names for the problem (each problem compiles its own Triton
kernels, so the space sets a collection's cost). ``listed`` times chosen candidates of problems
timed before, side by side in one session: a model's pick that was never timed, beside the
fastest candidate known, so that whether the pick is a hit is judged on one day's timings.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ...problem import KIND_TRITON, GemmProblem, HardwareInfo, KernelConfig
from .shapes import Named

SPACES = ("exhaustive", "sample/4", "sample/4+default", "default", "listed")
# Index of each value in Inductor's exhaustive lists (warps 1 appears after Inductor clamps
# warps to the tile): the sample is balanced over each parameter and each pair of parameters.
_BLOCKS = {16: 0, 32: 1, 64: 2, 128: 3, 256: 4}
_WARPS = {1: 0, 2: 1, 4: 2, 8: 3}


@dataclass(frozen=True)
class PlannedProblem:
    """One problem to time: its candidates (``configs``), split and shape generator."""

    problem: GemmProblem
    configs: tuple[KernelConfig, ...]
    split: str
    generator: str
    space: str


def stratified_quarter(configs: Sequence[KernelConfig]) -> list[KernelConfig]:
    """A quarter of the Triton configs (at least), every other candidate kept.

    Triton configs are kept when the sum of their parameter indices (block M, N, K, stages,
    warps) is 0 modulo 4: for any fixed value of one parameter, a quarter of the combinations of
    the others is kept, so no block size, depth or warp count is left out. The selection
    depends on the config alone, so problems share configs and compiled kernels. Where the
    shape's space is small enough for the rule to keep less than a quarter, configs with the
    next residues are added.
    """
    triton = [c for c in configs if c.kind == KIND_TRITON]
    residue = {c: _index_sum(c) % 4 for c in triton}
    need = -(-len(triton) // 4)
    keep: set[KernelConfig] = set()
    for r in range(4):
        keep.update(c for c in triton if residue[c] == r)
        if len(keep) >= need:
            break
    return [c for c in configs if c.kind != KIND_TRITON or c in keep]


def with_default(problem: GemmProblem, hardware: HardwareInfo, configs: Sequence[KernelConfig]) -> list[KernelConfig]:
    """``configs`` plus Inductor's DEFAULT Triton configs for ``problem`` that they lack."""
    from ... import registry

    have = set(configs)
    default = registry.candidate_configs(problem, hardware, "DEFAULT") or []
    return [*configs, *(c for c in default if c.kind == KIND_TRITON and c not in have)]


def _index_sum(c: KernelConfig) -> int:
    return _BLOCKS[c.block_m] + _BLOCKS[c.block_n] + _BLOCKS[c.block_k] + (c.num_stages - 1) + _WARPS[c.num_warps]


def candidate_configs(problem: GemmProblem, hardware: HardwareInfo) -> list[KernelConfig]:
    """The whole candidate space of ``problem`` from the plugins' ``diode_candidate_configs``."""
    from ... import registry  # imports torch: not when the `diode` parser reads SPACES

    configs = registry.candidate_configs(problem, hardware, "EXHAUSTIVE")
    if not configs:
        raise ValueError(f"no plugin offers candidates for {problem.describe()}")
    return configs


def plan(
    named: Iterable[Named], hardware: HardwareInfo, *, split: str, space: str,
    listed: Mapping[GemmProblem, Sequence[KernelConfig]] | None = None,
) -> list[PlannedProblem]:  # fmt: skip
    """Plan ``named`` problems (duplicates dropped) on ``space`` for ``split``; on ``listed``,
    ``listed`` names each problem's Triton configs (:func:`shapes.listed_configs`).

    :raises ValueError: an unknown space; on ``listed``, a problem with no configs listed or a
        listed config outside its shape's space.
    """
    if space not in SPACES:
        raise ValueError(f"space must be one of {SPACES}, not {space!r}")
    planned, seen = [], set()
    for generator, problem in named:
        if problem in seen:
            continue
        seen.add(problem)
        configs = candidate_configs(problem, hardware)
        if space == "sample/4":
            configs = stratified_quarter(configs)
        elif space == "sample/4+default":
            configs = with_default(problem, hardware, stratified_quarter(configs))
        elif space == "default":
            configs = with_default(problem, hardware, [c for c in configs if c.kind != KIND_TRITON])
        elif space == "listed":
            configs = _listed(problem, configs, (listed or {}).get(problem, ()))
        planned.append(PlannedProblem(problem, tuple(configs), split, generator, space))
    return planned


def _listed(problem: GemmProblem, space: Sequence[KernelConfig], listed: Sequence[KernelConfig]) -> list[KernelConfig]:
    """ATen's candidates of ``space`` and the Triton configs ``listed``, in ``space``'s order."""
    if not listed:
        raise ValueError(f"{problem.describe()}: the space 'listed' times the configs in each problem's entry ('configs'), and this one lists none")
    outside = [c.describe() for c in listed if c not in space]
    if outside:
        raise ValueError(f"{problem.describe()}: listed configs not in its candidate space: {', '.join(outside)}")
    wanted = set(listed)
    return [c for c in space if c.kind != KIND_TRITON or c in wanted]


def split_problems(named: Sequence[Named], validation: int, seed: int = 0) -> tuple[list[Named], list[Named]]:
    """Split by problem: ``validation`` problems drawn at random (seeded), the rest train."""
    order = list(range(len(named)))
    random.Random(seed).shuffle(order)
    chosen = set(order[:validation])
    return [x for i, x in enumerate(named) if i not in chosen], [x for i, x in enumerate(named) if i in chosen]
