"""``benchmarks/e2e_validation.py --graph-size``: several GEMMs of a family compiled as one graph,
as a model's forward holds them, cold and then warm in fresh processes, on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "e2e_validation.py"


def _timings(problem, family: str):
    from diode_backend.offline.dataset import ProblemTimings
    from diode_backend.problem import KernelConfig

    return ProblemTimings(problem, (KernelConfig("aten", f"aten::{problem.op}"),), (10.0,), "validation", f"zoo:{family}")


def test_graphs_hold_one_family_and_precision_each_in_run_order(e2e):
    from diode_backend.problem import GemmProblem

    items = [
        _timings(GemmProblem("mm", 8, 8, 8, dtype="float32"), "vit"),
        _timings(GemmProblem("mm", 16, 8, 8, dtype="float32"), "bart"),
        _timings(GemmProblem("mm", 24, 8, 8, dtype="float32", allow_tf32=True), "vit"),
        _timings(GemmProblem("mm", 32, 8, 8, dtype="float32"), "vit"),
        _timings(GemmProblem("mm", 40, 8, 8, dtype="float32"), "vit"),
    ]
    groups = e2e.graph_groups(items, 2)
    assert [[items.index(i) for i in g] for g in groups] == [[0, 3], [1], [2], [4]]
    assert e2e.graph_groups(items, 1) == [[i] for i in items]
    assert e2e.describe_graph(groups[1]) == items[1].problem.describe()
    assert e2e.describe_graph(groups[0]) == f"vit graph: {items[0].problem.describe()}; {items[3].problem.describe()}"


def test_a_graph_computes_each_gemm_of_its_own_inputs(e2e):
    import torch

    from diode_backend.problem import GemmProblem

    problems = [GemmProblem("mm", 8, 16, 32, dtype="float32"), GemmProblem("addmm", 4, 8, 16, dtype="float32", bias="row")]
    fn, args = e2e.make_graph(problems, "cpu")
    assert len(args) == 5
    mm, addmm = fn(*args)
    torch.testing.assert_close(mm, args[0] @ args[1])
    torch.testing.assert_close(addmm, torch.addmm(*args[2:]))
    assert e2e.relative_error((mm, addmm), (mm.double(), addmm.double() * 1.5)) == pytest.approx(1 / 3)
    single_fn, single_args = e2e.make_graph(problems[:1], "cpu")
    assert single_fn is torch.mm and len(single_args) == 2


def test_warm_decisions_of_a_graph_are_matched_gemm_by_gemm(e2e_results):
    def figures(*picks):
        decisions = [{"problem": f"p{i}", "pick": pick, "kept": kept} for i, (pick, kept) in enumerate(picks)]
        return {"modes": {"diode_fast": {"diode": {"decision": decisions[-1], "decisions": decisions}}}}

    cold = figures(("aten::mm", 1), ("triton::a", 3))
    warm = {"modes": {"diode_warm": figures(("aten::mm", 1), ("triton::b", 1))["modes"]["diode_fast"]}}
    expected = {"gemms": 2, "same_picks": 1, "other_problems": 0, "same_pick": False, "cold_kept": 3, "warm_kept": 1}
    assert e2e_results.warm_comparison(cold, warm) == expected
    failed = e2e_results.warm_comparison(cold, {"modes": {"diode_warm": {"error": "x"}}})
    assert failed["same_picks"] == failed["other_problems"] == 0
    # Inductor lowered the second GEMM at another size (padded) in the warm compile
    warm["modes"]["diode_warm"]["diode"]["decisions"][1]["problem"] = "p1 padded"
    padded = e2e_results.warm_comparison(cold, warm)
    assert padded["other_problems"] == 1 and padded["same_picks"] == 1
    row = {"modes": {"diode_warm": {"compile_s": 2.0}, "no_autotune": {"compile_s": 1.0}}, "warm": padded}
    assert e2e_results.summarize_warm([row])["other_problem_gemms"] == 1


def _run_script(*args: str, env: dict) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_family_graph_compiles_cold_and_again_warm_with_the_same_picks(tmp_path):
    """Three problems of one family and one of another: a graph of two, then two graphs of one.
    The warm run compiles the same graphs in new processes (every cache off, then the kernel
    caches kept) and finds every GEMM's decision the cold run stored."""
    from diode_backend import registry
    from diode_backend.offline.dataset import DatasetMeta, write_shard
    from diode_backend.problem import GemmProblem

    problems = [(GemmProblem("mm", m, 48, 32), "vit") for m in (64, 96, 128)] + [(GemmProblem("mm", 80, 48, 32), "bart")]
    write_shard(tmp_path / "data" / "part-000.msgpack", DatasetMeta(registry.detect_hardware("cpu")), [_timings(*p) for p in problems])
    env = {**os.environ, "TORCHINDUCTOR_DIODE_MODEL": "example-bias-epilogue", "DIODE_CACHE_DIR": str(tmp_path / "diode")}
    env.pop("TRITON_CACHE_DIR", None)
    data, cold, warm, kernels = (str(tmp_path / name) for name in ("data", "cold.json", "warm.json", "kernels"))
    modes = "no_autotune,diode_fast,best_known"
    _run_script(data, "--device", "cpu", "--modes", modes, "--graph-size", "2", "--out", cold, env=env)
    _run_script(data, "--device", "cpu", "--warm-from", cold, "--kernel-cache", kernels, "--out", warm, env=env)

    cold_result = json.loads(Path(cold).read_text())
    assert cold_result["graph_size"] == 2
    sizes = sorted(len(row.get("members", [row["describe"]])) for row in cold_result["rows"])
    assert sizes == [1, 1, 2]
    (graph,) = [row for row in cold_result["rows"] if "members" in row]
    assert graph["family"] == "vit" and "workload_class" not in graph and graph["best_measured_us"] == 20.0
    decided = graph["modes"]["diode_fast"]["diode"]["decisions"]
    assert sorted(d["problem"] for d in decided) == sorted(graph["members"])
    assert graph["modes"]["diode_fast"]["relative_error"] < 1e-2  # float16 against a float64 reference
    assert graph["modes"]["best_known"]["applied"]  # both GEMMs' seeded decisions used
    assert all("problem" in row and "decisions" not in row["modes"]["diode_fast"]["diode"] for row in cold_result["rows"] if row is not graph)

    result = json.loads(Path(warm).read_text())
    assert result["graph_size"] == 2
    assert [row["describe"] for row in result["rows"]] == [row["describe"] for row in cold_result["rows"]]
    (warm_graph,) = [row for row in result["rows"] if "members" in row]
    assert warm_graph["warm"]["gemms"] == warm_graph["warm"]["same_picks"] == 2 and warm_graph["warm"]["warm_kept"] == 1
    assert warm_graph["warm"]["measured_before"] == [None, None]  # the example model's picks were kept alone
    assert warm_graph["kernel_cache"]["warm"]["same_pick"]
    assert result["summary"]["warm"]["same_pick_share"] == result["summary"]["warm_kernel_cache"]["same_pick_share"] == 1.0
    by_family = cold_result["summary"]["by_family"]
    assert list(by_family) == ["vit"] and by_family["vit"]["diode_fast"]["problems"] == 1  # the graph of two
    assert by_family["vit"]["no_autotune"]["compile_s_total"] == graph["modes"]["no_autotune"]["compile_s"]


def test_max_autotune_at_lowering_autotunes_every_gemm_of_a_graph_as_max_autotune_does(e2e):
    """The mode that shows what Inductor's deferred autotuning saves in a graph differs from
    max_autotune_default only in ``benchmark_epilogue_fusion``, and autotunes each GEMM."""
    import torch

    from diode_backend.problem import GemmProblem

    default, at_lowering = e2e.MODES["max_autotune_default"], e2e.MODES["max_autotune_at_lowering"]
    assert {k: v for k, v in at_lowering.items() if default.get(k) != v} == {"benchmark_epilogue_fusion": False}
    problems = [GemmProblem("bmm", 16, 24, 8, batch=3, dtype="float32"), GemmProblem("bmm", 32, 24, 8, batch=3, dtype="float32")]
    fn, args = e2e.make_graph(problems, "cpu")
    for options in (default, at_lowering):
        torch._dynamo.reset()
        figures, _ = e2e.compile_mode(fn, args, {**options, "max_autotune_gemm_backends": "ATEN,CPP"})
        assert len(figures["autotuned"]) == 2 and figures["relative_error"] < 1e-5, figures
    torch._dynamo.reset()


def test_parts_of_graph_runs_merge_only_with_their_graph_size_which_the_merge_keeps(benchmark_scripts):
    e2e, merger = benchmark_scripts("e2e_validation", "e2e_merge")
    part = {"benchmark": "e2e_validation", "modes": {"no_autotune": {}}, "graph_size": 8, "rows": []}
    rows = [{"describe": name, "modes": {}} for name in ("a", "b")]
    merged = merger.merge([{**part, "rows": rows[:1]}, {**part, "rows": rows[1:]}], ["p0.json", "p1.json"])
    assert merged["graph_size"] == 8 and [row["describe"] for row in merged["rows"]] == ["a", "b"]
    with pytest.raises(ValueError, match="p1.json: its graph_size differs from p0.json's"):
        merger.merge([{**part, "rows": rows[:1]}, {**part, "graph_size": 1, "rows": rows[1:]}], ["p0.json", "p1.json"])


def test_a_mode_can_set_options_so_one_run_compares_settings(e2e, tmp_path, capsys):
    assert e2e.mode_options("diode_fast+diode_top_k=2+diode_measure_ratio=1.0") == {
        **e2e.MODES["diode_fast"], "diode_top_k": 2, "diode_measure_ratio": 1.0
    }
    assert e2e.mode_options("no_autotune") == {}
    for mode, message in [("fast", "unknown mode 'fast'"), ("diode_fast+diode_top_k", "is not option=value"), ("diode_fast+k=[", "is not option=value")]:
        with pytest.raises(ValueError, match=message):
            e2e.mode_options(mode)
    with pytest.raises(SystemExit):
        e2e.main(["data", "--modes", "diode_fast+diode_top_k", "--out", str(tmp_path / "e2e.json")])
    assert "--modes: 'diode_fast+diode_top_k': setting 'diode_top_k' is not option=value" in capsys.readouterr().err


def test_stopping_takes_the_problems_the_shipped_model_stopped_its_training_on(e2e):
    from diode_backend import catalog, registry
    from diode_backend.offline.dataset import load_dataset
    from diode_backend.offline.train import inference_hardware

    dataset = load_dataset([Path(__file__).resolve().parent.parent / "trained_models" / "data" / "h100" / "dataset"])
    training = registry.load_scorer(catalog.pick_entry(inference_hardware(dataset.hardware))).checkpoint.training
    problems, families = e2e.problems_of(dataset, "stopping")
    assert families == training["stopping_families"] and len(problems) >= training["stopping_problems"]
    assert {e2e.family_of(p) for p in problems} == set(families) and {p.split for p in problems} == {"train"}
    held_out, names = e2e.problems_of(dataset, "held-out")
    assert set(names) == set(training["holdout_families"]) and not {e2e.family_of(p) for p in held_out} & set(families)
