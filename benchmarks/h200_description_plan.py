"""What to time on an H200 to learn which description of it the H100 model should rank with (CPU).

    python benchmarks/h200_description_plan.py trained_models/data/h100/dataset \
        --model trained_models/nvidia-h100-gemm/model.pt --target /tmp/h200-description.json.gz

The shipped H100 model ranks on the H200 too (``docs/decisions.md``), and its features read the
hardware's rates: the H200's own description (a memory bandwidth of 4,800 GB/s) moves some picks
away from those the same model makes with the H100's (3,350 GB/s), the only bandwidth it was
trained on. Which of the two picks runs faster on an H200 decides which rates a model ranks a
device it was not trained on with (``model.learned.trained_rates``). This lists, for each problem
of the early-stopping and calibration families (where a choice may be made: the model never fitted
their timings) and each validation problem of the held-out families (where it is reported), the
pick under each description and the fastest Triton config the H100 dataset timed (the day's
reference; ATen's calls are always timed by the ``listed`` space). Time it on an H200:

    python -m diode_backend collect sweep LIST --split train --space listed -o DIR

and compare the two picks with ``benchmarks/h200_description_report.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtime_list_confidence import CALIBRATION, HOLDOUT, STOPPING  # noqa: E402

from diode_backend import registry  # noqa: E402
from diode_backend.model.checkpoint import load_checkpoint  # noqa: E402
from diode_backend.model.network import FrozenTimingModel  # noqa: E402
from diode_backend.offline.collect import shapes  # noqa: E402
from diode_backend.offline.compile_time import compile_time_predictions  # noqa: E402
from diode_backend.offline.dataset import ProblemTimings, load_dataset  # noqa: E402
from diode_backend.offline.families import family_of  # noqa: E402
from diode_backend.offline.train import inference_hardware  # noqa: E402
from diode_backend.problem import KIND_TRITON, HardwareInfo, KernelConfig  # noqa: E402

#: The description the H100 model is asked to rank the H200 with, beside the H200's own.
TRAINED_ON = "h100"
DEVICE = "h200"


def chosen_problems(records: list[ProblemTimings]) -> list[ProblemTimings]:
    """Every problem of the early-stopping and calibration families, and the held-out families'
    validation problems."""
    choose = {*STOPPING, *CALIBRATION}
    return [r for r in records if family_of(r) in choose or (family_of(r) in HOLDOUT and r.split == "validation")]


def picks(network: FrozenTimingModel, records: list[ProblemTimings], hardware: HardwareInfo, kinds: set[str]) -> dict:
    """``network``'s compile-time pick of each of ``records`` ranked as on ``hardware``, by
    record (records with no candidate left out)."""
    extractor = registry.feature_extractors()["gemm"]
    chosen = {}
    for record, configs, member_log_times in compile_time_predictions(network, records, extractor, hardware, kinds):
        if configs:
            chosen[record] = configs[int(torch.argmin(member_log_times.mean(0)))]
    return chosen


def to_time(record: ProblemTimings, *picked: KernelConfig) -> tuple[KernelConfig, ...]:
    """The distinct ``picked`` configs of ``record`` and its fastest timed Triton config."""
    triton = [(t, c) for c, t in zip(record.configs, record.times_us) if c.kind == KIND_TRITON]
    reference = [min(triton, key=lambda pair: pair[0])[1]] if triton else []
    return tuple(dict.fromkeys([*picked, *reference]))


def rank_both(data: list[str], model: str) -> tuple[list[ProblemTimings], dict, dict]:
    """The problems of ``data`` (:func:`chosen_problems`) and ``model``'s pick of each ranked as on
    the device it was trained on and as on :data:`DEVICE` (:func:`picks`).

    :raises ValueError: when ``data`` was not measured on :data:`TRAINED_ON`."""
    dataset = load_dataset(data)
    known = registry.known_hardware()
    trained_on = inference_hardware(dataset.hardware)
    if known[TRAINED_ON].key != trained_on.key:
        raise ValueError(f"{data} was measured on {trained_on.key}, not the {TRAINED_ON} this plan compares with")
    device = dataclasses.replace(known[DEVICE], triton_tf32_rule=trained_on.triton_tf32_rule)
    records = chosen_problems(dataset.problems)
    kinds = {config.kind for record in records for config in record.configs}
    network = FrozenTimingModel(load_checkpoint(model).model)
    return records, picks(network, records, trained_on, kinds), picks(network, records, device, kinds)


def ranked_for_command(parser: argparse.ArgumentParser, data: list[str], model: str) -> tuple[list[ProblemTimings], dict, dict]:
    """:func:`rank_both` for a command, on one thread as DIODE ranks at compile time, less the
    problems either ranking left without a pick; bad input is a usage error naming it."""
    torch.set_num_threads(1)
    try:
        records, as_trained, as_device = rank_both(data, model)
    except ValueError as err:
        parser.error(str(err))
    return [r for r in records if r in as_trained and r in as_device], as_trained, as_device


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="+")
    parser.add_argument("--model", required=True, help="the model.pt that ranks (the shipped H100 model)")
    parser.add_argument("--target", type=Path, required=True, help="the list to write (*.gz: compressed)")
    args = parser.parse_args(argv)
    records, as_trained, as_device = ranked_for_command(parser, args.data, args.model)
    listed = {r: to_time(r, as_trained[r], as_device[r]) for r in records}
    named = [(f"h200-description:{family_of(record)}", record.problem) for record in listed]
    shapes.to_json(named, args.target, "h200-description", configs={r.problem: configs for r, configs in listed.items()})
    differ = Counter(family_of(r) for r in listed if as_trained[r] != as_device[r])
    pairs = sum(len(c) for c in listed.values())
    print(f"{len(named)} problems, {pairs} configs listed -> {args.target}; picks that differ by family: {dict(sorted(differ.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
