#!/bin/bash
# The sweep's two timers on the same problems, one GPU call (results in benchmarks/results/):
#   benchmarks/timer_comparison.sh
# 24 LLM prefill and 24 decode problems of trained_models/data/h100/problems/bf16-train.json on
# sample/4, timed three times into $OUT: launch by launch (the Triton cache cold, so compiles
# run alongside), from CUDA graphs, then launch by launch again. benchmarks/h100_replicate.py
# compares the runs with each other and with the shipped dataset.
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
for run in stream-cold:stream graph:graph stream:stream; do
  name=${run%%:*}; timer=${run##*:}
  python3 -m diode_backend collect sweep "$list" --space sample/4 --timer "$timer" -o "/tmp/ab-$name" \
    --retime-every 0 --report "$OUT/ab-$name.json" > "$OUT/ab-$name.log" 2>&1
  echo "$name rc=$? at ${SECONDS}s"
done
tar czf "$OUT/ab.tgz" -C /tmp ab-stream-cold ab-graph ab-stream
shipped=trained_models/data/h100/dataset
for pair in "/tmp/ab-stream /tmp/ab-graph" "/tmp/ab-stream /tmp/ab-stream-cold" "$shipped /tmp/ab-graph" "$shipped /tmp/ab-stream"; do
  set -- $pair
  python3 benchmarks/h100_replicate.py "$1" "$2" > "$OUT/replicate-$(basename $1)-vs-$(basename $2).json"
done
python3 - <<'PY'
import json, os
for name in ("stream-cold", "graph", "stream"):
    r = json.load(open(os.path.join(os.environ["OUT"], f"ab-{name}.json")))
    print(name, {k: r.get(k) for k in ("problems", "pairs", "timing_seconds", "load_seconds", "wait_seconds", "pairs_per_timing_second", "graph_fallbacks", "host_us")})
PY
