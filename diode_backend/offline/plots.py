"""PNG plots of a validation report (optional: matplotlib is not a dependency)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


# Where the regret axis may be labelled: a log scale would otherwise read "2x10^0".
REGRET_TICKS = (1.0, 1.02, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)


def regret_ticks(worst: float) -> list[float]:
    """The labelled regrets, up to the first at or above ``worst``: on a log axis, each at least
    a twelfth of the axis from the last, so that no two labels overlap."""
    end = next((t for t in REGRET_TICKS if t >= worst), REGRET_TICKS[-1])
    if end == 1.0:
        return [1.0]
    gap = math.log(end) / 12
    ticks = [1.0]
    for tick in REGRET_TICKS:
        if 1.0 < tick <= end and math.log(tick / ticks[-1]) >= gap and math.log(end / tick) >= gap:
            ticks.append(tick)
    return ticks + [end]


def write_plots(report: dict[str, Any], folder: str | Path) -> list[Path]:
    """Write the regret distribution and the reliability diagram into ``folder``; returns the
    files written, none when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [_regret_distribution(plt, report, folder / "top1_regret.png"), _reliability(plt, report, folder / "reliability.png")]


def _regret_distribution(plt, report: dict[str, Any], path: Path) -> Path:
    figure = regret_figure(plt, report)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def regret_figure(plt, report: dict[str, Any]):
    """The cumulative distribution of each scorer's top-1 regret (and the baselines')."""
    rows = report["per_problem"]
    series = {name: [row[name]["top1_regret"] for row in rows] for name in report["scorers"]}
    for name, key in (("inductor_default (best of)", "inductor_default_regret"), ("aten", "aten_regret")):
        if all(key in row for row in rows):
            series[name] = [row[key] for row in rows]
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name, values in series.items():
        ordered = sorted(values)
        axes.step(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], where="post", label=name)
    axes.set_xscale("log")
    ticks = regret_ticks(max(max(values) for values in series.values()))
    axes.xaxis.set_major_locator(FixedLocator(ticks))
    axes.xaxis.set_minor_locator(NullLocator())
    axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}x"))
    axes.set_xlim(1.0, ticks[-1])
    axes.set_xlabel("top-1 regret (time of pick / fastest measured)")
    axes.set_ylabel("fraction of validation problems")
    axes.set_title(f"Top-1 regret, {report['problems']} validation problems")
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    return figure


def _reliability(plt, report: dict[str, Any], path: Path) -> Path:
    figure, axes = plt.subplots(figsize=(4.5, 4.5))
    axes.plot([0, 1], [0, 1], color="grey", linestyle="--", label="perfect")
    calibration = report.get("calibration")
    if calibration:
        bins = calibration["bins"]
        axes.plot([b["confidence"] for b in bins], [b["observed"] for b in bins], marker="o", label="model")
        for b in bins:
            axes.annotate(str(b["count"]), (b["confidence"], b["observed"]), textcoords="offset points", xytext=(4, -10))
        axes.set_title(f"Reliability (ECE {calibration['ece']:.3f})")
    axes.set_xlabel("confidence (predicted P[top-1 within 5%])")
    axes.set_ylabel("observed frequency")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
