"""``livetok serve`` against hostile or broken peers (issue 15, parts 3 and 5).

End to end, each test runs ``python -m livetok.server`` as a subprocess: a WebSocket handshake
needs the token and no foreign ``Origin``; every TCP/WebSocket connection is its own session
and outlives the others; an HTTP request to the TCP port is closed; a client that never reads
is cut off while the others are answered; on stdio, malformed frames and deep nesting get
answers (or a clean exit), never silence. The framer itself is checked in process against
every way of cutting its input into chunks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import sys
from typing import Any, AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.server.lsp.protocol import MAX_JSON_DEPTH, Frame, Framer

from .._refs import tiktoken_ref
from ..conftest import slow_except

SERVER = [sys.executable, "-m", "livetok.server"]
#: a bounded wait for anything the server should do at once: a hang fails, not hangs
TIMEOUT = float(os.environ.get("LIVETOK_LSP_TIMEOUT", "60"))
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def ref_count(text: str) -> int:
    return len(tiktoken_ref("o200k_base").encode_ordinary(text))


# -- a served subprocess and raw JSON-RPC clients ------------------------------------------------


class Served:
    """A ``livetok serve --tcp/--ws`` subprocess: its port, its token, its stderr lines."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.port = 0
        self.token: str | None = None
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            self.lines.append(line.decode("utf-8", "replace"))

    async def wait_for_line(self, pattern: str, timeout: float = TIMEOUT) -> re.Match[str]:
        """The first stderr line matching ``pattern``, waiting for it at most ``timeout``."""
        async def find() -> re.Match[str]:
            while True:
                for line in self.lines:
                    if m := re.search(pattern, line):
                        return m
                if self._reader.done():
                    raise AssertionError(f"no line matches {pattern!r}:\n{''.join(self.lines)}")
                await asyncio.sleep(0.02)

        return await asyncio.wait_for(find(), timeout)

    async def stop(self) -> int:
        """SIGTERM, then the exit status."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.proc.wait(), TIMEOUT)
        finally:
            await asyncio.wait_for(self._reader, TIMEOUT)


@contextlib.asynccontextmanager
async def served(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[Served]:
    proc = await asyncio.create_subprocess_exec(
        *SERVER, *args, "--log-level", "INFO", stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})})
    s = Served(proc)
    try:
        # the announcement, not the log line with a timestamp: the token comes before it
        s.port = int((await s.wait_for_line(r"^livetok listening on \S+:(\d+)")).group(1))
        if token := [m.group(1) for line in s.lines
                     if (m := re.match(r"livetok token: (\S+)", line))]:
            s.token = token[0]
        yield s
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


class Peer:
    """A JSON-RPC client over one TCP or WebSocket connection, with no LSP library between."""

    def __init__(self) -> None:
        self.notes: list[dict[str, Any]] = []
        self.answers: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.closed = asyncio.Event()
        self._n = 0
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def tcp(cls, port: int, *, rcvbuf: int | None = None) -> "Peer":
        peer = cls()
        if rcvbuf is not None:
            reader, writer = await asyncio.open_connection(sock=await _socket(port, rcvbuf))
        else:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        peer._send = lambda data: writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
        peer._close = writer.close
        peer._reader = reader
        return peer

    @classmethod
    async def ws(cls, port: int, token: str | None, *, rcvbuf: int | None = None,
                 **connect: Any) -> "Peer":
        from websockets.asyncio.client import connect as ws_connect

        peer = cls()
        url = f"ws://127.0.0.1:{port}/" + (f"?token={token}" if token else "")
        if rcvbuf is not None:
            connect["sock"] = await _socket(port, rcvbuf)
        ws = await asyncio.wait_for(ws_connect(url, **connect), TIMEOUT)
        peer._send = lambda data: asyncio.ensure_future(ws.send(data.decode()))
        peer._close = lambda: asyncio.ensure_future(ws.close())
        peer._ws = ws
        return peer

    def start_reading(self) -> "Peer":
        self._task = asyncio.ensure_future(self._read())
        return self

    async def _frames(self) -> AsyncIterator[bytes]:
        if hasattr(self, "_ws"):
            from websockets.exceptions import ConnectionClosed

            with contextlib.suppress(ConnectionClosed):
                async for message in self._ws:
                    yield message if isinstance(message, bytes) else message.encode()
            return
        while True:
            try:
                head = await self._reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
            yield await self._reader.readexactly(length)

    async def _read(self) -> None:
        try:
            async for body in self._frames():
                msg = json.loads(body)
                if "method" in msg:
                    self.notes.append(msg)
                elif msg.get("id") in self.answers:
                    self.answers.pop(msg["id"]).set_result(msg)
        finally:
            self.closed.set()

    def send(self, msg: dict[str, Any]) -> None:
        self._send(json.dumps({"jsonrpc": "2.0", **msg}).encode())

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request_nowait(self, method: str, params: Any) -> asyncio.Future[dict[str, Any]]:
        self._n += 1
        fut = self.answers[self._n] = asyncio.get_running_loop().create_future()
        self.send({"id": self._n, "method": method, "params": params})
        return fut

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        """The whole answer message (``result`` or ``error``)."""
        return await asyncio.wait_for(self.request_nowait(method, params), TIMEOUT)

    async def initialize(self, options: dict[str, Any] | None = None) -> None:
        answer = await self.request("initialize", {"processId": None, "capabilities": {},
                                                   "initializationOptions": options})
        assert "result" in answer, answer
        self.notify("initialized", {})

    def open(self, uri: str, text: str) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})

    async def count(self, uri: str) -> dict[str, Any]:
        answer = await self.request("livetok/tokenCount", {"textDocument": {"uri": uri}})
        assert "result" in answer, answer
        return answer["result"]

    async def hover(self, uri: str) -> str:
        answer = await self.request("textDocument/hover", {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}})
        return json.dumps(answer)

    async def exit(self) -> None:
        await self.request("shutdown", None)
        self.notify("exit", None)

    def close(self) -> None:
        self._close()


async def _socket(port: int, rcvbuf: int) -> socket.socket:
    """A connected socket with a small receive window (set before connecting): a slow reader."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    return sock


async def connect(served: Served, transport: str, **kw: Any) -> Peer:
    if transport == "--tcp":
        return await Peer.tcp(served.port, **kw)
    return await Peer.ws(served.port, served.token, compression=None, **kw)


# -- WebSocket handshake ---------------------------------------------------------------------------


async def test_websocket_handshake_needs_the_token_and_an_allowed_origin_or_none():
    from websockets.exceptions import InvalidStatus

    allowed = "http://127.0.0.1:8123"
    async with served("--ws", "127.0.0.1:0", "--allow-origin", allowed,
                      "--max-message-size", "64K") as s:
        assert s.token and len(s.token) >= 32
        refused = [
            dict(token=s.token, origin="https://evil.example"),  # a web page, with the token
            dict(token=None),  # an editor without the token
            dict(token=s.token[:-1] + ("A" if s.token[-1] != "A" else "B")),  # a wrong one
            dict(token=None, additional_headers={"Authorization": "Bearer nope"}),
            dict(token=s.token, origin="null"),  # a sandboxed page or a file:// page
        ]
        for case in refused:
            token = case.pop("token")
            with pytest.raises(InvalidStatus) as info:
                await Peer.ws(s.port, token, **case)
            assert info.value.response.status_code == 403, case
        assert sum("refused the WebSocket handshake" in line for line in s.lines) == len(refused)
        assert any("https://evil.example" in line and "--allow-origin" in line
                   for line in s.lines)
        # the editor (no Origin), by query parameter and by header; the page let in on purpose
        peers = [await Peer.ws(s.port, s.token),
                 await Peer.ws(s.port, None,
                               additional_headers={"Authorization": f"Bearer {s.token}"}),
                 await Peer.ws(s.port, s.token, origin=allowed)]
        for i, peer in enumerate(peers):
            peer.start_reading()
            await peer.initialize()
            peer.open("file:///a.txt", "hello " * (i + 1))
            assert (await peer.count("file:///a.txt"))["characters"] == 6 * (i + 1)
            peer.close()
        # a message over --max-message-size closes that connection, with a log line
        big = (await Peer.ws(s.port, s.token)).start_reading()
        await big.initialize()
        big.open("file:///big.txt", "x" * 100_000)
        await asyncio.wait_for(big.closed.wait(), TIMEOUT)
        await s.wait_for_line(r"over the limit of 65536 bytes \(livetok serve --max-message-size")
        assert await s.stop() == 0


def test_binding_beyond_loopback_says_what_it_exposes(capsys):
    from livetok.server.__main__ import main
    from livetok.server.cli.serve import exposure_warning

    assert main(["--once"]) == 2 and "--once and --max-send-queue go with" in capsys.readouterr().err
    assert main(["--tcp", "0", "--token-file", "t"]) == 2
    assert "--allow-origin and --token-file go with --ws" in capsys.readouterr().err

    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        assert exposure_warning(host, 2087, "--tcp") is None, host
    for host, transport in (("0.0.0.0", "--tcp"), ("::", "--ws"), ("192.168.1.20", "--tcp"),
                            ("myhost.lan", "--ws")):
        warning = exposure_warning(host, 2087, transport) or ""
        assert "anyone who can reach" in warning and "port 2087" in warning, warning
        assert ("every network interface" in warning) == (host in ("0.0.0.0", "::"))
        assert ("token is then the only guard" in warning) == (transport == "--ws")
        assert ("no authentication" in warning) == (transport == "--tcp")


async def test_websocket_token_from_file_or_environment(tmp_path):
    from websockets.exceptions import InvalidStatus

    secret = "a-token-from-a-file-0123456789"
    path = tmp_path / "token"
    path.write_text(secret + "\n")
    path.chmod(0o600)
    for args, env in [(("--token-file", str(path)), None), ((), {"LIVETOK_TOKEN": secret})]:
        async with served("--ws", "127.0.0.1:0", *args, env=env) as s:
            assert s.token is None  # not printed: whoever set it knows it
            with pytest.raises(InvalidStatus):
                await Peer.ws(s.port, None)
            peer = (await Peer.ws(s.port, secret)).start_reading()
            await peer.initialize()
            peer.close()
            await s.stop()


# -- one session per connection ----------------------------------------------------------------


# WebSocket by default; TCP under slow (the default run has TCP sessions one after the other
# and side by side in test_server_e2e.py::test_tcp_and_websocket and the HTTP test below)
@pytest.mark.parametrize("transport", slow_except(["--tcp", "--ws"], {"--ws"}))
async def test_connections_are_separate_sessions(transport):
    uri = "file:///same.txt"
    texts = {"editor": "secret draft of the editor, alpha beta gamma",
             "other": "another client's text"}
    async with served(transport, "127.0.0.1:0") as s:
        editor = (await connect(s, transport)).start_reading()
        other = (await connect(s, transport)).start_reading()
        for peer, text in ((editor, texts["editor"]), (other, texts["other"])):
            await peer.initialize()
            peer.open(uri, text)
        for peer, name in ((editor, "editor"), (other, "other")):
            got = await peer.count(uri)
            assert (got["characters"], got["tokens"]) == (len(texts[name]),
                                                          ref_count(texts[name]))
            hover = await peer.hover(uri)  # shows the token under the cursor: the first word
            mine, theirs = ("secret", "another") if name == "editor" else ("another", "secret")
            assert f"'{mine}'" in hover and theirs not in hover, hover
        # each saw only its own count notifications
        for peer, name in ((editor, "editor"), (other, "other")):
            counts = [n["params"] for n in peer.notes if n["method"].startswith("livetok/")]
            assert counts and {c["characters"] for c in counts} == {len(texts[name])}
        # `exit` on one ends that session only
        await other.exit()
        await asyncio.wait_for(other.closed.wait(), TIMEOUT)
        assert (await editor.count(uri))["characters"] == len(texts["editor"])
        # a connection dropped without a word ends that session only; the listener goes on
        third = (await connect(s, transport)).start_reading()
        await third.initialize()
        third.close()
        await asyncio.wait_for(third.closed.wait(), TIMEOUT)
        await s.wait_for_line(r"session ended")
        assert (await editor.count(uri))["characters"] == len(texts["editor"])
        fourth = (await connect(s, transport)).start_reading()
        await fourth.initialize()
        answer = await fourth.request("livetok/tokenCount", {"textDocument": {"uri": uri}})
        assert answer["error"]["code"] == -32602  # not open in this session
        assert await s.stop() == 0  # with two sessions open
        assert not [line for line in s.lines if "Traceback" in line or "ERROR" in line]


@pytest.mark.parametrize("transport", ["--tcp", "--ws"])
async def test_once_serves_one_client_then_exits(transport, tmp_path):
    async with served(transport, "127.0.0.1:0", "--once", "--record-trace", str(tmp_path)) as s:
        first = (await connect(s, transport)).start_reading()
        await first.initialize()
        with contextlib.suppress(Exception):  # refused: a 403, or a closed connection
            second = (await connect(s, transport)).start_reading()
            await asyncio.wait_for(second.closed.wait(), TIMEOUT)
        await s.wait_for_line(r"serves one client \(--once\)")
        first.open("file:///x.txt", "still here")
        assert (await first.count("file:///x.txt"))["characters"] == 10
        first.close()  # without shutdown: the session's end still saves its trace
        assert await asyncio.wait_for(s.proc.wait(), TIMEOUT) == 0
    assert [p.name.endswith("x.txt.json.gz") for p in tmp_path.iterdir()] == [True]


# -- TCP: only LSP --------------------------------------------------------------------------------


async def test_http_request_to_the_tcp_port_is_closed_and_other_sessions_go_on():
    async with served("--tcp", "127.0.0.1:0") as s:
        editor = (await Peer.tcp(s.port)).start_reading()
        await editor.initialize()
        editor.open("file:///e.txt", "the editor's text")
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "livetok/tokenCount",
                           "params": {"textDocument": {"uri": "file:///e.txt"}}}).encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", s.port)
        writer.write(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://evil.example\r\n"
                     b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(body), body))
        assert await asyncio.wait_for(reader.read(), TIMEOUT) == b""  # closed, nothing said
        writer.close()
        await s.wait_for_line(r"does not start with an LSP header: b'POST / HTTP/1.1")
        assert (await editor.count("file:///e.txt"))["characters"] == 17
        assert await s.stop() == 0


# -- clients that do not read --------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["--tcp", "--ws"])
async def test_a_client_that_never_reads_is_cut_off_and_the_others_are_answered(transport):
    text = "word " * 40_000  # each semantic tokens answer: about 0.5 MB
    async with served(transport, "127.0.0.1:0", "--max-send-queue", "1M") as s:
        other = (await connect(s, transport)).start_reading()
        await other.initialize()
        other.open("file:///o.txt", "fine")
        # websockets stops reading the socket once it holds max_queue messages
        extra = {} if transport == "--tcp" else {"max_queue": 1, "max_size": None}
        slow = (await connect(s, transport, rcvbuf=4096, **extra)).start_reading()
        await slow.initialize({"semanticTokens": True})
        slow.open("file:///big.txt", text)
        assert slow._task is not None
        slow._task.cancel()  # from here on, nothing is read from the socket
        sent = 0
        while not any("has not read" in line for line in s.lines):
            assert sent < 400, "the never-reading client was not cut off"
            slow.request_nowait("textDocument/semanticTokens/full",
                                {"textDocument": {"uri": "file:///big.txt"}})
            sent += 1
            assert (await other.count("file:///o.txt"))["characters"] == 4
        line = (await s.wait_for_line(r"has not read (\d+) bytes of answers")).group(1)
        assert int(line) > 1 << 20
        assert (await other.count("file:///o.txt"))["characters"] == 4
        assert await s.stop() == 0


# -- stdio framing ---------------------------------------------------------------------------------


class Stdio:
    """``python -m livetok.server`` on pipes, fed raw bytes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def frame(self, msg: dict[str, Any] | bytes) -> bytes:
        body = msg if isinstance(msg, bytes) else json.dumps({"jsonrpc": "2.0", **msg}).encode()
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    async def answer(self) -> dict[str, Any]:
        """The next message that is not a notification."""
        assert self.proc.stdout is not None
        while True:
            head = await asyncio.wait_for(self.proc.stdout.readuntil(b"\r\n\r\n"), TIMEOUT)
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
            msg = json.loads(await self.proc.stdout.readexactly(length))
            if "id" in msg:
                return msg

    async def count(self, msg_id: int, uri: str = "file:///s.txt") -> dict[str, Any]:
        self.write(self.frame({"id": msg_id, "method": "livetok/tokenCount",
                               "params": {"textDocument": {"uri": uri}}}))
        answer = await self.answer()
        assert answer["id"] == msg_id and "result" in answer, answer
        return answer["result"]


@contextlib.asynccontextmanager
async def stdio(*args: str, code: str | None = None) -> AsyncIterator[Stdio]:
    """The server on pipes (``code``: a ``python -c`` program that runs it, instead)."""
    command = [sys.executable, "-c", code] if code else SERVER
    proc = await asyncio.create_subprocess_exec(
        *command, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, limit=1 << 24)
    try:
        yield Stdio(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def nested(depth: int, msg_id: int) -> bytes:
    return (b'{"jsonrpc": "2.0", "id": %d, "method": "livetok/tokenCount", "params": '
            % msg_id + b"[" * depth + b"]" * depth + b"}")


async def test_stdio_bad_frames_get_answers_and_the_stream_stays_usable():
    async with stdio("--max-message-size", "1M") as srv:
        # things that were answered before and must stay answered: a request before
        # initialize, a batch, a wrong jsonrpc version, an unhashable id, invalid JSON
        srv.write(srv.frame({"id": 90, "method": "livetok/tokenCount",
                             "params": {"textDocument": {"uri": "file:///s.txt"}}}))
        assert (await srv.answer())["id"] == 90
        srv.write(srv.frame({"id": 1, "method": "initialize",
                             "params": {"processId": None, "capabilities": {}}}))
        assert "result" in await srv.answer()
        srv.write(srv.frame({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": "file:///s.txt", "languageId": "plaintext", "version": 1, "text": "hi"}}}))
        cases: list[tuple[bytes, int, Any]] = [  # (bytes, error code, id)
            (srv.frame(b'[{"jsonrpc": "2.0", "id": 3, "method": "shutdown"}]'),
             INVALID_REQUEST, None),
            (srv.frame(b'{"jsonrpc": "1.0", "id": 4, "method": "shutdown"}'), INVALID_REQUEST, 4),
            (srv.frame(b'{"jsonrpc": "2.0", "id": [5], "method": "livetok/tokenCount"}'),
             INVALID_REQUEST, None),
            (srv.frame({"id": {"a": 1}, "method": "livetok/tokenCount",
                        "params": {"textDocument": {"uri": "file:///s.txt"}}}),
             INVALID_REQUEST, None),
            (srv.frame(b'{"jsonrpc": "2.0", "id": 6, "method": '), PARSE_ERROR, None),
            # a length that is not a number, negative, over --max-message-size, missing
            (b"Content-Length: ten\r\n\r\n{}", PARSE_ERROR, None),
            (b"Content-Length: -2\r\n\r\n{}", PARSE_ERROR, None),
            (b"Content-Length: 99999999999\r\n\r\n" + b"x" * 5000, PARSE_ERROR, None),
            (b"Content-Type: application/json\r\n\r\n{}", PARSE_ERROR, None),
            # too small: the body is cut (not JSON), its rest is skipped to the next header
            (b'Content-Length: 20\r\n\r\n{"jsonrpc": "2.0", "id": 7, "method": "shutdown"}',
             PARSE_ERROR, None),
            # an unknown header: the frame is refused, skipped by its length
            (b"X-Thing: 1\r\n" + srv.frame({"id": 8, "method": "shutdown"}), PARSE_ERROR, 8),
            # nesting: parsed then measured, and too deep for the parser at all
            (srv.frame(nested(MAX_JSON_DEPTH + 1, 9)), INVALID_REQUEST, 9),
            (srv.frame(nested(1_000, 10)), INVALID_REQUEST, 10),
            (srv.frame(nested(100_000, 11)), INVALID_REQUEST, 11),
        ]
        for i, (data, code, msg_id) in enumerate(cases):
            srv.write(data)
            answer = await srv.answer()
            assert answer.get("error", {}).get("code") == code, (i, data[:80], answer)
            assert answer["id"] == msg_id, (i, answer)
            assert (await srv.count(100 + i))["characters"] == 2, i
        deep_ok = srv.frame(nested(MAX_JSON_DEPTH - 3, 12))  # deep, but within the limit
        srv.write(deep_ok)
        assert (await srv.answer())["error"]["code"] == -32602  # judged on its params
        # a body that ends early: the input ends in the middle of a message
        srv.write(b"Content-Length: 500\r\n\r\n{\"jsonrpc\"")
        srv.proc.stdin.close()
        assert await asyncio.wait_for(srv.proc.wait(), TIMEOUT) == 1
        err = (await srv.proc.stderr.read()).decode()
        assert "skipped" in err and "in the middle of a message" in err
        assert "RecursionError" not in err and "Traceback" not in err, err


async def test_stdio_shutdown_and_exit_still_work():
    async with stdio() as srv:
        srv.write(srv.frame({"id": 1, "method": "initialize",
                             "params": {"processId": None, "capabilities": {}}}))
        await srv.answer()
        srv.write(srv.frame({"id": 2, "method": "shutdown"}))
        assert (await srv.answer())["id"] == 2
        srv.write(srv.frame({"id": 3, "method": "livetok/tokenCount", "params": {}}))
        assert (await srv.answer())["error"]["code"] == INVALID_REQUEST
        srv.write(srv.frame({"method": "exit"}))
        assert await asyncio.wait_for(srv.proc.wait(), TIMEOUT) == 0


def test_a_finished_session_is_freed():
    """A listener makes a server per connection: nothing may keep the old ones (pygls's
    class-wide lru_cache of message types held up to 128 of them, with their documents)."""
    import gc
    import weakref

    from livetok.server.lsp.session import create_server
    from livetok.server.lsp.transport import dispatch

    class Sink:
        def write(self, data: bytes) -> None:
            pass

        def close(self) -> None:
            pass

    def session() -> weakref.ref[Any]:
        server = create_server()
        server.protocol.set_writer(Sink())
        for msg in ({"id": 1, "method": "initialize", "params": {"capabilities": {}}},
                    {"method": "textDocument/didOpen", "params": {"textDocument": {
                        "uri": "file:///a", "languageId": "plaintext", "version": 1,
                        "text": "x" * 1000}}},
                    {"id": 2, "method": "textDocument/hover", "params": {
                        "textDocument": {"uri": "file:///a"},
                        "position": {"line": 0, "character": 1}}}):
            dispatch(server.protocol, json.dumps({"jsonrpc": "2.0", **msg}).encode())
        return weakref.ref(server)

    refs = [session() for _ in range(3)]
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


# -- the framer, in process --------------------------------------------------------------------


def _stream() -> tuple[bytes, list[tuple[str, bytes]]]:
    """A stream with every kind of frame, and the frames it must yield."""
    ok = [b'{"a": 1}', b"{}", "é😀".encode()]
    stream = (b"Content-Length: 8\r\n\r\n" + ok[0]
              + b"content-length:2\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8"
              b"\r\n\r\n" + ok[1]
              + b"Content-Length: 4x\r\n\r\n{\"cut\": 1}"
              + b"Content-Length: 3\r\n\r\n{\"too\": \"long\"}"
              + b"\r\nCONTENT-LENGTH: 6\r\n\r\n" + ok[2])
    expected = [("message", ok[0]), ("message", ok[1]), ("error", b""), ("skipped", b"{\"cut\": 1}"),
                ("message", b'{"t'), ("skipped", b'oo": "long"}\r\n'), ("message", ok[2])]
    return stream, expected


@given(st.lists(st.integers(min_value=0, max_value=200), max_size=12))
def test_framer_gives_the_same_frames_however_the_input_is_cut(cuts):
    stream, expected = _stream()
    framer = Framer(max_message_bytes=100)
    got: list[Frame] = []
    points = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    for a, b in zip(points, points[1:]):
        framer.feed(stream[a:b])
        got.extend(framer.frames())
    assert [(f.kind, f.body) for f in got] == expected
    assert framer.close() is None


def test_framer_skips_long_garbage_in_bounded_memory_and_refuses_foreign_starts():
    framer = Framer(max_message_bytes=100)
    garbage = b"x" * 5000  # no newline: not a header line
    for i in range(0, len(garbage), 700):
        framer.feed(garbage[i:i + 700])
        assert not list(framer.frames())
        assert len(framer._buf) - framer._pos <= 2048
    framer.feed(b"Content-Length: 2\r\n\r\n{}")
    assert [f.kind for f in framer.frames()] == ["skipped", "message"]
    strict = Framer(strict_start=True)
    strict.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert [f.kind for f in strict.frames()] == ["foreign"]
    assert not list(strict.frames())
    lenient = Framer(strict_start=True)  # a stray blank line, then a real header
    lenient.feed(b"\r\nContent-Length: 2\r\n\r\n{}")
    assert [f.kind for f in lenient.frames()] == ["message"]
    bare_lf = Framer()  # answered (and kept in step): the header lines end with \n alone
    bare_lf.feed(b"Content-Length: 2\n\n{}Content-Length: 2\r\n\r\n[]")
    assert [(f.kind, f.body, "\\r\\n" in f.reason) for f in bare_lf.frames()] == [
        ("error", b"{}", True), ("message", b"[]", False)]
    unfinished = Framer()
    unfinished.feed(b"Content-Length: 9\r\n\r\n{")
    assert not list(unfinished.frames())
    assert "1 of its 9 bytes" in (unfinished.close() or "")


@pytest.mark.parametrize("name", ["lsp.protocol", "lsp.transport", "cli.serve"])
def test_doctests_of_the_serve_modules(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"livetok.server.{name}"))
    assert result.attempted and not result.failed
