"""The dataset format: round trips through real files, append-only shards, resume, rejection."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math

import msgpack
import pytest

from diode_backend.offline.dataset import (
    FORMAT,
    Dataset,
    DatasetError,
    DatasetMeta,
    ProblemTimings,
    ShardWriter,
    collected_problems,
    load_dataset,
    merge_datasets,
    meta_of_rule,
    read_shard,
    summarize,
    write_shard,
)
from diode_backend.files import RefusedFile, decompressed_as_named, read_json
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig

H100 = HardwareInfo(name="NVIDIA H100 80GB HBM3", vendor="nvidia", sm_count=132, compute_capability=(9, 0))
META = DatasetMeta(H100, {"torch": "2.11.0", "triton": "3.6.0", "date": "2025-11-22"})
ATEN = KernelConfig(kind="aten", template="aten::mm")


def triton(bm: int, bn: int = 64, bk: int = 32) -> KernelConfig:
    return KernelConfig("triton", "triton::mm", bm, bn, bk, num_stages=3, num_warps=4, group_m=8)


def timings(m: int, split: str = "train", op: str = "mm") -> ProblemTimings:
    problem = GemmProblem(op=op, m=m, n=256, k=512, dtype="bfloat16", b_layout="col")
    configs = (ATEN, triton(16), triton(32), triton(64, 128))
    return ProblemTimings(problem, configs, (10.5, 12.25, 9.0 + m / 1000, 30.0), split, "lognormal", "sweep", "exhaustive", 1)


def test_round_trip_keeps_every_field(tmp_path):
    items = [timings(100), timings(7, "validation"), timings(33, op="addmm")]
    write_shard(tmp_path / "a.msgpack", META, items)
    dataset = load_dataset(tmp_path)
    assert dataset.hardware == dataclasses.replace(H100, triton_tf32_rule="alignment")  # the sweep's, before it said
    assert dataset.runs == [META]
    assert [p.problem for p in dataset] == [p.problem for p in items]
    loaded = dataset.problems[1]
    assert loaded.configs == items[1].configs
    assert loaded.times_us == pytest.approx(items[1].times_us)  # float32 storage
    assert (loaded.split, loaded.generator, loaded.source, loaded.space, loaded.failed) == (
        "validation", "lognormal", "sweep", "exhaustive", 1,
    )  # fmt: skip
    assert [p.problem.m for p in dataset.split("validation")] == [7]
    assert loaded.best_config == triton(32)
    assert loaded.best_us == pytest.approx(9.007)


def test_storage_is_columnar_with_a_config_table(tmp_path):
    path = write_shard(tmp_path / "a.msgpack", META, [timings(m) for m in range(1, 51)])
    payload = msgpack.unpackb(path.read_bytes())
    assert payload["format"] == FORMAT and payload["version"] == 1
    assert len(payload["configs"]["kind"]) == 4  # 200 rows share 4 distinct configs
    assert payload["problems"]["m"] == list(range(1, 51))
    # 4 bytes of config index and 4 of float32 time per measured pair
    assert len(payload["timings"]["config"]) == len(payload["timings"]["time_us"]) == 200 * 4
    # 8 bytes per pair plus about 100 per problem: no per-row field names
    assert path.stat().st_size < 200 * 8 + 50 * 100


def test_wrong_format_and_version_are_rejected_naming_the_file(tmp_path):
    other = tmp_path / "other.msgpack"
    other.write_bytes(msgpack.packb({"format": "something-else", "version": 1}))
    with pytest.raises(DatasetError, match=r"other\.msgpack: format 'something-else'"):
        load_dataset(other)
    newer = tmp_path / "newer.msgpack"
    newer.write_bytes(msgpack.packb({"format": FORMAT, "version": 2}))
    with pytest.raises(DatasetError, match=r"newer\.msgpack: diode-gemm-timings version 2, .* reads version 1"):
        read_shard(newer)
    garbage = tmp_path / "garbage.msgpack"
    garbage.write_bytes(b"\xc1not msgpack")
    with pytest.raises(DatasetError, match=r"garbage\.msgpack: not a msgpack dataset shard"):
        read_shard(garbage)
    broken = tmp_path / "broken.msgpack"
    broken.write_bytes(msgpack.packb({"format": FORMAT, "version": 1, "meta": META.to_dict()}))
    with pytest.raises(DatasetError, match=r"broken\.msgpack: a damaged .* shard \(no 'problems'\)"):
        read_shard(broken)
    with pytest.raises(DatasetError, match="no such dataset"):
        load_dataset(tmp_path / "missing")


def test_a_shard_named_gz_is_written_and_read_gzip_compressed(tmp_path):
    items = [timings(m) for m in range(1, 51)]
    plain = write_shard(tmp_path / "plain" / "a.msgpack", META, items)
    packed = write_shard(tmp_path / "both" / "b.msgpack.gz", META, items[25:])
    assert gzip.decompress(packed.read_bytes()) == write_shard(tmp_path / "b.msgpack", META, items[25:]).read_bytes()
    assert packed.stat().st_size < plain.stat().st_size / 2
    write_shard(tmp_path / "both" / "a.msgpack", META, items[:25])
    both = load_dataset(tmp_path / "both")  # a folder may hold both kinds; path order: a, then b
    assert [p.problem.m for p in both] == list(range(1, 51))
    assert [p.times_us for p in both] == [p.times_us for p in load_dataset(plain)]
    (merged,) = merge_datasets([tmp_path / "both"], tmp_path / "merged", compress=True)
    assert merged.name == "part-000.msgpack.gz" and load_dataset(merged).problems == both.problems


def test_a_damaged_or_expanding_gz_shard_is_a_clear_error(tmp_path):
    data = gzip.compress(b"\x00" * 4096)
    cut = tmp_path / "cut.msgpack.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=r"cut\.msgpack\.gz: gzip data cut short; collect it again"):
        read_shard(cut)
    garbage = tmp_path / "garbage.msgpack.gz"
    garbage.write_bytes(b"not gzip at all")
    with pytest.raises(DatasetError, match=r"garbage\.msgpack\.gz: not gzip data"):
        load_dataset(garbage)
    with pytest.raises(RefusedFile, match=r"x\.gz: expands past the 4095 bytes"):
        decompressed_as_named("x.gz", data, 4095)  # a small file cannot expand without bound
    assert decompressed_as_named("x.gz", data, 4096) == b"\x00" * 4096
    assert decompressed_as_named("x.msgpack", data, 10) == data  # only the name decides


def test_a_results_file_reads_alike_plain_or_gzip_and_gunzips_within_its_bound(tmp_path):
    value = {"rows": [{"describe": "mm 64x64x64 bfloat16 row/row", "runtime_us": 3.5}] * 100}
    text = json.dumps(value).encode()
    (tmp_path / "run.json").write_bytes(text)
    (tmp_path / "run.json.gz").write_bytes(gzip.compress(text, mtime=0))
    assert read_json(tmp_path / "run.json") == read_json(tmp_path / "run.json.gz") == value
    with pytest.raises(RefusedFile, match=r"run\.json\.gz: expands past the 1000 bytes"):
        read_json(tmp_path / "run.json.gz", max_bytes=1000)  # a small file cannot expand without bound
    assert read_json(tmp_path / "run.json.gz", max_bytes=len(text)) == value


def test_interrupted_writer_keeps_flushed_problems_and_resume_skips_them(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with ShardWriter(tmp_path, META, every=2) as writer:
            for m in (1, 2, 3):
                writer.add(timings(m))
            raise KeyboardInterrupt  # the with block still writes problem 3
    assert len(list(tmp_path.glob("*.msgpack"))) == 2
    done = collected_problems(tmp_path)
    assert {p.m for p in done} == {1, 2, 3}
    # a resumed run appends new shards next to the old ones
    with ShardWriter(tmp_path, META, tag="gpu1") as writer:
        for m in (1, 2, 3, 4):
            if timings(m).problem not in done:
                writer.add(timings(m))
    assert "gpu1" in writer.paths[0].name
    assert [p.problem.m for p in load_dataset(tmp_path)] == [1, 2, 3, 4]
    assert not list(tmp_path.glob(".*tmp"))  # atomic writes leave no temporaries


def test_shards_of_different_devices_do_not_mix(tmp_path):
    write_shard(tmp_path / "a.msgpack", META, [timings(1)])
    h200 = DatasetMeta(HardwareInfo(name="NVIDIA H200", vendor="nvidia", sm_count=132, compute_capability=(9, 0)))
    write_shard(tmp_path / "b.msgpack", h200, [timings(2)])
    with pytest.raises(DatasetError, match=r"b\.msgpack: measured on nvidia:NVIDIA H200"):
        load_dataset(tmp_path)


def test_each_problem_keeps_the_rule_by_which_its_shards_triton_kernels_ran_tf32(tmp_path):
    """Which Triton kernels ran TF32 decides features (:mod:`diode_backend.tf32`): a shard's
    problems take the rule it records, else the sweep's rule before it recorded one, else
    (Inductor's own timings) Inductor's default for the recorded torch. Shards of different rules
    load together, each problem keeping its own; the dataset's hardware names a rule only when
    they share one."""
    feedback = dataclasses.replace(timings(2), source="feedback")
    write_shard(tmp_path / "a" / "1.msgpack", META, [timings(1)])
    write_shard(tmp_path / "a" / "2.msgpack", DatasetMeta(H100, {"triton_tf32_rule": "alignment"}), [timings(2)])
    data = load_dataset(tmp_path / "a")
    assert data.hardware.triton_tf32_rule == "alignment"
    assert [p.tf32_rule for p in data] == ["alignment", "alignment"]
    write_shard(tmp_path / "b" / "1.msgpack", DatasetMeta(H100, {"torch": "2.11.0+cu130"}), [feedback])
    assert load_dataset(tmp_path / "b").hardware.triton_tf32_rule == "always"
    write_shard(tmp_path / "c" / "1.msgpack", DatasetMeta(H100, {"torch": "2.13.0"}), [feedback])
    assert load_dataset(tmp_path / "c").hardware.triton_tf32_rule == "size"
    write_shard(tmp_path / "a" / "3.msgpack", DatasetMeta(H100, {"triton_tf32_rule": "always"}), [timings(3)])
    mixed = load_dataset(tmp_path / "a")
    assert [(p.problem.m, p.tf32_rule) for p in mixed] == [(1, "alignment"), (2, "alignment"), (3, "always")]
    assert mixed.hardware == H100  # no one rule: each problem's holds
    write_shard(tmp_path / "d" / "1.msgpack", DatasetMeta(H100, {"triton_tf32_rule": "never"}), [timings(1)])
    with pytest.raises(DatasetError, match=r"d/1\.msgpack: environment\.triton_tf32_rule 'never' is not one of always"):
        load_dataset([tmp_path / "a", tmp_path / "d"])


def test_a_shard_holds_problems_of_one_rule():
    """A shard's rule is its meta's: problems of another rule are refused, not relabelled."""
    always = dataclasses.replace(timings(1), tf32_rule="always")
    with pytest.raises(ValueError, match="problems of TF32 rule always in a shard that reads back as 'alignment'"):
        write_shard("/nonexistent/x.msgpack", META, [always])
    assert meta_of_rule(META, "alignment", [always]) is META
    assert meta_of_rule(META, "always", [always]).environment == {**META.environment, "triton_tf32_rule": "always"}


def test_the_running_inductors_rule_is_left_out_of_the_hardware_record():
    """Runtime descriptions (no rule: the running Inductor's) keep the dictionaries, and so the
    cache and decision keys, they had; a dataset's description keeps its rule through a dict."""
    assert "triton_tf32_rule" not in H100.to_dict()
    timed = dataclasses.replace(H100, triton_tf32_rule="alignment")
    assert HardwareInfo.from_dict(timed.to_dict()) == timed


def test_merge_compacts_shards_per_run_and_drops_duplicates(tmp_path):
    other_run = DatasetMeta(H100, {"date": "2025-11-23"})
    write_shard(tmp_path / "in" / "1.msgpack", META, [timings(1), timings(2)])
    write_shard(tmp_path / "in" / "2.msgpack", META, [timings(3)])
    write_shard(tmp_path / "in2" / "3.msgpack", other_run, [timings(3), timings(4, "validation")])
    written = merge_datasets([tmp_path / "in", tmp_path / "in2"], tmp_path / "out")
    assert len(written) == 2
    merged = load_dataset(tmp_path / "out")
    assert [p.problem.m for p in merged] == [1, 2, 3, 4]
    assert {run.environment.get("date") for run in merged.runs} == {"2025-11-22", "2025-11-23"}
    info = summarize(merged)
    assert info["problems"] == 4 and info["pairs"] == 16 and info["failed_pairs"] == 4
    assert info["split"] == {"train": 3, "validation": 1}
    assert info["layout"] == {"row/col": 4} and info["dtype"] == {"bfloat16": 4}


def test_merge_keeps_each_problems_rule(tmp_path):
    """Merged shards of one run split by rule; a merged shard that would read back as another
    rule (here sweep problems of a shard that Inductor's own timings made ``always``) records its own."""
    feedback = dataclasses.replace(timings(1), source="feedback")
    torch_211 = DatasetMeta(H100, {"torch": "2.11.0"})
    write_shard(tmp_path / "in" / "1.msgpack", torch_211, [timings(1)])
    write_shard(tmp_path / "in" / "2.msgpack", torch_211, [feedback, timings(2)])
    write_shard(tmp_path / "in" / "3.msgpack", DatasetMeta(H100, {"triton_tf32_rule": "size"}), [timings(3)])
    before = [(p.problem.m, p.tf32_rule) for p in load_dataset(tmp_path / "in")]
    assert before == [(1, "alignment"), (2, "always"), (3, "size")]
    assert len(merge_datasets([tmp_path / "in"], tmp_path / "out")) == 3
    assert [(p.problem.m, p.tf32_rule) for p in load_dataset(tmp_path / "out")] == before


def test_problem_timings_validate_their_shape():
    with pytest.raises(ValueError, match="2 configs but 1 times"):
        ProblemTimings(GemmProblem("mm", 1, 2, 3), (ATEN, triton(16)), (1.0,))
    with pytest.raises(ValueError, match="split must be one of"):
        ProblemTimings(GemmProblem("mm", 1, 2, 3), (ATEN,), (1.0,), split="test")
    assert ProblemTimings(GemmProblem("mm", 1, 2, 3), (), ()).best_us == math.inf
    assert isinstance(Dataset(H100, [], []).split("train"), list)
