"""Shape generators: the GEMM problems a collection times.

Size generators return ``(m, n, k)`` tuples; :func:`expand` turns them into
``(generator_name, GemmProblem)`` pairs for an op, dtype and layout; :func:`from_json` and
:func:`from_model` give such pairs directly. The random generators keep each problem's sizes in
one of two divisibility classes (:func:`snap`), because the sweep compiles a kernel per class of a
config: two classes keep compilation affordable while covering sizes that vector loads can and
cannot use.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...files import GZIP_SUFFIX, compressed_as_named, read_json, write_atomic
from ...problem import CONFIG_FIELDS, GemmProblem, KernelConfig

Sizes = tuple[int, int, int]  # (m, n, k)
Named = tuple[str, GemmProblem]

#: Medians of the original torch-diode's log-normal sampler, (m, n, k).
LOGNORMAL_MEDIANS = (715, 370, 495)
#: Hidden and MLP sizes of common decoder LLMs (Llama-2/3, Mistral, Qwen-like, GPT-2-like).
LLM_MODELS = {
    "gpt2": (768, 3072, 12, 12),
    "llama-1b": (2048, 8192, 32, 8),
    "llama-3b": (3072, 8192, 24, 8),
    "llama-7b": (4096, 11008, 32, 32),
    "llama3-8b": (4096, 14336, 32, 8),
    "mistral-small": (5120, 14336, 40, 8),
}  # hidden, intermediate, heads, kv heads


def snap(sizes: Sizes, aligned: bool, limit: int = 16384) -> Sizes:
    """Round sampled sizes into one of the two divisibility classes the sweep compiles for.

    Odd: every size odd. Aligned: M and N multiples of 16, K a power of two below 256 and a
    multiple of 256 above, so that K divides into every block size Inductor may pick (the
    template then skips its K masks for every config, as it does for LLM shapes).
    """
    m, n, k = (min(max(int(round(v)), 1), limit) for v in sizes)
    if not aligned:
        return (m | 1, n | 1, k | 1)
    k = 1 << max(4, round(math.log2(k))) if k < 192 else max(256, int(round(k / 256)) * 256)
    return (max(16, round(m / 16) * 16), max(16, round(n / 16) * 16), k)


def lognormal(count: int, seed: int = 0, sigma: float = 1.0, odd_fraction: float = 0.25) -> list[Sizes]:
    """Log-normal M, N, K around :data:`LOGNORMAL_MEDIANS` (``sigma`` in natural-log units),
    a fraction ``odd_fraction`` of the problems odd and the others aligned (:func:`snap`)."""
    rng = random.Random(seed)
    return [
        snap(tuple(rng.lognormvariate(math.log(median), sigma) for median in LOGNORMAL_MEDIANS), rng.random() >= odd_fraction)
        for _ in range(count)
    ]


def odd(count: int, seed: int = 0, low: int = 17, high: int = 4099) -> list[Sizes]:
    """Odd M, N, K, log-uniform in ``[low, high]``: no size lets a vector load be used."""
    rng = random.Random(seed)
    return [tuple(int(math.exp(rng.uniform(math.log(low), math.log(high)))) | 1 for _ in range(3)) for _ in range(count)]


def decode(count: int, seed: int = 0) -> list[Sizes]:
    """Decode steps: M (tokens) from 1 to 16 against LLM projection weights."""
    rng = random.Random(seed)
    projections = [nk for spec in LLM_MODELS.values() for nk in _projections(*spec)]
    return [(rng.randint(1, 16), *rng.choice(projections)) for _ in range(count)]


def tall_skinny(count: int, seed: int = 0) -> list[Sizes]:
    """One size large, another small: long-M thin-N, thin-M long-N, and small-MN long-K (all
    aligned: the odd sizes come from :func:`odd` and :func:`lognormal`)."""
    rng = random.Random(seed)
    out: list[Sizes] = []
    for i in range(count):
        big = 256 * rng.randint(16, 128)  # 4096 .. 32768
        thin = rng.choice([16, 32, 48, 64, 96, 128])
        mid = 256 * rng.randint(1, 16)
        sizes = [(big, thin, mid), (thin, big, mid), (thin, rng.choice([32, 64, 128, 256]), big)]
        out.append(sizes[i % 3])
    return out


def llm(tokens: Sequence[int] = (128, 512, 1024, 2048, 4096), models: Iterable[str] = LLM_MODELS) -> list[Sizes]:
    """Prefill projections of :data:`LLM_MODELS` (qkv, attention output, MLP up/gate and down)
    at each token count: ``(tokens, out_features, in_features)``."""
    return [(t, n, k) for name in models for n, k in _projections(*LLM_MODELS[name]) for t in tokens]


def _projections(hidden: int, intermediate: int, heads: int, kv_heads: int) -> list[tuple[int, int]]:
    head_dim = hidden // heads
    qkv = hidden + 2 * kv_heads * head_dim
    return [(qkv, hidden), (hidden, hidden), (intermediate, hidden), (hidden, intermediate)]


def expand(
    generator: str,
    sizes: Iterable[Sizes],
    *,
    op: str = "mm",
    dtype: str = "bfloat16",
    a_layout: str = "row",
    b_layout: str = "row",
    bias: str = "none",
    allow_tf32: bool = False,
    batch: int = 1,
) -> list[Named]:
    """Problems for ``sizes`` with one op, dtype and layout (``bias`` applies to addmm and
    baddbmm only, ``batch`` to bmm and baddbmm only)."""
    batched = op in ("bmm", "baddbmm")
    with_bias = op in ("addmm", "baddbmm")
    return [
        (
            generator,
            GemmProblem(
                op=op, m=m, n=n, k=k, batch=batch if batched else 1, dtype=dtype,
                a_layout=a_layout, b_layout=b_layout, bias=bias if with_bias else "none",
                allow_tf32=allow_tf32 and dtype == "float32",
            ),
        )
        for m, n, k in sizes
    ]  # fmt: skip


def from_json(path: str | Path) -> list[Named]:
    """Problems listed in a JSON file: ``{"name": ..., "problems": [GemmProblem fields, ...]}``
    or a bare list; a problem's ``generator`` key overrides ``json:<name>``. A file named
    ``*.gz`` is gzip-compressed (the long lists of configs a label round times)."""
    name, entries, _ = _entries(path)
    return [(entry.get("generator", f"json:{name}"), GemmProblem.from_dict(entry)) for entry in entries]


def _entries(path: str | Path) -> tuple[str, list[dict[str, Any]], tuple[str, ...]]:
    """A problem list's name (the file's stem unless it names one), its entries, and the
    KernelConfig fields its configs give by position (``config_fields``; none: each config
    is a dict of fields)."""
    path = Path(path)
    data = read_json(path)
    stem = Path(path.stem).stem if path.name.endswith(GZIP_SUFFIX) else path.stem
    if isinstance(data, dict):
        return data.get("name", stem), data["problems"], tuple(data.get("config_fields", ()))
    return stem, data, ()


def listed_configs(path: str | Path) -> dict[GemmProblem, tuple[KernelConfig, ...]]:
    """The configs a problem list names per problem (an entry's ``configs``: KernelConfig
    fields, what the sweep's ``listed`` space times); problems without are left out."""
    _, entries, fields = _entries(path)

    def config(given: dict[str, Any] | list[Any]) -> KernelConfig:
        return KernelConfig.from_dict(dict(zip(fields, given)) if isinstance(given, list) else given)

    return {
        GemmProblem.from_dict(entry): tuple(config(c) for c in entry["configs"])
        for entry in entries if entry.get("configs")
    }  # fmt: skip


def to_json(
    problems: Iterable[Named], path: str | Path, name: str, configs: Mapping[GemmProblem, Sequence[KernelConfig]] | None = None
) -> None:
    """Write problems in the format :func:`from_json` reads (the file's folder is created;
    ``*.gz``: gzip-compressed), with each problem's ``configs`` where given
    (:func:`listed_configs`), each a list of :data:`CONFIG_FIELDS` values (a dict per config
    would triple a list's size)."""
    listed = configs or {}

    def entry(generator: str, problem: GemmProblem) -> dict[str, Any]:
        named = {**problem.to_dict(), "generator": generator}
        if problem in listed:
            named["configs"] = [[getattr(c, field) for field in CONFIG_FIELDS] for c in listed[problem]]
        return named

    lines = [json.dumps(entry(generator, problem)) for generator, problem in problems]
    header = {"name": name, **({"config_fields": CONFIG_FIELDS} if listed else {})}
    # one problem per line: diffs of committed lists stay readable
    text = (json.dumps(header)[:-1] + ', "problems": [\n' + ",\n".join(lines) + "\n]}\n").encode()
    write_atomic(path, compressed_as_named(path, text))


def from_model(name: str, run: Callable[[], Any]) -> list[Named]:
    """The GEMMs a model executes: ``run()`` is called (eagerly; meta tensors work, nothing is
    computed) while every ``aten.mm/addmm/bmm/baddbmm`` call is recorded with its sizes,
    strides, dtype and bias, except those inside ``F.scaled_dot_product_attention``, which
    Inductor runs fused on a GPU (:func:`zoo.trace.trace_gemms`). Repeated problems are listed
    once, in first-call order."""
    from .zoo.trace import trace_gemms

    problems = dict.fromkeys(gemm.problem for gemm in trace_gemms(None, run))
    return [(f"model:{name}", problem) for problem in problems]


def retyped(problems: Iterable[Named], dtype: str | None, allow_tf32: bool) -> list[Named]:
    """``problems`` with every input and output dtype set to ``dtype`` (each kept when None)
    and TF32 allowed on float32 problems when ``allow_tf32``; problems that become equal are
    listed once. Shapes and layouts traced from a model do not depend on its dtype."""
    out = {}
    for generator, problem in problems:
        dtype_now = dtype or problem.dtype
        problem = dataclasses.replace(
            problem, dtype=dtype_now, out_dtype=dtype or problem.out_dtype, allow_tf32=allow_tf32 and dtype_now == "float32"
        )
        out.setdefault(problem, generator)
    return [(generator, problem) for problem, generator in out.items()]
