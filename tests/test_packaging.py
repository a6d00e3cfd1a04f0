"""What ``pip install`` gets: the wheel's metadata, and a machine without triton."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_carries_the_license_and_asks_for_triton_only_in_an_extra(tmp_path):
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "build", "data", "benchmarks", "tests")
    shutil.copytree(ROOT, source, symlinks=True, ignore=ignore)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("diode_backend-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode().splitlines()
        license_text = archive.read(next(n for n in names if n.endswith("/LICENSE"))).decode()
    assert "License: BSD-3-Clause" in metadata and license_text.startswith("BSD 3-Clause License")
    requires = [line.removeprefix("Requires-Dist: ") for line in metadata if line.startswith("Requires-Dist: ")]
    assert [r for r in requires if r.startswith("triton")] == ['triton>=3.6; extra == "triton"']
    assert 'matplotlib>=3.7; extra == "plots"' in requires
    assert "diode_backend/trained_models/nvidia-h100-gemm/model.pt" in names


_WITHOUT_TRITON = "import sys\nsys.modules['triton'] = None  # `import triton` fails, as where it is not installed\n"


def test_without_triton_compiling_works_and_predict_says_what_it_needs(isolated_caches):
    compile_linear = _WITHOUT_TRITON + (
        "import torch\n"
        "f = torch.compile(torch.nn.Linear(64, 32), options={'max_autotune': True, 'max_autotune_gemm_backends': 'DIODE'})\n"
        "print(tuple(f(torch.randn(8, 64)).shape))\n"
    )
    done = subprocess.run([sys.executable, "-c", compile_linear], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "(8, 32)\n", done.stderr
    predict = _WITHOUT_TRITON + "from diode_backend.offline.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"
    done = subprocess.run(
        [sys.executable, "-c", predict, "predict", "--hardware", "h100", "mm", "64x64x64"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert done.stderr == "diode predict: error: Inductor's Triton configs need triton: pip install 'diode-backend[triton]' (Linux)\n"
