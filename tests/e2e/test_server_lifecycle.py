"""A session's lifecycle and what one session may hold (issue 26, the lifecycle rows).

- before ``initialize`` a request gets ``ServerNotInitialized`` (-32002) and a notification is
  dropped; a second ``initialize`` gets ``InvalidRequest`` (-32600); on stdio whether the
  front (``front.py``) or the full server answered the first ``initialize``, and on TCP;
- ``exit`` ends the process at once (status 1 without ``shutdown``, 0 after), on stdio and
  with ``--tcp --once``, even while the worker thread is stuck in a document's build;
- a settings change sends only what it changes (nothing, for a setting no document shows);
- unknown encoding names leave nothing behind;
- an encoding that takes long to load holds up only its own document;
- ``livetok demo``: a session holds a bounded total of text, and a closed document's memory
  goes back to the system (also when a tab closes with its documents open).

The processes are driven raw (no LSP library between), as ``test_security_serve.py`` does;
the in-process sessions are fed raw messages through ``transport.dispatch``. Nothing is
decided by a race: waits are hang guards (``TIMEOUT``) around a condition or an ordering.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from typing import Any, AsyncIterator

import pytest

from ..conftest import SLOW
from .test_security_serve import TIMEOUT, Peer, Served, Stdio, served, stdio

NOT_INITIALIZED, INVALID_REQUEST, INVALID_PARAMS = -32002, -32600, -32602

#: ``python -c`` wrapper: the server, with one document whose build never ends (``stuck.txt``),
#: so that only a prompt exit can end the process while the worker thread is busy with it
_STUCK_SERVER = """
import sys, threading
from livetok.server.lsp import session as app
from livetok.server.__main__ import main

never = threading.Event()
open_document = app.LivetokServer.open_document

def stuck_open(self, uri, *args, **kwargs):
    if uri.endswith("stuck.txt"):
        never.wait()
    return open_document(self, uri, *args, **kwargs)

app.LivetokServer.open_document = stuck_open
sys.exit(main(sys.argv[1:]))
"""


def _open(uri: str, text: str) -> dict[str, Any]:
    return {"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "plaintext", "version": 1, "text": text}}}


def _count(msg_id: int, uri: str) -> dict[str, Any]:
    return {"id": msg_id, "method": "livetok/tokenCount",
            "params": {"textDocument": {"uri": uri}}}


def _initialize(msg_id: int, options: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": msg_id, "method": "initialize",
            "params": {"processId": None, "capabilities": {}, "initializationOptions": options}}


async def _answers(srv: Stdio, n: int) -> dict[Any, dict[str, Any]]:
    out = {}
    for _ in range(n):
        answer = await srv.answer()
        out[answer["id"]] = answer
    return out


def _code(answer: dict[str, Any]) -> int | None:
    return answer.get("error", {}).get("code")


# -- before initialize, and initialize twice -----------------------------------------------------


async def test_stdio_before_initialize_and_a_second_initialize():
    """The full server answers all (the first message is not an initialize the front takes)."""
    async with stdio() as srv:
        srv.write(b"".join(srv.frame(m) for m in [
            _count(1, "file:///a.txt"),
            {"id": 2, "method": "shutdown"},
            _open("file:///a.txt", "dropped: before initialize"),
            {"method": "initialized", "params": {}},
            _initialize(3),
            _count(4, "file:///a.txt"),  # its didOpen was dropped: not open
            _initialize(5),
            _open("file:///b.txt", "hello world"),
            _count(6, "file:///b.txt"),
        ]))
        got = await _answers(srv, 6)
        assert _code(got[1]) == _code(got[2]) == NOT_INITIALIZED, got
        assert "initialize" in got[1]["error"]["message"]
        assert "result" in got[3]
        assert _code(got[4]) == INVALID_PARAMS and "not open" in got[4]["error"]["message"]
        assert _code(got[5]) == INVALID_REQUEST and "once" in got[5]["error"]["message"]
        assert got[6]["result"]["characters"] == 11
        srv.write(srv.frame({"id": 7, "method": "shutdown"}) + srv.frame({"method": "exit"}))
        assert (await srv.answer())["id"] == 7
        assert await asyncio.wait_for(srv.proc.wait(), TIMEOUT) == 0


async def test_stdio_second_initialize_after_the_front_answered_the_first():
    """The front answers the first initialize before the server exists; the second one,
    read while the front still counts the first documents, is the server's to refuse."""
    async with stdio() as srv:
        srv.write(b"".join(srv.frame(m) for m in [
            _initialize(1),
            _open("file:///a.txt", "hello world"),  # counted by the front
            _initialize(2),
            _count(3, "file:///a.txt"),
        ]))
        got = await _answers(srv, 3)
        assert "result" in got[1]
        assert _code(got[2]) == INVALID_REQUEST, got[2]
        assert got[3]["result"]["characters"] == 11
        srv.write(srv.frame({"method": "exit"}))
        assert await asyncio.wait_for(srv.proc.wait(), TIMEOUT) == 1
        err = (await srv.proc.stderr.read()).decode()
        assert "differs" not in err and "Traceback" not in err, err


async def test_stdio_front_answered_invalid_params_still_initialize_the_session():
    """An initialize the front answered but lsprotocol refuses (a field the front does not
    read) leaves the session initialized: the client was told so."""
    async with stdio() as srv:
        srv.write(b"".join(srv.frame(m) for m in [
            {"id": 1, "method": "initialize", "params": {
                "processId": None, "capabilities": {"textDocument": {"hover": {
                    "contentFormat": 5}}}}},
            _open("file:///a.txt", "hello world"),
            _count(2, "file:///a.txt"),
            _initialize(3),
        ]))
        got = await _answers(srv, 3)
        assert "result" in got[1] and got[2]["result"]["characters"] == 11
        assert _code(got[3]) == INVALID_REQUEST


async def test_tcp_before_initialize_and_a_second_initialize():
    async with served("--tcp", "127.0.0.1:0") as s:
        peer = (await Peer.tcp(s.port)).start_reading()
        early = await peer.request("livetok/tokenCount", {"textDocument": {"uri": "file:///a"}})
        assert _code(early) == NOT_INITIALIZED, early
        peer.open("file:///a", "dropped")
        await peer.initialize()
        again = await peer.request("initialize", {"processId": None, "capabilities": {}})
        assert _code(again) == INVALID_REQUEST, again
        answer = await peer.request("livetok/tokenCount", {"textDocument": {"uri": "file:///a"}})
        assert _code(answer) == INVALID_PARAMS
        peer.open("file:///b", "hello")
        assert (await peer.count("file:///b"))["characters"] == 5
        peer.close()
        assert await s.stop() == 0


# -- exit ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shutdown_first", [False, True])
async def test_stdio_exit_ends_the_process_with_lsps_status(shutdown_first):
    """A count is still pending when ``exit`` comes: nothing is written after it (the closed
    output once sent pygls into a loop of errors that kept the process for seconds)."""
    async with stdio() as srv:
        srv.write(srv.frame(_initialize(1)))
        await srv.answer()
        srv.write(srv.frame({"id": 2, "method": "livetok/listEncodings", "params": None}))
        await srv.answer()  # the full server handles what follows
        messages = [_open("file:///a.txt", "hello world")]
        if shutdown_first:
            messages.append({"id": 3, "method": "shutdown"})
        messages.append({"method": "exit"})
        srv.write(b"".join(srv.frame(m) for m in messages))
        status = await asyncio.wait_for(srv.proc.wait(), TIMEOUT)
        assert status == (0 if shutdown_first else 1)
        err = (await srv.proc.stderr.read()).decode()
        assert "Error sending data" not in err and "Traceback" not in err, err[:3000]


def _stuck_options() -> dict[str, Any]:
    # every didOpen is built in the worker thread
    return {"progressThreshold": 0}


async def test_stdio_exit_while_the_worker_is_busy():
    async with stdio(code=_STUCK_SERVER) as srv:
        srv.write(srv.frame(_initialize(1, _stuck_options())))
        await srv.answer()
        srv.write(srv.frame(_open("file:///w/stuck.txt", "never built")))
        srv.write(srv.frame({"id": 2, "method": "livetok/listEncodings", "params": None}))
        await srv.answer()  # the didOpen before it was handled: the worker is stuck in it
        srv.write(srv.frame({"method": "exit"}))
        # a hang guard only: before, the worker thread kept the process for ever
        assert await asyncio.wait_for(srv.proc.wait(), TIMEOUT) == 1


@pytest.mark.parametrize("shutdown_first", [False, True])
async def test_tcp_once_exit_status(shutdown_first):
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _STUCK_SERVER, "--tcp", "127.0.0.1:0", "--once",
        stderr=asyncio.subprocess.PIPE)
    s = Served(proc)
    try:
        s.port = int((await s.wait_for_line(r"^livetok listening on \S+:(\d+)")).group(1))
        peer = (await Peer.tcp(s.port)).start_reading()
        await peer.initialize(_stuck_options() if not shutdown_first else None)
        if shutdown_first:
            peer.open("file:///w/a.txt", "hello")
            assert (await peer.count("file:///w/a.txt"))["characters"] == 5
            await peer.exit()
        else:
            peer.open("file:///w/stuck.txt", "never built")
            assert "result" in await peer.request("livetok/listEncodings", None)
            peer.notify("exit", None)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == (0 if shutdown_first else 1)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


# -- settings changes ----------------------------------------------------------------------------


class Session:
    """A server in this process, fed raw messages; what it sends is kept in ``sent``."""

    def __init__(self, server: Any = None) -> None:
        from livetok.server.lsp.session import create_server

        self.server = server if server is not None else create_server()
        self.sent: list[dict[str, Any]] = []
        self.server.protocol.set_writer(self)
        self._n = 0

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[-1]))

    def close(self) -> None:
        pass

    def send(self, method: str, params: Any, msg_id: int | None = None) -> None:
        from livetok.server.lsp.transport import dispatch

        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            msg["id"] = msg_id
        dispatch(self.server.protocol, json.dumps(msg).encode())

    async def take(self) -> list[dict[str, Any]]:
        """What was sent since the last call, once the worker thread is done (an encoding
        loaded, a document built) and the loop ran what that scheduled (coalesced counts)."""
        await _until(lambda: not self.server.background.busy_uris())
        for _ in range(3):
            await asyncio.sleep(0)
        out, self.sent = self.sent, []
        return out


def _methods(sent: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((m["method"], m["params"].get("uri", "")) for m in sent if "method" in m)


async def test_a_settings_change_resends_only_what_it_changes():
    """Messages sent in a burst, as a client sends them (2,000 documents x 10 changes that
    touched no count took 10.5 s, re-sending every count)."""
    s = Session()
    s.send("initialize", {"capabilities": {}, "processId": None}, 1)
    texts = {f"file:///w/d{i}.{'md' if i % 5 == 0 else 'txt'}": f"hello world {i}\n" * 20
             for i in range(50)}
    big = "file:///w/d7.txt"
    texts[big] *= 3
    for uri, text in texts.items():
        s.send("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "markdown" if uri.endswith(".md") else "plaintext",
            "version": 1, "text": text}})
    assert len(_methods(await s.take())) >= 50
    settings = {"contextWindow": 1000}
    for change in ({"contextWindow": 2000}, {"semanticTokens": True}, {"contextWindow": 2000},
                   {"progressThreshold": 10}):
        settings = {**settings, **change}
        s.send("workspace/didChangeConfiguration", {"settings": {"livetok": settings}})
        assert await s.take() == [], change  # nothing a document shows depends on these
    # a budget: diagnostics only, one per document, however many changes come in a burst
    for budget in (30, 31, 32):
        settings["budget"] = budget
        s.send("workspace/didChangeConfiguration", {"settings": {"livetok": settings}})
    assert _methods(await s.take()) == sorted(("textDocument/publishDiagnostics", u) for u in texts)
    # an encoding for markdown: those documents are counted again, with it
    settings["encoding"] = {"markdown": "cl100k_base"}
    s.send("workspace/didChangeConfiguration", {"settings": {"livetok": settings}})
    sent = await s.take()
    md = sorted(u for u in texts if u.endswith(".md"))
    counts = [m["params"] for m in sent if m["method"] == "livetok/didChangeTokenCount"]
    assert sorted(c["uri"] for c in counts) == md and {c["encoding"] for c in counts} == {
        "cl100k_base"}
    # a limit that one document passes: it alone is told
    settings["maxDocumentSize"] = len(texts[big]) - 1
    s.send("workspace/didChangeConfiguration", {"settings": {"livetok": settings}})
    sent = await s.take()
    assert [(m["method"], m["params"].get("uri", "")) for m in sent if m.get("method")] == [
        ("window/logMessage", ""), ("textDocument/publishDiagnostics", big)], sent
    assert "over livetok.maxDocumentSize" in json.dumps(sent)
    settings["maxDocumentSize"] = None  # counted again
    s.send("workspace/didChangeConfiguration", {"settings": {"livetok": settings}})
    assert _methods(await s.take()) == [("livetok/didChangeTokenCount", big),
                                        ("textDocument/publishDiagnostics", big)]


# -- unknown encoding names ----------------------------------------------------------------------


def test_unknown_encoding_names_are_not_kept():
    """A client that names ever new unknown encodings, by settings or by documents' language
    ids, must not grow the server (a registry lock and a shown-failure entry each, kept for
    ever: 510-577 bytes a name). Counted as allocations that grow with the number of names:
    at least one block a name in each of two windows. A one-off, such as a dict's table
    growing, is not one; nor is CPython's own residue under ``re`` scans (blocks left at a
    ``finditer`` line and never freed: 37 per 3,000 scans of ``"hi"``, then 12 per further
    30,000; up to 0.66 a name here, which half a block a name counted as a leak). A lock kept
    per unknown name in ``registry`` grows 300 blocks a window and fails it."""
    import gc
    import logging
    import tracemalloc

    s = Session()
    s.send("initialize", {"capabilities": {}, "processId": None}, 1)
    s.send("textDocument/didOpen", {"textDocument": {
        "uri": "file:///w/a.txt", "languageId": "plaintext", "version": 1, "text": "hi"}})
    n = 300  # 300 names show a per-name growth as well as 1,000 (which took 46 s)

    def ask(tag: str, names: range) -> None:
        for i in names:
            s.send("workspace/didChangeConfiguration", {"settings": {"livetok": {
                "encoding": {"plaintext": f"{tag}-{i}"}}}})
            s.sent.clear()

    def open_close(names: range) -> None:
        for i in names:  # no settings change between: every failure is a shown one
            uri = f"file:///w/{i}.txt"
            s.send("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": f"lang-{i}", "version": 1, "text": "hi"}})
            s.send("textDocument/didClose", {"textDocument": {"uri": uri}})
            s.sent.clear()

    logging.disable(logging.WARNING)  # a warning per name
    tracemalloc.start(8)
    half = n // 2
    try:
        snapshots = []
        # a warm-up, then two windows of names: a per-name growth shows in both, a one-off
        # (a bounded cache filling, a table resized) in one at most
        for names in (range(100), range(100, 100 + half), range(100 + half, 100 + n)):
            gc.collect()
            snapshots.append(tracemalloc.take_snapshot())
            ask("settings", names)
            s.send("workspace/didChangeConfiguration", {"settings": {"livetok": {"encoding": {
                f"lang-{i}": f"by-language-{i}" for i in range(n + 100)}}}})
            open_close(names)
        gc.collect()
        snapshots.append(tracemalloc.take_snapshot())
    finally:
        tracemalloc.stop()
        logging.disable(logging.NOTSET)

    def grown(a: Any, b: Any) -> dict[Any, Any]:
        return {stat.traceback: stat for stat in b.compare_to(a, "traceback")
                if stat.count_diff >= half}

    first, second = grown(snapshots[1], snapshots[2]), grown(snapshots[2], snapshots[3])
    growing = [second[t] for t in second if t in first]
    assert not growing, "\n".join(f"{stat}\n" + "\n".join(stat.traceback.format())
                                  for stat in growing)


# -- encodings loaded aside ----------------------------------------------------------------------


async def _until(pred: Any) -> None:
    """Run the loop until ``pred()`` holds (a hang guard, not a race: the test fails after
    TIMEOUT only if it never holds)."""
    async def wait() -> None:
        while not pred():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(wait(), TIMEOUT)


async def test_an_encoding_that_loads_slowly_holds_up_only_its_document():
    """A big tokenizer.json took ~30 s to load on the event loop, and every document waited.
    Here an encoding whose load waits until the test lets it go: another document is
    answered meanwhile; the slow one's request is answered once its encoding is there."""
    import threading
    import uuid

    from livetok.incremental import get_encoding
    from livetok.incremental.names.registry import register_encoding

    name = f"livetok-test-slow-{uuid.uuid4().hex[:8]}"
    release, loaded = threading.Event(), threading.Event()

    def slow() -> Any:
        release.wait(TIMEOUT)  # a hang guard: before the fix the loop itself waited here
        loaded.set()
        return get_encoding("r50k_base")

    register_encoding(name, slow)
    s = Session()
    s.send("initialize", {"capabilities": {}, "processId": None, "initializationOptions": {
        "encoding": {"slowlang": name}}}, 1)
    assert s.server.preload is not None
    s.server.preload.join(TIMEOUT)  # the default encoding is loaded: "other" needs no load
    s.sent.clear()
    for uri, language in (("file:///w/slow.txt", "slowlang"), ("file:///w/other.txt", "plaintext")):
        s.send("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language, "version": 1, "text": "hello world"}})
    s.send("livetok/tokenCount", {"textDocument": {"uri": "file:///w/slow.txt"}}, 2)
    s.send("livetok/tokenCount", {"textDocument": {"uri": "file:///w/other.txt"}}, 3)
    answers = lambda: {m["id"]: m for m in s.sent if "id" in m}  # noqa: E731
    await _until(lambda: 3 in answers())
    assert not loaded.is_set() and 2 not in answers(), "the other document waited for the load"
    assert answers()[3]["result"]["encoding"] == "o200k_base"
    release.set()
    await _until(lambda: 2 in answers())
    slow_count = answers()[2]["result"]
    assert (slow_count["tokens"], slow_count["encoding"]) == (2, "r50k_base")
    counts = [m["params"] for m in s.sent if m.get("method") == "livetok/didChangeTokenCount"]
    assert [c["encoding"] for c in counts if c["uri"].endswith("slow.txt")] == ["r50k_base"]


# -- livetok demo: what one session holds --------------------------------------------------------


@contextlib.asynccontextmanager
async def demo_session(**limits: int) -> AsyncIterator[Any]:
    """A WebSocket session of ``livetok demo`` served in this process (with ``limits``)."""
    from websockets.asyncio.client import connect

    from livetok.server.cli import demo as cmd_demo

    from livetok.server.demo import site as demo_site

    stop = asyncio.Event()
    listening: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    site = demo_site.DemoSite(cmd_demo.STATIC_DIR, None)
    task = asyncio.create_task(cmd_demo.serve_demo("127.0.0.1", 0, site, stop,
                                                   listening.set_result, **limits))
    try:
        port = (await asyncio.wait_for(listening, TIMEOUT))[0][1]
        async with connect(f"ws://127.0.0.1:{port}/lsp", origin=f"http://127.0.0.1:{port}",
                           open_timeout=TIMEOUT) as ws:
            yield ws
    finally:
        stop.set()
        await asyncio.wait_for(task, TIMEOUT)


async def test_demo_session_holds_a_bounded_total_of_text():
    """Many big documents in one demo session took 27 MB each, without a bound: past the
    session's limit a document is not kept (a diagnostic says so, its requests fail), and a
    change that grows one past it drops that one; closing documents makes room again."""
    async with demo_session(max_session_chars=1000) as ws:
        async def send(msg: dict[str, Any]) -> None:
            await ws.send(json.dumps({"jsonrpc": "2.0", **msg}))

        async def until(pred: Any) -> dict[str, Any]:
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                if pred(msg):
                    return msg

        async def answer(msg: dict[str, Any]) -> dict[str, Any]:
            await send(msg)
            return await until(lambda m: m.get("id") == msg["id"] and "method" not in m)

        def not_kept(uri: str) -> Any:
            return lambda m: (m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri and m["params"]["diagnostics"]
                              and m["params"]["diagnostics"][0]["code"] == "not-kept")

        a, b = "file:///w/a.txt", "file:///w/b.txt"
        await answer(_initialize(1))
        await send(_open(a, "x " * 300))
        await send(_open(b, "y " * 300))  # 1,200 code points together: b is not kept
        message = (await until(not_kept(b)))["params"]["diagnostics"][0]["message"]
        assert "1,200" in message and "1,000" in message and "close other documents" in message
        refused = await answer(_count(2, b))
        assert _code(refused) == -32803 and "not kept" in refused["error"]["message"]
        assert (await answer(_count(3, a)))["result"]["characters"] == 600
        await send({"method": "textDocument/didChange", "params": {  # grows a past the limit
            "textDocument": {"uri": a, "version": 2}, "contentChanges": [{"text": "x " * 600}]}})
        await until(not_kept(a))
        assert _code(await answer(_count(4, a))) == -32803
        await send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": b}}})
        await send(_open(b, "y " * 300))  # a is gone: room for b
        assert (await answer(_count(5, b)))["result"]["characters"] == 600


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def test_demo_session_gives_a_closed_documents_memory_back():
    """Open and close big documents in one demo session (in this process, as the page does:
    a sample as a didOpen): once closed, most of each one's memory is back with the system,
    not kept by the process (before, most of it was: glibc kept the freed heap)."""
    from livetok.server.cli.demo import MAX_DOCUMENT_CHARS, MAX_SESSION_CHARS, _capped_server_class
    from livetok.server.demo.site import sample_text
    from livetok.server.lsp.memory import return_free_memory

    if not os.path.exists("/proc/self/statm") or not sys.platform.startswith("linux"):
        pytest.skip("measures the resident set in /proc (Linux)")
    text = sample_text(6 << 20)
    s = Session(_capped_server_class()(MAX_DOCUMENT_CHARS, MAX_SESSION_CHARS))
    s.send("initialize", {"capabilities": {}, "processId": None}, 1)

    async def open_and_close(i: int) -> tuple[int, int]:
        uri = f"file:///w/sample-{i}.py"
        s.send("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        await s.take()  # built
        opened = _rss_bytes()
        s.send("textDocument/didClose", {"textDocument": {"uri": uri}})
        await s.take()
        return opened, _rss_bytes()

    await open_and_close(0)  # the encoding's tables and caches, once
    return_free_memory()
    base = _rss_bytes()
    for i in range(1, 4 if SLOW else 2):  # one document by default, three in a row under slow
        opened, closed = await open_and_close(i)
        held = opened - base
        assert held > len(text), f"the document did not show in the resident set ({held:,} B)"
        assert closed - base < held / 2, (
            f"document {i}: {held:,} bytes while open, {closed - base:,} still held once closed")
    # a tab closed with its document open (the page sends no didClose): the session's end
    async with demo_session() as ws:
        base = _rss_bytes()
        await ws.send(json.dumps({"jsonrpc": "2.0", **_initialize(1)}))
        await ws.send(json.dumps({"jsonrpc": "2.0", **_open("file:///w/tab.py", text)}))
        await ws.send(json.dumps({"jsonrpc": "2.0", **_count(2, "file:///w/tab.py")}))
        while json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT)).get("id") != 2:
            pass  # answered once the document is built
        held = _rss_bytes() - base
        assert held > len(text)
    # the session ends once the server sees the socket close: a hang guard only
    await _until(lambda: _rss_bytes() - base < held / 2)
