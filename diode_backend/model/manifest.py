"""The manifest that describes a shipped model, read without loading its weights.

A model folder holds ``manifest.json`` and the checkpoint it names (``model.pt``)::

    {"format": "diode-model-manifest", "format_version": 1,
     "name": "nvidia-h100-gemm", "purpose": "gemm-runtime", "version": "1.0.0",
     "description": "...", "hardware": ["H100"], "ops": ["mm", "addmm", "bmm", "baddbmm"],
     "dtypes": ["float16", "bfloat16", "float32"], "kinds": ["aten", "triton"],
     "feature_schema": "gemm", "feature_version": 2,
     "training_data_digest": "sha256:...", "metrics": {"top1_regret_geomean": 1.02, ...},
     "file": "model.pt", "sha256": "...", "priority": 0}

``hardware`` holds substrings of device names (as ``torch.cuda.get_device_properties().name``
reports them), matched case-insensitively; an empty list means "only when chosen by name".
``kinds`` holds the candidate kinds (:attr:`~diode_backend.problem.KernelConfig.kind`) the model
learnt runtimes of, the only ones it scores; a manifest without it (as written before the field
existed) scores every kind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from ..files import RefusedFile, read_regular_file, write_atomic
from ..problem import HardwareInfo
from .checkpoint import ModelLoadError

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "diode-model-manifest"
MANIFEST_FORMAT_VERSION = 1
#: A manifest is a few KiB of JSON; anything larger is not one.
MAX_MANIFEST_BYTES = 2**20


@dataclass(frozen=True)
class ModelManifest:
    """What a model is for and what it was trained on (see the module docstring)."""

    name: str
    purpose: str
    version: str
    hardware: tuple[str, ...]
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    #: the candidate kinds it scores; empty: every kind (a manifest without the field)
    kinds: tuple[str, ...] = field(default=(), kw_only=True)
    feature_schema: str
    feature_version: int
    training_data_digest: str
    sha256: str
    file: str = "model.pt"
    description: str = ""
    metrics: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    priority: int = 0

    def applies_to(self, hardware: HardwareInfo) -> bool:
        """Whether ``hardware``'s device name contains one of the manifest's hardware names."""
        name = hardware.name.lower()
        return any(pattern.lower() in name for pattern in self.hardware)

    def covers(self, op: str, dtype: str) -> bool:
        """Whether the model was trained for this op and input dtype."""
        return op in self.ops and dtype in self.dtypes

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("hardware", "ops", "dtypes", "kinds"):
            data[key] = list(data[key])
        if not self.kinds:  # every kind: left out, as before the field existed (reading refuses an empty list)
            del data["kinds"]
        return {"format": MANIFEST_FORMAT, "format_version": MANIFEST_FORMAT_VERSION, **data}

    @classmethod
    def from_dict(cls, data: Any, source: str | os.PathLike[str] = "manifest") -> ModelManifest:
        """Validate parsed JSON; :class:`ModelLoadError` names ``source`` and what is wrong."""
        if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
            raise ModelLoadError(f"{source}: not a diode model manifest (expected \"format\": \"{MANIFEST_FORMAT}\")")
        if data.get("format_version") != MANIFEST_FORMAT_VERSION:
            raise ModelLoadError(
                f"{source}: manifest format_version {data.get('format_version')!r}, this diode-backend "
                f"reads version {MANIFEST_FORMAT_VERSION}; upgrade diode-backend"
            )
        kwargs: dict[str, Any] = {}
        for name, kind in _FIELD_TYPES.items():
            if name not in data:
                if name in _OPTIONAL:
                    continue
                raise ModelLoadError(f"{source}: manifest is missing {name!r}")
            value = data[name]
            if kind is tuple:
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ModelLoadError(f"{source}: manifest field {name!r} must be a list of strings")
                value = tuple(value)
            elif not isinstance(value, kind) or isinstance(value, bool):
                raise ModelLoadError(f"{source}: manifest field {name!r} must be a {kind.__name__}")
            kwargs[name] = value
        if "kinds" in kwargs and not kwargs["kinds"]:
            raise ModelLoadError(f"{source}: manifest field 'kinds' must name a kind; leave it out for every kind")
        if "/" in kwargs["name"] or not kwargs["name"]:
            raise ModelLoadError(f"{source}: manifest name {kwargs['name']!r} must be non-empty and contain no '/'")
        if "file" in kwargs and not _inside_folder(kwargs["file"]):
            raise ModelLoadError(
                f"{source}: manifest file {kwargs['file']!r} must name a file in the manifest's own folder "
                "(a relative path without '..'), e.g. \"model.pt\""
            )
        return cls(**kwargs)


_FIELD_TYPES: dict[str, type] = {
    "name": str, "purpose": str, "version": str, "hardware": tuple, "ops": tuple, "dtypes": tuple, "kinds": tuple,
    "feature_schema": str, "feature_version": int, "training_data_digest": str, "sha256": str,
    "file": str, "description": str, "metrics": dict, "priority": int,
}  # fmt: skip
_OPTIONAL = {"kinds", "file", "description", "metrics", "priority"}


def _inside_folder(name: str) -> bool:
    # a manifest may come from anywhere (DIODE_MODELS_PATH, a plugin): it must not point DIODE
    # at /dev/zero or at files outside the model folder
    path = PurePosixPath(name.replace("\\", "/"))
    return bool(path.parts) and not path.is_absolute() and not os.path.isabs(name) and ".." not in path.parts


def read_manifest(path: str | os.PathLike[str]) -> ModelManifest:
    """The manifest of a model folder (or of a ``manifest.json`` path), weights untouched."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    try:
        data = json.loads(read_regular_file(path, MAX_MANIFEST_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise ModelLoadError(f"{path}: no model manifest here") from None
    except RefusedFile as err:
        raise ModelLoadError(str(err)) from err
    except (OSError, ValueError) as err:
        raise ModelLoadError(f"{path}: unreadable manifest ({err})") from err
    return ModelManifest.from_dict(data, path)


def write_manifest(manifest: ModelManifest, folder: str | os.PathLike[str]) -> Path:
    """Write ``folder/manifest.json`` atomically; returns its path."""
    text = json.dumps(manifest.to_dict(), indent=2, sort_keys=False) + "\n"
    return write_atomic(Path(folder) / MANIFEST_NAME, text.encode("utf-8"))


def replace_metrics(folder: str | os.PathLike[str], metrics: Mapping[str, Any], replaced: Callable[[str], bool]) -> Path:
    """Rewrite ``folder``'s manifest with ``metrics`` in place of the metrics ``replaced`` names;
    the others stay as they were, each metric where it was and new ones last. A figure that is
    not a number (None, NaN: no misses, so no AUROC) is left out rather than written."""
    manifest = read_manifest(folder)
    written = {name: value for name, value in metrics.items() if value is not None and value == value}
    kept = {name: value for name, value in manifest.metrics.items() if not replaced(name) or name in written}
    return write_manifest(replace(manifest, metrics={**kept, **written}), folder)
