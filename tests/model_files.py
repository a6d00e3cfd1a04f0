"""Real timing-model files for tests: random weights in the checkpoint format training writes,
with or without a manifest."""

from __future__ import annotations

from pathlib import Path

import torch

from diode_backend import registry
from diode_backend.model.checkpoint import checkpoint_data, file_sha256
from diode_backend.model.manifest import ModelManifest, write_manifest
from diode_backend.model.network import TimingModel


def write_checkpoint(path: Path, seed: int = 0, ensemble: int = 5, calibration: dict | None = None, **overrides) -> Path:
    """A checkpoint of a small random TimingModel for the registered ``gemm`` features;
    ``overrides`` replace top-level keys (to write broken files)."""
    extractor = registry.feature_extractors()["gemm"]
    torch.manual_seed(seed)
    arch = {"num_features": len(extractor.names), "hidden": 16, "layers": 2, "ensemble": ensemble}
    data = checkpoint_data(
        TimingModel(arch), feature_schema=extractor.schema, feature_version=extractor.version, calibration=calibration
    )
    data.update(overrides)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(data, path)
    return path


def write_model_folder(folder: Path, name: str, hardware: tuple[str, ...] = ("H100",), priority: int = 0, seed: int = 0, **manifest_fields) -> Path:
    """``folder/model.pt`` plus a matching ``folder/manifest.json``."""
    extractor = registry.feature_extractors()["gemm"]
    model_file = write_checkpoint(folder / "model.pt", seed=seed)
    fields = dict(
        name=name, purpose="gemm-runtime", version="0.0.1", hardware=hardware,
        ops=("mm", "addmm", "bmm", "baddbmm"), dtypes=("float16", "bfloat16", "float32"),
        feature_schema=extractor.schema, feature_version=extractor.version,
        training_data_digest="sha256:test", sha256=file_sha256(model_file),
        metrics={"top1_regret_geomean": 1.5}, priority=priority,
    )  # fmt: skip
    fields.update(manifest_fields)
    write_manifest(ModelManifest(**fields), folder)
    return folder
