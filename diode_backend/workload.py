"""Workload classes: the kinds of GEMM that real models run, by which figures are reported and
which the hit model's signals flag at ranking time (:mod:`diode_backend.model.hit_model`).

A problem belongs to exactly one class; the first rule that matches wins, so a float32 bmm is an
attention bmm and a float32 decode step is float32. The classes are the ones where a ranking
model is known to err in different ways: attention products with odd sequence
lengths, decode steps, narrow projections, float32 with and without TF32, and baddbmm.
"""

from __future__ import annotations

from .problem import GemmProblem

#: Every class, in the order of the rules of :func:`workload_class`.
WORKLOAD_CLASSES = ("baddbmm", "attention_bmm", "fp32", "tf32", "decode", "narrow", "prefill_linear")
#: A GEMM with at most this many rows (tokens) is a decode step.
DECODE_MAX_M = 32
#: A projection whose N or K is at most this is narrow.
NARROW_MAX_NK = 512


def workload_class(problem: GemmProblem) -> str:
    """The class of ``problem``, one of :data:`WORKLOAD_CLASSES`."""
    if problem.op == "baddbmm":
        return "baddbmm"
    if problem.op == "bmm":
        return "attention_bmm"
    if problem.dtype == "float32":
        return "tf32" if problem.allow_tf32 else "fp32"
    if problem.m <= DECODE_MAX_M:
        return "decode"
    if min(problem.n, problem.k) <= NARROW_MAX_NK:
        return "narrow"
    return "prefill_linear"
