"""Validation reports: the figures, the baselines, and `diode train` + `diode validate`."""

from __future__ import annotations

import dataclasses
import json
import math
import sys

import pytest
import torch
from synthetic_timings import H100, SPACE, synthetic_problems, write_dataset

from diode_backend.offline.cli import main
from diode_backend.offline.dataset import DatasetMeta, ProblemTimings, write_shard
from diode_backend.model.manifest import read_manifest
from diode_backend.offline.validate import (
    NearestProblemScorer,
    kendall_tau,
    reliability,
    score_problem,
    spread,
    validate,
)
from diode_backend.offline.plots import regret_figure, regret_ticks, write_plots
from diode_backend.options import DiodeOptions
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig
from diode_backend.scorer import Prediction


class Oracle:
    """Predicts the measured times exactly, sure of itself."""

    name = "oracle"
    identity = "oracle"

    def __init__(self, problems: list[ProblemTimings]) -> None:
        self.times = {p.problem: p.times_us for p in problems}

    def predict(self, problem, configs, hardware):
        return Prediction(self.times[problem], confidence=1.0)


def test_kendall_tau_b_counts_pairs_and_ties():
    assert kendall_tau(torch.tensor([1.0, 2, 3, 4]), torch.tensor([1.0, 3, 2, 4])) == pytest.approx(4 / 6)
    assert kendall_tau(torch.tensor([1.0, 2, 3]), torch.tensor([3.0, 2, 1])) == pytest.approx(-1.0)
    # x ties one pair: 2 concordant pairs of 3, over sqrt(2 * 3)
    assert kendall_tau(torch.tensor([1.0, 1, 2]), torch.tensor([1.0, 2, 3])) == pytest.approx(2 / math.sqrt(6))
    assert math.isnan(kendall_tau(torch.tensor([1.0, 1]), torch.tensor([1.0, 2])))


def test_regret_is_the_best_measured_time_in_the_top_k_over_the_best():
    measured = [10.0, 12.0, 11.0, 30.0] + [40.0] * 8
    predicted = (5.0, 9.0, 7.0, 1.0) + (100.0,) * 8  # puts the 30 us candidate first
    score = score_problem(Prediction(predicted), measured, fallback=0)
    assert score.regrets == {1: 3.0, 5: 1.0, 10: 1.0}
    nothing = score_problem(Prediction((math.nan,) * 12), measured, fallback=1)
    assert nothing.regrets[1] == 1.2  # charged the fallback (ATen)
    assert nothing.log_errors.numel() == 0 and math.isnan(nothing.kendall_tau)


def test_spread_and_reliability():
    figures = spread([1.0, 1.0, 1.21, 2.0])
    assert figures["geomean"] == pytest.approx((1.21 * 2.0) ** 0.25)
    assert figures["worst"] == 2.0
    table = reliability([0.95, 0.95, 0.55, 0.55], [True, True, True, False])
    assert [(b["count"], b["observed"]) for b in table["bins"]] == [(2, 0.5), (2, 1.0)]
    assert table["ece"] == pytest.approx(0.5 * 0.05 + 0.5 * 0.05)


def test_nearest_problem_scorer_uses_the_closest_problem_of_the_same_kind():
    def timed(problem, time):
        return ProblemTimings(problem, (SPACE[0], SPACE[1]), (time, 2 * time))

    near = timed(GemmProblem("mm", 1000, 1000, 1000), 10.0)
    other_dtype = timed(GemmProblem("mm", 1024, 1024, 1024, dtype="float32"), 99.0)
    far = timed(GemmProblem("mm", 8000, 8000, 8000), 50.0)
    scorer = NearestProblemScorer([near, other_dtype, far])
    query = GemmProblem("mm", 2000, 1000, 1000)
    unseen = KernelConfig("triton", "triton::mm", 16, 16, 16, 1, 1, 1)
    prediction = scorer.predict(query, [SPACE[1], SPACE[0], unseen], H100)
    assert prediction.times_us[:2] == (40.0, 20.0)  # scaled by the FLOP ratio, 2x
    assert math.isnan(prediction.times_us[2])


def test_a_perfect_scorer_meets_every_target():
    problems = synthetic_problems(6, "validation")
    report = validate(Oracle(problems), problems, H100, train_problems=synthetic_problems(10))
    model = report["scorers"]["model"]
    assert model["rmse_log"] == 0.0 and model["kendall_tau"]["median"] == pytest.approx(1.0)
    assert model["top1_regret"] == {"geomean": 1.0, "p90": 1.0, "worst": 1.0}
    assert report["calibration"]["ece"] == 0.0
    assert all(target["met"] for target in report["targets"].values())
    assert report["baselines"]["aten"]["top1_regret"]["geomean"] > 1.0
    assert set(report["scorers"]) == {"model", "analytical", "nearest_neighbour"}
    assert len(report["per_problem"]) == 6
    # the synthetic problems are mm of one family: the class and family tables repeat the total
    classes = {row["class"] for row in report["per_problem"]}
    assert set(report["by_class"]) == classes and report["by_family"].keys() == {"synthetic"}
    assert sum(group["problems"] for group in report["by_class"].values()) == 6
    assert report["by_family"]["synthetic"]["scorers"] == report["scorers"]


def test_figures_are_given_per_workload_class_and_family():
    decode = synthetic_problems(3, "validation", seed=1, generator="zoo:llama")
    decode = [dataclasses.replace(p, problem=dataclasses.replace(p.problem, m=8 + i)) for i, p in enumerate(decode)]
    wide = synthetic_problems(4, "validation", seed=2, generator="zoo:bert")
    wide = [dataclasses.replace(p, problem=dataclasses.replace(p.problem, m=2048 + i, n=4096, k=4096)) for i, p in enumerate(wide)]

    class WrongOnDecode(Oracle):
        def predict(self, problem, configs, hardware):
            times = self.times[problem]
            return Prediction(times if problem.m > 32 else tuple(1 / t for t in times), confidence=1.0)

    report = validate(WrongOnDecode(decode + wide), decode + wide, H100)
    decode_figures, prefill = report["by_class"]["decode"], report["by_class"]["prefill_linear"]
    assert (decode_figures["problems"], prefill["problems"]) == (3, 4)
    assert decode_figures["scorers"]["model"]["top1_regret"]["worst"] > 1.05
    assert prefill["scorers"]["model"]["top1_regret"]["worst"] == 1.0
    assert report["by_family"]["llama"]["scorers"] == decode_figures["scorers"]
    assert prefill["calibration"]["hit_rate"] == 1.0 and decode_figures["calibration"]["hit_rate"] == 0.0
    # one confidence for hits and misses alike: it tells them apart no better than chance
    assert report["calibration"]["auroc"] == 0.5
    assert math.isnan(prefill["calibration"]["auroc"])  # no miss to tell apart
    # every pick claimed 1.0, the default threshold: the decode misses would be compiled alone
    assert report["calibration"]["trusted"]["problems"] == 7
    assert report["calibration"]["trusted"]["top1_regret_worst"] == decode_figures["scorers"]["model"]["top1_regret"]["worst"]


def test_the_confidence_is_judged_again_over_the_list_diode_ranks_at_compile_time():
    problems = synthetic_problems(4, "validation")
    untimed = KernelConfig("triton", "triton::mm", 256, 256, 64, 3, 8, 8)
    assert untimed not in SPACE
    slowest = {p.problem: p.configs[p.times_us.index(max(p.times_us))] for p in problems}
    listed = []

    class CompileTime(Oracle):
        """Exact and sure over the timed candidates. Over the longer list: problem 0 picks the
        untimed config, problem 1 its slowest timed one, both at 0.99; problems 2 and 3 pick
        their fastest at 0.98 and 0.6."""

        def predict(self, problem, configs, hardware):
            if untimed not in configs:
                return super().predict(problem, configs, hardware)
            index = [p.problem for p in problems].index(problem)
            favourite = {0: untimed, 1: slowest[problem]}.get(index)
            times = [0.001 if c == favourite else t for c, t in zip(configs, (*self.times[problem], 1e6))]
            return Prediction(tuple(times), confidence=(0.99, 0.99, 0.98, 0.6)[index])

    def compile_time_list(problem, hardware):
        listed.append(hardware)
        return [*SPACE, untimed]

    report = validate(CompileTime(problems), problems, H100, compile_time_candidates=compile_time_list)
    assert report["calibration"]["ece"] == 0.0  # over the timed candidates the picks are exact
    block = report["compile_time_calibration"]
    # problem 0's compile-time pick was never timed: it is counted, not judged
    assert (block["problems"], block["judged"]) == (4, 3)
    assert [row["compile_time"] is None for row in report["per_problem"]] == [True, False, False, False]
    one = problems[1]
    assert report["per_problem"][1]["compile_time"] == {
        "confidence": 0.99, "top1_regret": max(one.times_us) / min(one.times_us), "pick_label": False,
    }  # fmt: skip
    assert block["auroc"] == 0.0  # the one miss was the surest pick
    # the compile-time pick's own regret, over the judged problems 1 to 3 (2 and 3 exact)
    assert block["top1_regret"]["worst"] == max(one.times_us) / min(one.times_us)
    assert block["top1_regret"]["geomean"] == pytest.approx((max(one.times_us) / min(one.times_us)) ** (1 / 3))
    assert block["trusted"] == {"threshold": DiodeOptions().diode_confidence_threshold, "problems": 2,
                                "top1_regret_worst": max(one.times_us) / min(one.times_us)}  # fmt: skip
    assert listed == [H100] * 4 and block["judged_by_pick_labels"] == 0

    # a pick label of problem 0: its untimed pick timed beside its fastest tile on another day
    zero = problems[0]
    label = dataclasses.replace(zero, configs=(untimed, zero.configs[zero.times_us.index(min(zero.times_us))]), times_us=(10.0, 8.0))
    labelled = validate(CompileTime(problems), problems, H100, compile_time_candidates=compile_time_list,
                        pick_labels={zero.problem: label})  # fmt: skip
    block = labelled["compile_time_calibration"]
    assert (block["judged"], block["judged_by_pick_labels"]) == (4, 1)
    assert labelled["per_problem"][0]["compile_time"] == {"confidence": 0.99, "top1_regret": 10.0 / 8.0, "pick_label": True}


def test_each_problem_is_scored_under_its_own_tf32_rule():
    """Validation data of two TF32 rules: every scorer sees the hardware with the rule of the
    problem it scores, and the description it was given where a problem has none."""
    problems = synthetic_problems(3, "validation")
    problems = [dataclasses.replace(p, tf32_rule=rule) for p, rule in zip(problems, ("alignment", "always", ""))]
    seen = []

    class Recording(Oracle):
        def predict(self, problem, configs, hardware):
            seen.append(hardware)
            return super().predict(problem, configs, hardware)

    validate(Recording(problems), problems, H100)
    assert [h.triton_tf32_rule for h in seen] == ["alignment", "always", ""]
    assert seen[2] is H100 and seen[0] == dataclasses.replace(H100, triton_tf32_rule="alignment")


def test_diode_train_then_validate(tmp_path, capsys):
    data = write_dataset(tmp_path / "data", train=30, validation=8)
    folder = tmp_path / "my-h100"
    assert main(["train", str(data), "--output", str(folder), "--max-epochs", "3", "--steps-per-epoch", "10",
                 "--hidden", "8", "--ensemble", "3"]) == 0  # fmt: skip
    assert "wrote" in capsys.readouterr().out
    manifest = read_manifest(folder)
    assert (manifest.name, manifest.hardware, manifest.ops) == ("my-h100", (H100.name,), ("mm",))
    manifest_path = folder / "manifest.json"
    measured = json.loads(manifest_path.read_text())
    measured["metrics"] = {"e2e_problems": 3, "top1_regret_geomean": 9.0}
    manifest_path.write_text(json.dumps(measured))
    report_path = tmp_path / "report.json"
    assert main(["validate", str(folder), str(data), "--report", str(report_path), "--update-manifest"]) == 0
    out, err = capsys.readouterr()
    assert "top-1 geomean" in out and "inductor_default" in out and "warning" not in err
    report = json.loads(report_path.read_text())
    assert report["problems"] == 8
    assert 0 < report["baselines"]["inductor_default"]["measured_fraction"] < 1  # a few DEFAULT configs are in SPACE
    metrics = read_manifest(folder).metrics
    assert metrics["top1_regret_geomean"] == report["scorers"]["model"]["top1_regret"]["geomean"]
    assert metrics["validation_problems"] == 8
    assert metrics["e2e_problems"] == 3  # a figure validate does not compute is kept
    # judged again over Inductor's whole list, where the compile-time pick was timed
    assert report["compile_time_calibration"]["problems"] == 8 and "confidence at compile time" in out
    assert metrics.get("compile_time_judged") == report["compile_time_calibration"]["judged"]
    assert metrics.get("compile_time_top1_regret_geomean") == report["compile_time_calibration"]["top1_regret"]["geomean"]
    # pick labels: the data's own problems stand in for a labels dataset of this device
    assert main(["validate", str(folder), str(data), "--pick-labels", str(data), "--report", str(report_path)]) == 0
    assert json.loads(report_path.read_text())["compile_time_calibration"]["judged_by_pick_labels"] == 0  # all timed there
    capsys.readouterr()
    assert main(["validate", str(folder), str(data), "--pick-labels", str(tmp_path / "none")]) == 2
    assert "--pick-labels: " in capsys.readouterr().err
    assert main(["validate", str(folder), str(data), "--pick-labels", str(data), "--no-default-baseline"]) == 2
    assert "which --no-default-baseline skips" in capsys.readouterr().err


def test_strict_validation_fails_when_a_target_is_missed(tmp_path, capsys):
    data = write_dataset(tmp_path / "data", train=10, validation=6)
    assert main(["validate", "analytical", str(data), "--no-default-baseline"]) == 0  # a report, whatever its figures
    out, _ = capsys.readouterr()
    assert "MISSED" in out  # the analytical scorer does not know the data's 8-warp penalty
    assert main(["validate", "analytical", str(data), "--no-default-baseline", "--strict"]) == 1
    assert capsys.readouterr().err.startswith("diode validate: analytical misses the targets top1_regret.geomean")


def test_validating_a_model_on_another_devices_data_warns(tmp_path, capsys):
    cpu = HardwareInfo(name="Intel Xeon", vendor="cpu", device_type="cpu")
    write_shard(tmp_path / "cpu" / "part-000.msgpack", DatasetMeta(cpu, {}), synthetic_problems(4, "validation"))
    assert main(["validate", "nvidia-h100-gemm", str(tmp_path / "cpu"), "--no-default-baseline"]) == 0
    assert capsys.readouterr().err.startswith(
        "diode validate: warning: nvidia-h100-gemm is meant for H100 80GB HBM3 or H200, but the data was measured on Intel Xeon"
    )


def test_validate_errors_are_one_line(tmp_path, capsys):
    data = write_dataset(tmp_path / "data", train=5, validation=0)
    assert main(["validate", "analytical", str(data)]) == 1
    assert "no problems in split 'validation'" in capsys.readouterr().err
    assert main(["validate", "analytical", str(data), "--split", "all", "--families", "llama"]) == 2
    assert capsys.readouterr().err == "diode validate: error: --families: unknown family 'llama'; the data has: synthetic\n"
    assert main(["validate", "analytical", str(data), "--split", "all", "--families", "held-out"]) == 2
    assert "trained without held-out families" in capsys.readouterr().err


def test_train_holding_out_families_then_validate_them(tmp_path, capsys):
    data = write_dataset(tmp_path / "data", train=40, validation=8, families=("llama", "bert", "gpt", "t5", "vit", "whisper"))
    folder = tmp_path / "model"
    assert main(["train", str(data), "--output", str(folder), "--holdout-families", "whisper,gpt", "--max-epochs", "2",
                 "--steps-per-epoch", "5", "--hidden", "8", "--ensemble", "2"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "held out families: gpt, whisper" in out and "--families held-out" in out
    assert read_manifest(folder).description.endswith("without the families gpt, whisper")
    report_path = tmp_path / "report.json"
    assert main(["validate", str(folder), str(data), "--split", "all", "--families", "held-out", "--no-default-baseline",
                 "--report", str(report_path)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "by workload class" in out and "by family" in out and "AUROC" in out
    report = json.loads(report_path.read_text())
    assert report["model"]["holdout_families"] == report["families_selected"] == ["gpt", "whisper"]
    assert set(report["by_family"]) == {"gpt", "whisper"}
    assert report["problems"] == 16  # every problem of both, whatever its split
    assert main(["train", str(data), "--output", str(tmp_path / "x"), "--holdout-families", "opt"]) == 2
    assert "--holdout-families: unknown family 'opt'" in capsys.readouterr().err


def test_plots_are_skipped_without_matplotlib(monkeypatch, tmp_path):
    problems = synthetic_problems(3, "validation")
    report = validate(Oracle(problems), problems, H100)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    assert write_plots(report, tmp_path / "plots") == []


def test_regret_ticks_reach_the_worst_regret():
    assert regret_ticks(1.0) == [1.0]
    assert regret_ticks(1.3) == [1.0, 1.05, 1.1, 1.2, 1.5]
    assert regret_ticks(2.5) == [1.0, 1.1, 1.5, 2.0, 3.0]
    assert regret_ticks(12.0) == [1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0]
    assert regret_ticks(500.0)[-1] == 100.0


def test_plots_are_png_files_with_plain_regret_labels(tmp_path):
    pytest.importorskip("matplotlib")  # the plots extra, which the test extra includes
    from PIL import Image

    problems = synthetic_problems(6, "validation")
    report = validate(Oracle(problems), problems, H100)
    for row in report["per_problem"]:
        row["model"]["top1_regret"] = 1.0 + 0.3 * report["per_problem"].index(row)  # up to 2.5x
    written = write_plots(report, tmp_path / "plots")
    assert [p.name for p in written] == ["top1_regret.png", "reliability.png"]
    for path in written:
        with Image.open(path) as image:
            assert image.format == "PNG" and image.size[0] >= 400
    import matplotlib.pyplot as plt

    figure = regret_figure(plt, report)
    figure.canvas.draw()
    labels = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert labels == ["1x", "1.1x", "1.5x", "2x", "3x"]
    plt.close(figure)
