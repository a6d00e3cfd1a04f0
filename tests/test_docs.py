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


def test_the_zoo_examples_of_the_collection_guide_run(tmp_path, monkeypatch):
    from diode_backend.cli import main
    from diode_backend.collect import shapes

    monkeypatch.chdir(DOCS.parent)  # the examples name repository paths
    examples = [line.split() for line in (DOCS / "collect.md").read_text().splitlines() if line.startswith("diode collect shapes --zoo")]
    assert len(examples) >= 2
    for argv in examples:
        out = tmp_path / argv[argv.index("-o") + 1]
        argv[argv.index("-o") + 1] = str(out)
        assert main(argv[1:]) == 0, argv
        assert shapes.from_json(out)
