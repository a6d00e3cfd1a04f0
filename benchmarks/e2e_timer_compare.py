"""Two runs of ``benchmarks/e2e_validation.py`` over the same problems, side by side on the rows
both completed: how steady each run's timer was, and whether the modes' figures moved.

    python benchmarks/e2e_timer_compare.py BEFORE.json.gz AFTER.json.gz [--out FILE]

Made to judge a change of the timer between two runs; the runs are on different machines or
days, so a difference can be the machine's as well as the timer's. Per run, on the common rows:

- ``control``: the control's spread (``e2e_results.timer_spread``: no autotuning and the control,
  one program compiled twice, the slower over the faster) by the program's runtime
  (:data:`RUNTIME_BANDS`), where small GEMMs read widest;
- ``unsteady``: how many mode-rows had rounds more than ``SAME_KERNEL_TOLERANCE`` apart, apart
  for those that ran only ATen calls, and how many more than :data:`FAR_APART`;
- ``starved``: the runs the timer left out as starved, per mode (none for a run before they were
  counted);
- ``modes``: each mode's runtime over the row's fastest mode and its total compile seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_results  # noqa: E402

from diode_backend.files import read_json  # noqa: E402

#: The runtime bands (microseconds, of the faster of the two compiles) the control's spread is
#: given in.
RUNTIME_BANDS = ((0.0, 15.0), (15.0, 30.0), (30.0, 100.0), (100.0, float("inf")))
#: Rounds of one mode this far apart are far more than the timer's spread.
FAR_APART = 1.3


def common_rows(before: dict, after: dict) -> tuple[list[dict], list[dict]]:
    """The rows both runs completed, in ``after``'s order: ``before``'s and ``after``'s."""
    earlier = {row["describe"]: row for row in before["rows"]}
    later = [row for row in after["rows"] if row["describe"] in earlier]
    return [earlier[row["describe"]] for row in later], later


def band_of(runtime_us: float) -> str:
    low, high = next(band for band in RUNTIME_BANDS if band[0] <= runtime_us < band[1])
    return f"{low:g}-{high:g} us"


def control_by_band(rows: list[dict]) -> dict:
    """``e2e_results.timer_spread`` overall and per :data:`RUNTIME_BANDS` band."""
    bands: dict[str, list[dict]] = {}
    for row in rows:
        times = [row["modes"].get(mode, {}).get("runtime_us") for mode in ("no_autotune", e2e_results.CONTROL)]
        if all(times):
            bands.setdefault(band_of(min(times)), []).append(row)
    order = [band_of(low) for low, _ in RUNTIME_BANDS]
    return {"all": e2e_results.timer_spread(rows)} | {
        band: e2e_results.timer_spread(bands[band]) for band in order if band in bands
    }


def aten_only(figures: dict) -> bool:
    kernels = figures.get("kernels") or []
    return bool(kernels) and all(k.startswith(("extern_kernels.", "torch.ops.")) for k in kernels)


def unsteady(rows: list[dict]) -> dict:
    found = e2e_results.unsteady_rounds(rows)
    by_key = {(row["describe"], mode): figures for row in rows for mode, figures in row["modes"].items()}
    return {
        "mode_rows": len(found),
        "aten_only": sum(aten_only(by_key[(entry["problem"], entry["mode"])]) for entry in found),
        "far_apart": sum(max(entry["rounds_us"]) > FAR_APART * min(entry["rounds_us"]) for entry in found),
    }


def modes_of(rows: list[dict], modes: list[str]) -> dict:
    """Per mode: runtime over the row's fastest mode and compile seconds, as the summary has them
    (``e2e_results.summarize_rows``)."""
    summary = e2e_results.summarize_rows(rows, modes)
    return {
        mode: {
            "vs_best_mode": {"rows": figures["problems"]} | {k: figures[f"vs_best_mode_{k}"] for k in ("geomean", "p90", "worst")},
            "compile_s_total": figures["compile_s_total"],
        }
        for mode, figures in summary.items()
        if "vs_best_mode_geomean" in figures
    }


def compare(before: dict, after: dict) -> dict:
    """The figures of the module docstring for each run, on the rows both completed."""
    rows = common_rows(before, after)
    modes = [m for m in after["modes"] if m in before["modes"] and m != e2e_results.CONTROL]
    return {"common_rows": len(rows[1])} | {
        name: {
            "control": control_by_band(run_rows),
            "unsteady": unsteady(run_rows),
            "starved": e2e_results.starved_runs(run_rows),
            "modes": modes_of(run_rows, modes),
        }
        for name, run_rows in zip(("before", "after"), rows)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="a result file of e2e_validation.py (or e2e_merge.py)")
    parser.add_argument("after", type=Path, help="a later result file over the same problems")
    parser.add_argument("--out", type=Path, help="write the comparison here (default: standard output)")
    args = parser.parse_args(argv)
    runs = []
    for path in (args.before, args.after):
        try:
            runs.append(read_json(path))
        except (OSError, ValueError) as err:
            parser.error(f"{path}: not a readable result file of e2e_validation.py ({err})")
    text = json.dumps(compare(*runs), indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
