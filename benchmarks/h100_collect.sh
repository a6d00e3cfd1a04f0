#!/bin/bash
# One GPU call of the H100 collection (docs/collect.md; runs are recorded in benchmarks/results/).
#   [SET=zoo|attn|gaps|precision|tf32|regions|regions-2|alignment] [LAUNCH=torchrun] benchmarks/h100_collect.sh SECONDS STEP...     STEP: tests | sweep | fidelity, run in order
# The sweep times the problem lists of trained_models/data/h100/problems/ into
# trained_models/data/h100/raw/, resuming from the shards already there and from the committed
# runs of the set (copied in with their dates, so a fresh checkout resumes), and stops in time for
# the steps after it (fidelity: 300 s). SET=base (default): {bf16,other}-{validation,train}.json,
# validation on the exhaustive space (benchmarks/h100_plan.py); SET=zoo: zoo-{validation,train,baddbmm-train}.json,
# validation on sample/4+default (benchmarks/h100_zoo_plan.py); SET=attn: zoo-attention-train.json
# alone, no validation (the held-out families' validation problems are all timed already;
# benchmarks/h100_attention_plan.py); SET=gaps: zoo-gaps-train.json alone, no validation
# (benchmarks/h100_gaps_plan.py); SET=precision: zoo-precision-train.json alone, no validation
# (benchmarks/h100_precision_plan.py), on the default space (ATen and DEFAULT configs; every set
# but tf32 times its training problems on sample/4); SET=tf32: zoo-tf32-{train,validation}.json,
# both on the default space (benchmarks/h100_tf32_plan.py); SET=regions: zoo-regions-train.json
# alone, no validation, on the default space (benchmarks/h100_regions_plan.py; SET=regions-2 its
# second draw, zoo-regions-2-train.json); SET=alignment: zoo-alignment-train.json alone, no
# validation, on the default space (benchmarks/h100_alignment_plan.py); SET=pick-labels-ROUND: a
# round of pick labels, problems/pick-labels-ROUND-train.json (or .json.gz) on the listed space, into a dataset
# directory of its own, .pick-labels-ROUND, not the training dataset's (benchmarks/h100_pick_labels_plan.py;
# to resume, unpack the last call's raw.tgz in the repository root and carry that directory).
# What comes back is under $OUT:
# logs, JSON reports and the dataset directory (raw.tgz). LAUNCH=torchrun runs the sweep under
# torchrun, one process per GPU of the machine (docs/collect.md).
set -u
budget=$1; shift
export PYTHONUNBUFFERED=1
problems=trained_models/data/h100/problems
data=trained_models/data/h100/raw
case ${SET:-base} in
  base) train="$problems/bf16-train.json $problems/other-train.json"
        validation="$problems/bf16-validation.json $problems/other-validation.json"; vspace=exhaustive
        runs="2026-11-23 2026-11-23-b" ;;
  zoo) train="$problems/zoo-train.json $problems/zoo-baddbmm-train.json"; validation=$problems/zoo-validation.json; vspace=sample/4+default
       runs="2026-11-23-zoo 2026-11-23-zoo-b 2026-11-24-zoo" ;;
  attn) train=$problems/zoo-attention-train.json; validation=; vspace=sample/4+default
        runs="2026-11-24-attn" ;;
  gaps) train=$problems/zoo-gaps-train.json; validation=; vspace=sample/4+default
        runs="2026-11-24-gaps" ;;
  precision) train=$problems/zoo-precision-train.json; validation=; vspace=sample/4+default; space=default
             runs="2026-11-24-precision" ;;
  tf32) train=$problems/zoo-tf32-train.json; validation=$problems/zoo-tf32-validation.json; vspace=default; space=default
        runs="2026-11-24-tf32" ;;
  regions) train=$problems/zoo-regions-train.json; validation=; vspace=default; space=default
           runs="2026-11-24-regions" ;;
  regions-2) train=$problems/zoo-regions-2-train.json; validation=; vspace=default; space=default
             runs="2026-11-24-regions-2" ;;
  alignment) train=$problems/zoo-alignment-train.json; validation=; vspace=default; space=default
             runs="2026-11-24-alignment" ;;
  pick-labels-*) train=$problems/$SET-train.json; [ -f "$train" ] || train=$train.gz
                 validation=; vspace=listed; space=listed; data=.$SET; runs=
                 [ -f "$train" ] || { echo "SET=$SET: no $problems/$SET-train.json(.gz)"; exit 2; } ;;
  *) echo "SET must be base, zoo, attn, gaps, precision, tf32, regions, regions-2, alignment or pick-labels-ROUND"; exit 2 ;;
esac
case ${LAUNCH:-python} in
  python) launch="python3 -m" ;;
  torchrun) launch="torchrun --standalone --nproc-per-node gpu --max-restarts 3 -m" ;;
  *) echo "LAUNCH must be python or torchrun"; exit 2 ;;
esac
mkdir -p "$data"
for run in $runs; do
  [ -d "trained_models/data/h100/runs/$run" ] || continue
  for shard in trained_models/data/h100/runs/$run/*.msgpack*; do [ -e "$data/$run-${shard##*/}" ] || cp -p "$shard" "$data/$run-${shard##*/}"; done
done
{ nvidia-smi; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"; nproc; } > "$OUT/machine.txt" 2>&1
step() { echo "$1 rc=$2 at ${SECONDS}s" | tee -a "$OUT/steps.log"; }
for name in "$@"; do
  case $name in
    tests)
      timeout 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_collect_gpu.py > "$OUT/pytest-gpu.log" 2>&1
      rc=$?; step tests $rc
      [ $rc = 0 ] || { tail -40 "$OUT/pytest-gpu.log"; break; } ;;
    sweep)
      reserve=45; case " $* " in *" sweep fidelity "*) reserve=345 ;; esac
      left=$((budget - SECONDS - reserve))
      [ $left -gt 60 ] || continue
      timeout $((left + 60)) $launch diode_backend collect sweep $train \
        ${validation:+--validation $validation} --validation-space $vspace --split train --space ${space:-sample/4} \
        -o "$data" --max-seconds $((left - 30)) --retime-every 20 ${SWEEP_ARGS:-} --report "$OUT/sweep.json" > "$OUT/sweep.log" 2>&1
      step sweep $? ;;
    fidelity)
      timeout $((budget - SECONDS - 15)) python3 -m diode_backend collect fidelity $problems/fidelity.json \
        --max-seconds $((budget - SECONDS - 120)) -o "$OUT/fidelity.json" > "$OUT/fidelity.log" 2>&1
      step fidelity $? ;;
  esac
done
tar czf "$OUT/raw.tgz" "$data"
tail -n 4 "$OUT"/*.log
