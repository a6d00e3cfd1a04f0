"""Whether a lead before the first place removes the graph timer's per-place spread (GPU).

    OUT=DIR python benchmarks/graph_places_probe.py     # DIR/graph_places.json

With the settle fill, the event timer times copies of one function alike wherever they run,
but the graph timer (the collector's default) times the first place of a captured round 0.35 to
0.45 us slower than the others, whatever output buffer each place writes
(``h100_graph_places_2026-11-25/``). The event timer runs a sleep kernel before every timed run;
the graph timer none. Here four launches of one eager GEMM are timed by the graph timer, in
fixed order, three ways: as they are; after an untimed run of the same GEMM (a lead place,
its times dropped); after an untimed sleep kernel. Per way: each place's median per round and
the largest place over the smallest. If a lead evens the places, the graph timer needs one."""
import json, os, statistics, sys
sys.path.insert(0, "benchmarks")
import torch
import e2e_validation as e
from diode_backend.timing import GraphTimer, TimingMethod

out = os.environ["OUT"]
PLACES = 4
SLEEP_CYCLES = 20_000  # about 10 us at the H100's clock
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
    run = lambda: op(a, b)
    ways = {  # the launches, and how many leading places are a lead whose times are dropped
        "no_lead": ([run] * PLACES, 0),
        "lead_run": ([run] * (PLACES + 1), 1),
        "lead_sleep": ([lambda: torch.cuda._sleep(SLEEP_CYCLES)] + [run] * PLACES, 1),
    }
    with torch.cuda.stream(side):
        run()  # cuBLAS sets up its handle and workspace on a first call, which a capture cannot hold
    row = {"gemm": gemm}
    for way, (launches, leads) in ways.items():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            timings = e.time_rounds(launches, timer)[leads:]
        torch.cuda.current_stream().wait_stream(side)
        figures = [t["runtime_us"] for t in timings]
        row[way] = {"round_medians_us": [t["rounds_us"] for t in timings], "max_over_min": max(figures) / min(figures)}
    report["rows"].append(row)
    print(gemm, {way: (round(row[way]["max_over_min"], 3), [round(statistics.median(m), 2) for m in row[way]["round_medians_us"]]) for way in ways},
          "graph problems timed by events:", timer.fallbacks, flush=True)
json.dump(report, open(f"{out}/graph_places.json", "w"), indent=1)
