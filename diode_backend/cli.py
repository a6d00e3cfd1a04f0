"""The ``diode`` console script of installs whose metadata was written before the command moved
to :mod:`diode_backend.offline.cli` (reinstalling points the script there). An entry point, never
imported by the runtime."""

from .offline.cli import main

__all__ = ["main"]
