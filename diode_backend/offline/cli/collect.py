"""``diode collect``: make problem lists, time them on the GPU, record Inductor's own timings,
and check that the sweep agrees with Inductor. See docs/collect.md.

One module because it is one command: the parser of its four subcommands and what each runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import runpy
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from ..collect.plan import SPACES
from ..families import parse_families
from ...problem import BIASES, SUPPORTED_DTYPES, SUPPORTED_OPS
from . import CommandError, UsageError, require_whole_number

GENERATORS = ("lognormal", "odd", "decode", "tall-skinny", "llm")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "collect",
        help="collect GEMM timings: problem lists, GPU sweep, Inductor feedback, fidelity",
        description="Collect the timings DIODE learns from. `shapes` writes a problem list, "
        "`sweep` times problem lists on the GPU into a dataset directory (resumable), `feedback` "
        "records what Inductor measures while a script compiles with max-autotune, `fidelity` "
        "compares the sweep with Inductor's own max-autotune timings.",
    )
    sub = parser.add_subparsers(dest="collect_command", metavar="MODE", required=True)

    shapes = sub.add_parser("shapes", help="write a JSON problem list from generators or a model")
    source = shapes.add_mutually_exclusive_group(required=True)
    source.add_argument("--generator", metavar="NAME[:COUNT]", help=f"one of {', '.join(GENERATORS)}")
    source.add_argument(
        "--model",
        metavar="FILE.py:FUNCTION",
        help="trace the GEMMs of FUNCTION() in FILE.py (it runs the model; meta tensors work)",
    )
    source.add_argument("--zoo", metavar="DIR", help="the real-model shape zoo in DIR (e.g. trained_models/data/zoo)")
    shapes.add_argument("--family", metavar="A,B", help="with --zoo: only these families")
    shapes.add_argument("--exclude-family", metavar="C,D", help="with --zoo: all families but these")
    shapes.add_argument("--op", default="mm", choices=SUPPORTED_OPS)
    shapes.add_argument(
        "--dtype",
        choices=SUPPORTED_DTYPES,
        help="input dtype (default: bfloat16 for --generator; with --model or --zoo every GEMM is "
        "recorded at this dtype instead of the one it ran in)",
    )
    shapes.add_argument("--tf32", action="store_true", help="allow TF32 (float32 only; with --model or --zoo, on every GEMM)")
    shapes.add_argument("--layout", default="row/row", choices=["row/row", "row/col", "col/row", "col/col"])
    shapes.add_argument("--bias", default="row", choices=BIASES, help="for addmm, baddbmm")
    shapes.add_argument("--batch", type=int, default=8, help="for bmm, baddbmm")
    shapes.add_argument("--seed", type=int, default=0)
    shapes.add_argument("-o", "--output", required=True, help="JSON file to write")
    shapes.set_defaults(run=run_shapes)

    zoo = sub.add_parser(
        "zoo",
        help="trace the real-model shape zoo (needs the zoo extra)",
        description="Build each zoo architecture from its configuration with no weights, record the "
        "GEMMs it runs, and write one shape set per family plus index.json (docs/collect.md).",
    )
    zoo.add_argument("-o", "--output", required=True, help="directory for <family>.json and index.json")
    zoo.add_argument("--family", action="append", default=[], metavar="NAME", help="trace only this family (repeatable)")
    zoo.set_defaults(run=run_zoo)

    sweep = sub.add_parser(
        "sweep",
        help="time problem lists on the GPU into a dataset directory",
        description="Time problem lists on one GPU; under torchrun, one rank per GPU on one host "
        "or many, each timing its share of the plan (docs/collect.md).",
    )
    sweep.add_argument("problems", nargs="*", help="JSON problem lists (from `diode collect shapes`)")
    sweep.add_argument("-o", "--output", required=True, help="dataset directory (created; resumed)")
    sweep.add_argument("--split", default="train", choices=["train", "validation"], help="split of PROBLEMS")
    sweep.add_argument(
        "--space",
        default="sample/4",
        choices=SPACES,
        help="for PROBLEMS: Inductor's whole EXHAUSTIVE space per shape, its stratified "
        "quarter, that quarter plus Inductor's DEFAULT configs, the DEFAULT configs alone, or the Triton configs "
        "each problem's entry lists ('configs') (ATen always)",
    )
    sweep.add_argument(
        "--validation",
        nargs="+",
        default=[],
        metavar="FILE",
        help="problem lists timed first, as validation problems (on --validation-space)",
    )
    sweep.add_argument("--validation-space", default="exhaustive", choices=SPACES, help="space of the --validation lists")
    sweep.add_argument("--max-seconds", type=float, help="stop taking problems after this long")
    sweep.add_argument("--retime-every", type=int, default=20, help="re-time every n-th problem (noise floor)")
    sweep.add_argument("--report", help="write the run's figures as JSON here")
    sweep.add_argument(
        "--compile-workers",
        type=int,
        metavar="N",
        help="Triton compile processes for this process's GPU (default: the host's CPUs shared "
        "among its ranks, less two per rank)",
    )
    sweep.add_argument(
        "--budget-us",
        type=float,
        help="GPU microseconds a candidate's timed runs aim for, 3 to 10 runs (default: the "
        "method of docs/collect.md)",
    )
    sweep.add_argument(
        "--slow-ratio",
        type=float,
        help="a candidate whose first run took over this times the problem's fastest is run once "
        "more instead (0: every candidate by the budget; default: the method of docs/collect.md)",
    )
    sweep.add_argument(
        "--timer",
        default="graph",
        choices=["graph", "stream"],
        help="replay each round of runs from a CUDA graph (default), or launch run by run behind a sleep kernel",
    )
    sweep.add_argument("--dry-run", action="store_true", help="print the plan (problems and pairs per split and space) and stop")
    sweep.add_argument(
        "--hardware",
        metavar="NAME",
        help="with --dry-run: plan for this known hardware (h100, ...; `diode predict --hardware "
        "list`) instead of the first GPU's, on a machine without one",
    )
    sweep.set_defaults(run=run_sweep)

    feedback = sub.add_parser("feedback", help="record Inductor's timings while a script runs")
    feedback.add_argument("-o", "--output", required=True, help="dataset directory")
    feedback.add_argument("--split", default="train", choices=["train", "validation"])
    feedback.add_argument("--device", default=None, help="the device the script compiles for (default: cuda if available)")
    feedback.add_argument(
        "--flush-every",
        type=int,
        default=4,
        metavar="N",
        help="write a shard every N GEMMs (and when the script ends or SIGTERM stops it): a killed "
        "collection loses at most the GEMMs since the last shard (default 4)",
    )
    feedback.add_argument("script", help="Python script to run (it calls torch.compile with max-autotune)")
    feedback.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    feedback.set_defaults(run=run_feedback)

    fidelity = sub.add_parser("fidelity", help="compare the sweep with Inductor's max-autotune")
    fidelity.add_argument("problems", nargs="+", help="JSON problem lists")
    fidelity.add_argument("--search-space", default="DEFAULT", choices=["DEFAULT", "EXHAUSTIVE"])
    fidelity.add_argument("-o", "--output", required=True, help="JSON report to write")
    fidelity.add_argument("--max-seconds", type=float, help="compile no further problem with Inductor after this long")
    fidelity.set_defaults(run=run_fidelity)


def run_shapes(args: argparse.Namespace) -> int:
    from ..collect import shapes

    if (args.family or args.exclude_family) and not args.zoo:
        raise UsageError("--family and --exclude-family select zoo families: use them with --zoo")
    if args.zoo:
        from ..collect import zoo

        present = zoo.families_in(args.zoo)
        if not present:
            raise UsageError(f"--zoo: no zoo in {args.zoo} (no {zoo.INDEX}; `diode collect zoo` writes one)")
        for option, names in (("--family", parse_families(args.family or "")), ("--exclude-family", parse_families(args.exclude_family or ""))):
            unknown = [name for name in names if name not in present]
            if unknown:
                raise UsageError(f"{option}: no zoo family {', '.join(unknown)} in {args.zoo}; it has {', '.join(present)}")
        named = zoo.load(args.zoo, parse_families(args.family or ""), parse_families(args.exclude_family or ""))
    elif args.model:
        file, _, function = args.model.rpartition(":")
        if not file or not function:
            raise UsageError("--model takes FILE.py:FUNCTION")
        run = runpy.run_path(file).get(function)
        if not callable(run):
            raise CommandError(f"--model: {file} defines no function {function!r}")
        named = shapes.from_model(Path(file).stem, run)
        if not named:
            raise CommandError(f"--model: {function}() in {file} ran no mm, addmm, bmm or baddbmm (does it run the model?)")
    else:
        name, _, count = args.generator.partition(":")
        if name not in GENERATORS:
            raise UsageError(f"unknown generator {name!r}; choose from {', '.join(GENERATORS)}")
        if name == "llm":
            sizes = shapes.llm()
        else:
            make = {"lognormal": shapes.lognormal, "odd": shapes.odd, "decode": shapes.decode, "tall-skinny": shapes.tall_skinny}[name]
            sizes = make(int(count or 100), seed=args.seed)
        a_layout, b_layout = args.layout.split("/")
        named = shapes.expand(
            name.replace("-", "_"), sizes, op=args.op, dtype=args.dtype or "bfloat16", a_layout=a_layout, b_layout=b_layout,
            bias=args.bias, allow_tf32=args.tf32, batch=args.batch,
        )  # fmt: skip
    if (args.model or args.zoo) and (args.dtype or args.tf32):
        named = shapes.retyped(named, args.dtype, args.tf32)
    shapes.to_json(named, args.output, Path(args.output).stem)
    print(f"{len(named)} problems -> {args.output}")
    return 0


def run_zoo(args: argparse.Namespace) -> int:
    from ..collect import zoo

    known = zoo.family_names()
    families = [name for item in args.family for name in parse_families(item)] or known
    unknown = [name for name in families if name not in known]
    if unknown:
        raise UsageError(f"--family: no zoo family {', '.join(unknown)}; choose from {', '.join(known)}")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    try:
        for family in families:
            entries = zoo.trace_family(family)
            zoo.write_family(entries, out, family)
            models = ", ".join(dict.fromkeys(e["model"] for e in entries))
            print(f"{family}: {len(entries)} problems ({models})", file=sys.stderr)
    except zoo.ZooUnavailable as err:
        raise CommandError(str(err)) from err
    index = zoo.write_index(out)
    print(f"{sum(f['problems'] for f in index.values())} problems, {len(index)} families in {out / zoo.INDEX}")
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    from ... import catalog
    from ..collect import plan, shapes
    from ..collect.environment import environment, hardware_of
    from ..collect.ranks import Rank
    from ..collect.sweep import run_sweep as sweep
    from ..dataset import DatasetMeta

    import torch

    from ...timing import TimingMethod

    if not args.problems and not args.validation:
        raise UsageError("name problem lists to time")
    require_whole_number("--compile-workers", args.compile_workers)
    try:
        rank = Rank.from_environment()
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.hardware:
        if not args.dry_run:
            raise UsageError("--hardware plans for named hardware: use it with --dry-run (a sweep times the GPUs it runs on)")
        hardware = catalog.resolve_hardware(args.hardware)
    elif not torch.cuda.is_available():
        raise CommandError("the sweep needs a CUDA GPU (`--dry-run --hardware NAME` shows its plan without one)")
    elif rank.local_rank >= torch.cuda.device_count():
        raise CommandError(f"LOCAL_RANK {rank.local_rank}, but this host shows {torch.cuda.device_count()} GPU(s): one rank per GPU")
    else:
        hardware = hardware_of(f"cuda:{rank.local_rank}")
    validation = [item for path in args.validation for item in shapes.from_json(path)]
    named = [item for path in args.problems for item in shapes.from_json(path)]
    listed = {p: c for path in [*args.validation, *args.problems] for p, c in shapes.listed_configs(path).items()}
    try:
        planned = plan.plan(validation, hardware, split="validation", space=args.validation_space, listed=listed)
        held = {p.problem for p in planned}  # a problem is never in both splits
        planned += plan.plan([(g, p) for g, p in named if p not in held], hardware, split=args.split, space=args.space, listed=listed)
    except ValueError as err:
        raise UsageError(str(err)) from None
    pairs = sum(len(p.configs) for p in planned)
    if args.dry_run:
        print(f"plan for {hardware.name}: {len(planned)} problems, {pairs:,} pairs")
        for split, space in dict.fromkeys((p.split, p.space) for p in planned):
            part = [p for p in planned if (p.split, p.space) == (split, space)]
            print(f"  {split} on {space}: {len(part)} problems, {sum(len(p.configs) for p in part):,} pairs")
        return 0
    if rank.world_size > 1:
        share = rank.share(planned)
        print(f"{rank.describe()}: {len(share)} of {len(planned)} problems, {sum(len(p.configs) for p in share):,} pairs on {hardware.name}", file=sys.stderr)
    else:
        print(f"{len(planned)} problems, {pairs:,} pairs on {hardware.name}", file=sys.stderr)
        if torch.cuda.device_count() > 1:
            print(f"one GPU of {torch.cuda.device_count()}: run under torchrun --nproc-per-node {torch.cuda.device_count()} for all (docs/collect.md)", file=sys.stderr)
    given = {name: getattr(args, name) for name in ("budget_us", "slow_ratio") if getattr(args, name) is not None}
    method = TimingMethod(replay=args.timer, **given)
    place = {"rank": rank.rank, "world_size": rank.world_size, "restart": rank.restart}
    meta = DatasetMeta(hardware, environment(rank.local_rank, timing=method.describe(), **place))
    device = f"cuda:{rank.local_rank}"
    report = sweep(
        planned, args.output, meta, device=device, rank=rank, method=method, compile_workers=args.compile_workers,
        max_seconds=args.max_seconds, retime_every=args.retime_every,
    )  # fmt: skip
    summary = {"environment": meta.environment, "hardware": hardware.to_dict(), **report.summary()}
    if args.report:
        rank.report_path(args.report).write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(report.summary(), indent=1))
    return 0


def run_feedback(args: argparse.Namespace) -> int:
    import torch

    from ... import catalog
    from ..collect.environment import environment, hardware_of
    from ..collect.feedback import record_inductor_timings
    from ..dataset import DatasetMeta, ShardWriter

    require_whole_number("--flush-every", args.flush_every)
    default = catalog.default_device()
    device = args.device or (f"{default}:0" if default == "cuda" else default)  # the shard names the GPU
    hardware = hardware_of(device)
    meta = DatasetMeta(hardware, environment(torch.device(device).index, script=args.script))
    saved_argv = sys.argv
    sys.argv = [args.script, *args.args]
    try:
        # the writer's exit writes what is pending, however the script ends (SIGTERM included)
        with ShardWriter(args.output, meta, tag="feedback", every=args.flush_every) as writer, _sigterm_unwinds():
            with record_inductor_timings(split=args.split, sink=writer.add) as record:
                runpy.run_path(args.script, run_name="__main__")
    finally:
        sys.argv = saved_argv
    print(f"{len(record.problems)} GEMMs recorded -> {args.output}; {len(record.skipped)} not described", file=sys.stderr)
    for name, why in record.skipped:
        print(f"  skipped {name}: {why}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """Inside the block SIGTERM raises ``SystemExit(143)`` (128 + the signal, a shell's status
    for it), so that ``finally`` blocks and ``with`` exits run before the process ends."""

    def terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_fidelity(args: argparse.Namespace) -> int:
    from ..collect import shapes
    from ..collect.environment import environment, hardware_of
    from ..collect.fidelity import run_fidelity as fidelity
    from ..dataset import DatasetMeta

    import torch

    if not torch.cuda.is_available():
        raise CommandError("the fidelity check needs a CUDA GPU: it compiles and times each problem on one")
    problems = [problem for path in args.problems for _, problem in shapes.from_json(path)]
    meta = DatasetMeta(hardware_of("cuda:0"), environment(0))
    report = fidelity(problems, meta, search_space=args.search_space, max_seconds=args.max_seconds)
    report["environment"] = meta.environment
    Path(args.output).write_text(json.dumps(report, indent=1) + "\n")
    for name, title in (("kernels", "vs Inductor's kernels (same timer)"), ("inductor", "vs Inductor's benchmark")):
        t = report[name]
        print(
            f"{report['problems']} problems {title}: median Spearman {t['median_spearman']} (Triton alone "
            f"{t['triton_median_spearman']}), winner within 3% on {t['winner_within_3pct']} "
            f"(Triton alone {t['triton_winner_within_3pct']})"
        )
    return 0
