"""``docs/architecture.md`` names the functions a keystroke passes through; they must exist,
be the ones a didChange runs, in that order, and be the ones the diagram shows.

The page marks them as numbered items that start with a bold, backticked import path
(``1. **`livetok.server.lsp.sync.did_change`**``); this test reads them from there, so renaming
or bypassing one of them fails here until the page says so.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import io
import json
import os
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, Callable

from lsprotocol import types

from livetok.server.lsp import session as app

from .._lsp import in_process_server

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
    """A well-formed didChange goes from its JSON to the first step; the same function is the
    one handler pygls would dispatch a didChange to (untyped: one converter), and goes on to
    the same second step."""
    from livetok.server.lsp import sync

    server = app.create_server()
    fm = server.protocol.fm
    assert types.TEXT_DOCUMENT_DID_CHANGE not in fm.builtin_features  # nothing in between
    handler = fm.features[types.TEXT_DOCUMENT_DID_CHANGE]
    assert getattr(handler, "func", handler) is sync.did_change_json
    assert resolve(keystroke_names()[0]) is sync.did_change_json
    assert not hasattr(sync, "did_change")  # no typed handler beside it
    called: list[str] = []
    codes = {sync.apply_changes.__code__: "apply_changes",
             inspect.unwrap(resolve(keystroke_names()[1])).__code__: "step 2"}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code in codes:
            called.append(codes[frame.f_code])

    server, sink, send = in_process_server()
    send("initialize", {"capabilities": {}}, msg_id=1)
    uri = "file:///a.txt"
    send("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "plaintext", "version": 1, "text": "hello world\n" * 20}})
    message = server.protocol.structure_message({
        "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 5},
                                          "end": {"line": 0, "character": 5}}, "text": ","}]}})
    sys.setprofile(profile)
    try:
        server.protocol.handle_message(message)  # pygls's dispatch
    finally:
        sys.setprofile(None)
    assert called == ["apply_changes", "step 2"]
    assert server.store.get(uri).doc.text.startswith("hello, world")


def test_a_didchange_runs_the_five_in_order() -> None:
    server, sink, send = in_process_server()

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


#: the distinct livetok functions one keystroke runs, from the bytes read to the count written
#: (:func:`test_a_keystroke_from_the_bytes_reaches_the_core_once`; the largest of the three
#: kinds there). History: 61 (2026-11-29, from ``dispatch()``, not counting the framing); 66
#: (2026-12-07 morning: the one converter ``read_did_change``, the pending batch's ``add`` and
#: ``apply``, ``OpenDocument._replacements``, ``framing.refusal``). Measured honestly from the
#: bytes (issue 36, decision 1), 2026-12-07 evening: a plain character 79, a character on an
#: emoji line under UTF-16 82 (the core reads the line prefix: ``Document.slice``, ...), Enter
#: 88 (the line index splits a line: ``LineIndex.replace`` and its helpers); with the
#: framing's 6 (``Framer.feed``, ``frames``, ``_header_line`` ...), the stdin reader's callback,
#: and the core's column conversion (``Document.edit_at``, ``columns.spot_cp``). A guard, not
#: a target: it keeps what was reached from growing back unnoticed. 2026-12-07 21:05 (H9):
#: plain 76, Enter 85, emoji 84: the usual header block read in one match (no
#: ``_header_line`` / ``_end_of_headers``), the count written by ``notify_json`` itself; the
#: line index's ``_refresh_cum`` runs when a keystroke reads a block sum an earlier one left
#: out of date (measured on a tree with other in-flight core changes). 2026-12-07 22:30 (A):
#: plain 68, Enter 77, emoji 77: a read that is one whole frame goes from ``Framer.whole`` to
#: ``dispatch`` (``transport.take``: no ``feed``, ``frames``, ``pump``, ``handle_frame``), a
#: quick document's didChange is applied without entering the pending batch's table
#: (``PendingChanges._apply``), and the count is written from its text
#: (``publishing.count_message``, ``LivetokProtocol.write_json``: no ``CountInfo``, ``to_json``,
#: ``notify_json``). 22:50 (A): plain 66, Enter 75, emoji 75: a keystroke read alone takes
#: ``sync.did_change_json``'s lane (``OpenDocument.keystroke``, ``Publisher.publish_now``: no
#: pending batch, ``OpenDocument.apply``, ``LivetokServer.applied``, ``Publisher.changed`` or
#: ``publish``); 23:35, the lane for ranges within one line: 64 / 73 / 75.
KEYSTROKE_FUNCTIONS = 75

#: a 1 MB document of plain lines, line 300 holding an emoji (two UTF-16 units)
_LINE = "hello world, this is line of a plain document\n"
_EMOJI_LINE = "an emoji 😀 here, then more words\n"


def _framed(msg: dict[str, Any]) -> bytes:
    body = json.dumps(msg).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class _Output:
    """The server's writer in the test: keeps the counts it writes (each wakes the test), and
    the event loop it writes from (the test runs callbacks there)."""

    def __init__(self) -> None:
        self.counts: list[dict[str, Any]] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.wrote = threading.Condition()

    def write(self, data: bytes) -> None:
        self.loop = asyncio.get_running_loop()
        msg = json.loads(data.partition(b"\r\n\r\n")[2])
        with self.wrote:
            if msg.get("method") == "livetok/didChangeTokenCount":
                self.counts.append(msg["params"])
            self.wrote.notify_all()

    def close(self) -> None:
        pass

    def wait(self, pred: Callable[[], bool], what: str) -> None:
        with self.wrote:
            assert self.wrote.wait_for(pred, timeout=120), f"hang guard: no {what}"


def _in_loop(out: _Output, fn: Callable[[], None]) -> None:
    """Run ``fn`` in the server's thread (a callback of its event loop) and wait for it."""
    done = threading.Event()

    def run() -> None:
        fn()
        done.set()

    assert out.loop is not None
    out.loop.call_soon_threadsafe(run)
    assert done.wait(120), "hang guard: the event loop did not run the callback"


KINDS = {
    # a plain character typed inside a plain line
    "plain": ({"start": {"line": 100, "character": 5}, "end": {"line": 100, "character": 5}}, "x"),
    # Enter in the middle of a plain line
    "enter": ({"start": {"line": 400, "character": 11}, "end": {"line": 400, "character": 11}},
              "\n"),
    # a character after the emoji of line 300 (UTF-16: the emoji is two units)
    "emoji": ({"start": {"line": 300, "character": 12}, "end": {"line": 300, "character": 12}},
              "!"),
}


def test_a_keystroke_from_the_bytes_reaches_the_core_once() -> None:
    """Three keystrokes into a 1 MB document, each from its framed bytes written to the
    server's stdin (``transport.serve_stdio``'s reader, in the server's thread) to the count
    it writes: a plain character, Enter, and a character on a line holding an emoji under
    UTF-16. Each calls into the core once (``Document.edit_at``: the position's columns are
    converted on the core's text, the characters around a line break read there), and the
    distinct livetok functions each runs stay within :data:`KEYSTROKE_FUNCTIONS`. The
    profile hook is installed in the server's thread between keystrokes, by a callback of its
    event loop; nothing is timed."""
    from livetok.server.lsp.session import create_server
    from livetok.server.lsp.transport import serve_stdio

    lines = [_LINE] * 22_000
    lines[300] = _EMOJI_LINE
    text = "".join(lines)[:1_000_000]
    server = create_server()
    out = _Output()
    rfd, wfd = os.pipe()
    stdin = os.fdopen(rfd, "rb", buffering=0)
    status: list[int] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        thread = threading.Thread(target=lambda: status.append(serve_stdio(
            server.protocol, stdin, io.BytesIO(), pool, writer=out)), daemon=True)
        thread.start()
        uri = "file:///big.txt"
        with os.fdopen(wfd, "wb", buffering=0) as pipe:
            pipe.write(_framed({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "capabilities": {"general": {"positionEncodings": ["utf-16"]}}}}))
            pipe.write(_framed({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            pipe.write(_framed({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": uri, "languageId": "plaintext", "version": 1,
                                 "text": text}}}))
            out.wait(lambda: bool(out.counts), "count of the open")
            # built, its count published, nothing left pending from the open
            settled: list[bool] = []
            while not settled or not settled[-1]:
                _in_loop(out, lambda: settled.append(
                    not server.background.busy_uris() and not server.publisher.due))
            length = len(text)
            od = server.store.get(uri)
            for version, (kind, (rng, typed)) in enumerate(KINDS.items(), 2):
                # whether a didChange is applied at once or batched depends on how long the
                # document's last apply took (pending.MERGE_S, a wall-clock reading: the
                # 1 MB open or a busy machine can make it slow); the path of an ordinary
                # keystroke, the one counted here, follows a quick apply: start from one
                _in_loop(out, lambda: setattr(od, "apply_seconds", 0.0))
                functions, crossings = _profiled_keystroke(out, pipe, uri, version, rng, typed)
                length += len(typed)
                count = out.counts[-1]
                assert count["version"] == version and count["characters"] == length, kind
                assert crossings == ["OpenDocument._keystroke -> Document.edit_at"], \
                    (kind, crossings)
                # read alone, into a document that waits for nothing: the keystroke's lane
                assert "server/lsp/documents.py:OpenDocument.keystroke" in functions, kind
                assert len(functions) <= KEYSTROKE_FUNCTIONS, \
                    f"{kind}: {len(functions)} functions\n" + "\n".join(functions)
        thread.join(120)  # the pipe closed: the server reads the end of its input
    assert status == [0]
    final = server.store.get(uri).doc
    # the three edits, the slow way: 'x' at code point 5 of line 100, '!' at code point 11
    # of line 300 (after the emoji and the space), line 400 cut at code point 11
    lines[100] = lines[100][:5] + "x" + lines[100][5:]
    lines[300] = lines[300][:11] + "!" + lines[300][11:]
    lines[400] = lines[400][:11] + "\n" + lines[400][11:]
    assert final is not None and final.text == "".join(lines)[:1_000_003]


def _profiled_keystroke(out: _Output, pipe: Any, uri: str, version: int, rng: dict[str, Any],
                        typed: str) -> tuple[list[str], list[str]]:
    """Write one framed didChange with the profile hook on in the server's thread; the
    distinct livetok functions it ran and its calls from the server into the core."""
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

    before = len(out.counts)
    _in_loop(out, lambda: sys.setprofile(profile))
    try:
        pipe.write(_framed({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": rng, "text": typed}]}}))
        out.wait(lambda: len(out.counts) > before, f"count of version {version}")
    finally:
        _in_loop(out, lambda: sys.setprofile(None))
    functions = sorted(f"{path[len(root):]}:{qual}" for path, qual in seen)
    return functions, crossings
