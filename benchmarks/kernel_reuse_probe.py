"""Is the winner's benchmark kernel the kernel a graph compiles in the end (GPU)?

    OUT=DIR python benchmarks/kernel_reuse_probe.py                      # DIR/kernel_reuse.json
    OUT=DIR python benchmarks/kernel_reuse_probe.py --rename-templates   # DIR/kernel_reuse_renamed.json

A GEMM DIODE measures has its Triton candidates compiled as benchmark modules
(``TritonTemplate.generate`` names the kernel ``triton_<template>``); the graph then compiles
the winner again as its own kernel (``define_kernel`` names it ``triton_tem_fused_...``, or
``triton_`` when ``triton.unique_kernel_names`` is off, with any epilogue fused). If the two
differed only in the name, the graph's compile could reuse the benchmark's binary and wait for
one round of Triton compiles instead of two.

Each case compiles one small function under Inductor's max-autotune (Triton templates only,
the DEFAULT search space, the FX graph and autotune caches off, Inductor and Triton folders
fresh for the process), with ``triton.unique_kernel_names`` on and off, and writes: the graph's
template kernel, the benchmark modules of the same tile (by their ``tl.constexpr`` defines),
whether their ``@triton.jit`` functions are equal once the kernel name is replaced (the diff
when they are not) and whether their ``triton_meta`` (Triton's specialization) is, and the names
of the kernels Triton compiled for the case (a final kernel compiled anew appears under the
graph's name). ``--rename-templates`` runs the cases in a fresh process with the names off and
the mm and bmm templates' benchmark kernels named ``triton_`` too: if Triton compiles no kernel
more than the benchmark modules, the graph reused the winner's binary.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import pathlib
import re
import tempfile
from collections.abc import Callable, Iterator

JIT_DEF = re.compile(r"^def (\w+)\(", re.MULTILINE)
CONSTEXPR = re.compile(r"^\s*(\w+) : tl\.constexpr = (.+)$", re.MULTILINE)
TRITON_META = re.compile(r"triton_meta=(\{.*?\}),\s*\n")
TRITON_CALL = re.compile(r"async_compile\.triton\('(\w+)', '''(.*?)'''", re.DOTALL)


def jit_function(source: str) -> str:
    """The ``@triton.jit`` function of a kernel module, its name replaced by ``KERNEL``."""
    start = source.index("@triton.jit")
    found = JIT_DEF.search(source, start)
    if found is None:
        raise ValueError("no function after @triton.jit")
    body = source[start:]
    return body.replace(found.group(1), "KERNEL").strip()


def template_defines(source: str) -> dict[str, str]:
    """The ``NAME : tl.constexpr = value`` lines of a template kernel (its tile)."""
    return dict(CONSTEXPR.findall(source))


def graph_template_kernels(output_code: str) -> Iterator[tuple[str, str]]:
    """(name, source) of each template kernel an output module compiles."""
    for name, source in TRITON_CALL.findall(output_code):
        if "@triton_heuristics.template" in source:
            yield name, source


def compare(final: str, benchmarks: list[str]) -> dict:
    """The final kernel against the benchmark modules of its tile."""
    defines = template_defines(final)
    same_tile = [b for b in benchmarks if template_defines(b) == defines]
    out = {"tile": defines, "benchmark_modules_of_the_tile": len(same_tile)}
    if not same_tile:
        return out
    ours = jit_function(final)
    theirs = [jit_function(b) for b in same_tile]
    out["jit_equal_but_the_name"] = ours in theirs
    if ours not in theirs:
        out["diff"] = list(difflib.unified_diff(theirs[0].splitlines(), ours.splitlines(), "benchmark", "graph", lineterm="", n=1))
        return out
    twin = same_tile[theirs.index(ours)]
    metas = [TRITON_META.search(source) for source in (final, twin)]
    out["triton_meta"] = {"graph": metas[0] and metas[0].group(1), "benchmark": metas[1] and metas[1].group(1)}
    out["triton_meta_equal"] = out["triton_meta"]["graph"] == out["triton_meta"]["benchmark"]
    return out


def cases() -> dict[str, tuple[Callable, tuple]]:
    """Each case's function and its CUDA inputs."""
    import torch

    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2048, 1024, device="cuda", dtype=torch.bfloat16).t()
    bias = torch.randn(2048, device="cuda", dtype=torch.bfloat16)
    return {
        "mm": (torch.mm, (a, b)),
        "addmm": (torch.addmm, (bias, a, b)),
        "mm_relu": (lambda x, y: torch.relu(x @ y), (a, b)),
    }


def kernel_files(folder: pathlib.Path) -> set[pathlib.Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@contextlib.contextmanager
def renamed_templates(rename: bool) -> Iterator[None]:
    """With ``rename``, the benchmark kernels of Inductor's mm and bmm templates are named
    ``triton_``, as the graph names its kernels when ``triton.unique_kernel_names`` is off (the
    graph's own template kernels are built with a placeholder name, which this leaves alone)."""
    from torch._inductor.autotune_process import TritonBenchmarkRequest
    from torch._inductor.select_algorithm import TritonTemplateKernel

    if not rename:
        yield
        return
    classes = (TritonTemplateKernel, TritonBenchmarkRequest)
    inits = [cls.__init__ for cls in classes]

    def named_as_the_graph(init):
        def named(self, *args, kernel_name=None, **kwargs):
            if kernel_name is None:
                kernel_name, *args = args
            init(self, *args, kernel_name="triton_" if kernel_name in ("triton_mm", "triton_bmm") else kernel_name, **kwargs)

        return named

    for cls, init in zip(classes, inits):
        cls.__init__ = named_as_the_graph(init)
    try:
        yield
    finally:
        for cls, init in zip(classes, inits):
            cls.__init__ = init


def run_case(name: str, fn: Callable, args: tuple, unique_names: bool, rename: bool = False) -> dict:
    """Compile ``fn`` once. The folders are the process's (the compile workers keep the Triton
    folder they started with): the benchmark modules are all of the process's template modules
    (an earlier case's of the same GEMM are the same modules), the kernels Triton compiled are
    the files this case added."""
    import torch
    from torch._inductor import config
    from torch._inductor.utils import run_and_get_code

    inductor_dir, triton_dir = (pathlib.Path(os.environ[k]) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"))
    before = kernel_files(inductor_dir) | kernel_files(triton_dir)
    torch._dynamo.reset()
    options = {
        "max_autotune": True,
        "max_autotune_gemm_backends": "TRITON",
        "max_autotune_gemm_search_space": "DEFAULT",
        "fx_graph_cache": False,
        "autotune_local_cache": False,
        "triton.unique_kernel_names": unique_names,
    }
    with config.patch(options), renamed_templates(rename):
        _, codes = run_and_get_code(torch.compile(fn, dynamic=False), *args)
    modules = [p.read_text() for p in kernel_files(inductor_dir) if p.suffix == ".py"]
    benchmarks = [text for text in modules if "@triton_heuristics.template" in text and "async_compile" not in text]
    finals = [(n, s) for code in codes for n, s in graph_template_kernels(code)]
    compiled = [p for p in kernel_files(triton_dir) - before if p.suffix == ".json" and not p.name.startswith("__grp__")]
    return {
        "case": name,
        "unique_kernel_names": unique_names,
        "renamed_templates": rename,
        "benchmark_modules": len(benchmarks),
        "graph_kernels": [{"name": n, **compare(s, benchmarks)} for n, s in finals],
        "triton_compiled_kernel_names": sorted(json.loads(p.read_text()).get("name", "?") for p in compiled),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for kernel_reuse.json")
    parser.add_argument(
        "--rename-templates",
        action="store_true",
        help="only unique_kernel_names off with the benchmark kernels named as the graph's (kernel_reuse_renamed.json)",
    )
    args = parser.parse_args(argv)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="kernel-reuse-inductor-")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="kernel-reuse-triton-")
    import torch
    import triton

    variants = [(False, True)] if args.rename_templates else [(True, False), (False, False)]
    rows = [run_case(name, fn, fn_args, unique, rename) for name, (fn, fn_args) in cases().items() for unique, rename in variants]
    result = {
        "benchmark": "kernel_reuse_probe",
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "rows": rows,
    }
    path = pathlib.Path(args.out) / ("kernel_reuse_renamed.json" if args.rename_templates else "kernel_reuse.json")
    path.write_text(json.dumps(result, indent=1))
    for row in rows:
        kernels = [(k["name"], k.get("jit_equal_but_the_name"), k.get("triton_meta_equal")) for k in row["graph_kernels"]]
        print(row["case"], row["unique_kernel_names"], row["renamed_templates"], kernels, len(row["triton_compiled_kernel_names"]), "compiled")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
