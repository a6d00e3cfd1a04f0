"""``benchmarks/e2e_validation.py`` (a GPU benchmark) in what runs without a GPU: a row's modes
compiled and timed on the CPU, and the warm-cache mode's arguments and the figures it reports
from the rows of two runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "e2e_validation.py"


def decided(pick: str, kept: int, compile_s: float) -> dict:
    """A DIODE mode's figures as ``compile_mode`` records them."""
    diode = {"single_pick": int(kept == 1), "benchmarked_top_k": int(kept > 1), "fallbacks": {}, "errors": {}}
    return {"compile_s": compile_s, "diode": {**diode, "decision": {"pick": pick, "kept": kept}}}


def test_every_mode_is_timed_as_compiled_without_compiling_again(e2e, tmp_path):
    """Each mode compiles once; timing them together must run those compiles, not new ones (a
    Dynamo reset between modes would make the earlier modes compile again when first timed)."""
    import torch
    from torch._dynamo.utils import counters

    from diode_backend.problem import GemmProblem
    from diode_backend.timing import HostTimer, TimingMethod

    graphs = []

    class CountingTimer(HostTimer):
        def time(self, launches):
            before = counters["stats"]["unique_graphs"]
            samples = super().time(launches)
            graphs.append(counters["stats"]["unique_graphs"] - before)
            return samples

    fn, args = e2e.make_case(GemmProblem("mm", 8, 16, 32, dtype="float32"), "cpu")
    options = {"plain": {}, "unrolled": {"max_autotune": False, "size_asserts": False}}
    timer = CountingTimer(TimingMethod(min_reps=3, max_reps=3, flush_l2=False, replay="host", slow_ratio=0.0))
    figures = e2e.measure_row(fn, args, list(options), timer, str(tmp_path / "diode"), options)
    assert graphs == [0] * e2e.ROUNDS
    for f in figures.values():
        assert f["compile_s"] > 0 and f["relative_error"] < 1e-5 and f["runs"] == 4 * e2e.ROUNDS
        assert len(f["rounds_us"]) == e2e.ROUNDS and f["runtime_us"] == sorted(f["rounds_us"])[e2e.ROUNDS // 2]
    torch._dynamo.reset()


def test_the_control_compiles_the_same_program_anew(e2e_results, e2e, tmp_path):
    """no_autotune_again is compiled by Dynamo a second time (its options differ only in a
    setting at its default), so the row times two compiles of one program, and they agree."""
    import torch
    from torch._dynamo.utils import counters

    from diode_backend.problem import GemmProblem
    from diode_backend.timing import HostTimer, TimingMethod

    fn, args = e2e.make_case(GemmProblem("mm", 8, 16, 32, dtype="float32"), "cpu")
    timer = HostTimer(TimingMethod(min_reps=3, max_reps=3, flush_l2=False, replay="host", slow_ratio=0.0))
    before = counters["stats"]["unique_graphs"]
    figures = e2e.measure_row(fn, args, ["no_autotune", e2e_results.CONTROL], timer, str(tmp_path / "diode"))
    assert counters["stats"]["unique_graphs"] - before == 2
    assert all(f["compile_s"] > 0 and f["relative_error"] < 1e-5 for f in figures.values())
    torch._dynamo.reset()


def test_a_mode_that_autotunes_records_inductors_pick(e2e):
    """Where Inductor benchmarks (here its C++ template against ATen on the CPU), the mode's
    figures name the fastest candidate, the kernel it compiles; a mode that benchmarks nothing
    has no such entry."""
    import torch

    from diode_backend.problem import GemmProblem

    fn, args = e2e.make_case(GemmProblem("bmm", 16, 24, 8, batch=3, dtype="float32"), "cpu")
    torch._dynamo.reset()
    plain, _ = e2e.compile_mode(fn, args, {})
    tuned, _ = e2e.compile_mode(fn, args, {"max_autotune": True, "max_autotune_gemm_backends": "ATEN,CPP"})
    assert "autotuned" not in plain
    (pick,) = tuned["autotuned"]
    assert pick["timed"] >= 2 and pick["failed"] == 0 and 0 < pick["autotune_us"] < 1e6
    assert pick["pick"].startswith(("aten::bmm", "cpp::"))
    torch._dynamo.reset()


def test_each_mode_names_the_kernels_its_compiled_function_launches(e2e_results, e2e, tmp_path):
    """Where a mode runs slower than the kernel it picked, the row says whether its compiled
    function launches more than that kernel: an ATen GEMM alone here, a C++ kernel for a
    pointwise op after it."""
    import torch

    from diode_backend.problem import GemmProblem
    from diode_backend.timing import HostTimer, TimingMethod

    fn, args = e2e.make_case(GemmProblem("addmm", 20, 48, 32, dtype="float32", a_layout="row", b_layout="col", bias="row"), "cpu")
    timer = HostTimer(TimingMethod(min_reps=3, max_reps=3, flush_l2=False, replay="host", slow_ratio=0.0))
    figures = e2e.measure_row(fn, args, ["no_autotune", e2e_results.CONTROL], timer, str(tmp_path / "diode"))
    assert all(f["kernels"] == ["extern_kernels.addmm"] for f in figures.values()), figures
    torch._dynamo.reset()
    relu, _ = e2e.compile_mode(lambda a, b: torch.relu(a @ b), args[1:], {})
    assert relu["kernels"][0] == "extern_kernels.mm" and relu["kernels"][1].startswith("cpp_fused_relu"), relu["kernels"]
    torch._dynamo.reset()


def test_the_kernels_are_the_compiled_graphs_not_those_of_subgraphs_benchmarked_on_the_way(e2e):
    """A subgraph choice (decompose-k) benchmarked while the graph is lowered saves its own
    output module before the graph's: only the last one is the compiled function."""
    import torch
    from torch._inductor.utils import run_and_get_code

    a, b = torch.randn(20, 32), torch.randn(32, 48)
    _, (subgraph,) = run_and_get_code(torch.compile(lambda x, y: torch.relu(x @ y)), a, b)
    torch._dynamo.reset()
    _, (graph,) = run_and_get_code(torch.compile(lambda x, y: x @ y), a, b)
    torch._dynamo.reset()
    assert e2e.compiled_kernels([subgraph, graph]) == ["extern_kernels.mm"] and e2e.compiled_kernels([]) == []


@pytest.mark.parametrize("offered", [True, False])
def test_best_known_compiles_the_datasets_fastest_candidate_and_is_the_rows_reference(e2e_results, e2e, tmp_path, offered):
    """best_known seeds DIODE's measured decision with the dataset's fastest candidate: each mode
    gets its runtime over that compile's, and best_known stays out of the best mode. A fastest
    candidate Inductor does not offer (a Triton tile on the CPU) is not applied: no reference."""
    import torch

    from diode_backend.offline.dataset import ProblemTimings
    from diode_backend.problem import GemmProblem, KernelConfig
    from diode_backend.timing import HostTimer, TimingMethod

    problem = GemmProblem("addmm", 20, 48, 32, dtype="float32", a_layout="row", b_layout="col", bias="row")
    fastest = KernelConfig("aten", "aten::addmm") if offered else KernelConfig("triton", "triton::mm", 32, 32, 32, 2, 4, 8)
    item = ProblemTimings(problem, (fastest, KernelConfig("triton", "triton::mm", 16, 16, 16, 1, 1, 8)), (10.0, 20.0), split="validation")
    fn, args = e2e.make_case(problem, "cpu")
    timer = HostTimer(TimingMethod(min_reps=3, max_reps=3, flush_l2=False, replay="host", slow_ratio=0.0))
    seeds = {e2e_results.BEST_KNOWN: lambda: e2e.seed_best_known(item, "cpu")}
    modes = ["no_autotune", "diode_pick", e2e_results.BEST_KNOWN]
    options = {m: {**e2e.MODES[m], "diode_model": "example-bias-epilogue"} if m != "no_autotune" else {} for m in modes}
    figures = e2e.measure_row(fn, args, modes, timer, str(tmp_path / "diode"), options, seeds)
    e2e.note_best_known(figures)
    e2e.rank_modes(figures, item.best_us)
    torch._dynamo.reset()
    known = figures[e2e_results.BEST_KNOWN]
    assert known["applied"] is offered, known
    if offered:
        assert known["diode"]["decision"]["pick"] == "aten::addmm" and known["kernels"] == ["extern_kernels.addmm"]
        assert known["vs_best_known"] == 1.0
        for mode in ("no_autotune", "diode_pick"):
            assert figures[mode]["vs_best_known"] == figures[mode]["runtime_us"] / known["runtime_us"]
    else:
        assert not any("vs_best_known" in f for f in figures.values())
    best = min(figures[m]["runtime_us"] for m in ("no_autotune", "diode_pick"))
    assert all(f["vs_best_mode"] == f["runtime_us"] / best for f in figures.values())
    summary = e2e_results.summarize([{"describe": problem.describe(), "modes": figures}], modes)
    assert summary["best_known_applied"] == {"problems": 1, "applied": int(offered)}
    assert ("vs_best_known_geomean" in summary["diode_pick"]) is offered


def test_the_best_mode_of_a_row_leaves_the_control_out(e2e_results, e2e):
    figures = {"no_autotune": {"runtime_us": 10.0}, e2e_results.CONTROL: {"runtime_us": 8.0}, "diode_fast": {"runtime_us": 12.0}, "max_autotune_default": {"error": "boom"}}
    e2e.rank_modes(figures, best_us=5.0)
    assert {m: f.get("vs_best_mode") for m, f in figures.items()} == {"no_autotune": 1.0, e2e_results.CONTROL: 0.8, "diode_fast": 1.2, "max_autotune_default": None}
    assert figures["diode_fast"]["vs_best"] == pytest.approx(2.4) and "vs_best" not in figures["max_autotune_default"]


def test_the_timer_spread_is_how_far_apart_the_two_compiles_of_one_program_were_timed(e2e_results):
    def timed(*runtimes_us: float) -> dict:
        return {mode: {"compile_s": 0.1, "runtime_us": t} for mode, t in zip(("no_autotune", e2e_results.CONTROL), runtimes_us)}

    rows = [{"describe": f"mm {m}x8x8", "modes": timed(*times)} for m, times in ((8, (10.0, 11.0)), (16, (12.0, 10.0)), (32, (9.0, 9.0)))]
    rows.append({"describe": "mm 64x8x8", "modes": {**timed(9.0), e2e_results.CONTROL: {"error": "boom"}}})
    spread = e2e_results.summarize(rows, ["no_autotune", e2e_results.CONTROL])["timer_spread"]
    assert spread["problems"] == 3 and spread["median"] == pytest.approx(1.1) and spread["worst"] == pytest.approx(1.2)
    assert spread["p90"] == pytest.approx(1.18)
    assert "every_round" not in spread  # rows without rounds
    assert "timer_spread" not in e2e_results.summarize(rows[3:], ["no_autotune", e2e_results.CONTROL])
    # in rounds: the two compiles' closest round; a row read apart in one round reads alike
    rows[0]["modes"]["no_autotune"]["rounds_us"], rows[0]["modes"][e2e_results.CONTROL]["rounds_us"] = [10.0, 11.5, 10.0], [11.0, 11.0, 11.1]
    rows[1]["modes"]["no_autotune"]["rounds_us"], rows[1]["modes"][e2e_results.CONTROL]["rounds_us"] = [12.0, 12.0, 12.0], [10.0, 10.0, 10.0]
    every = e2e_results.summarize(rows, ["no_autotune"])["timer_spread"]["every_round"]
    assert every["problems"] == 2 and every["worst"] == pytest.approx(1.2)
    assert every["median"] == pytest.approx((11.5 / 11.0 + 1.2) / 2)  # row 0's closest round is its second


def test_the_summary_flags_modes_whose_rounds_disagree(e2e_results):
    """A mode timed more than SAME_KERNEL_TOLERANCE apart across the rounds of its row is
    listed, with its rounds; a steady one is not."""
    rows = [{"describe": "mm 8x8x8", "modes": {
        "no_autotune": {"compile_s": 0.1, "runtime_us": 10.0, "vs_best": 1.0, "rounds_us": [10.0, 10.2, 9.9]},
        "diode_pick": {**decided("aten::mm", 1, 0.2), "runtime_us": 10.1, "vs_best": 1.01, "rounds_us": [10.1, 44.9, 9.8]},
    }}]  # fmt: skip
    summary = e2e_results.summarize(rows, ["no_autotune", "diode_pick"])
    assert summary["unsteady_rounds"] == [{"problem": "mm 8x8x8", "mode": "diode_pick", "rounds_us": [10.1, 44.9, 9.8]}]
    assert "starved_runs" not in summary


def test_each_round_records_the_runs_its_timer_left_out_as_starved(e2e_results, e2e):
    """The timer's ``starved`` and ``host_us`` after each round go with the launch they count,
    round by round; the unsteady rounds list them, and the summary adds the starved runs up per
    mode."""
    from diode_backend.timing import HostTimer, TimingMethod

    class StarvingTimer(HostTimer):  # the event timer's counts, which only a GPU produces
        rounds = iter([[0, 3], [0, 0], [2, 190]])
        hosts = iter([[11.0, 30.5], [12.0, 29.0], [10.5, 31.0]])

        def time(self, launches):
            samples = super().time(launches)
            self.starved, self.host_us = next(self.rounds), next(self.hosts)
            return samples

    timer = StarvingTimer(TimingMethod(min_reps=3, max_reps=3, flush_l2=False, replay="host", slow_ratio=0.0))
    first, second = e2e.time_rounds([lambda: None, lambda: None], timer)
    assert first["starved_runs"] == [0, 0, 2] and second["starved_runs"] == [3, 0, 190]
    assert first["host_us"] == [11.0, 12.0, 10.5] and second["host_us"] == [30.5, 29.0, 31.0]
    rows = [{"describe": "mm 8x8x8", "modes": {
        "no_autotune": {"compile_s": 0.1, "runtime_us": 10.0, "vs_best": 1.0, "rounds_us": [10.0, 10.2, 9.9], "starved_runs": [0, 0, 2]},
        "diode_pick": {**decided("aten::mm", 1, 0.2), "runtime_us": 10.1, "vs_best": 1.01, "rounds_us": [10.1, 44.9, 9.8],
                       "starved_runs": [3, 0, 190], "host_us": [30.5, 29.0, 31.0]},
    }}, {"describe": "mm 8x8x16", "modes": {
        "no_autotune": {"compile_s": 0.1, "runtime_us": 10.0, "vs_best": 1.0, "rounds_us": [10.0, 10.2, 9.9], "starved_runs": [1, 0, 0]},
        "diode_pick": {**decided("aten::mm", 1, 0.2), "runtime_us": 10.1, "vs_best": 1.0, "rounds_us": [10.1, 10.0, 9.8], "starved_runs": [0, 0, 0]},
    }}]  # fmt: skip
    summary = e2e_results.summarize(rows, ["no_autotune", "diode_pick"])
    assert summary["starved_runs"] == {"no_autotune": {"rows": 2, "runs": 3}, "diode_pick": {"rows": 1, "runs": 193}}
    assert summary["unsteady_rounds"] == [
        {"problem": "mm 8x8x8", "mode": "diode_pick", "rounds_us": [10.1, 44.9, 9.8], "starved_runs": [3, 0, 190],
         "host_us": [30.5, 29.0, 31.0]}
    ]


def test_the_summary_flags_modes_that_compiled_the_same_kernel_but_timed_apart(e2e_results):
    """The same kernel timed more than SAME_KERNEL_TOLERANCE apart in one row says the timing
    erred, not the pick."""
    def timed(pick: str, runtime_us: float) -> dict:
        return {**decided(pick, 1, 0.2), "runtime_us": runtime_us, "vs_best": runtime_us / 10}

    rows = [
        {"describe": "mm 8x8x8", "modes": {"diode_pick": timed("aten::mm", 44.9), "diode_fast": timed("aten::mm", 9.8)}},
        {"describe": "mm 16x8x8", "modes": {"diode_pick": timed("aten::mm", 10.5), "diode_fast": timed("aten::mm", 10.0)}},
        {"describe": "mm 32x8x8", "modes": {"diode_pick": timed("aten::mm", 30.0), "diode_fast": timed("triton::mm 16x16x64 s2 w4 g8", 10.0)}},
    ]
    summary = e2e_results.summarize(rows, ["diode_pick", "diode_fast"])
    assert summary["same_kernel_disagreements"] == [
        {"problem": "mm 8x8x8", "pick": "aten::mm", "runtime_us": {"diode_pick": 44.9, "diode_fast": 9.8}}
    ]
    assert "same_kernel_disagreements" not in e2e_results.summarize(rows[1:], ["diode_pick", "diode_fast"])


def test_diode_warm_needs_an_earlier_run(e2e, tmp_path, capsys):
    with pytest.raises(SystemExit):
        e2e.main(["data", "--modes", "no_autotune,diode_warm", "--out", str(tmp_path / "out.json")])
    assert "mode diode_warm needs --warm-from" in capsys.readouterr().err


def test_an_earlier_run_whose_cache_folder_is_gone_is_refused(e2e, tmp_path, capsys):
    cold = tmp_path / "cold.json"
    cold.write_text(json.dumps({"caches": {"diode": str(tmp_path / "gone")}, "rows": []}))
    with pytest.raises(SystemExit):
        e2e.main(["data", "--warm-from", str(cold), "--out", str(tmp_path / "out.json")])
    assert "names no DIODE cache folder on this machine" in capsys.readouterr().err


def test_the_warm_summary_compares_compile_times_and_picks(e2e_results):
    cold = [
        {"modes": {"diode_fast": decided("aten::mm", 1, 0.3)}},
        {"modes": {"diode_fast": decided("triton::mm 64x64x32 s3 w4 g8", 5, 3.0)}},
    ]
    warm = [
        {"modes": {"no_autotune": {"compile_s": 0.20}, "diode_warm": decided("aten::mm", 1, 0.21)}},
        {"modes": {"no_autotune": {"compile_s": 0.10}, "diode_warm": decided("aten::mm", 1, 0.40)}},
    ]
    for before, after in zip(cold, warm):
        after["warm"] = e2e_results.warm_comparison(before, after)
    assert warm[0]["warm"] == {"cold_pick": "aten::mm", "cold_kept": 1, "warm_pick": "aten::mm", "warm_kept": 1, "same_pick": True}
    assert warm[1]["warm"]["same_pick"] is False
    summary = e2e_results.summarize(warm, list(e2e_results.WARM_MODES))["warm"]
    assert summary["problems"] == 2
    assert summary["compile_over_no_autotune_geomean"] == pytest.approx((1.05 * 4.0) ** 0.5)
    assert summary["compile_over_no_autotune_total"] == pytest.approx(0.61 / 0.30)
    assert (summary["within_bound_share"], summary["same_pick_share"], summary["single_pick_share"]) == (0.5, 0.5, 1.0)


def test_a_failed_warm_compile_is_no_match(e2e_results):
    cold = {"modes": {"diode_fast": decided("aten::mm", 1, 0.3)}}
    warm = {"modes": {"no_autotune": {"compile_s": 0.2}, "diode_warm": {"error": "RuntimeError: boom"}}}
    assert e2e_results.warm_comparison(cold, warm)["same_pick"] is False


def test_argv_without_an_option_drops_it_and_its_value(e2e_warm):
    argv = ["data", "--kernel-cache", "k", "--out=o.json", "--resume", "--modes", "no_autotune"]
    assert e2e_warm._without_options(argv, {"--kernel-cache": 1, "--out": 1, "--resume": 0}) == ["data", "--modes", "no_autotune"]


def test_kernel_cache_needs_an_earlier_run(e2e, tmp_path, capsys):
    with pytest.raises(SystemExit):
        e2e.main(["data", "--kernel-cache", str(tmp_path / "k"), "--out", str(tmp_path / "out.json")])
    assert "--kernel-cache needs --warm-from" in capsys.readouterr().err


def test_a_run_timed_by_another_method_is_not_resumed(e2e, tmp_path, capsys):
    """Rows timed with another ``TimingMethod`` (the bare flush, say) are not mixed with new ones."""
    from diode_backend import registry
    from diode_backend.offline.dataset import DatasetMeta, ProblemTimings, write_shard
    from diode_backend.problem import GemmProblem, KernelConfig

    timings = ProblemTimings(GemmProblem("mm", 64, 48, 32), (KernelConfig("aten", "aten::mm"),), (10.0,), split="validation")
    write_shard(tmp_path / "data" / "part-000.msgpack", DatasetMeta(registry.detect_hardware("cpu")), [timings])
    out = tmp_path / "out.json"
    out.write_text(json.dumps({"modes": {"no_autotune": {}}, "timing": {"method": "another"}, "rows": []}))
    with pytest.raises(SystemExit):
        e2e.main([str(tmp_path / "data"), "--device", "cpu", "--modes", "no_autotune", "--resume", "--out", str(out)])
    assert "was timed by another method" in capsys.readouterr().err


def _run_script(*args: str, env: dict) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_warm_pass_with_kernel_caches_kept_runs_on_the_cpu_in_fresh_processes(tmp_path):
    """A cold run, then the warm run with --kernel-cache: every cache off in the run's own
    process, then two fresh processes sharing the kernel caches; the second one's compile times
    are reported beside the first's."""
    from diode_backend import registry
    from diode_backend.offline.dataset import DatasetMeta, ProblemTimings, write_shard
    from diode_backend.problem import GemmProblem, KernelConfig

    problem = GemmProblem("mm", 64, 48, 32)
    timings = ProblemTimings(problem, (KernelConfig("aten", "aten::mm"),), (10.0,), split="validation")
    write_shard(tmp_path / "data" / "part-000.msgpack", DatasetMeta(registry.detect_hardware("cpu")), [timings])
    env = {**os.environ, "TORCHINDUCTOR_DIODE_MODEL": "example-bias-epilogue", "DIODE_CACHE_DIR": str(tmp_path / "diode")}
    env.pop("TRITON_CACHE_DIR", None)
    data, cold, warm, kernels = (str(tmp_path / name) for name in ("data", "cold.json", "warm.json", "kernels"))
    _run_script(data, "--device", "cpu", "--modes", "no_autotune,diode_pick,diode_fast", "--out", cold, env=env)
    _run_script(data, "--device", "cpu", "--warm-from", cold, "--kernel-cache", kernels, "--out", warm, env=env)

    (cold_row,) = json.loads(Path(cold).read_text())["rows"]
    for mode in ("diode_pick", "diode_fast"):  # each mode its own prediction cache: nothing stored before
        assert (cold_row["modes"][mode]["diode"]["predicted_decision_hits"], cold_row["modes"][mode]["diode"]["cache_hits"]) == (0, 0)
    result = json.loads(Path(warm).read_text())
    (row,) = result["rows"]
    assert row["modes"]["diode_warm"]["diode"]["predicted_decision_hits"] == 1  # what diode_fast stored
    assert result["caches"]["settings"]["torch._inductor.config"] == {"force_disable_caches": True}
    assert set(row["modes"]) == set(row["kernel_cache"]) - {"warm", "compile_order"} == {"no_autotune", "diode_warm"}
    assert row["compile_order"] == row["kernel_cache"]["compile_order"] == ["no_autotune", "diode_warm"]  # the first row
    assert row["kernel_cache"]["warm"]["same_pick"] and row["warm"]["same_pick"]
    assert row["warm"]["measured_before"] is None  # the example model's pick was kept alone: a predicted decision
    assert all(f["compile_s"] > 0 for mode, f in row["kernel_cache"].items() if mode in ("no_autotune", "diode_warm"))
    side = result["summary"]["warm_side_by_side"]
    assert side["all_caches_off"] == result["summary"]["warm"]["compile_over_no_autotune_geomean"]
    assert side["kernel_caches_kept"] == result["summary"]["warm_kernel_cache"]["compile_over_no_autotune_geomean"] > 0
    kept = result["kernel_cache"]["caches"]
    assert kept["inductor"] == str(Path(kernels) / "inductor") and kept["triton"] == str(Path(kernels) / "triton")
    assert kept["settings"]["torch._inductor.config"]["force_disable_caches"] is False
    assert kept["settings"]["torch._inductor.config"]["fx_graph_cache"] is False
    assert result["kernel_cache"]["first_pass_summary"]["problems"] == 1
    assert any((Path(kernels) / "inductor").rglob("*.py"))  # the first pass left its compiled code there


def test_a_warm_pass_alternates_its_compile_order_and_shows_what_the_order_did(e2e_warm, e2e_results):
    """The first compile after Dynamo's reset is the slower, so the warm pass alternates which
    mode compiles first; the summary gives the ratio for each first mode apart."""
    assert [e2e_warm.compile_order(["no_autotune", "diode_warm"], i) for i in range(3)] == [
        ["no_autotune", "diode_warm"], ["diode_warm", "no_autotune"], ["no_autotune", "diode_warm"],
    ]  # fmt: skip
    warm = {"same_pick": True, "warm_kept": 1}
    rows = [
        {"modes": {"no_autotune": {"compile_s": 1.0}, "diode_warm": {"compile_s": 0.8}}, "warm": warm,
         "compile_order": ["no_autotune", "diode_warm"]},
        {"modes": {"no_autotune": {"compile_s": 1.0}, "diode_warm": {"compile_s": 1.25}}, "warm": warm,
         "compile_order": ["diode_warm", "no_autotune"]},
    ]  # fmt: skip
    summary = e2e_results.summarize_warm(rows)
    assert summary["compile_over_no_autotune_geomean"] == pytest.approx(1.0)
    assert summary["by_first_mode"] == {
        "diode_warm": {"problems": 1, "compile_over_no_autotune_geomean": pytest.approx(1.25)},
        "no_autotune": {"problems": 1, "compile_over_no_autotune_geomean": pytest.approx(0.8)},
    }
    assert "by_first_mode" not in e2e_results.summarize_warm([{k: v for k, v in r.items() if k != "compile_order"} for r in rows])


def test_the_measured_decision_stored_before_a_warm_compile_is_read_as_diode_warm_would(e2e, tmp_path, monkeypatch):
    """``measured_before`` reads diode_warm's cache (the folder diode_fast filled) under
    diode_warm's candidate space: the winner stored for the problem, and None for another."""
    from diode_backend import measured, registry
    from diode_backend.problem import GemmProblem, KernelConfig

    problem, other = GemmProblem("mm", 64, 48, 32), GemmProblem("mm", 64, 48, 16)
    caches = str(tmp_path / "diode")
    monkeypatch.setenv("DIODE_CACHE_DIR", e2e.prediction_cache(caches, "diode_fast"))
    space = e2e.space_of("diode_fast")
    winner = KernelConfig("aten", "aten::mm")
    measured.remember(measured.MeasuredDecision(problem, registry.detect_hardware("cpu"), (winner,), (10.0,), space))
    monkeypatch.setenv("DIODE_CACHE_DIR", str(tmp_path / "elsewhere"))  # whatever was set before
    assert e2e.measured_before(problem, "cpu", caches) == winner.describe()
    assert e2e.measured_before(other, "cpu", caches) is None


def test_a_loss_in_every_round_is_told_from_one_round_read_slow(e2e_results):
    """``vs_best_mode_every_round`` takes each mode's least ratio over the rounds: one round read
    slow (the timer's two levels of a small GEMM) moves the median of rounds, not it; a loss in
    every round stays. The references are no best mode."""
    rows = [
        {"describe": "mm 8x8x8", "modes": {
            "no_autotune": {"compile_s": 0.1, "runtime_us": 10.0, "rounds_us": [10.0, 10.0, 10.0], "vs_best_mode": 1.0},
            "diode_fast": {"compile_s": 0.2, "runtime_us": 11.6, "rounds_us": [11.6, 9.9, 11.7], "vs_best_mode": 1.16},
            "no_autotune_again": {"compile_s": 0.1, "runtime_us": 8.0, "rounds_us": [8.0, 8.0, 8.0]},
        }},
        {"describe": "mm 8x8x16", "modes": {
            "no_autotune": {"compile_s": 0.1, "runtime_us": 10.0, "rounds_us": [10.0, 10.4, 10.0], "vs_best_mode": 1.0},
            "diode_fast": {"compile_s": 0.2, "runtime_us": 13.0, "rounds_us": [13.0, 13.0, 12.5], "vs_best_mode": 1.3},
            "no_autotune_again": {"compile_s": 0.1, "runtime_us": 10.0, "rounds_us": [10.0, 10.0, 10.0]},
        }},
    ]  # fmt: skip
    assert e2e_results.every_round_ratio(rows[0], "diode_fast") == 1.0  # the fastest of round two
    assert e2e_results.every_round_ratio(rows[1], "diode_fast") == pytest.approx(1.25)
    assert e2e_results.every_round_ratio(rows[0], "no_autotune_again") == pytest.approx(0.8)
    fast = e2e_results.summarize(rows, ["diode_fast"])["diode_fast"]
    assert fast["vs_best_mode_worst"] == pytest.approx(1.3) and fast["vs_best_mode_every_round_worst"] == pytest.approx(1.25)
    assert e2e_results.every_round_ratio({"modes": {"diode_fast": {"error": "boom"}}}, "diode_fast") is None
