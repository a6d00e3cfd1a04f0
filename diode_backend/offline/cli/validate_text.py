"""The text summary ``diode validate`` prints of its report (``offline.validate``): the scorers
and baselines side by side, the confidence's reliability, and the model's figures per workload
class and family."""

from __future__ import annotations

import math
from typing import Any


def print_summary(report: dict[str, Any]) -> None:
    """The report's figures as a table: scorers and baselines in columns."""
    columns = {**report["scorers"], **report["baselines"]}
    rows = [("rmse_log", "rmse(log)"), ("mape", "MAPE %"), ("kendall_tau.median", "tau median")]
    rows += [(f"top{k}_regret.{s}", f"top-{k} {s}") for k in (1, 5, 10) for s in ("geomean", "p90", "worst")]
    print(f"{report['problems']} problems, {report['candidates']} candidates on {report['hardware']}")
    print(f"{'':16}" + "".join(f"{name[:17]:>18}" for name in columns))
    for path, label in rows:
        print(f"{label:16}" + "".join(f"{figure(lookup(figures, path.split('.')), 4):>18}" for figures in columns.values()))
    calibration = report.get("calibration")
    if calibration:
        trusted = calibration["trusted"]
        print(
            f"confidence: mean {figure(calibration['mean_confidence'], 3)}, hit rate {figure(calibration['hit_rate'], 3)}, "
            f"ECE {figure(calibration['ece'], 3)}, AUROC {figure(calibration['auroc'], 3)}; {trusted['problems']} "
            f"at confidence >= {trusted['threshold']}, worst top-1 {figure(trusted['top1_regret_worst'], 3)}"
        )
    compile_time = report.get("compile_time_calibration")
    if compile_time:
        trusted = compile_time["trusted"]
        labelled = compile_time.get("judged_by_pick_labels", 0)
        pick = compile_time.get("top1_regret", {})
        print(
            f"confidence at compile time (over Inductor's whole list; judged where the pick was timed, "
            f"{compile_time['judged']} of {compile_time['problems']}{f', {labelled} by the pick labels' if labelled else ''}): ECE {figure(compile_time.get('ece'), 3)}, "
            f"AUROC {figure(compile_time.get('auroc'), 3)}; {trusted['problems']} at confidence >= {trusted['threshold']}, "
            f"worst top-1 {figure(trusted['top1_regret_worst'], 3)}; its pick (DIODE's single pick) top-1 "
            f"{figure(pick.get('geomean'), 3)} / p90 {figure(pick.get('p90'), 3)} / worst {figure(pick.get('worst'), 3)}"
        )
    print_groups("workload class", report["by_class"])
    print_groups("family", report["by_family"])
    for name, target in report["targets"].items():
        if "value" in target:
            print(f"target {name} {target['target']}: {figure(target['value'], 4)} {'met' if target['met'] else 'MISSED'}")
    losses = report["targets"]["better_than_every_baseline"]["losses"]
    print("better than every baseline: " + ("yes" if not losses else f"no, {len(losses)} figures lose:"))
    for loss in losses:
        print(f"  {loss['figure']}: model {figure(loss['model'], 4)} vs {loss['baseline']} {figure(loss['baseline_value'], 4)}")


def figure(value: Any, digits: int) -> str:
    """A report figure for the text summary: ``-`` where there is none (absent, or not a number,
    such as the AUROC of picks that never missed)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}" if math.isfinite(value) else "-"


#: Where each named figure lies in a validation report (its keys from the top); the names the
#: manifest's metrics use where it records one (``validate --update-manifest``).
FIGURES = {
    "problems": ("problems",),
    "top1_regret_geomean": ("scorers", "model", "top1_regret", "geomean"),
    "top1_regret_p90": ("scorers", "model", "top1_regret", "p90"),
    "top1_regret_worst": ("scorers", "model", "top1_regret", "worst"),
    "top5_regret_geomean": ("scorers", "model", "top5_regret", "geomean"),
    "top10_regret_geomean": ("scorers", "model", "top10_regret", "geomean"),
    "kendall_tau_median": ("scorers", "model", "kendall_tau", "median"),
    "rmse_log": ("scorers", "model", "rmse_log"),
    "mape": ("scorers", "model", "mape"),
    "hit_rate": ("calibration", "hit_rate"),
    "calibration_ece": ("calibration", "ece"),
    "confidence_auroc": ("calibration", "auroc"),
    "trusted": ("calibration", "trusted", "problems"),
    "trusted_top1_regret_worst": ("calibration", "trusted", "top1_regret_worst"),
    "compile_time_calibration_ece": ("compile_time_calibration", "ece"),
    "compile_time_confidence_auroc": ("compile_time_calibration", "auroc"),
    "compile_time_judged": ("compile_time_calibration", "judged"),
    "compile_time_top1_regret_geomean": ("compile_time_calibration", "top1_regret", "geomean"),
    "compile_time_top1_regret_p90": ("compile_time_calibration", "top1_regret", "p90"),
    "compile_time_top1_regret_worst": ("compile_time_calibration", "top1_regret", "worst"),
    "analytical_top1_regret_geomean": ("scorers", "analytical", "top1_regret", "geomean"),
    "inductor_default_top1_regret_geomean": ("baselines", "inductor_default", "top1_regret", "geomean"),
    "aten_top1_regret_geomean": ("baselines", "aten", "top1_regret", "geomean"),
}

#: The columns of the per-class and per-family tables: (heading, figure of :data:`FIGURES`).
GROUP_COLUMNS = (
    ("problems", "problems"),
    ("top-1 geo", "top1_regret_geomean"),
    ("top-1 p90", "top1_regret_p90"),
    ("top-1 worst", "top1_regret_worst"),
    ("top-5 geo", "top5_regret_geomean"),
    ("top-10 geo", "top10_regret_geomean"),
    ("tau median", "kendall_tau_median"),
    ("DEFAULT geo", "inductor_default_top1_regret_geomean"),
    ("hit rate", "hit_rate"),
    ("ECE", "calibration_ece"),
    ("AUROC", "confidence_auroc"),
    ("trusted", "trusted"),
    ("trusted worst", "trusted_top1_regret_worst"),
    ("pick geo", "compile_time_top1_regret_geomean"),
    ("pick p90", "compile_time_top1_regret_p90"),
    ("pick worst", "compile_time_top1_regret_worst"),
)


def print_groups(title: str, groups: dict[str, Any]) -> None:
    """The model's figures per group (workload class, family), one row each."""
    print(
        f"\nby {title} (model over the timed candidates; DEFAULT: best of Inductor's DEFAULT list; "
        "trusted: picks at or above the default confidence threshold, which fast_autotune compiles "
        "alone; pick: the compile-time pick over Inductor's whole list, where judged)"
    )
    print(f"{title:24}" + "".join(f"{heading:>14}" for heading, _ in GROUP_COLUMNS))
    for name, figures in groups.items():
        print(f"{name[:23]:24}" + "".join(f"{figure(lookup(figures, list(FIGURES[key])), 3):>14}" for _, key in GROUP_COLUMNS))


def lookup(data: Any, path: list[str]) -> Any:
    """The report figure at ``path`` (keys), None where any key is missing."""
    for part in path:
        data = data.get(part) if isinstance(data, dict) else None
    return data
