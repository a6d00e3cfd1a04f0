"""The timing-model checkpoint file: one format, written by training (``model/train.py``), read
here by DIODE.

A checkpoint is ``torch.save`` of a plain dict (nothing but tensors, strings, numbers, lists and
dicts, so that it loads with ``torch.load(weights_only=True)``)::

    {"format": "diode-timing-model", "format_version": 1,
     "arch": {...TimingModel arch...}, "state_dict": model.state_dict(),
     "feature_schema": "gemm", "feature_version": 1,
     "calibration": {"edges": [...], "values": [...]},   # optional
     "novelty": {"version": 1, "support": tensor, "scale": float},   # optional, model/novelty.py
     "hit_model": {"version": 3, "signals": [...], "weights": [...], "bias": float, "l2": float}}
                                                                    # optional, model/hit_model.py

Other keys (training records) are allowed and ignored.

Every way a file can be unusable raises :class:`ModelLoadError` with a message that names the
file and the fix.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..files import RefusedFile, read_regular_file
from .hit_model import SIGNALS_OF_VERSION, valid_hit_model
from .network import TimingModel
from .novelty import valid_novelty

FORMAT = "diode-timing-model"
FORMAT_VERSION = 1
_ARCH_KEYS = ("num_features", "hidden", "layers", "ensemble")
#: Shipped models are tens of KiB; the cap only stops a device or a runaway file.
MAX_MODEL_BYTES = 2**30


class ModelLoadError(ValueError):
    """A model file (or its manifest) cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class Checkpoint:
    """A loaded, validated checkpoint: the model in eval mode on the CPU, and its metadata.
    ``training`` is what training recorded (options, held-out families, ...; ``{}`` if none).
    A ``hit_model`` gives the confidence in place of ``calibration`` and the familiarity factor."""

    path: Path
    sha256: str
    model: TimingModel
    feature_schema: str
    feature_version: int
    calibration: dict[str, list[float]] | None
    training: dict[str, Any] = field(default_factory=dict)
    novelty: dict[str, Any] | None = None
    hit_model: dict[str, Any] | None = None


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checkpoint_data(
    model: TimingModel,
    *,
    feature_schema: str,
    feature_version: int,
    calibration: dict[str, list[float]] | None = None,
    novelty: dict[str, Any] | None = None,
    hit_model: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The dict a model file holds (``torch.save`` it; add keys such as training records)."""
    data: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "arch": dict(model.arch),
        "state_dict": model.state_dict(),
        "feature_schema": feature_schema,
        "feature_version": int(feature_version),
    }
    if calibration is not None:
        data["calibration"] = calibration
    if novelty is not None:
        data["novelty"] = novelty
    if hit_model is not None:
        data["hit_model"] = hit_model
    return data


def load_checkpoint(path: str | os.PathLike[str], expected_sha256: str = "") -> Checkpoint:
    """Read and validate a checkpoint, refusing anything but plain data (``weights_only``).

    :param expected_sha256: the manifest's checksum; a different file is refused.
    :raises ModelLoadError: missing file, checksum mismatch, not a diode checkpoint, unknown
        format version, malformed metadata or weights that do not fit the architecture.
    """
    path = Path(path)
    try:
        data = read_regular_file(path, MAX_MODEL_BYTES)
    except FileNotFoundError:
        raise ModelLoadError(
            f"{path}: model file not found; reinstall the package that ships it, or point "
            "diode_model at an existing .pt file or model folder"
        ) from None
    except RefusedFile as err:
        raise ModelLoadError(f"{err}; point diode_model at a model file written by `diode train`") from err
    except OSError as err:
        raise ModelLoadError(f"{path}: cannot read the model file ({err})") from err
    sha256 = hashlib.sha256(data).hexdigest()
    if expected_sha256 and sha256 != expected_sha256:
        raise ModelLoadError(
            f"{path}: checksum mismatch (file sha256 {sha256[:12]}..., manifest {expected_sha256[:12]}...): "
            "the file is damaged or was replaced; reinstall it, or rewrite its manifest.json if "
            "you replaced it on purpose"
        )
    try:
        raw = _load_plain_data(data)
    except Exception as err:
        raise ModelLoadError(
            f"{path}: not a loadable checkpoint ({_first_line(err)}); "
            "DIODE loads only plain-data files written by `diode train` (torch.load weights_only=True)"
        ) from err
    return _validate(path, sha256, raw)


def _load_plain_data(data: bytes) -> Any:
    """``torch.load(weights_only=True)`` of the bytes just hashed (not the path again, so the
    checked file is the loaded one), in a thread of its own: models load lazily, inside
    ``torch.compile``, whose tracing context (thread-local) makes ``torch.load`` return meta
    tensors without data."""
    outcome: dict[str, Any] = {}

    def load() -> None:
        try:
            outcome["value"] = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        except BaseException as err:  # re-raised in the caller's thread
            outcome["error"] = err

    thread = threading.Thread(target=load, name="diode-load-model")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _validate(path: Path, sha256: str, raw: Any) -> Checkpoint:
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        found = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
        raise ModelLoadError(f"{path}: not a diode timing model (format {found!r}, expected {FORMAT!r})")
    version = raw.get("format_version")
    if version != FORMAT_VERSION:
        raise ModelLoadError(
            f"{path}: checkpoint format_version {version!r}, this diode-backend reads version "
            f"{FORMAT_VERSION}; upgrade diode-backend or retrain the model with this version"
        )
    arch, state = raw.get("arch"), raw.get("state_dict")
    schema, feature_version = raw.get("feature_schema"), raw.get("feature_version")
    if not isinstance(arch, dict) or not all(isinstance(arch.get(k), int) for k in _ARCH_KEYS):
        raise ModelLoadError(f"{path}: 'arch' must give whole numbers for {', '.join(_ARCH_KEYS)}")
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) and v.device.type == "cpu" for v in state.values()):
        raise ModelLoadError(f"{path}: 'state_dict' must map names to tensors holding data")
    if not isinstance(schema, str) or not isinstance(feature_version, int):
        raise ModelLoadError(f"{path}: 'feature_schema' (a name) and 'feature_version' (a number) are required")
    calibration = raw.get("calibration")
    if calibration is not None and not _valid_calibration(calibration):
        raise ModelLoadError(
            f"{path}: 'calibration' must be {{'edges': [...], 'values': [...]}} with as many "
            "probabilities as non-decreasing edges"
        )
    novelty = raw.get("novelty")
    if novelty is not None and not valid_novelty(novelty):
        raise ModelLoadError(
            f"{path}: 'novelty' must be {{'version': 1, 'support': [P, D] tensor, 'scale': positive float}} "
            "as this diode-backend writes it; retrain the model with this version"
        )
    hit_model = raw.get("hit_model")
    if hit_model is not None and not valid_hit_model(hit_model):
        raise ModelLoadError(
            f"{path}: 'hit_model' must be {{'version': one of {', '.join(map(str, SIGNALS_OF_VERSION))}, 'signals': [...], 'weights': [float, ...], 'bias': float}} "
            "with the signals of its version; retrain the model with this version"
        )
    try:
        model = TimingModel(arch)
        model.load_state_dict(state)
    except (RuntimeError, ValueError, KeyError) as err:
        raise ModelLoadError(
            f"{path}: the weights do not fit the architecture {arch} ({_first_line(err)}); "
            "the file was written by an incompatible diode-backend version: retrain it"
        ) from err
    model.eval().requires_grad_(False)
    training = raw.get("training")
    training = training if isinstance(training, dict) else {}
    return Checkpoint(path, sha256, model, schema, feature_version, calibration, training, novelty, hit_model)


def _first_line(error: BaseException) -> str:
    """``Type: first line`` of an error (torch's messages run over many lines; a line ending in
    a colon is joined with the next, which says what)."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    text = f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    return f"{type(error).__name__}: {text}"


def _valid_calibration(calibration: Any) -> bool:
    if not isinstance(calibration, dict):
        return False
    edges, values = calibration.get("edges"), calibration.get("values")
    if not isinstance(edges, list) or not isinstance(values, list) or not edges or len(edges) != len(values):
        return False
    if not all(isinstance(x, (int, float)) for x in edges + values):
        return False
    return all(a <= b for a, b in zip(edges, edges[1:])) and all(0.0 <= v <= 1.0 for v in values)
