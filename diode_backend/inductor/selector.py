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

    from .decide import diode_requested, select_final_choices

    try:
        if diode_requested() and not _choices_class_has_diode():
            counters.record_fallback("choices_class_override")
            counters.warn_once(
                "choices_class_override",
                "DIODE is in max_autotune_gemm_backends but config.inductor_choices_class does not "
                "include DIODE, so Inductor autotunes as usual. Wrap your class: "
                "config.inductor_choices_class = diode_backend.with_diode(YourChoices)",
            )
            return choices
        return select_final_choices(choices)
    except (DiodeOptionError, KeyboardInterrupt):
        raise
    except BaseException as err:  # SystemExit from a plugin's scorer too
        if config.diode_strict:
            raise
        counters.record_error("final_selection", err)
        return choices


def _choices_class_has_diode() -> bool:
    from torch._inductor.virtualized import V

    from .choices import DiodeChoicesMixin

    return isinstance(V.choices, DiodeChoicesMixin)

