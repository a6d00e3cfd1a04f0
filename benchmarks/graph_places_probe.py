"""Why the CUDA-graph timer still gives each place of a round its own time (GPU).

    OUT=DIR python benchmarks/graph_places_probe.py     # DIR/graph_places.json

With the settle fill, the event timer times copies of one function alike wherever they run,
but the graph timer (the collector's default) still puts places of one captured round up to
1.19x apart on a 5 us GEMM (``h100_timer_parity_2026-11-25/``). One guess: each place
allocates its output from the graph's own memory pool, so each place writes to its own
address. Here four launches of one eager GEMM are timed by the graph timer, in fixed order,
three ways: each place allocating its output (as a compiled function does), all places writing
into one preallocated output (``out=``), and each place into its own preallocated output. Per
way: each place's median per round and the largest place over the smallest. If one shared
output removes the spread and own outputs keep it, the address is the cause."""
import json, os, statistics, sys
sys.path.insert(0, "benchmarks")
import torch
import e2e_validation as e
from diode_backend.timing import GraphTimer, TimingMethod

out = os.environ["OUT"]
PLACES = 4
method = TimingMethod(**e.TIMING)
timer = GraphTimer(method)
side = torch.cuda.Stream()  # graphs cannot be captured on the default stream
gemms = {
    "mm 64x1x2048 bf16": (torch.mm, (64, 2048), (2048, 1)),
    "bmm 12x20x64x20 bf16": (torch.bmm, (12, 20, 64), (12, 64, 20)),
    "mm 200x3072x768 bf16": (torch.mm, (200, 768), (768, 3072)),
}
report = {"method": vars(method), "places": PLACES, "rows": []}
for gemm, (op, a_shape, b_shape) in gemms.items():
    a = torch.randn(a_shape, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(b_shape, dtype=torch.bfloat16, device="cuda")
    shared = op(a, b)
    own = [torch.empty_like(shared) for _ in range(PLACES)]
    ways = {
        "allocating": [lambda: op(a, b)] * PLACES,
        "one_output": [lambda: op(a, b, out=shared)] * PLACES,
        "own_outputs": [lambda o=o: op(a, b, out=o) for o in own],
    }
    row = {"gemm": gemm}
    for way, launches in ways.items():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            timings = e.time_rounds(launches, timer)
        torch.cuda.current_stream().wait_stream(side)
        figures = [t["runtime_us"] for t in timings]
        row[way] = {"round_medians_us": [t["rounds_us"] for t in timings], "max_over_min": max(figures) / min(figures)}
    report["rows"].append(row)
    print(gemm, {way: (round(row[way]["max_over_min"], 3), [round(statistics.median(m), 2) for m in row[way]["round_medians_us"]]) for way in ways},
          "graph problems timed by events:", timer.fallbacks, flush=True)
json.dump(report, open(f"{out}/graph_places.json", "w"), indent=1)
