"""Hand-made rows of an end-to-end run (``benchmarks/e2e_validation.py``'s format) for the tests
of the scripts that replay one: a single pick with its confidence, the defaults that kept it
alone or measured, and max-autotune DEFAULT."""

from __future__ import annotations


def single_pick(runtime_us: float, compile_s: float, confidence: float) -> dict:
    stats = {"single_pick": 1, "benchmarked_top_k": 0, "decision": {"pick": "aten::mm", "confidence": confidence}}
    return {"runtime_us": runtime_us, "compile_s": compile_s, "diode": stats}


def defaults(runtime_us: float, compile_s: float, kept_alone: bool) -> dict:
    stats = {"single_pick": int(kept_alone), "benchmarked_top_k": int(not kept_alone)}
    return {"runtime_us": runtime_us, "compile_s": compile_s, "diode": stats}


def row(name: str, pick: dict, fast: dict, max_autotune: tuple[float, float]) -> dict:
    """A decode row of family ``f`` whose fastest measured candidate ran 10 us; ``max_autotune``
    is max-autotune DEFAULT's (runtime_us, compile_s)."""
    modes = {
        "diode_pick": pick,
        "diode_fast": fast,
        "max_autotune_default": {"runtime_us": max_autotune[0], "compile_s": max_autotune[1]},
    }
    return {"describe": name, "family": "f", "workload_class": "decode", "best_measured_us": 10.0, "modes": modes}


def run(rows: list[dict]) -> dict:
    """A run of ``rows`` with the three modes the replays need."""
    return {"modes": {"diode_pick": {}, "diode_fast": {}, "max_autotune_default": {}}, "rows": rows}
