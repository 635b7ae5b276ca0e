"""A session's end frees what it started (issue 34, row 4): a ``--tcp``/``--ws`` client (or a
``livetok demo`` tab) that goes away while its big documents (>= 1 M code points, built in
the worker thread) are being built left them behind, +72 MB per reset of two documents of
4.5 M code points here, never given back:
the builds finished after the session's end and were stored in the dead session, whose
reference cycle ``gc.freeze`` (after a big build) had put out of the collector's reach. Now the
builds not started are dropped, the one in flight has its result dropped, the worker thread
ends, and the process's memory comes back within 10 MB of its level before the session.

The server is a ``livetok serve`` subprocess driven raw (``test_security_serve.py``); its
resident set and threads are read from ``/proc``. Nothing is decided by a race: the client
leaves once the server has sent the first document's early count (its build is then in flight
and the second one waits), and the end state is polled for, under a hang guard. The default
run has documents of 1.1 M code points, under the freeze's size (the old code's leak there
lasted until the collector happened to run); the slow run has 4.3 M. A session in this
process checks the same drop exactly, with a build held in the worker.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import socket
import struct
import sys
import contextlib
import threading
import weakref
from typing import Any, AsyncIterator

import pytest

from .test_security_serve import TIMEOUT, Peer, Served, connect, served

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads the server's memory and threads from /proc")

#: a line of code with accents, an emoji and CJK (the text is held as 4 bytes a code point)
_LINE = "def f(x):\n    return x * 2  # naïve café 😀 東京\n"
#: over the default ``progressThreshold`` (1,000,000): built in the worker thread
BIG = (_LINE * 30_000)[:1_100_000]
#: over ``documents._SETTLE_CHARS``: its build ends with ``gc.freeze``
HUGE = (_LINE * 120_000)[:4_300_000]
#: how far above its level before the session the server's resident set may stay
SLACK_BYTES = 10 << 20


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/PID/status")


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


async def _until(what: str, pred: Any, state: Any) -> None:
    """Poll ``pred()`` until true; a hang guard (``TIMEOUT``) only, that shows ``state()``."""
    async def wait() -> None:
        while not pred():
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(wait(), TIMEOUT)
    except asyncio.TimeoutError:
        raise AssertionError(f"{what}: not within {TIMEOUT} s; {state()}") from None


def _reset(peer: Peer) -> None:
    """Drop the connection without a goodbye (TCP: a reset; WebSocket: no closing frame)."""
    if hasattr(peer, "_ws"):
        peer._ws.transport.abort()
        return
    sock = peer._reader._transport.get_extra_info("socket")  # type: ignore[attr-defined]
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.close()


@contextlib.asynccontextmanager
async def _serving(transport: str) -> AsyncIterator[Served]:
    """``livetok serve --tcp/--ws`` on a free port, or ``livetok demo`` (``transport="demo"``)."""
    if transport != "demo":
        async with served(transport, "127.0.0.1:0") as s:
            yield s
        return
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from livetok.server.cli.main import main; "
        "sys.exit(main())", "demo", "--port", "0", "--no-browser", "--log-level", "INFO",
        stderr=asyncio.subprocess.PIPE)
    s = Served(proc)
    try:
        s.port = int((await s.wait_for_line(r"livetok demo listening on http://\S+:(\d+)")
                      ).group(1))
        yield s
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _connect(s: Served, transport: str) -> Peer:
    """A client: of the listener, or a demo tab (the page's ``/lsp`` WebSocket, its origin)."""
    if transport != "demo":
        return await connect(s, transport)
    from websockets.asyncio.client import connect as ws_connect

    peer = Peer()
    ws = await asyncio.wait_for(ws_connect(
        f"ws://127.0.0.1:{s.port}/lsp", origin=f"http://127.0.0.1:{s.port}",  # type: ignore[arg-type]
        compression=None, max_size=None), TIMEOUT)
    peer._send = lambda data: asyncio.ensure_future(ws.send(data.decode()))  # type: ignore[method-assign]
    peer._close = lambda: asyncio.ensure_future(ws.close())  # type: ignore[method-assign]
    peer._ws = ws  # type: ignore[attr-defined]
    return peer


async def _clean_session(s: Served, transport: str, n_docs: int, text: str) -> None:
    """Open ``n_docs`` documents of ``text``, wait for their counts, close the connection."""
    peer = (await _connect(s, transport)).start_reading()
    await peer.initialize()
    for i in range(n_docs):
        peer.open(f"file:///w/big{i}.py", text)
    for i in range(n_docs):
        assert (await peer.count(f"file:///w/big{i}.py"))["characters"] == len(text)
    peer.close()


async def _leave_mid_build(s: Served, transport: str, n_docs: int, text: str) -> None:
    """Open ``n_docs`` documents of ``text`` and drop the connection once the first one's
    early count came: its build is in flight, the others wait behind it."""
    peer = (await _connect(s, transport)).start_reading()
    await peer.initialize()
    for i in range(n_docs):
        peer.open(f"file:///w/big{i}.py", text)
    await _until("the first document's early count", lambda: any(
        n.get("method") == "livetok/didChangeTokenCount"
        and n["params"]["uri"] == "file:///w/big0.py" for n in peer.notes),
        lambda: [n.get("method") for n in peer.notes])
    _reset(peer)


@pytest.mark.parametrize("transport,resets,text", [
    ("--tcp", 1, BIG),
    pytest.param("--tcp", 3, HUGE, marks=pytest.mark.slow),
    pytest.param("--ws", 2, HUGE, marks=pytest.mark.slow),
    pytest.param("demo", 2, HUGE, marks=pytest.mark.slow),  # a tab closed mid-build
], ids=["tcp-1M", "tcp-4M", "ws-4M", "demo-4M"])
async def test_a_session_dropped_mid_build_gives_its_memory_and_thread_back(transport, resets,
                                                                            text):
    async with _serving(transport) as s:
        pid = s.proc.pid
        idle_threads = _threads(pid)
        # a clean session of the same documents first: the encoding's tables, its caches and
        # the heap's arenas grow once, for good (a first session of one document left the
        # next one 30 MB of that to grow)
        await _clean_session(s, transport, 2, text)
        await _until("the clean session's end", lambda: _threads(pid) <= idle_threads,
                     lambda: f"{_threads(pid)} threads")
        for k in range(resets):
            before = _rss_bytes(pid)
            await _leave_mid_build(s, transport, 2, text)

            def state() -> str:
                return (f"reset {k + 1}: {_threads(pid)} threads (idle: {idle_threads}), "
                        f"resident set {(_rss_bytes(pid) - before) / 2**20:+.1f} MB since "
                        "before the session")

            await _until("memory and threads back after the session's end", lambda: (
                _threads(pid) <= idle_threads and _rss_bytes(pid) <= before + SLACK_BYTES),
                state)
        # the server still serves, and a later clean session is as good as the first
        await _clean_session(s, transport, 1, text)
        status = await s.stop()
        assert status == 0 or transport == "demo"  # the demo is ended by SIGTERM's default
        assert "Traceback" not in "".join(s.lines), "".join(s.lines)[-3000:]


class _Sink:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("livetok-bg")]


async def test_release_drops_the_builds_in_flight_and_the_worker_ends(monkeypatch):
    """In this process, exactly: the first build is held in the worker thread while the
    session ends (``LivetokServer.release``, what a listener and the demo call); once let go
    it ends, its document is never stored and is freed, the second build never starts, and
    the worker thread ends."""
    from livetok.server.lsp import session as app
    from livetok.server.lsp.transport import dispatch

    assert not _workers()
    gate, entered = threading.Event(), threading.Event()
    built: list[weakref.ref[Any]] = []
    open_document = app.LivetokServer.open_document

    def held_open(self: Any, uri: str, *args: Any, **kwargs: Any) -> Any:
        entered.set()
        gate.wait(TIMEOUT)
        od = open_document(self, uri, *args, **kwargs)
        built.append(weakref.ref(od))
        return od

    monkeypatch.setattr(app.LivetokServer, "open_document", held_open)
    server = app.create_server()
    server.protocol.set_writer(_Sink())

    def send(message: dict[str, Any]) -> None:
        dispatch(server.protocol, json.dumps({"jsonrpc": "2.0", **message}).encode())

    send({"id": 1, "method": "initialize", "params": {
        "processId": None, "capabilities": {},
        "initializationOptions": {"progressThreshold": 0}}})  # every didOpen in the worker
    uris = ["file:///w/a.py", "file:///w/b.py"]
    for uri in uris:
        send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": _LINE * 100}}})
    assert all(server.background.busy(u) for u in uris)
    await _until("the first build in the worker", entered.is_set, _workers)
    server.release()  # the session ends while the first build is held
    gate.set()
    await _until("the worker thread's end", lambda: not _workers(), _workers)
    await _until("the document built after the session's end freed", lambda: (
        gc.collect() >= 0 and len(built) == 1 and built[0]() is None), lambda: (
        f"{len(built)} built, {sum(r() is not None for r in built)} held"))
    assert not list(server.store) and not server.background.busy_uris()


async def test_shutdown_while_a_request_waits_for_a_build_answers_both():
    """A request about a document still being built when ``shutdown`` comes is answered, and
    so is ``shutdown``. The server's shutdown finishes the build and runs what waited on it;
    an answer still pending then is cancelled (-32800). pygls cancelled it while iterating
    over its table of requests, the cancel's answer removed the entry, and the shutdown failed
    instead (-32603 "dictionary changed size during iteration", exit status 1)."""
    from .test_security_serve import stdio

    text = BIG[:300_000]  # built in the worker (progressThreshold 0) for a while
    async with stdio() as srv:
        srv.write(b"".join(srv.frame(m) for m in [
            {"id": 1, "method": "initialize", "params": {
                "processId": None, "capabilities": {},
                "initializationOptions": {"progressThreshold": 0}}},
            {"id": 2, "method": "livetok/listEncodings", "params": None}]))
        while (await srv.answer())["id"] != 2:  # the full server handles what follows
            pass
        srv.write(b"".join(srv.frame(m) for m in [
            {"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": "file:///w/a.py", "languageId": "python", "version": 1, "text": text}}},
            {"id": 3, "method": "livetok/tokenCount",
             "params": {"textDocument": {"uri": "file:///w/a.py"}}},
            {"id": 4, "method": "shutdown"}]))
        answers = {}
        for _ in range(2):
            answer = await srv.answer()
            answers[answer["id"]] = answer
        count, shutdown = answers[3], answers[4]
        assert count.get("error", {}).get("code") == -32800 or (
            count["result"]["characters"] == len(text)), count
        assert "error" not in shutdown and shutdown["result"] is None, shutdown
        srv.write(srv.frame({"method": "exit"}))
        assert await asyncio.wait_for(srv.proc.wait(), TIMEOUT) == 0
