"""The sweep under torchrun: each rank times its share of the plan into shards of its own, a rank
killed in the middle loses nothing it flushed, the restart skips what is done, and the merged
dataset holds what one process collects. On the CPU: gloo-free (the ranks share only files),
Triton's interpreter runs the kernels."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from diode_backend.offline.collect.ranks import Rank
from diode_backend.offline.dataset import load_dataset, read_shard, shard_paths

REPO = Path(__file__).resolve().parents[1]

# One rank of the sweep on the CPU. argv: output directory, the rank to kill with SIGKILL once it
# has flushed its first shard (on torchrun's first attempt only; -1: none), a file for its pid.
RANK_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from pathlib import Path
    from diode_backend.offline.collect.environment import hardware_of
    from diode_backend.offline.collect.plan import PlannedProblem
    from diode_backend.offline.collect.ranks import Rank
    from diode_backend.offline.collect.sweep import run_sweep
    from diode_backend.timing import TimingMethod
    from diode_backend.offline.dataset import DatasetMeta
    from diode_backend.problem import GemmProblem, KernelConfig


    def main():  # the sweep's workers start by spawn, which imports this file again
        output, doomed, pid_file = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
        configs = (
            KernelConfig("aten", "aten::mm"),
            KernelConfig("triton", "triton::mm", 16, 16, 16, 2, 4, 8),
            KernelConfig("triton", "triton::mm", 32, 16, 32, 1, 2, 8),
        )
        plan = [
            PlannedProblem(GemmProblem("mm", m, 48, 32, dtype="float32"), configs, "train", "test", "exhaustive")
            for m in (16, 24, 32, 40, 48, 56, 64, 72)
        ]
        rank = Rank.from_environment()
        if rank.rank == doomed and rank.restart == 0:
            pid_file.write_text(str(os.getpid()))

            def die_after_the_first_shard():
                while not any(output.glob(f"shard-*-{rank.tag}-*.msgpack")):
                    time.sleep(0.01)
                os.kill(os.getpid(), signal.SIGKILL)

            threading.Thread(target=die_after_the_first_shard, daemon=True).start()
        meta = DatasetMeta(hardware_of("cpu"), {"rank": rank.rank, "restart": rank.restart})
        report = run_sweep(
            plan, output, meta, device="cpu", rank=rank, method=TimingMethod(replay="host"),
            compile_workers=1, retime_every=0, progress=False, flush_every=1,
        )
        print(f"{rank.describe()}: {report.problems} timed, {report.skipped_problems} skipped")


    if __name__ == "__main__":
        main()
    """
)
PLANNED = 8  # problems in RANK_SCRIPT's plan


def _env() -> dict[str, str]:
    return {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def _shards(directory: Path) -> list[tuple[dict, list]]:
    """``(environment, problems)`` of each shard, in the order they were written; checks that
    each shard's name carries the rank that wrote it."""
    shards = []
    for path in sorted(shard_paths(directory), key=lambda p: p.stat().st_mtime_ns):
        meta, items = read_shard(path)
        assert f"-rank{meta.environment['rank']}-cpu-" in path.name
        shards.append((meta.environment, [item.problem for item in items]))
    return shards


def test_torchrun_ranks_share_the_plan_survive_a_killed_rank_and_merge_into_one_process_dataset(tmp_path, triton_interpreter):
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    ranks, alone, pid_file = tmp_path / "ranks", tmp_path / "alone", tmp_path / "doomed.pid"
    torchrun = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "--max-restarts", "1", "--monitor-interval", "0.2",
        str(script), str(ranks), "1", str(pid_file),
    ]  # fmt: skip
    log = tmp_path / "torchrun.log"
    started = time.monotonic()
    try:
        with log.open("w") as out:  # a file, not a pipe: a process left behind holds no pipe open
            run = subprocess.run(torchrun, env=_env(), stdout=out, stderr=subprocess.STDOUT, timeout=240, cwd=tmp_path)
        assert run.returncode == 0, log.read_text()[-4000:]
        # the killed rank's helper processes (compile pool, manager, GPU worker) ended with it
        assert _group_ends(int(pid_file.read_text()), within=10), "the killed rank's helpers outlived it"
        single = subprocess.run(
            [sys.executable, str(script), str(alone), "-1", str(tmp_path / "unused.pid")],
            env=_env(), capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert single.returncode == 0, single.stderr[-4000:]
        print(f"torchrun and single-process sweeps: {time.monotonic() - started:.1f} s")

        shards = _shards(ranks)
        assert {env["rank"] for env, _ in shards} == {0, 1}
        # rank 1 died after its first shard, before the rest of its share; the restart finished it
        first_try = [problems for env, problems in shards if env["rank"] == 1 and env["restart"] == 0]
        assert 1 <= sum(map(len, first_try)) < PLANNED // 2
        assert any(env["rank"] == 1 and env["restart"] == 1 for env, _ in shards)
        # what was flushed before the kill was not timed again; each rank kept to its own share
        retimed = {p for env, problems in shards if env["restart"] == 1 for p in problems}
        assert not set(first_try[0]) & retimed
        by_rank = [{p for env, problems in shards if env["rank"] == r for p in problems} for r in (0, 1)]
        assert not by_rank[0] & by_rank[1]
        assert len(by_rank[0]) == len(by_rank[1]) == PLANNED // 2

        merged = tmp_path / "merged"
        merge = subprocess.run(
            [sys.executable, "-m", "diode_backend", "dataset", "merge", str(ranks), "-o", str(merged)],
            env=_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert merge.returncode == 0, merge.stderr[-3000:]
        together = load_dataset(merged)
        assert len(together) == PLANNED
        assert {p.problem for p in together} == {p.problem for p in load_dataset(alone)}
        assert all(len(p.configs) == 3 and p.failed == 0 for p in together)
    finally:
        _end_process_group(pid_file)


def _group_ends(group: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _end_process_group(pid_file: Path) -> None:
    """The killed rank's children, if any outlived it (torchrun signals only live ranks)."""
    if pid_file.exists():
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_each_rank_takes_every_world_size_th_problem_of_the_whole_plan():
    plan = list(range(10))
    shares = [Rank(r, 3, r, 3).share(plan) for r in range(3)]
    assert shares == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert Rank().share(plan) == plan


def test_the_rank_comes_from_torchruns_environment():
    env = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "TORCHELASTIC_RESTART_COUNT": "2"}
    assert Rank.from_environment(env) == Rank(5, 8, 1, 4, restart=2)
    assert Rank.from_environment({}) == Rank()
    with pytest.raises(ValueError, match="RANK set but not WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE"):
        Rank.from_environment({"RANK": "0"})
    with pytest.raises(ValueError, match="not a torchrun rank"):
        Rank.from_environment({**env, "RANK": "8"})
    assert Rank(1, 2, 1, 2).report_path("out/run.json") == Path("out/run.rank1.json")
    assert Rank().report_path("out/run.json") == Path("out/run.json")
