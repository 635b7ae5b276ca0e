"""The layout of ``incremental/``: a core at the top and a folder per tokenizer family.

Parses the import statements of every module (those inside functions too: a deferred import is
still a dependency) and checks that

* no family (``bytelevel``, ``wordpiece``, ``sentencepiece``) imports another family, ``hf``
  or ``analysis``, and no core module imports ``analysis`` (it studies tokenizers, it does not
  run them); ``hf`` (the ``tokenizer.json`` reader) composes the families and may import them;
* the modules import each other without a cycle (``if TYPE_CHECKING:`` imports, which never
  run, left out).
"""

from __future__ import annotations

import ast
from pathlib import Path

from ..conftest import ROOT

PACKAGE = "livetok.incremental"
SOURCE = ROOT / "incremental"
FAMILIES = ("bytelevel", "wordpiece", "sentencepiece")
#: areas that build on the families: they may import them, no family imports them
COMPOSERS = ("hf",)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


MODULES = {_module_name(p): p for p in sorted(SOURCE.rglob("*.py"))}


def _resolve(importer: str, node: ast.ImportFrom | ast.Import) -> set[str]:
    """The modules of ``livetok.incremental`` that an import statement loads."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in MODULES}
    if node.level:
        is_package = MODULES[importer].name == "__init__.py"
        base = importer.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    found = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES}
    if target in MODULES and len(found) < len(node.names):
        found.add(target)  # names defined in the module (or package) itself
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(name: str, *, with_type_checking: bool) -> set[str]:
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"), str(MODULES[name]))
    skipped: set[int] = set()
    if not with_type_checking:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped:
            out |= _resolve(name, node)
    return out - {name}


def _area(name: str) -> str:
    """``core``, ``analysis`` or the family a module belongs to."""
    rest = name[len(PACKAGE) + 1 :].split(".") if name != PACKAGE else [""]
    return rest[0] if len(rest) > 1 or rest[0] in (*FAMILIES, *COMPOSERS, "analysis") else "core"


def test_the_layout_is_read_right():
    """The parser sees the imports this test is about (a test that cannot fail is no test)."""
    wp = f"{PACKAGE}.wordpiece"
    assert _area(f"{wp}.encoding") == "wordpiece" and _area(f"{PACKAGE}.registry") == "core"
    assert _area(f"{PACKAGE}.analysis.widening") == "analysis" and _area(PACKAGE) == "core"
    assert f"{wp}.linmaxmatch" in _imports(f"{wp}.e2e", with_type_checking=False)
    assert f"{PACKAGE}.text" in _imports(f"{wp}.encoding", with_type_checking=False)
    assert f"{PACKAGE}.sentencepiece.encoding" in _imports(
        f"{PACKAGE}.analysis.widening", with_type_checking=False)


def test_the_document_takes_an_encoding_and_does_not_look_names_up():
    """Names are looked up in the package face (``livetok.incremental.get_encoding``), not in
    the central structure: ``Document`` takes an encoding object and never imports the
    registry (deferred and ``TYPE_CHECKING`` imports count)."""
    deps = _imports(f"{PACKAGE}.document", with_type_checking=True)
    assert f"{PACKAGE}.registry" not in deps, "document imports the registry"
    assert f"{PACKAGE}.protocol" in deps  # (the parser sees the module's imports)


def test_no_family_imports_another_family_or_analysis():
    wrong = []
    for name in MODULES:
        area = _area(name)
        for dep in sorted(_imports(name, with_type_checking=True)):
            dep_area = _area(dep)
            if dep_area == "analysis" and area != "analysis":
                wrong.append(f"{name} imports {dep}: nothing that runs tokenizers imports analysis")
            elif area in FAMILIES and dep_area in (*FAMILIES, *COMPOSERS) and dep_area != area:
                wrong.append(f"{name} imports {dep}: move what both need to the core")
    assert not wrong, "\n".join(wrong)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, as the list of its modules, or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        path.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                return path[path.index(v) :] + [v]
            if v not in state and (found := visit(v)):
                return found
        path.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    # the package's __init__ re-exports the public names; importing a submodule runs it first,
    # which is not an edge of the graph (else every module would sit on a cycle through it)
    graph = {name: _imports(name, with_type_checking=False) - {PACKAGE} for name in MODULES}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_module_imports_another_modules_private_name():
    """What one module takes from another is that module's public face: no ``from x import
    _name`` in ``incremental/`` or ``server/`` (a helper two modules share is made public, as
    ``load.gpt2_byte_decoder``; deferred imports count too)."""
    found = []
    for folder in ("incremental", "server"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    found += [f"{path.relative_to(ROOT)}: from {node.module} import {a.name}"
                              for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, "\n".join(found)
