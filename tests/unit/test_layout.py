"""The layout of ``incremental/``: the engine at the top, the vocabulary files in ``vocab/``, a
folder per tokenizer family, ``hf/`` (``tokenizer.json``, composing the families), ``names/``
(which name means which tokenizer), ``regex/``, ``analysis/`` (studies of tokenizers) and
``samples/`` (real text).

Parses the import statements of every module (those inside functions too: a deferred import is
still a dependency) and checks that

* the engine (the top-level modules but the package faces, :data:`FACES`) imports no vocabulary, family,
  analysis or sample module: it takes an encoding object and never finds or reads files;
* nothing that tokenizes imports ``samples`` (only ``analysis`` reads sample text);
* ``vocab`` imports only the engine (the families read their files through it, so it cannot
  build them: building is ``names``'s), and nothing but the package faces, ``names``,
  ``analysis`` and ``hf`` imports ``names``;
* no family (``bytelevel``, ``wordpiece``, ``sentencepiece``) imports another family, ``hf``
  or ``analysis``, and no core module imports ``analysis`` (it studies tokenizers, it does not
  run them); ``hf`` (the ``tokenizer.json`` reader) composes the families and may import them;
* the modules import each other without a cycle (``if TYPE_CHECKING:`` imports included:
  a type-only cycle is still two modules that cannot be read apart);
* ``document`` does not import the registry (names are looked up by the package face);
* a module of ``incremental/`` or ``server/`` over :data:`MAX_LINES` lines says why it is one
  concept, in a paragraph of its docstring that starts with :data:`ONE_CONCEPT`.
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
#: the rooms below the package that are neither a family nor a composer
ROOMS = ("names", "vocab", "regex", "analysis", "samples")
#: the package's public faces: ``livetok.incremental`` and the one-import switch from tiktoken
#: (``import livetok.incremental.tiktoken_compat as tiktoken``); they join the rooms
FACES = (PACKAGE, f"{PACKAGE}.tiktoken_compat")


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
    """``core`` (the engine and the package face), a room of :data:`ROOMS` or the family a
    module belongs to."""
    rest = name[len(PACKAGE) + 1 :].split(".") if name != PACKAGE else [""]
    return rest[0] if len(rest) > 1 or rest[0] in (*FAMILIES, *COMPOSERS, *ROOMS) else "core"


def test_the_layout_is_read_right():
    """The parser sees the imports this test is about (a test that cannot fail is no test)."""
    wp = f"{PACKAGE}.wordpiece"
    assert _area(f"{wp}.encoding") == "wordpiece" and _area(f"{PACKAGE}.names.registry") == "names"
    assert _area(f"{PACKAGE}.document") == "core" and _area(f"{PACKAGE}.samples.corpora") == "samples"
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
    assert f"{PACKAGE}.names.registry" not in deps, "document imports the registry"
    assert f"{PACKAGE}.piece_encoding" in deps  # (the parser sees the module's imports)


def test_the_engine_and_the_vocabularies_are_apart():
    """The engine (the top-level modules: ``document``, ``tokenseq``, ``glue``, ``pairmerge``,
    ``piece_encoding``, ``stream``, ...) imports nothing from ``vocab/``, a family, ``hf``,
    ``analysis`` or ``samples``: only the package faces (:data:`FACES`) join them. And nothing
    but ``analysis`` and ``samples`` itself imports ``samples``."""
    wrong = []
    for name in MODULES:
        area = _area(name)
        for dep in sorted(_imports(name, with_type_checking=True)):
            dep_area = _area(dep)
            if area == "core" and name not in FACES and dep_area != "core":
                wrong.append(f"{name} imports {dep}: the engine takes objects, it finds nothing")
            if dep_area == "samples" and area not in ("analysis", "samples"):
                wrong.append(f"{name} imports {dep}: sample text is for studies and tests")
            if area == "vocab" and dep_area not in ("core", "vocab"):
                wrong.append(f"{name} imports {dep}: the vocabularies are read below the families")
            if dep_area == "names" and not (name in FACES or area in ("names", "analysis", "hf")):
                wrong.append(f"{name} imports {dep}: names are looked up above the families")
    assert not wrong, "\n".join(wrong)
    face = _imports(PACKAGE, with_type_checking=False)
    assert f"{PACKAGE}.names.registry" in face  # (the rule above sees the face's imports)


#: area -> the areas it may import besides itself (``face``: the package's ``__init__``);
#: ``docs/architecture.md`` ("The rooms of ``incremental/``") prints this table
ALLOWED = {
    "core": set(),
    "vocab": {"core"},
    "regex": {"core", "vocab"},
    **{f: {"core", "vocab", "regex"} for f in FAMILIES},
    "hf": {"core", "vocab", "regex", *FAMILIES},
    "names": {"core", "vocab", "regex", *FAMILIES, "hf"},
    "face": {"core", "vocab", "regex", *FAMILIES, "hf", "names"},
    "analysis": {"core", "vocab", "regex", *FAMILIES, "hf", "names", "samples"},
    "samples": set(),
}


def _room_of(name: str) -> str:
    return "face" if name in FACES else _area(name)


def test_each_room_imports_only_what_the_table_allows():
    """Every import of ``incremental/`` (deferred and ``TYPE_CHECKING`` ones too) goes from a
    room to one :data:`ALLOWED` lets it use."""
    assert set(ALLOWED) == {"core", "face", *FAMILIES, *COMPOSERS, *ROOMS}
    wrong = sorted(f"{name} ({_room_of(name)}) imports {dep} ({_room_of(dep)})"
                   for name in MODULES for dep in _imports(name, with_type_checking=True)
                   if _room_of(dep) != _room_of(name)
                   and _room_of(dep) not in ALLOWED[_room_of(name)])
    assert not wrong, "\n".join(wrong)


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
    graph = {name: _imports(name, with_type_checking=True) - {PACKAGE} for name in MODULES}
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


#: a module longer than this (lines) is either split along a concept line or says why it is one
MAX_LINES = 700
#: the start of the module docstring's paragraph that says what the one concept is and why
#: splitting it would scatter it
ONE_CONCEPT = "One concept:"
#: modules over MAX_LINES without that paragraph, relative to the repository root
BEING_SPLIT = {
    # being split (issue 28): the regex session's (its regex analysis moved to
    # incremental/regex/; the normalizers stay to be split or explained)
    "incremental/hf/normalizers.py",
}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _says_one_concept(path: Path) -> bool:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"), str(path))) or ""
    return any(par.lstrip().startswith(ONE_CONCEPT) for par in doc.split("\n\n"))


def _python_files() -> list[Path]:
    return [p for folder in ("incremental", "server")
            for p in sorted((ROOT / folder).rglob("*.py"))]


def test_one_concept_paragraph_is_found(tmp_path):
    (tmp_path / "a.py").write_text('"""Title.\n\nOne concept: x, because y.\n"""\n')
    (tmp_path / "b.py").write_text('"""Title. One concept: not a paragraph of its own."""\n')
    (tmp_path / "c.py").write_text("x = 1\n")
    assert [_says_one_concept(tmp_path / f"{n}.py") for n in "abc"] == [True, False, False]


def test_a_long_module_is_split_or_says_why_it_is_one_concept():
    """A module of ``incremental/`` or ``server/`` over ``MAX_LINES`` lines holds one concept
    and says so: a paragraph of its docstring starts with ``One concept:`` and says what the
    concept is and why splitting it would scatter it. A module that holds two things is split
    instead (``hf/pipeline.py`` and ``hf/encoding.py``, ``blocksums.py`` out of
    ``tokenseq.py``)."""
    wrong = []
    for path in _python_files():
        rel = path.relative_to(ROOT).as_posix()
        n = _lines(path)
        if rel not in BEING_SPLIT and n > MAX_LINES and not _says_one_concept(path):
            wrong.append(f"{rel}: {n} lines: split it along a concept line, or start a paragraph "
                         f"of its module docstring with {ONE_CONCEPT!r} that says what the one "
                         "concept is and why splitting it would scatter it")
    assert not wrong, "\n".join(wrong)


def test_the_being_split_list_holds_only_modules_still_to_split():
    """An entry of ``BEING_SPLIT`` whose module is now short or says why it is one concept is
    taken off the list (an entry whose module moved away is not checked here: the sessions
    moving them rename them while this list still holds both names)."""
    done = [rel for rel in sorted(BEING_SPLIT) if (ROOT / rel).is_file()
            and (_lines(ROOT / rel) <= MAX_LINES or _says_one_concept(ROOT / rel))]
    assert not done, f"take these off BEING_SPLIT (test_layout.py): {done}"
