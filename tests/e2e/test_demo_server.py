"""``livetok demo`` without a browser: its HTTP routes, the LSP session on ``/lsp`` (one server
per WebSocket), the samples, the command line, and what it refuses: foreign ``Host`` and
``Origin`` values, methods other than GET and HEAD, files outside its folders, sample sizes
it does not offer, sessions past the cap (see ``docs/security.md``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest

from livetok.server.cli import demo as cmd_demo

from .._refs import tiktoken_ref
from ..conftest import ROOT, TRACES

pytest.importorskip("websockets", reason="livetok demo needs the websockets package")
from livetok.server.demo import site as demo_site  # noqa: E402  (needs websockets)


class Demo:
    """A ``livetok demo --port 0 --no-browser`` subprocess and its URL."""

    def __init__(self, *extra: str) -> None:
        cmd = [sys.executable, "-c", "import sys; from livetok.server.cli.main import main; "
               "sys.exit(main())", "demo", "--port", "0", "--no-browser", *extra]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     text=True)
        self.log: list[str] = []
        found = threading.Event()
        self.url = ""

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                m = re.search(r"livetok demo listening on (http://\S+)", line)
                if m and not found.is_set():
                    self.url = m.group(1)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(30):
            self.close()
            raise AssertionError("livetok demo did not start:\n" + "".join(self.log))

    @property
    def port(self) -> int:
        return int(self.url.rstrip("/").rsplit(":", 1)[1])

    @property
    def origin(self) -> str:
        """The page's own origin, which a browser sends with the ``/lsp`` handshake."""
        return self.url.rstrip("/")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def demo():
    d = Demo()
    yield d
    d.close()


def get(demo: Demo, path: str) -> tuple[int, bytes, dict]:
    try:
        with urllib.request.urlopen(demo.url + path.lstrip("/"), timeout=30) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def test_http_routes(demo):
    status, body, headers = get(demo, "/")
    assert status == 200 and b'<script src="demo.js">' in body
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    status, body, headers = get(demo, "/demo.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert b"livetok/didChangeTokenCount" in body and b"semanticTokens/range" in body
    status, body, _ = get(demo, "/api/config")
    cfg = json.loads(body)
    assert status == 200 and cfg["encodings"][0] == "o200k_base"
    if (TRACES / "sveltecomponent.json.gz").is_file():
        assert {"name": "sveltecomponent.json.gz",
                "bytes": (TRACES / "sveltecomponent.json.gz").stat().st_size} in cfg["traces"]
        status, body, headers = get(demo, "/api/traces/sveltecomponent.json.gz")
        assert status == 200 and headers["Content-Encoding"] == "gzip"
    status, body, _ = get(demo, "/api/sample?size=1048576")
    assert status == 200 and 1_000_000 < len(body) <= 1_048_576 and body.endswith(b"\n")
    assert get(demo, "/api/sample?size=lots")[0] == 400
    assert get(demo, "/api/sample?size=0")[0] == 400
    assert get(demo, "/api/traces/nope.json.gz")[0] == 404
    assert get(demo, "/api/traces/..%2F..%2Fpyproject.toml")[0] == 404
    assert get(demo, "/../pyproject.toml")[0] == 404
    assert get(demo, "/.hidden")[0] == 404
    assert get(demo, "/lsp")[0] == 426


async def _session(url: str, text: str, encoding: str = "o200k_base") -> dict:
    """initialize, didOpen, one incremental didChange; return the results seen."""
    from websockets.asyncio.client import connect

    ws_url = url.replace("http://", "ws://") + "lsp"
    uri = "file:///t.txt"
    async with connect(ws_url, max_size=1 << 26, origin=url.rstrip("/")) as ws:
        ids = iter(range(1, 100))

        async def send(method, params, request=False):
            msg = {"jsonrpc": "2.0", "method": method, "params": params}
            if request:
                msg["id"] = next(ids)
            await ws.send(json.dumps(msg))
            return msg.get("id")

        async def until(pred):
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if pred(msg):
                    return msg

        rid = await send("initialize", {
            "processId": None, "rootUri": None,
            "capabilities": {"general": {"positionEncodings": ["utf-16"]}},
            "initializationOptions": {"livetok": {"encoding": encoding, "semanticTokens": True}},
        }, request=True)
        init = await until(lambda m: m.get("id") == rid)
        await send("initialized", {})
        await send("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})
        opened = await until(lambda m: m.get("method") == "livetok/didChangeTokenCount")
        # replace the first line's last character with an emoji (UTF-16 positions)
        first = text.split("\n")[0]
        n16 = len(first.encode("utf-16-le")) // 2
        await send("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": n16 - 1},
                                          "end": {"line": 0, "character": n16}},
                                "text": "🙂"}]})
        changed = await until(lambda m: m.get("method") == "livetok/didChangeTokenCount"
                              and m["params"]["version"] == 2)
        rid = await send("textDocument/semanticTokens/range", {
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}},
        }, request=True)
        sem = await until(lambda m: m.get("id") == rid)
        return {"init": init["result"], "opened": opened["params"], "changed": changed["params"],
                "semantic": sem["result"]["data"], "text": first[:-1] + "🙂" + text[len(first):]}


def test_lsp_sessions_over_websocket(demo):
    async def main():
        # two tabs at once, each with its own server and encoding; then a third after they close
        a, b = await asyncio.gather(_session(demo.url, "Grüße, world\nsecond line\n"),
                                    _session(demo.url, "hello there\n", "cl100k_base"))
        c = await _session(demo.url, "a fresh session x\n")
        return a, b, c

    a, b, c = asyncio.run(main())
    assert a["init"]["capabilities"]["positionEncoding"] == "utf-16"
    assert a["init"]["capabilities"]["semanticTokensProvider"]["range"] is True
    for r, name in ((a, "o200k_base"), (b, "cl100k_base"), (c, "o200k_base")):
        ref = tiktoken_ref(name)
        assert r["changed"]["encoding"] == name
        assert r["changed"]["tokens"] == len(ref.encode_ordinary(r["text"]))
        assert r["semantic"], "semantic tokens are on for the demo's sessions"


def test_sample_text():
    s = demo_site.sample_text(100_000)
    assert 90_000 < len(s.encode("utf-8")) <= 100_000
    assert s.endswith("\n") and s.startswith("# ---- ")
    assert demo_site.sample_text(100_000) == s


def test_cli_help_and_missing_page(monkeypatch, tmp_path, capsys):
    out = subprocess.run([sys.executable, "-c", "import sys; from livetok.server.cli.main import main;"
                          " sys.exit(main())", "demo", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for opt in ("--port", "--host", "--no-browser", "--traces"):
        assert opt in out.stdout
    monkeypatch.setattr(cmd_demo, "STATIC_DIR", tmp_path)
    args = argparse.Namespace(port=0, host="127.0.0.1", no_browser=True, traces=None,
                              log_level="WARNING")
    assert cmd_demo.run(args) == 2
    assert "npm run build" in capsys.readouterr().err


# -- what the demo refuses -----------------------------------------------------------------------


def raw(demo: Demo, method: str = "GET", path: str = "/", host: str | None = "",
        headers: tuple[tuple[str, str], ...] = ()) -> tuple[int, dict[str, str], bytes]:
    """One request written by hand (any method, any ``Host``; ``host=None`` sends none) and
    everything the server sent back before closing: status, headers, body bytes."""
    lines = [f"{method} {path} HTTP/1.1"]
    if host is not None:
        lines.append(f"Host: {host or f'127.0.0.1:{demo.port}'}")
    lines += [f"{k}: {v}" for k, v in headers]
    data = b""
    with socket.create_connection(("127.0.0.1", demo.port), timeout=30) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        while chunk := s.recv(1 << 16):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    return int(status_line.split()[1]), dict(h.split(": ", 1) for h in header_lines), body


_UPGRADE = (("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13"))


def _handshake_status(demo: Demo, origin: str | None) -> int:
    """The HTTP status of a ``/lsp`` handshake sent with ``origin`` (None: no Origin)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async def main() -> int:
        try:
            async with connect(demo.url.replace("http://", "ws://") + "lsp", origin=origin,
                               open_timeout=30):
                return 101
        except InvalidStatus as exc:
            return exc.response.status_code

    return asyncio.run(main())


def test_foreign_host_refused(demo):
    """DNS rebinding: a page on evil.example resolved to 127.0.0.1 sends its own name as
    Host; it gets 421 everywhere, the handshake included, and learns nothing."""
    for host in (f"evil.example:{demo.port}", "evil.example", f"127.0.0.1:{demo.port + 1}",
                 f"127.0.0.1.evil.example:{demo.port}", f"localhost:{demo.port}@evil.example"):
        for path in ("/", "/api/config", "/api/traces/sveltecomponent.json.gz",
                     "/api/sample?size=10240"):
            status, _, body = raw(demo, path=path, host=host)
            assert status == 421, (host, path, status)
            assert b"sveltecomponent" not in body and b"version" not in body
        assert raw(demo, path="/lsp", host=host, headers=_UPGRADE)[0] == 421
    assert raw(demo, host=None)[0] == 421  # no Host at all
    assert raw(demo, headers=(("Host", f"localhost:{demo.port}"),))[0] == 421  # two Hosts
    for host in (f"127.0.0.1:{demo.port}", f"localhost:{demo.port}", f"LOCALHOST:{demo.port}",
                 f"[::1]:{demo.port}"):
        assert raw(demo, path="/api/config", host=host)[0] == 200, host


def test_lsp_handshake_needs_the_pages_origin(demo):
    for origin in ("http://evil.example", f"http://evil.example:{demo.port}", "null",
                   f"http://127.0.0.1:{demo.port + 1}", f"https://127.0.0.1:{demo.port}",
                   f"http://127.0.0.1:{demo.port}/lsp", None):
        assert _handshake_status(demo, origin) == 403, origin
    status, _, body = raw(demo, path="/lsp", headers=_UPGRADE + (("Origin", "http://x.test"),))
    assert status == 403 and b"own page" in body
    assert _handshake_status(demo, demo.origin) == 101
    assert _handshake_status(demo, f"http://localhost:{demo.port}") == 101


def test_only_get_and_head(demo):
    for method in ("DELETE", "OPTIONS", "TRACE", "PROPFIND", "POST", "PUT", "PATCH"):
        for path in ("/", "/api/config", "/lsp"):
            status, headers, body = raw(demo, method, path)
            assert status == 405 and headers["Allow"] == "GET, HEAD", (method, path)
            assert b"<script" not in body and b"encodings" not in body
    # HEAD: GET's headers, Content-Length included, and not one byte of body
    get_status, get_headers, get_body = raw(demo, "GET", "/api/config")
    status, headers, body = raw(demo, "HEAD", "/api/config")
    assert status == get_status == 200 and body == b""
    assert headers["Content-Length"] == get_headers["Content-Length"] == str(len(get_body))
    status, headers, body = raw(demo, "HEAD", "/")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 100


def test_sample_sizes(demo):
    for size in demo_site.SAMPLE_SIZES:
        status, headers, body = raw(demo, "HEAD", f"/api/sample?size={size}")
        assert status == 200 and body == b""
        assert 0.9 * size < int(headers["Content-Length"]) <= size
    status, _, body = raw(demo, path="/api/sample?size=10240")
    assert status == 200 and 9000 < len(body) <= 10240 and body.endswith(b"\n")
    for size in ("5", "10241", "1048575", str(64 << 20), "-1", "1e6", "+10240", "%2010240",
                 "%EF%BC%91%EF%BC%90%EF%BC%92%EF%BC%94%EF%BC%90"):  # full-width digits
        status, _, body = raw(demo, path=f"/api/sample?size={size}")
        assert status == 400, size
        assert b"10240, 102400, 1048576, 10485760" in body


def test_errors_show_no_path(demo):
    """404/414 bodies are generic: no install path, no folder, no exception text."""
    secrets = [str(ROOT).encode(), b"static", b"Errno", b"Error", str(TRACES).encode()]
    for path, want in (("/" + "a" * 8000, 414), ("/" + "a" * 9000, 414),
                       ("/missing.js", 404), ("/api/traces/missing.json.gz", 404),
                       ("/api/traces/..%2F..%2Fpyproject.toml", 404), ("/%00.js", 404),
                       ("/a%2F..%2F..%2Fpyproject.toml", 404)):
        status, _, body = raw(demo, path=path)
        assert status == want, (path[:40], status)
        for s in secrets:
            assert s not in body, (path[:40], body)


@pytest.fixture
def traces_demo(tmp_path):
    """A demo whose traces folder holds a trace, a symlink to it, and links that lead out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text('{"secret": "outside the traces folder"}')
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "ok.json").write_text('{"startContent": "", "endContent": "", "txns": []}')
    os.symlink(folder / "ok.json", folder / "alias.json")  # inside: served
    os.symlink(outside / "secret.json", folder / "leak.json")
    os.symlink("../outside/secret.json", folder / "relative-leak.json")
    os.symlink("/etc/passwd", folder / "passwd.json")
    os.symlink(folder / "loop.json", folder / "loop.json")
    (folder / "dir.json").mkdir()
    os.mkfifo(folder / "fifo.json")  # opening it to read would block
    d = Demo("--traces", str(folder))
    yield d
    d.close()


def test_traces_only_regular_files_inside_the_folder(traces_demo):
    cfg = json.loads(raw(traces_demo, path="/api/config")[2])
    assert sorted(t["name"] for t in cfg["traces"]) == ["alias.json", "ok.json"]
    for name in ("ok.json", "alias.json"):
        status, _, body = raw(traces_demo, path=f"/api/traces/{name}")
        assert status == 200 and body.startswith(b'{"startContent"'), name
    for name in ("leak.json", "relative-leak.json", "passwd.json", "loop.json", "dir.json",
                 "fifo.json"):
        status, _, body = raw(traces_demo, path=f"/api/traces/{name}")
        assert status == 404 and body == b"not found\n", (name, status, body)


def test_session_cap(demo):
    """At most MAX_SESSIONS sessions: the next handshake gets 503; closing one frees a place."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    ws_url = demo.url.replace("http://", "ws://") + "lsp"
    cap = cmd_demo.MAX_SESSIONS

    async def main() -> None:
        tabs = [await connect(ws_url, origin=demo.origin, open_timeout=30) for _ in range(cap)]
        try:
            with pytest.raises(InvalidStatus) as refused:
                await connect(ws_url, origin=demo.origin, open_timeout=30)
            assert refused.value.response.status_code == 503
            assert f"at most {cap}".encode() in refused.value.response.body
            await tabs.pop().close()
            # the server ends the closed session right after the close (a hang guard of 60 s,
            # not a race: the first handshake it lets in ends the wait)
            deadline = asyncio.get_running_loop().time() + 60
            while asyncio.get_running_loop().time() < deadline:
                try:
                    tabs.append(await connect(ws_url, origin=demo.origin, open_timeout=30))
                    break
                except InvalidStatus:
                    await asyncio.sleep(0.05)
            assert len(tabs) == cap, "closing a session did not free its place"
        finally:
            await asyncio.gather(*(t.close() for t in tabs))

    asyncio.run(main())
    assert _handshake_status(demo, demo.origin) == 101


# -- the site without a server -------------------------------------------------------------------


def _site(traces=None) -> demo_site.DemoSite:
    site = demo_site.DemoSite(cmd_demo.STATIC_DIR, traces)
    site.hosts = demo_site.AllowedHosts(8765, ["127.0.0.1"])
    return site


def _respond(site, path: str, method: str = "GET"):
    from websockets.datastructures import Headers

    return site.respond(method, path, Headers([("Host", "127.0.0.1:8765")]))


def test_samples_built_once_off_the_event_loop(monkeypatch):
    calls: list[threading.Thread] = []

    def slow_sample(size: int) -> str:
        calls.append(threading.current_thread())
        return "x\n" * (size // 2)

    monkeypatch.setattr(demo_site, "sample_text", slow_sample)
    site = _site()

    async def main():
        first = await asyncio.gather(*(_respond(site, "/api/sample?size=102400")
                                       for _ in range(5)))
        again = await _respond(site, "/api/sample?size=102400", "HEAD")
        return first, again

    first, again = asyncio.run(main())
    assert [r.status_code for r in first] == [200] * 5 and again.status_code == 200
    assert len({r.body for r in first}) == 1 and len(first[0].body) == 102400
    assert len(calls) == 1, "built once for five requests and a HEAD"
    assert calls[0] is not threading.main_thread(), "built on the event loop's thread"


def test_unexpected_error_logged_not_shown(monkeypatch, caplog):
    site = _site()
    where = str(cmd_demo.STATIC_DIR)

    def broken() -> dict:
        raise PermissionError(f"[Errno 13] Permission denied: '{where}'")

    monkeypatch.setattr(site, "config", broken)
    with caplog.at_level("ERROR", logger="livetok.server.demo.site"):
        r = asyncio.run(_respond(site, "/api/config"))
    assert r.status_code == 500 and where.encode() not in r.body and b"Errno" not in r.body
    assert where in caplog.text  # the details are in the server's log


def test_allowed_hosts():
    loop = demo_site.AllowedHosts(8765, ["127.0.0.1"])
    assert not loop.host_ok("192.168.1.5:8765") and not loop.host_ok("127.0.0.2:8765")
    lan = demo_site.AllowedHosts(8765, ["192.168.1.5"])
    assert lan.host_ok("192.168.1.5:8765") and lan.host_ok("localhost:8765")
    assert not lan.host_ok("10.0.0.1:8765") and not lan.host_ok("evil.example:8765")
    v6 = demo_site.AllowedHosts(8765, ["fe80::1%eth0"])
    assert v6.host_ok("[fe80::1]:8765") and not v6.host_ok("fe80::1:8765")
    named = demo_site.AllowedHosts(8765, ["192.168.1.5"], "mybox.lan")
    assert named.host_ok("MyBox.lan:8765") and named.origin_ok("http://mybox.lan:8765")
    # a wildcard address: any IP literal (what a DNS-rebinding page cannot send), no domain
    anyip = demo_site.AllowedHosts(8765, ["0.0.0.0"])
    assert anyip.host_ok("192.168.1.5:8765") and anyip.host_ok("[2001:db8::1]:8765")
    assert not anyip.host_ok("evil.example:8765") and not anyip.host_ok("192.168.1.5:80")
    # port 80: browsers leave the port out
    web = demo_site.AllowedHosts(80, ["127.0.0.1"])
    assert web.host_ok("localhost") and web.host_ok("localhost:80")
    assert web.origin_ok("http://localhost") and not web.origin_ok("http://localhost@evil.example")


def test_binding_beyond_loopback_warns(monkeypatch, tmp_path, capsys):
    """`--host 0.0.0.0` prints what becomes reachable (the socket is faked: tests listen on
    loopback only)."""
    async def fake_serve(host, port, site, stop, on_listening=None, **kw):
        on_listening([(host, 8765)])

    monkeypatch.setattr(cmd_demo, "serve_demo", fake_serve)
    # run() sets these loggers' levels for the command line: leave them as they were
    loggers = [logging.getLogger(name) for name in ("pygls", "websockets")]
    levels = [lg.level for lg in loggers]
    try:
        for host, warned in (("0.0.0.0", True), ("::", True), ("192.168.1.5", True),
                             ("127.0.0.1", False), ("::1", False)):
            args = argparse.Namespace(port=0, host=host, no_browser=True, traces=str(tmp_path),
                                      log_level="WARNING")
            assert cmd_demo.run(args) == 0
            err = capsys.readouterr().err
            assert ("warning: listening on" in err) == warned, (host, err)
            if warned:
                assert "other machines" in err and "--host 127.0.0.1" in err
                assert str(tmp_path) in err
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def test_doctests_of_the_demo_modules():
    import doctest

    for mod in (cmd_demo, demo_site):
        assert doctest.testmod(mod).failed == 0, mod.__name__


def test_a_page_that_does_not_read_is_cut_off(demo):
    """Answers a session's client has not read are held up to MAX_SEND_QUEUE_BYTES; past
    that the demo closes the connection instead of holding more (the client here reads
    nothing while asking for 0.72 MB of semantic tokens 150 times: 108 MB, past the bound
    plus what the two sockets' kernel buffers may take in (up to 32 MB received and 4 MB sent
    here: ``net.ipv4.tcp_rmem``/``tcp_wmem``; with 40 requests, 29 MB, whether it was cut
    depended on how far those buffers had grown)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    text = "hello world, a line of text with tokens 12345\n" * 4000
    said = "has not read"
    before = sum(said in line for line in demo.log)

    def msg(method: str, params: dict, rid: int | None = None) -> str:
        return json.dumps({"jsonrpc": "2.0", "method": method, "params": params,
                           **({"id": rid} if rid is not None else {})})

    async def main() -> None:
        async with connect(demo.url.replace("http://", "ws://") + "lsp", origin=demo.origin,
                           max_queue=1, max_size=1 << 26, open_timeout=30) as ws:
            await ws.send(msg("initialize", {
                "processId": None, "rootUri": None, "capabilities": {},
                "initializationOptions": {"livetok": {"semanticTokens": True}}}, 1))
            await asyncio.wait_for(ws.recv(), 30)
            await ws.send(msg("initialized", {}))
            await ws.send(msg("textDocument/didOpen", {"textDocument": {
                "uri": "file:///a.txt", "languageId": "plaintext", "version": 1, "text": text}}))
            for i in range(150):
                await ws.send(msg("textDocument/semanticTokens/full",
                                  {"textDocument": {"uri": "file:///a.txt"}}, 10 + i))
            for _ in range(3000):  # the cut-off is logged (5 min guard: 60 s ran out under load)
                if sum(said in line for line in demo.log) > before:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the demo kept the answers of a client that reads none")
            with pytest.raises(ConnectionClosed):  # what was sent before the cut, then the end
                for _ in range(100):
                    await asyncio.wait_for(ws.recv(), 30)

    asyncio.run(main())
    assert _handshake_status(demo, demo.origin) == 101  # the demo goes on


def test_document_size_capped_per_session():
    """Each session counts documents up to a ceiling the page cannot lift: asking for no
    limit (``maxDocumentSize: null``) still leaves a longer document uncounted. The demo runs
    in this process here, with a ceiling of 1,000 code points."""
    from websockets.asyncio.client import connect

    async def main() -> None:
        stop = asyncio.Event()
        listening: asyncio.Future = asyncio.get_running_loop().create_future()
        site = demo_site.DemoSite(cmd_demo.STATIC_DIR, None)
        server = asyncio.create_task(cmd_demo.serve_demo(
            "127.0.0.1", 0, site, stop, listening.set_result, max_document_chars=1000))
        try:
            port = (await asyncio.wait_for(listening, 30))[0][1]
            async with connect(f"ws://127.0.0.1:{port}/lsp", origin=f"http://127.0.0.1:{port}",
                               open_timeout=30) as ws:
                async def until(pred):
                    while True:
                        msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
                        if pred(msg):
                            return msg

                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                          "params": {"processId": None, "capabilities": {},
                                                     "initializationOptions": {"livetok": {
                                                         "maxDocumentSize": None}}}}))
                await until(lambda m: m.get("id") == 1)
                for uri, text in (("file:///big.txt", "x " * 600), ("file:///ok.txt", "x " * 400)):
                    await ws.send(json.dumps({
                        "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                            "textDocument": {"uri": uri, "languageId": "plaintext",
                                             "version": 1, "text": text}}}))
                await until(lambda m: "over livetok.maxDocumentSize (1,000)" in json.dumps(m))
                counted = await until(lambda m: m.get("method") == "livetok/didChangeTokenCount")
                assert counted["params"]["uri"] == "file:///ok.txt"
        finally:
            stop.set()
            await asyncio.wait_for(server, 30)

    asyncio.run(main())
