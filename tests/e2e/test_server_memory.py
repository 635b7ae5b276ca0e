"""The server keeps nothing per message: pygls's pending-handler table stays empty while a
client types (it grew by one entry per didOpen/didChange/didClose before)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from livetok.server.lsp.session import create_server
from livetok.server.lsp.transport import dispatch

from .._lsp import MessageSink, poll


def _send(server: Any, method: str, params: Any, msg_id: int | None = None) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        message["id"] = msg_id
    dispatch(server.protocol, json.dumps(message).encode())


async def _type_into_a_document(n_edits: int) -> tuple[Any, MessageSink]:
    server = create_server()
    sink = MessageSink()
    server.protocol.set_writer(sink)
    _send(server, "initialize", {"capabilities": {}, "processId": None}, msg_id=1)
    _send(server, "initialized", {})
    uri = "file:///typing.txt"
    _send(server, "textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "plaintext", "version": 0, "text": "hello world\n" * 50}})
    for i in range(n_edits):
        _send(server, "textDocument/didChange", {
            "textDocument": {"uri": uri, "version": i + 1},
            "contentChanges": [{"range": {"start": {"line": i % 50, "character": 5},
                                          "end": {"line": i % 50, "character": 5}},
                                "text": "x"}]})
        if i % 100 == 0:
            rid = 1000 + i
            _send(server, "livetok/tokenCount", {"textDocument": {"uri": uri}}, msg_id=rid)
            # the answer may wait for the pending batch (a slow apply before it: the first
            # ones, cold): the cancel is sent once it is answered, whatever the clock said
            assert await poll(lambda: any(m.get("id") == rid for m in sink.sent), every=0.001)
            _send(server, "$/cancelRequest", {"id": rid})  # answered already: no warning
        await asyncio.sleep(0)
    _send(server, "workspace/didChangeConfiguration", {"settings": {"other": {}}})
    _send(server, "textDocument/didClose", {"textDocument": {"uri": uri}})
    for _ in range(3):
        await asyncio.sleep(0)
    return server, sink


async def test_pending_handler_table_stays_empty_while_typing(caplog):
    server, sink = await _type_into_a_document(1000)
    assert server.protocol._request_futures == {}
    answers = [m for m in sink.sent if m.get("id") is not None and m.get("id") != 1]
    assert len(answers) == 10 and all("result" in m for m in answers)
    assert not [r for r in caplog.records if "Cancel notification" in r.getMessage()]
