"""Predicted decisions: a pick DIODE kept alone on its model's word (confident, or
``diode_fallback_to_autotune=False``), kept on disk beside the measured decisions
(:mod:`diode_backend.measured`, whose store they share) so that a later compile of the same GEMM,
in any process, takes the same path as a measured one: no model loaded, nothing scored, only the
winner's template generated.

The key is a measured decision's (:func:`diode_backend.measured.decision_key`: hardware, torch
and triton versions, problem, candidate set) plus what a prediction depends on besides: the
diode-backend version and the model's name and identity, so another or a retrained model never
reuses a pick. The options that decide whether a pick is kept alone are not in the key: the entry
keeps the pick's confidence and :func:`diode_backend.policy.keeps_alone` decides again with the
options of the later compile. A measured decision wins over a predicted one (it is looked up
first), and predictions are not timings: ``diode cache export`` leaves these out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import msgpack

from . import __version__, measured
from .cache import open_entry
from .problem import GemmProblem, HardwareInfo, KernelConfig

#: Bump when the entry layout or the key recipe changes; old folders are then simply ignored.
SCHEMA_VERSION = 1
FOLDER = f"predicted-v{SCHEMA_VERSION}"
ENTRY_TAG = "diode-predicted"


@dataclass(frozen=True)
class PredictedDecision:
    """The candidate ``model`` (a scorer's name and identity) predicted fastest for one GEMM, with
    the ``confidence`` of the pick (None: the scorer gives none, and
    ``diode_fallback_to_autotune=False`` kept it); ``space`` names the candidate set it was
    picked from (:func:`~diode_backend.measured.decision_key`)."""

    problem: GemmProblem
    hardware: HardwareInfo
    winner: KernelConfig
    confidence: float | None
    model: str
    identity: str
    space: str

    def __post_init__(self) -> None:
        if self.confidence is not None and not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"a confidence is a probability, not {self.confidence!r}")


def decision_key(problem: GemmProblem, hardware: HardwareInfo, space: str, model: str, identity: str) -> str:
    """The entry key (sha256 hex) of a predicted decision: the measured decision's key of the
    same GEMM and candidate set, the diode-backend version and the model."""
    payload = [SCHEMA_VERSION, measured.decision_key(problem, hardware, space), __version__, model, identity]
    return hashlib.sha256(msgpack.packb(payload, use_bin_type=True)).hexdigest()


def _key(decision: PredictedDecision) -> str:
    return decision_key(decision.problem, decision.hardware, decision.space, decision.model, decision.identity)


def lookup(problem: GemmProblem, hardware: HardwareInfo, space: str, model: str, identity: str) -> PredictedDecision | None:
    """The decision ``model`` (name and ``identity``) made for this GEMM before, or None (also
    for a damaged entry). Never raises."""
    return measured.read_decision(
        FOLDER, lambda: decision_key(problem, hardware, space, model, identity), decode,
        lambda d: (d.problem, d.hardware, d.model, d.identity, d.space) == (problem, hardware, model, identity, space),
    )  # fmt: skip


def remember(decision: PredictedDecision) -> None:
    """Store ``decision`` (replacing an earlier one for the same GEMM and model). Never raises."""
    measured.write_decision(FOLDER, lambda: _key(decision), encode, decision)


def stored_decisions() -> Iterator[PredictedDecision]:
    """Every readable predicted decision in the store, in no particular order."""
    return measured.stored_entries(FOLDER, decode)


def encode(key: str, decision: PredictedDecision) -> bytes:
    return msgpack.packb(
        {
            "tag": ENTRY_TAG,
            "version": SCHEMA_VERSION,
            "key": key,
            "problem": decision.problem.to_dict(),
            "hardware": decision.hardware.to_dict(),
            "winner": decision.winner.to_dict(),
            "confidence": decision.confidence,
            "model": decision.model,
            "identity": decision.identity,
            "space": decision.space,
        },
        use_bin_type=True,
    )


def decode(data: bytes, key: str) -> PredictedDecision | None:
    """The decision in ``data`` if it is a whole, current-version entry for ``key``; None
    otherwise (never raises on bad bytes)."""
    try:
        entry = open_entry(data, key, ENTRY_TAG, SCHEMA_VERSION)
        if entry is None:
            return None
        confidence = entry["confidence"]
        if confidence is not None and not isinstance(confidence, float):
            return None
        return PredictedDecision(
            problem=GemmProblem.from_dict(entry["problem"]),
            hardware=HardwareInfo.from_dict(entry["hardware"]),
            winner=KernelConfig.from_dict(entry["winner"]),
            confidence=confidence,
            model=str(entry["model"]),
            identity=str(entry["identity"]),
            space=str(entry["space"]),
        )
    except Exception:  # truncated or garbage: msgpack and the dataclasses raise several types
        return None
