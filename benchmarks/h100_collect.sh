#!/bin/bash
# One GPU call of the H100 collection (see docs/collect.md and benchmarks/results/).
#   benchmarks/h100_collect.sh GROUP SECONDS [checks]
# GROUP: bf16 or other (trained_models/data/h100/problems/GROUP-*.json); SECONDS: the whole
# call's budget; "checks" first runs the GPU tests and the fidelity check. Everything that comes
# back is written under $OUT: logs, JSON reports and the new shards (data-GROUP.tgz).
set -u
group=$1 budget=$2 checks=${3:-}
export PYTHONUNBUFFERED=1
started=$SECONDS
data=trained_models/data/h100/raw/$group  # in the tree: a rerun resumes from the shards already there
mkdir -p "$data"
{ nvidia-smi; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"; nproc; } > "$OUT/machine.txt" 2>&1
if [ "$checks" = checks ]; then
  timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_collect_gpu.py > "$OUT/pytest-gpu.log" 2>&1
  rc=$?
  echo "pytest rc=$rc at $((SECONDS - started))s" | tee -a "$OUT/steps.log"
  [ $rc = 0 ] || { tail -40 "$OUT/pytest-gpu.log"; exit 1; }
  timeout 300 python3 -m diode_backend collect fidelity trained_models/data/h100/problems/fidelity.json -o "$OUT/fidelity.json" > "$OUT/fidelity.log" 2>&1
  echo "fidelity rc=$? at $((SECONDS - started))s" | tee -a "$OUT/steps.log"
fi
left=$((budget - (SECONDS - started) - 45))
if [ $left -gt 60 ]; then
  timeout $((left + 30)) python3 -m diode_backend collect sweep "trained_models/data/h100/problems/$group-train.json" \
    --validation "trained_models/data/h100/problems/$group-validation.json" --split train --space sample/4 \
    -o "$data" --max-seconds "$left" --retime-every 20 --report "$OUT/sweep-$group.json" > "$OUT/sweep-$group.log" 2>&1
  echo "sweep rc=$? at $((SECONDS - started))s" | tee -a "$OUT/steps.log"
fi
tar czf "$OUT/data-$group.tgz" "$data"
tail -3 "$OUT"/*.log
