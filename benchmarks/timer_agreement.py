"""DIODE's measurement against Inductor's benchmarker, on the same choice objects, repeated.

    python benchmarks/timer_agreement.py --trials 6 --out results.json

Each trial compiles one large GEMM under max-autotune (ATen and Inductor's DEFAULT Triton list,
caches off). Inside Inductor's feedback call, with the timings Inductor just took, DIODE times the
same choices three times: at once, again at once, and after the host sleeps ``--pause-s`` (the GPU
idles, as it does between Inductor's benchmark and a later one). A time that moves between DIODE's
own repeats is DIODE's noise; one that stays put but differs from Inductor's is a difference of
method; one that moves only after the pause is the GPU's clock.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch._inductor import config
from torch._inductor.select_algorithm import add_feedback_saver, clear_feedback_savers

from diode_backend.inductor.measure import measure_choices

SHAPES = {
    "mm": (torch.mm, ((4096, 4096), (4096, 4096))),
    "bmm": (torch.bmm, ((8, 2048, 2048), (8, 2048, 2048))),
}


def trial(op: str, pause_s: float) -> list[dict]:
    fn, shapes = SHAPES[op]
    args = [torch.randn(*s, device="cuda", dtype=torch.float16) for s in shapes]
    rows: list[dict] = []

    def compare(timings, name, input_nodes, choices, *_):
        runs = [measure_choices(choices, input_nodes, choices[0].layout, None) for _ in range(2)]
        time.sleep(pause_s)
        runs.append(measure_choices(choices, input_nodes, choices[0].layout, None))
        for i, choice in enumerate(choices):
            rows.append({
                "choice": getattr(choice, "name", type(choice).__name__) + f"#{i}",
                "inductor_us": timings[choice] * 1000,
                "diode_us": [run.times_us[i] for run in runs],
            })  # fmt: skip

    torch._dynamo.reset()
    add_feedback_saver(compare)
    try:
        with config.patch(max_autotune=True, max_autotune_gemm_backends="ATEN,TRITON", force_disable_caches=True):
            torch.compile(fn)(*args)
    finally:
        clear_feedback_savers()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--ops", default="bmm,mm")
    parser.add_argument("--pause-s", type=float, default=1.0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    report = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "triton": __import__("triton").__version__, "date": time.strftime("%Y-%m-%d"),
        "pause_s": args.pause_s, "trials": [],
    }  # fmt: skip
    for t in range(args.trials):
        for op in args.ops.split(","):
            rows = trial(op, args.pause_s)
            report["trials"].append({"op": op, "trial": t, "choices": rows})
            best = min(r["inductor_us"] for r in rows)
            worst = max(
                (max(abs(d / r["inductor_us"] - 1) for d in r["diode_us"]), r["choice"])
                for r in rows if r["inductor_us"] < 1.5 * best
            )  # fmt: skip
            print(f"{op} trial {t}: contenders' largest gap {worst[0]:.1%} ({worst[1]})", flush=True)
            with open(args.out, "w") as f:
                json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
