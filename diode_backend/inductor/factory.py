"""The value DIODE puts in ``config.inductor_choices_class``, and :func:`with_diode` for users
who have a choices class of their own. Importing this module does not import Inductor."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch._inductor.choices import InductorChoices


class ChoicesFactory:
    """The value DIODE puts in ``config.inductor_choices_class``: builds a ``DiodeChoices``, or
    your class with DIODE composed in front of it.

    Inductor's compile cache key reads the factory's ``uuid()`` (torch 2.13 calls the factory;
    torch 2.11 pickles the config value, so the pickle carries the uuid too).
    """

    def __init__(self, base: type[InductorChoices] | Callable[[], InductorChoices] | None = None):
        self.base = base

    def __call__(self) -> InductorChoices:
        from .choices import DiodeChoices, DiodeChoicesMixin

        if self.base is None:
            return DiodeChoices()
        instance = self.base()
        if not isinstance(instance, DiodeChoicesMixin):
            instance.__class__ = _composed(type(instance))
        return instance

    def __deepcopy__(self, memo: dict) -> ChoicesFactory:
        return self  # immutable; config.get_config_copy() deep-copies every value

    def __reduce__(self):
        return (_restore_factory, (self.base, self().uuid()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChoicesFactory) and other.base is self.base

    def __hash__(self) -> int:
        return hash((ChoicesFactory, self.base))

    def __repr__(self) -> str:
        return f"with_diode({self.base!r})" if self.base is not None else "DiodeChoices"


def _restore_factory(base, _uuid: str) -> ChoicesFactory:
    return ChoicesFactory(base)


@functools.cache
def _composed(cls: type) -> type:
    from .choices import DiodeChoicesMixin

    return type(f"Diode{cls.__name__}", (DiodeChoicesMixin, cls), {})


def with_diode(choices: type[InductorChoices] | Callable[[], InductorChoices]) -> ChoicesFactory:
    """Compose DIODE with your own choices class (or factory), for ``inductor_choices_class``::

        config.inductor_choices_class = diode_backend.with_diode(MyChoices)

    Your overrides keep working; DIODE's GEMM ranking runs in front of them (its methods call
    yours through ``super()``).
    """
    return ChoicesFactory(choices)
