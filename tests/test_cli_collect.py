"""``diode collect`` and ``diode dataset`` on real files (the GPU sweep itself: test_collect_gpu)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch

from diode_backend.offline.cli import main
from diode_backend.offline.collect import shapes
from diode_backend.offline.dataset import DatasetMeta, ProblemTimings, load_dataset, write_shard
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_shapes_writes_a_problem_list(capsys, tmp_path):
    out = tmp_path / "decode.json"
    code, text, _ = run(capsys, "collect", "shapes", "--generator", "decode:5", "--op", "addmm", "--layout", "row/col", "-o", str(out))
    assert code == 0 and "5 problems" in text
    problems = [p for _, p in shapes.from_json(out)]
    assert all(p.op == "addmm" and p.bias == "row" and p.b_layout == "col" and p.m <= 16 for p in problems)


def test_shapes_traces_a_model_file(capsys, tmp_path):
    script = tmp_path / "tiny.py"
    script.write_text(textwrap.dedent(
        """
        import torch
        def run():
            with torch.device("meta"):
                torch.nn.Linear(32, 16)(torch.randn(4, 32))
        """
    ))  # fmt: skip
    out = tmp_path / "tiny.json"
    assert run(capsys, "collect", "shapes", "--model", f"{script}:run", "-o", str(out))[0] == 0
    assert shapes.from_json(out) == [("model:tiny", GemmProblem("addmm", 4, 16, 32, dtype="float32", b_layout="col", bias="row"))]
    out = tmp_path / "new-folder" / "tiny-bf16.json"  # a folder that does not exist yet
    assert run(capsys, "collect", "shapes", "--model", f"{script}:run", "--dtype", "bfloat16", "-o", str(out))[0] == 0
    assert shapes.from_json(out) == [("model:tiny", GemmProblem("addmm", 4, 16, 32, dtype="bfloat16", b_layout="col", bias="row"))]
    assert run(capsys, "collect", "shapes", "--model", f"{script}:run", "--dtype", "float32", "--tf32", "-o", str(out))[0] == 0
    assert [p.allow_tf32 for _, p in shapes.from_json(out)] == [True]


def test_shapes_from_a_function_that_runs_no_gemm_fails(capsys, tmp_path):
    script = tmp_path / "idle.py"
    script.write_text("def build():\n    return None\n")
    for target, message in (
        (f"{script}:build", f"--model: build() in {script} ran no mm, addmm, bmm or baddbmm (does it run the model?)"),
        (f"{script}:missing", f"--model: {script} defines no function 'missing'"),
    ):
        code, _, err = run(capsys, "collect", "shapes", "--model", target, "-o", str(tmp_path / "out.json"))
        assert code != 0 and err == f"diode collect: error: {message}\n"
        assert not (tmp_path / "out.json").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the messages on a machine without a GPU")
def test_gpu_collectors_say_in_one_line_that_they_need_a_gpu(capsys, tmp_path):
    shapes.to_json(shapes.expand("x", [(8, 8, 8)]), tmp_path / "p.json", "p")
    for argv, message in (
        (["sweep", str(tmp_path / "p.json"), "-o", str(tmp_path / "d")], "the sweep needs a CUDA GPU (`--dry-run --hardware NAME`"),
        (["sweep", "--dry-run", str(tmp_path / "p.json"), "-o", str(tmp_path / "d")], "the sweep needs a CUDA GPU"),
        (["fidelity", str(tmp_path / "p.json"), "-o", str(tmp_path / "f.json")], "the fidelity check needs a CUDA GPU"),
        (["feedback", "--device", "cuda", "-o", str(tmp_path / "d"), str(tmp_path / "p.json")], "no plugin describes device 'cuda' on this machine"),
    ):
        code, _, err = run(capsys, "collect", *argv)
        assert code == 1 and err.startswith("diode collect: error: ") and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists() and not (tmp_path / "f.json").exists()


def test_sweep_dry_run_plans_for_named_hardware_without_a_gpu(capsys, tmp_path):
    shapes.to_json(shapes.expand("x", [(1024, 1024, 1024), (64, 4096, 4096)], dtype="bfloat16"), tmp_path / "train.json", "train")
    shapes.to_json(shapes.expand("v", [(512, 512, 512)], dtype="bfloat16"), tmp_path / "val.json", "val")
    code, out, err = run(capsys, "collect", "sweep", "--dry-run", "--hardware", "h100", str(tmp_path / "train.json"),
                         "--validation", str(tmp_path / "val.json"), "-o", str(tmp_path / "d"))  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("plan for NVIDIA H100 80GB HBM3: 3 problems, ")
    assert lines[1].startswith("  validation on exhaustive: 1 problems, ") and lines[2].startswith("  train on sample/4: 2 problems, ")
    exhaustive = int(lines[1].split(", ")[1].split()[0].replace(",", ""))
    assert 500 < exhaustive < 1300  # ATen plus Inductor's exhaustive Triton space for one bf16 shape
    assert not (tmp_path / "d").exists()
    code, _, err = run(capsys, "collect", "sweep", "--hardware", "h100", str(tmp_path / "train.json"), "-o", str(tmp_path / "d"))
    assert code != 0 and "use it with --dry-run" in err


def test_sweep_names_a_compile_worker_count_it_cannot_use(capsys, tmp_path):
    shapes.to_json(shapes.expand("x", [(1024, 1024, 1024)], dtype="bfloat16"), tmp_path / "train.json", "train")
    code, _, err = run(capsys, "collect", "sweep", "--compile-workers", "0", str(tmp_path / "train.json"), "-o", str(tmp_path / "d"))
    assert code != 0 and "--compile-workers 0: expected a whole number >= 1" in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()


def test_sweep_dry_run_plans_the_listed_configs_and_names_a_problem_that_lists_none(capsys, tmp_path):
    from diode_backend import catalog
    from diode_backend.offline.collect import plan

    named = shapes.expand("x", [(1024, 1024, 1024), (64, 4096, 4096)], dtype="bfloat16")
    triton = [c for c in plan.candidate_configs(named[0][1], catalog.resolve_hardware("h100")) if c.kind == "triton"]
    shapes.to_json(named, tmp_path / "picks.json", "picks", configs={p: triton[:3] for _, p in named})
    code, out, err = run(capsys, "collect", "sweep", "--dry-run", "--hardware", "h100", "--space", "listed",
                         str(tmp_path / "picks.json"), "-o", str(tmp_path / "d"))  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[1] == "  train on listed: 2 problems, 8 pairs"  # ATen and three tiles each
    shapes.to_json(named, tmp_path / "some.json", "some", configs={named[0][1]: triton[:3]})
    code, _, err = run(capsys, "collect", "sweep", "--dry-run", "--hardware", "h100", "--space", "listed",
                       str(tmp_path / "some.json"), "-o", str(tmp_path / "d"))  # fmt: skip
    assert code != 0 and "mm 64x4096x4096 bfloat16" in err and "lists none" in err and "Traceback" not in err


def test_feedback_records_a_scripts_compiles(capsys, tmp_path, isolated_caches):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(
        """
        import sys, torch
        n = int(sys.argv[1])
        torch.compile(torch.bmm, mode="max-autotune-no-cudagraphs")(torch.randn(2, n, 8), torch.randn(2, 8, n))
        """
    ))  # fmt: skip
    code, _, err = run(capsys, "collect", "feedback", "-o", str(tmp_path / "data"), "--device", "cpu", str(script), "24")
    assert code == 0 and "1 GEMMs recorded" in err
    (item,) = load_dataset(tmp_path / "data")
    assert item.problem == GemmProblem("bmm", 24, 24, 8, batch=2, dtype="float32") and item.source == "feedback"


def test_dataset_info_and_merge(capsys, tmp_path):
    meta = DatasetMeta(HardwareInfo(name="NVIDIA H100 80GB HBM3", vendor="nvidia", sm_count=132), {"date": "2026-11-22"})
    config = KernelConfig("aten", "aten::mm")
    for i in range(2):
        items = [ProblemTimings(GemmProblem("mm", 16 * (i + 1), 8, 8), (config,), (3.0,), generator="odd")]
        write_shard(tmp_path / "in" / f"{i}.msgpack", meta, items)
    code, text, _ = run(capsys, "dataset", "info", str(tmp_path / "in"))
    assert code == 0 and "problems: 2" in text and "generator: odd 2" in text
    code, text, _ = run(capsys, "dataset", "info", "--json", str(tmp_path / "in"))
    assert json.loads(text)["pairs"] == 2
    code, text, _ = run(capsys, "dataset", "merge", str(tmp_path / "in"), "-o", str(tmp_path / "out"))
    assert code == 0 and "2 problems in 1 shard(s)" in text
    code, text, _ = run(capsys, "dataset", "merge", str(tmp_path / "in"), "-o", str(tmp_path / "packed"), "--compress")
    assert code == 0 and [p.name for p in (tmp_path / "packed").iterdir()] == ["part-000.msgpack.gz"]
    assert load_dataset(tmp_path / "packed").problems == load_dataset(tmp_path / "out").problems
    (tmp_path / "bad.msgpack").write_bytes(b"\x93\x01\x02\x03")
    code, _, err = run(capsys, "dataset", "info", str(tmp_path / "bad.msgpack"))
    assert code == 1 and "bad.msgpack: format" in err


ZOO = Path(__file__).resolve().parent.parent / "trained_models" / "data" / "zoo"


def test_shapes_reads_the_committed_zoo_with_family_filters(capsys, tmp_path):
    out = tmp_path / "zoo.json"
    assert run(capsys, "collect", "shapes", "--zoo", str(ZOO), "--family", "llama,bloom", "-o", str(out))[0] == 0
    assert {generator for generator, _ in shapes.from_json(out)} == {"zoo:llama", "zoo:bloom"}
    assert run(capsys, "collect", "shapes", "--zoo", str(ZOO), "--exclude-family", "llama", "-o", str(out))[0] == 0
    generators = {generator for generator, _ in shapes.from_json(out)}
    assert "zoo:llama" not in generators and "zoo:bloom" in generators and len(generators) >= 24


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--zoo", "ZOO", "--family", "lama"], "--family: no zoo family lama in"),
        (["--zoo", "ZOO", "--exclude-family", "bert,nope"], "--exclude-family: no zoo family nope in"),
        (["--zoo", "HERE"], "--zoo: no zoo in"),
        (["--generator", "odd:3", "--family", "llama"], "use them with --zoo"),
    ],
)
def test_shapes_names_the_option_a_bad_zoo_request_came_from(capsys, tmp_path, argv, message):
    argv = [{"ZOO": str(ZOO), "HERE": str(tmp_path)}.get(a, a) for a in argv]
    code, _, err = run(capsys, "collect", "shapes", *argv, "-o", str(tmp_path / "x.json"))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_zoo_refuses_an_unknown_family_before_tracing(capsys, tmp_path):
    code, _, err = run(capsys, "collect", "zoo", "--family", "bret", "-o", str(tmp_path))
    assert code == 2 and "--family: no zoo family bret; choose from llama" in err


def _tracing_libraries_import() -> bool:
    try:
        import diffusers  # noqa: F401
        import timm  # noqa: F401
        import transformers  # noqa: F401
    except Exception:
        return False
    return True


def test_zoo_traces_a_family_or_says_what_it_needs(capsys, tmp_path):
    code, out, err = run(capsys, "collect", "zoo", "--family", "distilbert", "-o", str(tmp_path))
    if not _tracing_libraries_import():  # CI installs no zoo extra
        assert code == 1 and "tracing the zoo needs transformers, timm and diffusers" in err
        assert len(err.strip().splitlines()) == 1
        return
    assert code == 0 and "problems, 1 families" in out
    committed = {p for _, p in shapes.from_json(ZOO / "distilbert.json")}
    assert {p for _, p in shapes.from_json(tmp_path / "distilbert.json")} == committed
