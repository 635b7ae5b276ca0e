"""Soak benchmark: memory and latency over a long day of typing, in the core and the server.

Writes ``docs/benchmarks-soak.md`` and ``docs/img/bench_soak.png``::

    .venv/bin/python benchmarks/bench_soak.py            # 1,000,000 core edits, 200,000 server edits
    .venv/bin/python benchmarks/bench_soak.py --quick    # 60,000 and 20,000 (a couple of minutes)

What is measured (o200k_base, a 1 MB prefix of the real-text corpus):

* **core**: a ``Document`` takes random one-character edits (insert a letter, a space or a line
  break, or delete a character; uniform positions, seeded), with ``tracemalloc`` tracing every
  allocation from the first edit on. Every ``1/50`` of the run: the traced memory and the median
  time of an edit in that stretch. The growth is counted from the end of the warm-up (the
  first tenth of the edits), when the piece caches have reached their working size.
* **server**: ``python -m livetok.server`` over stdio takes random one-character edits as
  ``didChange`` messages, in batches of 100, each batch followed by a ``livetok/tokenCount``
  request whose answer the client awaits. Every 1/50 of the run: the server's resident set
  (``VmRSS`` from ``/proc``) and the median time per edit of the batches in that stretch
  (batch round trip / 100, client included). The growth is counted from edit 20,000 (2,000 in
  ``--quick``).

Both runs end with a check: the count equals tiktoken on the expected text.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DOCS,
    Log,
    corpus_note,
    fmt_s,
    livetok_encoding,
    machine_info,
    md_table,
    median,
    pyplot,
    real_text,
    tiktoken_ref,
    write_page,
)
from bench_server import server_session, utf16_len  # noqa: E402

ENCODING = "o200k_base"
SIZE = 1_000_000
ALPHABET = "abcdefghijklmnopqrstuvwxyz    \n"
SAMPLES = 50
BATCH = 100


@dataclass
class Series:
    """Samples of one run: edits done, memory in bytes, median seconds per edit."""

    what: str
    edits: list[int] = field(default_factory=list)
    memory: list[int] = field(default_factory=list)
    per_edit: list[float] = field(default_factory=list)
    warm_index: int = 0
    ok: bool = False

    def sample(self, k: int, memory: int, times: list[float], warm: int, log: Log,
               what: str) -> None:
        """Record a sample after ``k`` edits (``times``: the stretch's seconds per edit)."""
        self.edits.append(k)
        self.memory.append(memory)
        self.per_edit.append(median(times))
        if k <= warm:
            self.warm_index = len(self.edits) - 1
        if len(self.edits) % 10 == 0:
            log(f"  {self.what.split()[0]}: {k:,} edits, {what} {memory / 1e6:.1f} MB, "
                f"median {self.per_edit[-1] * 1e6:.1f} us per edit")

    @property
    def growth(self) -> int:
        """Memory at the end minus memory at the end of the warm-up."""
        return self.memory[-1] - self.memory[self.warm_index]

    @property
    def peak_growth(self) -> int:
        return max(self.memory[self.warm_index:]) - self.memory[self.warm_index]


def _mb(n: float) -> str:
    return f"{n / 1e6:+.1f} MB" if n else "0 MB"


# -- core ------------------------------------------------------------------------------------


def core_run(text: str, n_edits: int, log: Log) -> Series:
    from livetok.incremental import Document, get_encoding

    series = Series("core `Document` (traced memory)")
    rng = random.Random(7)
    doc = Document(text, encoding=get_encoding(ENCODING))
    step = max(1, n_edits // SAMPLES)
    warm = n_edits // 10
    gc.collect()
    tracemalloc.start(1)
    times: list[float] = []
    for k in range(1, n_edits + 1):
        n = doc.length
        if n == 0 or rng.random() < 0.55:
            p = rng.randrange(n + 1)
            t = time.perf_counter()
            doc.edit(p, p, rng.choice(ALPHABET))
        else:
            p = rng.randrange(n)
            t = time.perf_counter()
            doc.edit(p, p + 1, "")
        times.append(time.perf_counter() - t)
        if k % step == 0:
            gc.collect()
            series.sample(k, tracemalloc.get_traced_memory()[0], times, warm, log, "traced")
            times = []
    tracemalloc.stop()
    ref = tiktoken_ref(livetok_encoding(ENCODING))
    series.ok = doc.token_ids() == ref.encode_ordinary(doc.text)
    return series


# -- server ----------------------------------------------------------------------------------


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def server_run(text: str, n_edits: int, warm_edits: int, log: Log) -> Series:
    series = Series("server (resident set)")
    rng = random.Random(11)
    lines = text.split("\n")
    uri = "file:///soak/doc.txt"
    async with server_session() as (proc, client):
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})
        await client.wait_count(1, 3600)
        version = 1
        step = max(BATCH, n_edits // SAMPLES // BATCH * BATCH)
        batch_times: list[float] = []
        for k0 in range(0, n_edits, BATCH):
            t = time.perf_counter()
            for _ in range(BATCH):
                version += 1
                i = rng.randrange(len(lines))
                line = lines[i]
                if line and rng.random() >= 0.55:
                    c = rng.randrange(len(line))
                    col = utf16_len(line[:c])
                    end = col + utf16_len(line[c])
                    lines[i] = line[:c] + line[c + 1:]
                    new = ""
                else:
                    c = rng.randrange(len(line) + 1)
                    col = end = utf16_len(line[:c])
                    new = rng.choice(ALPHABET[:-1])  # no line breaks: lines stay aligned
                    lines[i] = line[:c] + new + line[c:]
                client.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": {"start": {"line": i, "character": col},
                                                  "end": {"line": i, "character": end}},
                                        "text": new}]})
            await client.request("livetok/tokenCount", {"textDocument": {"uri": uri}})
            batch_times.append((time.perf_counter() - t) / BATCH)
            k = k0 + BATCH
            if k % step == 0:
                series.sample(k, _rss(proc.pid), batch_times, warm_edits, log, "RSS")
                batch_times = []
        last = await client.request("livetok/tokenCount", {"textDocument": {"uri": uri}})
        ref = tiktoken_ref(livetok_encoding(ENCODING))
        final = "\n".join(lines)
        series.ok = last["result"]["tokens"] == len(ref.encode_ordinary(final))
    return series


# -- report ----------------------------------------------------------------------------------


def plot(runs: list[Series], path: Path) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    fig, axes = plt.subplots(len(runs), 2, figsize=(10, 3.2 * len(runs)), squeeze=False)
    for row, s in zip(axes, runs):
        row[0].plot(s.edits, [m / 1e6 for m in s.memory], marker=".")
        row[0].axvline(s.edits[s.warm_index], color="grey", linestyle=":")
        row[0].set_title(f"{s.what}: memory")
        row[0].set_xlabel("edits")
        row[0].set_ylabel("MB")
        row[1].plot(s.edits, [t * 1e6 for t in s.per_edit], marker=".", color="tab:orange")
        row[1].set_title(f"{s.what}: median time per edit")
        row[1].set_xlabel("edits")
        row[1].set_ylabel("µs")
        row[1].set_ylim(bottom=0)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def table(s: Series) -> str:
    picks = sorted({0, s.warm_index, len(s.edits) // 4, len(s.edits) // 2,
                    3 * len(s.edits) // 4, len(s.edits) - 1})
    rows = [[f"{s.edits[i]:,}", f"{s.memory[i] / 1e6:.1f} MB",
             _mb(s.memory[i] - s.memory[s.warm_index]), fmt_s(s.per_edit[i])] for i in picks]
    return md_table(["edits", "memory", "since warm-up", "median per edit"], rows, align="rrrr")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="60,000 core and 20,000 server edits")
    ap.add_argument("--core-edits", type=int)
    ap.add_argument("--server-edits", type=int)
    ap.add_argument("--out", default=str(DOCS / "benchmarks-soak.md"))
    args = ap.parse_args()
    core_n = args.core_edits or (60_000 if args.quick else 1_000_000)
    server_n = args.server_edits or (20_000 if args.quick else 200_000)
    server_warm = server_n // 10
    log = Log()
    info = machine_info()
    text = real_text(SIZE).replace("\r", "")
    log(f"server: {server_n:,} edits")
    srv = asyncio.run(server_run(text, server_n, server_warm, log))
    log(f"core: {core_n:,} edits")
    core = core_run(text, core_n, log)
    runs = [core, srv]
    img = DOCS / "img" / "bench_soak.png"
    has_plot = plot(runs, img)
    command = " ".join(["python benchmarks/bench_soak.py", *sys.argv[1:]])
    summary = md_table(
        ["run", "edits", "warm-up", "memory growth after warm-up (end / peak)",
         "median per edit (first / last stretch)", "final count = tiktoken"],
        [[s.what, f"{s.edits[-1]:,}", f"{s.edits[s.warm_index]:,}",
          f"{_mb(s.growth)} / {_mb(s.peak_growth)}",
          f"{fmt_s(s.per_edit[s.warm_index])} / {fmt_s(s.per_edit[-1])}",
          "yes" if s.ok else "**NO**"] for s in runs],
        align="lrrrrl")
    md = [
        "# Soak benchmark: a day of typing",
        "",
        "Does memory stay flat while a user types into a large document all day? Random "
        "one-character edits (insert a letter, a space or a line break, or delete one "
        "character, at uniform positions) into a 1 MB document, `o200k_base`: in the core "
        "`Document` with `tracemalloc` tracing every allocation, and through the language "
        "server over stdio (batches of 100 `didChange` messages, each followed by a "
        "`livetok/tokenCount` request), reading the server's resident set from `/proc`. "
        "Targets (issue 15): the server's RSS within +20 MB of its value after the first "
        "20,000 edits, the core's traced memory within +5 MB after warm-up, latency flat.",
        "",
        corpus_note(),
        "",
        summary,
        "",
    ]
    if has_plot:
        md += ["![memory and time per edit against edits](img/bench_soak.png)", ""]
    for s in runs:
        md += [f"## {s.what}", "", table(s), ""]
    md += [
        "What is bounded and how: pygls's table of pending handlers no longer keeps an entry "
        "per notification (it held one per `didOpen`/`didChange`/`didClose`: ~1.9 KB per "
        "edit as issue 15 measured it), "
        "and every piece memo of the encodings is a two-generation cache of at most "
        "`LIVETOK_PIECE_CACHE` entries per generation (default 16,384; see "
        "[algorithms](algorithms.md#piece-caches)). The time per edit in the core run "
        "includes `tracemalloc`'s cost on every allocation; the server run's includes the "
        "client's JSON encoding and the round trip.",
        "",
    ]
    write_page(Path(args.out), md, info, log, command)
    return 0 if all(s.ok for s in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
