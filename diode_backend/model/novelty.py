"""How unlike its training problems a GEMM is, as a factor of the confidence.

An ensemble's members share the bias of their common training data, so on a kind of problem none
of them saw they can agree and be wrong together. So the confidence also looks at the problem
itself: its distance to the nearest training problem in a space of log2 sizes and kind
(:func:`problem_descriptor`), turned into a factor ``familiarity = exp(-distance / scale)`` of
the raw score. The training problems' descriptors and the scale are stored in the checkpoint
under ``"novelty"``::

    {"version": 1, "support": float32 tensor [P, D], "scale": float}

``scale`` is chosen on the held-out families (those that also fit the calibration) as the one of
:data:`SCALES` under which the combined score best tells hits from misses (area under the ROC
curve); ``inf`` (distance ignored) is among them, so the factor is used only where it helps there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ..problem import GemmProblem
from .calibration import auroc

VERSION = 1
#: Scales tried, in log2-size units of distance (1: one size doubled).
SCALES = (0.5, 1.0, 2.0, 4.0, 8.0, math.inf)
#: A different dtype, op, layout or bias weighs as much as this many doublings of a size.
_KIND_WEIGHT = 2.0
#: A size's multiple-of-8 alignment differing weighs as one doubling.
_ALIGNMENT_WEIGHT = 1.0
_OPS = ("mm", "addmm", "bmm", "baddbmm")
_PRECISIONS = ("float16", "bfloat16", "float32", "tf32")


def problem_descriptor(problem: GemmProblem) -> list[float]:
    """The point of ``problem`` in the space distances are measured in."""
    precision = "tf32" if problem.dtype == "float32" and problem.allow_tf32 else problem.dtype
    sizes = [math.log2(max(x, 1)) for x in (problem.m, problem.n, problem.k, problem.batch)]
    kind = [float(problem.op == op) for op in _OPS] + [float(precision == p) for p in _PRECISIONS]
    kind += [float(problem.a_layout == "col"), float(problem.b_layout == "col"), float(problem.bias != "none")]
    aligned = [float(x % 8 == 0) for x in (problem.m, problem.n, problem.k)]
    return sizes + [_KIND_WEIGHT * x for x in kind] + [_ALIGNMENT_WEIGHT * x for x in aligned]


def support_of(problems: Sequence[GemmProblem]) -> torch.Tensor:
    """The distinct descriptors of ``problems``, ``[P, D]`` float32."""
    return torch.tensor(sorted({tuple(problem_descriptor(p)) for p in problems}), dtype=torch.float32)


def nearest_distance(support: torch.Tensor, problem: GemmProblem) -> float:
    """Euclidean distance from ``problem`` to its nearest point of ``support``."""
    point = torch.tensor(problem_descriptor(problem), dtype=torch.float32)
    return float((support - point).pow(2).sum(1).min().sqrt())


def familiarity(distance: float, scale: float) -> float:
    """The confidence factor in (0, 1] for a problem ``distance`` from the training problems."""
    return math.exp(-distance / scale)


def fit_scale(raw: Sequence[float], distances: Sequence[float], hits: Sequence[bool]) -> float:
    """The scale of :data:`SCALES` whose ``raw * familiarity`` has the largest AUROC for
    ``hits`` (the largest scale on a tie; ``inf`` when the AUROC is undefined)."""

    def score(scale: float) -> float:
        value = auroc([r * familiarity(d, scale) for r, d in zip(raw, distances)], hits)
        return -1.0 if math.isnan(value) else value

    return max(reversed(SCALES), key=score)


def novelty_data(support: torch.Tensor, scale: float) -> dict[str, Any]:
    """The checkpoint's ``"novelty"`` block."""
    return {"version": VERSION, "support": support, "scale": float(scale)}


def valid_novelty(block: Any) -> bool:
    """Whether a checkpoint's ``"novelty"`` block is one this version reads."""
    if not isinstance(block, dict) or block.get("version") != VERSION:
        return False
    support, scale = block.get("support"), block.get("scale")
    width = len(problem_descriptor(GemmProblem("mm", 1, 1, 1)))
    return (
        isinstance(support, torch.Tensor)
        and support.dim() == 2
        and support.shape[0] > 0
        and support.shape[1] == width
        and isinstance(scale, float)
        and scale > 0
    )
