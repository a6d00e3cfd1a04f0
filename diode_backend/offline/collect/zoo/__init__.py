"""The shape zoo: GEMMs of real models, traced from their code with no weights.

Each architecture of :data:`families.ARCHITECTURES` is built from its published configuration
by transformers, timm or diffusers (the ``zoo`` extra) on fake tensors or the meta device, in
the dtype it is traced in, and run on the inputs its users run. Faithfulness rules:

- ``aten.mm/addmm/bmm/baddbmm`` are recorded at dispatch level, as Inductor receives them:
  ``nn.Linear`` is addmm with a row bias or mm, its weight a column-major operand; GPT-2's
  Conv1D is addmm with a row-major weight; ``k.transpose`` is a column-major bmm operand.
- GEMMs inside ``F.scaled_dot_product_attention`` are not recorded: on an NVIDIA GPU Inductor
  runs it as one fused attention kernel. Families traced with eager attention (their
  ``attention`` field) contribute their attention products (bmm; BLOOM's and the classic
  diffusers processor's baddbmm).
- Convolutions are not GEMMs to Inductor's GEMM lowering and are not recorded.
- Routed MoE experts pick tokens from data that fake tensors lack: their modules return zeros
  and their GEMMs are computed from the configuration (:func:`trace.expert_gemms`) at the
  routed token counts of each input, with imbalance.
- Tensor-parallel shards are derived from the traced projections by module name
  (:func:`trace.tensor_parallel`).
- float32 is traced twice where a family lists both: without TF32 and with it.
- A problem over :data:`MAX_FLOPS` is dropped: one such GEMM costs seconds of GPU time per
  candidate to collect.

Regenerate with ``diode collect zoo -o trained_models/data/zoo``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ....problem import GemmProblem
from ....workload import WORKLOAD_CLASSES, workload_class
from .families import ARCHITECTURES

#: The most floating-point operations (2 x batch x M x N x K) a zoo problem may take.
MAX_FLOPS = 2**37
#: The file listing each family's group, models and problem counts.
INDEX = "index.json"


class ZooUnavailable(RuntimeError):
    """transformers, timm or diffusers is missing: the zoo cannot be traced."""


def family_names() -> list[str]:
    """Every family of the zoo, in table order."""
    return list(dict.fromkeys(arch.family for arch in ARCHITECTURES))


def trace_family(family: str) -> list[dict]:
    """The problems of one family, as shape-set entries (GemmProblem fields plus ``generator``,
    ``family``, ``model``, ``group`` and ``workload_class``): each problem once, at its first
    model, at most :data:`MAX_FLOPS`. Raises :class:`ZooUnavailable` when the tracing
    libraries cannot be imported."""
    _require_tracing_libraries()
    from .models import BUILDERS
    from .trace import fp32_precision, tensor_parallel

    entries: dict[GemmProblem, dict] = {}
    for arch in (a for a in ARCHITECTURES if a.family == family):
        for dtype in arch.dtypes:
            with fp32_precision(dtype == "tf32"):
                traced, computed = BUILDERS[arch.builder](arch, "float32" if dtype == "tf32" else dtype)
                problems = [g.problem for g in traced] + computed
                heads = arch.config.get("num_attention_heads")
                problems += [p for degree in arch.tp for p in tensor_parallel(traced, degree, heads)]
            for problem in problems:
                if problem.flops <= MAX_FLOPS and problem not in entries:
                    entries[problem] = {
                        **problem.to_dict(), "generator": f"zoo:{family}", "family": family, "model": arch.model,
                        "group": arch.group, "workload_class": workload_class(problem),
                    }  # fmt: skip
    return list(entries.values())


def write_family(entries: list[dict], directory: Path, family: str) -> Path:
    """Write one family's entries as ``<family>.json`` in the shape-set format (one problem a line)."""
    path = directory / f"{family}.json"
    lines = [json.dumps(entry) for entry in entries]
    path.write_text(f'{{"name": {json.dumps(family)}, "problems": [\n' + ",\n".join(lines) + "\n]}\n")
    return path


def write_index(directory: Path) -> dict:
    """Rewrite ``index.json`` from the zoo family files in ``directory`` (other files are not
    the zoo's): family -> group, models, the attention each model was traced with (``eager``:
    its products are recorded; ``sdpa``: fused, no GEMM; ``none``), problem count per workload
    class."""
    index = {}
    for family in sorted(family_names()):
        path = directory / f"{family}.json"
        if not path.is_file():
            continue
        entries = json.loads(path.read_text())["problems"]
        counts = {c: sum(e["workload_class"] == c for e in entries) for c in WORKLOAD_CLASSES}
        index[family] = {
            "group": entries[0]["group"] if entries else None,
            "models": list(dict.fromkeys(e["model"] for e in entries)),
            "attention": {a.model: a.attention for a in ARCHITECTURES if a.family == family},
            "problems": len(entries),
            "workload_classes": {c: n for c, n in counts.items() if n},
        }
    (directory / INDEX).write_text(json.dumps(index, indent=1) + "\n")
    return index


def families_in(directory: str | Path) -> list[str]:
    """The families ``directory``'s index lists, sorted; none where it has no index."""
    index = Path(directory) / INDEX
    return sorted(json.loads(index.read_text())) if index.is_file() else []


def load(directory: str | Path, families: Iterable[str] = (), exclude: Iterable[str] = ()) -> list[tuple[str, GemmProblem]]:
    """The zoo's problems in ``directory`` as ``(generator, problem)`` pairs: all families or
    those named, less the excluded ones. Raises ValueError when ``directory`` holds no family
    or a named family is not there."""
    from ..shapes import from_json

    present = families_in(directory)
    if not present:
        raise ValueError(f"no zoo in {directory} (no {INDEX})")
    wanted, dropped = list(families), set(exclude)
    unknown = sorted((set(wanted) | dropped) - set(present))
    if unknown:
        raise ValueError(f"no zoo family {', '.join(unknown)} in {directory}; it has {', '.join(present)}")
    return [item for name in (wanted or present) if name not in dropped for item in from_json(Path(directory) / f"{name}.json")]


def _require_tracing_libraries() -> None:
    try:
        import diffusers
        import timm  # noqa: F401
        import transformers
    except ImportError as err:
        raise ZooUnavailable(f"tracing the zoo needs transformers, timm and diffusers ({err}): pip install 'diode-backend[zoo]'") from err
    except Exception as err:  # e.g. a torchvision built for another torch, which timm imports
        raise ZooUnavailable(f"tracing the zoo needs transformers, timm and diffusers; importing them failed: {err}") from err
    # their advice about loading weights and installing kernels does not apply to tracing
    transformers.logging.set_verbosity_error()
    diffusers.logging.set_verbosity_error()
