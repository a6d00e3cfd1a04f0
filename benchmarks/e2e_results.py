"""A run of ``benchmarks/e2e_validation.py`` as results: what its rows add up to, from the rows
alone (the summary per mode, overall and per workload class or family; what it says of the
timer: the control's spread, rounds far apart, starved runs, one kernel timed apart; a warm
pass's comparison with the cold run it compiled again), and how its file is written. The GPU
run writes both after every row; the merge of parts (``e2e_merge.py``), the report and the
tests use them without the run's setup (its import installs DIODE's hooks and sets cache
folders)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import torch

from diode_backend.files import compressed_as_named

#: The mode that times ``no_autotune``'s program again (``timer_spread``).
CONTROL = "no_autotune_again"
#: The mode that compiles the dataset's fastest candidate alone (``vs_best_known``).
BEST_KNOWN = "best_known"
#: The modes a warm pass compiles unless ``--modes`` says otherwise.
WARM_MODES = ("no_autotune", "diode_warm")
#: How close to no autotuning a warm compile must be (issue 14: within 10%).
WARM_BOUND = 1.1


#: Modes that are references, not choices a user makes: left out of each row's best mode.
REFERENCES = (CONTROL, BEST_KNOWN)
#: Two modes that compiled the same kernel for a problem and whose timings differ by more than
#: this factor point at the timing, not the pick.
SAME_KERNEL_TOLERANCE = 1.1


#: What a row's ``kernel_cache`` holds beside its modes' figures.
KERNEL_CACHE_ROW_KEYS = ("warm", "compile_order")


def decisions_of(figures: dict) -> list[dict]:
    """A DIODE mode's decisions in one compile (none where it failed)."""
    diode = figures.get("diode") or {}
    return diode.get("decisions") or ([diode["decision"]] if diode.get("decision") else [])


def warm_comparison(cold: dict, warm: dict) -> dict:
    """One row's DIODE decisions in the earlier (cold) run's ``diode_fast`` against the warm
    run's ``diode_warm``. A problem: both picks and kept counts (None where the warm compile
    failed or decided nothing). A graph: how many GEMMs (``gemms``) have the same pick
    (``same_picks``), how many of the others the warm compile never lowered as the cold one did
    (``other_problems``: Inductor lowered another GEMM there, such as one it padded, so no pick
    compares), and each run's largest kept count (1: every GEMM compiled alone)."""
    before = decisions_of(cold["modes"]["diode_fast"])
    after = decisions_of(warm["modes"].get("diode_warm", {}))
    if len(before) > 1:
        by_problem = {d["problem"]: d for d in after}
        same = sum(by_problem.get(d["problem"], {}).get("pick") == d["pick"] for d in before)
        return {
            "gemms": len(before),
            "same_picks": same,
            "other_problems": sum(d["problem"] not in by_problem for d in before) if after else 0,
            "same_pick": same == len(before),
            "cold_kept": max(d["kept"] for d in before),
            "warm_kept": max((d["kept"] for d in after), default=None),
        }
    (decision,) = before
    found = after[-1] if after else None
    return {
        "cold_pick": decision["pick"],
        "cold_kept": decision["kept"],
        "warm_pick": found["pick"] if found else None,
        "warm_kept": found["kept"] if found else None,
        "same_pick": bool(found) and found["pick"] == decision["pick"],
    }


def summarize_warm(rows: list[dict]) -> dict:
    """Over the rows both ``diode_warm`` and ``no_autotune`` compiled: diode_warm's compile time
    over no_autotune's (geometric mean of the rows' ratios, ratio of the totals, share of rows
    within :data:`WARM_BOUND`), the share of rows whose warm pick is the cold run's, in graphs
    how many GEMMs the warm compiles lowered as other problems (``other_problem_gemms``), and
    where rows record their ``compile_order``, the geometric mean apart for each mode compiled
    first (``by_first_mode``)."""
    both = [row for row in rows if all("compile_s" in row["modes"].get(mode, {}) for mode in WARM_MODES)]
    pairs = [(row["modes"]["diode_warm"]["compile_s"], row["modes"]["no_autotune"]["compile_s"]) for row in both]
    compared = [row["warm"] for row in rows if "warm" in row]
    if not pairs:
        return {"problems": 0}
    ratios = torch.tensor([warm / plain for warm, plain in pairs], dtype=torch.float64)
    summary = {
        "problems": len(pairs),
        "compile_over_no_autotune_geomean": float(ratios.log().mean().exp()),
        "compile_over_no_autotune_total": sum(w for w, _ in pairs) / sum(p for _, p in pairs),
        "within_bound_share": float((ratios <= WARM_BOUND).double().mean()),
        "bound": WARM_BOUND,
        "same_pick_share": sum(c["same_pick"] for c in compared) / len(compared),
        "single_pick_share": sum(c["warm_kept"] == 1 for c in compared) / len(compared),
    }
    if any("other_problems" in c for c in compared):
        summary["other_problem_gemms"] = sum(c.get("other_problems", 0) for c in compared)
    firsts: dict[str, list[float]] = {}
    for row, (warm, plain) in zip(both, pairs):
        if row.get("compile_order"):
            firsts.setdefault(row["compile_order"][0], []).append(math.log(warm / plain))
    if firsts:
        summary["by_first_mode"] = {
            first: {"problems": len(logs), "compile_over_no_autotune_geomean": math.exp(statistics.fmean(logs))}
            for first, logs in sorted(firsts.items())
        }
    return summary


def kernel_cache_rows(rows: list[dict]) -> list[dict]:
    """The rows as the second kernel-cache pass compiled them (each row's ``kernel_cache`` as its
    modes, its ``warm`` and its ``compile_order``), for :func:`summarize_warm`."""
    found = []
    for row in rows:
        if "kernel_cache" in row:
            kept = {"modes": {mode: f for mode, f in row["kernel_cache"].items() if mode not in KERNEL_CACHE_ROW_KEYS}}
            kept.update({key: row["kernel_cache"][key] for key in KERNEL_CACHE_ROW_KEYS if key in row["kernel_cache"]})
            found.append(kept)
    return found


def summarize(rows: list[dict], modes: list[str]) -> dict:
    """Per mode: runtime over the best measured candidate and over the row's best mode
    (geometric mean, 90th percentile, worst), and compile time (median, total); overall and
    per workload class (``by_class``), or for graphs of several GEMMs, which have no class, per
    family (``by_family``)."""
    summary = summarize_rows(rows, modes)
    classes = sorted({row["workload_class"] for row in rows if "workload_class" in row})
    if len(classes) > 1:
        summary["by_class"] = {c: summarize_rows([r for r in rows if r.get("workload_class") == c], modes) for c in classes}
    families = sorted({row["family"] for row in rows if "members" in row})
    if families:
        summary["by_family"] = {f: summarize_rows([r for r in rows if "members" in r and r["family"] == f], modes) for f in families}
    if any("warm" in row for row in rows):
        summary["warm"] = summarize_warm(rows)
    if any("kernel_cache" in row for row in rows):
        summary["warm_kernel_cache"] = summarize_warm(kernel_cache_rows(rows))
        off, kept = summary.get("warm", {}), summary["warm_kernel_cache"]
        summary["warm_side_by_side"] = {
            "all_caches_off": off.get("compile_over_no_autotune_geomean"),
            "kernel_caches_kept": kept.get("compile_over_no_autotune_geomean"),
            "all_caches_off_total": off.get("compile_over_no_autotune_total"),
            "kernel_caches_kept_total": kept.get("compile_over_no_autotune_total"),
        }
    for figure in (same_kernel_disagreements, unsteady_rounds, starved_runs, timer_spread):  # what the timer did
        found = figure(rows)
        if found:
            summary[figure.__name__] = found
    known = [row["modes"][BEST_KNOWN] for row in rows if "applied" in row["modes"].get(BEST_KNOWN, {})]
    if known:
        # the rows with a vs_best_known: those whose fastest candidate Inductor still offered
        summary["best_known_applied"] = {"problems": len(known), "applied": sum(k["applied"] for k in known)}
    return summary


def every_round_ratio(row: dict, mode: str) -> float | None:
    """``mode``'s time over the row's fastest mode (:data:`REFERENCES` left out) round by round,
    the least over the rounds: how much slower ``mode`` ran in every round of the interleaved
    timings. A round the timer read slow (the two levels of a small GEMM) moves a mode's median
    of rounds, and so its ``vs_best_mode``, but not this; a loss that holds in every round does.
    None where ``mode`` was not timed in rounds."""
    rounds = row["modes"].get(mode, {}).get("rounds_us")
    if not rounds:
        return None
    ranked = [
        f["rounds_us"] for m, f in row["modes"].items() if m not in REFERENCES and len(f.get("rounds_us") or ()) == len(rounds)
    ]  # fmt: skip
    return min(mine / min(other[i] for other in ranked) for i, mine in enumerate(rounds))


def summarize_rows(rows: list[dict], modes: list[str]) -> dict:
    summary = {}
    for mode in modes:
        kept = [row for row in rows if mode in row["modes"] and "error" not in row["modes"][mode]]
        if not kept:
            continue
        done = [row["modes"][mode] for row in kept]
        compile_s = [r["compile_s"] for r in done]
        summary[mode] = {"problems": len(done)}
        for key, values in (
            ("vs_best", [r.get("vs_best") for r in done]),
            ("vs_best_mode", [r.get("vs_best_mode") for r in done]),
            ("vs_best_mode_every_round", [every_round_ratio(row, mode) for row in kept]),
            ("vs_best_known", [r.get("vs_best_known") for r in done]),
        ):
            ratios = torch.tensor([v for v in values if v is not None], dtype=torch.float64)
            if len(ratios):
                summary[mode].update({
                    f"{key}_geomean": float(ratios.log().mean().exp()),
                    f"{key}_p90": float(torch.quantile(ratios, 0.9)),
                    f"{key}_worst": float(ratios.max()),
                })  # fmt: skip
        summary[mode].update(compile_s_median=statistics.median(compile_s), compile_s_total=sum(compile_s))
        diode = [r["diode"] for r in done if r.get("diode")]
        if diode:
            summary[mode]["single_pick_problems"] = sum(d["single_pick"] > 0 and d["benchmarked_top_k"] == 0 for d in diode)
            summary[mode]["fallback_problems"] = sum(bool(d["fallbacks"]) for d in diode)
            summary[mode]["internal_errors"] = sum(sum(d["errors"].values()) for d in diode)
    return summary


def timer_spread(rows: list[dict]) -> dict | None:
    """Over the rows that timed ``no_autotune`` and :data:`CONTROL` (one program, compiled
    twice): the larger of the two runtimes over the smaller, its median, 90th percentile and
    worst, and where the rows have rounds the same of the least such ratio over the rounds
    (``every_round``: the noise floor of ``vs_best_mode_every_round``); None without such rows."""
    pairs = [[row["modes"].get(mode, {}) for mode in ("no_autotune", CONTROL)] for row in rows]
    timed = [(a["runtime_us"], b["runtime_us"]) for a, b in pairs if a.get("runtime_us") and b.get("runtime_us")]
    if not timed:
        return None
    spread = _spread([max(a, b) / min(a, b) for a, b in timed])
    rounds = [(a["rounds_us"], b["rounds_us"]) for a, b in pairs if len(a.get("rounds_us") or ()) == len(b.get("rounds_us") or ()) > 0]
    if rounds:
        spread["every_round"] = _spread([min(max(x, y) / min(x, y) for x, y in zip(*pair)) for pair in rounds])
    return spread


def _spread(ratios: list[float]) -> dict:
    p90 = float(torch.quantile(torch.tensor(ratios, dtype=torch.float64), 0.9))  # as summarize_rows
    return {"problems": len(ratios), "median": statistics.median(ratios), "p90": p90, "worst": max(ratios)}


def same_kernel_disagreements(rows: list[dict]) -> list[dict]:
    """The rows where DIODE modes compiled the same pick (their decisions' ``pick``: the kernel
    compiled alone, picked or measured fastest) but were timed more than
    :data:`SAME_KERNEL_TOLERANCE` apart: the problem, the pick and each such mode's runtime."""
    found = []
    for row in rows:
        by_pick: dict[str, dict[str, float]] = {}
        for mode, figures in row["modes"].items():
            decision = (figures.get("diode") or {}).get("decision") or {}
            if decision.get("pick") and "runtime_us" in figures:
                by_pick.setdefault(decision["pick"], {})[mode] = figures["runtime_us"]
        for pick, runtimes in by_pick.items():
            if len(runtimes) > 1 and max(runtimes.values()) > SAME_KERNEL_TOLERANCE * min(runtimes.values()):
                found.append({"problem": row["describe"], "pick": pick, "runtime_us": runtimes})
    return found


def unsteady_rounds(rows: list[dict]) -> list[dict]:
    """The modes whose rounds of one row were timed more than :data:`SAME_KERNEL_TOLERANCE`
    apart: the problem, the mode, its rounds' medians and, where recorded, each round's starved
    runs and host time to issue the launch (``e2e_validation.time_rounds``)."""
    return [
        {"problem": row["describe"], "mode": mode, "rounds_us": figures["rounds_us"]}
        | {key: figures[key] for key in ("starved_runs", "host_us") if key in figures}
        for row in rows
        for mode, figures in row["modes"].items()
        if len(figures.get("rounds_us", ())) > 1
        and max(figures["rounds_us"]) > SAME_KERNEL_TOLERANCE * min(figures["rounds_us"])
    ]


def starved_runs(rows: list[dict]) -> dict[str, dict]:
    """Per mode that had any: the timed runs the timer left out as starved (``e2e_validation.time_rounds``),
    and in how many rows."""
    found: dict[str, dict] = {}
    for row in rows:
        for mode, figures in row["modes"].items():
            count = sum(figures.get("starved_runs", ()))
            if count:
                entry = found.setdefault(mode, {"rows": 0, "runs": 0})
                entry["rows"] += 1
                entry["runs"] += count
    return found


def write_result(path: str | Path, result: dict) -> None:
    """``result`` as JSON with a top-level entry per line and each of its rows on one line:
    about 40% smaller than indented JSON, and a resumed run's diff shows the rows it added;
    gzip-compressed where ``path`` ends in ``.gz`` (as a committed run is kept)."""
    entries = [
        f"{json.dumps(key)}: " + ("[\n" + ",\n".join(map(json.dumps, value)) + "\n]" if key == "rows" else json.dumps(value))
        for key, value in result.items()
    ]
    text = "{\n" + ",\n".join(entries) + "\n}\n"
    Path(path).write_bytes(compressed_as_named(path, text.encode()))
