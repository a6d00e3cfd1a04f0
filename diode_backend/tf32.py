"""Which Triton GEMM kernels run a float32 problem's dots as TF32.

Allowing TF32 (``torch.backends.cuda.matmul.fp32_precision = "tf32"``) reaches cuBLAS always, but
Inductor's Triton templates (mm, bmm and the persistent ones alike) get ``ALLOW_TF32`` by a rule,
and without it their dots run on the FP32 pipes, several times slower (H100: 16-39 TFLOP/s
against 73-360). The rules, by name:

- ``"always"``: whenever TF32 is allowed. Inductor up to torch 2.12 with ``force_same_precision``
  off, its default (``torch._inductor.config`` of torch 2.11.0+cu130: ``default=False``);
- ``"alignment"``: M and N multiples of 16, K of 8. Inductor up to 2.12 with
  ``force_same_precision`` on (``TORCHINDUCTOR_FORCE_SAME_PRECISION=1``), and the kernels of
  DIODE's sweep until it recorded its rule (every H100 shard so far);
- ``"size"``: M >= 16 and min(N, K) >= 512. Inductor from torch 2.13 (pytorch#183355, which also
  removed ``force_same_precision``).

A pure rule, not a question put to the running Inductor: training needs the rule of the kernels
that were timed, on a machine whose torch may make others.
"""

from __future__ import annotations

import re

from .problem import GemmProblem

RULES = ("always", "alignment", "size")
#: The first torch release whose Inductor gates TF32 on size.
SIZE_RULE_SINCE = (2, 13)
_MAJOR_MINOR = re.compile(r"(\d+)\.(\d+)")


def torch_release(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a torch version string (``2.11.0+cu130``, ``2.13.0.dev20260601``);
    a nightly counts as the release it leads to. Raises ValueError for anything else."""
    found = _MAJOR_MINOR.match(version)
    if found is None:
        raise ValueError(f"{version!r} is not a torch version")
    return int(found[1]), int(found[2])


def inductor_rule(torch_version: str = "") -> str:
    """The rule of the Inductor of ``torch_version`` (the running torch when empty) with its
    default configuration."""
    if not torch_version:
        import torch

        torch_version = torch.__version__
    return "size" if torch_release(torch_version) >= SIZE_RULE_SINCE else "always"


def triton_tf32_active(problem: GemmProblem, rule: str = "") -> bool:
    """Whether a Triton GEMM kernel made by ``rule`` (one of :data:`RULES`; empty: the running
    Inductor's) runs ``problem``'s dots as TF32: float32 with TF32 allowed, and the rule's test."""
    if problem.dtype != "float32" or not problem.allow_tf32:
        return False
    rule = rule or inductor_rule()
    if rule == "always":
        return True
    if rule == "alignment":
        return problem.m % 16 == 0 and problem.n % 16 == 0 and problem.k % 8 == 0
    if rule == "size":
        return problem.m >= 16 and min(problem.n, problem.k) >= 512
    raise ValueError(f"{rule!r} is not a TF32 rule ({', '.join(RULES)})")
