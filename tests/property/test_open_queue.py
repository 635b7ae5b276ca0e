"""A didOpen built in the worker thread: its exact count is published before the document's
structure exists, and the messages that arrive meanwhile wait and are applied in order.

The server runs in process, fed JSON messages through its own protocol (``transport.dispatch``)
inside an event loop, so a big didOpen really goes to the worker thread (``progressThreshold``
0 sends every didOpen there) and every didChange sent right after it finds the document busy.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from livetok.incremental import Document, get_encoding
from livetok.incremental.document import block_cps_type, block_tokens
from livetok.server.lsp import documents
from livetok.server.lsp.session import LivetokServer, create_server
from livetok.server.lsp.documents import OpenDocument
from livetok.server.parallel_open import parallel_block_tokens
from livetok.server.lsp.transport import dispatch

from .._lsp import naive_position, poll
from .._refs import tiktoken_ref

ENC = "o200k_base"
URI = "file:///open.txt"

ALPHABET = st.sampled_from(
    ["a", "b", " ", "  ", "\n", "\r\n", "\r", "'s", "1", "23", "é", "😀", "中文", "\t", ".", "!?"])
TEXTS = st.lists(ALPHABET, max_size=120).map("".join)
#: an edit as (start, deleted, inserted), the start and length as fractions of the text
EDITS = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 0.3), TEXTS), min_size=1, max_size=6)


def ref_ids(text: str) -> list[int]:
    return tiktoken_ref(ENC).encode_ordinary(text)


class Sink:
    """The server's output, kept as written; :meth:`counts` reads the count notifications."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.write = self.written.append
        self.close = self.written.clear

    def counts(self) -> list[dict[str, Any]]:
        messages = [json.loads(data.split(b"\r\n\r\n", 1)[-1]) for data in self.written]
        return [m["params"] for m in messages if m.get("method") == "livetok/didChangeTokenCount"]


def send(server: LivetokServer, method: str, params: Any, msg_id: int | None = None) -> None:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        msg["id"] = msg_id
    dispatch(server.protocol, json.dumps(msg).encode())


async def open_and_edit(text: str, edits: list[tuple[float, float, str]],
                        ) -> tuple[LivetokServer, Sink, str, int]:
    """Open ``text``, send ``edits`` at once (the build is still running), wait for the
    document to settle; returns the server, its output, the client's text and version."""
    server = create_server()
    sink = Sink()
    server.protocol.set_writer(sink)
    send(server, "initialize", {"capabilities": {},
                                "initializationOptions": {"progressThreshold": 0}}, msg_id=1)
    send(server, "textDocument/didOpen", {"textDocument": {
        "uri": URI, "languageId": "plaintext", "version": 1, "text": text}})
    assert server.background.busy(URI), "the didOpen did not go to the worker thread"
    version = 1
    for fs, fd, new in edits:
        start = int(fs * len(text))
        end = min(len(text), start + int(fd * len(text)))
        # no LSP position lies between the two characters of a "\r\n"
        start, end = (p - (text[p - 1:p + 1] == "\r\n") for p in (start, end))
        a, b = naive_position(text, start, "utf-16"), naive_position(text, end, "utf-16")
        version += 1
        send(server, "textDocument/didChange", {
            "textDocument": {"uri": URI, "version": version},
            "contentChanges": [{"range": {
                "start": {"line": a.line, "character": a.character},
                "end": {"line": b.line, "character": b.character}}, "text": new}]})
        assert server.background.busy(URI), "a didChange was applied before the build ended"
        text = text[:start] + new + text[end:]
    await poll(lambda: not server.background.busy(URI), every=0.01)  # a hang guard
    for _ in range(3):  # the coalesced publish runs soon after
        await asyncio.sleep(0)
    return server, sink, text, version


@given(text=TEXTS.filter(bool), edits=EDITS)
def test_edits_during_the_build_are_applied_in_order_and_the_first_count_is_exact(text, edits):
    """The first count goes out before the structure is built (with edits queued behind
    the build, the coalesced publish after it can only carry the last version, so a count
    for version 1 comes from the encode pass) and equals tiktoken's; the queued edits are
    then applied in order: the final ids equal a full encode of the client's text."""
    server, sink, final, version = asyncio.run(open_and_edit(text, edits))
    counts = sink.counts()
    first = [c for c in counts if c["version"] == 1]
    assert len(first) == 1, counts
    assert (first[0]["tokens"], first[0]["characters"]) == (len(ref_ids(text)), len(text))
    assert counts[0] is first[0]
    od = server.store.get(URI)
    assert od.version == version and od.text() == final
    od._check()
    assert od.doc is not None and od.doc.token_ids() == ref_ids(final)
    assert counts[-1]["version"] == version
    assert counts[-1]["tokens"] == len(ref_ids(final))
    assert counts[-1]["characters"] == len(final)


def test_a_text_over_the_count_first_limit_is_counted_after_its_build(monkeypatch):
    """Over ``COUNT_FIRST_MAX`` the encode pass would hold too much: no early count, the
    count comes with the built document as before, exact."""
    monkeypatch.setattr(documents, "COUNT_FIRST_MAX", 10)
    text = "hello world, a text over ten code points\n" * 3
    server, sink, final, version = asyncio.run(open_and_edit(text, [(0.5, 0.1, "xyz ")]))
    counts = sink.counts()
    assert [c["version"] for c in counts] == [version]
    assert counts[0]["tokens"] == len(ref_ids(final))
    assert server.store.get(URI).doc.token_ids() == ref_ids(final)


@given(parts=st.lists(TEXTS, min_size=1, max_size=5))
def test_handed_parts_are_counted_first_then_built(parts):
    """``OpenDocument`` from parts (the big didOpen's blocks): ``on_count`` gets tiktoken's
    count and the length, once; the document built after it agrees."""
    text = "".join(parts)
    calls: list[tuple[int, int]] = []
    od = OpenDocument(URI, "plaintext", 1, list(parts), get_encoding(ENC),
                      on_count=lambda t, c: calls.append((t, c)))
    assert calls == [(len(ref_ids(text)), len(text))]
    od._check()
    assert od.text() == text and od.doc is not None and od.doc.token_ids() == ref_ids(text)


@pytest.mark.parametrize("text", ["", "x", "naïve 😀 text\r\nline two\n" * 50])
def test_string_text_is_counted_first(text):
    calls: list[tuple[int, int]] = []
    od = OpenDocument(URI, "plaintext", 1, text, get_encoding(ENC),
                      on_count=lambda t, c: calls.append((t, c)))
    assert calls == [(len(ref_ids(text)), len(text))]
    od._check()
    assert od.doc is not None and od.doc.token_count == len(ref_ids(text))


@given(parts=st.lists(TEXTS.filter(bool), min_size=2, max_size=6))
def test_forked_encode_pass_equals_a_full_encode(parts):
    """The forked processes' block tokens are each block's own, and the document built from
    them (and the count published first) equals a full encode."""
    enc = get_encoding(ENC)
    blocks = list(enc.iter_blocks("".join(parts), 8))  # cut where no piece can span
    tokens = parallel_block_tokens(enc, blocks, jobs=2)
    if len(blocks) < 2:
        assert tokens is None  # nothing to share out
        return
    assert tokens is not None
    assert tokens == [block_tokens(enc, b, block_cps_type(enc)) for b in blocks]
    doc = Document.from_block_tokens(blocks, tokens, enc)
    doc._check()
    assert doc.token_ids() == ref_ids("".join(blocks))


def test_a_big_handed_text_is_encoded_by_forked_processes(monkeypatch):
    """Over ``PARALLEL_MIN_CHARS`` (lowered here) the encode pass of a handed text goes to
    forked processes; the count given first and the document equal tiktoken's."""
    used: list[int] = []

    def spy(enc, blocks, jobs=None):
        out = parallel_block_tokens(enc, blocks, jobs=2)
        used.append(len(blocks) if out is not None else 0)
        return out

    monkeypatch.setattr(documents, "PARALLEL_MIN_CHARS", 1000)
    monkeypatch.setattr(documents, "_HANDOFF_BLOCK", 500)
    monkeypatch.setattr(documents, "parallel_block_tokens", spy)
    text = "naïve 😀 text, line one.\nline two 中文 end\r\n\n" * 200  # cut after ".\n"
    calls: list[tuple[int, int]] = []
    od = OpenDocument(URI, "plaintext", 1, [text[:3000], text[3000:]], get_encoding(ENC),
                      on_count=lambda t, c: calls.append((t, c)))
    assert used and used[0] >= 2, "the forked encode pass was not used"
    assert calls == [(len(ref_ids(text)), len(text))]
    od._check()
    assert od.text() == text and od.doc is not None and od.doc.token_ids() == ref_ids(text)
