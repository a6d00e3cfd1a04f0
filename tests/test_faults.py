"""Fault injection (issue 16): hostile files, plugins and values, with real files, processes and
plugin classes. Each test reproduces one failure the issue lists and fails without its fix."""

from __future__ import annotations

import array
import contextlib
import json
import logging
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import diode_backend
from diode_backend import cache, catalog, hookimpl, plugins
from diode_backend.model.checkpoint import ModelLoadError
from diode_backend.model.manifest import read_manifest
from diode_backend.options import DiodeOptionError
from diode_backend.policy import rank_candidates
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig
from diode_backend.scorer import Prediction, ScorerEntry

from model_files import write_model_folder

ROOT = Path(__file__).resolve().parent.parent

# A second ranking of one GEMM with the cache entry replaced by something hostile; prints the
# cache counters and whether the entry is a regular file again (repaired) afterwards.
_HOSTILE_ENTRY = textwrap.dedent(
    """
    import json, os, stat, sys
    import diode_backend
    from diode_backend import cache
    from diode_backend.policy import rank_candidates
    from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig
    from diode_backend.scorer import Prediction

    class Scorer:
        name = identity = "fixed"
        def predict(self, problem, configs, hardware):
            return Prediction(tuple(float(i + 1) for i in range(len(configs))), 0.5)

    hw = HardwareInfo("NVIDIA H100", "nvidia")
    problem = GemmProblem("mm", 64, 64, 64)
    configs = [KernelConfig("aten", "aten::mm"), KernelConfig("triton", "triton::mm", 32, 32, 32, 2, 4, 8)]
    rank_candidates(cache.CachingScorer(Scorer()), problem, configs, hw)
    path = cache.default_cache().path_of(cache.prediction_key(Scorer(), problem, configs, hw))
    path.unlink()
    if sys.argv[1] == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    ranking = rank_candidates(cache.CachingScorer(Scorer()), problem, configs, hw)
    print(json.dumps({"order": list(ranking.order), "counters": diode_backend.stats()["counters"],
                      "repaired": stat.S_ISREG(os.lstat(path).st_mode)}))
    """
)


def _limit_memory() -> None:
    # without the fix /dev/zero is read until memory runs out: fail fast instead of swapping
    resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))


@pytest.mark.parametrize("hostile", ["fifo", "link_to_dev_zero"])
def test_hostile_cache_entry_is_a_counted_miss_and_is_repaired(tmp_path, hostile):
    """Issue 16 failure 1: a FIFO entry hung torch.compile; a link to /dev/zero took 11 GB."""
    env = {**os.environ, "DIODE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _HOSTILE_ENTRY, hostile],
            env=env, capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading a {hostile} cache entry hung")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["order"] == [0, 1]
    counters = result["counters"]
    assert counters["prediction_cache_corrupt"] == 1 and counters["prediction_cache_misses"] == 2
    assert "prediction_cache_errors" not in counters
    assert result["repaired"]


def _make_hostile(path: Path, hostile: str) -> None:
    path.unlink(missing_ok=True)
    if hostile == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)


def _last_line_of(code: str, *args: str) -> str:
    """Run ``code`` in a fresh Python (60 s and 6 GiB at most) and return the last line it
    printed; a hang fails the test instead of the test run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), *args],
            env=env, capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {args} hung")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


_READ = """
    import sys
    from diode_backend.offline.dataset import load_dataset
    from diode_backend.model.checkpoint import load_checkpoint
    from diode_backend.model.manifest import read_manifest
    try:
        {"manifest": read_manifest, "model": load_checkpoint, "shard": load_dataset}[sys.argv[1]](sys.argv[2])
        print("read")
    except Exception as err:
        print(f"{type(err).__name__}: {err}")
"""


@pytest.mark.parametrize("hostile", ["fifo", "link_to_dev_zero"])
@pytest.mark.parametrize("what", ["manifest", "model", "shard"])
def test_hostile_model_manifest_or_shard_is_a_clear_error_never_a_hang(tmp_path, what, hostile):
    """Issue 16 failure 1 for the other files DIODE reads: a FIFO or a device where a manifest,
    a model file or a dataset shard should be is refused at once, naming the file."""
    folder = write_model_folder(tmp_path / "m", "x")
    path = {"manifest": folder / "manifest.json", "model": folder / "model.pt", "shard": tmp_path / "part-000.msgpack"}[what]
    _make_hostile(path, hostile)
    outcome = _last_line_of(_READ, what, str(path if what != "shard" else tmp_path))
    error = "DatasetError" if what == "shard" else "ModelLoadError"
    assert outcome.startswith(f"{error}: {path}: not a regular file"), outcome


@pytest.mark.parametrize("name", ["/dev/zero", "../other/model.pt", "sub/../../model.pt", ""])
def test_manifest_file_must_stay_in_its_folder(tmp_path, name):
    """Issue 16 failure 1: a manifest whose ``file`` is /dev/zero grew memory without limit."""
    folder = write_model_folder(tmp_path / "m", "x")
    data = json.loads((folder / "manifest.json").read_text())
    data["file"] = name
    (folder / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ModelLoadError, match="must name a file in the manifest's own folder") as error:
        read_manifest(folder)
    assert str(folder / "manifest.json") in str(error.value)


def test_model_file_in_a_subfolder_of_its_manifest_is_fine(tmp_path):
    folder = write_model_folder(tmp_path / "m", "x", file="weights/model.pt")
    assert read_manifest(folder).file == "weights/model.pt"


# -- plugins (issue 16, failures 2 and 3) ---------------------------------------------------------


class _Named:
    """A scorer that predicts the first candidate fastest."""

    name = identity = "fault-test-named"

    def predict(self, problem, configs, hardware):
        return Prediction(tuple(float(i + 1) for i in range(len(configs))), 0.9)


class _NamedScorerPlugin:
    @hookimpl
    def diode_register_scorers(self, register):
        register(ScorerEntry(_Named.name, _Named, lambda hw: False, identity=_Named.identity))


def _raise(error: BaseException):
    def fail(*args, **kwargs):
        raise error

    return fail


@contextlib.contextmanager
def _registered(**named_plugins):
    pm = plugins.get_plugin_manager()
    for name, plugin in named_plugins.items():
        pm.register(plugin, name=name)
    try:
        yield
    finally:
        for plugin in named_plugins.values():
            pm.unregister(plugin)


@pytest.mark.parametrize("error", [RuntimeError("registration exploded"), SystemExit(3)], ids=["RuntimeError", "SystemExit"])
def test_a_plugin_whose_scorer_registration_fails_hides_no_other_model(error, caplog):
    """Failure 3: a raising diode_register_scorers disabled the shipped and the named models too."""

    class Broken:
        diode_register_scorers = hookimpl(_raise(error))

    h100 = catalog.resolve_hardware("h100")
    broken = f"broken_{type(error).__name__}"  # warnings are once per process: a name per case
    with _registered(**{broken: Broken()}, named_plugin=_NamedScorerPlugin()):
        with caplog.at_level(logging.WARNING, logger="diode_backend"):
            assert catalog.pick_entry(h100).name == "nvidia-h100-gemm"  # the shipped model
            assert catalog.pick_entry(h100, _Named.name).name == _Named.name
            assert "analytical" in catalog.list_available_models()
    warnings = [r.getMessage() for r in caplog.records if repr(broken) in r.getMessage()]
    assert len(warnings) == 1 and "diode_register_scorers" in warnings[0]
    assert diode_backend.stats()["counters"]["plugin_errors"] == 1


@pytest.mark.parametrize("error", [RuntimeError("applies_to exploded"), SystemExit(3)], ids=["RuntimeError", "SystemExit"])
def test_a_scorer_whose_applies_to_fails_is_skipped_alone(error, caplog):
    """Failure 3: a raising applies_to disabled every model; SystemExit ended the process."""

    class BadCheck:
        @hookimpl
        def diode_register_scorers(self, register):
            register(ScorerEntry(bad, _Named, _raise(error), priority=100, identity=bad))

    bad = f"bad-check-{type(error).__name__}"  # warnings are once per process: a name per case
    h100 = catalog.resolve_hardware("h100")
    with _registered(bad_check_plugin=BadCheck(), named_plugin=_NamedScorerPlugin()):
        with caplog.at_level(logging.WARNING, logger="diode_backend"):
            for _ in range(2):
                assert catalog.pick_entry(h100).name == "nvidia-h100-gemm"
            assert catalog.pick_entry(h100, _Named.name).name == _Named.name
            assert catalog.pick_entry(h100, bad).name == bad  # chosen by name: applies_to is not asked
    assert len([r for r in caplog.records if repr(bad) in r.getMessage()]) == 1


_EXITING_IMPORT = """
    import logging, sys
    logging.basicConfig(level=logging.WARNING)
    from diode_backend import catalog
    print(sorted(catalog.scorer_entries()))
"""


def test_a_plugin_that_exits_on_import_is_skipped_with_one_line(tmp_path):
    """Failure 2: sys.exit() in a plugin's import ended the process (here a real entry point)."""
    site = tmp_path / "site"
    (site / "exiting_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "exiting_plugin.py").write_text("import sys\nsys.exit(4)\n")
    (site / "exiting_plugin-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: exiting-plugin\nVersion: 0.1\n")
    (site / "exiting_plugin-0.1.dist-info" / "entry_points.txt").write_text("[diode]\nexiting = exiting_plugin\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)])}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_EXITING_IMPORT)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "'analytical'" in done.stdout and "'nvidia-h100-gemm'" in done.stdout
    assert "diode plugin exiting failed to load and is skipped: SystemExit: 4" in done.stderr


_EXITING_SCORER = """
    import json, sys, torch
    from torch._inductor import config
    import diode_backend
    from diode_backend import hookimpl, plugins
    from diode_backend.scorer import ScorerEntry

    class Exiting:
        name = identity = "exiting"
        def predict(self, problem, configs, hardware):
            sys.exit(3)

    class Plugin:
        @hookimpl
        def diode_register_scorers(self, register):
            register(ScorerEntry("exiting", Exiting, lambda hw: False, identity="exiting"))

    plugins.get_plugin_manager().register(Plugin(), name="exiting_scorer")
    def f(x, w):
        return x @ w
    x, w = torch.randn(8, 64), torch.randn(64, 32)
    with config.patch(max_autotune=True, max_autotune_gemm_backends="DIODE", fx_graph_cache=False,
                      diode_model="exiting"):
        out = torch.compile(f)(x, w)
    torch.testing.assert_close(out, f(x, w))
    print(json.dumps(diode_backend.stats()["errors"]))
"""


def test_a_scorer_that_exits_inside_torch_compile_falls_back(tmp_path):
    """Failure 2: sys.exit() in a scorer's predict ended the process running torch.compile."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DIODE_CACHE_DIR": str(tmp_path / "cache"),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_EXITING_SCORER)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"ranking:SystemExit": 1}


# -- values read back (issue 16, failure 6) -----------------------------------------------------


class _Answers:
    """A scorer that answers what it was given (times for two candidates, a confidence)."""

    def __init__(self, times, confidence):
        self.times, self.confidence = times, confidence
        self.name = self.identity = f"answers-{times}-{confidence}"
        self.calls = 0

    def predict(self, problem, configs, hardware):
        self.calls += 1
        return Prediction(self.times, self.confidence)


_MM = GemmProblem("mm", 64, 64, 64)
_TWO = [KernelConfig("aten", "aten::mm"), KernelConfig("triton", "triton::mm", 32, 32, 32, 2, 4, 8)]
_H100 = HardwareInfo("NVIDIA H100", "nvidia")


@pytest.mark.parametrize(
    "times, confidence, message",
    [
        ((1.0, 2.0), 5.0, "confidence 5.0"),
        ((1.0, 2.0), math.nan, "confidence nan"),
        ((-1.0, 2.0), 0.5, "predicted -1.0 us"),
        ((0.0, 2.0), 0.5, "predicted 0.0 us"),
        ((-math.inf, 2.0), 0.5, "predicted -inf us"),
    ],
)
def test_an_out_of_range_prediction_decides_nothing_and_is_not_cached(times, confidence, message):
    """Failure 6: a plugin's confidence of 5.0 decided the kernel, then its entry was refused as
    corrupt on every later run."""
    scorer = _Answers(times, confidence)
    for _ in range(2):
        with pytest.raises(ValueError, match=f"scorer {re.escape(repr(scorer.name))}.*{re.escape(message)}"):
            rank_candidates(cache.CachingScorer(scorer), _MM, _TWO, _H100)
    assert "prediction_cache_corrupt" not in diode_backend.stats()["counters"]
    assert not list(cache.default_cache().directory.rglob("*.msgpack"))


def test_a_whole_number_confidence_is_cached_and_served(isolated_caches):
    """Failure 6: a confidence of 1 (an int) was used, then refused as corrupt on every read."""
    scorer = _Answers((2.0, math.inf), 1)
    first = rank_candidates(cache.CachingScorer(scorer), _MM, _TWO, _H100)
    second = rank_candidates(cache.CachingScorer(scorer), _MM, _TWO, _H100)
    assert scorer.calls == 1 and first == second and second.confidence == 1.0
    counts = diode_backend.stats()["counters"]
    assert counts["prediction_cache_hits"] == 1 and "prediction_cache_corrupt" not in counts


# -- broken manifests (issue 16, failure 6) -----------------------------------------------------


@pytest.fixture
def models_with_a_broken_one(tmp_path, monkeypatch):
    """A DIODE_MODELS_PATH with a good model and ``acme``, whose manifest lost its checksum."""
    folder = tmp_path / "models"
    write_model_folder(folder / "good", "good-h100")
    broken = write_model_folder(folder / "acme", "acme")
    data = json.loads((broken / "manifest.json").read_text())
    del data["sha256"]
    (broken / "manifest.json").write_text(json.dumps(data))
    monkeypatch.setenv("DIODE_MODELS_PATH", str(folder))
    return broken / "manifest.json"


def test_models_check_fails_on_a_broken_manifest(capsys, models_with_a_broken_one):
    """Failure 6: `diode models --check` exited 0 while a manifest was broken."""
    from diode_backend.offline.cli import main

    for json_flag in ([], ["--json"]):
        assert main(["models", "--hardware", "h100", "--check", *json_flag]) == 1
        out = capsys.readouterr().out
        assert str(models_with_a_broken_one) in out and "missing 'sha256'" in out
    assert main(["models", "--hardware", "h100"]) == 0  # listing is not checking


def test_naming_a_model_whose_manifest_is_broken_says_what_is_wrong(models_with_a_broken_one):
    """Failure 6: naming it said "no such model" instead of pointing at the manifest."""
    with pytest.raises(DiodeOptionError, match="missing 'sha256'") as error:
        catalog.pick_entry(catalog.resolve_hardware("h100"), "acme")
    assert str(models_with_a_broken_one) in str(error.value)
    assert catalog.pick_entry(catalog.resolve_hardware("h100"), "good-h100").name == "good-h100"


# -- damaged dataset shards (issue 16, failure 4) ------------------------------------------------


def _damage(payload: dict, damage: str) -> None:
    """Damage a decoded shard the way a hand edit, another tool or a bad disk would."""
    problems, configs, timings = payload["problems"], payload["configs"], payload["timings"]
    if damage == "short column":
        problems["k"].pop()
    elif damage == "config index out of range":
        rows = array.array("I", timings["config"])
        rows[3] = len(configs["kind"]) + 7
        timings["config"] = rows.tobytes()
    elif damage == "non-numeric tile":
        configs["block_m"][-1] = "sixty-four"
    elif damage == "string m":
        problems["m"][0] = "64"
    elif damage == "dtype float99":
        problems["dtype"][1] = "float99"
    elif damage == "op conv":
        problems["op"][0] = "conv"
    elif damage in ("nan time", "negative time"):
        times = array.array("f", timings["time_us"])
        times[5] = math.nan if damage == "nan time" else -3.0
        timings["time_us"] = times.tobytes()


_DAMAGE = {
    "short column": "column 'k' has 5 values, the other problem columns 6",
    "config index out of range": "timing row 3 names config",
    "non-numeric tile": "block_m 'sixty-four' is not a whole number >= 0",
    "string m": "m '64' is not a whole number >= 1",
    "dtype float99": "dtype 'float99' is not one of float16, bfloat16, float32",
    "op conv": "op 'conv' is not one of mm, addmm, bmm, baddbmm",
    "nan time": "timing row 5 is nan us",
    "negative time": "timing row 5 is -3.0 us",
}


@pytest.fixture
def damaged_shard(tmp_path, request):
    """A dataset folder whose one shard is damaged as ``request.param`` says."""
    import msgpack

    from synthetic_timings import write_dataset

    folder = write_dataset(tmp_path / "data", train=4, validation=2)
    shard = folder / "part-000.msgpack"
    payload = msgpack.unpackb(shard.read_bytes(), raw=False)
    _damage(payload, request.param)
    shard.write_bytes(msgpack.packb(payload, use_bin_type=True))
    return shard, _DAMAGE[request.param]


@pytest.mark.parametrize("damaged_shard", list(_DAMAGE), indirect=True)
@pytest.mark.parametrize("command", ["dataset info", "train", "validate"])
def test_a_damaged_shard_is_one_line_naming_the_file_and_the_fix(capsys, tmp_path, damaged_shard, command):
    """Failure 4: IndexError, struct.error or TypeError tracebacks, float99 and conv accepted,
    NaN and negative times trained on or validated into nan figures."""
    from diode_backend.offline.cli import main

    shard, what = damaged_shard
    argv = {"dataset info": ["dataset", "info", str(shard.parent)],
            "train": ["train", str(shard.parent), "-o", str(tmp_path / "model"), "--max-epochs", "1"],
            "validate": ["validate", "analytical", str(shard.parent), "--no-default-baseline"]}[command]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"diode {argv[0]}: error: {shard}: ") and what in err
    assert "collect it again or move it out of the dataset" in err
    assert not (tmp_path / "model").exists()


def _one_candidate_problems(folder: Path, train: int, single: int) -> Path:
    """A dataset of ``train`` training problems, the first ``single`` timed on one candidate."""
    from dataclasses import replace

    from diode_backend.offline.dataset import DatasetMeta, write_shard
    from synthetic_timings import H100, synthetic_problems

    problems = synthetic_problems(train)
    problems[:single] = [replace(p, configs=p.configs[:1], times_us=p.times_us[:1], failed=len(p.configs) - 1) for p in problems[:single]]
    write_shard(folder / "part-000.msgpack", DatasetMeta(H100), problems)
    return folder


def test_train_says_why_it_left_problems_out(capsys, tmp_path):
    """Failure 4: problems train could not learn from vanished without a word ("got 0 problems")."""
    from diode_backend.offline.cli import main

    tiny = ["--max-epochs", "1", "--steps-per-epoch", "2", "--hidden", "8", "--ensemble", "2"]
    data = _one_candidate_problems(tmp_path / "some", train=8, single=3)
    assert main(["train", str(data), "-o", str(tmp_path / "model"), *tiny]) == 0
    assert "left out 3 training problems with fewer than two timed candidates" in capsys.readouterr().out
    data = _one_candidate_problems(tmp_path / "all", train=4, single=4)
    assert main(["train", str(data), "-o", str(tmp_path / "none"), *tiny]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "got 0: 4 of the 4 training problems have fewer than two timed candidates" in err


@pytest.mark.parametrize("model", ["analytical", "learned"])
def test_validate_prints_no_nan_figures(capsys, tmp_path, model):
    """Failure 4: figures that do not exist (an AUROC without misses, the worst of no trusted
    pick, an uncalibrated model's ECE) were printed as nan."""
    from diode_backend.offline.cli import main
    from model_files import write_checkpoint
    from synthetic_timings import write_dataset

    data = write_dataset(tmp_path / "data", train=6, validation=3)
    if model == "learned":
        model = str(write_checkpoint(tmp_path / "m.pt", calibration={"edges": [0.0, 1.0], "values": [0.2, 0.8]}))
    assert main(["validate", model, str(data), "--no-default-baseline", "--report", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "top-1 geomean" in out and not re.search(r"\bnan\b", out, re.IGNORECASE), out

    def refuse(constant):
        raise AssertionError(f"{constant} in a JSON report")

    assert main(["validate", model, str(data), "--no-default-baseline", "--json"]) == 0
    for text in (capsys.readouterr().out, (tmp_path / "r.json").read_text()):
        json.loads(text, parse_constant=refuse)  # strict JSON: null where a figure is not a number


# -- plugin faults under the CLI (issue 16, failure 4) --------------------------------------------


class _FaultyPlugin:
    """Hooks and a scorer, ``faulty``, that fail at ``where`` by an exception or ``sys.exit(5)``."""

    def __init__(self, where: str, exits: bool) -> None:
        self.where, self.exits = where, exits

    def fault(self, where: str) -> None:
        if where == self.where:
            if self.exits:
                sys.exit(5)
            raise RuntimeError(f"{where} exploded")

    @hookimpl
    def diode_register_scorers(self, register):
        plugin = self

        class Faulty:
            name = identity = "faulty"

            def __init__(self):
                plugin.fault("load")

            def predict(self, problem, configs, hardware):
                plugin.fault("predict")
                return Prediction(tuple(float(i + 1) for i in range(len(configs))), 0.5)

        def applies(hardware):
            self.fault("applies_to")
            return True

        self.fault("register")
        register(ScorerEntry("faulty", Faulty, applies, priority=1000, identity="faulty"))

    @hookimpl
    def diode_detect_hardware(self, device):
        self.fault("detect")

    @hookimpl
    def diode_known_hardware(self, register):
        self.fault("known")


_COMMANDS = {
    "models": ["models", "--hardware", "h100", "--check"],
    "predict": ["predict", "mm", "64x64x64", "--hardware", "h100", "--space", "DEFAULT"],
    "predict --model": ["predict", "mm", "64x64x64", "--hardware", "h100", "--space", "DEFAULT", "--model", "faulty"],
    "status": ["status", "--hardware", "cpu"],
}
#: Where a fault fails a command (exit 1, one line naming the model): where it was asked for
#: (named, or its predictions printed) or checked; elsewhere the other models answer.
_FAILS = {("models", "load"), ("predict", "predict"), ("predict --model", "load"), ("predict --model", "predict"),
          ("predict --model", "register")}  # fmt: skip


@pytest.mark.parametrize("exits", [False, True], ids=["raises", "exits"])
@pytest.mark.parametrize("where", ["register", "detect", "known", "applies_to", "load", "predict"])
def test_plugin_faults_under_the_cli_are_one_line(capsys, where, exits):
    """Failure 4: a plugin failing in a hook, or its scorer in load or predict, by an exception
    or by sys.exit(), gave a traceback (or ended with status 5) under `diode models`, `predict`
    and `status`. A command fails only where the faulty model was needed, with one line."""
    from diode_backend.offline.cli import main

    for name, argv in _COMMANDS.items():
        catalog.clear()  # each command as in a process of its own
        with _registered(faulty=_FaultyPlugin(where, exits)):
            code = main(argv)
        out, err = capsys.readouterr()
        if (name, where) not in _FAILS:
            assert code == 0 and not err, (name, code, err)
            continue
        assert code == 1 and len(err.splitlines()) <= 1, (name, code, err)
        failure = "SystemExit: 5" if exits else f"RuntimeError: {where} exploded"
        if name == "models":  # --check reports each model's failure in its row
            assert f"check: {failure}" in out and not err, (out, err)
        elif where == "register":  # nothing was registered: the plugin's own warning says why
            assert err.startswith("diode predict: error: diode_model='faulty': no such model"), err
        else:
            assert err.startswith("diode predict: error: ") and "'faulty'" in err and failure in err, err


# -- a killed feedback collection (issue 16, failure 5) ------------------------------------------

# compiles `count` bmm GEMMs of distinct shapes, printing a line after each; after the last it
# waits to be killed
_GEMMS = """
import sys, time, torch
count = int(sys.argv[1])
for i in range(count):
    n = 16 + 8 * i
    torch.compile(torch.bmm, mode="max-autotune-no-cudagraphs", dynamic=False)(torch.randn(2, n, 8), torch.randn(2, 8, n))
    print(f"compiled {i + 1}", flush=True)
time.sleep(600)
"""


def test_a_killed_feedback_collection_keeps_what_it_flushed(tmp_path):
    """Failure 5: `diode collect feedback` wrote only at exit, so SIGTERM or SIGKILL lost every
    GEMM it had recorded. Now SIGTERM loses none, SIGKILL at most those since the last shard (a
    shard is also written a minute after the last, so on a slow machine the third may be kept)."""
    from diode_backend.offline.dataset import load_dataset

    script = tmp_path / "gemms.py"
    script.write_text(_GEMMS)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DIODE_CACHE_DIR": str(tmp_path / "cache"),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}  # fmt: skip
    runs = {}
    for sig in (signal.SIGTERM, signal.SIGKILL):  # side by side: each compiles for seconds
        command = [sys.executable, "-m", "diode_backend", "collect", "feedback", "-o", str(tmp_path / sig.name),
                   "--device", "cpu", "--flush-every", "2", str(script), "3"]  # fmt: skip
        runs[sig] = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for sig, process in runs.items():
            for line in process.stdout:
                if line.strip() == "compiled 3":  # three GEMMs recorded, one since the last shard
                    break
            process.send_signal(sig)
            assert process.wait(timeout=60) == (128 + signal.SIGTERM if sig == signal.SIGTERM else -signal.SIGKILL)
    finally:
        for process in runs.values():
            process.kill()
            process.stdout.close()
    kept = {sig: sorted(item.problem.m for item in load_dataset(tmp_path / sig.name)) for sig in runs}
    assert kept[signal.SIGTERM] == [16, 24, 32]
    assert kept[signal.SIGKILL] in ([16, 24], [16, 24, 32])


# -- options (issue 16, failure 7) ---------------------------------------------------------------


@pytest.mark.parametrize(("options", "message"), [
    ({"diode_top_k": [3]}, "diode_top_k=[3]: expected a whole number >= 1"),
    ({"fast_autotune": 1}, "fast_autotune=1: expected True or False"),
    ({"diode_model": 3}, "diode_model=3: expected a string"),
])  # fmt: skip
def test_a_wrong_type_in_compile_options_names_the_diode_option(options, message):
    """Failure 7: torch.compile(options=...) raised torch's "Unexpected type of attr" RuntimeError."""
    with pytest.raises(DiodeOptionError, match=re.escape(message)):
        torch.compile(lambda a, b: a @ b, options=options)


# Compiles one GEMM with DIODE under a bad TORCHINDUCTOR_DIODE_TOP_K four ways; prints each outcome.
_BAD_ENV = """
import torch
from torch._inductor import config

def compile_gemm(**options):
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: a @ b, options={"max_autotune": True, "max_autotune_gemm_backends": "DIODE", **options})
    try:
        f(torch.randn(8, 8), torch.randn(8, 8))
        return "ok"
    except Exception as err:
        return "TORCHINDUCTOR_DIODE_TOP_K='abc'" if "TORCHINDUCTOR_DIODE_TOP_K='abc'" in str(err) else repr(err)

print(compile_gemm())  # nothing in code: the variable's error
print(compile_gemm(diode_top_k=5))  # the default, given to torch.compile
with config.patch(diode_top_k=5):
    print(compile_gemm())
config.diode_top_k = 5
print(compile_gemm())
"""


def test_an_option_set_in_code_wins_over_a_bad_environment_variable(tmp_path):
    """Failure 7: a bad TORCHINDUCTOR_DIODE_* variable stayed fatal when code set the option to
    its default value."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_DIODE_TOP_K": "abc", "DIODE_CACHE_DIR": str(tmp_path / "cache"),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", _BAD_ENV], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["TORCHINDUCTOR_DIODE_TOP_K='abc'", "ok", "ok", "ok"]


# -- a broken diode_backend under `import torch` (issue 16, failure 8) ---------------------------


def _declared_entry_point() -> str:
    """pyproject.toml's ``torch.backends`` entry point, as ``name = module:function``."""
    section = (ROOT / "pyproject.toml").read_text().split('[project.entry-points."torch.backends"]')[1]
    name, value = re.search(r'^(\w+) = "([^"]+)"', section, re.MULTILINE).groups()
    return f"{name} = {value}"


_BREAKAGES = {
    "syntax error": lambda package: (package / "__init__.py").write_text("def broken(:\n"),
    "missing dependency": lambda package: (package / "__init__.py").write_text("import a_dependency_that_is_gone\n"),
    "exits on import": lambda package: (package / "__init__.py").write_text("raise SystemExit(3)\n"),
}


@pytest.mark.parametrize("breakage", list(_BREAKAGES))
def test_import_torch_survives_a_broken_diode_backend(tmp_path, breakage):
    """Failure 8: when diode_backend could not be imported, `import torch` failed ("Failed to load
    the backend extension: diode") and DIODE_DISABLE=1 did not help. Here a real copy of the
    package, installed with the entry point pyproject.toml declares, is broken, then torch imported."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "diode_backend", site / "diode_backend", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    module = _declared_entry_point().split(" = ")[1].split(":")[0]
    shutil.copy(ROOT / f"{module}.py", site)
    info = site / "diode_backend-0.1.0.dist-info"  # shadows the installed distribution's entry points
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: diode-backend\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[torch.backends]\n{_declared_entry_point()}\n")
    _BREAKAGES[breakage](site / "diode_backend")
    code = f"import sys, torch; print(torch.ones(1).item(), sys.modules[{module!r}].__file__, 'diode_backend.inductor' in sys.modules)"
    for disable in ("0", "1"):
        env = {**os.environ, "PYTHONPATH": str(site), "DIODE_DISABLE": disable}
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.split() == ["1.0", str(site / f"{module}.py"), "False"]
        if disable == "1":
            assert done.stderr == ""  # switched off before the package is imported: not a word
        else:
            (line,) = done.stderr.splitlines()
            assert "diode-backend cannot be imported and is off" in line and "DIODE_DISABLE=1" in line
