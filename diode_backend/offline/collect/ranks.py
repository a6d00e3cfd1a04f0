"""Which part of a sweep's plan this process times, when ``torchrun`` starts one process per GPU.

``torchrun`` (``torch.distributed.run``) tells each process its place through the environment:
``RANK`` and ``WORLD_SIZE`` over all hosts, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` on this
host, ``TORCHELASTIC_RESTART_COUNT`` after a restart. Ranks share nothing but the output
directory: each takes every ``WORLD_SIZE``-th problem of the plan from its ``RANK`` on (so
each rank keeps the plan's order, which shares compiled kernels between neighbours), and
writes shards named by its rank. No process group is needed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


@dataclass(frozen=True)
class Rank:
    """This process's place in a ``torchrun`` job; ``Rank()`` is a run of one process."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    restart: int = 0  # how many times torchrun has restarted the job

    def __post_init__(self) -> None:
        if not (0 <= self.rank < self.world_size and 0 <= self.local_rank < self.local_world_size <= self.world_size):
            raise ValueError(f"not a torchrun rank: {self}")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> Rank:
        """The rank ``torchrun`` gave this process, or ``Rank()`` outside torchrun. Raises
        ``ValueError`` when only some of torchrun's variables are set, or not to whole numbers."""
        present = [name for name in _VARIABLES if name in environ]
        if not present:
            return cls()
        if len(present) < len(_VARIABLES):
            missing = ", ".join(name for name in _VARIABLES if name not in environ)
            raise ValueError(f"{', '.join(present)} set but not {missing}: start the sweep with torchrun")
        try:
            values = [int(environ[name]) for name in _VARIABLES]
            restart = int(environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        except ValueError as err:
            raise ValueError(f"torchrun's variables must be whole numbers ({err})") from None
        return cls(*values, restart=restart)

    def share(self, planned: Sequence[T]) -> list[T]:
        """This rank's problems: every ``world_size``-th of the whole plan, from ``rank`` on.

        Taken from the whole plan (before finished problems are dropped), so that a restart with
        the same number of ranks gives each rank the same problems."""
        return list(planned[self.rank :: self.world_size])

    @property
    def tag(self) -> str:
        """What this rank's shard names carry: ranks of one job never write the same name."""
        return f"rank{self.rank}"

    def compile_workers(self) -> int:
        """Compile processes for this rank: the host's CPUs shared among its ranks, less one
        for the rank and one for its GPU worker."""
        return max(1, (os.cpu_count() or 2) // self.local_world_size - 2)

    def report_path(self, path: str | Path) -> Path:
        """Where this rank writes the report asked for at ``path`` (``run.json`` ->
        ``run.rank1.json`` when there are several ranks)."""
        path = Path(path)
        return path if self.world_size == 1 else path.with_suffix(f".{self.tag}{path.suffix}")

    def describe(self) -> str:
        return f"rank {self.rank} of {self.world_size}"
