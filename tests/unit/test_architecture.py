"""``docs/architecture.md`` names the functions a keystroke passes through; they must exist,
be the ones a didChange runs, in that order, and be the ones the diagram shows.

The page marks them as numbered items that start with a bold, backticked import path
(``1. **`livetok.server.lsp.session.did_change`**``); this test reads them from there, so renaming
or bypassing one of them fails here until the page says so.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, Callable

from lsprotocol import types

from livetok.server.lsp import session as app
from livetok.server.lsp.transport import dispatch

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
        short = ".".join(name.split(".")[-2:])  # app.did_change, OpenDocument.apply, ...
        assert f"{i}  {short}</text>" in svg, f"the diagram has no box '{i}  {short}'"


def test_the_first_is_the_didchange_handler_pygls_calls() -> None:
    server = app.create_server()
    fm = server.protocol.fm
    assert types.TEXT_DOCUMENT_DID_CHANGE not in fm.builtin_features  # nothing in between
    handler = fm.features[types.TEXT_DOCUMENT_DID_CHANGE]
    assert getattr(handler, "func", handler) is resolve(keystroke_names()[0])


class _Sink:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[-1]))

    def close(self) -> None:
        pass


def test_a_didchange_runs_the_five_in_order() -> None:
    server = app.create_server()
    sink = _Sink()
    server.protocol.set_writer(sink)

    def send(method: str, params: dict[str, Any], msg_id: int | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            msg["id"] = msg_id
        dispatch(server.protocol, json.dumps(msg).encode())

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
