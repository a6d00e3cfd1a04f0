"""Model folders and files as :class:`~diode_backend.scorer.ScorerEntry` records.

Shipped models, folders on ``DIODE_MODELS_PATH``, folders a plugin ships and paths a user names
all become entries the same way; nothing here loads weights (an entry's ``load`` does, once).

Where models are found (first listed wins a name clash):

1. folders named in ``DIODE_MODELS_PATH`` (``os.pathsep``-separated), each holding model folders;
2. the shipped ``diode_backend/trained_models/``: in a source checkout (and an editable install)
   a link to the repository's ``trained_models/``, in a built wheel a copy of each model folder's
   ``manifest.json`` and model file (see ``pyproject.toml``'s package data);
3. plugins, whose ``diode_register_scorers`` can register :func:`model_entries` of their own
   folder, e.g.::

       @hookimpl
       def diode_register_scorers(register):
           for entry in model_entries(Path(__file__).parent / "models", source="diode-acme"):
               register(entry)
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from .. import counters
from ..problem import HardwareInfo
from ..scorer import GemmScorer, ScorerEntry
from .checkpoint import ModelLoadError
from .manifest import MANIFEST_NAME, ModelManifest, read_manifest

MODELS_PATH_ENV = "DIODE_MODELS_PATH"
SHIPPED_MODELS = Path(__file__).parent.parent / "trained_models"
_broken: dict[Path, str] = {}  # model folder -> its manifest's error, from the last scan


@dataclass(frozen=True)
class ModelEntry(ScorerEntry):
    """A scorer entry for a model file: ``path`` of the file, ``source`` (where it was found)
    and its ``manifest`` (None for a bare checkpoint named by path)."""

    path: str = ""
    source: str = ""
    manifest: ModelManifest | None = None


def manifest_entry(folder: str | os.PathLike[str], source: str = "") -> ModelEntry:
    """The entry of one model folder (``manifest.json`` plus the file it names), read without
    loading the weights; :class:`ModelLoadError` if the manifest is unusable."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    model_file = folder / manifest.file
    from .learned import learned_identity

    return ModelEntry(
        name=manifest.name,
        load=functools.partial(_load_with_manifest, manifest, model_file),
        applies_to=manifest.applies_to,
        priority=manifest.priority,
        description=_describe(manifest),
        identity=learned_identity(manifest.sha256, manifest.kinds),
        validated_regret=_validated_regret(manifest),
        path=str(model_file),
        source=source or str(folder),
        manifest=manifest,
    )


def model_entries(parent: str | os.PathLike[str], source: str = "") -> list[ModelEntry]:
    """An entry per sub-folder of ``parent`` that holds a ``manifest.json``, by folder name. A
    broken manifest is logged once, counted (``model_manifest_errors``) and skipped: one bad
    folder must not hide the others."""
    parent = Path(parent)
    try:
        folders = sorted(child for child in parent.iterdir() if (child / MANIFEST_NAME).is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []
    for folder in [f for f in _broken if f.parent == parent]:  # this scan replaces the last one
        del _broken[folder]
    entries = []
    for folder in folders:
        try:
            entries.append(manifest_entry(folder, source))
        except ModelLoadError as err:
            _broken[folder] = str(err)
            counters.record_counter("model_manifest_errors")
            counters.warn_once(f"manifest:{folder}", "DIODE skips the model in %s: %s", folder, err)
    return entries


def broken_manifests() -> dict[Path, str]:
    """Model folders :func:`model_entries` skipped, with what is wrong with their manifest (as
    of the last scan of each): ``diode models --check`` fails on them, and a model named like
    its folder is reported as broken rather than unknown."""
    return dict(_broken)


def forget_broken_manifests() -> None:
    """Forget what earlier scans found (``catalog.clear``: the next scan starts afresh)."""
    _broken.clear()


def installed_entries() -> list[ModelEntry]:
    """The models on ``DIODE_MODELS_PATH``, then the shipped ones."""
    entries: list[ModelEntry] = []
    for folder in os.environ.get(MODELS_PATH_ENV, "").split(os.pathsep):
        if folder:
            entries += model_entries(Path(folder).expanduser(), source=f"{MODELS_PATH_ENV} {folder}")
    entries += model_entries(SHIPPED_MODELS, source="shipped")
    return entries


def path_entry(path: str | os.PathLike[str]) -> ModelEntry:
    """The entry for a model a user names by path: a checkpoint file, or a model folder with a
    manifest (whose checksum is then enforced). Its name is the absolute path; it is used only
    when named, never picked automatically."""
    path = Path(path).expanduser().absolute()
    if path.is_dir():
        if not (path / MANIFEST_NAME).is_file():
            raise ModelLoadError(f"{path}: a folder without {MANIFEST_NAME}; name the .pt file itself, or a model folder")
        entry = manifest_entry(path, source="path")
        return ModelEntry(
            name=str(path),
            load=entry.load,
            applies_to=_never,
            description=entry.description,
            identity=entry.identity,
            path=entry.path,
            source="path",
            manifest=entry.manifest,
        )
    if not path.is_file():
        raise ModelLoadError(f"{path}: no such model file or folder")
    from .checkpoint import file_sha256
    from .learned import learned_identity

    return ModelEntry(
        name=str(path),
        load=functools.partial(_load_file, path),
        applies_to=_never,
        description="model file named by path",
        # its checksum, so a stored decision answers without loading the weights
        identity=learned_identity(file_sha256(path)),
        path=str(path),
        source="path",
    )


def _load_with_manifest(manifest: ModelManifest, model_file: Path) -> GemmScorer:
    from .learned import LearnedScorer

    scorer = LearnedScorer.load(
        model_file, name=manifest.name, expected_sha256=manifest.sha256,
        ops=manifest.ops, dtypes=manifest.dtypes, kinds=manifest.kinds,
    )  # fmt: skip
    checkpoint = scorer.checkpoint
    if (checkpoint.feature_schema, checkpoint.feature_version) != (manifest.feature_schema, manifest.feature_version):
        raise ModelLoadError(
            f"{model_file.parent / MANIFEST_NAME}: says feature schema {manifest.feature_schema!r} "
            f"v{manifest.feature_version} but the model file was trained on {checkpoint.feature_schema!r} "
            f"v{checkpoint.feature_version}; regenerate the manifest"
        )
    return scorer


def _load_file(path: Path) -> GemmScorer:
    from .learned import LearnedScorer

    return LearnedScorer.load(path, name=str(path))


def _never(hardware: HardwareInfo) -> bool:
    return False


def _validated_regret(manifest: ModelManifest) -> float | None:
    """The manifest's validated top-1 regret geomean, None when it has none that can be one."""
    value = manifest.metrics.get("top1_regret_geomean")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if number and value >= 1.0 else None


def _describe(manifest: ModelManifest) -> str:
    text = f"{manifest.purpose} v{manifest.version}"
    return f"{text}: {manifest.description}" if manifest.description else text
