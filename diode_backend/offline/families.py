"""Model families: the groups a dataset's problems are held out by.

Validation that draws problems at random from the training data's own shape generators hides
how a model does on architectures it never saw, so training holds out whole families
and validation reports by them. A problem traced from a real architecture carries the generator
``zoo:<family>`` (``zoo:llama``); its family is ``llama``. Problems of any other generator
(``lognormal``, ``decode``, ``model:my_net``) form one family named as the generator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .dataset import ProblemTimings

#: The generator prefix of problems traced from a real model family.
ZOO_PREFIX = "zoo:"


def family_of(record: ProblemTimings) -> str:
    """The family ``record`` belongs to: its generator without the ``zoo:`` prefix."""
    return record.generator.removeprefix(ZOO_PREFIX)


def parse_families(text: str) -> list[str]:
    """``"llama, whisper"`` -> ``["llama", "whisper"]`` (a ``zoo:`` prefix is accepted)."""
    names = [name.strip().removeprefix(ZOO_PREFIX) for name in text.split(",")]
    return [name for name in names if name]


def check_families(records: Iterable[ProblemTimings], names: Sequence[str]) -> list[str]:
    """``names`` sorted, each checked to be the family of some record.

    :raises ValueError: naming the first unknown family and the families the data has.
    """
    known = sorted({family_of(record) for record in records})
    for name in names:
        if name not in known:
            raise ValueError(f"unknown family {name!r}; the data has: {', '.join(known) or 'none'}")
    if not names:
        raise ValueError("no family named")
    return sorted(set(names))


def of_families(records: Iterable[ProblemTimings], names: Iterable[str]) -> list[ProblemTimings]:
    """The records of the families ``names``."""
    wanted = set(names)
    return [record for record in records if family_of(record) in wanted]


def without_families(records: Iterable[ProblemTimings], names: Iterable[str]) -> list[ProblemTimings]:
    """The records of every other family."""
    unwanted = set(names)
    return [record for record in records if family_of(record) not in unwanted]


def stopping_problems(records: Iterable[ProblemTimings], training: dict) -> list[ProblemTimings]:
    """The problems a model stopped its training early on and never trained on: the ``train``
    split of the early-stopping families its checkpoint's ``training`` record names
    (``stopping_families``). Defaults may be chosen on them; the held-out families report.

    :raises ValueError: when the records hold fewer of them than the model stopped on
        (``stopping_problems``): other data than the model's.
    """
    chosen = [record for record in of_families(records, training["stopping_families"]) if record.split == "train"]
    # runs timed after the model may add problems to these families, none trained on
    if len(chosen) < training["stopping_problems"]:
        raise ValueError(f"{len(chosen)} early-stopping problems in the data, the model stopped on {training['stopping_problems']}")
    return chosen
