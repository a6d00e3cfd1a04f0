"""The DIODE options: names, defaults, environment variables and validation.

They live in ``torch._inductor.config`` next to Inductor's own (``diode_backend.inductor``
injects them), so they work with attribute assignment, ``config.patch``,
``torch.compile(options=...)`` and ``TORCHINDUCTOR_<NAME>`` environment variables, and they are
part of Inductor's compile cache key. This module itself does not touch Inductor.
"""

from __future__ import annotations

import os
from collections.abc import Callable
import dataclasses
from dataclasses import dataclass
from typing import Any

BACKEND_NAME = "DIODE"
#: What ``DIODE`` alone in ``max_autotune_gemm_backends`` generates candidates from.
DEFAULT_CANDIDATE_BACKENDS = ("ATEN", "TRITON")
SEARCH_SPACES = ("EXHAUSTIVE", "DEFAULT")


class DiodeOptionError(ValueError):
    """A diode option was given a value of the wrong type or out of range."""


@dataclass(frozen=True)
class OptionSpec:
    name: str
    default: Any
    value_type: Any  # what torch.compile(options=...) type-checks against
    doc: str
    check: Callable[[str, Any], Any]

    @property
    def annotation(self) -> type:
        """The type of the checked value (``check`` turns an int threshold into a float)."""
        return type(self.default)

    @property
    def env_var(self) -> str:
        return f"TORCHINDUCTOR_{self.name.upper()}"


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        return value.strip().lower() in ("1", "true", "yes", "on")
    raise DiodeOptionError(f"{name}={value!r}: expected True or False (environment: 1 or 0)")


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a number or a string of one (not a bool), else None."""
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            pass
    return None


def _probability(name: str, value: Any) -> float:
    number = _number(value)
    if number is None or not 0.0 <= number <= 1.0:
        raise DiodeOptionError(f"{name}={value!r}: expected a number from 0.0 to 1.0 (a probability)")
    return number


def _positive_int(name: str, value: Any) -> int:
    number = 0
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            number = int(value)
        except ValueError:
            pass
    if number < 1:
        raise DiodeOptionError(f"{name}={value!r}: expected a whole number >= 1")
    return number


def _ratio(name: str, value: Any) -> float:
    number = _number(value)
    if number is None or not 1.0 <= number < float("inf"):
        raise DiodeOptionError(f"{name}={value!r}: expected a finite number >= 1.0 (a ratio of times)")
    return number


def _seconds(name: str, value: Any) -> float:
    number = _number(value)
    if number is None or not number > 0.0:
        raise DiodeOptionError(f"{name}={value!r}: expected a number of seconds > 0 (inf: no bound)")
    return number


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise DiodeOptionError(f"{name}={value!r}: expected a string ('' picks automatically)")
    return value


def _search_space(name: str, value: Any) -> str:
    if not isinstance(value, str) or value.upper() not in SEARCH_SPACES:
        raise DiodeOptionError(f"{name}={value!r}: expected one of {', '.join(SEARCH_SPACES)}")
    return value.upper()


#: The defaults of diode_confidence_threshold, diode_top_k and diode_measure_ratio are the ones
#: benchmarks/defaults_tradeoff.py selects for the shipped model (docs/models.md says how);
#: diode_max_compile_s's was chosen end to end on the model's early-stopping families
#: (docs/decisions.md, "Which tiles DIODE measures").
OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "fast_autotune", False, bool,
        "Trust the model: when its top pick is confident enough, compile that one kernel and "
        "benchmark nothing. False: DIODE measures the candidates that can win (diode_measure_ratio, "
        "diode_top_k) and Inductor compiles the fastest.",
        _bool,
    ),
    OptionSpec(
        "diode_confidence_threshold", 0.98, float | int,
        "Probability (0..1) that the top pick is within 5% of the fastest candidate, at or above "
        "which fast_autotune keeps the single pick.",
        _probability,
    ),
    OptionSpec(
        "diode_fallback_to_autotune", True, bool,
        "When there is no model, the op is unsupported or confidence is low: True autotunes: "
        "DIODE measures the candidates that can win when a model exists, Inductor autotunes as usual "
        "without one; False uses the best guess.",
        _bool,
    ),
    OptionSpec(
        "diode_cache_predictions", True, bool,
        "Keep rankings and decisions (measured and predicted) in the on-disk prediction cache "
        "so a repeated GEMM in a new process costs a file read, not an inference.",
        _bool,
    ),
    OptionSpec(
        "diode_top_k", 7, int,
        "At most how many candidates within diode_measure_ratio of the predicted best DIODE "
        "measures when it is not confident (every ATen candidate, the predicted-best Triton one and "
        "the unscored ones are measured besides).",
        _positive_int,
    ),
    OptionSpec(
        "diode_measure_ratio", 1.05, float | int,
        "When DIODE is not confident it measures the candidates predicted within this ratio "
        "(>= 1.0) of the predicted best time, capped at diode_top_k.",
        _ratio,
    ),
    OptionSpec(
        "diode_max_compile_s", 2.0, float | int,
        "When DIODE measures, it leaves out Triton candidates it estimates to take longer than "
        "this many seconds to compile (by the hardware's table of compile times, the "
        "diode_compile_seconds hook), unless none is under it; inf: no bound.",
        _seconds,
    ),
    OptionSpec(
        "diode_model", "", str,
        "Which scorer ranks candidates: '' picks by hardware, else a registered model name "
        "(see `diode models`) or a path to a model file.",
        _text,
    ),
    OptionSpec(
        "diode_search_space", "EXHAUSTIVE", str,
        "Triton config space DIODE ranks when DIODE alone is the backend: EXHAUSTIVE (all of "
        "Inductor's configs) or DEFAULT (Inductor's short list).",
        _search_space,
    ),
    OptionSpec(
        "diode_strict", False, bool,
        "Raise internal DIODE errors instead of falling back to Inductor's own behaviour "
        "(for debugging and tests).",
        _bool,
    ),
)  # fmt: skip
OPTIONS_BY_NAME = {spec.name: spec for spec in OPTIONS}


def env_default(spec: OptionSpec) -> tuple[Any, str | None]:
    """The option's default after its environment variable, and an error text if that is invalid."""
    raw = os.environ.get(spec.env_var)
    if raw is None:
        return spec.default, None
    try:
        return spec.check(spec.env_var, raw), None
    except DiodeOptionError as err:
        return spec.default, str(err)


def parse_backends(value: str) -> tuple[bool, tuple[str, ...]]:
    """Split ``max_autotune_gemm_backends``: (is DIODE in it, the other backends upper-cased)."""
    names = [part.strip().upper() for part in value.split(",") if part.strip()]
    others = tuple(name for name in names if name != BACKEND_NAME)
    return BACKEND_NAME in names, others


def _from_values(cls: type, read: Callable[[str], Any]) -> Any:
    """Build from a getter such as ``lambda name: getattr(inductor_config, name)``."""
    return cls(**{spec.name: spec.check(spec.name, read(spec.name)) for spec in OPTIONS})


#: The options in effect for one decision, validated: a frozen dataclass with one field per
#: option of :data:`OPTIONS`, named and defaulted as there, and ``from_values(read)``.
DiodeOptions = dataclasses.make_dataclass(
    "DiodeOptions",
    [(spec.name, spec.annotation, dataclasses.field(default=spec.default)) for spec in OPTIONS],
    frozen=True,
    namespace={"from_values": classmethod(_from_values), "__module__": __name__},
)
