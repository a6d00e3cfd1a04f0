"""The model registry: manifests, checkpoints, LearnedScorer, where models come from, how one is
picked, what breaks cleanly, and learned models inside real torch.compile."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import diode_backend
from diode_backend import catalog, hookimpl, plugins, registry
from diode_backend.model import entries as model_entries_module
from diode_backend.model.checkpoint import ModelLoadError, file_sha256, load_checkpoint
from diode_backend.model.entries import SHIPPED_MODELS, ModelEntry, manifest_entry, model_entries
from diode_backend.model.learned import LearnedScorer, learned_identity, trained_rates
from diode_backend.model.manifest import ModelManifest, read_manifest
from diode_backend.model.network import FrozenTimingModel, TimingModel
from diode_backend.options import DiodeOptionError
from diode_backend.problem import GemmProblem, KernelConfig

from model_files import write_checkpoint, write_model_folder

REPO = Path(__file__).resolve().parents[1]
PROBLEM = GemmProblem("mm", 1024, 4096, 2048, dtype="bfloat16", b_layout="col")
CONFIGS = [KernelConfig("aten", "aten::mm")] + [
    KernelConfig("triton", "triton::mm", bm, bn, bk, stages, warps, 8)
    for bm in (32, 64, 128) for bn in (32, 64, 128, 256) for bk in (32, 64) for stages in (2, 3, 4) for warps in (4, 8)
]  # fmt: skip


@pytest.fixture
def h100():
    return catalog.resolve_hardware("h100")


@pytest.fixture
def models_path(tmp_path, monkeypatch):
    """A DIODE_MODELS_PATH folder for this test, and no shipped models (they would compete)."""
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setenv("DIODE_MODELS_PATH", str(folder))
    monkeypatch.setattr(model_entries_module, "SHIPPED_MODELS", tmp_path / "no-shipped-models")
    return folder


# -- manifests ----------------------------------------------------------------------------------


def test_manifest_is_read_without_loading_the_weights(tmp_path):
    folder = write_model_folder(tmp_path / "m", "acme-h100", metrics={"top1_regret_geomean": 1.02})
    (folder / "model.pt").write_bytes(b"not a checkpoint at all")  # reading must not touch it
    manifest = read_manifest(folder)
    assert manifest.name == "acme-h100" and manifest.hardware == ("H100",)
    assert manifest.ops == ("mm", "addmm", "bmm", "baddbmm") and manifest.metrics == {"top1_regret_geomean": 1.02}
    entry = manifest_entry(folder, source="test")
    assert entry.identity == learned_identity(manifest.sha256)  # known without loading
    assert entry.path == str(folder / "model.pt") and entry.manifest == manifest
    with pytest.raises(ModelLoadError, match="checksum mismatch"):
        entry.load()


def test_manifest_matches_device_names_by_substring(tmp_path, h100):
    manifest = read_manifest(write_model_folder(tmp_path / "m", "x", hardware=("h100", "H200")))
    assert manifest.applies_to(h100)  # case-insensitive
    assert manifest.applies_to(catalog.resolve_hardware("h100-pcie"))
    assert not manifest.applies_to(catalog.resolve_hardware("a100"))
    by_name_only = read_manifest(write_model_folder(tmp_path / "n", "y", hardware=()))
    assert not by_name_only.applies_to(h100)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: d.pop("sha256"), "missing 'sha256'"),
        (lambda d: d.update(hardware="H100"), "'hardware' must be a list of strings"),
        (lambda d: d.update(feature_version="2"), "'feature_version' must be a int"),
        (lambda d: d.update(format_version=2), "format_version 2"),
        (lambda d: d.update(format="something-else"), "not a diode model manifest"),
        (lambda d: d.update(name="a/b"), "contain no '/'"),
        (lambda d: d.update(kinds="aten"), "'kinds' must be a list of strings"),
        (lambda d: d.update(kinds=[]), "'kinds' must name a kind; leave it out for every kind"),
    ],
)
def test_bad_manifest_is_refused_naming_the_file(tmp_path, damage, message):
    folder = write_model_folder(tmp_path / "m", "x")
    data = json.loads((folder / "manifest.json").read_text())
    damage(data)
    (folder / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ModelLoadError, match=message) as error:
        read_manifest(folder)
    assert str(folder / "manifest.json") in str(error.value)


def test_unparseable_manifest_is_refused(tmp_path):
    folder = write_model_folder(tmp_path / "m", "x")
    (folder / "manifest.json").write_text("{ not json")
    with pytest.raises(ModelLoadError, match="unreadable manifest"):
        read_manifest(folder)


# -- checkpoints and the learned scorer ---------------------------------------------------------


def test_learned_scorer_times_are_the_ensemble_geometric_mean(tmp_path, h100):
    path = write_checkpoint(tmp_path / "model.pt", seed=3, ensemble=4)
    scorer = LearnedScorer.load(path)
    prediction = scorer.predict(PROBLEM, CONFIGS, h100)
    features = registry.feature_extractors()["gemm"].extract(PROBLEM, CONFIGS, h100)
    log_times = scorer.model(features).detach()  # [E, n]
    assert log_times.shape == (4, len(CONFIGS))
    expected = log_times.double().mean(0).exp()
    assert torch.allclose(torch.tensor(prediction.times_us, dtype=torch.float64), expected, rtol=1e-5)
    assert scorer.identity == learned_identity(file_sha256(path))


def test_a_model_ranks_every_device_with_the_rates_of_the_device_it_was_trained_on(tmp_path, h100):
    """Its data held one device's rates; another's only move the features off what it learnt."""
    h200 = catalog.resolve_hardware("h200")
    assert h200.memory_bandwidth_gbps != h100.memory_bandwidth_gbps
    trained = LearnedScorer.load(write_checkpoint(tmp_path / "t.pt", training={"hardware": h100.to_dict()}))
    assert trained.predict(PROBLEM, CONFIGS, h200).times_us == trained.predict(PROBLEM, CONFIGS, h100).times_us
    unrecorded = LearnedScorer.load(write_checkpoint(tmp_path / "u.pt"))  # no record: each device's own
    assert unrecorded.predict(PROBLEM, CONFIGS, h200).times_us != unrecorded.predict(PROBLEM, CONFIGS, h100).times_us
    # decisions cached while a model ranked with each device's own rates are not served
    assert ":rates=trained" in trained.identity and learned_identity("ab") != "learned:ab"


def test_the_shipped_model_ranks_the_h200_as_the_h100_it_was_trained_on():
    scorer = catalog.pick_entry(catalog.resolve_hardware("h200"), "").load()
    assert scorer.trained_rates["memory_bandwidth_gbps"] == catalog.resolve_hardware("h100").memory_bandwidth_gbps
    for problem in (PROBLEM, GemmProblem("bmm", 77, 77, 64, batch=96, dtype="float16"), GemmProblem("mm", 1, 5120, 3584, dtype="float16")):
        h100, h200 = (scorer.predict(problem, CONFIGS, catalog.resolve_hardware(name)) for name in ("h100", "h200"))
        assert (h100.times_us, h100.confidence) == (h200.times_us, h200.confidence)


@pytest.mark.parametrize(
    "training",
    [{}, {"hardware": "H100"}, {"hardware": {"peak_tflops": "fast", "memory_bandwidth_gbps": -1}}, {"hardware": {"peak_tflops": {"float16": "x"}}}],
)
def test_a_missing_or_malformed_record_of_the_training_device_leaves_its_rates_to_the_device(training):
    assert trained_rates(training) == {}


def test_a_ranking_runs_on_one_intra_op_thread_and_leaves_the_process_setting_as_it_was(tmp_path, h100):
    scorer = LearnedScorer.load(write_checkpoint(tmp_path / "model.pt", seed=3, ensemble=2))
    network, seen = scorer.network, []

    def recording(features):
        seen.append(torch.get_num_threads())
        return network(features)

    scorer.network = recording
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        scorer.predict(PROBLEM, CONFIGS, h100)
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("layers, activation, base", [(0, "silu", False), (1, "relu", True), (2, "silu", True), (3, "relu", False)])
def test_frozen_network_predicts_what_the_model_does(h100, layers, activation, base):
    extractor = registry.feature_extractors()["gemm"]
    torch.manual_seed(layers)
    arch = {"num_features": len(extractor.names), "hidden": 24, "layers": layers, "ensemble": 3, "activation": activation}
    if base:
        arch["base_feature"] = extractor.names.index("log2_analytical_us")
    model = TimingModel(arch).eval()
    features = extractor.extract(PROBLEM, CONFIGS, h100)
    model.mean.copy_(features.mean(0))
    model.std.copy_(features.std(0).clamp(min=1e-3))
    model.target_mean.fill_(2.5)
    model.target_std.fill_(0.8)
    network = FrozenTimingModel(model)
    first = network(features)
    # smaller and larger batches between: the kept buffers are reused and grown; one row has
    # no varying column, all go into the first layer's bias
    for rows in (features[:0], features[:1], features.repeat(3, 1), features.flip(0)):
        assert torch.allclose(network(rows), model(rows).detach(), rtol=1e-5, atol=1e-5)
    assert torch.allclose(first, model(features).detach(), rtol=1e-5, atol=1e-5)  # not overwritten since


def _agreement(log_times: torch.Tensor) -> float:
    """The raw score (see diode_backend.model.calibration), computed independently of the
    library: the members' agreement times the separation of the pick from the runner-up."""
    mean_times = [math.exp(sum(column) / len(column)) for column in log_times.double().T.tolist()]
    best, runner_up = sorted(mean_times)[:2]
    picks = [min(range(len(row)), key=row.__getitem__) for row in log_times.tolist()]
    agreement = sum(mean_times[p] <= 1.05 * best for p in picks) / len(picks)
    return agreement * (1 - math.exp(-math.log(runner_up / best) / math.log(1.05)))


@pytest.mark.parametrize("seed", range(6))
def test_confidence_is_the_calibrated_agreement_of_the_members(tmp_path, h100, seed):
    calibration = {"edges": [0.0, 0.5, 1.0], "values": [0.05, 0.25, 0.95]}
    scorer = LearnedScorer.load(write_checkpoint(tmp_path / "model.pt", seed=seed, ensemble=5, calibration=calibration))
    raw_scorer = LearnedScorer.load(write_checkpoint(tmp_path / "raw.pt", seed=seed, ensemble=5))
    features = registry.feature_extractors()["gemm"].extract(PROBLEM, CONFIGS, h100)
    raw = _agreement(scorer.model(features).detach())
    expected = 0.05 + 0.4 * raw if raw <= 0.5 else 0.25 + 1.4 * (raw - 0.5)  # the interpolation
    # abs=1e-5: the library works in float32, the reference in float64
    assert scorer.predict(PROBLEM, CONFIGS, h100).confidence == pytest.approx(expected, abs=1e-5)
    assert raw_scorer.predict(PROBLEM, CONFIGS, h100).confidence == pytest.approx(raw, abs=1e-5)  # no calibration: raw


#: kinds no dataset of the tests times: Inductor's decompose-k (one candidate per K split) and
#: persistent-TMA templates
OTHER_KINDS = [KernelConfig("decompose_k", "decompose_k", block_k=16), KernelConfig("decompose_k", "decompose_k", block_k=32),
               KernelConfig("mm_persistent_tma", "triton::mm_persistent_tma", 128, 128, 64, 3, 8, 8)]  # fmt: skip


def test_candidates_of_kinds_the_manifest_does_not_name_are_not_scored(tmp_path, h100):
    """A manifest's ``kinds`` are the only kinds its model scores: the others get NaN, and the
    scored ones the times and the confidence they get without them."""
    folder = write_model_folder(tmp_path / "m", "aten-triton", kinds=("aten", "triton"))
    entry = manifest_entry(folder)
    scorer = entry.load()
    mixed = OTHER_KINDS[:1] + CONFIGS[:5] + OTHER_KINDS[1:] + CONFIGS[5:]
    prediction = scorer.predict(PROBLEM, mixed, h100)
    alone = scorer.predict(PROBLEM, CONFIGS, h100)
    assert [math.isnan(t) for t in prediction.times_us] == [c in OTHER_KINDS for c in mixed]
    assert [t for t in prediction.times_us if not math.isnan(t)] == list(alone.times_us)
    assert prediction.confidence == alone.confidence is not None
    nothing = scorer.predict(PROBLEM, OTHER_KINDS, h100)
    assert all(math.isnan(t) for t in nothing.times_us) and nothing.confidence is None
    # the kinds change what it predicts: cached predictions of the model without them must not answer
    assert scorer.identity == entry.identity == learned_identity(read_manifest(folder).sha256, ("triton", "aten"))
    assert entry.identity != learned_identity(read_manifest(folder).sha256)


def test_a_manifest_without_kinds_scores_every_kind_and_is_written_back_without_them(tmp_path, h100):
    """Manifests written before the field (plugins' models among them) keep scoring everything."""
    folder = write_model_folder(tmp_path / "m", "every-kind")
    manifest = read_manifest(folder)
    assert manifest.kinds == () and "kinds" not in json.loads((folder / "manifest.json").read_text())
    prediction = manifest_entry(folder).load().predict(PROBLEM, OTHER_KINDS + CONFIGS, h100)
    assert all(math.isfinite(t) for t in prediction.times_us)


def test_the_shipped_model_scores_no_kind_its_training_data_lacks():
    """A subset: the dataset may gain a kind before the model is retrained on it."""
    from diode_backend.offline.dataset import load_dataset

    manifest = read_manifest(SHIPPED_MODELS / "nvidia-h100-gemm")
    dataset = load_dataset(REPO / "trained_models" / "data" / "h100" / "dataset")
    assert manifest.kinds == ("aten", "triton")
    assert set(manifest.kinds) <= {c.kind for p in dataset.split("train") for c in p.configs}


def test_the_shipped_model_is_picked_on_the_h100_and_the_h200_only():
    """The H200 runs it by transfer (benchmarks/results/h200_transfer_e2e_2026-12-02/); GPUs it
    was never measured on keep the analytical scorer."""
    for name, picked in (("h100", "nvidia-h100-gemm"), ("h200", "nvidia-h100-gemm"), ("h100-pcie", "analytical"), ("a100", "analytical")):
        assert catalog.pick_entry(catalog.resolve_hardware(name), "").name == picked, name


def test_problems_the_model_was_not_trained_for_are_not_scored(tmp_path, h100):
    folder = write_model_folder(tmp_path / "m", "fp16-mm-only", ops=("mm",), dtypes=("float16",))
    scorer = manifest_entry(folder).load()
    assert not any(math.isnan(t) for t in scorer.predict(GemmProblem("mm", 64, 64, 64), CONFIGS, h100).times_us)
    for problem in (GemmProblem("bmm", 64, 64, 64, batch=4), GemmProblem("mm", 64, 64, 64, dtype="float32")):
        prediction = scorer.predict(problem, CONFIGS, h100)
        assert all(math.isnan(t) for t in prediction.times_us) and prediction.confidence is None


class _NotPlainData:
    pass


def _arch_of(path):
    return torch.load(path, weights_only=True)["arch"]


@pytest.mark.parametrize(
    "write, message",
    [
        (lambda p: None, "model file not found"),
        (lambda p: p.write_bytes(b"\x00garbage"), "not a loadable checkpoint"),
        (lambda p: torch.save({"weights": _NotPlainData()}, p), "not a loadable checkpoint"),
        (lambda p: torch.save([1, 2, 3], p), "not a diode timing model"),
        (lambda p: write_checkpoint(p, format="other-format"), "not a diode timing model"),
        (lambda p: write_checkpoint(p, format_version=2), "format_version 2"),
        (lambda p: write_checkpoint(p, feature_schema="no-such-schema"), "no installed plugin provides"),
        (lambda p: write_checkpoint(p, feature_version=999), "v999, this installation computes"),
        (lambda p: write_checkpoint(p, arch={**_arch_of(write_checkpoint(p)), "hidden": 8}), "do not fit the architecture"),
        (lambda p: write_checkpoint(p, calibration={"edges": [1.0, 0.0], "values": [0.5, 0.5]}), "'calibration'"),
    ],
    ids=["missing", "garbage", "arbitrary-pickle", "not-a-dict", "format", "format-version", "schema",
         "schema-version", "weights", "calibration"],
)  # fmt: skip
def test_unusable_model_file_gives_a_clear_error_naming_it(tmp_path, write, message):
    path = tmp_path / "model.pt"
    write(path)
    with pytest.raises(ModelLoadError, match=message) as error:
        LearnedScorer.load(path)
    assert str(path) in str(error.value)


def test_checksum_mismatch_names_file_and_fix(tmp_path):
    folder = write_model_folder(tmp_path / "m", "x")
    write_checkpoint(folder / "model.pt", seed=42)  # replaced after the manifest was written
    with pytest.raises(ModelLoadError, match="checksum mismatch.*reinstall"):
        load_checkpoint(folder / "model.pt", read_manifest(folder).sha256)


def test_manifest_and_checkpoint_must_agree_on_the_feature_schema(tmp_path):
    folder = write_model_folder(tmp_path / "m", "x", feature_version=registry.feature_extractors()["gemm"].version + 1)
    with pytest.raises(ModelLoadError, match="regenerate the manifest"):
        manifest_entry(folder).load()


# -- where models come from, and which one is picked ---------------------------------------------


def test_models_on_the_models_path_are_registered_and_picked_by_hardware(models_path, h100):
    write_model_folder(models_path / "good", "acme-h100-big", priority=5)
    write_model_folder(models_path / "small", "acme-h100-small", priority=1)
    write_model_folder(models_path / "a100", "acme-a100", hardware=("A100",), priority=9)
    (models_path / "not-a-model").mkdir()  # no manifest: ignored
    entries = catalog.scorer_entries()
    assert {"acme-h100-big", "acme-h100-small", "acme-a100", "analytical"} <= set(entries)
    assert isinstance(entries["acme-h100-big"], ModelEntry) and entries["acme-h100-big"].source.startswith("DIODE_MODELS_PATH")
    assert catalog.pick_entry(h100).name == "acme-h100-big"
    assert catalog.list_available_models("h100") == ["acme-h100-big", "acme-h100-small", "analytical"]
    assert catalog.pick_entry(catalog.resolve_hardware("a100")).name == "acme-a100"


@pytest.mark.parametrize(
    "priority, metrics, picked, because",
    [
        (10, {}, "nvidia-h100-gemm", "where mine is not validated"),
        (10, {"top1_regret_geomean": 1.2}, "nvidia-h100-gemm", "a validated top-1 regret of {shipped:.3f} where mine has 1.200"),
        (10, {"top1_regret_geomean": 1.01}, "mine", "a validated top-1 regret of 1.010 where nvidia-h100-gemm has {shipped:.3f}"),
        (11, {}, "mine", "priority 11, above nvidia-h100-gemm's 10"),
    ],
)
def test_a_model_on_the_models_path_outranks_the_shipped_one_only_when_it_says_so_or_validates_better(
    tmp_path, monkeypatch, h100, priority, metrics, picked, because
):
    write_model_folder(tmp_path / "models" / "mine", "mine", hardware=("H100",), priority=priority, metrics=metrics)
    monkeypatch.setenv("DIODE_MODELS_PATH", str(tmp_path / "models"))
    assert catalog.list_available_models(h100)[:2] == sorted(["mine", "nvidia-h100-gemm"], key=lambda n: n != picked)
    entry = catalog.pick_entry(h100)
    assert entry.name == picked
    shipped = catalog.scorer_entries()["nvidia-h100-gemm"].manifest.metrics["top1_regret_geomean"]
    assert because.format(shipped=shipped) in catalog.pick_reason(h100, entry)


def test_a_broken_manifest_hides_no_other_model(models_path, h100, caplog):
    write_model_folder(models_path / "good", "acme-h100")
    broken = write_model_folder(models_path / "broken", "acme-broken")
    (broken / "manifest.json").write_text("{}")
    with caplog.at_level(logging.WARNING, logger="diode_backend"):
        assert "acme-h100" in catalog.scorer_entries() and "acme-broken" not in catalog.scorer_entries()
    assert diode_backend.stats()["counters"]["model_manifest_errors"] == 1
    assert any(str(broken) in r.getMessage() for r in caplog.records)


def test_automatic_pick_skips_a_model_that_cannot_load_and_counts_it(models_path, h100, caplog):
    write_model_folder(models_path / "fine", "acme-h100-fine", priority=1)
    damaged = write_model_folder(models_path / "damaged", "acme-h100-damaged", priority=9)
    write_checkpoint(damaged / "model.pt", seed=7)  # no longer what the manifest describes
    with caplog.at_level(logging.WARNING, logger="diode_backend"):
        assert catalog.pick_entry(h100).name == "acme-h100-fine"
        assert catalog.pick_entry(h100).name == "acme-h100-fine"
    assert diode_backend.stats()["counters"]["model_load_failures"] == 1  # counted once, not per GEMM
    assert sum("acme-h100-damaged" in r.getMessage() for r in caplog.records) == 1


def test_model_chosen_by_name_that_cannot_load_is_a_clear_error(models_path, h100):
    damaged = write_model_folder(models_path / "damaged", "acme-h100-damaged")
    (damaged / "model.pt").unlink()
    with pytest.raises(DiodeOptionError, match="acme-h100-damaged.*model file not found; reinstall"):
        catalog.pick_entry(h100, "acme-h100-damaged")


def test_model_chosen_by_path_file_or_folder(tmp_path):
    cpu = catalog.get_detected_hardware("cpu")
    model_file = write_checkpoint(tmp_path / "mine.pt")
    entry = catalog.pick_entry(cpu, str(model_file))  # any hardware: the user asked for it
    assert entry.name == str(model_file) and isinstance(registry.load_scorer(entry), LearnedScorer)
    folder = write_model_folder(tmp_path / "folder", "named-in-manifest")
    assert catalog.pick_entry(cpu, str(folder)).name == str(folder)
    with pytest.raises(DiodeOptionError, match="no such model file or folder"):
        catalog.pick_entry(cpu, str(tmp_path / "missing.pt"))
    with pytest.raises(DiodeOptionError, match="no such model. Registered models: .*analytical"):
        catalog.pick_entry(cpu, "no-such-model")


def test_shipped_models_folder_is_the_repository_one():
    """In a checkout diode_backend/trained_models links to trained_models/ (wheels copy it)."""
    assert SHIPPED_MODELS.resolve() == (REPO / "trained_models").resolve()
    shipped = model_entries(SHIPPED_MODELS, source="shipped")
    assert {e.name for e in shipped} <= set(catalog.scorer_entries())


def test_plugin_ships_models_with_the_entries_helper(tmp_path, h100):
    write_model_folder(tmp_path / "plugin-models" / "v1", "vendor-h100", priority=50)

    class VendorPlugin:
        @hookimpl
        def diode_register_scorers(self, register):
            for entry in model_entries(tmp_path / "plugin-models", source="diode-vendor"):
                register(entry)

    plugin = VendorPlugin()
    plugins.get_plugin_manager().register(plugin, name="vendor")
    try:
        assert catalog.pick_entry(h100).name == "vendor-h100"
        assert registry.scorer_sources()["vendor-h100"] == "vendor"
        assert catalog.scorer_entries()["vendor-h100"].source == "diode-vendor"
    finally:
        plugins.get_plugin_manager().unregister(plugin)


def test_wheel_carries_model_files_and_the_entry_point_module_but_not_training_data(tmp_path):
    """Build a wheel from a copy of the project with one shipped model and its data beside it."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "diode_backend", project / "diode_backend", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    for name in ("pyproject.toml", "README.md", "diode_backend_autoload.py"):
        shutil.copy(REPO / name, project / name)
    shutil.rmtree(project / "trained_models", ignore_errors=True)
    write_model_folder(project / "trained_models" / "acme", "acme")
    (project / "trained_models" / "acme" / "train.msgpack").write_bytes(b"training data")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"), str(project)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("diode_backend-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"diode_backend/trained_models/acme/manifest.json", "diode_backend/trained_models/acme/model.pt"} <= names
    assert not any(name.endswith("train.msgpack") for name in names)
    assert "diode_backend_autoload.py" in names  # the torch.backends entry point, beside the package


# -- the functions torch-diode users know --------------------------------------------------------


def test_root_exports_stay_lazy():
    code = "import sys, diode_backend; print('diode_backend.registry' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    assert diode_backend.list_available_models is catalog.list_available_models
    assert diode_backend.register_model is catalog.register_model


def test_get_detected_hardware_describes_this_machine():
    hardware = diode_backend.get_detected_hardware()
    assert hardware is not None
    assert hardware.device_type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_hardware_can_be_named_wherever_it_is_asked_for(h100):
    assert diode_backend.get_detected_hardware("h100") == h100
    assert diode_backend.get_detected_hardware("cpu").device_type == "cpu"
    report = diode_backend.status("h100")
    assert report["hardware"] == h100.to_dict() and report["requested"] == "h100"
    assert [m["name"] for m in report["models"] if m["selected"]] == ["nvidia-h100-gemm"]
    for ask in (diode_backend.get_detected_hardware, diode_backend.status):
        with pytest.raises(DiodeOptionError, match="unknown hardware 'h900': name a known device"):
            ask("h900")


def test_list_available_models_without_and_with_hardware(models_path):
    write_model_folder(models_path / "m", "acme-h100")
    names = diode_backend.list_available_models()
    assert "acme-h100" in names and "analytical" in names
    assert diode_backend.list_available_models("a100") == ["analytical"]


def test_register_model_makes_it_the_pick_on_any_hardware(models_path, tmp_path):
    write_model_folder(models_path / "m", "acme-h100")
    cpu = catalog.get_detected_hardware("cpu")
    assert catalog.pick_entry(cpu) is None  # nothing applies to a CPU by itself
    assert diode_backend.register_model("acme-h100") == "acme-h100"
    assert catalog.pick_entry(cpu).name == "acme-h100"
    path = write_checkpoint(tmp_path / "own.pt")
    assert diode_backend.register_model(path) == str(path)
    assert catalog.pick_entry(cpu).name == str(path) and str(path) in diode_backend.list_available_models()
    assert catalog.pick_entry(cpu, "analytical").name == "analytical"  # diode_model still wins
    assert diode_backend.register_model(None) is None
    assert catalog.pick_entry(cpu) is None


def test_register_model_refuses_what_cannot_be_used(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"nope")
    with pytest.raises(DiodeOptionError, match="not a loadable checkpoint"):
        diode_backend.register_model(bad)
    with pytest.raises(DiodeOptionError, match="no such model"):
        diode_backend.register_model("no-such-model")
    assert catalog.pick_entry(catalog.get_detected_hardware("cpu")) is None


# -- known hardware -----------------------------------------------------------------------------


def test_known_hardware_describes_devices_offline(h100):
    assert catalog.resolve_hardware("H100") == h100
    assert (h100.name, h100.sm_count, h100.compute_capability) == ("NVIDIA H100 80GB HBM3", 132, (9, 0))
    assert h100.shared_memory_per_block == 232448 and h100.l2_bytes == 50 * 2**20
    assert h100.peak_tflops["bfloat16"] > 900  # the same datasheet peaks detection adds
    with pytest.raises(DiodeOptionError, match="unknown hardware 'h900'.*h100"):
        catalog.resolve_hardware("h900")


@pytest.mark.gpu
def test_known_description_equals_the_detected_one():
    detected = catalog.get_detected_hardware("cuda")
    named = [hw for hw in registry.known_hardware().values() if hw.name == detected.name]
    if not named:
        pytest.skip(f"{detected.name} is not in the known-hardware table")
    for field in ("sm_count", "compute_capability", "shared_memory_per_block", "l2_bytes", "peak_tflops"):
        assert getattr(named[0], field) == getattr(detected, field), field


# -- inside torch.compile -----------------------------------------------------------------------


def _linear(x, w, b):
    return torch.nn.functional.linear(x, w, b)


def _args():
    torch.manual_seed(0)
    return torch.randn(8, 64), torch.randn(32, 64), torch.randn(32)


def _compile(**options):
    from torch._inductor import config

    with config.patch(max_autotune=True, max_autotune_gemm_backends="DIODE", fx_graph_cache=False, **options):
        torch._dynamo.reset()
        return torch.compile(_linear)(*_args())


def test_learned_model_named_by_path_ranks_inside_torch_compile(isolated_caches, tmp_path):
    path = write_checkpoint(tmp_path / "model.pt")
    out = _compile(fast_autotune=True, diode_model=str(path))
    torch.testing.assert_close(out, _linear(*_args()))
    stats = diode_backend.stats()
    assert stats["decisions"] == 1 and stats["picks_by_model"] == {str(path): 1}
    assert stats["errors"] == {}


def test_automatic_model_that_cannot_load_never_fails_the_compile(isolated_caches, models_path):
    cpu_name = catalog.get_detected_hardware("cpu").name
    damaged = write_model_folder(models_path / "damaged", "acme-cpu", hardware=(cpu_name,))
    write_checkpoint(damaged / "model.pt", seed=5)
    out = _compile(fast_autotune=True)
    torch.testing.assert_close(out, _linear(*_args()))
    stats = diode_backend.stats()
    assert stats["counters"]["model_load_failures"] == 1
    assert stats["fallbacks"] == {"no_model": 1} and stats["errors"] == {}


def test_explicit_model_that_cannot_load_stops_the_compile_with_its_name(isolated_caches, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"nope")
    with pytest.raises(Exception, match=r"diode_model=.*bad\.pt.*not a loadable checkpoint"):
        _compile(diode_model=str(bad))


def test_a_plugin_with_a_misspelled_hook_is_named_and_skipped(caplog):
    import pluggy

    from diode_backend import hookspecs

    class Misspelled:
        @hookimpl
        def diode_register_scorer(self, register):  # the hook is diode_register_scorers
            register(ScorerEntry("never", lambda: None, lambda hw: True))

    class Fine:
        @hookimpl
        def diode_known_hardware(self, register):
            register("fine", HardwareInfo("Fine GPU", "nvidia"))

    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(Misspelled(), name="diode-misspelled")
    pm.register(Fine(), name="diode-fine")
    with caplog.at_level("WARNING", logger="diode_backend"):
        plugins._drop_unknown_hooks(pm)
    assert pm.get_plugin("diode-misspelled") is None and pm.get_plugin("diode-fine") is not None
    assert "diode plugin diode-misspelled implements diode_register_scorer, which is no diode hook" in caplog.text
    pm.check_pending()  # what is left passes pluggy's own check
