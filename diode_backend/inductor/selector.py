"""Step 2 of a DIODE decision: filter the op's full choice list as Inductor's autotuner gets it.

torch 2.13 has ``AlgorithmSelectorCache.add_preprocessing_fn`` for this, torch 2.11 does not;
wrapping ``AlgorithmSelectorCache.__call__`` works on both, so it is the one mechanism used.
"""

from __future__ import annotations

import functools
from types import ModuleType

from .. import counters
from ..options import DiodeOptionError


def patch_selector(select_algorithm: ModuleType) -> None:
    """Wrap ``AlgorithmSelectorCache.__call__`` (idempotent); choices DIODE did not mark pass
    through untouched."""
    cls = select_algorithm.AlgorithmSelectorCache
    original = cls.__call__
    if getattr(original, "_diode_wrapped", False):
        return

    @functools.wraps(original)
    def __call__(self, name, choices, *args, **kwargs):
        choices = _select(choices)
        return original(self, name, choices, *args, **kwargs)

    __call__._diode_wrapped = True
    cls.__call__ = __call__


def _select(choices):
    from torch._inductor import config

    from .decide import select_final_choices

    try:
        return select_final_choices(choices)
    except DiodeOptionError:
        raise
    except Exception as err:
        if config.diode_strict:
            raise
        counters.record_error("final_selection", err)
        return choices
