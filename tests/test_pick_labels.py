"""``offline.pick_labels``: an untimed compile-time pick judged from a label of its problem, read
back from real shards, where the label's kernels ran the same precision as the record's."""

from __future__ import annotations

import pytest
from synthetic_timings import H100

from diode_backend.offline.dataset import DatasetError, DatasetMeta, ProblemTimings, load_dataset, write_shard
from diode_backend.offline.pick_labels import joined, load_pick_labels, pick_ratio
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig

ATEN = KernelConfig("aten", "aten::mm")
TIMED = KernelConfig("triton", "triton::mm", 64, 64, 32, 3, 4, 8)
PICK = KernelConfig("triton", "triton::mm", 128, 128, 64, 4, 8, 8)
PROBLEMS = {
    "half": GemmProblem("mm", 1000, 1000, 1000, dtype="float16"),
    "fp32": GemmProblem("mm", 1000, 1000, 1000, dtype="float32"),
    "tf32 aligned": GemmProblem("mm", 1024, 1024, 1024, dtype="float32", allow_tf32=True),
    "tf32 unaligned": GemmProblem("mm", 1000, 1000, 1000, dtype="float32", allow_tf32=True),
}


def _shard(folder, records, rule=None):
    environment = {} if rule is None else {"triton_tf32_rule": rule}
    write_shard(folder / "part-000.msgpack", DatasetMeta(H100, environment), records)
    return folder


@pytest.fixture
def read_back(tmp_path):
    """The records (sweep shards with no recorded rule: ``alignment``) and their labels timed
    under the ``always`` rule, each read back from its own shard."""
    records = [ProblemTimings(p, (ATEN, TIMED), (10.0, 9.0), generator=name) for name, p in PROBLEMS.items()]
    labels = [ProblemTimings(p, (PICK, TIMED), (6.0, 8.0), generator=name) for name, p in PROBLEMS.items()]
    data = load_dataset([_shard(tmp_path / "data", records)])
    _shard(tmp_path / "labels", labels, rule="always")
    return {r.generator: r for r in data.problems}, load_pick_labels([tmp_path / "labels"], data.hardware.key)


def test_a_timed_pick_is_judged_by_its_record_and_an_untimed_one_by_its_label(read_back):
    records, labels = read_back
    half = records["half"]
    assert half.tf32_rule == "alignment" and labels[half.problem].tf32_rule == "always"
    assert pick_ratio(TIMED, half, labels) == (1.0, False)
    assert pick_ratio(ATEN, half, labels) == (pytest.approx(10.0 / 9.0), False)
    assert pick_ratio(PICK, half, labels) == (pytest.approx(6.0 / 6.0), True)  # the label's fastest is the pick itself
    assert pick_ratio(PICK, half) is None and pick_ratio(PICK, half, {}) is None
    unlisted = KernelConfig("triton", "triton::mm", 32, 32, 32, 2, 4, 8)
    assert pick_ratio(unlisted, half, labels) is None


@pytest.mark.parametrize(
    "name, judged",
    [("half", True), ("fp32", True), ("tf32 aligned", True), ("tf32 unaligned", False)],
)
def test_a_label_of_another_tf32_rule_judges_where_its_kernels_ran_the_same_precision(read_back, name, judged):
    """Rules ``alignment`` and ``always`` differ only on a float32 problem allowing TF32 whose
    sizes are not aligned: there the record's Triton kernels ran FP32 and the label's TF32."""
    records, labels = read_back
    assert (pick_ratio(PICK, records[name], labels) is not None) is judged


def test_labels_of_another_device_are_refused(tmp_path):
    other = HardwareInfo(name="NVIDIA A100-SXM4-80GB", vendor="nvidia", sm_count=108, compute_capability=(8, 0))
    write_shard(tmp_path / "part-000.msgpack", DatasetMeta(other), [ProblemTimings(PROBLEMS["half"], (PICK,), (1.0,))])
    with pytest.raises(DatasetError, match="timed on .*A100.*, the data judged on .*H100"):
        load_pick_labels([tmp_path], H100.key)
    assert load_pick_labels([tmp_path], other.key)


def test_a_label_joins_its_record_with_its_times_on_the_records_day(read_back):
    records, labels = read_back
    half = records["half"]
    (joined_half,) = joined([half], labels)
    # the label timed TIMED at 8.0 where the record has 9.0: its PICK (6.0) is 6.75 on the record's day
    assert joined_half.configs == (ATEN, TIMED, PICK)
    assert joined_half.times_us == pytest.approx((10.0, 9.0, 6.0 * 9.0 / 8.0))
    assert joined_half.problem == half.problem and joined_half.split == half.split
    assert joined([records["tf32 unaligned"]], labels) == [records["tf32 unaligned"]]  # another precision
    assert joined([half], {}) == [half]
    nothing_shared = {half.problem: ProblemTimings(half.problem, (PICK,), (6.0,))}
    assert joined([half], nothing_shared) == [half]  # no day to scale it to
    nothing_new = {half.problem: ProblemTimings(half.problem, (TIMED, ATEN), (1.0, 2.0))}
    assert joined([half], nothing_new) == [half]


def test_labels_of_several_rounds_are_one_label_per_problem_on_the_first_rounds_day(tmp_path):
    problem = PROBLEMS["half"]
    other = KernelConfig("triton", "triton::mm", 32, 64, 64, 4, 4, 8)
    _shard(tmp_path / "round-1", [ProblemTimings(problem, (PICK, TIMED), (6.0, 8.0))], rule="always")
    _shard(tmp_path / "round-2", [ProblemTimings(problem, (TIMED, other), (4.0, 3.0))], rule="always")
    (label,) = load_pick_labels([tmp_path / "round-1", tmp_path / "round-2"], H100.key).values()
    assert label.configs == (PICK, TIMED, other)
    assert label.times_us == pytest.approx((6.0, 8.0, 6.0))  # round two ran at half round one's times
    record = ProblemTimings(problem, (ATEN, TIMED), (10.0, 8.0))
    assert pick_ratio(other, record, {problem: label}) == (pytest.approx(1.0), True)
    with pytest.raises(DatasetError, match="round-3"):
        load_pick_labels([tmp_path / "round-1", tmp_path / "round-3"], H100.key)
