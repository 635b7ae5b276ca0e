"""Language server benchmark: keystroke -> ``livetok/didChangeTokenCount`` latency over stdio.

Writes ``docs/benchmarks-server.md`` and ``docs/img/bench_server.png``::

    .venv/bin/python benchmarks/bench_server.py            # 100 KB, 1 MB, 10 MB (several minutes)
    .venv/bin/python benchmarks/bench_server.py --quick    # 100 KB and 1 MB, fewer keystrokes
    .venv/bin/python benchmarks/bench_server.py --compare-only  # only the livetok.compare run

For each document size (a prefix of the real-text corpus, see ``_common.real_text``) and each
server, a small asyncio client written here (no pygls on the client side, so its overhead is
not measured) starts the server as a subprocess, initializes it, opens the document, and then
types: one ``didChange`` per keystroke (a character inserted in the middle line of the
document; every 8th keystroke a backspace), waiting for the ``livetok/didChangeTokenCount``
that carries that keystroke's version before sending the next. The latency of a keystroke is
the wall time from writing its ``didChange`` to reading that notification, so it includes
JSON-RPC framing, decoding, the position conversion, the incremental update and the
notification's trip back.

Servers:

* **livetok**: ``python -m livetok.server`` (incremental ``Document`` + line index);
* **baseline**: ``benchmarks/baseline_server.py``, a plain pygls server that keeps the text in
  pygls's workspace and re-encodes the whole document with tiktoken (Rust) after each change.

After the last keystroke the client checks the server's count against tiktoken on its own
copy of the text; a run that reports a wrong count fails the benchmark.

Cold starts (:func:`cold_starts`): a fresh process per run, spawn -> ``initialize`` answered,
and a ``didOpen`` sent right after ``initialized`` -> its first count; both servers alternate.

Several encodings (:func:`compare_run`, issue 29): two livetok servers, one with
``livetok.compare`` listing three encodings (:data:`COMPARE`), typed the same keystrokes in
turn (so that the machine's load drifts hit both); the ratio of their p50 latencies is what
comparing costs per keystroke. ``--compare-only`` runs only that and rewrites only its section
of the page.

A/B of checkouts (:func:`run_ab`, issue 35's no-regression check): ``--checkout NAME=PATH``
twice (or more) runs only that and rewrites only its section: the keystrokes above typed in
turn into the servers of checkouts of the repository (``_ab.py`` runs each one's code in
this venv), at 1 MB (``--ab-size``), p50 / p99 and CPU per keystroke and their ratios::

    git worktree add --detach ../ab_old 121e51a; git worktree add --detach ../ab_new HEAD
    .venv/bin/python benchmarks/bench_server.py --checkout before=../ab_old \\
        --checkout after=../ab_new [--ab-rounds 3] [--ab-keystrokes 300]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _ab  # noqa: E402
from _common import (  # noqa: E402
    kept_section,
    DOCS,
    KB,
    MB,
    Log,
    corpus_note,
    fmt_ratio,
    fmt_s,
    fmt_size,
    livetok_encoding,
    machine_info,
    md_table,
    median,
    percentile,
    pyplot,
    real_text,
    tiktoken_ref,
    write_page,
)

HERE = Path(__file__).resolve().parent
SERVERS = {
    "livetok": [sys.executable, "-m", "livetok.server"],
    "baseline": [sys.executable, str(HERE / "baseline_server.py")],
    "floor": [sys.executable, str(HERE / "floor_server.py")],
}
TYPED = "the quick brown fox jumps over a lazy dog "


class Client:
    """A minimal LSP client over a subprocess's stdio (Content-Length framing)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.pending: dict[int, asyncio.Future] = {}
        self.counts: dict[int, tuple[float, dict]] = {}  # version -> (arrival time, params)
        self.last: dict[int, dict] = {}  # version -> the params that arrived last
        self.count_event = asyncio.Event()
        self.init_s = float("nan")
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = await out.readline()
                if not line:
                    return
                if line.strip() == b"":
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await out.readexactly(length or 0)
            now = time.perf_counter()
            msg = json.loads(body)
            if "id" in msg and "method" not in msg:
                fut = self.pending.pop(msg["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
            elif msg.get("method") == "livetok/didChangeTokenCount":
                p = msg["params"]
                self.counts.setdefault(p["version"], (now, p))  # the first to arrive
                self.last[p["version"]] = p
                self.count_event.set()
            elif "id" in msg:  # a server -> client request (progress create): answer it
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})

    def send(self, msg: dict) -> float:
        body = json.dumps(msg).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return time.perf_counter()

    async def request(self, method: str, params: Any) -> dict:
        self.next_id += 1
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = fut
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        await self.proc.stdin.drain()  # type: ignore[union-attr]
        return await fut

    def notify(self, method: str, params: Any) -> float:
        return self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def wait_count(self, version: int, timeout: float) -> tuple[float, dict]:
        deadline = time.perf_counter() + timeout
        while True:
            hit = [v for v in self.counts if v >= version]
            if hit:
                return self.counts[min(hit)]
            self.count_event.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no count for version {version}")
            await asyncio.wait_for(self.count_event.wait(), left)


@contextlib.asynccontextmanager
async def server_session(server: str = "livetok", unit: str = "utf-16",
                         options: dict[str, Any] | None = None,
                         checkout: _ab.Checkout | None = None,
                         ) -> AsyncIterator[tuple[asyncio.subprocess.Process, Client]]:
    """A started and initialized server process and its client (``options``: its
    ``initializationOptions``; ``checkout``: that checkout's livetok server instead of
    ``server``); shut down (or killed) after. ``client.init_s``: from spawning the process to
    reading the ``initialize`` answer (the request is written at once)."""
    spawned = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *(checkout.argv() if checkout else SERVERS[server]), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, limit=1 << 26,
        env=checkout.env if checkout else None, cwd=checkout.cwd if checkout else None)
    client = Client(proc)
    try:
        await client.request("initialize", {
            "processId": os.getpid(), "rootUri": None,
            "capabilities": {"general": {"positionEncodings": [unit]}},
            "initializationOptions": options})
        client.init_s = time.perf_counter() - spawned
        client.notify("initialized", {})
        yield proc, client
        await client.request("shutdown", None)
        client.notify("exit", None)
        await asyncio.wait_for(proc.wait(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        client.reader.cancel()


@dataclass
class Run:
    server: str
    size: int
    open_s: float = float("nan")
    latencies: list[float] = field(default_factory=list)
    #: bursts of BURST keystrokes sent without waiting: last keystroke written -> the answer
    #: to a livetok/tokenCount sent right after it
    bursts: list[float] = field(default_factory=list)
    ok: bool = False


BURST = 500


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def keystroke(k: int, lines: list[str], line: int, col: int,
              ) -> tuple[dict[str, Any], str, int]:
    """Keystroke ``k`` of the typing at the end of ``lines[line]`` (UTF-16 column ``col``):
    a character of :data:`TYPED`, every 8th a backspace. Applied to ``lines``; returns the
    change's range and text, and the new column."""
    if k % 8 == 7 and col > 0:  # backspace
        lines[line] = lines[line][:-1]
        return ({"start": {"line": line, "character": col - 1},
                 "end": {"line": line, "character": col}}, "", col - 1)
    ch = TYPED[k % len(TYPED)]
    lines[line] += ch
    return ({"start": {"line": line, "character": col},
             "end": {"line": line, "character": col}}, ch, col + 1)


async def one_run(server: str, text: str, keystrokes: int, log: Log) -> Run:
    run = Run(server, len(text))
    async with server_session(server) as (proc, client):
        uri = "file:///bench/doc.txt"
        t0 = client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})
        t1, _ = await client.wait_count(1, 3600)
        run.open_s = t1 - t0
        lines = text.split("\n")
        line = len(lines) // 2
        col = utf16_len(lines[line])
        doc_lines = lines
        version = 1
        for k in range(keystrokes):
            version += 1
            rng, new, col = keystroke(k, doc_lines, line, col)
            sent = client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": rng, "text": new}]})
            got, _ = await client.wait_count(version, 600)
            run.latencies.append(got - sent)
        for _ in range(5 if server == "livetok" else 0):
            await asyncio.sleep(0.5)
            for k in range(BURST):
                version += 1
                ch = TYPED[k % len(TYPED)]
                client.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                                  "end": {"line": line, "character": col}},
                                        "text": ch}]})
                doc_lines[line] += ch
                col += 1
            await proc.stdin.drain()  # type: ignore[union-attr]
            last = time.perf_counter()
            await client.request("livetok/tokenCount", {"textDocument": {"uri": uri}})
            run.bursts.append(time.perf_counter() - last)
        final_text = "\n".join(doc_lines)
        _, last = await client.wait_count(version, 600)
        ref = tiktoken_ref(livetok_encoding("o200k_base"))
        expected = len(ref.encode_ordinary(final_text))
        run.ok = last["tokens"] == expected and last["characters"] == len(final_text)
        if not run.ok:
            log(f"  WRONG COUNT from {server}: {last['tokens']} != {expected}")
    return run


@dataclass
class ColdStart:
    """A fresh server per run: spawn -> ``initialize`` answered, and ``didOpen`` sent right
    after ``initialized`` -> the first count of that document."""

    server: str
    init_s: list[float] = field(default_factory=list)
    first_count_s: list[float] = field(default_factory=list)
    #: livetok only: ``didOpen`` -> the answers to tokenCount, hover and codeLens sent right after
    requests_s: list[float] = field(default_factory=list)
    ok: bool = True


async def cold_run(server: str, text: str, cold: ColdStart, log: Log) -> None:
    """One cold start of ``server`` (appended to ``cold``): ``initialize`` written as soon as
    the process is spawned, ``initialized`` and ``didOpen`` back to back once it is answered."""
    async with server_session(server) as (_, client):
        cold.init_s.append(client.init_s)
        sent = client.notify("textDocument/didOpen", {"textDocument": {
            "uri": "file:///bench/cold.txt", "languageId": "plaintext", "version": 1,
            "text": text}})
        answers: list[dict] = []
        if server == "livetok":  # the requests an editor sends about a file it just opened
            doc = {"textDocument": {"uri": "file:///bench/cold.txt"}}
            answers = list(await asyncio.gather(
                client.request("livetok/tokenCount", doc),
                client.request("textDocument/hover",
                               {**doc, "position": {"line": 3, "character": 2}}),
                client.request("textDocument/codeLens", doc)))
            cold.requests_s.append(time.perf_counter() - sent)
        got, count = await client.wait_count(1, 600)
        cold.first_count_s.append(got - sent)
        # the reference after the clock stops: the client must not hold up its own requests
        expected = len(tiktoken_ref(livetok_encoding("o200k_base")).encode_ordinary(text))
        if answers and (any("result" not in a for a in answers)
                        or answers[0]["result"]["tokens"] != expected):
            cold.ok = False
            log(f"  WRONG ANSWERS from {server}: {answers}")
        if count["tokens"] != expected or count["characters"] != len(text):
            cold.ok = False
            log(f"  WRONG FIRST COUNT from {server}: {count['tokens']} != {expected}")


COLD_RUNS = 10
COLD_SIZE = 100 * KB


def cold_starts(runs: int, log: Log) -> list[ColdStart]:
    """``runs`` cold starts of each server, alternating (so that load drifts hit both)."""
    text = real_text(COLD_SIZE)
    colds = [ColdStart("livetok"), ColdStart("baseline")]
    for i in range(runs):
        for cold in colds:
            asyncio.run(cold_run(cold.server, text, cold, log))
    for cold in colds:
        log(f"{cold.server} cold start ({runs} runs): initialize {fmt_s(median(cold.init_s))}, "
            f"first count of {fmt_size(COLD_SIZE)} {fmt_s(median(cold.first_count_s))}"
            + (f", requests answered {fmt_s(median(cold.requests_s))}" if cold.requests_s
               else "") + f" (medians), exact: {cold.ok}")
    return colds


#: the encodings of the compare run: one of each tokenizer family besides the document's own
#: o200k_base (byte-level BPE, WordPiece, SentencePiece BPE)
COMPARE = ["cl100k_base", "bert-base-uncased", "mistral-7b-v0.1"]
COMPARE_SIZE = 100 * KB
COMPARE_KEYSTROKES = 400
#: issue 29's bound on the p50 ratio
COMPARE_TARGET = 3.5
COMPARE_HEADING = "## Several encodings side by side (`livetok.compare`)"


@dataclass
class CompareRun:
    """The same keystrokes typed into a server without and one with ``livetok.compare``."""

    size: int
    plain: list[float] = field(default_factory=list)
    compared: list[float] = field(default_factory=list)
    #: every final count (the document's and each compared one) = its reference library's
    ok: bool = False
    info: dict[str, str] = field(default_factory=dict)
    end_load: str = ""


def _compare_references(text: str) -> dict[str, int]:
    """The reference libraries' counts of ``text`` under each of :data:`COMPARE`."""
    import sentencepiece
    from tokenizers import BertWordPieceTokenizer

    bert = livetok_encoding("bert-base-uncased")
    mistral = livetok_encoding("mistral-7b-v0.1")
    hf_bert = BertWordPieceTokenizer(dict(bert.vocab), lowercase=True)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(mistral.source))
    return {
        "cl100k_base": len(tiktoken_ref(livetok_encoding("cl100k_base")).encode_ordinary(text)),
        "bert-base-uncased": len(hf_bert.encode(text, add_special_tokens=False).ids),
        "mistral-7b-v0.1": len(sp.encode(text)),
    }


async def compare_run(text: str, keystrokes: int, log: Log) -> CompareRun:
    """Keystrokes as in :func:`one_run` (a character typed in the middle line, every 8th a
    backspace, each waiting for its count), each sent to the plain server and then to the
    one comparing :data:`COMPARE`; the final counts are checked against the references."""
    run = CompareRun(len(text), info=machine_info())
    uri = "file:///bench/compare.txt"
    async with contextlib.AsyncExitStack() as stack:
        plain = (await stack.enter_async_context(server_session()))[1]
        compared = (await stack.enter_async_context(
            server_session(options={"livetok": {"compare": COMPARE}})))[1]
        for client in (plain, compared):
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})
        await plain.wait_count(1, 3600)
        while True:  # the stdio front's first count has no compare list: the server's next
            compared.count_event.clear()
            if [c["encoding"] for c in compared.last.get(1, {}).get("compare", [])] == COMPARE:
                break
            await asyncio.wait_for(compared.count_event.wait(), 3600)
        lines = text.split("\n")
        line = len(lines) // 2
        col = utf16_len(lines[line])
        for k in range(keystrokes):
            version = k + 2
            rng, new, col = keystroke(k, lines, line, col)
            for client, out in ((plain, run.plain), (compared, run.compared)):
                sent = client.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": rng, "text": new}]})
                got, _ = await client.wait_count(version, 600)
                out.append(got - sent)
        final = "\n".join(lines)
        expected = len(tiktoken_ref(livetok_encoding("o200k_base")).encode_ordinary(final))
        refs = _compare_references(final)
        _, last_plain = await plain.wait_count(keystrokes + 1, 600)
        _, last = await compared.wait_count(keystrokes + 1, 600)
        got_compare = {c["encoding"]: c["tokens"] for c in last.get("compare", [])}
        run.ok = (last_plain["tokens"] == last["tokens"] == expected
                  and "compare" not in last_plain and got_compare == refs
                  and all(c["exact"] for c in last["compare"]))
        if not run.ok:
            log(f"  WRONG COUNTS: {last_plain['tokens']}, {last['tokens']} (tiktoken "
                f"{expected}); compared {got_compare} (references {refs})")
    run.end_load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return run


def compare_section(run: CompareRun, command: str) -> list[str]:
    """The page's section on :func:`compare_run`."""
    p50, c50 = median(run.plain), median(run.compared)
    ratio = c50 / p50
    row = [fmt_size(run.size), str(len(run.plain)),
           f"{fmt_s(p50)} / {fmt_s(percentile(run.plain, 99))}",
           f"{fmt_s(c50)} / {fmt_s(percentile(run.compared, 99))}",
           fmt_ratio(ratio), f"≤ {COMPARE_TARGET}×" + ("" if ratio <= COMPARE_TARGET else
                                                      " (**missed**)"),
           "yes" if run.ok else "**NO**"]
    return [
        COMPARE_HEADING,
        "",
        "The same keystrokes (as above: one character typed in the middle line, every 8th a "
        "backspace, each waiting for its count) typed in turn into two livetok servers over "
        "stdio, one counting `o200k_base` alone and one with `livetok.compare` = "
        + ", ".join(f"`{n}`" for n in COMPARE) + " (a byte-level BPE, a WordPiece and a "
        "SentencePiece encoding beside the document's own): each compared encoding is one "
        "more core `Document` edited incrementally on every keystroke, and the notification "
        "carries its count. Typing into both in turn lets the machine's load drift hit "
        "both alike; the ratio of the medians is what comparing costs per keystroke. The "
        "final counts are checked against tiktoken, HuggingFace `tokenizers` (BERT) and "
        "`sentencepiece`.",
        "",
        md_table(["document", "keystrokes (each server)", "o200k_base alone p50 / p99",
                  "with 3 compared p50 / p99", "ratio (p50)", "target (issue 29)",
                  "final counts = references"], [row], align="lrrrrll"),
        "",
        f"Measured {run.info.get('date', '?')} with `{command}`, load average (1/5/15 min) "
        f"{run.info.get('load', '?')} at the start and {run.end_load} at the end "
        f"({run.info.get('nproc', '?')} cores, shared with other jobs).",
        "",
    ]


def replace_section(page: Path, section: list[str]) -> None:
    """Put ``section`` (a heading and its text) in place of the page's section of the same
    heading (before ``## Cold start`` when it has none)."""
    text = page.read_text(encoding="utf-8")
    body = "\n".join(section) + "\n"
    heading = re.escape(section[0])
    if re.search(f"^{heading}$", text, flags=re.M):
        text = re.sub(f"^{heading}\n.*?(?=^## )", lambda _m: body, text, count=1,
                      flags=re.M | re.S)
    else:
        text = text.replace("## Cold start\n", body + "## Cold start\n", 1)
    page.write_text(text, encoding="utf-8")
    print(f"wrote {page}")


def run_compare(log: Log) -> CompareRun:
    text = real_text(COMPARE_SIZE)
    log(f"compare: {fmt_size(COMPARE_SIZE)}, {COMPARE_KEYSTROKES} keystrokes, "
        f"o200k_base alone and with livetok.compare = {COMPARE}")
    run = asyncio.run(compare_run(text, COMPARE_KEYSTROKES, log))
    log(f"  p50 {fmt_s(median(run.plain))} alone, {fmt_s(median(run.compared))} compared: "
        f"{fmt_ratio(median(run.compared) / median(run.plain))}, counts ok: {run.ok}")
    return run


#: keystrokes typed into each of livetok and the floor per size (issue 36 measured 600)
FLOOR_KEYSTROKES = 600
#: keystrokes typed into both first, not measured (what the open left to do runs meanwhile)
FLOOR_WARMUP = 20
#: issue 36's bounds: livetok's p50 and p99 over the floor's, same run
FLOOR_P50_TARGET = 2.5
FLOOR_P99_TARGET = 5.0
FLOOR_HEADING = "## Against the floor"


@dataclass
class FloorRun:
    """The same keystrokes typed in turn into livetok and :file:`floor_server.py`."""

    size: int
    livetok: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    #: CPU time each server's main thread spent over all the keystrokes, seconds
    livetok_cpu: float = float("nan")
    floor_cpu: float = float("nan")
    #: livetok's final count = tiktoken's
    ok: bool = False


def cpu_s(pid: int) -> float:
    """CPU time the main thread of process ``pid`` has run so far (Linux' schedstat, in
    nanoseconds); NaN elsewhere. Unlike wall time it does not grow with the machine's load.
    Both servers read, handle and answer a keystroke in their main thread (livetok's worker
    threads build big documents; they come and go, so a sum over threads would lose the
    time of those that ended)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return float("nan")


async def floor_run(text: str, keystrokes: int, log: Log) -> FloorRun:
    """Keystrokes as in :func:`one_run`, each sent to both servers in turn (which goes first
    alternates), each waiting for its count, after :data:`FLOOR_WARMUP` not measured;
    livetok's final count is checked."""
    run = FloorRun(len(text))
    uri = "file:///bench/floor.txt"
    async with contextlib.AsyncExitStack() as stack:
        lt_proc, livetok = await stack.enter_async_context(server_session("livetok"))
        fl_proc, floor = await stack.enter_async_context(server_session("floor"))
        for client in (livetok, floor):
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})
            await client.wait_count(1, 3600)
        await asyncio.sleep(1.0)  # the open's after-work (a collection, memory given back)
        lines = text.split("\n")
        line = len(lines) // 2
        col = utf16_len(lines[line])
        pair = ((livetok, run.livetok), (floor, run.floor))
        cpu0 = (0.0, 0.0)
        for k in range(FLOOR_WARMUP + keystrokes):
            version = k + 2
            if k == FLOOR_WARMUP:
                cpu0 = cpu_s(lt_proc.pid), cpu_s(fl_proc.pid)
            rng, new, col = keystroke(k, lines, line, col)
            for client, out in (pair if k % 2 == 0 else pair[::-1]):
                sent = client.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": rng, "text": new}]})
                got, _ = await client.wait_count(version, 600)
                if k >= FLOOR_WARMUP:
                    out.append(got - sent)
        run.livetok_cpu = cpu_s(lt_proc.pid) - cpu0[0]
        run.floor_cpu = cpu_s(fl_proc.pid) - cpu0[1]
        final = "\n".join(lines)
        expected = len(tiktoken_ref(livetok_encoding("o200k_base")).encode_ordinary(final))
        _, last = await livetok.wait_count(FLOOR_WARMUP + keystrokes + 1, 600)
        run.ok = last["tokens"] == expected and last["characters"] == len(final)
        if not run.ok:
            log(f"  WRONG COUNT from livetok: {last['tokens']} != {expected}")
    return run


def floor_rows(runs: list[FloorRun]) -> list[list[str]]:
    """One row per size: both p50 / p99, the ratios against the targets, exactness."""
    rows = []
    for run in runs:
        n = len(run.livetok)
        r50 = median(run.livetok) / median(run.floor)
        r99 = percentile(run.livetok, 99) / percentile(run.floor, 99)
        rows.append([
            fmt_size(run.size), str(len(run.livetok)),
            f"{fmt_s(median(run.floor))} / {fmt_s(percentile(run.floor, 99))}",
            f"{fmt_s(median(run.livetok))} / {fmt_s(percentile(run.livetok, 99))}",
            fmt_ratio(r50) + ("" if r50 <= FLOOR_P50_TARGET else " (**missed**)"),
            fmt_ratio(r99) + ("" if r99 <= FLOOR_P99_TARGET else " (**missed**)"),
            f"{fmt_s(run.floor_cpu / n)} / {fmt_s(run.livetok_cpu / n)} "
            f"({fmt_ratio(run.livetok_cpu / run.floor_cpu)})",
            "yes" if run.ok else "**NO**"])
    return rows


def floor_section(runs: list[FloorRun], info: dict[str, str], end_load: str,
                  command: str) -> list[str]:
    """The page's section on :func:`floor_run`."""
    return [
        FLOOR_HEADING,
        "",
        "The same keystrokes typed in turn into `livetok serve` and the floor "
        "(`benchmarks/floor_server.py`: one thread, no event loop, a blocking buffered read "
        "of each framed message, `json.loads`, and a `livetok/didChangeTokenCount` written "
        "with `json.dumps`; it counts nothing), which of the two goes first alternating, each "
        "keystroke waiting for its count. What livetok spends beyond the floor is its own "
        "layers and its core edit. The CPU column is each server's main-thread CPU time over "
        "all the keystrokes (Linux `schedstat`; both read, handle and answer a keystroke "
        "there) divided by their number: unlike "
        "the latencies it does not grow with the machine's load. Targets (issue 36): "
        "livetok's p50 ≤ "
        f"{FLOOR_P50_TARGET}× the floor's, p99 ≤ {FLOOR_P99_TARGET}× the floor's p99.",
        "",
        md_table(["document", "keystrokes (each server)", "floor p50 / p99",
                  "livetok p50 / p99", f"p50 ratio (≤ {FLOOR_P50_TARGET}×)",
                  f"p99 ratio (≤ {FLOOR_P99_TARGET}×)",
                  "CPU per keystroke, floor / livetok (ratio)", "final count = tiktoken"],
                 floor_rows(runs), align="lrrrrrrl"),
        "",
        f"Measured {info.get('date', '?')} with `{command}`, load average (1/5/15 min) "
        f"{info.get('load', '?')} at the start and {end_load} at the end "
        f"({info.get('nproc', '?')} cores, shared with other jobs).",
        "",
    ]


#: a section of the page written by hand (a profile), kept when the page is written again
PROFILE_HEADING = "## Where a keystroke's time goes"


def run_floor(sizes: list[int], keystrokes: int, log: Log) -> list[FloorRun]:
    runs = []
    for size in sizes:
        log(f"floor: {fmt_size(size)}, {keystrokes} keystrokes into livetok and the floor in turn")
        run = asyncio.run(floor_run(real_text(size), keystrokes, log))
        log(f"  floor p50 {fmt_s(median(run.floor))} p99 {fmt_s(percentile(run.floor, 99))}; "
            f"livetok p50 {fmt_s(median(run.livetok))} p99 "
            f"{fmt_s(percentile(run.livetok, 99))}: "
            f"{fmt_ratio(median(run.livetok) / median(run.floor))} / "
            f"{fmt_ratio(percentile(run.livetok, 99) / percentile(run.floor, 99))}; CPU "
            f"{fmt_s(run.floor_cpu / keystrokes)} / {fmt_s(run.livetok_cpu / keystrokes)}, "
            f"count ok: {run.ok}")
        runs.append(run)
    return runs


def keystrokes_for(server: str, size: int, quick: bool) -> int:
    if server == "livetok":
        return 100 if quick else 400
    # the baseline re-encodes everything per keystroke: fewer keystrokes at large sizes
    n = {100 * KB: 400, 1 * MB: 100, 10 * MB: 25}.get(size, 25)
    return max(10, n // 4) if quick else n


def plot(runs: list[Run], path: Path) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for server, color in (("livetok", "tab:blue"), ("baseline", "tab:red")):
        rs = sorted((r for r in runs if r.server == server), key=lambda r: r.size)
        xs = [r.size for r in rs]
        ax.plot(xs, [median(r.latencies) * 1e3 for r in rs], "o-", color=color,
                label=f"{server} p50")
        ax.plot(xs, [percentile(r.latencies, 99) * 1e3 for r in rs], "s--", color=color,
                alpha=0.6, label=f"{server} p99")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("document size (code points)")
    ax.set_ylabel("keystroke → count notification (ms)")
    ax.set_title("Language server latency per keystroke (stdio, o200k_base)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")
    return True


#: the A/B of checkouts (``--checkout``, issue 35's no-regression check)
AB_HEADING = "## A/B against the code before issue 35"
AB_SIZE = 1 * MB
AB_ROUNDS = 3
AB_KEYSTROKES = 300
#: keystrokes typed into both first in each round, not measured
AB_WARMUP = 20
#: keystrokes typed into one server back to back, as the page types them, before the next
#: server's turn at the same keystrokes: each server's work after writing a count overlaps its
#: own next keystroke, as it would alone (alternating keystroke by keystroke charged it to the
#: other server's, on two shared cores: the code with less of it looked slower)
AB_BLOCK = 20
#: the pause before each block: the server before finishes what it does after its last count
AB_GAP_S = 0.01


@dataclass
class ABSide:
    """One checkout's keystrokes over the rounds of :func:`run_ab`."""

    checkout: _ab.Checkout
    latencies: list[float] = field(default_factory=list)
    #: the median of each round
    round_p50: list[float] = field(default_factory=list)
    #: CPU seconds of the server's threads over the measured keystrokes, summed over rounds
    cpu: float = 0.0
    #: every round's final count = tiktoken's
    ok: bool = True


async def ab_round(sides: list[ABSide], text: str, keystrokes: int, reference: Any,
                   log: Log) -> None:
    """One round: a fresh server of each checkout (started together), the document opened in
    each, then the page's keystrokes (:func:`keystroke`), each waiting for its count, typed
    into each server in turn in blocks of :data:`AB_BLOCK` (the same keystrokes into each, the
    first of ``sides`` first and then the order rotating, ``_ab.turn``); the first
    :data:`AB_WARMUP` not measured. Each server's final count is checked against
    ``reference`` (tiktoken's ``o200k_base``)."""
    uri = "file:///bench/ab.txt"
    async with contextlib.AsyncExitStack() as stack:
        started = await asyncio.gather(*(stack.enter_async_context(server_session(
            checkout=side.checkout)) for side in sides))
        open_ = [(side, proc, client) for side, (proc, client) in zip(sides, started)]
        for _, _, client in open_:
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})
        for _, _, client in open_:  # the document built, not only its first count
            await client.wait_count(1, 3600)
            await client.request("livetok/tokenCount", {"textDocument": {"uri": uri}})
        if len(text) >= 100 * KB:
            await asyncio.sleep(1.0)  # the open's after-work (a collection, memory given back)
        lines = text.split("\n")
        line = len(lines) // 2
        col = utf16_len(lines[line])
        changes = []
        for k in range(AB_WARMUP + keystrokes):
            rng, new, col = keystroke(k, lines, line, col)
            changes.append({"range": rng, "text": new})
        blocks = [range(AB_WARMUP)] + [
            range(k, min(k + AB_BLOCK, len(changes)))
            for k in range(AB_WARMUP, len(changes), AB_BLOCK)]
        cpu0 = [0.0] * len(open_)
        latencies: list[list[float]] = [[] for _ in open_]
        for b, block in enumerate(blocks):
            if b == 1:
                cpu0 = [_ab.threads_cpu(proc.pid) for _, proc, _ in open_]
            for i in _ab.turn(len(open_), b):
                client = open_[i][2]
                await asyncio.sleep(AB_GAP_S)
                for k in block:
                    sent = client.notify("textDocument/didChange", {
                        "textDocument": {"uri": uri, "version": k + 2},
                        "contentChanges": [changes[k]]})
                    got, _ = await client.wait_count(k + 2, 600)
                    if b:
                        latencies[i].append(got - sent)
        final = "\n".join(lines)
        expected = len(reference.encode_ordinary(final))
        for (side, proc, client), lat, c0 in zip(open_, latencies, cpu0):
            side.cpu += _ab.threads_cpu(proc.pid) - c0
            side.latencies += lat
            side.round_p50.append(median(lat))
            _, last = await client.wait_count(AB_WARMUP + keystrokes + 1, 600)
            if last["tokens"] != expected or last["characters"] != len(final):
                side.ok = False
                log(f"  WRONG COUNT from {side.checkout.name}: {last['tokens']} != {expected}")


def run_ab(checkouts: list[_ab.Checkout], size: int, rounds: int, keystrokes: int,
           log: Log) -> list[ABSide]:
    """``rounds`` rounds of :func:`ab_round`, the order of the checkouts rotating every
    round (the first round's servers fill their vocabulary caches: the open is not timed)."""
    sides = [ABSide(c) for c in checkouts]
    text = real_text(size)
    reference = tiktoken_ref(livetok_encoding("o200k_base"))
    for r in range(rounds):
        order = [sides[i] for i in _ab.turn(len(sides), r)]
        asyncio.run(ab_round(order, text, keystrokes, reference, log))
        log(f"A/B round {r + 1}: " + ", ".join(
            f"{s.checkout.name} p50 {fmt_s(s.round_p50[-1])}" for s in order)
            + f" (load {_ab.load()})")
    return sides


def ab_section(sides: list[ABSide], size: int, rounds: int, info: dict[str, str],
               command: str) -> list[str]:
    """The page's section on :func:`run_ab`: p50 / p99 and CPU per keystroke per checkout,
    and their ratios to the first checkout's."""
    ref = sides[0]
    ref_p50, ref_cpu = median(ref.latencies), ref.cpu / len(ref.latencies)
    rows = []
    for s in sides:
        p50, cpu = median(s.latencies), s.cpu / len(s.latencies)
        rows.append([s.checkout.name, _ab.describe(s.checkout.path), f"{len(s.latencies):,}",
                     " / ".join(fmt_s(x) for x in s.round_p50),
                     f"{fmt_s(p50)} / {fmt_s(percentile(s.latencies, 99))}",
                     _ab.ratio(p50, ref_p50), fmt_s(cpu), _ab.ratio(cpu, ref_cpu),
                     "yes" if s.ok else "**NO**"])
    return [
        AB_HEADING,
        "",
        f"The keystrokes above (one character typed in the middle line of {fmt_size(size)}, "
        "every 8th a backspace, `o200k_base`, UTF-16, each waiting for its count) typed in "
        f"turn into the servers of the checkouts, in blocks of {AB_BLOCK} (a server types a "
        "block of keystrokes as above, then the next server the same block), the order "
        f"rotating block by block (each goes first equally often); {rounds} "
        f"round{'s' * (rounds != 1)}, each with fresh servers, the first block's order "
        f"rotating every round, {AB_WARMUP} unmeasured keystrokes first. Typed keystroke by "
        "keystroke in turn instead, a server's work after writing its count would fall on "
        "the next server's keystroke. The CPU column is the CPU time of all the "
        "server's threads over the measured keystrokes (Linux `schedstat` of each thread: a "
        "server that reads its input in a worker thread is charged for it) divided by their "
        "number. Each checkout runs in this venv from its own folder (`benchmarks/_ab.py`); "
        "every final count is checked against tiktoken. "
        + _ab.notes([s.checkout for s in sides]),
        "",
        md_table(["checkout", "commit", "keystrokes", "p50 per round", "p50 / p99",
                  f"p50 / {ref.checkout.name}", "CPU per keystroke",
                  f"CPU / {ref.checkout.name}", "final counts = tiktoken"], rows,
                 align="llrrrrrrl"),
        "",
        f"Measured {info.get('date', '?')} with `{command}`, load average (1/5/15 min) "
        f"{info.get('load', '?')} at the start and {_ab.load()} at the end "
        f"({info.get('nproc', '?')} cores, shared with other jobs).",
        "",
    ]


def ab_main(args: argparse.Namespace, error: Callable[[str], NoReturn], log: Log) -> int:
    """``--checkout`` given: run only the A/B and put its section in the page."""
    import tempfile

    info = machine_info()
    with tempfile.TemporaryDirectory() as tmp:
        checkouts = _ab.checkouts(args.checkout, Path(tmp), error)
        sides = run_ab(checkouts, args.ab_size, args.ab_rounds, args.ab_keystrokes, log)
    command = ("python benchmarks/bench_server.py " + " ".join(
        f"--checkout {c}" for c in args.checkout) + f" --ab-size {args.ab_size} --ab-rounds "
        f"{args.ab_rounds} --ab-keystrokes {args.ab_keystrokes}")
    section = ab_section(sides, args.ab_size, args.ab_rounds, info, command)
    print("\n".join(section))
    _ab.put_section(Path(args.out), section, before="## Cold start")
    return 0 if all(s.ok for s in sides) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="100 KB and 1 MB, fewer keystrokes")
    ap.add_argument("--out", default=str(DOCS / "benchmarks-server.md"))
    ap.add_argument("--cold-runs", type=int, default=None,
                    help=f"cold starts per server (default {COLD_RUNS}, 3 with --quick)")
    ap.add_argument("--compare-only", action="store_true",
                    help="run only the livetok.compare comparison and rewrite only its "
                    "section of the page")
    ap.add_argument("--floor-only", action="store_true",
                    help="run only livetok against the floor server and rewrite only that "
                    "section of the page")
    ap.add_argument("--sizes", default=None,
                    help="with --floor-only: sizes in KB, comma-separated (default 100,1000,"
                    "10000)")
    ap.add_argument("--checkout", action="append", metavar="NAME=PATH",
                    help="A/B mode: a checkout of the repository (give two; the first is the "
                    "reference of the ratios); runs only the A/B and rewrites only its section")
    ap.add_argument("--ab-size", type=int, default=AB_SIZE, help="A/B: code points")
    ap.add_argument("--ab-rounds", type=int, default=AB_ROUNDS)
    ap.add_argument("--ab-keystrokes", type=int, default=AB_KEYSTROKES,
                    help="A/B: measured keystrokes per round and checkout")
    args = ap.parse_args()
    log = Log()
    if args.checkout:
        return ab_main(args, ap.error, log)
    if args.floor_only:
        info = machine_info()
        sizes = ([int(x) * KB for x in args.sizes.split(",")] if args.sizes
                 else [100 * KB, 1 * MB, 10 * MB])
        floors = run_floor(sizes, FLOOR_KEYSTROKES, log)
        end_load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
        replace_section(Path(args.out), floor_section(
            floors, info, end_load, "python benchmarks/bench_server.py --floor-only"))
        return 0 if all(r.ok for r in floors) else 1
    if args.compare_only:
        run = run_compare(log)
        replace_section(Path(args.out), compare_section(
            run, "python benchmarks/bench_server.py --compare-only"))
        return 0 if run.ok else 1
    info = machine_info()
    colds = cold_starts(args.cold_runs or (3 if args.quick else COLD_RUNS), log)
    sizes = [100 * KB, 1 * MB] if args.quick else [100 * KB, 1 * MB, 10 * MB]
    runs: list[Run] = []
    for size in sizes:
        text = real_text(size)
        for server in ("livetok", "baseline"):
            n = keystrokes_for(server, size, args.quick)
            log(f"{server}: {fmt_size(size)}, {n} keystrokes")
            r = asyncio.run(one_run(server, text, n, log))
            log(f"  open {fmt_s(r.open_s)}, p50 {fmt_s(median(r.latencies))}, "
                f"p99 {fmt_s(percentile(r.latencies, 99))}, count ok: {r.ok}")
            runs.append(r)
    floor_info = machine_info()
    floors = run_floor(sizes, 200 if args.quick else FLOOR_KEYSTROKES, log)
    floor_end_load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    compared = run_compare(log)
    rows = []
    for size in sizes:
        lt = next(r for r in runs if r.server == "livetok" and r.size == size)
        bl = next(r for r in runs if r.server == "baseline" and r.size == size)
        rows.append([
            fmt_size(size),
            f"{fmt_s(median(lt.latencies))} / {fmt_s(percentile(lt.latencies, 99))}",
            f"{fmt_s(median(bl.latencies))} / {fmt_s(percentile(bl.latencies, 99))}",
            fmt_ratio(median(bl.latencies) / median(lt.latencies)),
            f"{len(lt.latencies)} / {len(bl.latencies)}",
            f"{fmt_s(lt.open_s)} / {fmt_s(bl.open_s)}",
            f"{fmt_s(median(lt.bursts))} / {fmt_s(max(lt.bursts, default=float('nan')))}",
            "yes" if lt.ok and bl.ok else "**NO**",
        ])
    lt_cold, bl_cold = colds
    cold_rows = [
        ["spawn → `initialize` answered", fmt_s(median(lt_cold.init_s)),
         fmt_s(median(bl_cold.init_s)), "≤ 250 ms"],
        [f"fresh server: `didOpen` of {fmt_size(COLD_SIZE)} right after `initialized` → "
         "first count", fmt_s(median(lt_cold.first_count_s)),
         fmt_s(median(bl_cold.first_count_s)), "≤ 150 ms"],
        [f"fresh server: `livetok/tokenCount`, `hover` and `codeLens` sent right after that "
         "`didOpen` → all three answered", fmt_s(median(lt_cold.requests_s)), "—", "≤ 300 ms"],
        ["first counts = tiktoken", "yes" if lt_cold.ok else "**NO**",
         "yes" if bl_cold.ok else "**NO**", ""],
    ]
    img = DOCS / "img" / "bench_server.png"
    has_plot = plot(runs, img)
    command = "python benchmarks/bench_server.py" + (" --quick" if args.quick else "")
    md = [
        "# Language server benchmark",
        "",
        "Latency of one keystroke as an editor sees it: from writing a `textDocument/didChange` "
        "(one character inserted in the middle line of the document, every 8th keystroke a "
        "backspace) to reading the `livetok/didChangeTokenCount` notification that carries "
        "that change's version, over stdio, the client waiting for each notification before "
        "typing the next character. Encoding `o200k_base`, positions in UTF-16.",
        "",
        "- **livetok**: `python -m livetok.server` (incremental `Document` and line index).",
        "- **baseline**: `benchmarks/baseline_server.py`, a plain pygls server that keeps the "
        "text in pygls's workspace and re-encodes the whole document with tiktoken (Rust) "
        "after each change.",
        "",
        corpus_note(),
        "",
        md_table(
            ["document", "livetok p50 / p99", "baseline p50 / p99", "baseline ÷ livetok (p50)",
             "keystrokes (livetok / baseline)", "didOpen → first count (livetok / baseline)",
             f"livetok, burst of {BURST}: last keystroke → count (median / max of 5)",
             "final count = tiktoken"],
            rows, align="lrrrrrrl"),
        "",
    ]
    if has_plot:
        md += ["![keystroke latency against document size](img/bench_server.png)", ""]
    md += floor_section(floors, floor_info, floor_end_load, command)
    md += kept_section(Path(args.out), PROFILE_HEADING)
    md += compare_section(compared, command)
    md += kept_section(Path(args.out), AB_HEADING)
    md += [
        "## Cold start",
        "",
        f"A fresh server process per run, {len(lt_cold.init_s)} runs per server, the two "
        "servers alternating; medians. The client writes `initialize` as soon as it has "
        "spawned the process (the time runs from the spawn to reading the answer), then "
        "`initialized` and a `didOpen` of the 100 KB prefix back to back as soon as it has "
        "the answer (the time runs from writing the `didOpen` to reading the first "
        "`livetok/didChangeTokenCount` for it). livetok answers `initialize` and counts the "
        "first documents before pygls and lsprotocol are imported (`server/lsp/front.py`), "
        "and answers the requests an editor sends about a file it has just opened (token "
        "count, hover, code lenses) from the document it built, which the server then keeps; "
        "the baseline loads its tiktoken encoding before it starts serving (and answers none "
        "of those requests).",
        "",
        md_table(["", "livetok", "baseline", "target (livetok; issues 18 and 28)"], cold_rows,
                 align="lrrl"),
        "",
    ]
    md += [
        "Both servers are single Python processes; the client is a small asyncio JSON-RPC "
        "client in the benchmark script (no pygls on the client side). The baseline's time is "
        "dominated by re-encoding the whole text, so it grows linearly with the document; "
        "livetok's per-keystroke work depends on the edit, not on the document size (what "
        "remains is `O(log n)` lookups in the core's token sequence and the line index, plus "
        "the line index's `O(n / 512)` prefix-sum rebuild). didOpen is the other way round: livetok's first "
        "tokenization is pure Python, the baseline's is Rust.",
        "",
        f"A *burst* is {BURST} keystrokes of prose written without waiting (a client that "
        "replays a macro, or typing faster than the server answers), then a `livetok/tokenCount` request: the column "
        "gives the time from writing the last keystroke to reading that request's answer "
        "(target: 100 ms), five bursts per size, 0.5 s apart.",
        "",
        "Markdown code lenses (sections and a count per section) on adversarial documents: "
        "[benchmarks-markdown.md](benchmarks-markdown.md). Memory over a long day of typing: "
        "[benchmarks-soak.md](benchmarks-soak.md); big files while others are edited: "
        "[benchmarks-large.md](benchmarks-large.md).",
        "",
    ]
    write_page(Path(args.out), md, info, log, command)
    return 0 if (all(r.ok for r in runs) and all(c.ok for c in colds) and compared.ok
                 and all(r.ok for r in floors)) else 1


if __name__ == "__main__":
    sys.exit(main())
