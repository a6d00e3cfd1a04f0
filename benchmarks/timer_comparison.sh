#!/bin/bash
# The sweep's timers and repetition budgets on the same problems, one GPU call (results in
# benchmarks/results/):
#   benchmarks/timer_comparison.sh [NAME:TIMER:BUDGET_US ...]
# 24 LLM prefill and 24 decode problems of trained_models/data/h100/problems/bf16-train.json on
# sample/4, timed once per run into $OUT, every fourth problem twice (the noise floor). The default runs:
# launch by launch (the Triton cache cold, so compiles run alongside), from CUDA graphs, then
# launch by launch again. benchmarks/h100_replicate.py compares the runs with each other and with
# the shipped dataset.
set -u
export PYTHONUNBUFFERED=1
list=/tmp/timer-ab.json
python3 - "$list" <<'PY'
import json, sys
data = json.load(open("trained_models/data/h100/problems/bf16-train.json"))
llm = [p for p in data["problems"] if p["generator"] == "llm"][:24]
decode = [p for p in data["problems"] if p["generator"] == "decode"][:24]
json.dump({"name": "timer-ab", "problems": llm + decode}, open(sys.argv[1], "w"))
PY
runs=("$@"); [ ${#runs[@]} -gt 0 ] || runs=(stream-cold:stream:1500 graph:graph:1500 stream:stream:1500)
names=()
for run in "${runs[@]}"; do
  IFS=: read -r name timer budget <<< "$run"; names+=("ab-$name")
  python3 -m diode_backend collect sweep "$list" --space sample/4 --timer "$timer" --budget-us "$budget" -o "/tmp/ab-$name" \
    --retime-every 4 --report "$OUT/ab-$name.json" > "$OUT/ab-$name.log" 2>&1
  echo "$name rc=$? at ${SECONDS}s"
done
tar czf "$OUT/ab.tgz" -C /tmp "${names[@]}"
shipped=trained_models/data/h100/dataset
for name in "${names[@]}"; do
  python3 benchmarks/h100_replicate.py "$shipped" "/tmp/$name" > "$OUT/replicate-dataset-vs-$name.json"
done
python3 - "${names[@]}" <<'PY'
import json, os, sys
for name in sys.argv[1:]:
    r = json.load(open(os.path.join(os.environ["OUT"], f"{name}.json")))
    print(name, {k: r.get(k) for k in ("problems", "pairs", "timing_seconds", "load_seconds", "wait_seconds", "pairs_per_timing_second", "noise_median_rel", "noise_p90_rel", "graph_fallbacks")})
PY
