"""``LearnedScorer``: a :class:`~diode_backend.scorer.GemmScorer` backed by a timing-model
checkpoint. Times are microseconds."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from collections.abc import Iterator, Sequence

import torch

from .. import registry
from ..features import FeatureExtractor
from ..problem import GemmProblem, HardwareInfo, KernelConfig
from ..scorer import Prediction
from .calibration import calibrate, pick_statistics, separation
from .checkpoint import Checkpoint, ModelLoadError, load_checkpoint
from .hit_model import hit_probability, pick_signals
from .network import FrozenTimingModel
from .novelty import familiarity, nearest_distance


#: The intra-op threads a ranking runs on. A ranking takes milliseconds on one core, and DIODE
#: ranks a graph's later GEMMs while Inductor's compile workers, a process per core, compile the
#: candidates it started for the earlier ones: an operation split over every core then waits
#: for threads the workers keep off them (``benchmarks/cold_profile_probe.py --inference-threads``).
INFERENCE_THREADS = 1


@contextlib.contextmanager
def intra_op_threads(count: int) -> Iterator[None]:
    """Run the body on ``count`` of torch's intra-op threads, then restore the number before."""
    before = torch.get_num_threads()
    if before == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class LearnedScorer:
    """Ranks all candidates of a problem in one batched forward pass of the ensemble.

    ``times_us`` is ``exp(mean over members of the predicted log time)``; ``confidence`` is the
    checkpoint's calibration applied to the members' agreement times the problem's familiarity
    (see :mod:`diode_backend.model.calibration` and :mod:`diode_backend.model.novelty`), or, where
    the checkpoint has one, its hit model's probability (:mod:`diode_backend.model.hit_model`).
    Problems outside ``ops``/``dtypes`` (when given) get no scores, so DIODE falls back for them;
    candidates of a kind outside ``kinds`` (when given: the kinds the model learnt runtimes of)
    get none either (NaN), and the confidence is about the scored candidates alone.
    """

    def __init__(
        self,
        checkpoint: Checkpoint,
        extractor: FeatureExtractor,
        name: str = "",
        ops: Sequence[str] = (),
        dtypes: Sequence[str] = (),
        kinds: Sequence[str] = (),
    ) -> None:
        self.checkpoint = checkpoint
        self.model = checkpoint.model
        self.network = FrozenTimingModel(checkpoint.model)  # what predict runs
        self.extractor = extractor
        self.name = name or str(checkpoint.path)
        self.ops = tuple(ops)
        self.dtypes = tuple(dtypes)
        self.kinds = tuple(kinds)
        self.identity = learned_identity(checkpoint.sha256, self.kinds)
        self.trained_rates = trained_rates(checkpoint.training)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        name: str = "",
        expected_sha256: str = "",
        ops: Sequence[str] = (),
        dtypes: Sequence[str] = (),
        kinds: Sequence[str] = (),
    ) -> LearnedScorer:
        """Load a checkpoint and pair it with the registered feature extractor it was trained
        with. Raises :class:`~diode_backend.model.checkpoint.ModelLoadError` naming the file
        when the file, its checksum or its feature schema does not fit."""
        checkpoint = load_checkpoint(path, expected_sha256)
        return cls(checkpoint, feature_extractor_for(checkpoint), name=name, ops=ops, dtypes=dtypes, kinds=kinds)

    def predict(
        self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo
    ) -> Prediction:
        if not configs:
            return Prediction(times_us=(), confidence=None)
        unscored = Prediction(times_us=(math.nan,) * len(configs), confidence=None)
        if (self.ops and problem.op not in self.ops) or (self.dtypes and problem.dtype not in self.dtypes):
            return unscored
        scored = [i for i, config in enumerate(configs) if not self.kinds or config.kind in self.kinds]
        if len(scored) == len(configs):
            return self._predict(problem, configs, hardware)
        if not scored:
            return unscored
        prediction = self._predict(problem, [configs[i] for i in scored], hardware)
        times_us = list(unscored.times_us)
        for index, time in zip(scored, prediction.times_us):
            times_us[index] = time
        return Prediction(times_us=tuple(times_us), confidence=prediction.confidence)

    def _predict(self, problem: GemmProblem, configs: Sequence[KernelConfig], hardware: HardwareInfo) -> Prediction:
        """Score every one of ``configs``."""
        with intra_op_threads(INFERENCE_THREADS), torch.inference_mode():
            features = self.extractor.extract(problem, configs, with_rates(hardware, self.trained_rates))
            log_times = self.network(features)  # [E, n], log microseconds
            times = log_times.mean(dim=0).exp()
            confidence = self._confidence(problem, configs, log_times)
        return Prediction(times_us=tuple(times.tolist()), confidence=confidence)

    def _confidence(self, problem: GemmProblem, configs: Sequence[KernelConfig], log_times: torch.Tensor) -> float:
        """The probability that the ensemble mean's pick of ``configs`` is a hit, from the
        members' predicted log times ``[E, n]``: the checkpoint's hit model where it has one,
        else its calibration of the raw score times the problem's familiarity."""
        novelty = self.checkpoint.novelty
        distance = nearest_distance(novelty["support"], problem) if novelty is not None else 0.0
        if self.checkpoint.hit_model is not None:
            return hit_probability(self.checkpoint.hit_model, pick_signals(problem, configs, log_times, distance))
        _, agreement, gap = pick_statistics(log_times)
        raw = agreement * separation(gap)
        if novelty is not None:
            raw *= familiarity(distance, novelty["scale"])
        calibration = self.checkpoint.calibration
        return calibrate(calibration, raw) if calibration is not None else raw


#: Which device's rates a learned model ranks with (:func:`trained_rates`), part of its identity.
RATES = "trained"


def trained_rates(training: dict) -> dict:
    """The peak rates and memory bandwidth of the device a checkpoint's data was measured on
    (``peak_tflops``, ``memory_bandwidth_gbps``, those it recorded), from its ``training`` record.

    A dataset holds one device's timings, so a model learnt nothing of how other rates move a
    kernel's time; it ranks every device with these (:func:`with_rates`). On an H200, whose
    description differs from the H100's by its bandwidth alone, the H100 model's pick ran faster
    with the H100's rates (``docs/decisions.md``)."""
    recorded = training.get("hardware")
    if not isinstance(recorded, dict):
        return {}
    peaks, bandwidth = recorded.get("peak_tflops"), recorded.get("memory_bandwidth_gbps")
    rates: dict = {}
    if isinstance(peaks, dict) and peaks and all(isinstance(v, (int, float)) for v in peaks.values()):
        rates["peak_tflops"] = {str(k): float(v) for k, v in peaks.items()}
    if isinstance(bandwidth, (int, float)) and bandwidth > 0:
        rates["memory_bandwidth_gbps"] = float(bandwidth)
    return rates


def with_rates(hardware: HardwareInfo, rates: dict) -> HardwareInfo:
    """``hardware`` described with ``rates`` (:func:`trained_rates`) in place of its own; its
    identity, SM count, shared memory and TF32 rule stay its own."""
    return dataclasses.replace(hardware, **rates) if rates else hardware


def learned_identity(sha256: str, kinds: Sequence[str] = ()) -> str:
    """The scorer identity of a checkpoint with this file checksum scoring these candidate
    ``kinds`` (empty: every kind), known from a manifest without loading the file. The kinds
    change what it predicts (NaN for the others), and so does which device's rates it ranks with
    (:data:`RATES`), so cached predictions and decisions keyed by the identity must not outlive
    either."""
    return f"learned:{sha256}:rates={RATES}" + (f":kinds={','.join(sorted(kinds))}" if kinds else "")


def feature_extractor_for(checkpoint: Checkpoint) -> FeatureExtractor:
    """The registered extractor for the checkpoint's schema and version (an earlier version the
    extractor still computes, see ``at_version``), refusing another version or width."""
    path, schema, version = checkpoint.path, checkpoint.feature_schema, checkpoint.feature_version
    extractors = registry.feature_extractors()
    extractor = extractors.get(schema)
    if extractor is None:
        known = ", ".join(f"{e.schema} v{e.version}" for e in extractors.values()) or "none"
        raise ModelLoadError(
            f"{path}: trained on feature schema {schema!r} v{version}, which no installed plugin "
            f"provides (installed: {known}); install the plugin that provides it"
        )
    if extractor.version != version and hasattr(extractor, "at_version"):
        extractor = extractor.at_version(version) or extractor
    if extractor.version != version:
        raise ModelLoadError(
            f"{path}: trained on feature schema {schema!r} v{version}, this installation computes "
            f"v{extractor.version}; use a model trained for v{extractor.version} (`diode train`) or the "
            f"diode-backend version the model was made for"
        )
    expected = int(checkpoint.model.arch["num_features"])
    if len(extractor.names) != expected:
        raise ModelLoadError(
            f"{path}: the model takes {expected} features but schema {schema!r} v{version} has "
            f"{len(extractor.names)}; the file is inconsistent: retrain it"
        )
    return extractor

