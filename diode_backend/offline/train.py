"""Train a :class:`~diode_backend.model.network.TimingModel` on measured GEMM timings.

What the loop optimises, and why:

- **Held-out families.** Families named in ``holdout_families`` (:mod:`diode_backend.offline.families`)
  are left out of everything, so that validating on them measures architectures never seen.
- **Split by family** (:mod:`diode_backend.offline.training_split`). A seeded fraction of the
  remaining problems is held out in two halves of whole families: one drives early stopping, and
  both fit the confidence calibration (one half alone is too few problems to fit it), which then
  measures what an unseen family looks like to the model. With too few families the halves are
  drawn by problem instead. Rows of one problem never straddle splits. Adding data changes which
  families fit, so a retrain meant to differ only by its data names the two halves' families
  instead.
- **Loss per problem.** Each step draws problems and, within each, candidates biased towards the
  fast end (the region a top-1 pick lives in). The loss is the mean squared error of the log
  runtime (absolute times matter: DIODE compares winners of separately ranked groups) plus a
  listwise term, the cross-entropy between ``softmax(-log t / T)`` of the measured and the
  predicted times of the problem's candidates, which rewards ordering the fast candidates right.
- **Ensemble.** Every member sees its own draw of problems and candidates (bagging), so their
  disagreement means something; the confidence is calibrated from it on the held-out problems,
  times a factor for the problem's distance to the training problems whose scale is chosen on
  the same held-out problems (:mod:`diode_backend.model.novelty`). ``confidence="logistic"``
  also fits a hit model of the problem's and the pick's signals on them
  (:mod:`diode_backend.model.hit_model`), which the scorer then uses instead, or stores one
  fitted on out-of-fold rankings (:mod:`diode_backend.offline.out_of_fold`);
  :func:`refit_hit_model` fits one of this version on a trained checkpoint, its network unchanged.
- **Reproducible and resumable.** One seed drives initialisation and sampling; after every epoch
  the whole training state (weights, optimiser, sampler, early-stopping record) is written next to
  the output, and ``resume=True`` continues from it to the same result as an uninterrupted run.

Times are microseconds; the network predicts their natural logarithm.

One module because the loop, its resumable state and the held-out evaluation share the
private row tensors (``_Rows``) and the options recorded in the checkpoint.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import torch

from .dataset import ProblemTimings, timed_hardware
from .families import family_of, without_families
from .progress import Progress
from ..features import FeatureExtractor
from ..files import write_atomic
from ..problem import HardwareInfo, KernelConfig
from ..model.calibration import HIT_TOLERANCE, fit_calibration, pick_statistics, separation
from ..model.checkpoint import checkpoint_data, load_checkpoint
from ..model.hit_model import fit_hit_model, pick_signals
from ..model.learned import feature_extractor_for
from ..model.network import TimingModel
from ..model.novelty import familiarity, fit_scale, nearest_distance, novelty_data, support_of
from .train_options import CONFIDENCES, TrainOptions
from .training_split import split_training, usable

_STATE_FORMAT = "diode-training-state"
_STATE_VERSION = 1
#: The feature a residual model starts from: the analytical scorer's estimate (log2 us).
_BASE_FEATURE = "log2_analytical_us"


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` wrote and measured; the regret is the geometric mean over the
    early-stopping problems."""

    checkpoint: Path
    epochs: int
    best_epoch: int
    holdout_top1_regret: float
    train_problems: int
    stopping_problems: int
    calibration_problems: int
    seconds: float
    #: training problems left out for having fewer than two timed candidates (:func:`usable`)
    unusable_problems: int = 0
    #: problems the hit model was fitted on (0: none, or one fitted elsewhere was given)
    hit_model_problems: int = 0


class _Rows:
    """All candidates of a list of problems as flat tensors, each problem's rows contiguous and
    sorted fastest first; ``offsets[i]:offsets[i+1]`` are problem ``i``'s rows, ``configs[i]``
    its candidates in that order."""

    def __init__(
        self, features: torch.Tensor, log_times: torch.Tensor, counts: list[int], configs: list[list[KernelConfig]]
    ) -> None:
        self.features = features
        self.log_times = log_times
        self.configs = configs
        self.counts = torch.tensor(counts, dtype=torch.int64)
        self.offsets = torch.cat([torch.zeros(1, dtype=torch.int64), self.counts.cumsum(0)])

    @classmethod
    def build(cls, problems: Sequence[ProblemTimings], extractor: FeatureExtractor, hardware: HardwareInfo) -> _Rows:
        """Each problem's features with ``hardware`` under the problem's own TF32 rule."""
        features, log_times, counts, configs = [], [], [], []
        hardware_of = timed_hardware(hardware)
        for record in problems:
            times = torch.tensor(record.times_us, dtype=torch.float64)
            order = torch.argsort(times, stable=True)
            rows = extractor.extract(record.problem, record.configs, hardware_of(record))
            features.append(rows[order])
            log_times.append(torch.log(times[order]).float())
            counts.append(len(record.configs))
            configs.append([record.configs[i] for i in order.tolist()])
        return cls(torch.cat(features), torch.cat(log_times), counts, configs)

    def __len__(self) -> int:
        return len(self.counts)

    def problem(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        start, end = int(self.offsets[index]), int(self.offsets[index + 1])
        return self.features[start:end], self.log_times[start:end]


def train(
    records: Sequence[ProblemTimings],
    hardware: HardwareInfo,
    extractor: FeatureExtractor,
    output: str | os.PathLike,
    options: TrainOptions = TrainOptions(),
    *,
    resume: bool = False,
    progress: TextIO | None = sys.stderr,
    metadata: dict[str, Any] | None = None,
    holdout_families: Sequence[str] = (),
    stopping_families: Sequence[str] = (),
    calibration_families: Sequence[str] = (),
    confidence: str = "calibrated",
    hit_model: dict[str, Any] | None = None,
) -> TrainResult:
    """Train on ``records`` (all of them training problems; the held-out part is split off
    here), less the problems of ``holdout_families``, write the checkpoint to ``output`` and
    return what happened.

    The early-stopping and calibration-only problems are those of ``stopping_families`` and
    ``calibration_families`` when both are named (:func:`check_named_split`), else drawn by
    :func:`split_families`; a retrain on grown data that names the families a checkpoint recorded
    keeps its split. ``confidence`` is one of :data:`CONFIDENCES`: ``"logistic"`` adds a hit
    model to the checkpoint, fitted on the same problems as the calibration, or ``hit_model``
    where one is given (a block fitted elsewhere: :mod:`~diode_backend.offline.out_of_fold`).

    The training state goes to ``<output>.state`` after every epoch (removed once the checkpoint
    is written); with ``resume`` an existing state is continued (it must come from the same data
    and options). What was trained on and
    how (options, data digest, per-epoch history, plus ``metadata``, JSON-like) is stored in the
    checkpoint under ``"training"``.
    """
    started = time.monotonic()
    if confidence not in CONFIDENCES:
        raise ValueError(f"confidence {confidence!r}: expected one of {', '.join(CONFIDENCES)}")
    if hit_model is not None and confidence != "logistic":
        raise ValueError(f"a hit model is the logistic confidence; confidence {confidence!r} has none")
    output = Path(output)
    parts = split_training(records, options, holdout_families, stopping_families, calibration_families)
    records = parts.records
    train_ids, stop_ids, calibration_ids = parts.train_ids, parts.stop_ids, parts.calibration_ids
    train_rows, stop_rows, calibration_rows = (
        _Rows.build([records[i] for i in ids], extractor, hardware) for ids in (train_ids, stop_ids, calibration_ids)
    )
    digest = data_digest(records, hardware)
    split = parts.recorded()

    torch.manual_seed(options.seed)
    arch = {
        "num_features": len(extractor.names),
        "hidden": options.hidden,
        "layers": options.layers,
        "ensemble": options.ensemble,
        "activation": options.activation,
        "base_feature": _base_feature(extractor) if options.residual else -1,
    }
    model = TimingModel(arch)
    _set_normalisation(model, train_rows)
    optimizer = torch.optim.AdamW(model.parameters(), lr=options.learning_rate, weight_decay=options.weight_decay)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=options.max_epochs)
    sampler = torch.Generator().manual_seed(options.seed + 1)
    loop = _LoopState()

    output.parent.mkdir(parents=True, exist_ok=True)
    state_path = output.with_name(output.name + ".state")
    if resume and state_path.exists():
        loop = _load_state(state_path, model, optimizer, scheduler, sampler, options, digest, split)

    bar = Progress(options.max_epochs * options.steps_per_epoch, enabled=progress is not None, stream=progress, unit="steps")
    done = loop.epoch * options.steps_per_epoch
    while loop.epoch < options.max_epochs and loop.bad_epochs < options.patience:
        model.train()
        for _ in range(options.steps_per_epoch):
            loss = _step(model, optimizer, train_rows, sampler, options)
            done += 1
            bar.update(done, f"epoch {loop.epoch + 1}/{options.max_epochs} loss {loss:.4f}")
        scheduler.step()
        evaluation = evaluate_holdout(model, stop_rows, options)
        loop.epoch += 1
        loop.history.append({"epoch": loop.epoch, "loss": loss, **evaluation})
        # Early stopping on the training loss over the held-out problems' whole candidate
        # lists: the top-1 regret of a few dozen problems is too noisy to stop on.
        score = evaluation["holdout_loss"]
        if score < loop.best_score:
            loop.best_score, loop.best_epoch, loop.bad_epochs = score, loop.epoch, 0
            loop.best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            loop.bad_epochs += 1
        bar.line(
            f"epoch {loop.epoch}: loss {loss:.4f}  held-out loss {evaluation['holdout_loss']:.4f}"
            f"  top-1 regret {math.exp(evaluation['log_top1_regret']):.4f}  rmse(log) {evaluation['rmse_log']:.3f}"
            + ("  *" if loop.best_epoch == loop.epoch else "")
        )
        _save_state(state_path, model, optimizer, scheduler, sampler, options, digest, split, loop)

    model.load_state_dict(loop.best_state)
    model.eval()
    # fitted on both held-out halves (see the module docstring), as are the novelty's scale and
    # the hit model
    held_ids = stop_ids + calibration_ids
    picks = holdout_picks(model, stop_rows) + holdout_picks(model, calibration_rows)
    raw, hits = [pick.raw for pick in picks], [pick.hit for pick in picks]
    support = support_of([records[i].problem for i in train_ids])
    distances = [nearest_distance(support, records[i].problem) for i in held_ids]
    scale = fit_scale(raw, distances, hits)
    calibration = fit_calibration([r * familiarity(d, scale) for r, d in zip(raw, distances)], hits)
    fits_hit_model = confidence == "logistic" and hit_model is None
    if fits_hit_model:
        hit_model = _fit_hit_model([records[i] for i in held_ids], picks, distances)
    calibration_problems = len(stop_ids) + len(calibration_ids)
    checkpoint = checkpoint_data(
        model,
        feature_schema=extractor.schema,
        feature_version=extractor.version,
        calibration=calibration,
        novelty=novelty_data(support, scale),
        hit_model=hit_model,
    )
    # The loader ignores this; `diode validate` and model manifests read it.
    checkpoint["training"] = {
        "options": dataclasses.asdict(options),
        "data_digest": digest,
        "hardware": hardware.to_dict(),
        "train_problems": len(train_ids),
        "stopping_problems": len(stop_ids),
        "calibration_problems": calibration_problems,
        "holdout_families": sorted(holdout_families),
        **split,
        "best_epoch": loop.best_epoch,
        "history": loop.history,
        **(metadata or {}),
    }
    _atomic_save(checkpoint, output)
    state_path.unlink(missing_ok=True)  # finished: nothing left to resume
    best = next(h for h in loop.history if h["epoch"] == loop.best_epoch)
    return TrainResult(
        checkpoint=output,
        epochs=loop.epoch,
        best_epoch=loop.best_epoch,
        holdout_top1_regret=math.exp(best["log_top1_regret"]),
        train_problems=len(train_ids),
        stopping_problems=len(stop_ids),
        calibration_problems=calibration_problems,
        seconds=time.monotonic() - started,
        unusable_problems=parts.unusable,
        hit_model_problems=calibration_problems if fits_hit_model else 0,
    )


def refit_hit_model(
    checkpoint: str | os.PathLike,
    records: Sequence[ProblemTimings],
    hardware: HardwareInfo,
    output: str | os.PathLike,
) -> int:
    """Write to ``output`` the checkpoint at ``checkpoint`` with its ``"hit_model"`` fitted anew
    by this version (:mod:`~diode_backend.model.hit_model`), as :func:`train` with
    ``confidence="logistic"`` fits it: on the problems of the early-stopping and calibration
    families the checkpoint recorded, predicted by its network. Everything else (network,
    calibration, novelty, training record) is kept as it is; returns the number of problems fitted on.

    ``records`` and ``hardware`` are what :func:`train` was given (all training problems, the
    held-out families among them; the inference hardware), checked against the recorded data
    digest; the features are those of the checkpoint's schema and version.

    :raises ValueError: other data than the checkpoint was trained on.
    """
    loaded = load_checkpoint(checkpoint)
    extractor = feature_extractor_for(loaded)
    data = torch.load(checkpoint, weights_only=True, map_location="cpu")
    training = loaded.training
    holdout = training.get("holdout_families", ())
    kept = usable(without_families(records, holdout))
    if data_digest(kept, hardware) != training.get("data_digest"):
        raise ValueError(f"{checkpoint}: was trained on other data or hardware; give the records and hardware it was trained with")
    named = [training[key] if training.get("split") == "given" else () for key in ("stopping_families", "calibration_families")]
    split = split_training(records, TrainOptions(**training["options"]), holdout, *named)
    train_ids, stop_ids, calibration_ids = split.train_ids, split.stop_ids, split.calibration_ids
    stop_rows, calibration_rows = (_Rows.build([kept[i] for i in ids], extractor, hardware) for ids in (stop_ids, calibration_ids))
    picks = holdout_picks(loaded.model, stop_rows) + holdout_picks(loaded.model, calibration_rows)
    held = [kept[i] for i in stop_ids + calibration_ids]
    novelty = loaded.novelty
    support = novelty["support"] if novelty is not None else support_of([kept[i].problem for i in train_ids])
    data["hit_model"] = _fit_hit_model(held, picks, [nearest_distance(support, record.problem) for record in held])
    _atomic_save(data, Path(output))
    return len(held)


def inference_hardware(recorded: HardwareInfo) -> HardwareInfo:
    """The description DIODE will see on the device a dataset was measured on: the installed
    plugins' offline description of the same device (same :attr:`HardwareInfo.key`) when there is
    one, else the recorded one. Features must be computed as they will be at inference (a
    collection run without the vendor plugin records no peak rates), for the kernels that were
    timed (the recorded ``triton_tf32_rule``, kept; each problem's own rule, its ``tf32_rule``, is
    put in per problem by :func:`~diode_backend.offline.dataset.timed_hardware`)."""
    from .. import registry

    for known in registry.known_hardware().values():
        if known.key == recorded.key:
            return dataclasses.replace(known, triton_tf32_rule=recorded.triton_tf32_rule)
    return recorded


def write_model_manifest(
    folder: str | os.PathLike,
    *,
    name: str,
    hardware_match: Sequence[str],
    problems: Sequence[ProblemTimings],
    priority: int = 10,
    version: str = "1.0.0",
    description: str = "",
    metrics: dict[str, Any] | None = None,
) -> Path:
    """Write ``folder/manifest.json`` for the ``folder/model.pt`` that :func:`train` wrote: ops
    and dtypes from ``problems``, and the candidate kinds it learnt runtimes of (those timed in
    the problems :func:`usable` keeps), the only ones DIODE lets it score; schema and data digest
    from the checkpoint, its checksum."""
    from ..problem import SUPPORTED_DTYPES, SUPPORTED_OPS
    from ..model.checkpoint import file_sha256
    from ..model.manifest import ModelManifest, write_manifest

    folder = Path(folder)
    checkpoint = torch.load(folder / "model.pt", weights_only=True, map_location="cpu")
    ops = {p.problem.op for p in problems}
    dtypes = {p.problem.dtype for p in problems}
    kinds = {config.kind for p in usable(problems) for config in p.configs}
    manifest = ModelManifest(
        name=name,
        purpose="gemm-runtime",
        version=version,
        hardware=tuple(hardware_match),
        ops=tuple(op for op in SUPPORTED_OPS if op in ops),
        dtypes=tuple(dtype for dtype in SUPPORTED_DTYPES if dtype in dtypes),
        kinds=tuple(sorted(kinds)),
        feature_schema=checkpoint["feature_schema"],
        feature_version=checkpoint["feature_version"],
        training_data_digest=f"sha256:{checkpoint['training']['data_digest']}",
        sha256=file_sha256(folder / "model.pt"),
        description=description or f"timing model trained by `diode train` on {len(problems)} problems",
        metrics=dict(metrics or {}),
        priority=priority,
    )
    return write_manifest(manifest, folder)


def data_digest(records: Sequence[ProblemTimings], hardware: HardwareInfo) -> str:
    """A SHA-256 over the problems, configs, times and hardware (identifies the training data),
    and each problem's TF32 rule where it is not the hardware's (so data of one rule keeps the
    digest it had before problems carried their rule)."""
    digest = hashlib.sha256(repr(sorted(hardware.to_dict().items())).encode())
    for record in records:
        digest.update(repr((record.problem, record.configs, record.times_us)).encode())
        if record.tf32_rule and record.tf32_rule != hardware.triton_tf32_rule:
            digest.update(repr(record.tf32_rule).encode())
    return digest.hexdigest()


# -- one step -----------------------------------------------------------------------------------


def _step(
    model: TimingModel,
    optimizer: torch.optim.Optimizer,
    rows: _Rows,
    sampler: torch.Generator,
    options: TrainOptions,
) -> float:
    members, count, per = options.ensemble, options.problems_per_step, options.candidates
    problems = torch.randint(len(rows), (members, count), generator=sampler)
    u = torch.rand(members, count, per, generator=sampler) ** options.sample_power
    sizes = rows.counts[problems].unsqueeze(-1)
    index = rows.offsets[problems].unsqueeze(-1) + (u * sizes).long().clamp(max=sizes - 1)
    x = rows.features[index.view(members, -1)]
    target = rows.log_times[index]
    predicted = model(x).view(members, count, per)
    loss = ranking_loss(predicted, target, model.target_std, options)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()


def ranking_loss(
    predicted: torch.Tensor, target: torch.Tensor, scale: torch.Tensor, options: TrainOptions
) -> torch.Tensor:
    """MSE of log times (in units of the targets' spread) plus the listwise cross-entropy over the
    last dimension (one problem's candidates); both ``[..., candidates]`` in log microseconds."""
    mse = ((predicted - target) / scale).pow(2).mean()
    wanted = torch.softmax(-target / options.temperature, dim=-1)
    listwise = -(wanted * torch.log_softmax(-predicted / options.temperature, dim=-1)).sum(-1).mean()
    # Subtracting the target's own entropy makes a perfect ranking score 0.
    listwise = listwise + (wanted * torch.log(wanted.clamp(min=1e-30))).sum(-1).mean()
    return mse + options.listwise_weight * listwise


# -- held-out evaluation ------------------------------------------------------------------------


@torch.no_grad()
def _mean_predictions(model: TimingModel, rows: _Rows) -> torch.Tensor:
    """Per-member log-time predictions ``[E, rows]`` in chunks (bounded memory)."""
    model.eval()
    chunks = [model(chunk) for chunk in rows.features.split(65536)]
    return torch.cat(chunks, dim=1)


def evaluate_holdout(model: TimingModel, rows: _Rows, options: TrainOptions) -> dict[str, float]:
    """Of the ensemble mean, over every problem: the mean log top-1 and top-5 regret, the mean
    training loss on the problem's whole candidate list, and the RMSE of log time."""
    predictions = _mean_predictions(model, rows)
    mean = predictions.mean(0)
    top1, top5, losses = [], [], []
    for i in range(len(rows)):
        start, end = int(rows.offsets[i]), int(rows.offsets[i + 1])
        truth, predicted = rows.log_times[start:end], mean[start:end]
        order = torch.argsort(predicted)
        top1.append(float(truth[order[0]] - truth.min()))
        top5.append(float(truth[order[:5]].min() - truth.min()))
        losses.append(float(ranking_loss(predicted, truth, model.target_std, options)))
    return {
        "log_top1_regret": statistics.fmean(top1),
        "log_top5_regret": statistics.fmean(top5),
        "holdout_loss": statistics.fmean(losses),
        "rmse_log": float((mean - rows.log_times).pow(2).mean().sqrt()),
    }


@dataclass(frozen=True)
class HeldOutPick:
    """The ensemble-mean pick of one held-out problem: its raw confidence score, the predicted
    gap to the runner-up (natural-log time), its config, whether it really was within 5% of
    the best, and what it was picked from: the candidates and the members' predicted log times
    of them ``[E, n]``."""

    raw: float
    gap: float
    config: KernelConfig
    hit: bool
    candidates: Sequence[KernelConfig]
    member_log_times: torch.Tensor


def holdout_picks(model: TimingModel, rows: _Rows) -> list[HeldOutPick]:
    """The pick of each held-out problem, in the order of ``rows``."""
    predictions = _mean_predictions(model, rows)
    picks = []
    for i in range(len(rows)):
        start, end = int(rows.offsets[i]), int(rows.offsets[i + 1])
        truth = rows.log_times[start:end]
        members = predictions[:, start:end]
        pick, agreement, gap = pick_statistics(members)
        hit = bool(truth[pick] - truth.min() <= math.log1p(HIT_TOLERANCE))
        picks.append(HeldOutPick(agreement * separation(gap), gap, rows.configs[i][pick], hit, rows.configs[i], members))
    return picks


def held_out_signals(
    model: TimingModel,
    support: torch.Tensor,
    records: Sequence[ProblemTimings],
    extractor: FeatureExtractor,
    hardware: HardwareInfo,
) -> tuple[list[list[float]], list[bool]]:
    """Each of ``records`` (:func:`usable` ones) ranked by ``model`` as :func:`train` ranks its
    held-out problems: the hit model's signals of the pick, with the distance to ``support`` (the
    points of the problems ``model`` trained on, :func:`~diode_backend.model.novelty.support_of`),
    and whether the pick was a hit."""
    picks = holdout_picks(model, _Rows.build(records, extractor, hardware))
    distances = [nearest_distance(support, record.problem) for record in records]
    return _signal_rows(records, picks, distances), [pick.hit for pick in picks]


def _fit_hit_model(problems: Sequence[ProblemTimings], picks: Sequence[HeldOutPick], distances: Sequence[float]) -> dict[str, Any]:
    """The checkpoint's ``"hit_model"`` block, fitted on held-out ``problems``, their
    :func:`holdout_picks` and their distances to the training problems."""
    signals = _signal_rows(problems, picks, distances)
    return fit_hit_model(signals, [pick.hit for pick in picks], [family_of(record) for record in problems])


def _signal_rows(problems: Sequence[ProblemTimings], picks: Sequence[HeldOutPick], distances: Sequence[float]) -> list[list[float]]:
    """:func:`~diode_backend.model.hit_model.pick_signals` of each held-out problem's pick."""
    return [
        pick_signals(record.problem, pick.candidates, pick.member_log_times, distance)
        for record, pick, distance in zip(problems, picks, distances)
    ]


def _base_feature(extractor: FeatureExtractor) -> int:
    """The column of the analytical estimate, which the network then corrects."""
    if _BASE_FEATURE not in extractor.names:
        raise ValueError(f"feature schema {extractor.schema!r} v{extractor.version} has no {_BASE_FEATURE!r}; train with residual=False")
    return extractor.names.index(_BASE_FEATURE)


def _set_normalisation(model: TimingModel, rows: _Rows) -> None:
    features = rows.features.double()
    std = features.std(0)
    # Constant features (one dtype in the data, say) would divide by zero.
    model.mean.copy_(features.mean(0))
    model.std.copy_(torch.where(std > 1e-6, std, torch.ones_like(std)))
    residual = rows.log_times.double() - model.base(rows.features).double()
    model.target_mean.copy_(residual.mean())
    model.target_std.copy_(residual.std().clamp(min=1e-3))


# -- training state -----------------------------------------------------------------------------


@dataclass
class _LoopState:
    epoch: int = 0
    best_epoch: int = 0
    best_score: float = math.inf
    bad_epochs: int = 0
    best_state: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)
    history: list[dict[str, float]] = dataclasses.field(default_factory=list)


def _save_state(path, model, optimizer, scheduler, sampler, options, digest, split, loop: _LoopState) -> None:
    state = {
        "format": _STATE_FORMAT,
        "format_version": _STATE_VERSION,
        "options": dataclasses.asdict(options),
        "data_digest": digest,
        "split": split,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "sampler": sampler.get_state(),
        "loop": dataclasses.asdict(loop),
    }
    _atomic_save(state, path)


def _load_state(path, model, optimizer, scheduler, sampler, options, digest, split) -> _LoopState:
    state = torch.load(path, weights_only=True)
    if state.get("format") != _STATE_FORMAT or state.get("format_version") != _STATE_VERSION:
        raise ValueError(f"{path}: not a diode training state (format {state.get('format')!r})")
    if state["data_digest"] != digest:
        raise ValueError(f"{path}: was trained on other data; delete it or drop --resume")
    if state["options"] != dataclasses.asdict(options):
        changed = sorted(k for k, v in dataclasses.asdict(options).items() if state["options"].get(k) != v)
        raise ValueError(f"{path}: was trained with other options ({', '.join(changed)}); use the same ones to resume")
    # a state from before the split was recorded drew it, from the data and options checked above
    recorded = state.get("split", {k: v for k, v in split.items() if k != "split"})
    if recorded != split:
        raise ValueError(
            f"{path}: was trained with another split ({_describe(recorded)}, now {_describe(split)}); "
            "pass the same --stopping-families and --calibration-families to resume"
        )
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    sampler.set_state(state["sampler"])
    return _LoopState(**state["loop"])


def _describe(split: dict[str, Any]) -> str:
    return (
        f"{split.get('split', 'drawn')}: early stopping on {','.join(split['stopping_families'])}, "
        f"calibration only on {','.join(split['calibration_families'])}"
    )


def _atomic_save(obj: Any, path: Path) -> None:
    # saved through a buffer: torch.save names the zip archive after the file it writes, and a
    # temporary file's name would make the same training give different bytes
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    write_atomic(path, buffer.getvalue())
