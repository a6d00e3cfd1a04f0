"""The documentation is true: every hook and option is documented, and every example in
README.md and docs/ runs as written.

Each fenced block's info string names its language and, after it, what it needs:

- ``bash``: run by bash (``-euo pipefail``) as one script;
- ``console``: each ``$ `` line is run by bash and what follows it, up to the next ``$ `` line,
  is its output (standard output and error together); ``...`` in it stands for any text;
- ``python``: run by this interpreter as a script;
- ``text``, ``toml``: not code to run (layouts, file excerpts).

A block marked ``gpu`` needs a CUDA GPU, or what an earlier ``gpu`` block made on one, and is
skipped; ``zoo`` needs the ``zoo`` extra and is skipped without it; ``fresh-machine`` installs
into a new virtual environment and must be what ``.ci/run`` runs. The blocks of one document
run in order in a fresh copy of the repository (so examples write beside the paths they name
and build on each other), with this interpreter's ``python`` and ``diode`` (``python -m
diode_backend``) first on PATH and no ``DIODE_*`` or ``TORCHINDUCTOR_*`` variables but the
caches' folders.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from diode_backend import hookspecs
from diode_backend.options import OPTIONS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DOCUMENTS = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
RUN = ("bash", "console", "python")
NOT_RUN = ("text", "toml")
MARKS = {"gpu", "zoo", "fresh-machine"}
#: What one example may take; training and validating on the shipped data take about ten seconds.
TIMEOUT_S = 300


@dataclass
class Block:
    document: Path
    line: int  # of the opening fence, 1-based
    language: str
    marks: set[str]
    text: str

    def __str__(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def fenced_blocks(document: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, in order."""
    blocks, opened, body = [], None, []
    for number, line in enumerate(document.read_text().splitlines(), start=1):
        if not line.startswith("```"):
            if opened:
                body.append(line)
            continue
        if opened is None:
            words = line[3:].split()
            opened, body = (number, words[0] if words else "", set(words[1:])), []
        else:
            start, language, marks = opened
            blocks.append(Block(document, start, language, marks, "\n".join(body) + "\n"))
            opened = None
    assert opened is None, f"{document}: a code block opened on line {opened[0]} is never closed"
    return blocks


BLOCKS = [block for document in DOCUMENTS for block in fenced_blocks(document)]


def test_every_example_says_what_it_is_and_needs():
    assert len(BLOCKS) > 30
    for block in BLOCKS:
        assert block.language in RUN + NOT_RUN, f"{block}: the info string must start with one of {RUN + NOT_RUN}"
        assert block.marks <= MARKS, f"{block}: unknown marks {block.marks - MARKS}"


def test_the_fresh_machine_commands_are_what_ci_runs():
    ci = {line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()}
    fresh = [block for block in BLOCKS if "fresh-machine" in block.marks]
    assert [block.document.name for block in fresh] == ["README.md"]
    for block in fresh:
        commands = [line.strip() for line in block.text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        assert commands and all(command in ci for command in commands), f"{block}: .ci/run must run {commands}"


def runs(block: Block) -> bool:
    """Whether the test suite runs ``block`` (where it has what the block needs)."""
    return block.language in RUN and "fresh-machine" not in block.marks


class DocumentRun:
    """One document's examples, run in order in a copy of the repository."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.results: dict[int, str | None] = {}  # block line -> failure, None when it passed
        ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", "build")
        shutil.copytree(ROOT, self.folder / "repo", symlinks=True, ignore=ignore)
        (self.folder / "scripts").mkdir()
        (self.folder / "bin").mkdir()
        diode = self.folder / "bin" / "diode"  # the command of the diode_backend this interpreter imports
        diode.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m diode_backend "$@"\n')
        diode.chmod(0o755)

    @property
    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DIODE_", "TORCHINDUCTOR_"))}
        env.update(
            PATH=os.pathsep.join([str(self.folder / "bin"), str(Path(sys.executable).parent), env.get("PATH", "")]),
            XDG_CACHE_HOME=str(self.folder / "cache"),  # the prediction cache's default place
            TORCHINDUCTOR_CACHE_DIR=str(self.folder / "inductor-cache"),
            PYTHONUNBUFFERED="1",  # standard output and error interleave as on a terminal
        )
        return env

    def run(self, argv: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv, cwd=self.folder / "repo", env=self.environment, text=True, timeout=TIMEOUT_S,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def outcome(self, block: Block) -> str | None:
        """Why ``block`` does not run as written, or None; each block runs once."""
        if block.line not in self.results:
            self.results[block.line] = self._failure(block)
        return self.results[block.line]

    def _failure(self, block: Block) -> str | None:
        if block.language == "bash":
            done = self.run(["bash", "-euo", "pipefail", "-c", block.text])
            return None if done.returncode == 0 else f"exit status {done.returncode}:\n{done.stdout[-4000:]}"
        if block.language == "python":
            script = self.folder / "scripts" / f"{block.document.stem}-{block.line}.py"
            script.write_text(block.text)
            done = self.run([sys.executable, str(script)])
            return None if done.returncode == 0 else f"exit status {done.returncode}:\n{done.stdout[-4000:]}"
        for command, shown in console_session(block.text):
            done = self.run(["bash", "-euo", "pipefail", "-c", command])
            if done.returncode != 0:
                return f"$ {command}\nexit status {done.returncode}:\n{done.stdout[-4000:]}"
            if not output_matches(shown, done.stdout):
                return f"$ {command}\nshown:\n{shown}\nbut it printed:\n{done.stdout}"
        return None


def console_session(text: str) -> list[tuple[str, str]]:
    """``(command, shown output)`` for each ``$ `` line of a console block."""
    session: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            session.append((line[2:], []))
        else:
            assert session, f"console output before any command: {line!r}"
            session[-1][1].append(line)
    return [(command, "\n".join(lines)) for command, lines in session]


def output_matches(shown: str, printed: str) -> bool:
    """Whether ``printed`` is ``shown``, where ``...`` in ``shown`` stands for any text
    (across lines too) and trailing spaces and blank lines do not count."""

    def tidy(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())

    pattern = ".*?".join(re.escape(part) for part in tidy(shown).split("..."))
    return re.fullmatch(pattern, tidy(printed), re.DOTALL) is not None


@pytest.fixture(scope="module")
def document_runs() -> dict[Path, DocumentRun]:
    return {}


def _skip_reason(block: Block) -> str | None:
    if "gpu" in block.marks:
        return "needs a CUDA GPU, or data collected on one"
    if "zoo" in block.marks:
        return _zoo_unavailable()
    return None


@functools.cache
def _zoo_unavailable() -> str | None:
    """Why the zoo's tracing libraries cannot be used here (the zoo extra), or None."""
    from diode_backend.offline.collect import zoo

    try:
        zoo._require_tracing_libraries()
    except zoo.ZooUnavailable as err:
        return str(err)
    return None


@pytest.mark.parametrize("block", [b for b in BLOCKS if runs(b)], ids=str)
def test_the_example_runs_as_written(block, document_runs, tmp_path_factory):
    reason = _skip_reason(block)
    if reason:
        pytest.skip(reason)
    if block.document not in document_runs:
        document_runs[block.document] = DocumentRun(tmp_path_factory.mktemp(block.document.stem))
    run = document_runs[block.document]
    # the document's earlier examples first, in order: later ones build on them
    for earlier in fenced_blocks(block.document):
        if earlier.line >= block.line:
            break
        if runs(earlier) and not _skip_reason(earlier):
            failure = run.outcome(earlier)
            assert failure is None, f"{earlier}, which {block} builds on, does not run as written: {failure}"
    failure = run.outcome(block)
    assert failure is None, f"{block} does not run as written: {failure}"


def test_shown_output_may_elide_with_dots():
    assert output_matches("a ... c\n...\nlast", "a b c\nmore\nlines\nlast\n")
    assert not output_matches("a ... c", "a b d")
    assert not output_matches("exact", "exact and more")


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
