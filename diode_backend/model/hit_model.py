"""A confidence from more than the raw score: a logistic model of P(hit | signals of the problem
and its pick).

The 1-D calibration (:mod:`diode_backend.model.calibration`) gives every problem with the same
raw score the same probability, yet hit rates differ by kind of GEMM (attention bmm picks hit far
less often than others at equal agreement) and by kind of pick (an ATen pick whose rows are not
16-byte aligned, a Triton pick with BLOCK_K 256). :func:`pick_signals` lists, for one problem and
the ensemble's predictions of its candidates, the raw score, the predicted gap to the runner-up,
the distance to the training problems, flags of the pick, op and precision, how the members
agree on the pick itself and how it stands against ATen and the other Triton candidates, and
the alignment, epilogue and sizes of the problem, how crowded the predicted top is and the
problem's workload class (:data:`SIGNALS`); the probability is ``sigmoid(bias + weights .
signals)``. Stored in the checkpoint under ``"hit_model"``::

    {"version": 3, "signals": [...SIGNALS], "weights": [float, ...], "bias": float, "l2": float}

``weights`` apply to the signals as :func:`pick_signals` computes them (the standardisation used
in fitting is folded in). :func:`fit_hit_model` fits it on the held-out families' problems with an
L2 penalty whose strength is chosen by leave-one-family-out log loss among :data:`L2_STRENGTHS`.
A block of an earlier version still reads: each version keeps the signals of the one before
in the same order and definitions (:data:`SIGNALS_OF_VERSION`), and its weights apply to those.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ..features import aten_rows_unaligned
from ..problem import KIND_ATEN, GemmProblem, KernelConfig
from ..workload import workload_class
from .calibration import HIT_TOLERANCE, pick_statistics, separation

VERSION = 3
#: The workload classes flagged by a signal of their own since version 3; baddbmm, fp32 and tf32
#: were flags already.
CLASS_FLAGS = ("attention_bmm", "decode", "narrow", "prefill_linear")
SIGNALS = (
    "raw",  # agreement x separation, before familiarity
    "log_gap",  # log1p of the predicted gap to the runner-up in hit tolerances, capped
    "log_distance",  # log1p of the distance to the nearest training problem (novelty.py)
    "pick_aten",
    "pick_aten_unaligned",
    "pick_block_k_256",  # a Triton tile as deep as 256 in K: often wrong on narrow problems
    "batched",  # bmm or baddbmm
    "baddbmm",
    "fp32",  # float32 without TF32
    "tf32",
    "log2_m",
    "log2_flops",
    # version 2 (benchmarks/results/h100_confidence_study.md): the ensemble on the pick ...
    "log_aten_margin",  # log1p of how far the fastest ATen candidate is predicted behind the pick, capped
    "log_pick_spread",  # log1p of the members' spread of (pick - their own fastest), in hit tolerances
    "pick_first",  # the fraction of members whose own fastest is the pick
    "log_triton_gap",  # as log_gap, between the two fastest non-ATen candidates
    # ... and the problem's alignment to tiles, epilogue, dtype and sizes
    "n_multiple_64",
    "k_multiple_64",
    "n_multiple_128",
    "k_multiple_128",
    "bias",
    "bf16",
    "log2_n",
    "log2_k",
    # version 3 (benchmarks/results/h100_confidence_crossfold.md, score S3): how crowded the top is ...
    "log_crowding",  # log of the candidates the ensemble mean puts within a hit tolerance of its fastest, the pick included
    "log_pick_member_std",  # log1p of the members' standard deviation of the pick's predicted time, in hit tolerances
    "log2_candidates",
    # ... and the problem's workload class (diode_backend/workload.py)
    *(f"class_{name}" for name in CLASS_FLAGS),
)
#: The signals of each version a checkpoint may hold: every version's are a prefix of :data:`SIGNALS`.
SIGNALS_OF_VERSION = {1: SIGNALS[:12], 2: SIGNALS[:24], 3: SIGNALS}
#: A predicted gap beyond this many hit tolerances says nothing more.
_GAP_CAP = 20.0
#: Penalties tried, on the sum of squared weights of standardised signals (the bias is free).
L2_STRENGTHS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
#: Fewest distinct families to cross-validate by family, and the folds by problem below that.
_FOLDS = 5
_NEWTON_STEPS = 50


def pick_signals(
    problem: GemmProblem, configs: Sequence[KernelConfig], member_log_times: torch.Tensor, distance: float
) -> list[float]:
    """The values of :data:`SIGNALS` for ``problem`` ranked by an ensemble: its members'
    predicted times ``[E, n]`` (natural-log microseconds) of ``configs``, the ensemble mean's
    fastest being the pick, and the problem's distance to the training problems
    (:func:`~diode_backend.model.novelty.nearest_distance`)."""
    pick_index, agreement, gap = pick_statistics(member_log_times)
    pick = configs[pick_index]
    aten = pick.kind == KIND_ATEN
    precision_fp32 = problem.dtype == "float32"
    # whole-tensor operations, not indexing by lists: this runs once per ranking at compile time
    members = member_log_times.double()
    mean = members.mean(0)
    aten_rows = torch.frombuffer(bytearray(config.kind == KIND_ATEN for config in configs), dtype=torch.bool)
    aten_count = int(aten_rows.sum())
    if aten or not aten_count:
        aten_margin = 0.0
    else:
        aten_margin = _log_gap(float(mean.masked_fill(~aten_rows, math.inf).min() - mean[pick_index]))
    if len(configs) - aten_count >= 2:
        best, second = torch.topk(mean.masked_fill(aten_rows, math.inf), 2, largest=False).values.tolist()
        triton_gap = _log_gap(second - best)
    else:
        triton_gap = _log_gap(math.inf)
    # each member's own view of the pick: how far behind its own fastest it is
    behind = (members[:, pick_index] - members.amin(1)).tolist()
    average = sum(behind) / len(behind)
    spread = math.sqrt(sum((b - average) ** 2 for b in behind) / len(behind))
    own_picks = members.argmin(1).tolist()
    crowding = int((mean <= mean.min() + math.log1p(HIT_TOLERANCE)).sum())
    member_std = float(members[:, pick_index].std(correction=0))
    kind = workload_class(problem)
    return [
        agreement * separation(gap),
        _log_gap(gap),
        math.log1p(distance),
        float(aten),
        float(aten and aten_rows_unaligned(problem)),
        float(pick.block_k >= 256),
        float(problem.op in ("bmm", "baddbmm")),
        float(problem.op == "baddbmm"),
        float(precision_fp32 and not problem.allow_tf32),
        float(precision_fp32 and problem.allow_tf32),
        math.log2(max(problem.m, 1)),
        math.log2(problem.flops),
        aten_margin,
        math.log1p(spread / math.log1p(HIT_TOLERANCE)),
        own_picks.count(pick_index) / len(own_picks),
        triton_gap,
        float(problem.n % 64 == 0),
        float(problem.k % 64 == 0),
        float(problem.n % 128 == 0),
        float(problem.k % 128 == 0),
        float(problem.bias != "none"),
        float(problem.dtype == "bfloat16"),
        math.log2(max(problem.n, 1)),
        math.log2(max(problem.k, 1)),
        math.log(crowding),
        math.log1p(member_std / math.log1p(HIT_TOLERANCE)),
        math.log2(len(configs)),
        *(float(kind == name) for name in CLASS_FLAGS),
    ]


def _log_gap(gap: float) -> float:
    """log1p of a predicted gap (natural-log time) in hit tolerances, capped at :data:`_GAP_CAP`."""
    return math.log1p(min(gap / math.log1p(HIT_TOLERANCE), _GAP_CAP))


def hit_probability(block: dict[str, Any], signals: Sequence[float]) -> float:
    """The probability that the pick is a hit, from a checkpoint's ``"hit_model"`` block and the
    pick's :func:`pick_signals`."""
    # an earlier version's block has fewer weights, for the first signals (SIGNALS_OF_VERSION)
    z = block["bias"] + sum(w * x for w, x in zip(block["weights"], signals))
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def fit_hit_model(signals: Sequence[Sequence[float]], hits: Sequence[bool], groups: Sequence[str]) -> dict[str, Any]:
    """Fit the ``"hit_model"`` block on held-out problems: their :func:`pick_signals` rows, whether
    each pick was a hit, and each problem's family (``groups``).

    The L2 strength is the one of :data:`L2_STRENGTHS` with the lowest mean log loss over folds
    that each leave out one family (with fewer than :data:`_FOLDS` families: :data:`_FOLDS` folds
    of every fifth problem); the strongest on a tie. Half a pseudo hit and half a pseudo miss at
    the signals' mean keep the bias finite when a fold holds only hits.
    """
    if not signals:
        raise ValueError("the hit model needs at least one held-out problem")
    x = torch.tensor(signals, dtype=torch.float64)
    y = torch.tensor([float(h) for h in hits], dtype=torch.float64)
    mean, std = x.mean(0), x.std(0, correction=0)
    std = torch.where(std > 1e-9, std, torch.ones_like(std))
    z = (x - mean) / std
    names = sorted(set(groups))
    if len(names) >= _FOLDS:
        folds = torch.tensor([names.index(g) for g in groups])
    else:
        folds = torch.arange(len(signals)) % _FOLDS

    def cross_validated_loss(l2: float) -> float:
        losses = []
        for fold in folds.unique().tolist():
            held = folds == fold
            if held.all():
                continue
            weights, bias = _fit(z[~held], y[~held], l2)
            p = torch.sigmoid(z[held] @ weights + bias).clamp(1e-6, 1 - 1e-6)
            losses.append(-(y[held] * p.log() + (1 - y[held]) * (1 - p).log()))
        return float(torch.cat(losses).mean()) if losses else 0.0

    l2 = min(reversed(L2_STRENGTHS), key=cross_validated_loss)
    weights, bias = _fit(z, y, l2)
    raw_weights = weights / std
    return {
        "version": VERSION,
        "signals": list(SIGNALS),
        "weights": raw_weights.tolist(),
        "bias": float(bias - (raw_weights * mean).sum()),
        "l2": l2,
    }


def valid_hit_model(block: Any) -> bool:
    """Whether a checkpoint's ``"hit_model"`` block is one this version reads (of any version of
    :data:`SIGNALS_OF_VERSION`)."""
    if not isinstance(block, dict):
        return False
    signals = SIGNALS_OF_VERSION.get(block.get("version"))  # type: ignore[arg-type]
    if signals is None or block.get("signals") != list(signals):
        return False
    weights, bias = block.get("weights"), block.get("bias")
    return (
        isinstance(weights, list)
        and len(weights) == len(signals)
        and all(isinstance(w, float) and math.isfinite(w) for w in weights)
        and isinstance(bias, float)
        and math.isfinite(bias)
    )


def _fit(z: torch.Tensor, y: torch.Tensor, l2: float) -> tuple[torch.Tensor, float]:
    """Penalised logistic regression by Newton's method on standardised signals ``z``; returns
    ``(weights, bias)``."""
    rows = torch.cat([torch.ones(len(z), 1, dtype=z.dtype), z], 1)
    # the pseudo hit and miss at the mean (z = 0), half a problem each
    rows = torch.cat([rows, torch.eye(1, rows.shape[1], dtype=z.dtype).repeat(2, 1)])
    y = torch.cat([y, torch.tensor([1.0, 0.0], dtype=z.dtype)])
    sample = torch.cat([torch.ones(len(z), dtype=z.dtype), torch.full((2,), 0.5, dtype=z.dtype)])
    penalty = torch.full((rows.shape[1],), l2, dtype=z.dtype)
    penalty[0] = 0.0
    theta = torch.zeros(rows.shape[1], dtype=z.dtype)

    def objective(theta: torch.Tensor) -> float:
        logits = rows @ theta
        loss = sample * (torch.nn.functional.softplus(logits) - y * logits)
        return float(loss.sum() + 0.5 * (penalty * theta * theta).sum())

    for _ in range(_NEWTON_STEPS):
        p = torch.sigmoid(rows @ theta)
        gradient = rows.T @ (sample * (p - y)) + penalty * theta
        hessian = (rows.T * (sample * p * (1 - p))) @ rows + torch.diag(penalty)
        step = torch.linalg.solve(hessian, gradient)
        # halve a step that would raise the objective (Newton can overshoot on near-separable data)
        before = objective(theta)
        while objective(theta - step) > before and float(step.abs().max()) > 1e-12:
            step = step / 2
        theta = theta - step
        if float(step.abs().max()) < 1e-10:
            break
    return theta[1:], float(theta[0])
