"""The import rules of docs/architecture.md, read from the source: only ``diode_backend/inductor/``
imports ``torch._inductor``; the runtime never imports the offline wing
(``diode_backend/offline/``); no two modules import each other, directly or through others."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "diode_backend"
#: Entry points beside the runtime that start the ``diode`` command; nothing imports them.
FRONT_DOORS = {"diode_backend.__main__"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(module: str) -> list[tuple[int, str]]:
    """``(line, imported module)`` for every import in ``module``'s file, wherever it stands
    (lazy imports inside functions too); ``from x import y`` counts as ``x.y`` where that is a
    module."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((node.lineno, full if full in MODULES or full.startswith("torch._inductor") else base))
    return found


def test_only_the_inductor_package_imports_torch_inductor():
    outside = [
        f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} imports {name}"
        for module in MODULES
        if not module.startswith("diode_backend.inductor")
        for line, name in imports(module)
        if name == "torch._inductor" or name.startswith("torch._inductor.")
    ]
    assert outside == []


def test_the_runtime_never_imports_the_offline_wing():
    runtime = [m for m in MODULES if not m.startswith("diode_backend.offline") and m not in FRONT_DOORS]
    crossing = [
        f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} imports {name}"
        for module in runtime
        for line, name in imports(module)
        if name == "diode_backend.offline" or name.startswith("diode_backend.offline.")
    ]
    assert crossing == []


def test_no_import_circle():
    # the package root's public names load lazily from the modules that own them: not an edge
    graph = {
        module: {name for _, name in imports(module) if name in MODULES and name != "diode_backend"}
        for module in MODULES
        if module != "diode_backend"
    }
    circles = []

    def visit(module: str, path: list[str]) -> None:
        for other in sorted(graph.get(module, ())):
            if other in path:
                circles.append(" -> ".join(path[path.index(other) :] + [other]))
            elif other not in done:
                visit(other, path + [other])
        done.add(module)

    done: set[str] = set()
    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert circles == []


def test_a_long_module_says_why_it_stays_one():
    unexplained = []
    for module, path in MODULES.items():
        text = path.read_text()
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if text.count("\n") > 300 and "one module" not in docstring.lower():
            unexplained.append(f"{path.relative_to(PACKAGE.parent)} ({text.count(chr(10))} lines)")
    assert unexplained == [], "split these, or say in the docstring why each stays one module"
