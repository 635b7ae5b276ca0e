"""The rooms of ``server/`` (``docs/architecture.md``): which may import which.

* ``lsp/``: the LSP session (server, handlers, documents, positions, the wire); the only room,
  with ``cli/serve.py`` that starts it, that imports pygls or lsprotocol;
* ``cli/``: the ``livetok`` command, one module per subcommand; it may start the session and
  the demo, nothing imports it but ``__main__``;
* ``budgets/``: token budgets as code, pure: it imports no other room and no LSP library, so
  ``livetok check`` and the session share it;
* ``demo/``: the web demo's site; it serves the LSP session;
* ``workspace/``: the workspace token map, pure like ``budgets`` (whose budget files give its
  include/exclude globs): ``livetok count -r`` and the session's ``livetok/workspaceCounts``
  share it;
* the modules at the top (``trust``, ``walk``, ``forked``, ``parallel_open``, ``version``)
  are shared helpers: they import ``budgets`` at most.

Imports inside functions count (a deferred import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ..conftest import ROOT

SOURCE = ROOT / "server"
ROOMS = ("lsp", "cli", "budgets", "demo", "workspace")
#: room -> the rooms it may import (besides itself)
ALLOWED = {
    "lsp": {"budgets", "workspace"},
    "cli": {"lsp", "budgets", "demo", "workspace"},
    "budgets": set(),
    "demo": {"lsp"},
    "workspace": {"budgets"},
    "top": {"budgets"},
}
LSP_LIBRARIES = ("pygls", "lsprotocol")
MAY_USE_LSP_LIBRARIES = {"lsp", "cli/serve.py"}


def _room(path: Path) -> str:
    rel = path.relative_to(SOURCE)
    return rel.parts[0] if len(rel.parts) > 1 else "top"


def _imports(path: Path, text: str | None = None) -> set[str]:
    """The absolute names of what ``path`` imports; a relative import is resolved from the
    module's own package (``from ..lsp import views`` in ``budgets/`` is ``livetok.server.lsp``)."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text, str(path))
    package = ["livetok", "server", *path.relative_to(SOURCE).parent.parts]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out.add(module)
            out.update(f"{module}.{a.name}" for a in node.names)
    return out


def test_relative_imports_are_resolved() -> None:
    """A relative import counts as the absolute one (a test that cannot fail is no test)."""
    found = _imports(SOURCE / "budgets" / "x.py", "from ..lsp import views\nfrom . import config\n")
    assert {"livetok.server.lsp.views", "livetok.server.budgets.config"} <= found


MODULES = sorted(p for p in SOURCE.rglob("*.py") if "static" not in p.parts)


def test_every_module_is_in_a_room_or_a_shared_helper() -> None:
    top = {p.name for p in MODULES if _room(p) == "top"}
    assert top <= {"__init__.py", "__main__.py", "trust.py", "walk.py", "forked.py",
                   "parallel_open.py", "version.py"}, top
    assert {_room(p) for p in MODULES} <= {*ROOMS, "top"}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SOURCE)))
def test_a_room_imports_only_the_rooms_it_may(path: Path) -> None:
    room = _room(path)
    if path.name == "__main__.py":
        return  # ``python -m livetok.server``: starts the command line's serve
    used = {name.split(".")[2] for name in _imports(path)
            if name.startswith("livetok.server.") and name.split(".")[2] in ROOMS}
    assert used - {room} <= ALLOWED[room], f"{path.relative_to(SOURCE)} imports {used - {room}}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SOURCE)))
def test_only_the_session_uses_the_lsp_libraries(path: Path) -> None:
    rel = str(path.relative_to(SOURCE))
    if _room(path) in MAY_USE_LSP_LIBRARIES or rel in MAY_USE_LSP_LIBRARIES:
        return
    libs = {n.split(".")[0] for n in _imports(path)} & set(LSP_LIBRARIES)
    assert not libs, f"{rel} imports {libs}: LSP types belong in server/lsp/"
