"""The warm passes of ``benchmarks/e2e_validation.py`` (``--warm-from``, ``--kernel-cache``): the
order a warm pass compiles its modes in, and the two passes with the kernel caches kept, each a
fresh process of the script, whose second pass's compile times are reported beside the
all-caches-off figures (the script's docstring, "Kernel caches kept")."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from e2e_results import KERNEL_CACHE_ROW_KEYS, summarize

def compile_order(modes: list[str], index: int) -> list[str]:
    """The order a warm pass compiles ``modes`` in on its ``index``-th row: as given on even
    rows, reversed on odd ones. The first compile after Dynamo's reset is the slower (the
    control ``no_autotune_again`` compiles in less time than ``no_autotune`` before it), so a
    fixed order would favour the mode compiled second; alternating it, the geometric mean over
    the rows cancels that, and ``summarize_warm`` shows it (``by_first_mode``)."""
    return list(modes) if index % 2 == 0 else list(reversed(modes))


#: ``--kernel-cache``: the caches that would answer a compile without compiling are off, the
#: compiled kernels' own caches (Inductor's code folder, Triton's) stay on. ``torch._inductor.
#: config`` keys of torch 2.11 and 2.13 (any missing from a version is skipped and recorded),
#: then AOTAutograd's cache (``torch._functorch.config``) and Dynamo's profile-guided dynamic
#: shapes, which would read what the first process recorded (``torch._dynamo.config``).
KERNEL_CACHES_KEPT = {
    "torch._inductor.config": {
        "force_disable_caches": False,
        "fx_graph_cache": False,
        "autotune_local_cache": False,
        "autotune_remote_cache": False,
        "bundled_autotune_remote_cache": False,
    },
    "torch._functorch.config": {"enable_autograd_cache": False, "enable_remote_autograd_cache": False},
    "torch._dynamo.config": {"automatic_dynamic_local_pgo": False, "automatic_dynamic_remote_pgo": False},
}


def keep_kernel_caches() -> dict:
    """Apply :data:`KERNEL_CACHES_KEPT` in this process; the settings applied, by module, and
    those this torch lacks (``missing``)."""
    applied: dict = {"missing": []}
    for module_name, settings in KERNEL_CACHES_KEPT.items():
        module = importlib.import_module(module_name)
        for key, value in settings.items():
            if hasattr(module, key):
                setattr(module, key, value)
                applied.setdefault(module_name, {})[key] = value
            else:
                applied["missing"].append(f"{module_name}.{key}")
    return applied


def kernel_cache_passes(script: Path, argv: list[str], folder: Path, out: Path) -> list[dict]:
    """The warm pass of ``script``'s ``argv`` (without ``--kernel-cache``) run twice, each in a
    fresh process with the kernel caches in ``folder`` kept; the results of both, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
        "TRITON_CACHE_DIR": str(folder / "triton"),
    }
    child = _without_options(argv, {"--kernel-cache": 1, "--out": 1, "--resume": 0})
    passes = []
    for number in (1, 2):
        pass_out = out.with_name(f"{out.stem}.kernel-cache-pass{number}.json")
        command = [sys.executable, str(script), *child, "--out", str(pass_out), "--kernel-caches-kept"]
        subprocess.run(command, env=env, check=True)
        passes.append(json.loads(pass_out.read_text()))
    return passes


def _without_options(argv: list[str], options: dict[str, int]) -> list[str]:
    """``argv`` less each of ``options`` (name -> how many values follow it; ``--name=value`` too)."""
    kept, skip = [], 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        name = arg.split("=", 1)[0]
        if name in options:
            skip = 0 if "=" in arg else options[name]
            continue
        kept.append(arg)
    return kept


def add_kernel_cache_figures(result: dict, second: dict, folder: Path, first: dict, modes: list[str]) -> None:
    """Put the second kernel-cache pass's compile times beside the all-caches-off figures: each
    row's ``kernel_cache``, and the summary again (:func:`summarize` compares the two)."""
    by_problem = {row["describe"]: row for row in second["rows"]}
    for row in result["rows"]:
        other = by_problem.get(row["describe"])
        if other is not None:
            row["kernel_cache"] = {
                mode: {key: f[key] for key in ("compile_s", "error") if key in f} for mode, f in other["modes"].items()
            }
            for key in KERNEL_CACHE_ROW_KEYS:
                if key in other:
                    row["kernel_cache"][key] = other[key]
    result["kernel_cache"] = {
        "folder": str(folder),
        "caches": second.get("caches"),
        "first_pass_summary": first.get("summary", {}).get("warm"),
        "second_pass_elapsed_s": second.get("elapsed_s"),
    }
    result["summary"] = summarize(result["rows"], modes)
