"""H100 problems to time again under torch 2.11's TF32 rule: every TF32 problem of the combined runs
(``h100_combine.RUNS`` but those that time problems again) whose Triton kernels the sweep ran
without TF32.

    python benchmarks/h100_tf32_plan.py   # writes trained_models/data/h100/problems/zoo-tf32-{train,validation}.json

The sweep gave Triton's template TF32 by the ``alignment`` rule of :mod:`diode_backend.tf32`
(M and N multiples of 16, K of 8) until it followed the running Inductor's; torch 2.11's Inductor
runs TF32 on every Triton kernel of a problem that allows it (``always``). So on a float32
problem allowing TF32 that is not aligned, the dataset's Triton timings are not what torch 2.11
runs, and its best measured time is too slow. This plan lists every such problem (none is left
out): the held-out families' (``zoo-holdout.json``) as validation problems, the others as
training problems, each with the generator it was timed under. Order: a fixed pseudo-random one
(a hash of each description), so that a collection cut short has timed a fair sample.
``SET=tf32 benchmarks/h100_collect.sh`` times both on the ``default`` space (ATen and Inductor's
DEFAULT configs); ``h100_combine.py`` keeps a problem's ``always`` timings where it has both.
"""

from __future__ import annotations

import hashlib
import json
import sys

from h100_combine import RETIMES, ROOT, RUNS
from h100_plan import OUT

from diode_backend.offline.collect import shapes
from diode_backend.offline.dataset import load_dataset
from diode_backend.offline.families import family_of
from diode_backend.tf32 import triton_tf32_active

TARGETS = {"train": OUT / "zoo-tf32-train.json", "validation": OUT / "zoo-tf32-validation.json"}


def main() -> int:
    holdout = set(json.loads((OUT / "zoo-holdout.json").read_text())["families"])
    chosen = {"train": [], "validation": []}
    # the runs as combined before any was timed again, so that the lists regenerate unchanged
    timed = [ROOT / "runs" / name for name in RUNS if name not in RETIMES]
    for record in load_dataset(timed).problems:
        p = record.problem
        if p.dtype == "float32" and p.allow_tf32 and not triton_tf32_active(p, record.tf32_rule):
            assert triton_tf32_active(p, "always")
            chosen["validation" if family_of(record) in holdout else "train"].append((record.generator, p))
    for split, named in chosen.items():
        named.sort(key=lambda gp: hashlib.sha256(gp[1].describe().encode()).hexdigest())
        shapes.to_json(named, TARGETS[split], f"h100-zoo-tf32-{split}")
        families = sorted({g for g, _ in named})
        print(f"{TARGETS[split].name}: {len(named)} problems of {len(families)} generators", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
