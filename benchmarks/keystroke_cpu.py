"""CPU per keystroke inside the language server, in process: the server's part of a keystroke
against the core's edit.

A server is made in this process and its input callback (``transport.take``, what the
stdio reader calls with the bytes it read) is handed the same framed ``didChange`` messages
``bench_server.py`` types (one character at the end of the middle line of real text, every
8th a backspace); the count each writes goes to a writer that drops it. The thread's CPU
time (``time.thread_time``) over the keystrokes is divided by their number, and so is the
time spent inside ``Document.edit_at`` (the one call into the core), so that the rest is the
server's own: framing, parsing and checking the message, the converter, the pending batch,
the line index and publishing. No event loop and no pipe: what ``bench_server.py``'s floor
table adds to this is the loop's turn, the reads and writes, and running cold between
keystrokes (``docs/benchmarks-server.md``, "Where a keystroke's time goes").

Run as ``python benchmarks/keystroke_cpu.py [SIZE_KB ...]`` (default 1000); ``--rounds``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import real_text  # noqa: E402
from bench_server import keystroke, utf16_len  # noqa: E402

from livetok.incremental import document as core_document  # noqa: E402
from livetok.server.lsp.framing import Framer  # noqa: E402
from livetok.server.lsp.session import create_server  # noqa: E402
from livetok.server.lsp.transport import take  # noqa: E402

URI = "file:///bench/keystroke.txt"
WARMUP = 200


class _Drop:
    """A writer that keeps nothing (counts how many messages were written)."""

    def __init__(self) -> None:
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1

    def close(self) -> None:
        pass


def _framed(msg: dict[str, Any]) -> bytes:
    body = json.dumps(msg).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def measure(size: int, keystrokes: int, rounds: int) -> list[tuple[float, float]]:
    """``(CPU per keystroke, of which inside Document.edit_at)`` in seconds, per round."""
    text = real_text(size)
    server = create_server()
    out = _Drop()
    server.protocol.set_writer(out)
    framer = Framer()
    for msg in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"capabilities": {}}},
                {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                    "uri": URI, "languageId": "plaintext", "version": 1, "text": text}}}):
        take(framer, server.protocol, "bench", _framed(msg))
    lines = text.split("\n")
    line = len(lines) // 2
    col = utf16_len(lines[line])
    messages = []
    for k in range(WARMUP + keystrokes * rounds):
        rng, new, col = keystroke(k, lines, line, col)
        messages.append(_framed({"jsonrpc": "2.0", "method": "textDocument/didChange",
                                 "params": {"textDocument": {"uri": URI, "version": k + 2},
                                            "contentChanges": [{"range": rng, "text": new}]}}))
    inside = [0.0]
    edit_at = core_document.Document.edit_at

    def timed(self: Any, *args: Any) -> Any:
        started = time.thread_time()
        try:
            return edit_at(self, *args)
        finally:
            inside[0] += time.thread_time() - started

    core_document.Document.edit_at = timed  # type: ignore[method-assign]
    try:
        for data in messages[:WARMUP]:
            take(framer, server.protocol, "bench", data)
        gc.collect()
        results = []
        for r in range(rounds):
            inside[0] = 0.0
            started = time.thread_time()
            for data in messages[WARMUP + r * keystrokes:WARMUP + (r + 1) * keystrokes]:
                take(framer, server.protocol, "bench", data)
            results.append(((time.thread_time() - started) / keystrokes,
                            inside[0] / keystrokes))
    finally:
        core_document.Document.edit_at = edit_at  # type: ignore[method-assign]
    od = server.store.get(URI)
    assert od.doc is not None and od.lines.length == len("\n".join(lines)), "wrong text"
    assert out.writes >= WARMUP + keystrokes * rounds, "a keystroke wrote no count"
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=[1000], help="sizes in KB")
    ap.add_argument("--keystrokes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for size in args.sizes:
        results = measure(size * 1000, args.keystrokes, args.rounds)
        print(f"{size:>6} KB: per keystroke " + ", ".join(
            f"{total * 1e6:.1f} us (edit_at {core * 1e6:.1f}, rest {(total - core) * 1e6:.1f})"
            for total, core in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
