"""Every ``didChange`` is read from its JSON by one handler (``sync.did_change_json``), never
typed by lsprotocol: a keystroke the session hands over (``take_notification``) and one pygls
dispatches (``LivetokProtocol.structure_message`` leaves its params as JSON) end the same;
the converter refuses what LSP does not allow, naming the field."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from livetok.server.lsp import sync
from livetok.server.lsp.session import LivetokServer, create_server
from livetok.server.lsp.transport import dispatch

from .._lsp import MessageSink
from tests._refs import tiktoken_ref

URI = "file:///a.txt"
TEXT = "naïve café 😀 東京\nsecond line here\n\nfourth, last\n"


def _server() -> LivetokServer:
    server = create_server()
    server.protocol.set_writer(MessageSink())
    for msg in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"capabilities": {}}},
                {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                    "uri": URI, "languageId": "plaintext", "version": 1, "text": TEXT}}}):
        dispatch(server.protocol, json.dumps(msg).encode())
    return server


def _typed(server: LivetokServer, params: dict[str, Any]) -> None:
    """Through pygls's own dispatch (structured, then ``handle_message``), not the session's
    shortcut."""
    message = server.protocol.structure_message(
        {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params})
    assert message.params is params  # not typed: its JSON, as sent
    server.protocol.handle_message(message)


def _pos(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


PLAIN = [
    [{"range": {"start": _pos(1, 3), "end": _pos(1, 3)}, "text": "x"}],
    [{"range": {"start": _pos(0, 0), "end": _pos(2, 0)}, "text": "", "rangeLength": 7}],
    [{"text": "a whole new text\nof two lines"}],
    [{"range": {"start": _pos(0, 12), "end": _pos(0, 14)}, "text": "🙂"},  # UTF-16 columns
     {"range": {"start": _pos(3, 99), "end": _pos(9, 0)}, "text": "!"}],  # clamped, logged
    [{"range": {"start": _pos(0, 1), "end": _pos(0, 1), "x": 2}, "text": "x"}],  # not read
    # members LSP does not define are ignored, by both paths
    [{"range": {"start": _pos(0, 1), "end": _pos(0, 1)}, "text": "x", "foo": 1}],
    [{"text": "whole", "foo": 1}],
]


@pytest.mark.parametrize("changes", PLAIN)
def test_the_json_path_does_what_the_pygls_path_does(changes):
    params = {"textDocument": {"uri": URI, "version": 2}, "contentChanges": changes}
    assert sync.did_change_json(_server(), json.loads(json.dumps(params))) is True
    sent, typed = _server(), _server()  # through the session, and typed
    dispatch(sent.protocol, json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange",
                                        "params": params}).encode())
    _typed(typed, params)
    assert sent.store.get(URI).text() == typed.store.get(URI).text() != TEXT
    assert sent.store.get(URI).token_count == typed.store.get(URI).token_count
    assert sent.store.get(URI).version == typed.store.get(URI).version == 2


def _change(**over: Any) -> dict[str, Any]:
    change: dict[str, Any] = {"range": {"start": _pos(1, 1), "end": _pos(1, 1)}, "text": "x"}
    change.update(over)
    return change


#: issue 34 row 11: what lsprotocol's typing converted instead of refusing (``"text": null``
#: inserted "None", a list its repr, ``"1"``/``1.5``/``true`` became line 1), and a version
#: past LSP's integer that the JSON path applied; each with the field the refusal names
MALFORMED = [
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [_change(text=None)]},
     "contentChanges[0].text"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [_change(text=["a", "b"])]},
     "contentChanges[0].text"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": 5}]},
     "contentChanges[0].text"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        _change(range={"start": {"line": "1", "character": 1}, "end": _pos(1, 1)})]},
     "range.start.line"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        _change(range={"start": _pos(1, 1), "end": {"line": 1.5, "character": 1}})]},
     "range.end.line"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        _change(range={"start": {"line": True, "character": 1}, "end": _pos(1, 1)})]},
     "range.start.line"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        _change(range={"start": _pos(1, -1), "end": _pos(1, 1)})]},
     "range.start.character"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        _change(range={"start": _pos(1, 1 << 31), "end": _pos(1, 1)})]},
     "range.start.character"),
    ({"textDocument": {"uri": URI, "version": 1 << 31}, "contentChanges": [_change()]},
     "textDocument.version"),
    ({"textDocument": {"uri": URI, "version": "2"}, "contentChanges": [_change()]},
     "textDocument.version"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": {}}, "contentChanges"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        _change(range=None)]}, "range"),
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        _change(rangeLength=-1)]}, "rangeLength"),
    # a good change before a bad one: the message is refused whole
    ({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        _change(), _change(text=None)]}, "contentChanges[1].text"),
]


@pytest.mark.parametrize("params,field", MALFORMED)
def test_the_converter_refuses_what_lsp_does_not_allow(params, field):
    with pytest.raises(sync.ChangeRefused, match=re.escape(field)):
        sync.read_did_change(params)


@pytest.mark.parametrize("params,field", MALFORMED)
def test_a_malformed_didchange_changes_nothing_and_is_told_once(params, field):
    """Through the session: the text stays the last good one, the document is out of sync
    (requests say how to re-sync), the client is told once however many bad changes come,
    and a full-text change re-syncs it."""
    server = _server()
    warned: list[str] = []
    server.warn = warned.append  # type: ignore[method-assign]
    for _ in range(3):
        dispatch(server.protocol, json.dumps({
            "jsonrpc": "2.0", "method": "textDocument/didChange", "params": params}).encode())
    od = server.store.get(URI)
    assert od.text() == TEXT and od.version == 1
    assert od.out_of_sync is not None and field in od.out_of_sync
    assert len(warned) == 1 and "out of sync" in warned[0] and field in warned[0], warned
    shown = [m for m in server.protocol.writer.sent if m.get("method") == "window/showMessage"]
    assert len(shown) == 1 and shown[0]["params"]["message"] == warned[0]
    dispatch(server.protocol, json.dumps({
        "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": 5},
            "contentChanges": [{"text": "fresh"}]}}).encode())
    assert od.out_of_sync is None and od.text() == "fresh"


def test_the_typed_path_uses_the_same_converter(monkeypatch):
    """A didChange pygls dispatches is read by ``read_did_change`` too (there is no typed
    handler)."""
    seen: list[Any] = []
    real = sync.read_did_change
    monkeypatch.setattr(sync, "read_did_change", lambda p: seen.append(p) or real(p))
    server = _server()
    _typed(server, {"textDocument": {"uri": URI, "version": 2},
                    "contentChanges": [_change(text="y")]})
    assert len(seen) == 1 and server.store.get(URI).text().startswith("naïve café 😀 東京\nsy")


@pytest.mark.parametrize("params", [
    None, [], {"textDocument": {"uri": URI}, "contentChanges": []},
    {"textDocument": [], "contentChanges": []},
    {"textDocument": {"uri": 5, "version": 2}, "contentChanges": []},
])
def test_params_without_a_document_are_refused_and_logged(params):
    server = _server()
    seen: list[str] = []
    server.protocol.on_invalid_notification = lambda method, p, why: seen.append(why)
    assert sync.did_change_json(server, params) is True
    assert server.store.get(URI).text() == TEXT  # nothing applied
    assert len(seen) == 1


def test_an_invalid_didchange_through_the_session_is_reported_as_before():
    """Through the protocol: refused by the converter and reported by the session's
    invalid-notification handler, which re-reads nothing it cannot trust."""
    server = _server()
    seen: list[str] = []
    server.protocol.on_invalid_notification = lambda method, params, why: seen.append(method)
    dispatch(server.protocol, json.dumps({
        "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{"range": {"start": _pos(-1, 0), "end": _pos(0, 0)},
                                "text": "x"}]}}).encode())
    assert seen == ["textDocument/didChange"]


def test_random_keystrokes_through_the_session_stay_exact():
    """Seeded: 300 inserts and deletes, sent as messages (the JSON path), then the count
    against tiktoken."""
    rng = random.Random(28)
    server = _server()
    text = TEXT
    for version in range(2, 302):
        lines = text.split("\n")
        line = rng.randrange(len(lines))
        col = rng.randint(0, len(lines[line]))
        start = sum(len(x) + 1 for x in lines[:line]) + col
        if rng.random() < 0.3 and start < len(text):
            new, end = "", min(len(text), start + rng.randint(1, 3))
        else:
            new, end = rng.choice(["a", " ", "\n", "é", "東", "ab c"]), start
        end_line = text.count("\n", 0, end)

        def units(s: str) -> int:
            return len(s.encode("utf-16-le")) // 2

        line_start = text.rfind("\n", 0, start) + 1
        end_line_start = text.rfind("\n", 0, end) + 1
        change = {"range": {"start": _pos(line, units(text[line_start:start])),
                            "end": _pos(end_line, units(text[end_line_start:end]))},
                  "text": new}
        dispatch(server.protocol, json.dumps({
            "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": URI, "version": version},
                "contentChanges": [change]}}).encode())
        text = text[:start] + new + text[end:]
    od = server.store.get(URI)
    assert od.text() == text
    assert od.token_count == len(tiktoken_ref("o200k_base").encode(text))


def test_a_failing_keystroke_is_reported_and_the_session_goes_on(monkeypatch):
    """A failure in the JSON path is told to the user as a typed handler's failure is
    (``report_server_error``), and the next messages are handled."""
    server = _server()
    warned: list[str] = []
    monkeypatch.setattr(server, "warn", warned.append)

    def broken(*args: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(sync, "apply_changes", broken)
    change = {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": URI, "version": 2},
        "contentChanges": [{"range": {"start": _pos(0, 0), "end": _pos(0, 0)}, "text": "x"}]}}
    dispatch(server.protocol, json.dumps(change).encode())
    assert warned == ["livetok: handling a notification failed (RuntimeError: boom); the "
                      "server keeps running"]
    monkeypatch.undo()
    change["params"]["textDocument"]["version"] = 3
    dispatch(server.protocol, json.dumps(change).encode())
    assert server.store.get(URI).text() == "x" + TEXT
