"""``docs/architecture.md`` names the functions a keystroke passes through; they must exist,
be the ones a didChange runs, in that order, and be the ones the diagram shows.

The page marks them as numbered items that start with a bold, backticked import path
(``1. **`livetok.server.lsp.sync.did_change`**``); this test reads them from there, so renaming
or bypassing one of them fails here until the page says so.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, Callable

from lsprotocol import types

from livetok.server.lsp import session as app

from .._lsp import MessageSink, in_process_server

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
SVG = ROOT / "docs" / "img" / "architecture.svg"
_ITEM = re.compile(r"^\d+\. \*\*`(livetok\.[\w.]+)`\*\*", re.M)


def keystroke_names() -> list[str]:
    """The import paths of the numbered keystroke steps on the page, in order."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## From a keystroke to the count on screen", 1)[1].split("\n## ", 1)[0]
    return _ITEM.findall(section)


def resolve(path: str) -> Callable[..., Any]:
    """The object at ``path``: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj  # type: ignore[no-any-return]
    raise ImportError(f"no module in {path!r}")


def test_the_page_names_five_functions_that_exist() -> None:
    names = keystroke_names()
    assert len(names) == 5, f"docs/architecture.md should number 5 keystroke steps: {names}"
    for name in names:
        assert inspect.isfunction(inspect.unwrap(resolve(name))), f"{name} is not a function"


def test_the_diagram_shows_the_same_five() -> None:
    svg = SVG.read_text(encoding="utf-8")
    for i, name in enumerate(keystroke_names(), 1):
        short = ".".join(name.split(".")[-2:])  # sync.did_change, OpenDocument.apply, ...
        assert f"{i}  {short}</text>" in svg, f"the diagram has no box '{i}  {short}'"


def test_the_first_is_what_the_session_calls_on_a_didchange() -> None:
    """A well-formed didChange goes from its JSON to the first step; pygls's typed handler
    (for the rest, which lsprotocol then validates) is the function the page names after it
    in the text, and goes on to the same second step."""
    from livetok.server.lsp import sync

    server = app.create_server()
    fm = server.protocol.fm
    assert types.TEXT_DOCUMENT_DID_CHANGE not in fm.builtin_features  # nothing in between
    handler = fm.features[types.TEXT_DOCUMENT_DID_CHANGE]
    assert getattr(handler, "func", handler) is sync.did_change
    assert resolve(keystroke_names()[0]) is sync.did_change_json
    called: list[str] = []
    codes = {sync.apply_changes.__code__: "apply_changes",
             inspect.unwrap(resolve(keystroke_names()[1])).__code__: "step 2"}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code in codes:
            called.append(codes[frame.f_code])

    server, sink, send = _session()
    send("initialize", {"capabilities": {}}, msg_id=1)
    uri = "file:///a.txt"
    send("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "plaintext", "version": 1, "text": "hello world\n" * 20}})
    sys.setprofile(profile)
    try:
        sync.did_change(server, types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=0, character=5),
                                  end=types.Position(line=0, character=5)), text=",")]))
    finally:
        sys.setprofile(None)
    assert called == ["apply_changes", "step 2"]
    assert server.store.get(uri).doc.text.startswith("hello, world")


def _session() -> tuple[Any, MessageSink, Callable[..., None]]:
    """A server in this process, what it writes, and ``send(method, params, msg_id=None)``."""
    return in_process_server()


def test_a_didchange_runs_the_five_in_order() -> None:
    server, sink, send = _session()

    send("initialize", {"capabilities": {}}, msg_id=1)
    uri = "file:///a.txt"
    send("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "plaintext", "version": 1, "text": "hello world\n" * 20}})
    codes = {inspect.unwrap(resolve(n)).__code__: n for n in keystroke_names()}
    called: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        code: CodeType = frame.f_code
        if event == "call" and code in codes and codes[code] not in called:
            called.append(codes[code])

    sink.sent.clear()
    sys.setprofile(profile)
    try:
        send("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 3, "character": 5},
                                          "end": {"line": 3, "character": 5}}, "text": ","}]})
    finally:
        sys.setprofile(None)
    assert called == keystroke_names()
    (count,) = [m["params"] for m in sink.sent if m.get("method") == "livetok/didChangeTokenCount"]
    assert count["version"] == 2 and count["characters"] == 12 * 20 + 1


#: the distinct livetok functions one keystroke runs, measured (2026-11-29, with the didChange
#: read from its JSON): 20 in the server (4 of them reading the message: ``dispatch``,
#: ``decode``, ``nesting_exceeds``, ``take_notification``) and 41 in the core's edit. Issue 28
#: asks for 40 in all; this bound keeps what was reached from growing back. 2026-12-07: 25 in
#: the server and 41 in the core; the server's 5 more are the one converter of every didChange
#: (``sync.read_did_change``, issue 34 row 11), the batch a didChange joins and its
#: application (``PendingChanges.add``, ``.apply``: the server keeps up with typing, issue 35
#: item 1), the generator that gathers a batch's changes into one core edit
#: (``OpenDocument._replacements``) and the message's limits asked of the one function the
#: stdio front shares (``framing.refusal``, issue 34 row 14). +1 (issue 35): the byte-level
#: encodings offer quiet punctuation runs, so an edit first asks ``Document._stretch``.
KEYSTROKE_FUNCTIONS = 67


async def test_a_keystroke_in_a_big_document_reaches_the_core_once() -> None:
    """One didChange (a one-character insert in a 1 MB document), its count published by the
    event loop: the server calls into the core once (the edit: position conversion, the count
    and the budget decision read nothing there), and the distinct livetok functions it runs
    stay within :data:`KEYSTROKE_FUNCTIONS`."""
    import asyncio

    server, sink, send = _session()

    def counts() -> list[dict[str, Any]]:
        return [m["params"] for m in sink.sent if m.get("method") == "livetok/didChangeTokenCount"]

    send("initialize", {"capabilities": {}}, msg_id=1)
    send("initialized", {})
    uri = "file:///big.txt"
    text = ("hello world, this is line of a plain document\n" * 22_000)[:1_000_000]
    send("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})
    # built, its count published (not only the first count of a big open: the coalesced
    # publish of the open must not fall into the keystroke's)
    while server.background.busy_uris() or not counts() or server.publisher.due:
        await asyncio.sleep(0.01)
    sink.sent.clear()
    root = str(ROOT) + "/"
    core, srv = root + "incremental/", root + "server/"
    seen: set[tuple[str, str]] = set()
    crossings: list[str] = []

    def qualname(code: CodeType) -> str:
        return getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        name = frame.f_code.co_filename
        if name.startswith((core, srv)):
            seen.add((name, qualname(frame.f_code)))
            caller = frame.f_back
            if name.startswith(core) and caller is not None and (
                    caller.f_code.co_filename.startswith(srv)):
                crossings.append(f"{qualname(caller.f_code)} -> {qualname(frame.f_code)}")

    sys.setprofile(profile)
    try:
        send("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 300, "character": 5},
                                          "end": {"line": 300, "character": 5}}, "text": "x"}]})
        while not counts():
            await asyncio.sleep(0.001)
    finally:
        sys.setprofile(None)
    (count,) = counts()
    assert count["version"] == 2 and count["characters"] == len(text) + 1
    assert crossings == ["OpenDocument.apply -> Document.edit"], crossings
    functions = sorted(f"{path[len(root):]}:{qual}" for path, qual in seen)
    assert len(functions) <= KEYSTROKE_FUNCTIONS, "\n".join(functions)
