"""The torch.backends entry point: cheap, idempotent, never raises, can be switched off."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from diode_backend.options import OPTIONS_BY_NAME


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


ROOT = Path(__file__).resolve().parent.parent


def test_the_entry_point_is_the_guard_module_and_is_registered_as_declared():
    section = (ROOT / "pyproject.toml").read_text().split('[project.entry-points."torch.backends"]')[1]
    declared = re.search(r'^diode = "([^"]+)"', section, re.MULTILINE).group(1)
    assert declared == "diode_backend_autoload:install"  # outside the package: see that module
    (entry,) = [ep for ep in entry_points(group="torch.backends") if ep.name == "diode"]
    origin = json.loads(entry.dist.read_text("direct_url.json") or "{}").get("url", "")
    if Path(origin.removeprefix("file://")).resolve() == ROOT:  # installed from this checkout
        assert entry.value == declared


def test_import_torch_does_not_import_inductor_but_arms_the_hooks():
    out = run_python(
        "import sys, torch\n"
        "print('torch._inductor' in sys.modules, 'diode_backend.inductor' in sys.modules)\n"
        "from torch._inductor import config\n"
        "print(config.diode_top_k, type(config.inductor_choices_class).__name__)\n"
    ).stdout.split()
    assert out == ["False", "True", str(OPTIONS_BY_NAME["diode_top_k"].default), "ChoicesFactory"]


def test_diode_disable_switches_the_plugin_off():
    out = run_python(
        "from torch._inductor import config, utils\n"
        "print(hasattr(config, 'diode_top_k'), config.inductor_choices_class,"
        " hasattr(utils._use_autotune_backend, '_diode_wrapped'))",
        DIODE_DISABLE="1",
    ).stdout.split()
    assert out == ["False", "None", "False"]


@pytest.mark.parametrize("disabled, called", [("0", "1"), ("1", "0")])
def test_inductor_sets_its_workers_ptxas_before_any_graph_is_lowered(disabled, called):
    """Importing Inductor's graph module runs Inductor's own ptxas setter (a no-op on a machine
    where torch ships no ptxas, but called), so every process keys Triton's kernel cache by one
    ptxas, whatever it compiles first (``compat.use_workers_ptxas``; the GPU side is
    ``tests/test_gpu.py``). Nothing else in Inductor calls it on import: with DIODE off it is
    not called."""
    out = run_python(
        "import torch, torch._inductor.graph\n"
        "from torch._inductor.runtime import compile_tasks\n"
        "print(compile_tasks._set_triton_ptxas_path.cache_info().currsize)\n",
        DIODE_DISABLE=disabled,
    ).stdout.split()
    assert out == [called]


def test_install_is_idempotent():
    out = run_python(
        "import torch\n"
        "from diode_backend._autoload import install\n"
        "install(); install()\n"
        "from torch._inductor import config, utils\n"
        "install()\n"
        "wrapped = utils._use_autotune_backend\n"
        "print(wrapped._diode_wrapped, hasattr(wrapped.__wrapped__, '_diode_wrapped'), config.diode_top_k)\n"
    ).stdout.split()
    assert out == ["True", "False", str(OPTIONS_BY_NAME["diode_top_k"].default)]


def test_a_failing_hook_does_not_break_importing_inductor():
    out = run_python(
        "import torch, diode_backend.inductor.options as options\n"
        "def broken(config): raise RuntimeError('boom')\n"
        "options.inject_options = broken\n"
        "from torch._inductor import config\n"
        "import diode_backend\n"
        "print(hasattr(config, 'diode_top_k'), diode_backend.stats()['errors'])\n"
    ).stdout
    assert out.strip() == "False {'install:torch._inductor.config:RuntimeError': 1}"


def test_a_failing_install_does_not_break_import_torch():
    result = run_python("import sys; sys.modules['wrapt'] = None\nimport torch\nprint(torch.ones(1).item())")
    assert result.stdout.strip() == "1.0"
    assert "diode-backend disabled itself" in result.stderr
