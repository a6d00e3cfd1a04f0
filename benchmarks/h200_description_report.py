"""Which description of an H200 the H100 model's pick runs faster under, from the H200 timings of
``benchmarks/h200_description_plan.py``'s list (CPU).

    python benchmarks/h200_description_report.py trained_models/data/h100/dataset \
        --model trained_models/nvidia-h100-gemm/model.pt --timed H200_DIR [H200_DIR ...] --out report.json

Each problem's two picks (the model ranking with the H100's description and with the H200's) are
looked up in the H200 timings of every ``--timed`` folder (one sweep each); per sweep and group
(``choose``: the early-stopping and calibration families, where a description may be chosen;
``report``: the held-out families' validation problems), over the problems whose picks differ:
each pick's time over the fastest config that sweep timed for the problem (geomean, p90, worst),
and how often the H100 description's pick was the faster of the two by more than 2%, the slower,
or within 2%.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from h200_description_plan import DEVICE, TRAINED_ON, ranked_for_command  # noqa: E402
from runtime_list_confidence import HOLDOUT  # noqa: E402

from diode_backend.offline.dataset import load_dataset  # noqa: E402
from diode_backend.offline import validate  # noqa: E402
from diode_backend.offline.families import family_of  # noqa: E402

#: Two times within this ratio are a tie.
TIE = 1.02


def spread(ratios: list[float]) -> dict:
    """Problems, geometric mean, 90th percentile and worst of ``ratios`` (``validate.spread``)."""
    return {"problems": len(ratios), **validate.spread(ratios)} if ratios else {"problems": 0}


def compare(pairs: list[tuple[float, float, float]]) -> dict:
    """Over ``(trained_on_us, device_us, best_us)`` per problem: each pick over the best, and the
    H100 description's pick against the H200's."""
    faster = sum(a * TIE < b for a, b, _ in pairs)
    slower = sum(b * TIE < a for a, b, _ in pairs)
    return {
        f"{TRAINED_ON}_description": spread([a / best for a, _, best in pairs]),
        f"{DEVICE}_description": spread([b / best for _, b, best in pairs]),
        f"{TRAINED_ON}_over_{DEVICE}": spread([a / b for a, b, _ in pairs]),
        f"{TRAINED_ON}_faster": faster,
        f"{TRAINED_ON}_slower": slower,
        "within_2pct": len(pairs) - faster - slower,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+", help="the H100 dataset the plan was made from")
    parser.add_argument("--model", required=True)
    parser.add_argument("--timed", nargs="+", required=True, help="H200 dataset folders, one sweep of the plan's list each")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    records, as_trained, as_device = ranked_for_command(parser, args.data, args.model)
    differ = [r for r in records if as_trained[r] != as_device[r]]
    report: dict = {"model": args.model, "tie": TIE, "sweeps": {}}
    for folder in args.timed:
        timed = load_dataset([folder])
        times = {p.problem: dict(zip(p.configs, p.times_us)) for p in timed.problems}
        groups: dict[str, list] = {"choose": [], "report": []}
        missing = 0
        for record in differ:
            got = times.get(record.problem, {})
            if as_trained[record] not in got or as_device[record] not in got:
                missing += 1
                continue
            group = "report" if family_of(record) in HOLDOUT else "choose"
            groups[group].append((got[as_trained[record]], got[as_device[record]], min(got.values())))
        report["sweeps"][folder] = {
            "hardware": timed.hardware.key,
            "differing_picks_untimed": missing,
            **{name: compare(pairs) for name, pairs in groups.items()},
        }
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
