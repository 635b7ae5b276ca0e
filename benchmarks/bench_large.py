"""Large documents through the server: memory while a big file opens, and the other documents'
latency meanwhile.

Writes ``docs/benchmarks-large.md``::

    .venv/bin/python benchmarks/bench_large.py                # 20 MB and 100 MB
    .venv/bin/python benchmarks/bench_large.py --sizes 20     # one size

For each size a fresh ``python -m livetok.server`` (stdio, o200k_base) is initialized and a small
document is opened and counted (the vocabulary is loaded then: that resident set is the
*base*). The client then sends the big ``didOpen`` (a prefix of the real-text corpus) and, until
the big document's first ``livetok/didChangeTokenCount`` arrives, keeps editing the small document
and awaiting a ``livetok/tokenCount`` for it (one every 10 ms). A thread reads the server's
``VmRSS`` from ``/proc`` every 10 ms. Reported: the peak resident set above the base during the
open, the steady one 2 s after the first count (after a few edits in the big document), both
divided by the text's UTF-8 size (issue 15's targets: peak <= 6x, steady <= 3x), the time to the
first count, and the small document's round trips: the first one (queued behind the big message
itself, which is read and decoded as one JSON text on the server's thread) and the others.
The big document's count is checked against tiktoken.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DOCS,
    MB,
    Log,
    corpus_note,
    fmt_s,
    livetok_encoding,
    machine_info,
    md_table,
    median,
    percentile,
    real_text,
    tiktoken_ref,
    write_page,
)
from bench_server import server_session  # noqa: E402
from bench_soak import _rss  # noqa: E402


@dataclass
class Run:
    size_bytes: int
    base: int = 0
    peak: int = 0
    steady: int = 0
    first_count_s: float = float("nan")
    first_rt: float = float("nan")
    rts: list[float] = field(default_factory=list)
    ok: bool = False


class Sampler(threading.Thread):
    """The highest ``VmRSS`` of a process, read every 10 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, _rss(self.pid))
            except (OSError, RuntimeError):
                return
            time.sleep(0.01)


async def one_run(text: str, log: Log) -> Run:
    run = Run(len(text.encode("utf-8")))
    small, big = "file:///small.txt", "file:///big.txt"
    async with server_session(unit="utf-32") as (proc, client):
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": small, "languageId": "plaintext", "version": 1, "text": "hello"}})
        await client.request("livetok/tokenCount", {"textDocument": {"uri": small}})
        await asyncio.sleep(1.0)
        run.base = _rss(proc.pid)
        sampler = Sampler(proc.pid)
        sampler.start()
        t0 = client.notify("textDocument/didOpen", {"textDocument": {
            "uri": big, "languageId": "plaintext", "version": 1, "text": text}})
        version, length = 1, 5
        while 1 not in client.counts or client.counts[1][1]["uri"] != big:
            version += 1
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": small, "version": version},
                "contentChanges": [{"range": {"start": {"line": 0, "character": length},
                                              "end": {"line": 0, "character": length}},
                                    "text": "x"}]})
            length += 1
            t = time.perf_counter()
            await client.request("livetok/tokenCount", {"textDocument": {"uri": small}})
            rt = time.perf_counter() - t
            if run.first_rt != run.first_rt:  # nan: the first one
                run.first_rt = rt
            else:
                run.rts.append(rt)
            await asyncio.sleep(0.01)
            big_count = [c for v, c in client.counts.items() if c[1].get("uri") == big]
            if big_count:
                break
        got = await client.request("livetok/tokenCount", {"textDocument": {"uri": big}})
        run.first_count_s = time.perf_counter() - t0
        for k in range(20):  # a few keystrokes in the big document
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": big, "version": 2 + k},
                "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                              "end": {"line": 0, "character": 0}},
                                    "text": "y"}]})
        await client.request("livetok/tokenCount", {"textDocument": {"uri": big}})
        await asyncio.sleep(2.0)
        sampler.stop.set()
        run.peak = sampler.peak
        run.steady = _rss(proc.pid)
        ref = tiktoken_ref(livetok_encoding("o200k_base"))
        run.ok = got["result"]["tokens"] == len(ref.encode_ordinary(text))
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20,100", help="document sizes in MB (comma-separated)")
    ap.add_argument("--out", default=str(DOCS / "benchmarks-large.md"))
    args = ap.parse_args()
    log = Log()
    info = machine_info()
    runs = []
    for mb in [int(x) for x in args.sizes.split(",")]:
        log(f"{mb} MB")
        r = asyncio.run(one_run(real_text(mb * MB), log))
        log(f"  base {r.base / 1e6:.0f} MB, peak +{(r.peak - r.base) / 1e6:.0f} MB, steady "
            f"+{(r.steady - r.base) / 1e6:.0f} MB, first count {r.first_count_s:.1f} s, "
            f"round trips: first {r.first_rt * 1e3:.0f} ms, then max "
            f"{max(r.rts, default=0) * 1e3:.0f} ms; exact: {r.ok}")
        runs.append(r)
    rows = [[
        f"{r.size_bytes / 1e6:.0f} MB",
        f"{r.base / 1e6:.0f} MB",
        f"+{(r.peak - r.base) / 1e6:.0f} MB ({(r.peak - r.base) / r.size_bytes:.1f}x)",
        f"+{(r.steady - r.base) / 1e6:.0f} MB ({(r.steady - r.base) / r.size_bytes:.1f}x)",
        fmt_s(r.first_count_s),
        fmt_s(r.first_rt),
        f"{len(r.rts)}: {fmt_s(median(r.rts))} / {fmt_s(percentile(r.rts, 99))} / "
        f"{fmt_s(max(r.rts, default=float('nan')))}",
        "yes" if r.ok else "**NO**",
    ] for r in runs]
    md = [
        "# Large documents through the server",
        "",
        "A big `didOpen` over stdio while another document is being edited (o200k_base). "
        "*Base*: the server's resident set with the vocabulary loaded and a small document "
        "open. *Peak* and *steady*: the resident set above the base during the open (read "
        "every 10 ms) and 2 s after the first count; the ratios divide by the text's UTF-8 "
        "size (issue 15's targets: peak at most 6x, steady at most 3x). The small document's "
        "round trips (an edit and a `livetok/tokenCount`, one every 10 ms until the big "
        "document's first count): the first one waits behind the big message, which the "
        "server reads and decodes as one JSON text on its only message thread; the others "
        "run while the big document is tokenized in the worker thread (target: 50 ms).",
        "",
        corpus_note(),
        "",
        md_table(["document", "base RSS", "peak", "steady", "didOpen -> first count",
                  "first round trip", "later round trips: n: median / p99 / max",
                  "count = tiktoken"], rows, align="rrrrrrrl"),
        "",
    ]
    write_page(Path(args.out), md, info, log,
               " ".join(["python benchmarks/bench_large.py", *sys.argv[1:]]))
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
