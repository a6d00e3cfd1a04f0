#!/bin/bash
# The sweep's timing throughput, code against code and cache against cache, in one GPU call:
#   OUT=DIR bash benchmarks/sweep_throughput_probe.sh LIST EVERY PASS...
# Each PASS, NAME:CODE:CACHE[:ARGS], times every EVERY-th problem of LIST (a problem list on the listed
# space) into a fresh dataset directory, with the diode_backend package of CODE ("." for this
# tree, or a directory that holds another version's, as
# `mkdir -p DIR && git archive REV diode_backend | tar x -C DIR` makes) and Triton's cache in
# /tmp/triton-CACHE: a pass on a cache no earlier pass used compiles its kernels beside the
# timing (as a label round does), a later one only loads them. ARGS, comma-separated, go to
# `diode collect sweep` (`--compile-workers=16`). Passes run in the order given.
# Everything comes back as $OUT/probe.tgz: NAME.json (the report), NAME.log and NAME/ (the
# dataset) for each pass, and steps.log; benchmarks/sweep_time_split.py splits each pass.
set -u
list=$1; every=$2; shift 2
export PYTHONUNBUFFERED=1
work=$(mktemp -d)
python3 - "$list" "$every" "$work/list.json" <<'PY'
import json, sys
from diode_backend.files import read_json
source, every, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = read_json(source)
data["problems"] = data["problems"][::every]
with open(target, "w") as f:
    json.dump(data, f)
PY
for pass in "$@"; do
  IFS=: read -r name code cache extra <<< "$pass"
  IFS=, read -r -a extra <<< "${extra:-}"
  SECONDS=0
  # from CODE's directory, which `python3 -m` puts first on the path, before any installed copy
  (cd "$code" && TRITON_CACHE_DIR=/tmp/triton-$cache python3 -m diode_backend collect sweep "$work/list.json" \
    --space listed --split train -o "$work/$name" --retime-every 20 --report "$work/$name.json" "${extra[@]}" > "$work/$name.log" 2>&1)
  rc=$?
  where=$(cd "$code" && python3 -c "import diode_backend; print(diode_backend.__file__)")
  echo "$name ($where, cache $cache${extra[*]:+, ${extra[*]}}) rc=$rc ${SECONDS}s" | tee -a "$work/steps.log"
  tar czf "$OUT/probe.tgz" -C "$work" .  # after every pass: what ran comes back if the call is cut short
done
