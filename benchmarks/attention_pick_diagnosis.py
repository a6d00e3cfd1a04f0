"""Why a timing model's attention-bmm picks go wrong (CPU only), on the families kept out of
gradient training, never on the held-out ones (``benchmarks/results/h100_attention_pick_study.md``).

Subcommands, each printing its figures:

- ``picks``: every attention-bmm problem's pick against its best (ATen or Triton, tile, how far
  each was predicted off), those over 1.05x listed, the log regret split by pick and best kind;
- ``fit``: top-1 regret per workload class on the training families (in-sample) and on the
  eleven, attention bmm by runtime and by candidate count;
- ``members``: among each problem's fast candidates (within 1.3x of the best), the RMS of the
  ensemble mean's log error with the problem's mean error removed, against the members' spread;
- ``noise``: the top-1 regret a perfect model would read against timings with the sweep's noise;
- ``explain``: how much of that within-problem error (attention bmm, fast Triton rows) a ridge
  regression on the model's own feature columns, and on candidate new columns, explains;
- ``occupancy``: correlation of that error with waves counted at the CTAs an SM holds at once;
- ``loss``: the training loss's parts (MSE offset, MSE within problem, listwise) per class.

Example::

    python benchmarks/attention_pick_diagnosis.py picks --model trained_models/nvidia-h100-gemm/model.pt
"""

from __future__ import annotations

import argparse
import collections
import math
import sys

import torch

from diode_backend import analytical
from diode_backend.config_table import ConfigTable
from diode_backend.model.checkpoint import load_checkpoint
from diode_backend.model.learned import feature_extractor_for
from diode_backend.offline.dataset import load_dataset, timed_hardware
from diode_backend.offline.families import family_of
from diode_backend.offline.train import inference_hardware
from diode_backend.offline.training_split import usable
from diode_backend.workload import workload_class

DATA = "trained_models/data/h100/dataset"
FAST = math.log(1.3)  # a problem's fast candidates: within 1.3x of its best
NOISE_SIGMAS = (0.0078, 0.0146, 0.025)  # the sweep's repeated-timing spread (model_error_analysis.py)


class Model:
    """The checkpoint's members' log-time predictions ``[E, n]`` of a record's candidates."""

    def __init__(self, path: str, hardware) -> None:
        checkpoint = load_checkpoint(path)
        self.network, self.extractor = checkpoint.model.eval(), feature_extractor_for(checkpoint)
        training = checkpoint.training
        #: judged, never trained on: the checkpoint's early-stopping and calibration families
        self.eleven = frozenset(training["stopping_families"] + training["calibration_families"])
        #: the reported families: every subcommand skips them
        self.held_out = frozenset(training["holdout_families"])
        self.hardware_of = timed_hardware(hardware)

    def members(self, record, configs=None) -> torch.Tensor:
        configs = record.configs if configs is None else configs
        with torch.no_grad():
            return self.network(self.extractor.extract(record.problem, configs, self.hardware_of(record))).double()


def problems(model: Model, dataset, part: str | None = None, cls: str | None = None):
    """(part, record) of the usable records outside ``model``'s held-out families: part
    ``eleven`` (its early-stopping and calibration families) or ``train``; only ``part`` and
    workload class ``cls`` when given."""
    for record in usable(list(dataset)):
        family = family_of(record)
        if family in model.held_out:
            continue
        where = "eleven" if family in model.eleven else "train"
        if (part is None or part == where) and (cls is None or workload_class(record.problem) == cls):
            yield where, record


def geo(logs) -> float:
    logs = list(logs)
    return math.exp(sum(logs) / len(logs)) if logs else math.nan


def figures(logs) -> str:
    logs = sorted(logs)
    n = len(logs)
    return f"n={n:5d} geo {geo(logs):.4f} p90 {math.exp(logs[int(0.9 * n)]):.4f} worst {math.exp(logs[-1]):.4f}"


def cmd_picks(args, dataset, model) -> None:
    rows = []
    for _, record in problems(model, dataset, "eleven", "attention_bmm"):
        times = torch.tensor(record.times_us, dtype=torch.float64)
        predicted = model.members(record).mean(0).exp()
        pick, best = int(predicted.argmin()), int(times.argmin())
        kinds = [c.kind for c in record.configs]

        def fastest(kind, values):
            return min((float(v) for v, k in zip(values, kinds) if k == kind), default=math.inf)

        rows.append({
            "family": family_of(record), "problem": record.problem.describe(), "candidates": len(times),
            "regret": float(times[pick] / times[best]), "pick": record.configs[pick], "best": record.configs[best],
            "pick_error": float(predicted[pick] / times[pick]), "best_error": float(predicted[best] / times[best]),
            "aten_over_triton": fastest("aten", times) / fastest("triton", times),
            "predicted_aten_over_triton": fastest("aten", predicted) / fastest("triton", predicted),
            "best_us": float(times[best]), "space": record.space,
        })  # fmt: skip
    logs = [math.log(r["regret"]) for r in rows]
    print(f"attention bmm on the eleven families: {figures(logs)}")
    share = collections.Counter()
    for r, log in zip(rows, logs):
        share[(r["pick"].kind, r["best"].kind)] += log
    for (pick, best), value in share.most_common():
        count = sum(1 for r in rows if (r["pick"].kind, r["best"].kind) == (pick, best))
        over = sum(1 for r in rows if (r["pick"].kind, r["best"].kind) == (pick, best) and r["regret"] > 1.05)
        print(f"  pick {pick:6s} best {best:6s}: {count:4d} problems, {over:3d} over 1.05x, {value / sum(logs):.0%} of the log regret")
    right = sum((r["predicted_aten_over_triton"] < 1) == (r["aten_over_triton"] < 1) for r in rows)
    print(f"  ATen-or-Triton decided right on {right} of {len(rows)}")
    for key, of in (("space", lambda r: r["space"]), ("dtype", lambda r: r["problem"].split()[2])):
        groups = collections.defaultdict(list)
        for r, log in zip(rows, logs):
            groups[of(r)].append(log)
        over = {k: sum(x > math.log(1.05) for x in v) for k, v in groups.items()}
        print(f"  by {key}: " + ", ".join(f"{k} {geo(v):.4f} ({over[k]}/{len(v)} over 1.05)" for k, v in groups.items()))
    bad = sorted((r for r in rows if r["regret"] > 1.05), key=lambda r: -r["regret"])
    print(f"  {len(bad)} over 1.05x; median pick error {sorted(r['pick_error'] for r in bad)[len(bad) // 2]:.3f}, "
          f"median best error {sorted(r['best_error'] for r in bad)[len(bad) // 2]:.3f} (predicted / measured)")  # fmt: skip
    for r in bad:
        print(f"  {r['regret']:.3f} {r['family']:11s} {r['problem']:42s} pick {r['pick'].describe():36s} best "
              f"{r['best'].describe():36s} ATen/Triton {r['aten_over_triton']:.2f} (predicted {r['predicted_aten_over_triton']:.2f}) "
              f"{r['best_us']:.1f} us, {r['candidates']} candidates")  # fmt: skip


def cmd_fit(args, dataset, model) -> None:
    logs = collections.defaultdict(list)
    for part, record in problems(model, dataset):
        times = torch.tensor(record.times_us, dtype=torch.float64)
        log = math.log(float(times[int(model.members(record).mean(0).argmin())] / times.min()))
        cls = workload_class(record.problem)
        logs[(part, "all")].append(log)
        logs[(part, cls)].append(log)
        if cls == "attention_bmm":
            band = "under 10 us" if times.min() < 10 else "10-30 us" if times.min() < 30 else "30 us and over"
            logs[(part, f"attention_bmm {band}")].append(log)
            logs[(part, f"attention_bmm {'<=' if len(times) <= 30 else '>'}30 candidates")].append(log)
    for (part, key), values in sorted(logs.items()):
        print(f"{part:6s} {key:32s} {figures(values)}")


def cmd_members(args, dataset, model) -> None:
    sums = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for part, record in problems(model, dataset):
        truth = torch.tensor(record.times_us, dtype=torch.float64).log()
        members = model.members(record)
        fast = truth <= truth.min() + FAST
        centred = members - members[:, fast].mean(1, keepdim=True)  # each member's offset removed
        mean = centred.mean(0)
        error = mean - truth
        error = error - error[fast].mean()
        entry = sums[(part, workload_class(record.problem))]
        entry[0] += float(error[fast].pow(2).sum())
        entry[1] += float((centred - mean).pow(2).mean(0)[fast].sum())
        entry[2] += int(fast.sum())
    for (part, cls), (error, spread, count) in sorted(sums.items()):
        print(f"{part:6s} {cls:15s} fast rows {count:6d}: mean's error RMS {math.sqrt(error / count):.4f}, "
              f"members' spread RMS {math.sqrt(spread / count):.4f}")


def cmd_noise(args, dataset, model) -> None:
    generator = torch.Generator().manual_seed(0)
    for sigma in NOISE_SIGMAS:
        logs = collections.defaultdict(list)
        for _, record in problems(model, dataset, "eleven"):
            times = torch.tensor(record.times_us, dtype=torch.float64)
            draws = []
            for _ in range(5):
                noisy = times * torch.exp(torch.randn(len(times), generator=generator, dtype=torch.float64) * sigma)
                draws.append(math.log(float(noisy[times.argmin()] / noisy.min())))
            logs[workload_class(record.problem)].append(sum(draws) / len(draws))
        print(f"sigma {sigma}: " + ", ".join(f"{cls} {geo(v):.4f}" for cls, v in sorted(logs.items())))


def _fast_triton_errors(dataset, model, part):
    """Per attention-bmm problem of ``part`` with enough fast Triton rows: (error, features,
    configs) of those rows, error and feature columns centred per problem."""
    for _, record in problems(model, dataset, part, "attention_bmm"):
        keep = [i for i, c in enumerate(record.configs) if c.kind == "triton"]
        configs = [record.configs[i] for i in keep]
        truth = torch.tensor([record.times_us[i] for i in keep], dtype=torch.float64).log()
        fast = truth <= truth.min() + FAST
        if len(keep) < 5 or fast.sum() < 4:
            continue
        error = (model.members(record, configs).mean(0) - truth)[fast]
        features = model.extractor.extract(record.problem, configs, model.hardware_of(record)).double()[fast]
        yield error - error.mean(), features - features.mean(0), record, [c for c, f in zip(configs, fast) if f]


def _candidate_columns(problem, configs) -> torch.Tensor:
    """Columns a new feature version might add (not in gemm v7), one row per config."""
    bm, bn, bk, stages, warps = (torch.tensor([float(getattr(c, f)) for c in configs], dtype=torch.float64)
                                 for f in ("block_m", "block_n", "block_k", "num_stages", "num_warps"))  # fmt: skip
    columns = [
        bk >= problem.k, bn >= problem.n, bm >= problem.m,
        problem.m % bm == 0, problem.n % bn == 0, problem.k % bk == 0, (warps < 4) | (bm < 64),
        torch.log2(torch.ceil(problem.k / bk)) * torch.log2(stages), torch.log2(bm) * torch.log2(bn),
        torch.log2(warps) * torch.log2(bm * bn), torch.log2(bm) * math.log2(problem.batch),
        torch.log2(bn) * math.log2(problem.n), torch.log2(bm) * math.log2(problem.m),
        torch.log2(bk) * math.log2(problem.k),
    ]  # fmt: skip
    return torch.stack([c.double() for c in columns], 1)


def cmd_explain(args, dataset, model) -> None:
    parts = {}
    for part in ("train", "eleven"):
        rows = list(_fast_triton_errors(dataset, model, part))
        extra = [_candidate_columns(record.problem, configs) for _, _, record, configs in rows]
        parts[part] = (torch.cat([e for e, *_ in rows]), torch.cat([f for _, f, *_ in rows]),
                       torch.cat([x - x.mean(0) for x in extra]))  # fmt: skip
    for name, pick in (("v7 columns", lambda f, x: f), ("v7 + candidate columns", lambda f, x: torch.cat([f, x], 1)),
                       ("candidate columns only", lambda f, x: x)):  # fmt: skip
        fit_error, fit_columns = parts["train"][0], pick(*parts["train"][1:])
        scale = fit_columns.std(0).clamp(min=1e-6)
        gram = fit_columns.T @ fit_columns / scale.outer(scale) + 10.0 * torch.eye(fit_columns.shape[1], dtype=torch.float64)
        beta = torch.linalg.solve(gram, (fit_columns / scale).T @ fit_error)

        def r2(part):
            error, columns = parts[part][0], pick(*parts[part][1:]) / scale
            return 1 - float((error - columns @ beta).pow(2).sum() / error.pow(2).sum())

        print(f"ridge on {name:24s}: R^2 in-sample {r2('train'):.3f}, on the eleven {r2('eleven'):.3f}")


def cmd_occupancy(args, dataset, model) -> None:
    for part in ("train", "eleven"):
        pairs = collections.defaultdict(list)
        for error, _, record, configs in _fast_triton_errors(dataset, model, part):
            for name, column in zip(("log2 CTAs per SM", "wave efficiency at occupancy", "log2 waves at occupancy"),
                                    _occupancy(record.problem, ConfigTable.of(configs).tiles, model.hardware_of(record))):  # fmt: skip
                pairs[name].append((error, column - column.mean()))
        for name, values in pairs.items():
            error, column = torch.cat([e for e, _ in values]), torch.cat([c for _, c in values])
            r = float((error * column).sum() / (error.norm() * column.norm() + 1e-12))
            print(f"{part:6s} {name:30s} r = {r:+.3f} over {len(error)} rows")


def _occupancy(problem, tiles, hardware):
    """CTAs an SM holds at once (the analytical scorer's rule), and the waves they give."""
    bm, bn, bk = (tiles[:, i].clamp(min=1) for i in range(3))
    stages, warps = tiles[:, 3].clamp(min=1), tiles[:, 4].clamp(min=1)
    smem = stages * (bm * bk + bk * bn) * (4 if problem.dtype == "float32" else 2)
    accumulators = bm * bn / (32 * warps)
    if analytical._runs_on_fma(problem):
        registers, _ = analytical._fma_registers_and_efficiency(bm, bn, bk, warps, accumulators)
    else:
        registers, _ = analytical._tensor_core_registers_and_pressure(problem, bm, bn, bk, warps, accumulators, hardware)
    ctas = torch.minimum(
        torch.floor(analytical._MAX_WARPS_PER_SM / warps),
        torch.minimum(torch.floor(analytical._SMEM_PER_SM / smem.clamp(min=1)).clamp(min=1),
                      torch.floor(analytical._REGS_PER_SM / (registers.clamp(max=255) * 32 * warps)).clamp(min=1)),
    ).clamp(min=1)  # fmt: skip
    tiles_total = torch.ceil(problem.m / bm) * torch.ceil(problem.n / bn) * problem.batch
    slots = (hardware.sm_count or 132) * ctas
    waves = torch.ceil(tiles_total / slots)
    return torch.log2(ctas).double(), (tiles_total / (waves * slots)).double(), torch.log2(waves).double()


def cmd_loss(args, dataset, model) -> None:
    scale = float(load_checkpoint(args.model).model.target_std)
    generator = torch.Generator().manual_seed(0)
    sums = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for part, record in problems(model, dataset):
        truth = torch.tensor(record.times_us, dtype=torch.float64).log()
        order = torch.argsort(truth)
        truth, mean = truth[order], model.members(record).mean(0)[order]
        drawn = (torch.rand(64, generator=generator, dtype=torch.float64) ** 2 * len(truth)).long().clamp(max=len(truth) - 1)
        target, predicted = truth[drawn], mean[drawn]
        error = predicted - target
        wanted = torch.softmax(-target / 0.05, 0)
        listwise = -(wanted * torch.log_softmax(-predicted / 0.05, 0)).sum() + (wanted * wanted.clamp(min=1e-30).log()).sum()
        entry = sums[(part, workload_class(record.problem))]
        entry[0] += float(error.mean() ** 2) / scale**2
        entry[1] += float((error - error.mean()).pow(2).mean()) / scale**2
        entry[2] += float(listwise)
        entry[3] += 1
    for (part, cls), (offset, within, listwise, count) in sorted(sums.items()):
        print(f"{part:6s} {cls:15s} n={count:5d}: MSE offset {offset / count:.4f}, "
              f"MSE within problem {within / count:.4f}, listwise {listwise / count:.4f}")


COMMANDS = {"picks": cmd_picks, "fit": cmd_fit, "members": cmd_members, "noise": cmd_noise,
            "explain": cmd_explain, "occupancy": cmd_occupancy, "loss": cmd_loss}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument("--model", default="trained_models/nvidia-h100-gemm/model.pt", help="checkpoint to diagnose")
    parser.add_argument("--data", default=DATA)
    args = parser.parse_args(argv)
    dataset = load_dataset(args.data)
    COMMANDS[args.command](args, dataset, Model(args.model, inference_hardware(dataset.hardware)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
