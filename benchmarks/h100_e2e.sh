#!/bin/bash
# One GPU call of the end-to-end run on the held-out families (benchmarks/results/h100_model.md):
#   benchmarks/h100_e2e.sh SECONDS
# 1. benchmarks/e2e_validation.py, every mode side by side, continuing $RESUME/e2e.json when it
#    exists (carry the folder to the GPU machine), until SECONDS less the time of step 2;
# 2. the same script with --warm-from: this call's problems compiled again in a new process
#    with this call's DIODE prediction cache and Triton kernel cache (Inductor's caches off),
#    continuing $RESUME/e2e_warm.json.
# Under $OUT: e2e.json, e2e_warm.json (copy them to $RESUME for the next call) and their logs.
set -u
budget=$1
RESUME=${RESUME:-.e2e}
export PYTHONUNBUFFERED=1 DIODE_CACHE_DIR=/tmp/e2e-diode-$$ TRITON_CACHE_DIR=/tmp/e2e-triton-$$
e2e=benchmarks/e2e_validation.py
data=trained_models/data/h100/dataset
for name in e2e e2e_warm; do [ -f "$RESUME/$name.json" ] && cp "$RESUME/$name.json" "$OUT/$name.json"; done
python3 $e2e $data --families held-out --modes no_autotune,diode_pick,diode_fast,max_autotune_default,no_autotune_again,best_known \
  --resume --budget-s $((budget - 170)) --out "$OUT/e2e.json" > "$OUT/e2e.log" 2>&1
echo "cold rc=$? at ${SECONDS}s"
python3 $e2e $data --warm-from "$OUT/e2e.json" --resume --budget-s $((budget - SECONDS - 30)) \
  --out "$OUT/e2e_warm.json" > "$OUT/e2e_warm.log" 2>&1
echo "warm rc=$? at ${SECONDS}s"
