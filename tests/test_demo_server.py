"""``livetok demo`` without a browser: its HTTP routes, the LSP session on ``/lsp`` (one server
per WebSocket), the samples and the command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest

from livetok.server import cmd_demo

from ._refs import tiktoken_ref
from .conftest import TRACES

pytest.importorskip("websockets", reason="livetok demo needs the websockets package")


class Demo:
    """A ``livetok demo --port 0 --no-browser`` subprocess and its URL."""

    def __init__(self, *extra: str) -> None:
        cmd = [sys.executable, "-c", "import sys; from livetok.server.cli import main; "
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
    async with connect(ws_url, max_size=1 << 26) as ws:
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
    s = cmd_demo.sample_text(100_000)
    assert 90_000 < len(s.encode("utf-8")) <= 100_000
    assert s.endswith("\n") and s.startswith("# ---- ")
    assert cmd_demo.sample_text(100_000) == s


def test_cli_help_and_missing_page(monkeypatch, tmp_path, capsys):
    out = subprocess.run([sys.executable, "-c", "import sys; from livetok.server.cli import main;"
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
