"""The server keeps up with typing (issue 35 item 1, issue 34 row 12): the ``didChange``
messages of a document read while earlier work ran are applied as one batch, the changes of a
batch near each other go to the core as one edit, and every count notification is exact for
the version it names.

Work is measured by counting the core's edits, never by wall-clock time. The end-to-end tests
send bursts without waiting (as a typist outrunning the server does) through a real
``livetok serve`` and check every ``livetok/didChangeTokenCount`` against tiktoken on the text
of the version it names.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, Callable

import pytest

from livetok.incremental import Document

from .._lsp import ClientDoc, MessageSink, in_process_server, naive_position, session, token_count
from .._refs import tiktoken_ref
from .._traces import TRACE_NAMES, apply, load_txns
from ..conftest import SLOW

COUNT = "livetok/didChangeTokenCount"


def ref_count(text: str) -> int:
    return len(tiktoken_ref("o200k_base").encode_ordinary(text))


def _in_process(text: str, uri: str = "file:///a.txt") -> tuple[Any, MessageSink, Callable[..., None]]:
    """A server in this process with ``text`` open, what it writes, and ``send``."""
    server, sink, send = in_process_server()
    send("initialize", {"capabilities": {}}, msg_id=1)
    send("initialized", {})
    send("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "plaintext", "version": 1, "text": text}})
    return server, sink, send


def _count_edits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """Every ``Document.edit`` call from now on, as ``(start, end, len(text))``."""
    edits: list[tuple[int, int, int]] = []
    real = Document.edit

    def edit(self: Document, start: int, end: int, new_text: str) -> Any:
        edits.append((start, end, len(new_text)))
        return real(self, start, end, new_text)

    monkeypatch.setattr(Document, "edit", edit)
    return edits


def _typing(line: str, col: int, kind: str) -> list[tuple[int, int, str]]:
    """20 keys at one cursor: 15 characters of ``kind``, then 5 backspaces, as
    ``(col, n_deleted, inserted)`` on the line."""
    keys = []
    for i in range(15):
        keys.append((col + i, 0, kind[i % len(kind)]))
    for i in range(5):
        keys.append((col + 14 - i, 1, ""))
    return keys


async def test_keys_read_together_are_applied_in_one_edit(monkeypatch):
    """Twenty didChanges read in one go (a digit line, where each key moves every later
    three-digit group): one core edit, one count notification, of the last version, exact.
    Before, each key was its own edit and the last count came twenty edits late."""
    line = "7" * 4000
    text = "an ordinary first line\n" + line + "\nand a last one\n"
    server, sink, send = _in_process(text)
    for _ in range(3000):  # the open's count is published (the encoding may load first)
        if any(m.get("method") == COUNT for m in sink.sent) and not server.publisher.due:
            break
        await asyncio.sleep(0.01)
    sink.sent.clear()
    edits = _count_edits(monkeypatch)
    # as if its last keystroke had taken a second (the digit line of issue 35 under load):
    # the keys read after it merge (a document quicker than pending.MERGE_S applies each
    # didChange as it comes); set, not measured, so that no clock decides the test
    server.store.get("file:///a.txt").apply_seconds = 1.0
    version = 1
    for col, n_del, ins in _typing(line, 2000, "1234567890"):
        version += 1
        send("textDocument/didChange", {
            "textDocument": {"uri": "file:///a.txt", "version": version},
            "contentChanges": [{"range": {"start": {"line": 1, "character": col},
                                          "end": {"line": 1, "character": col + n_del}},
                                "text": ins}]})
        line = line[:col] + ins + line[col + n_del:]
    for _ in range(200):  # the event loop applies the batch, then publishes
        await asyncio.sleep(0.01)
        if any(m.get("method") == COUNT for m in sink.sent):
            break
    counts = [m["params"] for m in sink.sent if m.get("method") == COUNT]
    final = "an ordinary first line\n" + line + "\nand a last one\n"
    assert len(edits) == 1, edits
    assert [(c["version"], c["tokens"], c["characters"]) for c in counts] == [
        (21, ref_count(final), len(final))]
    od = server.store.get("file:///a.txt")
    assert od.text() == final
    od._check()


async def test_a_request_sees_exactly_the_changes_sent_before_it(monkeypatch):
    """Changes merge until another message arrives: a request after three keys is answered
    about the third key's version (the three applied in one edit, in the worker thread for
    a slow document), and the keys after it form the next batch."""
    server, sink, send = _in_process("hello world\n")
    for _ in range(3000):  # built (the encoding may load first)
        if "file:///a.txt" in server.store and not server.background.busy_uris():
            break
        await asyncio.sleep(0.01)
    server.store.get("file:///a.txt").apply_seconds = 1.0  # a slow document: changes merge
    edits = _count_edits(monkeypatch)
    text = "hello world\n"
    version = 1

    async def keys(chars: str) -> None:
        nonlocal text, version
        for ch in chars:
            version += 1
            send("textDocument/didChange", {
                "textDocument": {"uri": "file:///a.txt", "version": version},
                "contentChanges": [{"range": {"start": {"line": 0, "character": 5},
                                              "end": {"line": 0, "character": 5}},
                                    "text": ch}]})
            text = text[:5] + ch + text[5:]

    async def answer(msg_id: int) -> dict[str, Any]:
        send("livetok/tokenCount", {"textDocument": {"uri": "file:///a.txt"}}, msg_id=msg_id)
        for _ in range(3000):
            got = [m["result"] for m in sink.sent if m.get("id") == msg_id]
            if got:
                return got[0]  # type: ignore[no-any-return]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no answer to request {msg_id}")

    await keys("abc")
    first = await answer(7)
    assert (first["version"], first["tokens"], first["characters"]) == (
        4, ref_count(text), len(text))
    assert len(edits) == 1, edits
    server.store.get("file:///a.txt").apply_seconds = 1.0
    await keys("de")
    second = await answer(8)
    assert (second["version"], second["tokens"]) == (6, ref_count(text))
    assert len(edits) == 2, edits


def test_one_didchange_of_many_inserts_is_one_edit_and_one_warning(monkeypatch):
    """Issue 34 row 12: 20,000 inserts at one place in one didChange (more than 120 s
    before: one re-tokenization each) are one core edit; 20,000 ranges past the end are
    clamped with one warning that says how many."""
    text = "some text\n" * 50
    server, sink, send = _in_process(text)
    edits = _count_edits(monkeypatch)
    warned: list[str] = []
    monkeypatch.setattr(server, "warn", warned.append)
    monkeypatch.setattr(server.store.get("file:///a.txt"), "_warn", warned.append)
    n = 20_000
    send("textDocument/didChange", {
        "textDocument": {"uri": "file:///a.txt", "version": 2},
        "contentChanges": [{"range": {"start": {"line": 3, "character": 4},
                                      "end": {"line": 3, "character": 4}}, "text": "ab"}] * n})
    cut = 3 * 10 + 4
    text = text[:cut] + "ab" * n + text[cut:]
    od = server.store.get("file:///a.txt")
    assert od.text() == text and od.token_count == ref_count(text)
    assert len(edits) == 1 and not warned
    od._check()
    edits.clear()
    send("textDocument/didChange", {
        "textDocument": {"uri": "file:///a.txt", "version": 3},
        "contentChanges": [{"range": {"start": {"line": 900, "character": 0},
                                      "end": {"line": 901, "character": 0}}, "text": "z"}] * n})
    text += "z" * n
    assert od.text() == text and od.token_count == ref_count(text)
    assert len(edits) == 1
    assert len(warned) == 1 and "clamped" in warned[0] and f"{n - 1:,} more" in warned[0]


def test_far_apart_changes_of_one_batch_stay_exact(monkeypatch):
    """Seeded: batches of changes anywhere in the text (near ones share an edit, far ones
    do not), in one didChange each, against tiktoken and the document's own checks."""
    rng = random.Random(35)
    text = "".join(rng.choice(["word ", "12345", "\n", "東京", "😀", "  ", "x=1;"])
                   for _ in range(3000))
    server, sink, send = _in_process(text)
    edits = _count_edits(monkeypatch)
    n_changes = 0
    for version in range(2, 42):
        changes = []
        near = 0
        for _ in range(rng.randint(1, 30)):
            start = rng.randint(0, len(text))
            if rng.random() < 0.5 and changes:  # near the change before
                start = min(len(text), max(0, near + rng.randint(-5, 5)))
            end = min(len(text), start + rng.choice([0, 0, 1, 2, 40]))
            new = rng.choice(["", "a", "9", "\n", "é", "😀 ", "123", "\n\n"])
            s, e = naive_position(text, start, "utf-16"), naive_position(text, end, "utf-16")
            changes.append({"range": {"start": {"line": s.line, "character": s.character},
                                      "end": {"line": e.line, "character": e.character}},
                            "text": new})
            text = text[:start] + new + text[end:]
            near = start + len(new)
        n_changes += len(changes)
        send("textDocument/didChange", {"textDocument": {"uri": "file:///a.txt",
                                                         "version": version},
                                        "contentChanges": changes})
        od = server.store.get("file:///a.txt")
        assert od.text() == text, version
        assert od.token_count == ref_count(text), version
        od._check()
    assert len(edits) < n_changes


# -- through a real server ---------------------------------------------------------------------


async def _all_counts_exact(client: Any, uri: str, start: str, versions: list[Any]) -> None:
    """Every count notification for ``uri`` names a version whose text (``versions[v]``,
    rebuilt by the caller's function) has exactly its tokens and characters."""
    seen = [c for c in client.counts if c["uri"] == uri]
    assert seen, "no count notification"
    for c in seen:
        text = versions[c["version"]]
        assert (c["tokens"], c["characters"]) == (ref_count(text), len(text)), c["version"]


async def _final_count(client: Any, uri: str, version: int) -> dict[str, Any]:
    for _ in range(3000):
        for c in reversed(client.counts):
            if c["uri"] == uri and c["version"] == version:
                return c  # type: ignore[no-any-return]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no count of version {version}: {client.counts[-3:]}")


@pytest.mark.parametrize("seed", [1, 2] + ([3, 4, 5, 6] if SLOW else []))
async def test_random_bursts_through_the_server_are_exact(seed):
    """Seeded bursts of keystrokes sent without waiting, on a document with a long digit
    line (slow edits, so batches form and go to the worker) and ordinary lines, with a
    request now and then: every count notification and answer is exact for its version."""
    rng = random.Random(seed)
    digits = "".join(rng.choice("0123456789") for _ in range(30_000))
    start = "def f(x):\n    return x + 1\n" * 30 + digits + "\nlast line\n"
    async with session("utf-16") as client:
        doc = ClientDoc(client, "file:///burst.txt", start, "utf-16")
        texts = [start, start]  # by version
        answers = []
        for burst in range(12):
            on_digits = rng.random() < 0.7
            line = 60 if on_digits else rng.randrange(60)
            base = sum(len(x) + 1 for x in doc.text.split("\n")[:line])
            width = len(doc.text.split("\n")[line])
            col = rng.randint(0, width)
            for _ in range(rng.randint(5, 25)):
                ch = rng.choice("0123456789" if on_digits else "ab =\n")
                if rng.random() < 0.25 and col > 0:
                    doc.change([(base + col - 1, 1, "")])
                    col -= 1
                else:
                    doc.change([(base + col, 0, ch)])
                    col += 1
                texts.append(doc.text)
                if ch == "\n":
                    break
            if rng.random() < 0.5:
                answers.append((doc.version, await token_count(client, doc.uri)))
        final = await _final_count(client, doc.uri, doc.version)
        assert final["tokens"] == ref_count(doc.text)
        await _all_counts_exact(client, doc.uri, start, texts)
        for version, got in answers:
            assert got["version"] == version
            assert got["tokens"] == ref_count(texts[version])


@pytest.mark.parametrize("name", TRACE_NAMES[:1] + (TRACE_NAMES[1:] if SLOW else []))
async def test_a_real_trace_sent_in_bursts_is_exact(name):
    """A real keystroke trace (``../shared/traces``; skipped when absent) sent as fast as the
    client can write it: every count notification is exact for the version it names."""
    start, txns = load_txns(name)
    txns = txns[:400 if not SLOW else 3000]
    async with session("utf-16") as client:
        doc = ClientDoc(client, "file:///trace.txt", start, "utf-16")
        for i, txn in enumerate(txns):
            doc.change(txn)
            if i % 100 == 99:
                await asyncio.sleep(0)  # let the client write what it has
        final = await _final_count(client, doc.uri, doc.version)
        assert final["tokens"] == ref_count(doc.text)
        wanted = {c["version"] for c in client.counts if c["uri"] == doc.uri}
        text, by_version = start, {1: start}
        for version, txn in enumerate(txns, 2):
            text = apply(text, txn)
            if version in wanted:
                by_version[version] = text
        await _all_counts_exact(client, doc.uri, start, by_version)  # type: ignore[arg-type]
        assert len(wanted) < len(txns)  # bursts were merged


def test_an_empty_didchange_adopts_its_version():
    """``contentChanges: []`` changes no text and adopts the version (as before batches)."""
    server, sink, send = _in_process("hello\n")
    send("textDocument/didChange", {"textDocument": {"uri": "file:///a.txt", "version": 5},
                                    "contentChanges": []})
    od = server.store.get("file:///a.txt")
    assert (od.version, od.text()) == (5, "hello\n")


async def test_other_documents_are_answered_while_a_slow_batch_runs(monkeypatch):
    """A slow document's batch runs in the worker thread: while it runs (held here on an
    event, no clock), another document's keystrokes are counted and requests about it
    answered; the slow document's later keys wait in its backlog and merge, and its count
    names the last version, exact."""
    import threading

    server, sink, send = _in_process("slow document\n", "file:///slow.txt")
    send("textDocument/didOpen", {"textDocument": {
        "uri": "file:///fast.txt", "languageId": "plaintext", "version": 1, "text": "fast\n"}})
    for _ in range(3000):
        if {"file:///slow.txt", "file:///fast.txt"} <= set(od.uri for od in server.store) \
                and not server.background.busy_uris():
            break
        await asyncio.sleep(0.01)
    slow = server.store.get("file:///slow.txt")
    slow.apply_seconds = 1.0
    release = threading.Event()
    edits = _count_edits(monkeypatch)
    real = Document.edit

    def held(self: Document, start: int, end: int, new_text: str) -> Any:
        if threading.current_thread().name.startswith("livetok-bg"):
            assert release.wait(60), "never released"
        return real(self, start, end, new_text)

    monkeypatch.setattr(Document, "edit", held)

    def key(uri: str, version: int, ch: str) -> None:
        send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                        "contentChanges": [{"range": {
                                            "start": {"line": 0, "character": 0},
                                            "end": {"line": 0, "character": 0}}, "text": ch}]})

    key("file:///slow.txt", 2, "a")
    await asyncio.sleep(0.05)
    assert server.background.busy("file:///slow.txt")  # its batch is held in the worker
    for v, ch in enumerate("bcd", 3):
        key("file:///slow.txt", v, ch)  # wait in its backlog
    key("file:///fast.txt", 2, "x")
    send("livetok/tokenCount", {"textDocument": {"uri": "file:///fast.txt"}}, msg_id=9)
    for _ in range(500):
        if any(m.get("id") == 9 for m in sink.sent):
            break
        await asyncio.sleep(0.01)
    (answer,) = [m["result"] for m in sink.sent if m.get("id") == 9]
    assert (answer["version"], answer["tokens"]) == (2, ref_count("xfast\n"))
    assert server.background.busy("file:///slow.txt")
    release.set()
    for _ in range(3000):
        counts = [m["params"] for m in sink.sent if m.get("method") == COUNT
                  and m["params"]["uri"] == "file:///slow.txt" and m["params"]["version"] == 5]
        if counts:
            break
        await asyncio.sleep(0.01)
    text = "dcbaslow document\n"
    assert (counts[0]["tokens"], counts[0]["characters"]) == (ref_count(text), len(text))
    assert server.store.get("file:///slow.txt").text() == text
    # the fast document's key, and the slow one's two batches ("a"; "b", "c", "d" merged)
    assert len(edits) == 3, edits
