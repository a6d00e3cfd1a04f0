"""Every hook and every option is documented (a new one without docs fails here)."""

from __future__ import annotations

import inspect
from pathlib import Path

from diode_backend import hookspecs
from diode_backend.options import OPTIONS

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_hook_is_in_the_plugin_guide_and_has_a_docstring():
    guide = (DOCS / "plugins.md").read_text()
    hooks = [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("diode_")]
    assert len(hooks) >= 5
    for name in hooks:
        assert f"`{name}(" in guide, name
        assert ":param" in (getattr(hookspecs, name).__doc__ or ""), name


def test_every_option_is_in_the_options_reference():
    reference = (DOCS / "options.md").read_text()
    for spec in OPTIONS:
        assert f"| `{spec.name}` |" in reference and spec.env_var in reference, spec.name
