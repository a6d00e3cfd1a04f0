"""The on-disk prediction cache: keys, files, damage, bounds, privacy, failure, real processes
and a real second compile served from it."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import msgpack
import pytest

import diode_backend
from diode_backend import cache
from diode_backend import codec, predicted
from diode_backend.cache import CachingScorer, PredictionCache, decode_entry, encode_entry, prediction_key
from diode_backend.problem import GemmProblem, HardwareInfo, KernelConfig
from diode_backend.scorer import Prediction
from diode_backend.policy import Ranking, rank_candidates

from model_files import write_checkpoint

H100 = HardwareInfo("NVIDIA H100 80GB HBM3", "nvidia", sm_count=132, compute_capability=(9, 0))
PROBLEM = GemmProblem("addmm", 512, 1024, 256, dtype="bfloat16", b_layout="col", bias="row")
CONFIGS = [
    KernelConfig("aten", "aten::addmm"),
    KernelConfig("aten", "aten::bias_addmm"),
    KernelConfig("triton", "triton::mm", 64, 64, 32, 3, 4, 8),
    KernelConfig("triton", "triton::mm", 128, 128, 64, 4, 8, 8),
    KernelConfig("decompose_k", "triton::decompose_k"),
]


class CountingScorer:
    """Deterministic times; counts its calls so a test can tell a hit from an inference."""

    name = "counting"
    identity = "counting-v1"

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, problem, configs, hardware):
        self.calls += 1
        times = [math.nan if c.kind == "decompose_k" else float(problem.m % 7 + i + 1) for i, c in enumerate(configs)]
        if len(times) > 3:
            times[3] = math.inf  # cannot launch: ranked last, still scored
        return Prediction(tuple(times), confidence=0.75)


def same_ranking(a: Ranking, b: Ranking) -> bool:
    same_times = all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a.times_us, b.times_us))
    return (a.order, a.unscored, a.confidence) == (b.order, b.unscored, b.confidence) and same_times


def test_second_ranking_is_read_from_disk_not_inferred(isolated_caches):
    scorer = CountingScorer()
    first = rank_candidates(CachingScorer(scorer), PROBLEM, CONFIGS, H100)
    second = rank_candidates(CachingScorer(scorer), PROBLEM, CONFIGS, H100)
    assert scorer.calls == 1
    assert same_ranking(first, second)
    assert first.unscored == (4,) and first.order[-1] == 3  # nan unscored, inf last
    counts = diode_backend.stats()["counters"]
    assert counts["prediction_cache_misses"] == 1 and counts["prediction_cache_hits"] == 1
    assert counts["prediction_cache_hit_us"] > 0 and counts["prediction_cache_miss_us"] > 0


def test_disabled_cache_neither_reads_nor_writes(isolated_caches):
    scorer = CountingScorer()
    rank_candidates(scorer, PROBLEM, CONFIGS, H100)
    rank_candidates(scorer, PROBLEM, CONFIGS, H100)
    assert scorer.calls == 2
    assert not cache.cache_directory().exists()
    assert "prediction_cache_misses" not in diode_backend.stats()["counters"]


def _changed(field: str):
    """(scorer, problem, configs, hardware) with one thing that must change the key changed."""
    scorer, problem, configs, hardware = CountingScorer(), PROBLEM, list(CONFIGS), H100
    if field == "identity":
        scorer.identity = "counting-v2"
    elif field == "scorer_name":
        scorer.name = "other"
    elif field == "hardware":
        hardware = dataclasses.replace(H100, sm_count=114)
    elif field == "hardware_peaks":
        hardware = dataclasses.replace(H100, peak_tflops={"bfloat16": 900.0})
    elif field == "candidate_order":
        configs = configs[::-1]
    elif field == "candidate_set":
        configs = configs[:-1]
    else:  # a problem field
        value = {"op": "mm", "m": 513, "n": 1023, "k": 255, "batch": 2, "dtype": "float16", "out_dtype": "float32",
                 "a_layout": "col", "b_layout": "row", "bias": "full", "allow_tf32": True}[field]  # fmt: skip
        problem = dataclasses.replace(PROBLEM, **{field: value})
    return scorer, problem, configs, hardware


@pytest.mark.parametrize(
    "field",
    ["identity", "scorer_name", "hardware", "hardware_peaks", "candidate_order", "candidate_set",
     "op", "m", "n", "k", "batch", "dtype", "out_dtype", "a_layout", "b_layout", "bias", "allow_tf32"],
)  # fmt: skip
def test_key_covers_everything_that_changes_the_answer(field):
    base = prediction_key(CountingScorer(), PROBLEM, CONFIGS, H100)
    assert prediction_key(CountingScorer(), PROBLEM, list(CONFIGS), H100) == base  # stable
    assert prediction_key(*_changed(field)) != base


def test_key_covers_package_and_torch_versions(monkeypatch):
    import torch

    base = prediction_key(CountingScorer(), PROBLEM, CONFIGS, H100)
    monkeypatch.setattr(cache, "__version__", "9.9.9")
    assert prediction_key(CountingScorer(), PROBLEM, CONFIGS, H100) != base
    monkeypatch.undo()
    monkeypatch.setattr(torch, "__version__", torch.__version__ + ".other")
    assert prediction_key(CountingScorer(), PROBLEM, CONFIGS, H100) != base


def test_key_is_the_same_in_another_process():
    code = textwrap.dedent(
        f"""
        import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_cache import CountingScorer, PROBLEM, CONFIGS, H100
        from diode_backend.cache import prediction_key
        print(prediction_key(CountingScorer(), PROBLEM, CONFIGS, H100))
        """
    )
    env = {**os.environ, "PYTHONHASHSEED": "123"}  # a different str hash must not matter
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert other.stdout.strip() == prediction_key(CountingScorer(), PROBLEM, CONFIGS, H100)


def test_location_follows_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("DIODE_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert cache.cache_directory() == tmp_path / "elsewhere" / f"predictions-v{cache.SCHEMA_VERSION}"
    rank_candidates(CachingScorer(CountingScorer()), PROBLEM, CONFIGS, H100)
    assert len(list((tmp_path / "elsewhere").rglob("*.msgpack"))) == 1


def test_default_location_is_the_user_cache_folder(tmp_path, monkeypatch):
    import platformdirs

    monkeypatch.delenv("DIODE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cache._user_cache_dir.cache_clear()
    try:
        expected = Path(platformdirs.user_cache_dir("diode-backend", appauthor=False)) / "predictions-v1"
        assert cache.cache_directory() == expected
        if sys.platform.startswith("linux"):
            assert expected == tmp_path / "xdg" / "diode-backend" / "predictions-v1"
    finally:
        cache._user_cache_dir.cache_clear()


def test_folders_and_files_are_private_to_the_user(tmp_path):
    old_umask = os.umask(0o022)  # a typical umask would leave files world-readable
    try:
        store = PredictionCache(tmp_path / "app" / "predictions-v1")
        store.put("ab" * 32, CountingScorer().predict(PROBLEM, CONFIGS, H100))
    finally:
        os.umask(old_umask)
    for folder in (tmp_path / "app", tmp_path / "app" / "predictions-v1", tmp_path / "app" / "predictions-v1" / "ab"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    (entry,) = (tmp_path / "app").rglob("*.msgpack")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def _damage(kind: str, data: bytes, key: str) -> bytes:
    entry = msgpack.unpackb(data, raw=False)
    if kind == "truncated":
        return data[: len(data) // 2]
    if kind == "garbage":
        return b"\x00\xffnot msgpack at all"
    if kind == "empty":
        return b""
    if kind == "wrong_version":
        entry["version"] = cache.SCHEMA_VERSION + 1
    elif kind == "foreign_key":
        entry["key"] = "0" * 64
    elif kind == "not_a_ranking":
        entry = {"hello": "world"}
    elif kind == "short_times":
        entry["times_us"] = entry["times_us"][:-8]
    elif kind == "negative_time":  # a time must be positive (inf: cannot launch) or NaN (unscored)
        times = codec.unpack("d", entry["times_us"])
        times[0] = -1.0
        entry["times_us"] = codec.pack("d", times)
    return msgpack.packb(entry, use_bin_type=True)


@pytest.mark.parametrize(
    "kind",
    ["truncated", "garbage", "empty", "wrong_version", "foreign_key", "not_a_ranking", "short_times",
     "negative_time"],  # fmt: skip
)
def test_damaged_entry_is_a_miss_and_gets_rewritten(isolated_caches, kind):
    scorer = CountingScorer()
    good = rank_candidates(CachingScorer(scorer), PROBLEM, CONFIGS, H100)
    key = prediction_key(scorer, PROBLEM, CONFIGS, H100)
    path = cache.default_cache().path_of(key)
    path.write_bytes(_damage(kind, path.read_bytes(), key))
    again = rank_candidates(CachingScorer(scorer), PROBLEM, CONFIGS, H100)
    assert scorer.calls == 2  # the damaged entry was not trusted
    assert same_ranking(again, good)
    assert decode_entry(path.read_bytes(), key, len(CONFIGS)) is not None  # rewritten whole
    counts = diode_backend.stats()["counters"]
    assert counts["prediction_cache_misses"] == 2 and "prediction_cache_hits" not in counts
    assert "prediction_cache_errors" not in counts


def test_entry_of_another_candidate_count_is_not_used(isolated_caches):
    prediction = Prediction((2.0, 1.0), None)
    assert decode_entry(encode_entry("k", prediction), "k", 2) == prediction
    assert decode_entry(encode_entry("k", prediction), "k", 3) is None


def test_cache_is_bounded_and_evicts_least_recently_used(tmp_path):
    store = PredictionCache(tmp_path, max_entries=10, eviction_sample=1)
    ranking = Prediction((1.0,), None)
    keys = [f"{i:064x}" for i in range(30)]
    for i, key in enumerate(keys):
        store.put(key, ranking)
        os.utime(store.path_of(key), (1000.0 + i, 1000.0 + i))  # distinct, ordered mtimes
        if i == 5:
            assert store.get(keys[0], 1) == ranking  # a hit keeps keys[0] recent
    info = store.info()
    assert info.entries <= 10
    assert store.get(keys[-1], 1) == ranking  # the newest survive
    assert store.get(keys[1], 1) is None  # the oldest untouched went first


def test_cache_is_bounded_in_bytes(tmp_path):
    ranking = Prediction(tuple(float(i) for i in range(1, 101)), 0.5)
    size = len(encode_entry("0" * 64, ranking))
    store = PredictionCache(tmp_path, max_bytes=5 * size, eviction_sample=1)
    for i in range(20):
        store.put(f"{i:064x}", ranking)
    assert 0 < store.info().bytes <= 5 * size


def test_eviction_removes_temporary_files_of_dead_writers(tmp_path):
    store = PredictionCache(tmp_path)
    store.put("ab" * 32, Prediction((1.0,), None))
    stale, fresh = tmp_path / "ab" / ".tmp-dead", tmp_path / "ab" / ".tmp-writing"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    store.evict()
    assert not stale.exists() and fresh.exists()
    assert store.info().entries == 1


def test_clear_deletes_every_entry(tmp_path):
    store = PredictionCache(tmp_path)
    for i in range(5):
        store.put(f"{i:064x}", Prediction((1.0,), None))
    assert store.clear() == 5
    assert store.info().entries == 0
    store.put("ff" * 32, Prediction((1.0,), None))  # usable again after a clear
    assert store.info().entries == 1


def test_unusable_cache_never_fails_the_ranking(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache folder cannot be created under a file")
    monkeypatch.setenv("DIODE_CACHE_DIR", str(blocker))
    scorer = CountingScorer()
    with caplog.at_level(logging.WARNING, logger="diode_backend"):
        first = rank_candidates(CachingScorer(scorer), PROBLEM, CONFIGS, H100)
        second = rank_candidates(CachingScorer(scorer), PROBLEM, CONFIGS, H100)
    assert same_ranking(first, second) and scorer.calls == 2
    assert diode_backend.stats()["counters"]["prediction_cache_errors"] == 4  # read and write, twice
    warnings = [r for r in caplog.records if "prediction cache" in r.getMessage()]
    assert len(warnings) == 1  # logged once


def test_scorer_errors_propagate_as_without_cache(isolated_caches):
    class Broken(CountingScorer):
        def predict(self, problem, configs, hardware):
            raise RuntimeError("scorer exploded")

    with pytest.raises(RuntimeError, match="exploded"):
        rank_candidates(CachingScorer(Broken()), PROBLEM, CONFIGS, H100)
    assert "prediction_cache_errors" not in diode_backend.stats()["counters"]


# -- real processes ------------------------------------------------------------------------------

_HAMMER = textwrap.dedent(
    """
    import json, random, sys, time
    from diode_backend.cache import PredictionCache
    from diode_backend.scorer import Prediction

    directory, seconds, seed, max_entries = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    store = PredictionCache(directory, max_entries=max_entries, eviction_sample=8)
    rng = random.Random(seed)

    def expected(i):
        n = 50 + i * 37  # different sizes per key: a torn write could not pass for another key
        times = tuple(float((j * 7919 + i) % 97 + 1) for j in range(n))
        return Prediction(times, (i % 10) / 10)

    written, hits, misses, errors = set(), 0, 0, []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        i = rng.randrange(24)  # 24 keys shared by every process
        key = f"{i:064x}"
        try:
            if rng.random() < 0.5:
                store.put(key, expected(i))
                written.add(key)
            else:
                got = store.get(key, len(expected(i).times_us))
                if got is None:
                    misses += 1
                elif got != expected(i):
                    errors.append(f"{key}: read a different prediction")
                else:
                    hits += 1
        except Exception as err:
            errors.append(f"{type(err).__name__}: {err}")
    import diode_backend
    corrupt = diode_backend.stats()["counters"].get("prediction_cache_corrupt", 0)  # a torn read would land here
    print(json.dumps({"written": sorted(written), "hits": hits, "misses": misses, "errors": errors, "corrupt": corrupt}))
    """
)


@pytest.mark.parametrize("max_entries", [100_000, 6], ids=["unbounded", "evicting"])
def test_many_processes_hammering_overlapping_keys(tmp_path, max_entries):
    processes = 10
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _HAMMER, str(tmp_path), "3.0", str(seed), str(max_entries)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in range(processes)
    ]
    reports = []
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        reports.append(json.loads(out))
    assert all(report["errors"] == [] for report in reports), [r["errors"] for r in reports]
    assert all(report["corrupt"] == 0 for report in reports)
    assert sum(report["hits"] for report in reports) > 100  # they really did share entries
    store = PredictionCache(tmp_path)
    files = list(tmp_path.rglob("*.msgpack"))
    for path in files:  # every entry on disk is whole
        key = path.stem
        n = 50 + int(key, 16) * 37
        assert store.get(key, n) is not None, path
    assert not list(tmp_path.rglob(".tmp-*"))  # no writer left a temporary file behind
    written = set().union(*(report["written"] for report in reports))
    if max_entries > len(written):
        assert {path.stem for path in files} == written  # nothing reported written was lost
    else:
        assert len(files) <= max_entries + processes * 8  # soft bound: checked on a sample of writes


_COMPILE = textwrap.dedent(
    """
    import json, sys, torch
    import diode_backend
    from diode_backend.model.learned import LearnedScorer

    loads = []  # models loaded in this process
    real_init = LearnedScorer.__init__
    LearnedScorer.__init__ = lambda self, *args, **kwargs: (loads.append(1), real_init(self, *args, **kwargs))[1]

    def biased_linear(bias, x, w):
        return torch.addmm(bias.expand(x.shape[0], w.shape[1]), x, w)

    torch.manual_seed(0)
    args = (torch.randn(32), torch.randn(8, 64), torch.randn(64, 32))
    options = {"max_autotune": True, "max_autotune_gemm_backends": "DIODE", "fx_graph_cache": False,
               "fast_autotune": True, "diode_model": sys.argv[1],
               "diode_confidence_threshold": 0.0}  # a single pick: the ranking is what is cached
    out = torch.compile(biased_linear, options=options)(*args)
    torch.testing.assert_close(out, biased_linear(*args))
    stats = diode_backend.stats()
    print(json.dumps({"counters": stats["counters"], "decisions": stats["decisions"],
                      "picks": stats["picks_by_kind"], "errors": stats["errors"], "loads": len(loads)}))
    """
)


@pytest.mark.parametrize("keep_pick", [True, False], ids=["predicted-decision", "prediction-cache"])
def test_second_process_compiling_the_same_model_is_served_from_the_cache(tmp_path, keep_pick):
    """Real torch.compile twice, in fresh processes with fresh Inductor caches: only DIODE's cache
    carries over. The second compile takes the first one's single pick (a predicted decision)
    without loading the model; without that decision it ranks from the prediction cache."""
    model = write_checkpoint(tmp_path / "model.pt")

    def compile_in_new_process(run: str) -> dict:
        env = {**os.environ, "DIODE_CACHE_DIR": str(tmp_path / "diode"),
               "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"inductor-{run}")}  # fmt: skip
        done = subprocess.run([sys.executable, "-c", _COMPILE, str(model)], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    first = compile_in_new_process("a")
    if not keep_pick:
        PredictionCache(tmp_path / "diode" / predicted.FOLDER).clear()
    second = compile_in_new_process("b")
    assert first["errors"] == {} and second["errors"] == {}
    assert first["decisions"] == second["decisions"] >= 1 and first["loads"] == 1
    assert first["counters"]["prediction_cache_misses"] >= 1 and "prediction_cache_hits" not in first["counters"]
    assert first["counters"]["predicted_decisions"] == first["decisions"]
    assert "prediction_cache_misses" not in second["counters"]
    if keep_pick:
        assert second["counters"]["predicted_decision_hits"] == first["decisions"]
        assert "prediction_cache_hits" not in second["counters"] and second["loads"] == 0
    else:
        assert second["counters"]["prediction_cache_hits"] == first["counters"]["prediction_cache_misses"]
    assert first["picks"] == second["picks"]


def test_choosing_between_groups_is_served_from_the_cache_too(isolated_caches):
    """Where an op's candidates come in several groups (on a GPU: ATen and Triton), the union of
    the groups' picks is ranked once more; a second compile reads that ranking from disk."""
    from diode_backend.inductor.benchmarked_choices import _union_ranking
    from diode_backend.inductor.context import GemmContext
    from diode_backend.inductor.group_configs import CandidateMark
    from diode_backend.options import DiodeOptions

    scorer = CountingScorer()
    context = GemmContext(options=DiodeOptions(), op="addmm", problem=PROBLEM, hardware=H100, scorer=CachingScorer(scorer))
    marks = [
        CandidateMark(context, CONFIGS[1], 3.0, group=1, group_size=2, group_confidence=0.9, from_cache=False),
        CandidateMark(context, CONFIGS[2], 2.0, group=2, group_size=3, group_confidence=0.8, from_cache=False),
    ]
    first, second = _union_ranking(marks), _union_ranking(marks)
    assert scorer.calls == 1
    assert first == second and first.order == (1, 0) and first.confidence == pytest.approx(0.8 * 0.75)
    counts = diode_backend.stats()["counters"]
    assert counts["prediction_cache_misses"] == 1 and counts["prediction_cache_hits"] == 1
