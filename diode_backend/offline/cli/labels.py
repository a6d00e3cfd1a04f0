"""``--pick-labels``, as ``diode train`` and ``diode validate`` take it (parsing imports no torch)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_pick_labels(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--pick-labels", nargs="+", type=Path, default=[], metavar="DATA", help=help)


def read_pick_labels(paths: list[Path], hardware_key: str, option: str = "--pick-labels") -> dict[Any, Any]:
    """The pick labels under ``paths`` by problem (``offline.pick_labels.load_pick_labels``); a
    dataset error is one line naming ``option``."""
    from ..dataset import DatasetError
    from ..pick_labels import load_pick_labels
    from . import UsageError

    try:
        return load_pick_labels(paths, hardware_key)
    except DatasetError as err:
        raise UsageError(f"{option}: {err}") from None
