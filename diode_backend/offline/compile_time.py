"""Problems ranked as DIODE ranks them at compile time: over Inductor's whole candidate list for
the default ``diode_search_space`` rather than the quarter of it a problem's record timed, so
the hit model's signals take the values they take when DIODE compiles (the out-of-fold
confidence, :mod:`diode_backend.offline.out_of_fold`, and ``benchmarks/h100_pick_labels_plan.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import torch

from .. import registry
from ..features import FeatureExtractor
from ..model.calibration import pick_statistics
from ..model.hit_model import pick_signals
from ..model.network import FrozenTimingModel, TimingModel
from ..model.novelty import nearest_distance
from ..problem import GemmProblem, HardwareInfo, KernelConfig
from .dataset import ProblemTimings, timed_hardware
from .pick_labels import pick_ratio


def compile_time_signals(
    model: TimingModel,
    support: torch.Tensor,
    records: Sequence[ProblemTimings],
    extractor: FeatureExtractor,
    hardware: HardwareInfo,
    labels: Mapping[GemmProblem, ProblemTimings] | None = None,
) -> list[tuple[int, list[float], float, bool]]:
    """Each of ``records`` ranked by ``model`` as DIODE ranks it at compile time: over the
    candidates Inductor offers for the default ``diode_search_space``
    (``registry.compile_time_configs``, under the TF32 rule the problem was timed with) of the kinds
    ``records`` timed (those the model learnt), the hit model's signals of the pick, with the
    distance to ``support``, and the pick's time over the fastest timed candidate's (a hit
    within ``1 + HIT_TOLERANCE``). That list is about four times the timed one, and the signals
    that count or compare candidates take other values over it. A pick the problem's record did
    not time is judged from ``labels`` (:func:`~diode_backend.offline.pick_labels.pick_ratio`); a
    pick timed in neither has no known outcome and no row. Each row is ``(index in records,
    signals, ratio, judged from labels)``."""
    rows = []
    for index, (record, configs, member_log_times) in enumerate(compile_time_predictions(FrozenTimingModel(model), records, extractor, hardware)):
        if not configs:
            continue
        judged = pick_ratio(configs[pick_statistics(member_log_times)[0]], record, labels)
        if judged is None:
            continue
        signals = pick_signals(record.problem, configs, member_log_times, nearest_distance(support, record.problem))
        rows.append((index, signals, *judged))
    return rows


def compile_time_predictions(
    network: FrozenTimingModel, records: Sequence[ProblemTimings], extractor: FeatureExtractor, hardware: HardwareInfo,
    kinds: set[str] | None = None,
) -> Iterator[tuple[ProblemTimings, list[KernelConfig], torch.Tensor]]:  # fmt: skip
    """Per record: the candidates DIODE ranks for it at compile time (``registry.compile_time_configs``
    under the TF32 rule it was timed with, of ``kinds``, default those ``records`` timed: the ones
    the model learnt) and ``network``'s per-member log times of them (``[E, n]``; no candidates:
    empty)."""
    hardware_of = timed_hardware(hardware)
    kinds = kinds if kinds is not None else {config.kind for record in records for config in record.configs}
    for record in records:
        timed_on = hardware_of(record)
        configs = [config for config in registry.compile_time_configs(record.problem, timed_on) if config.kind in kinds]
        if not configs:
            yield record, configs, torch.empty(0, 0)
            continue
        with torch.inference_mode():
            yield record, configs, network(extractor.extract(record.problem, configs, timed_on))
