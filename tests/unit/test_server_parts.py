"""The session in parts (issue 36, item 2): no module of ``server/`` changes another object's
private state, and what the server can do is said once (``capabilities.py``, read by the stdio
front and the server).

An object's underscore attributes are its own: a module that assigns one on another object
(``ls._not_kept[uri] = why``), deletes one, or calls a mutating method on one
(``ls._opening.pop(uri)``) reaches past that object's public API, and the two can no longer
be read apart. Reading one is not checked here. ``self`` and ``cls`` are the object itself.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

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


# -- one capabilities table ------------------------------------------------------------------

_CLIENTS: list[dict[str, Any]] = [
    {},
    {"general": {"positionEncodings": ["utf-8"]}},
    {"textDocument": {"synchronization": {"willSave": True, "willSaveWaitUntil": False}},
     "workspace": {"codeLens": {"refreshSupport": True}}, "window": {"workDoneProgress": True}},
]


def _initialize(client: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A server of this process and its answer to ``initialize`` from ``client``."""
    from livetok.server.lsp.session import create_server
    from livetok.server.lsp.transport import dispatch

    from .._lsp import MessageSink

    server = create_server()
    sink = MessageSink()
    server.protocol.set_writer(sink)
    dispatch(server.protocol, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                          "params": {"processId": None,
                                                     "capabilities": client}}).encode())
    [answer] = [m for m in sink.sent if m.get("id") == 1]
    return server, answer


@pytest.mark.parametrize("client", _CLIENTS, ids=["nothing", "utf-8", "willSave"])
def test_the_table_is_what_the_registered_handlers_give(client: dict[str, Any]) -> None:
    """The server announces ``capabilities.py``'s table; pygls's own reading of the handlers
    it registers, with their options, gives the same: a handler without its row in the table
    (or a row without its handler) fails here."""
    from lsprotocol import types
    from pygls.capabilities import ServerCapabilitiesBuilder

    from livetok.server.lsp.capabilities import announced

    server, answer = _initialize(client)
    unit = answer["result"]["capabilities"]["positionEncoding"]
    assert answer["result"]["capabilities"] == announced(client, unit)
    protocol = server.protocol
    fm = protocol.fm
    built = ServerCapabilitiesBuilder(
        protocol._converter.structure(client, types.ClientCapabilities),
        set({**fm.features, **fm.builtin_features}), fm.feature_options,
        list(fm.commands), types.TextDocumentSyncKind.Incremental, None, unit).build()
    assert protocol._converter.unstructure(built) == announced(client, unit)


@pytest.mark.parametrize("client", _CLIENTS, ids=["nothing", "utf-8", "willSave"])
def test_the_early_answer_is_the_servers(client: dict[str, Any]) -> None:
    """The stdio front's ``initialize`` answer (before pygls is imported) equals the
    server's, both read from the one table."""
    from livetok.server.lsp.front import initialize_result

    _, answer = _initialize(client)
    assert initialize_result({"processId": None, "capabilities": client}, None) == answer["result"]


def test_the_front_answers_with_the_servers_functions() -> None:
    """``EarlyServer`` answers the requests :mod:`.answers` holds, the functions the server's
    handlers call: none is written twice."""
    from livetok.server.lsp import answers, requests
    from livetok.server.lsp.front import EARLY_REQUESTS

    assert set(EARLY_REQUESTS) == set(answers.ANSWERS)
    for name in ("token_count", "hover", "code_lens"):  # the handlers of those requests
        names = getattr(requests, name).__code__.co_names
        assert "answers" in names and name in names, f"requests.{name} calls answers.{name}"
