"""The floor for ``bench_server.py``: the least a Python language server can do per keystroke.

It reads each framed message (``Content-Length`` header, body) from stdin with a blocking
buffered read, parses the body with ``json.loads``, and for a ``didOpen`` or ``didChange``
writes ``livetok/didChangeTokenCount`` (the fields livetok sends, ``tokens`` and
``characters`` 0: it counts nothing) with ``json.dumps``, in the same thread, no event loop.
It answers ``initialize`` and ``shutdown`` and stops at ``exit`` or end of input. What
livetok spends beyond this per keystroke is its own layers and its core edit
(``docs/benchmarks-server.md``, issue 36). Run it as ``python benchmarks/floor_server.py``.
"""

from __future__ import annotations

import json
import sys

COUNTED = ("textDocument/didOpen", "textDocument/didChange")


def write(out: object, message: dict[str, object]) -> None:
    body = json.dumps(message).encode("utf-8")
    out.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))  # type: ignore[attr-defined]
    out.flush()  # type: ignore[attr-defined]


def serve(inp: object, out: object) -> int:
    while True:
        length = -1
        while line := inp.readline():  # type: ignore[attr-defined]
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length < 0:
            return 0
        msg = json.loads(inp.read(length))  # type: ignore[attr-defined]
        method = msg.get("method")
        if method in COUNTED:
            doc = msg["params"]["textDocument"]
            write(out, {"jsonrpc": "2.0", "method": "livetok/didChangeTokenCount", "params": {
                "uri": doc["uri"], "version": doc["version"], "encoding": "floor",
                "tokens": 0, "characters": 0}})
        elif method == "initialize":
            write(out, {"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {
                "textDocumentSync": 2}}})
        elif method == "shutdown":
            write(out, {"jsonrpc": "2.0", "id": msg["id"], "result": None})
        elif method == "exit":
            return 0


if __name__ == "__main__":
    sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))
