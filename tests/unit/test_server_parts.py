"""The session in parts (issue 36, item 2): no module of ``server/`` changes another object's
private state, and what the server can do is said once.

An object's underscore attributes are its own: a module that assigns one on another object
(``ls._not_kept[uri] = why``), deletes one, or calls a mutating method on one
(``ls._opening.pop(uri)``) reaches past that object's public API, and the two can no longer
be read apart. Reading one is not checked here. ``self`` and ``cls`` are the object itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ..conftest import ROOT

SOURCE = ROOT / "server"
MODULES = sorted(p for p in SOURCE.rglob("*.py") if "static" not in p.parts)
#: methods that change the container they are called on
MUTATORS = frozenset({"append", "add", "clear", "discard", "extend", "insert", "pop",
                      "popitem", "remove", "setdefault", "update"})


def _private(node: ast.AST) -> bool:
    """``x._name`` (not a dunder) where ``x`` is not ``self`` or ``cls``."""
    return (isinstance(node, ast.Attribute) and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")))


def _written(target: ast.AST) -> ast.AST:
    """What an assignment target writes into: ``a.b`` for ``a.b[k]`` (and ``a.b[k][j]``)."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return target


def foreign_private_writes(source: str) -> list[str]:
    """Each place in ``source`` that assigns, deletes or mutates another object's underscore
    attribute, as ``"line: code"``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in MUTATORS):
            targets = [node.func.value]
        for target in targets:
            for one in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if _private(_written(one)):
                    out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def test_the_finder_finds_what_it_should() -> None:
    found = foreign_private_writes(
        "ls._not_kept[uri] = why\n"
        "ls._opening.pop(uri, None)\n"
        "a, ls._x = 1, 2\n"
        "del server._published[uri]\n"
        "ls.protocol._shutdown = True\n"
        "ls._n += 1\n")
    assert sorted(f.split(":")[0] for f in found) == ["1", "2", "3", "4", "5", "6"], found
    assert foreign_private_writes(
        "self._x = 1\n"
        "cls._y[k] = 2\n"
        "self._d.pop(k)\n"
        "ls.store.add(od)\n"
        "n = ls._reading_is_not_writing\n"
        "obj.__dict__ = {}\n") == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SOURCE)))
def test_no_module_writes_another_objects_private_attributes(path: Path) -> None:
    found = foreign_private_writes(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.relative_to(SOURCE)} changes another object's private state "
                       "(give that object a public method): " + "; ".join(found))
