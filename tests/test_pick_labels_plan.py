"""``benchmarks/h100_pick_labels_plan.py``: what it lists to time for a training problem whose
compile-time pick was never timed, and the committed list."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from diode_backend import catalog
from diode_backend.offline.collect import plan, shapes
from diode_backend.offline.dataset import ProblemTimings, load_dataset
from diode_backend.offline.families import family_of
from diode_backend.offline.pick_labels import joined, load_pick_labels
from diode_backend.problem import GemmProblem, KernelConfig

DATA = Path(__file__).resolve().parent.parent / "trained_models" / "data" / "h100"


def tile(m: int) -> KernelConfig:
    return KernelConfig("triton", "mm", m, 64, 32, 3, 4, 8)


@pytest.fixture
def script(benchmark_scripts):
    return benchmark_scripts("runtime_list_confidence", "h100_pick_labels_plan")[1]


def test_an_untimed_pick_is_listed_with_the_next_untimed_and_the_fastest_timed_tile(script):
    aten = KernelConfig("aten", "aten::mm")
    record = ProblemTimings(GemmProblem("mm", 64, 64, 64), (aten, tile(16), tile(32), tile(8)), (5.0, 4.0, 3.0, 3.0))
    assert script.to_time([tile(32), tile(64)], record) is None  # the pick was timed: its label is known
    order = [tile(64), tile(16), tile(128), tile(256), tile(512)]
    assert script.to_time(order, record) == (tile(64), tile(128), tile(256), tile(32))  # a tie: the first timed
    only_aten = ProblemTimings(GemmProblem("mm", 64, 64, 64), (aten,), (5.0,))
    assert script.to_time(order, only_aten) == (tile(64), tile(16), tile(128))


def test_a_dense_list_names_the_untimed_configs_among_the_first_n_timed_pick_or_not(script):
    aten = KernelConfig("aten", "aten::mm")
    record = ProblemTimings(GemmProblem("mm", 64, 64, 64), (aten, tile(16), tile(32), tile(8)), (5.0, 4.0, 3.0, 3.0))
    order = [tile(32), tile(64), tile(16), tile(128), tile(256)]
    assert script.to_time(order, record) is None  # the pick was timed
    assert script.to_time(order, record, dense=4) == (tile(64), tile(128), tile(32))  # beside the reference
    assert script.to_time(order, record, dense=1) is None  # the first one was timed
    assert script.to_time([tile(32), tile(16), tile(8)], record, dense=3) is None


def test_a_neighbours_list_names_the_untimed_configs_one_step_from_the_fastest_timed_tile(script):
    aten = KernelConfig("aten", "aten::mm")
    fastest = KernelConfig("triton", "mm", 64, 64, 32, 3, 4, 8)
    slower = KernelConfig("triton", "mm", 128, 64, 32, 3, 4, 8)  # BLOCK_M doubled, timed already
    record = ProblemTimings(GemmProblem("mm", 64, 64, 64), (aten, fastest, slower), (5.0, 3.0, 4.0))
    warps_2, stages_5 = dataclasses.replace(fastest, num_warps=2), dataclasses.replace(fastest, num_stages=5)
    half_n, double_k = dataclasses.replace(fastest, block_n=32), dataclasses.replace(fastest, block_k=64)
    far = [
        dataclasses.replace(fastest, group_m=4),  # another group
        dataclasses.replace(fastest, block_k=128),  # BLOCK_K four times
        dataclasses.replace(fastest, block_n=32, block_k=64),  # two blocks changed
        dataclasses.replace(half_n, num_warps=2),  # a block changed at other warps
        dataclasses.replace(slower, num_warps=8),  # one step from the slower tile only
        dataclasses.replace(fastest, template="bmm"),
    ]
    configs = [aten, slower, fastest, warps_2, *far, half_n, stages_5, double_k]
    assert script.neighbours(configs, record) == (warps_2, half_n, stages_5, double_k, fastest)  # the reference last
    assert script.neighbours([aten, fastest, slower, *far], record) is None  # nothing untimed one step away
    assert script.neighbours(configs, ProblemTimings(record.problem, (aten,), (5.0,))) is None  # no Triton tile timed


#: The label rounds whose picks a list was drawn beside (joined into the records). Round two's
#: validation list was drawn from the records alone, so it names a few configs round one timed.
EARLIER_ROUNDS = {
    ("pick-labels-2", "train"): ["pick-labels"],
    ("pick-labels-3", "train"): ["pick-labels", "pick-labels-2"],
    ("pick-labels-3", "validation"): ["pick-labels", "pick-labels-2"],
    ("pick-labels-3-capacity", "train"): ["pick-labels", "pick-labels-2"],
    ("pick-labels-3-capacity", "validation"): ["pick-labels", "pick-labels-2"],
    ("pick-labels-dense-1", "train"): ["pick-labels", "pick-labels-2", "pick-labels-3", "pick-labels-3-capacity"],
    ("pick-labels-4", "train"): ["pick-labels", "pick-labels-2", "pick-labels-3", "pick-labels-3-capacity", "pick-labels-dense-1"],
    ("pick-labels-dense-1", "validation"): [
        "pick-labels", "pick-labels-2", "pick-labels-3", "pick-labels-3-capacity", "pick-labels-dense-1", "pick-labels-4",
    ],
    ("pick-labels-neighbours-1", "train"): [
        "pick-labels", "pick-labels-2", "pick-labels-3", "pick-labels-3-capacity", "pick-labels-dense-1", "pick-labels-4",
    ],
    ("pick-labels-5", "train"): [
        "pick-labels", "pick-labels-2", "pick-labels-3", "pick-labels-3-capacity", "pick-labels-dense-1", "pick-labels-4",
        "pick-labels-neighbours-1",
    ],
    ("pick-labels-6", "train"): [
        "pick-labels", "pick-labels-2", "pick-labels-3", "pick-labels-3-capacity", "pick-labels-dense-1", "pick-labels-4",
        "pick-labels-neighbours-1", "pick-labels-5",
    ],
    ("pick-labels-neighbours-2", "train"): [
        "pick-labels", "pick-labels-2", "pick-labels-3", "pick-labels-3-capacity", "pick-labels-dense-1", "pick-labels-4",
        "pick-labels-neighbours-1", "pick-labels-5",
    ],
}
#: A dense round's list: the untimed configs among the first N of each ranking (``--dense N``).
DENSE = {"pick-labels-dense-1": 5}
#: A neighbours round's list: the untimed configs one step from the fastest timed tile (``--neighbours``).
NEIGHBOURS = {"pick-labels-neighbours-1", "pick-labels-neighbours-2"}


@pytest.mark.parametrize("prefix, split, least", [
    ("pick-labels", "train", 1000), ("pick-labels", "validation", 50),
    ("pick-labels-2", "train", 1000), ("pick-labels-2", "validation", 40), ("pick-labels-3", "train", 600),
    ("pick-labels-3", "validation", 5),
    ("pick-labels-3-capacity", "train", 600), ("pick-labels-3-capacity", "validation", 5),
    ("pick-labels-dense-1", "train", 3000), ("pick-labels-4", "train", 300), ("pick-labels-dense-1", "validation", 100),
    ("pick-labels-neighbours-1", "train", 4000), ("pick-labels-5", "train", 300), ("pick-labels-neighbours-2", "train", 1000),
    ("pick-labels-6", "train", 200),
])  # fmt: skip
def test_the_committed_lists_name_untimed_picks_beside_their_fastest_timed_tile(script, prefix, split, least):
    """Training problems of the fold families (fitting), held-out families' validation problems
    (measuring only). A later round's lists name picks that the earlier rounds' labels did not
    time either (the records joined with them are ranked)."""
    path = DATA / "problems" / f"{prefix}-{split}.json"
    path = path if path.is_file() else path.with_name(path.name + ".gz")  # a long list is kept compressed
    named, listed = shapes.from_json(path), shapes.listed_configs(path)
    records = load_dataset(DATA / "dataset").split(split)
    if (prefix, split) in EARLIER_ROUNDS:
        earlier = [DATA / name for name in EARLIER_ROUNDS[prefix, split]]
        records = joined(records, load_pick_labels(earlier, load_dataset(DATA / "dataset").hardware.key))
    dataset = {r.problem: r for r in records}
    assert len(named) >= least and set(listed) == {p for _, p in named}
    if split == "train":
        outside = {*script.HOLDOUT, *script.STOPPING, *script.CALIBRATION}
    else:
        outside = {family_of(r) for r in dataset.values()} - set(script.HOLDOUT)
    hardware = catalog.resolve_hardware("h100")
    most = 0
    for index, (generator, problem) in enumerate(named):
        record = dataset[problem]
        assert generator == f"{prefix}:{family_of(record)}" and family_of(record) not in outside
        timed = dict(zip(record.configs, record.times_us))
        timed_triton = [c for c in timed if c.kind == "triton"]
        untimed = list(listed[problem][:-1] if timed_triton else listed[problem])
        assert untimed and not set(untimed) & set(timed)
        most = max(most, len(untimed))
        if prefix in NEIGHBOURS:  # one step from the reference
            assert all(script.one_step(c, listed[problem][-1]) for c in untimed)
        else:
            assert len(untimed) <= DENSE.get(prefix, script.TOP)
        if timed_triton:  # the day's reference: the fastest tile the dataset timed
            assert timed[listed[problem][-1]] == min(timed[c] for c in timed_triton)
        if index % 50 == 0:  # every config in the problem's space: the sweep can time it
            plan.plan([(generator, problem)], hardware, split="train", space="listed", listed=listed)
    if prefix in DENSE:  # a dense list reaches past the TOP untimed configs a pick round lists
        assert most > script.TOP
