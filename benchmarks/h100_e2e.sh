#!/bin/bash
# One GPU call of the end-to-end run on the held-out families (benchmarks/results/h100_model.md):
#   [MODES=a,b,...] benchmarks/h100_e2e.sh SECONDS
# 1. benchmarks/e2e_validation.py, every mode (or MODES) side by side, continuing $RESUME/e2e.json
#    when it exists (carry the folder to the GPU machine), until SECONDS less the time of step 2;
# 2. the same script with --warm-from: the problems this call added compiled again in a new
#    process with this call's DIODE prediction cache and Triton kernel cache (Inductor's caches
#    off), continuing $RESUME/e2e_warm.json. Earlier calls' caches are gone with their machine,
#    so only this call's rows (e2e_call.json) can be compiled warm.
# Under $OUT: e2e.json, e2e_warm.json (copy them to $RESUME for the next call) and their logs.
set -u
budget=$1
RESUME=${RESUME:-.e2e}
MODES=${MODES:-no_autotune,diode_pick,diode_fast,max_autotune_default,no_autotune_again,best_known}
export PYTHONUNBUFFERED=1 DIODE_CACHE_DIR=/tmp/e2e-diode-$$ TRITON_CACHE_DIR=/tmp/e2e-triton-$$
e2e=benchmarks/e2e_validation.py
data=trained_models/data/h100/dataset
for name in e2e e2e_warm; do [ -f "$RESUME/$name.json" ] && cp "$RESUME/$name.json" "$OUT/$name.json"; done
python3 $e2e $data --families held-out --modes $MODES \
  --resume --budget-s $((budget - 170)) --out "$OUT/e2e.json" > "$OUT/e2e.log" 2>&1
echo "cold rc=$? at ${SECONDS}s"
python3 - "$RESUME/e2e.json" "$OUT/e2e.json" "$OUT/e2e_call.json" <<'PY'
import json, pathlib, sys
earlier, now, call = (pathlib.Path(p) for p in sys.argv[1:])
done = {row["describe"] for row in json.loads(earlier.read_text())["rows"]} if earlier.is_file() else set()
result = json.loads(now.read_text())
result["rows"] = [row for row in result["rows"] if row["describe"] not in done]
call.write_text(json.dumps(result))
print(f"{len(result['rows'])} rows added by this call")
PY
python3 $e2e $data --warm-from "$OUT/e2e_call.json" --resume --budget-s $((budget - SECONDS - 30)) \
  --out "$OUT/e2e_warm.json" > "$OUT/e2e_warm.log" 2>&1
echo "warm rc=$? at ${SECONDS}s"
