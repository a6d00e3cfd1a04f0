"""``diode predict``: rank the candidates of one GEMM and print the top-k with predicted times,
estimated compile seconds and what ``fast_autotune`` does with it."""

from __future__ import annotations

import argparse
import json
import math

from ...problem import BIASES, SUPPORTED_DTYPES, SUPPORTED_OPS, GemmProblem

_BATCHED = ("bmm", "baddbmm")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "predict",
        help="rank the candidate kernels of one GEMM and print the top-k with predicted times",
        description="Rank the candidates Inductor would offer for one GEMM (ATen plus Inductor's "
        "Triton configs, fitted to the shape and to the hardware's shared memory as Inductor "
        "fits them) with the model DIODE would pick, and print the fastest k with predicted "
        "times in microseconds, the model's "
        "confidence that the top pick is within 5% of the fastest, each candidate's estimated "
        "compile seconds and what fast_autotune does with the GEMM at the default options "
        "(compile #1 alone or measure a few). Works without a GPU: name "
        "the hardware with --hardware (`diode predict --hardware list` lists the names).",
        epilog="example: diode predict mm 1024x4096x2048 --dtype bfloat16 --layout row/col --hardware h100",
    )
    parser.add_argument("op", nargs="?", choices=SUPPORTED_OPS, help="the GEMM op")
    parser.add_argument("shape", nargs="?", help="MxNxK (A is MxK, B is KxN); BxMxNxK for bmm and baddbmm")
    parser.add_argument("--dtype", default="float16", choices=SUPPORTED_DTYPES, help="input dtype (default float16)")
    parser.add_argument(
        "--layout",
        default="row/row",
        metavar="A/B",
        help="which dimension of A and of B is contiguous: row (the last) or col (transposed, "
        "like nn.Linear's weight as B), e.g. row/col (default row/row)",
    )
    parser.add_argument(
        "--bias",
        default=None,
        choices=BIASES,
        help="addmm/baddbmm addend: row (one value per output column, nn.Linear's bias) or full "
        "(default: row for addmm and baddbmm, none otherwise)",
    )
    parser.add_argument("--tf32", action="store_true", help="float32 inputs may use TF32 tensor cores")
    parser.add_argument(
        "--hardware",
        metavar="NAME",
        help="a known device name (h100, a100, ...; 'list' prints them) or a device such as "
        "cuda:0 (default: the detected device)",
    )
    parser.add_argument(
        "--model", default="", metavar="NAME|PATH", help="a model from `diode models` or a model path (default: picked by hardware)"
    )
    parser.add_argument(
        "--space",
        default="EXHAUSTIVE",
        choices=("DEFAULT", "EXHAUSTIVE"),
        help="Inductor's Triton config list to rank: its short DEFAULT list or the EXHAUSTIVE "
        "product (default, what DIODE alone ranks)",
    )
    parser.add_argument("--top-k", type=int, default=10, metavar="K", help="how many candidates to print (default 10)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ... import catalog, registry
    from ...compile_estimate import estimates
    from ...options import DiodeOptions
    from ...policy import rank_candidates, select_candidates
    from . import CommandError, UsageError, require_whole_number

    if args.hardware == "list":
        for name, hardware in sorted(registry.known_hardware().items()):
            print(f"{name:12} {hardware.name} ({hardware.sm_count} SMs, sm{''.join(map(str, hardware.compute_capability))})")
        return 0
    if args.op is None or args.shape is None:
        raise UsageError("give the op and the shape, e.g. `diode predict mm 1024x4096x2048`")
    require_whole_number("--top-k", args.top_k)
    problem = _problem(args)
    hardware = catalog.resolve_hardware(args.hardware)
    entry = catalog.pick_entry(hardware, args.model)
    if entry is None:
        raise CommandError(
            f"no model applies to {hardware.name}; name one with --model (`diode models` lists them)"
        )
    scorer = registry.load_scorer(entry)
    configs = registry.candidate_configs(problem, hardware, args.space)
    if configs is None:
        raise CommandError(f"no plugin offers candidates for {problem.describe()}")
    try:
        ranking = rank_candidates(scorer, problem, configs, hardware)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # a plugin's scorer, sys.exit() included: one line, not a traceback
        raise CommandError(
            f"model {entry.name!r} failed to rank the candidates ({type(err).__name__}: {err}); "
            "`diode models` shows where it comes from: fix or uninstall that plugin, or name another model with --model"
        ) from None
    if not ranking.order:
        ops, dtypes = getattr(scorer, "ops", ()), getattr(scorer, "dtypes", ())
        if (ops and problem.op not in ops) or (dtypes and problem.dtype not in dtypes):
            raise CommandError(
                f"model {entry.name} was not trained for {problem.op} in {problem.dtype} (it knows "
                f"{', '.join(ops)} in {', '.join(dtypes)}); name another with --model (`diode models` lists them)"
            )
        raise CommandError(f"model {entry.name} scores none of the {len(configs)} candidates of {problem.describe()}")
    best = ranking.times_us[ranking.order[0]]
    compile_s = estimates(problem, configs, hardware)
    options = DiodeOptions(fast_autotune=True)  # what torch.compile does with fast_autotune and the other defaults
    kept = select_candidates(ranking, options, [c.kind for c in configs], lambda: compile_s).keep
    role = {i: "alone" if len(kept) == 1 else "measure" for i in kept}
    top = [
        {"rank": rank, "candidate": configs[i].describe(), "config": configs[i].to_dict(),
         "time_us": ranking.times_us[i], "vs_best": ranking.times_us[i] / best if best else math.nan,
         "compile_s_estimate": compile_s[i], "fast_autotune": role.get(i)}
        for rank, i in enumerate(ranking.order[: args.top_k], start=1)
    ]  # fmt: skip
    if args.json:
        print(json.dumps({
            "problem": problem.to_dict(), "hardware": hardware.to_dict(), "model": entry.name,
            "model_identity": scorer.identity, "candidates": len(configs), "unscored": len(ranking.unscored),
            "confidence": ranking.confidence, "top": top,
            "fast_autotune": {"keeps_alone": len(kept) == 1, "kept": [configs[i].describe() for i in kept]},
        }, indent=2))  # fmt: skip
        return 0
    print(f"problem:    {problem.describe()}")
    print(f"hardware:   {hardware.name} ({hardware.sm_count} SMs)")
    print(f"model:      {entry.name}")
    unscored = f", {len(ranking.unscored)} not scored" if ranking.unscored else ""
    print(f"candidates: {len(configs)} ({args.space} Triton configs plus ATen{unscored})")
    if ranking.confidence is None:
        print("confidence: none (this model gives no calibrated confidence)")
    else:
        print(f"confidence: {ranking.confidence:.2f} (probability that #1 is within 5% of the fastest)")
    print(f"fast_autotune: {_what_fast_autotune_does(kept, ranking.confidence, options)}")
    print(f"{'rank':>4}  {'predicted us':>12}  {'vs #1':>6}  {'compile s':>9}  {'fast_autotune':<13}  candidate")
    for row in top:
        seconds = "-" if row["compile_s_estimate"] is None else f"{row['compile_s_estimate']:.2f}"
        print(
            f"{row['rank']:>4}  {row['time_us']:>12.2f}  {row['vs_best']:>5.2f}x  {seconds:>9}  "
            f"{row['fast_autotune'] or '-':<13}  {row['candidate']}"
        )
    return 0


def _what_fast_autotune_does(kept: tuple[int, ...], confidence: float | None, options) -> str:
    """One line: what ``torch.compile`` with ``fast_autotune`` and the other options at their
    defaults does with this GEMM."""
    threshold = options.diode_confidence_threshold
    if len(kept) == 1:
        return f"compiles #1 alone (confidence at or above diode_confidence_threshold {threshold})"
    why = "no confidence" if confidence is None else f"confidence under diode_confidence_threshold {threshold}"
    return (
        f"measures {len(kept)} candidates ({why}; Triton ones estimated to compile for more than "
        f"diode_max_compile_s {options.diode_max_compile_s:g} s left out), marked below where shown"
    )


def _problem(args: argparse.Namespace) -> GemmProblem:
    from . import UsageError

    try:
        sizes = [int(part) for part in args.shape.lower().split("x")]
    except ValueError:
        sizes = []
    batched = args.op in _BATCHED
    expected = 4 if batched else 3
    if len(sizes) != expected or min(sizes) < 1:
        form = "BxMxNxK" if batched else "MxNxK"
        raise UsageError(f"shape {args.shape!r}: expected {form} with positive whole numbers for {args.op}")
    batch, (m, n, k) = (sizes[0], sizes[1:]) if batched else (1, sizes)
    layouts = args.layout.lower().split("/")
    if len(layouts) != 2 or not set(layouts) <= {"row", "col"}:
        raise UsageError(f"--layout {args.layout!r}: expected A/B with each row or col, e.g. row/col")
    bias = args.bias or ("row" if args.op in ("addmm", "baddbmm") else "none")
    if bias != "none" and args.op not in ("addmm", "baddbmm"):
        raise UsageError(f"--bias {bias}: only addmm and baddbmm add a bias")
    if args.tf32 and args.dtype != "float32":
        raise UsageError("--tf32 applies to float32 inputs only")
    return GemmProblem(
        op=args.op, m=m, n=n, k=k, batch=batch, dtype=args.dtype,
        a_layout=layouts[0], b_layout=layouts[1], bias=bias, allow_tf32=args.tf32,
    )  # fmt: skip
