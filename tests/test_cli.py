"""The ``diode`` command: plugins, models, predict, cache, status; help texts and one-line errors."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from diode_backend import measured
from diode_backend.cache import CachingScorer
from diode_backend.offline.cli import COMMANDS, build_parser, main
from diode_backend.options import OPTIONS_BY_NAME
from diode_backend.policy import rank_candidates
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig
from diode_backend.scorer import Prediction

from model_files import write_checkpoint, write_model_folder

MINE = ("status", "plugins", "models", "predict", "cache")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _parsers(parser, prefix="diode"):
    """Every (sub)parser under ``parser`` with its command line prefix."""
    yield prefix, parser
    for action in parser._actions:
        if action.choices and hasattr(action, "_name_parser_map"):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{prefix} {name}")


def test_subcommands_are_registered_with_complete_help():
    assert set(MINE) <= set(COMMANDS)
    parsers = dict(_parsers(build_parser()))
    for command in [f"diode {name}" for name in MINE] + ["diode cache info", "diode cache clear"]:
        parser = parsers[command]
        assert parser.description and len(parser.description) > 40, command
        for action in parser._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, f"{command}: {action.dest} has no help"


def test_help_and_version_import_no_torch():
    """`diode --help` answers at once: building the parser (every subcommand's) imports no torch."""
    code = (
        "import sys\nfrom diode_backend.offline.cli import main\n"
        "for argv in (['--help'], ['--version'], ['train', '--help'], ['collect', 'sweep', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit as done:\n        assert done.code == 0, argv\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "diode 0.1.0\n" in done.stdout and "--max-epochs MAX_EPOCHS" in done.stdout
    assert done.stdout.endswith("False\n")


def test_console_script_runs_in_a_real_process():
    script = Path(sys.executable).with_name("diode")
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from diode_backend.offline.cli import main; raise SystemExit(main())"]
    done = subprocess.run([*command, "plugins"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "diode_backend.builtin  [built-in]" in done.stdout


def test_a_closed_output_pipe_ends_quietly():
    """`diode predict ... | head`: the reader is gone before anything is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "diode_backend", "predict", "--hardware", "h100", "mm", "64x64x64"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert done.returncode == 141 and done.stderr == ""


def test_plugins_lists_distributions_and_hooks(capsys):
    code, out, _ = run(capsys, "plugins")
    assert code == 0
    assert "example  [diode-example 0.1.0]" in out and "nvidia  [diode-nvidia 0.1.0]" in out
    assert "diode_known_hardware" in out and "diode_register_scorers" in out
    code, out, _ = run(capsys, "plugins", "--json")
    by_name = {p["name"]: p for p in json.loads(out)}
    assert by_name["diode_backend.builtin"]["distribution"] == "built-in"
    assert "diode_detect_hardware" in by_name["nvidia"]["hooks"]


@pytest.fixture
def models_path(tmp_path, monkeypatch):
    from diode_backend.model import entries

    monkeypatch.setattr(entries, "SHIPPED_MODELS", tmp_path / "no-shipped-models")  # they would compete
    folder = tmp_path / "models"
    write_model_folder(folder / "acme", "acme-h100", priority=3, metrics={"top1_regret_geomean": 1.0213})
    monkeypatch.setenv("DIODE_MODELS_PATH", str(folder))
    return folder


def test_models_shows_source_applies_picked_and_manifest(capsys, models_path):
    code, out, _ = run(capsys, "models", "--hardware", "h100")
    assert code == 0
    assert "hardware: NVIDIA H100 80GB HBM3" in out
    assert f"* acme-h100  [DIODE_MODELS_PATH {models_path}]  priority 3" in out
    assert "+ analytical  [built-in]  priority -100" in out
    assert "  example-bias-epilogue  [plugin example (diode-example 0.1.0)]" in out
    assert "hardware H100; ops mm, addmm, bmm, baddbmm" in out and "top1_regret_geomean 1.021" in out
    assert out.endswith("picked acme-h100: priority 3, above analytical's -100\n")
    code, out, _ = run(capsys, "models", "--hardware", "a100", "--json")
    report = json.loads(out)
    rows = {row["name"]: row for row in report["models"]}
    assert rows["analytical"]["picked"] and not rows["acme-h100"]["applies"]
    assert report["picked_because"] == "the only usable model that applies to NVIDIA A100-SXM4-80GB"
    assert rows["acme-h100"]["manifest"]["sha256"]


def test_models_honours_the_diode_model_environment_variable(capsys, tmp_path, monkeypatch):
    model = write_checkpoint(tmp_path / "own.pt")
    monkeypatch.setenv("TORCHINDUCTOR_DIODE_MODEL", str(model))
    code, out, _ = run(capsys, "models", "--hardware", "h100")
    assert code == 0 and f"* {model}  [path]" in out


def test_models_check_reports_a_model_that_cannot_load(capsys, models_path):
    write_checkpoint(models_path / "acme" / "model.pt", seed=9)  # no longer matches its manifest
    code, out, _ = run(capsys, "models", "--hardware", "h100", "--check")
    assert code == 1
    assert "check: ModelLoadError" in out and "checksum mismatch" in out
    assert "check: ok" in out  # the others still load


def _predicted_rows(out: str) -> list[tuple[float, str, str, str]]:
    """``(predicted us, compile s, fast_autotune, candidate)`` of each printed candidate."""
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0].isdigit():
            rows.append((float(parts[1]), parts[3], parts[4], " ".join(parts[5:])))
    return rows


def test_predict_for_a_named_gpu_on_any_machine(capsys):
    code, out, err = run(capsys, "predict", "mm", "1024x4096x2048", "--dtype", "bfloat16", "--layout", "row/col",
                         "--hardware", "h100", "--top-k", "5", "--model", "analytical")  # fmt: skip
    assert code == 0, err
    assert "problem:    mm 1024x4096x2048 bfloat16 row/col" in out
    assert "hardware:   NVIDIA H100 80GB HBM3 (132 SMs)" in out and "model:      analytical" in out
    assert "predicted us" in out and "confidence: none" in out
    rows = _predicted_rows(out)
    assert len(rows) == 5
    times = [row[0] for row in rows]
    assert times == sorted(times) and times[0] > 0
    assert any(row[3].startswith(("aten::mm", "triton::mm")) for row in rows)
    # no confidence: fast_autotune measures, and the estimates say what each candidate costs to compile
    assert "fast_autotune: measures" in out and "(no confidence;" in out
    assert rows[0][2] == "measure" and {row[2] for row in rows} <= {"measure", "-"}
    assert all(float(row[1]) == 0.0 for row in rows if row[3].startswith("aten::"))
    assert all(float(row[1]) > 0.0 for row in rows if row[3].startswith("triton::"))


def test_predict_with_a_learned_model_prints_its_confidence(capsys, tmp_path):
    model = write_checkpoint(tmp_path / "m.pt", calibration={"edges": [0.0, 1.0], "values": [0.2, 0.8]})
    code, out, _ = run(capsys, "predict", "bmm", "8x128x256x64", "--hardware", "a100", "--model", str(model),
                       "--space", "DEFAULT", "--json")  # fmt: skip
    assert code == 0
    report = json.loads(out)
    assert report["problem"]["batch"] == 8 and report["model"] == str(model)
    assert 0.2 <= report["confidence"] <= 0.8
    assert report["top"][0]["vs_best"] == 1.0
    assert all(row["config"]["template"] in ("aten::bmm", "triton::bmm") for row in report["top"])
    assert [r["time_us"] for r in report["top"]] == sorted(r["time_us"] for r in report["top"])
    assert report["fast_autotune"]["keeps_alone"] is False  # a confidence under 0.98: it measures
    assert report["top"][0]["fast_autotune"] == "measure" and report["top"][0]["candidate"] in report["fast_autotune"]["kept"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["predict", "mm", "1024x4096"], "expected MxNxK"),
        (["predict", "bmm", "64x64x64"], "expected BxMxNxK"),
        (["predict", "mm", "0x4x4"], "positive whole numbers"),
        (["predict", "mm", "4x4x4", "--layout", "row"], "expected A/B"),
        (["predict", "mm", "4x4x4", "--bias", "row"], "only addmm and baddbmm"),
        (["predict", "mm", "4x4x4", "--tf32"], "float32 inputs only"),
        (["predict", "mm", "4x4x4", "--top-k", "0"], "expected a whole number >= 1"),
        (["predict"], "give the op and the shape"),
    ],
)
def test_usage_errors_are_one_clear_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err
    assert err.startswith(f"diode {argv[0]}: error: ")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["predict", "mm", "4x4x4", "--hardware", "h900"], "unknown hardware 'h900'"),
        (["predict", "mm", "4x4x4", "--hardware", "h100", "--model", "nope"], "no such model"),
        (["models", "--hardware", "h900"], "unknown hardware 'h900'"),
        (["status", "--hardware", "h900"], "unknown hardware 'h900'"),
    ],
)
def test_what_the_installed_plugins_and_models_cannot_do_is_one_line_and_exit_1(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and message in err
    assert err.startswith(f"diode {argv[0]}: error: ")


def test_predict_says_which_ops_a_model_was_not_trained_for(capsys, tmp_path):
    folder = write_model_folder(tmp_path / "mm-only", "mm-only", ops=("mm", "addmm"), dtypes=("bfloat16",))
    for op, shape, dtype in (("baddbmm", "8x64x64x64", "bfloat16"), ("mm", "64x64x64", "float16")):
        code, out, err = run(capsys, "predict", op, shape, "--dtype", dtype, "--hardware", "h100", "--model", str(folder))
        assert code != 0 and out == ""
        assert err == (
            f"diode predict: error: model {folder} was not trained for {op} in {dtype} (it knows mm, addmm in "
            "bfloat16); name another with --model (`diode models` lists them)\n"
        )


def test_predict_lists_the_hardware_it_can_name(capsys):
    code, out, _ = run(capsys, "predict", "--hardware", "list")
    assert code == 0
    assert any(line.startswith("h100 ") and "NVIDIA H100 80GB HBM3" in line for line in out.splitlines())


class _Fixed:
    name, identity = "fixed", "fixed-v1"

    def predict(self, problem, configs, hardware):
        return Prediction(tuple(float(i + 1) for i in range(len(configs))), 0.5)


def test_cache_info_and_clear(capsys, isolated_caches):
    hardware = HardwareInfo("NVIDIA H100 80GB HBM3", "nvidia", sm_count=132)
    configs = [KernelConfig("aten", "aten::mm"), KernelConfig("triton", "triton::mm", 64, 64, 32, 3, 4, 8)]
    for m in (64, 128, 256):
        rank_candidates(CachingScorer(_Fixed()), GemmProblem("mm", m, 64, 64), configs, hardware)
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0
    assert f"location: {isolated_caches / 'diode' / 'predictions-v1'}" in out
    assert "entries:  3 predicted (limit" in out and "measured: 0 decisions" in out
    code, out, _ = run(capsys, "cache", "info", "--json")
    info = json.loads(out)
    assert info["entries"] == 3 and info["bytes"] > 0
    code, out, _ = run(capsys, "cache", "clear")
    assert code == 0 and out.startswith("removed 3 predicted entries")
    assert json.loads(run(capsys, "cache", "info", "--json")[1])["entries"] == 0


def _remember(problems):
    """Store synthetic timings as measured decisions, as DIODE stores what it measured."""
    from synthetic_timings import H100

    from diode_backend import measured

    for item in problems:
        measured.remember(measured.MeasuredDecision(item.problem, H100, item.configs, item.times_us, "DIODE/EXHAUSTIVE"))


def test_cache_shows_measured_decisions_apart_and_lists_them(capsys, isolated_caches):
    from synthetic_timings import synthetic_problems

    problems = synthetic_problems(3)
    _remember(problems)
    failed = replace(problems[0], problem=replace(problems[0].problem, m=999), times_us=(math.inf,) + problems[0].times_us[1:])
    _remember([failed])
    info = json.loads(run(capsys, "cache", "info", "--json")[1])
    assert info["entries"] == 0 and info["measured"]["entries"] == 4
    code, out, _ = run(capsys, "cache", "list")
    lines = out.splitlines()
    assert code == 0 and lines[-2:] == ["4 measured decisions", "0 predicted decisions"]
    best = min(problems[1].times_us)
    assert any(line.startswith(f"{problems[1].problem.describe()} on NVIDIA H100 80GB HBM3: ") and f"{best:.1f} us (fastest of {len(problems[1].configs)} measured)" in line for line in lines)
    assert any(f"(fastest of {len(failed.configs) - 1} measured, 1 failed)" in line for line in lines)
    code, out, _ = run(capsys, "cache", "clear")
    assert "removed 0 predicted entries" in out and "removed 4 measured entries" in out


def test_cache_shows_predicted_decisions_apart_and_never_exports_them(capsys, isolated_caches, tmp_path):
    from synthetic_timings import H100, synthetic_problems

    from diode_backend import predicted

    problems = synthetic_problems(3)
    _remember(problems[:1])
    for item, confidence in zip(problems, (0.97, None, 0.9)):
        predicted.remember(predicted.PredictedDecision(item.problem, H100, item.configs[0], confidence, "nvidia-h100-gemm", "learned:abc", "DIODE/EXHAUSTIVE"))
    info = json.loads(run(capsys, "cache", "info", "--json")[1])
    assert (info["entries"], info["measured"]["entries"], info["predicted"]["entries"]) == (0, 1, 3)
    assert info["predicted"]["directory"] == str(isolated_caches / "diode" / "predicted-v1")
    assert "picks:    3 predicted decisions, " in run(capsys, "cache", "info")[1]
    code, out, _ = run(capsys, "cache", "list")
    lines = out.splitlines()
    assert code == 0 and lines[1] == "1 measured decision" and lines[-1] == "3 predicted decisions"
    pick = f"{problems[0].problem.describe()} on NVIDIA H100 80GB HBM3: {problems[0].configs[0].describe()} "
    assert f"{pick}(predicted by nvidia-h100-gemm, confidence 0.97)" in lines[2:]
    assert any(line.endswith("(predicted by nvidia-h100-gemm, no confidence)") for line in lines)
    code, out, _ = run(capsys, "cache", "export", "-o", str(tmp_path / "data"))
    assert code == 0 and out.startswith("1 measured problems on ")  # predictions are not timings
    code, out, _ = run(capsys, "cache", "clear")
    assert "removed 1 measured entries" in out and "removed 3 predicted decision entries" in out
    assert list(predicted.stored_decisions()) == []


def test_exported_measurements_train_a_model(capsys, isolated_caches, tmp_path):
    """export -> a dataset shard (source 'measured') -> `diode train` reads it like any dataset."""
    from synthetic_timings import synthetic_problems

    from diode_backend.offline.dataset import load_dataset

    _remember(synthetic_problems(24, "train"))
    assert run(capsys, "cache", "export", "-o", str(tmp_path / "data"))[0] == 0
    run(capsys, "cache", "clear")
    _remember(synthetic_problems(8, "validation"))
    code, out, _ = run(capsys, "cache", "export", "-o", str(tmp_path / "data"), "--split", "validation")
    assert code == 0 and out.startswith("8 measured problems on NVIDIA H100 80GB HBM3 -> ")
    dataset = load_dataset(tmp_path / "data")
    assert len(dataset.split("train")) == 24 and len(dataset.split("validation")) == 8
    assert {p.source for p in dataset} == {"measured"} and len(dataset.runs) == 2
    code, _, err = run(capsys, "train", str(tmp_path / "data"), "-o", str(tmp_path / "model"), "--max-epochs", "1")
    assert code == 0, err
    assert (tmp_path / "model" / "model.pt").is_file()


def test_cache_info_before_anything_was_cached(capsys, isolated_caches):
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and "(not created yet)" in out and "entries:  0" in out


def test_status_mentions_the_prediction_cache_and_its_measured_decisions(capsys, isolated_caches):
    code, out, _ = run(capsys, "status", "--hardware", "cpu")
    assert code == 0
    assert f"prediction cache: {isolated_caches / 'diode' / 'predictions-v1'} (0 entries, 0 measured decisions" in out
    problem, hardware = GemmProblem("mm", 64, 64, 64), HardwareInfo("NVIDIA H100 80GB HBM3", "nvidia", sm_count=132)
    measured.remember(measured.MeasuredDecision(problem, hardware, (KernelConfig("aten", "aten::mm"),), (5.0,), "DIODE/EXHAUSTIVE"))
    code, out, _ = run(capsys, "status", "--hardware", "cpu")
    assert code == 0 and "(0 entries, 1 measured decisions, 0 predicted decisions" in out


def test_status_describes_named_hardware_without_having_it(capsys):
    code, out, err = run(capsys, "status", "--hardware", "h100")
    assert code == 0, err
    assert "hardware: NVIDIA H100 80GB HBM3 (nvidia)  [h100]" in out
    assert "  * nvidia-h100-gemm: " in out and "  + analytical: " in out
    code, out, err = run(capsys, "status", "--device", "h100")  # the earlier name of the option
    assert code == 0 and "[h100]" in out and "--device is deprecated, use --hardware" in err


def test_status_reports_an_invalid_environment_variable_and_fails():
    done = subprocess.run(
        [sys.executable, "-m", "diode_backend", "status", "--hardware", "cpu"],
        env={**os.environ, "TORCHINDUCTOR_DIODE_TOP_K": "abc"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert f"diode_top_k = {OPTIONS_BY_NAME['diode_top_k'].default}  INVALID TORCHINDUCTOR_DIODE_TOP_K='abc': expected a whole number >= 1" in done.stdout
    assert done.stderr.strip() == "diode status: error: TORCHINDUCTOR_DIODE_TOP_K='abc': expected a whole number >= 1"


SIX_FAMILIES = ("llama", "bert", "gpt", "t5", "vit", "whisper")
QUICK_TRAIN = ("--max-epochs", "1", "--steps-per-epoch", "3", "--hidden", "8", "--ensemble", "2")


def test_train_passes_the_candidate_draw_power_to_training(capsys, tmp_path):
    import torch
    from synthetic_timings import write_dataset

    data = write_dataset(tmp_path / "data", train=24, validation=0)
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "model"), "--sample-power", "4", *QUICK_TRAIN)
    assert code == 0, err
    options = torch.load(tmp_path / "model" / "model.pt", weights_only=True)["training"]["options"]
    assert options["sample_power"] == 4.0
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "plain"), *QUICK_TRAIN)
    assert code == 0, err
    options = torch.load(tmp_path / "plain" / "model.pt", weights_only=True)["training"]["options"]
    assert options["sample_power"] == 2.0


def test_train_uses_the_named_early_stopping_and_calibration_families(capsys, tmp_path):
    import torch
    from synthetic_timings import write_dataset

    data = write_dataset(tmp_path / "data", train=48, validation=6, families=SIX_FAMILIES)
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "model"), "--holdout-families", "whisper",
                       "--stopping-families", "gpt, zoo:t5", "--calibration-families", "llama", *QUICK_TRAIN)  # fmt: skip
    assert code == 0, err
    training = torch.load(tmp_path / "model" / "model.pt", weights_only=True)["training"]
    assert training["stopping_families"] == ["gpt", "t5"] and training["calibration_families"] == ["llama"]
    assert training["split"] == "given" and training["train_problems"] == 16  # bert and vit, 8 each


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--stopping-families", "gpt"], "--stopping-families: give --calibration-families too, or neither"),
        (["--calibration-families", "gpt"], "--calibration-families: give --stopping-families too, or neither"),
        (["--stopping-families", "opt", "--calibration-families", "gpt"],
         "--stopping-families: unknown family 'opt'; the training data has: bert, gpt, llama, t5, vit"),
        (["--stopping-families", "gpt", "--calibration-families", "whisper"],
         "--calibration-families: 'whisper' is in --holdout-families"),
        (["--stopping-families", "gpt,t5", "--calibration-families", "t5"],
         "--calibration-families: 't5' is also in --stopping-families; name each family in one of them"),
        (["--stopping-families", "gpt,t5", "--calibration-families", "llama,bert,vit"], "that leaves no family to train on"),
    ],
)  # fmt: skip
def test_a_named_split_that_cannot_be_used_is_a_usage_error(capsys, tmp_path, argv, message):
    from synthetic_timings import write_dataset

    data = write_dataset(tmp_path / "data", train=12, validation=0, families=SIX_FAMILIES)
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "model"), "--holdout-families", "whisper", *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("diode train: error: ") and message in err
    assert not (tmp_path / "model").exists()  # refused before any training


def test_train_fits_a_logistic_confidence_when_asked(capsys, tmp_path):
    import torch
    from synthetic_timings import write_dataset

    data = write_dataset(tmp_path / "data", train=48, validation=6, families=SIX_FAMILIES)
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "model"), "--holdout-families", "whisper",
                       "--confidence", "logistic", *QUICK_TRAIN)  # fmt: skip
    assert code == 0, err
    assert "hit_model" in torch.load(tmp_path / "model" / "model.pt", weights_only=True)
    code, out, err = run(capsys, "predict", "mm", "512x512x512", "--hardware", "h100", "--model", str(tmp_path / "model"), "--json")
    assert code == 0, err
    assert 0.0 < json.loads(out)["confidence"] < 1.0
    with pytest.raises(SystemExit):
        run(capsys, "train", str(data), "-o", str(tmp_path / "other"), "--confidence", "isotonic")
    assert "--confidence: invalid choice: 'isotonic'" in capsys.readouterr().err


def test_train_fits_the_logistic_confidence_on_out_of_fold_rankings_when_asked(capsys, tmp_path):
    import torch
    from synthetic_timings import write_dataset

    data = write_dataset(tmp_path / "data", train=48, validation=6, families=SIX_FAMILIES)
    split = ("--holdout-families", "whisper", "--stopping-families", "vit", "--calibration-families", "bert")
    code, out, err = run(capsys, "train", str(data), "-o", str(tmp_path / "model"), *split, "--confidence", "logistic",
                         "--hit-model-folds", "2", *QUICK_TRAIN)  # fmt: skip
    assert code == 0, err
    assert "fold 1/2: training without" in err and "fold 2/2: ranked" in err
    saved = torch.load(tmp_path / "model" / "model.pt", weights_only=True)
    folds = saved["training"]["hit_model_folds"]
    # the 24 training problems are ranked; those whose compile-time pick was timed are fitted
    fitted = sum(fold["problems"] for fold in folds)
    assert sum(fold["ranked"] for fold in folds) == 24 and 0 < fitted <= 24
    assert f"logistic confidence fitted on {fitted} problems (out-of-fold rankings of 2 fold models)" in out
    assert sorted(name for fold in folds for name in fold["families"]) == ["gpt", "llama", "t5"]
    assert saved["hit_model"]["version"] == 3
    assert sorted(path.name for path in (tmp_path / "model").iterdir()) == ["manifest.json", "model.pt"]
    # a fold per family at most; and folds fit the logistic confidence only
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "other"), *split, "--confidence", "logistic",
                       "--hit-model-folds", "4", *QUICK_TRAIN)  # fmt: skip
    assert code == 1 and "--hit-model-folds 4: the training families are only 3; give at most that many folds" in err
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "other"), "--hit-model-folds", "2", *QUICK_TRAIN)
    assert code == 2 and err.strip() == "diode train: error: --hit-model-folds: fits the logistic confidence; add --confidence logistic"
    assert not (tmp_path / "other").exists()  # refused before any training


def test_train_judges_untimed_out_of_fold_picks_from_pick_labels_of_the_same_device(capsys, tmp_path):
    import torch
    from synthetic_timings import write_dataset

    data = write_dataset(tmp_path / "data", train=48, validation=6, families=SIX_FAMILIES)
    labels = write_dataset(tmp_path / "labels", train=12, validation=0, families=SIX_FAMILIES)
    split = ("--holdout-families", "whisper", "--stopping-families", "vit", "--calibration-families", "bert")
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "model"), *split, "--confidence", "logistic",
                       "--hit-model-folds", "2", "--pick-labels", str(labels), *QUICK_TRAIN)  # fmt: skip
    assert code == 0, err
    folds = torch.load(tmp_path / "model" / "model.pt", weights_only=True)["training"]["hit_model_folds"]
    assert [f"fold {k + 1}/2: ranked {fold['ranked']} problems, {fold['problems']} with their pick timed "
            f"({fold['labelled']} by the pick labels)" in err for k, fold in enumerate(folds)] == [True, True]  # fmt: skip
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "other"), "--pick-labels", str(labels), *QUICK_TRAIN)
    assert code == 2 and "--pick-labels: judges the picks of fold models; add --confidence logistic --hit-model-folds K" in err
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "other"), *split, "--confidence", "logistic",
                       "--hit-model-folds", "2", "--pick-labels", str(tmp_path / "nothing"), *QUICK_TRAIN)  # fmt: skip
    assert code == 2 and "--pick-labels: " in err and "Traceback" not in err
    from dataclasses import replace

    from synthetic_timings import H100, synthetic_problems

    from diode_backend.offline.dataset import DatasetMeta, write_shard

    a100 = replace(H100, name="NVIDIA A100-SXM4-80GB", sm_count=108)
    write_shard(tmp_path / "a100" / "part-000.msgpack", DatasetMeta(a100, {}), synthetic_problems(4, "train", 0))
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "other"), *split, "--confidence", "logistic",
                       "--hit-model-folds", "2", "--pick-labels", str(tmp_path / "a100"), *QUICK_TRAIN)  # fmt: skip
    assert code == 2 and "--pick-labels: timed on " in err and "A100" in err and "the data judged on" in err
    assert not (tmp_path / "other").exists()


def test_train_on_pick_labels_trains_the_network_on_the_records_joined_with_their_labels(capsys, tmp_path):
    import torch
    from synthetic_timings import H100, write_dataset

    from diode_backend.offline.dataset import DatasetMeta, ProblemTimings, load_dataset, write_shard
    from diode_backend.offline.pick_labels import joined
    from diode_backend.offline.train import data_digest, inference_hardware
    from diode_backend.offline.training_split import usable

    data = write_dataset(tmp_path / "data", train=24, validation=4)
    dataset = load_dataset([data])
    records, hardware = dataset.split("train"), inference_hardware(dataset.hardware)
    slow = KernelConfig("triton", "triton::mm", 256, 128, 64, 3, 8, 8)  # a pick the data never timed
    labels = [ProblemTimings(r.problem, (r.configs[0], slow), (r.times_us[0], 50.0 * min(r.times_us))) for r in records[:6]]
    write_shard(tmp_path / "labels" / "part-000.msgpack", DatasetMeta(H100, {}), labels)
    code, out, err = run(capsys, "train", str(data), "-o", str(tmp_path / "model"), "--train-on-pick-labels", str(tmp_path / "labels"),
                         *QUICK_TRAIN)  # fmt: skip
    assert code == 0, err
    assert "trained on the pick labels of 6 training problems" in out
    training = torch.load(tmp_path / "model" / "model.pt", weights_only=True)["training"]
    assert training["trained_on_pick_labels"] == 6
    by_problem = {label.problem: label for label in load_dataset([tmp_path / "labels"]).problems}
    assert training["data_digest"] == data_digest(usable(joined(records, by_problem)), hardware)
    assert training["data_digest"] != data_digest(usable(records), hardware)
    code, _, err = run(capsys, "train", str(data), "-o", str(tmp_path / "other"), "--train-on-pick-labels", str(tmp_path / "none"), *QUICK_TRAIN)
    assert code == 2 and "--train-on-pick-labels: " in err and "Traceback" not in err


def test_train_writes_the_candidate_kinds_its_model_learnt_into_the_manifest(capsys, tmp_path):
    """A kind timed in the training problems is one the model learnt (decompose-k here); one
    timed only in validation problems, or in a training problem too small to learn from
    (persistent TMA), is not, and the model leaves it unscored."""
    from dataclasses import replace

    from synthetic_timings import H100, synthetic_problems

    from diode_backend.model.entries import manifest_entry
    from diode_backend.offline.dataset import DatasetMeta, write_shard

    split_k = KernelConfig("decompose_k", "decompose_k", block_k=32)
    tma = KernelConfig("mm_persistent_tma", "triton::mm_persistent_tma", 128, 128, 64, 3, 8, 8)

    def timing(problem, config, time):
        return replace(problem, configs=problem.configs + (config,), times_us=problem.times_us + (time,))

    train = [timing(p, split_k, 50.0) if i % 2 else p for i, p in enumerate(synthetic_problems(24))]
    validation = [timing(p, tma, 40.0) for p in synthetic_problems(4, "validation")]
    too_small = replace(train[0], configs=(tma,), times_us=(30.0,))
    write_shard(tmp_path / "data" / "part-000.msgpack", DatasetMeta(H100, {}), train + validation + [too_small])
    code, _, err = run(capsys, "train", str(tmp_path / "data"), "-o", str(tmp_path / "model"), *QUICK_TRAIN)
    assert code == 0, err
    manifest = json.loads((tmp_path / "model" / "manifest.json").read_text())
    assert manifest["kinds"] == ["aten", "decompose_k", "triton"]
    prediction = manifest_entry(tmp_path / "model").load().predict(validation[0].problem, validation[0].configs, H100)
    assert [math.isnan(t) for t in prediction.times_us] == [c == tma for c in validation[0].configs]


def test_predict_says_when_fast_autotune_compiles_the_pick_alone(capsys, tmp_path):
    model = write_checkpoint(tmp_path / "m.pt", calibration={"edges": [0.0, 1.0], "values": [0.99, 0.99]})
    code, out, _ = run(capsys, "predict", "bmm", "8x128x256x64", "--hardware", "a100", "--model", str(model), "--top-k", "3")
    assert code == 0
    assert "fast_autotune: compiles #1 alone (confidence at or above diode_confidence_threshold 0.98)" in out
    assert [row[2] for row in _predicted_rows(out)] == ["alone", "-", "-"]
