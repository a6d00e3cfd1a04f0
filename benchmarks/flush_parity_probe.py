"""Why two launches of one kernel, timed side by side, come out up to 12% apart (GPU).

    OUT=DIR python benchmarks/flush_parity_probe.py     # DIR/flush_parity.json

``timer_resolution_probe.py`` found that a launch's time follows the parity of its place in the
round: the runs at even places and those at odd places differ by 0.3 to 0.65 us on kernels of
5 to 10 us, under both timers, whichever compiled function runs there. Both timers flush L2
(zero a buffer of L2 size) before every run. Here one eager GEMM is timed as two and as three
launches of the same function, with the timers' flush followed by their settle fill (the fix),
with a bare flush (as before it), without a flush, and with two flushes per run. Per variant and launch count:
each launch's median per round and the largest over the smallest (1.0: no parity effect)."""
import json, os, statistics, sys
sys.path.insert(0, "benchmarks")
import torch
import e2e_validation as e
from diode_backend.timing import GraphTimer, Timer, TimingMethod

out = os.environ["OUT"]
method = TimingMethod(**e.TIMING)


class DoubleFlush:
    """A stand-in for the timers' flush buffer whose ``zero_`` flushes twice."""

    def __init__(self, buffer: torch.Tensor):
        self.buffer = buffer

    def zero_(self):
        self.buffer.zero_()
        self.buffer.zero_()


#: per variant, the method's changes: the timers' own (the settle fill), a bare flush, none, two
VARIANTS = {"settle": {}, "bare_flush": {"settle_fill": False}, "no_flush": {"flush_l2": False}, "double_flush": {"settle_fill": False}}


def timers(variant: str):
    """The event timer and the graph timer with the flush that ``variant`` names."""
    made = {}
    for name, cls in (("event", Timer), ("graph", GraphTimer)):
        timer = cls(TimingMethod(**dict(e.TIMING, **VARIANTS[variant])))
        event_timer = timer if cls is Timer else timer.fallback  # the graph timer flushes with its fallback's buffer
        if variant == "double_flush":
            event_timer._flush = DoubleFlush(event_timer._flush)
        made[name] = timer
    return made


gemms = {
    "mm 64x1x2048 bf16": (torch.randn(64, 2048, dtype=torch.bfloat16, device="cuda"), torch.randn(2048, 1, dtype=torch.bfloat16, device="cuda")),
    "bmm 12x20x64x20 bf16": (torch.randn(12, 20, 64, dtype=torch.bfloat16, device="cuda"), torch.randn(12, 64, 20, dtype=torch.bfloat16, device="cuda")),
    "mm 200x3072x768 bf16": (torch.randn(200, 768, dtype=torch.bfloat16, device="cuda"), torch.randn(768, 3072, dtype=torch.bfloat16, device="cuda")),
}
side = torch.cuda.Stream()
report = {"method": vars(method), "rows": []}
for variant in VARIANTS:
    made = timers(variant)
    for gemm, (a, b) in gemms.items():
        op = torch.bmm if a.dim() == 3 else torch.mm
        for count in (2, 3):
            launches = [lambda: op(a, b)] * count
            row = {"variant": variant, "gemm": gemm, "launches": count}
            for name, timer in made.items():
                stream = side if name == "graph" else torch.cuda.current_stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    timings = e.time_rounds(launches, timer)
                torch.cuda.current_stream().wait_stream(stream)
                figures = [t["runtime_us"] for t in timings]
                row[name] = {"round_medians_us": [t["rounds_us"] for t in timings], "max_over_min": max(figures) / min(figures)}
            report["rows"].append(row)
            print(variant, gemm, count, {n: [round(statistics.median(m), 2) for m in row[n]["round_medians_us"]] for n in made}, flush=True)
json.dump(report, open(f"{out}/flush_parity.json", "w"), indent=1)
