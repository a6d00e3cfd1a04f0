#!/bin/bash
# One GPU call that brings the shipped H100 model up to date and measures it end to end:
#   benchmarks/h100_retrain_e2e.sh SECONDS
# 1. benchmarks/h100_collect.sh (SET=zoo): the GPU tests of the collector, then the zoo's training
#    problems not yet timed, resuming from the shards in trained_models/data/h100/raw/;
# 2. the shards this call wrote merged into runs/$RUN, the dataset recombined
#    (benchmarks/h100_combine.py) and the model retrained with the command and settings of
#    benchmarks/results/h100_model.md (none chosen here);
# 3. diode validate on the held-out families, then benchmarks/e2e_validation.py on them, every mode
#    side by side, until SECONDS (continue it with --resume in later calls).
# Under $OUT: log.txt, validation.json, e2e.json and round.tgz (collector logs and reports, the new
# run, the dataset and the model).
set -u
budget=$1
RUN=${RUN:-2026-11-23-zoo-b}
export PYTHONUNBUFFERED=1
h100=trained_models/data/h100
root=$PWD
log=$OUT/log.txt
step() { echo "== $1 rc=$2 at ${SECONDS}s" | tee -a "$log"; }
touch /tmp/before-sweep
mkdir -p /tmp/collect
OUT=/tmp/collect SET=zoo bash benchmarks/h100_collect.sh "${COLLECT_SECONDS:-330}" ${COLLECT_STEPS:-tests sweep} >> "$log" 2>&1
step collect $?
find "$h100/raw" -name '*.msgpack' -newer /tmp/before-sweep > /tmp/new-shards
if [ -s /tmp/new-shards ]; then
  python3 -m diode_backend dataset merge $(cat /tmp/new-shards) -o "$h100/runs/$RUN" >> "$log" 2>&1
  step merge $?
  python3 benchmarks/h100_combine.py >> "$log" 2>&1; step combine $?
  python3 -m diode_backend train "$h100/dataset" --output trained_models/nvidia-h100-gemm \
    --name nvidia-h100-gemm --hardware-match "H100 80GB HBM3" --threads 1 \
    --holdout-families bart,electra,mamba2,mistral,qwen-moe,sd-unet,vit,wav2vec2 >> "$log" 2>&1
  step train $?
fi
python3 -m diode_backend validate trained_models/nvidia-h100-gemm "$h100/dataset" --split all \
  --families held-out --update-manifest --report "$OUT/validation.json" >> "$log" 2>&1
step validate $?
tar czf "$OUT/round.tgz" -C /tmp collect -C "$root" "$h100/runs/$RUN" "$h100/dataset" trained_models/nvidia-h100-gemm 2>> "$log"
python3 benchmarks/e2e_validation.py "$h100/dataset" --families held-out \
  --modes no_autotune,diode_pick,diode_fast,max_autotune_default \
  --budget-s $((budget - SECONDS - 40)) --out "$OUT/e2e.json" > /tmp/e2e.log 2>&1
step e2e $?
grep -v Warning /tmp/e2e.log | tail -n 60 >> "$log"
