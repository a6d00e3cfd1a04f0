"""``benchmarks/e2e_validation.py --shard`` and ``benchmarks/e2e_merge.py`` on the CPU: runs made
in parallel, one per GPU, cover a run's problems once and join into one run's results; and
``--only``, the problems a run takes by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def scripts(benchmark_scripts):
    """The two scripts as modules."""
    return tuple(benchmark_scripts("e2e_validation", "e2e_merge"))


@pytest.fixture
def data(tmp_path) -> str:
    """A dataset of three small float32 validation problems, one measured candidate each."""
    from diode_backend import registry
    from diode_backend.offline.dataset import DatasetMeta, ProblemTimings, write_shard
    from diode_backend.problem import GemmProblem, KernelConfig

    problems = [GemmProblem("mm", m, 24, 16, dtype="float32") for m in (8, 16, 32)]
    timings = [ProblemTimings(p, (KernelConfig("aten", "aten::mm"),), (10.0,), split="validation") for p in problems]
    write_shard(tmp_path / "data" / "part-000.msgpack", DatasetMeta(registry.detect_hardware("cpu")), timings)
    return str(tmp_path / "data")


def run(e2e, data: str, out: Path, *options: str) -> dict:
    assert e2e.main([data, "--device", "cpu", "--modes", "no_autotune", "--out", str(out), *options]) == 0
    return json.loads(out.read_text())


def test_shards_cover_the_problems_once_and_merge_into_one_run(scripts, data, tmp_path):
    e2e, merger = scripts
    parts = [run(e2e, data, tmp_path / f"part{i}.json", "--shard", f"{i}/2") for i in (0, 1)]
    problems = [{row["describe"] for row in part["rows"]} for part in parts]
    assert not problems[0] & problems[1] and len(problems[0] | problems[1]) == 3
    assert [part["shard"] for part in parts] == ["0/2", "1/2"]

    out = tmp_path / "merged.json"
    assert merger.main([str(out), str(tmp_path / "part0.json"), str(tmp_path / "part1.json")]) == 0
    merged = json.loads(out.read_text())
    assert {row["describe"] for row in merged["rows"]} == problems[0] | problems[1]
    import e2e_results  # benchmarks/, on the path while the scripts are loaded

    assert merged["summary"] == e2e_results.summarize(merged["rows"], ["no_autotune"])
    assert merged["summary"]["no_autotune"]["problems"] == 3
    assert [part["shard"] for part in merged["parts"]] == ["0/2", "1/2"]
    assert merged["modes"] == parts[0]["modes"] and merged["timing"] == parts[0]["timing"]
    lines = out.read_text().splitlines()  # a row a line: a resumed run's diff shows the rows it added
    assert [json.loads(line.rstrip(","))["describe"] for line in lines if line.startswith('{"problem"')] == [
        row["describe"] for row in merged["rows"]
    ]


def test_a_shard_resumes_only_its_own_file(scripts, data, tmp_path, capsys):
    e2e, _ = scripts
    out = tmp_path / "part.json"
    first = run(e2e, data, out, "--shard", "1/3")
    assert len(first["rows"]) == 1
    assert run(e2e, data, out, "--shard", "1/3", "--resume")["rows"] == first["rows"]  # nothing left to do
    with pytest.raises(SystemExit):
        run(e2e, data, out, "--shard", "0/3", "--resume")
    assert "holds shard 1/3 of its run, not 0/3" in capsys.readouterr().err


def test_a_merged_file_of_one_part_resumes_and_one_of_several_is_refused(scripts, data, tmp_path, capsys):
    e2e, merger = scripts
    part, merged = tmp_path / "part.json", tmp_path / "merged.json"
    first = run(e2e, data, part, "--shard", "0/2")
    assert len(first["rows"]) == 2
    part.write_text(json.dumps({**first, "rows": first["rows"][:1]}))  # a call cut short after one row
    assert merger.main([str(merged), str(part)]) == 0
    resumed = run(e2e, data, merged, "--shard", "0/2", "--resume")
    assert [row["describe"] for row in resumed["rows"]] == [row["describe"] for row in first["rows"]]
    assert resumed["earlier_calls"][0]["environment"] == first["environment"]
    other = tmp_path / "other.json"
    run(e2e, data, other, "--shard", "1/2")
    assert merger.main([str(merged), str(part), str(other)]) == 0
    with pytest.raises(SystemExit):
        run(e2e, data, merged, "--shard", "0/2", "--resume")
    assert "joins 2 parts; resume each part's own file" in capsys.readouterr().err


def test_a_run_written_gzip_compressed_resumes_and_merges_alike(scripts, data, tmp_path):
    """A committed run is kept as e2e.json.gz: a run whose --out ends in .gz is written
    gzip-compressed, and resumes and merges from it as from a plain file."""
    import gzip

    from diode_backend.files import read_json

    e2e, merger = scripts
    out = tmp_path / "part.json.gz"
    options = [data, "--device", "cpu", "--modes", "no_autotune", "--out", str(out), "--shard", "0/2"]
    assert e2e.main(options) == 0
    first = json.loads(gzip.decompress(out.read_bytes()))
    assert len(first["rows"]) == 2
    assert e2e.main([*options, "--resume"]) == 0
    assert read_json(out)["rows"] == first["rows"]  # nothing left to do
    merged = tmp_path / "merged.json.gz"
    assert merger.main([str(merged), str(out)]) == 0
    assert [row["describe"] for row in read_json(merged)["rows"]] == [row["describe"] for row in first["rows"]]


@pytest.mark.parametrize("shard", ["2/2", "1", "a/b", "-1/2"])
def test_a_shard_that_is_not_i_of_n_is_refused(scripts, data, tmp_path, capsys, shard):
    e2e, _ = scripts
    with pytest.raises(SystemExit):
        e2e.main([data, "--device", "cpu", f"--shard={shard}", "--out", str(tmp_path / "out.json")])
    assert f"--shard {shard!r}: give I/N with 0 <= I < N" in capsys.readouterr().err


def test_merge_refuses_parts_that_overlap_or_differ(scripts, data, tmp_path, capsys):
    e2e, merger = scripts
    part = run(e2e, data, tmp_path / "part.json", "--shard", "0/2")
    (tmp_path / "other.json").write_text(json.dumps({**part, "modes": {"no_autotune": {}, "diode_fast": {}}, "rows": []}))
    cases = {
        ("part.json", "part.json"): "is also in",
        ("part.json", "other.json"): "its modes differs from",
        ("part.json", "missing.json"): "not a readable results file",
    }
    for names, message in cases.items():
        with pytest.raises(SystemExit):
            merger.main([str(tmp_path / "merged.json"), *(str(tmp_path / n) for n in names)])
        assert message in capsys.readouterr().err
    assert not (tmp_path / "merged.json").exists()


def test_warm_parts_with_kernel_cache_passes_merge_and_their_summary_covers_every_part(scripts, data, tmp_path, capsys):
    """Each GPU call's warm pass with the kernel caches kept is a part of its own: joined, the
    summary compares the kept-cache compile times of every part's rows; a part without those
    passes does not join them."""
    e2e, merger = scripts
    names = []
    for i, kept_s in ((0, 1.5), (1, 3.0)):
        part = run(e2e, data, tmp_path / f"part{i}.json", "--shard", f"{i}/2")
        for row in part["rows"]:
            row["kernel_cache"] = {"no_autotune": {"compile_s": 1.0}, "diode_warm": {"compile_s": kept_s}}
            row["kernel_cache"]["warm"] = {"same_pick": True, "warm_kept": 1}
        part["kernel_cache"] = {"folder": f"kernels-{i}"}
        (tmp_path / f"kept{i}.json").write_text(json.dumps(part))
        names.append(str(tmp_path / f"kept{i}.json"))
    out = tmp_path / "merged.json"
    assert merger.main([str(out), *names]) == 0
    merged = json.loads(out.read_text())
    kept = merged["summary"]["warm_kernel_cache"]
    assert kept["problems"] == 3 and kept["same_pick_share"] == 1.0
    assert kept["compile_over_no_autotune_total"] == pytest.approx(sum(
        row["kernel_cache"]["diode_warm"]["compile_s"] for row in merged["rows"]) / 3)  # fmt: skip
    assert merged["summary"]["warm_side_by_side"]["kernel_caches_kept_total"] == kept["compile_over_no_autotune_total"]
    assert [part["kernel_cache"]["folder"] for part in merged["parts"]] == ["kernels-0", "kernels-1"]

    with pytest.raises(SystemExit):
        merger.main([str(tmp_path / "mixed.json"), names[0], str(tmp_path / "part1.json")])
    assert "only some parts have kernel-cache passes" in capsys.readouterr().err


def test_a_run_starts_no_problem_the_slowest_so_far_would_take_past_its_budget(scripts):
    e2e, _ = scripts
    assert not e2e.out_of_budget(10.0, 0.0, 25.0)  # the first problem always starts within the budget
    assert e2e.out_of_budget(20.0, 10.0, 25.0)  # before: it started, and ended 5 s past the budget
    assert not e2e.out_of_budget(14.0, 10.0, 25.0)
    assert e2e.out_of_budget(26.0, 0.0, 25.0)


def test_only_takes_the_named_problems_and_names_one_it_cannot_take(scripts, data, tmp_path, capsys):
    e2e, _ = scripts
    result = run(e2e, data, tmp_path / "only.json", "--only", "mm 32x24x16 float32 row/row,mm 8x24x16 float32 row/row")
    assert sorted(row["describe"] for row in result["rows"]) == ["mm 32x24x16 float32 row/row", "mm 8x24x16 float32 row/row"]
    with pytest.raises(SystemExit):
        e2e.main([data, "--device", "cpu", "--only", "mm 9x24x16 float32 row/row", "--out", str(tmp_path / "none.json")])
    assert "--only: no such problem among those taken: 'mm 9x24x16 float32 row/row'" in capsys.readouterr().err
