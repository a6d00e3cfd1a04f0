"""The diode options as users meet them: attribute, patch, torch.compile(options=...), env vars."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch
from torch._inductor import config

from diode_backend.options import OPTIONS, OPTIONS_BY_NAME, DiodeOptionError, parse_backends

DEFAULT_TOP_K = OPTIONS_BY_NAME["diode_top_k"].default


def test_every_option_is_an_inductor_config_key_with_its_default():
    for spec in OPTIONS:
        assert getattr(config, spec.name) == spec.default
        assert spec.name in config.get_config_copy()


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("diode_confidence_threshold", 1.7, "0.0 to 1.0"),
        ("diode_confidence_threshold", "abc", "0.0 to 1.0"),
        ("diode_confidence_threshold", True, "0.0 to 1.0"),
        ("diode_top_k", 0, ">= 1"),
        ("diode_top_k", 2.5, ">= 1"),
        ("fast_autotune", "maybe", "True or False"),
        ("diode_search_space", "HUGE", "EXHAUSTIVE, DEFAULT"),
        ("diode_model", 3, "string"),
        ("diode_max_compile_s", 0, "seconds > 0"),
        ("diode_max_compile_s", "soon", "seconds > 0"),
    ],
)
def test_a_wrong_value_fails_at_assignment_naming_option_value_and_range(name, value, expected):
    before = getattr(config, name)
    with pytest.raises(DiodeOptionError) as info:
        setattr(config, name, value)
    message = str(info.value)
    assert name in message and repr(value) in message and expected in message
    assert getattr(config, name) == before  # nothing was stored


def test_patch_validates_and_restores():
    with config.patch(diode_top_k=3, fast_autotune=True):
        assert config.diode_top_k == 3 and config.fast_autotune is True
    assert config.diode_top_k == DEFAULT_TOP_K and config.fast_autotune is False
    with pytest.raises(DiodeOptionError, match="diode_top_k"):
        with config.patch(diode_top_k=-1):
            pass
    assert config.diode_top_k == DEFAULT_TOP_K


def test_compile_options_accept_diode_names_and_reject_bad_values_at_once():
    def f(a, b):
        return a @ b

    a, b = torch.randn(4, 4), torch.randn(4, 4)
    ok = torch.compile(f, options={"diode_top_k": 2, "diode_confidence_threshold": 1, "fast_autotune": True})
    torch.testing.assert_close(ok(a, b), f(a, b))
    with pytest.raises(DiodeOptionError, match=r"diode_confidence_threshold=1\.5: expected a number from 0\.0 to 1\.0"):
        torch.compile(f, options={"diode_confidence_threshold": 1.5})


def test_compile_options_take_what_assignment_takes_normalised_alike():
    options = {"diode_top_k": "3", "fast_autotune": "1", "diode-search-space": "default", "diode_max_compile_s": "inf", "max_autotune": True}
    backend = torch._TorchCompileInductorWrapper(mode=None, options=options, dynamic=None)  # what torch.compile builds
    assert backend.config == {
        "diode_top_k": 3, "fast_autotune": True, "diode_search_space": "DEFAULT", "diode_max_compile_s": math.inf, "max_autotune": True
    }  # fmt: skip


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=300
    )


def test_environment_variables_set_defaults():
    result = _run(
        "from torch._inductor import config; print(config.fast_autotune, config.diode_top_k, "
        "config.diode_confidence_threshold, config.diode_model)",
        TORCHINDUCTOR_FAST_AUTOTUNE="1",
        TORCHINDUCTOR_DIODE_TOP_K="7",
        TORCHINDUCTOR_DIODE_CONFIDENCE_THRESHOLD="0.25",
        TORCHINDUCTOR_DIODE_MODEL="analytical",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "7", "0.25", "analytical"]


def test_an_invalid_environment_variable_fails_the_first_diode_compile_with_its_name():
    code = """
import torch
from torch._inductor import config
from diode_backend.options import OPTIONS_BY_NAME
assert config.diode_top_k == OPTIONS_BY_NAME['diode_top_k'].default  # the default stands in until DIODE needs the option
try:
    f = torch.compile(lambda a, b: a @ b, options={"max_autotune": True, "max_autotune_gemm_backends": "DIODE"})
    f(torch.randn(8, 8), torch.randn(8, 8))
except Exception as err:
    print("ERROR", err)
"""
    result = _run(code, TORCHINDUCTOR_DIODE_TOP_K="abc")
    assert "TORCHINDUCTOR_DIODE_TOP_K='abc'" in result.stdout, result.stdout + result.stderr
    assert ">= 1" in result.stdout


def test_parse_backends():
    assert parse_backends("DIODE") == (True, ())
    assert parse_backends("diode, aten,TRITON") == (True, ("ATEN", "TRITON"))
    assert parse_backends("ATEN,TRITON") == (False, ("ATEN", "TRITON"))


def test_the_options_of_a_decision_default_as_the_option_table_says():
    import dataclasses

    from diode_backend.options import DiodeOptions

    assert dataclasses.asdict(DiodeOptions()) == {spec.name: spec.default for spec in OPTIONS}
