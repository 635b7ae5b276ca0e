"""Helpers for the end-to-end server tests: start ``python -m livetok.server`` under pytest-lsp's
client, keep the client's own copy of each document, and convert positions the slow way.

The position reference here is deliberately independent of ``livetok.server.lsp.positions``:
it counts line breaks with ``str.count`` on the client's full text and measures columns by
encoding the line prefix, so a bug in the server's codec cannot hide in the test.
"""

from __future__ import annotations

import asyncio
import json
import bisect
import contextlib
import os
import re
import sys
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = [sys.executable, "-m", "livetok.server"]
#: generous per-request timeout: a hung request must fail the test, not hang the suite
TIMEOUT = float(os.environ.get("LIVETOK_LSP_TIMEOUT", "120"))


def units_of(text: str, unit: str) -> int:
    """Length of ``text`` in ``unit`` (the slow, obvious way)."""
    if unit == "utf-32":
        return len(text)
    if unit == "utf-16":
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    return len(text.encode("utf-8", "surrogatepass"))


def naive_position(text: str, cp: int, unit: str) -> types.Position:
    """LSP position of code point ``cp`` in ``text``: line breaks are \\n, \\r\\n and \\r."""
    prefix = text[:cp]
    line = prefix.count("\n") + prefix.count("\r") - prefix.count("\r\n")
    start = max(prefix.rfind("\n"), prefix.rfind("\r")) + 1
    return types.Position(line=line, character=units_of(prefix[start:], unit))


def token_spans(text: str, token_bytes: list[bytes], unit: str) -> list[tuple[int, int, int, int]]:
    """The semantic tokens (line, col, length, type) that the tokens ``token_bytes`` of
    ``text`` should get, the slow way: a token owns the characters whose first UTF-8 byte it
    holds, token ``k`` has type ``k % 2``, and spans are cut at line breaks (not coloured).
    Equal spans for every token mean the same token boundaries as the reference's ids."""
    char_of_byte = [i for i, ch in enumerate(text)
                    for _ in range(len(ch.encode("utf-8", "surrogatepass")))]
    is_lead = [(b & 0xC0) != 0x80 for b in text.encode("utf-8", "surrogatepass")]
    # line starts the way naive_position counts them (\r\n is one break)
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    out = []
    pos = 0
    for k, tok in enumerate(token_bytes):
        chars = [char_of_byte[b] for b in range(pos, pos + len(tok)) if is_lead[b]]
        pos += len(tok)
        if not chars:
            continue
        s, e = chars[0], chars[-1] + 1
        for m in re.finditer(r"[^\r\n]+", text[s:e]):
            cp = s + m.start()
            line = bisect.bisect_right(starts, cp) - 1
            col = units_of(text[starts[line]:cp], unit)
            out.append((line, col, units_of(m.group(), unit), k % 2))
    return out


def decode_semantic(data: list[int]) -> list[tuple[int, int, int, int]]:
    """LSP's relative semantic token data as absolute (line, col, length, type)."""
    out, line, col = [], 0, 0
    for i in range(0, len(data), 5):
        dl, dc, n, t, _mods = data[i : i + 5]
        line += dl
        col = col + dc if dl == 0 else dc
        out.append((line, col, n, t))
    return out


def capabilities(unit: str | None = "utf-16", *, progress: bool = False) -> types.ClientCapabilities:
    general = types.GeneralClientCapabilities(position_encodings=[unit]) if unit else None
    return types.ClientCapabilities(
        general=general,
        window=types.WindowClientCapabilities(work_done_progress=progress),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(),
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]),
        ),
    )


@contextlib.asynccontextmanager
async def session(
    unit: str | None = "utf-16",
    *,
    options: dict[str, Any] | None = None,
    args: tuple[str, ...] = (),
    progress: bool = False,
    env: dict[str, str] | None = None,
    root: str | None = None,
) -> AsyncIterator[LanguageClient]:
    """A started and initialized client talking to a fresh server subprocess (with
    ``root``, a folder path, as its one workspace folder)."""
    config = ClientServerConfig(server_command=[*SERVER, *args],
                                server_env={**os.environ, **(env or {})})
    client = await config.start()
    counts: list[dict] = []
    client.counts = counts  # type: ignore[attr-defined]

    @client.feature("livetok/didChangeTokenCount")
    def _on_count(params: Any) -> None:
        counts.append(result_dict(params))

    try:
        result = await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities(unit, progress=progress),
            initialization_options=options,
            workspace_folders=None if root is None else [
                types.WorkspaceFolder(uri=Path(root).as_uri(), name=Path(root).name)],
        )), TIMEOUT)
        client.init_result = result  # type: ignore[attr-defined]
        yield client
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop(client)


@contextlib.asynccontextmanager
async def reused(client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """``client``, a session a module's tests share (issue 36 decision 4: one server per module,
    each test its own documents), where a test would start one of its own with ``session``;
    it stays up for the next test. Saves a server's start, about 2 s of CPU a test."""
    yield client


async def stop(client: LanguageClient) -> None:
    """Stop the client; end its server subprocess if it has not exited (after a failure the
    exit notification was never sent, and pygls's ``stop`` would wait for ever)."""
    proc = client._server
    if proc is not None and proc.returncode is None:
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            proc.kill()
    await client.stop()


async def poll(pred: Any, timeout: float = TIMEOUT, every: float = 0.02) -> bool:
    """Whether ``pred()`` holds, asked every ``every`` seconds until it does or ``timeout``
    seconds pass. A hang guard, not a race: it returns as soon as ``pred()`` holds, so the bound
    can be generous (a busy machine's seconds do not fail a test)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(every)
    return True


def request(client: LanguageClient, method: str, params: Any) -> "asyncio.Future[Any]":
    """Send a request with raw JSON params (bypassing lsprotocol's types) *now*; await the
    returned future for its result.

    The future fails with ``JsonRpcException`` (with ``.code``) when the server answers
    with an error, and with ``TimeoutError`` when it does not answer in time.
    """
    msg_id = str(uuid.uuid4())
    cf: Future = Future()
    client.protocol._request_futures[msg_id] = cf
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return asyncio.ensure_future(asyncio.wait_for(asyncio.wrap_future(cf), TIMEOUT))


def notify(client: LanguageClient, method: str, params: Any) -> None:
    """Send a notification with raw JSON params."""
    client.protocol._send_data({"jsonrpc": "2.0", "method": method, "params": params})


def result_dict(result: Any) -> dict:
    """A custom request's result as a dict (pygls may hand back an object)."""
    def plain(o: Any) -> Any:
        if hasattr(o, "_asdict"):  # pygls decodes untyped JSON objects as namedtuples
            return {k: plain(v) for k, v in o._asdict().items()}
        if isinstance(o, dict):
            return {k: plain(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [plain(v) for v in o]
        return o

    return plain(result)


def token_count(client: LanguageClient, uri: str, rng: dict | None = None) -> Any:
    """Send ``livetok/tokenCount`` now; returns an awaitable of the result as a dict."""
    params: dict[str, Any] = {"textDocument": {"uri": uri}}
    if rng is not None:
        params["range"] = rng
    fut = request(client, "livetok/tokenCount", params)

    async def result() -> dict:
        return result_dict(await fut)

    return result()


async def expect_error(coro: Any, code: int) -> JsonRpcException:
    """Await ``coro`` and check that it failed with JSON-RPC error ``code``."""
    try:
        result = await coro
    except JsonRpcException as exc:
        assert exc.code == code, f"expected error {code}, got {exc.code}: {exc}"
        return exc
    raise AssertionError(f"expected error {code}, got result {result!r}")


class ClientDoc:
    """The client's copy of one open document; sends changes with positions in ``unit``."""

    def __init__(self, client: LanguageClient, uri: str, text: str, unit: str,
                 language_id: str = "plaintext") -> None:
        self.client, self.uri, self.text, self.unit = client, uri, text, unit
        self.version = 1
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language_id, version=1, text=text)))

    def change(self, patches: list[tuple[int, int, str]]) -> None:
        """One didChange with the patches ``(pos, n_deleted, inserted)`` applied in order."""
        changes = []
        for pos, n_del, ins in patches:
            start = naive_position(self.text, pos, self.unit)
            end = naive_position(self.text, pos + n_del, self.unit)
            changes.append({"range": {"start": {"line": start.line, "character": start.character},
                                      "end": {"line": end.line, "character": end.character}},
                            "text": ins})
            self.text = self.text[:pos] + ins + self.text[pos + n_del:]
        self.version += 1
        notify(self.client, "textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": changes})

    def replace_all(self, text: str) -> None:
        self.text = text
        self.version += 1
        notify(self.client, "textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [{"text": text}]})

    def close(self) -> None:
        notify(self.client, "textDocument/didClose", {"textDocument": {"uri": self.uri}})


class MessageSink:
    """A writer for an in-process server (``server.protocol.set_writer``) that keeps every
    message it sends, parsed, in ``sent``."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data.partition(b"\r\n\r\n")[2]))

    def close(self) -> None:
        pass


def in_process_server() -> tuple[Any, MessageSink, Callable[..., None]]:
    """A language server in this process (no transport), what it writes, and
    ``send(method, params, msg_id=None)``, which hands it one message as the reader would."""
    from livetok.server.lsp.session import create_server
    from livetok.server.lsp.transport import dispatch

    server = create_server()
    sink = MessageSink()
    server.protocol.set_writer(sink)

    def send(method: str, params: dict[str, Any], msg_id: int | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            msg["id"] = msg_id
        dispatch(server.protocol, json.dumps(msg).encode())

    return server, sink, send
