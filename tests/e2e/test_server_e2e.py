"""End-to-end tests: ``python -m livetok.server`` as a subprocess, pytest-lsp as the client.

The client keeps its own copy of every document and checks the server's counts against
tiktoken (built offline from our vocabulary) on that copy. Positions are computed by the
slow reference in ``_lsp.py``, not by the server's codec.

Default run: three shared traces, one in each position encoding, bounded:
a prefix (``LIVETOK_TRACE_TXNS``, default 500 transactions, 1,500 under ``LIVETOK_SLOW=1``)
with emoji, CJK and astral characters typed in, and windows around the edits that make the
trace what it is (``landmarks``); every trace in every encoding and the full
traces under ``LIVETOK_SLOW=1``: through the server in every position encoding (below), and at
document level (``tests/property/test_document_traces.py``).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import random
import re

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from livetok.server.cli.traces import load_trace

from .._lsp import (
    SERVER,
    TIMEOUT,
    ClientDoc,
    decode_semantic,
    expect_error,
    naive_position,
    notify,
    poll,
    request,
    result_dict,
    reused,
    session,
    token_count,
    token_spans,
)
from .._refs import real_text, tiktoken_ref
from .._traces import TRACE_NAMES, Txn, apply, load_txns, named_trace_windows
from ..conftest import SLOW, TRACES, slow_except

UNITS = ["utf-16", "utf-8", "utf-32"]
#: transactions of each trace replayed from its start in the default run (1,500 under
#: LIVETOK_SLOW=1, beside the whole traces)
PREFIX = int(os.environ.get("LIVETOK_TRACE_TXNS", "1500" if SLOW else "500"))
CHECK_EVERY = 50  # the count against tiktoken
SPANS_EVERY = 500  # the token spans (semantic tokens) against tiktoken's tokens
INVALID_PARAMS, METHOD_NOT_FOUND, INVALID_REQUEST, PARSE_ERROR = -32602, -32601, -32600, -32700
REQUEST_FAILED = -32803


def ref_count(text: str, name: str = "o200k_base") -> int:
    return len(tiktoken_ref(name).encode_ordinary(text))


def with_emoji_and_cjk(txns: list[Txn], text: str = "", seed: int = 5) -> list[Txn]:
    """The same editing session with emoji, CJK and combining marks typed into it: after
    every 7th transaction, insert one at a random point of the text as it stands then."""
    rng = random.Random(seed)
    extras = ["😀", "中文", "👩‍💻", "é", "日本語のテキスト", "🎉🎉", "한국어", "e\u0301", "𝔘𝔫𝔦"]
    out = []
    for i, txn in enumerate(txns):
        text = apply(text, txn)
        out.append(txn)
        if i % 7 == 6:
            pos = rng.randrange(len(text) + 1)
            ins = rng.choice(extras)
            text = text[:pos] + ins + text[pos:]
            out.append([(pos, 0, ins)])
    return out


async def check_spans(client: LanguageClient, doc: ClientDoc) -> None:
    """The server's semantic tokens (one span per token) are tiktoken's tokens of the text."""
    got = result_dict(await request(client, "textDocument/semanticTokens/full",
                                    {"textDocument": {"uri": doc.uri}}))
    enc = tiktoken_ref("o200k_base")
    want = token_spans(doc.text, enc.decode_tokens_bytes(enc.encode_ordinary(doc.text)), doc.unit)
    assert decode_semantic(got["data"]) == want, f"token spans differ at version {doc.version}"


async def replay(client: LanguageClient, uri: str, start: str, txns: list[Txn], unit: str, *,
                 spans_every: int = 0) -> ClientDoc:
    """Send each transaction as one didChange; compare the count with tiktoken every
    ``CHECK_EVERY`` and at the end, and the token spans every ``spans_every`` (0: never)."""
    doc = ClientDoc(client, uri, start, unit)
    for i, txn in enumerate(txns, 1):
        doc.change(txn)
        if i % CHECK_EVERY == 0 or i == len(txns):
            got = await token_count(client, uri)
            assert (got["version"], got["characters"]) == (doc.version, len(doc.text)), (i, got)
            assert got["tokens"] == ref_count(doc.text), f"after {i} transactions"
        if spans_every and i % spans_every == 0:
            await check_spans(client, doc)
    return doc


async def timed(awaitable, timeout: float = TIMEOUT):
    """Await a typed pytest-lsp request with a timeout: a missing answer fails, never hangs."""
    return await asyncio.wait_for(awaitable, timeout)


async def wait_for_count(client: LanguageClient, uri: str, version: int, timeout: float = 60) -> dict:
    """The first ``livetok/didChangeTokenCount`` for ``uri`` at ``version`` or later."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        for c in reversed(client.counts):  # type: ignore[attr-defined]
            if c["uri"] == uri and c["version"] >= version:
                return c
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no didChangeTokenCount for {uri} v{version}: {client.counts[-3:]}")  # type: ignore[attr-defined]
        await asyncio.sleep(0.02)


# -- trace replay ------------------------------------------------------------------------------


#: the default run replays three traces, one in each position encoding (sveltecomponent in
#: UTF-16, rustcode in UTF-8, seph-blog1 in UTF-32); every other pair runs under
#: LIVETOK_SLOW=1 (each trace runs into a Document by default: test_document_traces.py)
_TRACE_CASES = slow_except([(n, u) for n in TRACE_NAMES for u in UNITS],
                           {(n, u) for n, u in zip(TRACE_NAMES, UNITS)})


@pytest.mark.parametrize(("name", "unit"), _TRACE_CASES)
async def test_trace_prefix_and_landmarks(name, unit):
    """Default run: three real traces, one in each position encoding (every trace in every
    encoding under ``LIVETOK_SLOW=1``), bounded. Its first ``PREFIX``
    transactions with emoji, CJK, astral characters and combining marks typed in (every 7th
    transaction), then a window of the raw trace around each landmark (``landmarks``: the
    trace's own non-ASCII text, multi-patch and multi-line edits, its biggest paste and
    delete), each opened at the text the trace had there. The count is checked every 50
    transactions, the token spans every 500 and at the end of each part."""
    start, txns = load_txns(name)
    async with session(unit, options={"semanticTokens": True}) as client:
        assert client.init_result.capabilities.position_encoding == unit  # type: ignore[attr-defined]
        doc = await replay(client, f"file:///trace/{name}.txt", start,
                           with_emoji_and_cjk(txns[:PREFIX], start), unit, spans_every=SPANS_EVERY)
        assert re.search(r"[\U00010000-\U0010ffff]", doc.text) and re.search(r"[一-龥]", doc.text)
        await check_spans(client, doc)
        for k, (text, part) in enumerate(named_trace_windows(name)):
            doc = await replay(client, f"file:///trace/{name}-{k}.txt", text, part, unit,
                               spans_every=SPANS_EVERY)
            assert doc.text == apply(text, [p for txn in part for p in txn])
            await check_spans(client, doc)
            doc.close()


# the whole traces: in UTF-16 as recorded (the client's text must end as the trace's), in UTF-8
# and UTF-32 with emoji and CJK typed in; about 25 s each on an idle 2-core machine (seph-blog1,
# 137,000 didChange messages, 30-200 s)
@pytest.mark.slow
@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("name", TRACE_NAMES)
async def test_full_trace(name, unit):
    start, txns = load_txns(name)
    data = json.loads(gzip.decompress((TRACES / f"{name}.json.gz").read_bytes()))
    async with session(unit, options={"semanticTokens": True}) as client:
        typed = with_emoji_and_cjk(txns, start) if unit != "utf-16" else txns
        doc = await replay(client, f"file:///trace/{name}.txt", start, typed, unit,
                           spans_every=10 * SPANS_EVERY)
        if unit == "utf-16":
            assert doc.text == data["endContent"]
        await check_spans(client, doc)
        # the pushed count of the last version agrees too
        note = await wait_for_count(client, doc.uri, doc.version)
        assert note["tokens"] == ref_count(doc.text)


def test_position_encoding_defaults_to_utf16_without_an_offer():
    async def main():
        async with session(None) as client:
            assert client.init_result.capabilities.position_encoding == "utf-16"  # type: ignore[attr-defined]
            doc = ClientDoc(client, "file:///d.txt", "😀😀 abc", "utf-16")
            doc.change([(2, 0, "中")])  # after the first emoji: UTF-16 column 2
            assert (await token_count(client, doc.uri))["tokens"] == ref_count("😀中😀 abc")
    asyncio.run(main())


@pytest.mark.parametrize("how", ["flag", "setting"])
def test_position_encoding_can_be_forced(how):
    """lsp-mode 8 sends code point columns and announces nothing: --position-encoding utf-32
    (or the positionEncoding setting) makes the server read them so, and announce it."""
    args = ("--position-encoding", "utf-32") if how == "flag" else ()
    options = {"positionEncoding": "utf-32"} if how == "setting" else None

    async def main():
        async with session(None, args=args, options=options) as client:
            assert client.init_result.capabilities.position_encoding == "utf-32"  # type: ignore[attr-defined]
            doc = ClientDoc(client, "file:///d.txt", "😀😀 abc", "utf-32")
            doc.change([(1, 0, "中")])  # after the first emoji: code point column 1
            assert (await token_count(client, doc.uri))["tokens"] == ref_count("😀中😀 abc")
    asyncio.run(main())


#: the tests below that need no server of their own (the default settings, UTF-16) share one
#: per module and worker, each with its own documents: ``reused(shared)`` in place of
#: ``session("utf-16")`` (issue 36 decision 4)
SHARED = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def shared():
    async with session("utf-16") as client:
        yield client


# -- ordering and coalescing -------------------------------------------------------------------


@SHARED
async def test_changes_apply_in_order_with_requests_in_flight(shared):
    async with reused(shared) as client:
        doc = ClientDoc(client, "file:///o.txt", "", "utf-16")
        pending = []
        rng = random.Random(3)
        for i in range(200):
            pos = rng.randrange(len(doc.text) + 1)
            doc.change([(pos, 0, rng.choice(["a", " b", "\n", "😀", "中"]))])
            if i % 10 == 0:  # not awaited: the answer must reflect exactly the changes before it
                pending.append((doc.version, doc.text,
                                asyncio.ensure_future(token_count(client, doc.uri))))
        for version, text, fut in pending:
            got = await fut
            assert got["version"] == version and got["tokens"] == ref_count(text)


@SHARED
async def test_count_notifications_are_coalesced(shared):
    async with reused(shared) as client:
        doc = ClientDoc(client, "file:///n.txt", "x", "utf-16")
        await wait_for_count(client, doc.uri, 1)
        before = len(client.counts)  # type: ignore[attr-defined]
        for i in range(500):  # a burst, written without waiting
            doc.change([(len(doc.text), 0, f" w{i}")])
        note = await wait_for_count(client, doc.uri, doc.version)
        # (the shared session's other documents: not this test's)
        versions = [c["version"] for c in client.counts[before:] if c["uri"] == doc.uri]  # type: ignore[attr-defined]
        sent = len(versions)
        assert note["tokens"] == ref_count(doc.text) and note["characters"] == len(doc.text)
        assert 1 <= sent < 500, f"{sent} notifications for 500 changes"
        assert versions == sorted(versions)
        # a lone change afterwards is announced by itself
        doc.change([(0, 0, "y")])
        assert (await wait_for_count(client, doc.uri, doc.version))["version"] == doc.version


# -- robustness --------------------------------------------------------------------------------


@SHARED
async def test_bad_requests_get_errors_and_other_documents_keep_working(shared):
    async with reused(shared) as client:
        other = ClientDoc(client, "file:///other.txt", "the other document 😀", "utf-16")
        doc = ClientDoc(client, "file:///main.txt", "line one\nline two\n", "utf-16")

        async def other_ok():
            got = await token_count(client, other.uri)
            assert got["tokens"] == ref_count(other.text) and got["version"] == other.version

        # unknown URI
        exc = await expect_error(token_count(client, "file:///nope.txt"), INVALID_PARAMS)
        assert "didOpen" in str(exc)
        await expect_error(request(client, "textDocument/hover", {
            "textDocument": {"uri": "file:///nope.txt"},
            "position": {"line": 0, "character": 0}}), INVALID_PARAMS)
        await other_ok()
        # params that fail lsprotocol's validation: pygls alone would never answer these
        exc = await expect_error(request(client, "textDocument/hover", {
            "textDocument": {"uri": doc.uri}, "position": {"line": -1, "character": 0}}),
            INVALID_PARAMS)
        assert "position" in str(exc) and "-1" in str(exc)
        await expect_error(request(client, "textDocument/hover", {"textDocument": {"uri": doc.uri}}),
                           INVALID_PARAMS)
        await expect_error(request(client, "textDocument/codeLens", {"textDocument": 5}), INVALID_PARAMS)
        await other_ok()
        # out-of-range positions
        exc = await expect_error(request(client, "textDocument/hover", {
            "textDocument": {"uri": doc.uri}, "position": {"line": 99, "character": 0}}),
            INVALID_PARAMS)
        assert "past the end" in str(exc)
        await expect_error(token_count(client, doc.uri, {"start": {"line": 0, "character": 0},
                                                         "end": {"line": 50, "character": 0}}),
                           INVALID_PARAMS)
        await expect_error(token_count(client, doc.uri, {"start": {"line": 0, "character": "x"},
                                                         "end": {"line": 0, "character": 1}}),
                           INVALID_PARAMS)
        await expect_error(token_count(client, doc.uri, {"start": {"line": 1, "character": 0},
                                                         "end": {"line": 0, "character": 0}}),
                           INVALID_PARAMS)
        await expect_error(request(client, "livetok/tokenCount", {}), INVALID_PARAMS)
        await expect_error(request(client, "livetok/tokenCount", None), INVALID_PARAMS)
        await expect_error(request(client, "livetok/noSuchMethod", {}), METHOD_NOT_FOUND)
        # a character past the line end means the line end (LSP spec), not an error
        got = await token_count(client, doc.uri, {"start": {"line": 0, "character": 0},
                                                  "end": {"line": 0, "character": 999}})
        assert got["rangeTokens"] == ref_count("line one")
        await other_ok()


@SHARED
async def test_invalid_json_gets_a_parse_error(shared):
    async with reused(shared) as client:
        doc = ClientDoc(client, "file:///j.txt", "fine", "utf-16")
        from concurrent.futures import Future

        fut: Future = Future()
        client.protocol._request_futures[None] = fut  # the parse error answers id null
        body = b'{"jsonrpc": "2.0", "id": 1, "method": '
        client.protocol.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        exc = None
        try:
            await asyncio.wait_for(asyncio.wrap_future(fut), 30)
        except Exception as e:  # the error response resolves the future with an exception
            exc = e
        assert getattr(exc, "code", None) == PARSE_ERROR, exc
        assert (await token_count(client, doc.uri))["tokens"] == ref_count("fine")


@SHARED
async def test_bad_changes_are_recovered(shared):
    async with reused(shared) as client:
        logged = len(client.log_messages)  # the shared session's earlier messages are not this test's
        other = ClientDoc(client, "file:///other.txt", "stays correct", "utf-16")
        doc = ClientDoc(client, "file:///main.txt", "alpha\nbeta\n", "utf-16")
        # stale and repeated versions: logged, applied (the client's text is the truth)
        doc.change([(0, 0, "A")])
        doc.version -= 2
        doc.change([(1, 0, "B")])
        got = await token_count(client, doc.uri)
        assert got["tokens"] == ref_count(doc.text) and got["version"] == doc.version
        assert any("does not increase" in m.message for m in client.log_messages[logged:])
        # a change past the last line is clamped to the end of the document
        notify(client, "textDocument/didChange", {
            "textDocument": {"uri": doc.uri, "version": doc.version + 1},
            "contentChanges": [{"range": {"start": {"line": 40, "character": 0},
                                          "end": {"line": 41, "character": 3}}, "text": "END"}]})
        doc.text += "END"
        doc.version += 1
        got = await token_count(client, doc.uri)
        assert got["tokens"] == ref_count(doc.text) and got["characters"] == len(doc.text)
        assert any("clamped" in m.message for m in client.log_messages[logged:])
        # a change that cannot be decoded: the document is out of sync until a full text
        notify(client, "textDocument/didChange", {
            "textDocument": {"uri": doc.uri, "version": doc.version + 1},
            "contentChanges": [{"range": {"start": {"line": -3, "character": 0},
                                          "end": {"line": 0, "character": 0}}, "text": "?"}]})
        exc = await expect_error(token_count(client, doc.uri), REQUEST_FAILED)
        assert "full-text" in str(exc)
        assert (await token_count(client, other.uri))["tokens"] == ref_count(other.text)
        doc.replace_all("re-synced text\n")
        got = await token_count(client, doc.uri)
        assert got["tokens"] == ref_count(doc.text) and got["version"] == doc.version
        # didChange / didClose for a document that is not open: logged and ignored
        notify(client, "textDocument/didChange", {
            "textDocument": {"uri": "file:///ghost", "version": 2},
            "contentChanges": [{"text": "boo"}]})
        notify(client, "textDocument/didClose", {"textDocument": {"uri": "file:///ghost"}})
        # opening a URI twice replaces its text
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=other.uri, language_id="plaintext",
                                                 version=1, text="replaced")))
        assert (await token_count(client, other.uri))["tokens"] == ref_count("replaced")
        assert (await token_count(client, doc.uri))["tokens"] == ref_count(doc.text)


@SHARED
async def test_awkward_text(shared):
    rng = random.Random(11)
    binary = bytes(rng.randrange(256) for _ in range(20_000)).decode("latin-1")
    texts = {
        "nul": "a\0b\0\0c\n\0",
        "surrogates": "lone \ud800 high and \udfff low\n\udc80",
        "binary": binary,
        "control": "".join(chr(i) for i in range(32)) * 20,
        "breaks": "a\vb\fc\x85d\u2028e\u2029f\r\ng\rh\n",
    }
    async with reused(shared) as client:
        docs = {k: ClientDoc(client, f"file:///awk/{k}", v, "utf-16") for k, v in texts.items()}
        for d in docs.values():
            for _ in range(20):
                pos = rng.randrange(len(d.text) + 1)
                pos -= d.text[pos - 1: pos + 1] == "\r\n"
                d.change([(pos, min(2, len(d.text) - pos), rng.choice(["\0", "\ud800", "x", "\n", "😀"]))])
        for k, d in docs.items():
            got = await token_count(client, d.uri)
            assert got["tokens"] == ref_count(d.text), k
            assert got["characters"] == len(d.text), k
            h = await request(client, "textDocument/hover", {
                "textDocument": {"uri": d.uri}, "position": {"line": 0, "character": 1}})
            assert h is not None


@SHARED
async def test_one_megabyte_single_line(shared):
    line = real_text(1_200_000).replace("\n", " ").replace("\r", " ")[:1_000_000]
    async with reused(shared) as client:
        doc = ClientDoc(client, "file:///long-line.txt", line, "utf-16")
        other = ClientDoc(client, "file:///other.txt", "a short neighbour", "utf-16")
        rng = random.Random(2)
        for i in range(30):  # type in the middle of the line
            pos = 500_000 + rng.randrange(-1000, 1000)
            doc.change([(pos, rng.randrange(2), rng.choice(["x", " ", "é", "😀"]))])
        got = await token_count(client, doc.uri)
        assert got["tokens"] == ref_count(doc.text)
        h = result_dict(await request(client, "textDocument/hover", {
            "textDocument": {"uri": doc.uri},
            "position": {"line": 0, "character": naive_position(doc.text, 700_000, "utf-16").character}}))
        assert "token" in h["contents"]["value"]
        assert (await token_count(client, other.uri))["tokens"] == ref_count(other.text)


# 1.5 M code points pass every size threshold of a paste's path (background work from the 1 M
# of progressThreshold, the 1 Mi of the message, block and trim sizes); 5 M (past the 4 M =
# 1 << 22 constants, which the big didOpens of test_server_limits.py pass in the default run)
# and 10 M under slow
@pytest.mark.parametrize("size", [1_500_000, pytest.param(5_000_000, marks=pytest.mark.slow),
                                  pytest.param(10_000_000, marks=pytest.mark.slow)])
async def test_ten_megabyte_paste(size):
    paste = real_text(size + 500_000)[:size]
    async with session("utf-16") as client:
        doc = ClientDoc(client, "file:///paste.txt", "before\n\nafter\n", "utf-16")
        small = ClientDoc(client, "file:///small.txt", "small one", "utf-16")
        doc.change([(7, 0, paste)])
        got = await token_count(client, doc.uri)
        assert got["characters"] == len(doc.text)
        assert got["tokens"] == ref_count(doc.text)
        doc.change([(len(doc.text) - 6, 0, "x")])  # and keep typing after it
        assert (await token_count(client, doc.uri))["tokens"] == ref_count(doc.text)
        assert (await token_count(client, small.uri))["tokens"] == ref_count(small.text)


async def test_big_document_work_does_not_hold_up_other_documents():
    """A big didOpen and a big paste are tokenized in a worker thread: another document is
    answered meanwhile, and the big document's own messages keep their order behind it
    (10 and 5 times the ``progressThreshold`` of 100,000 characters that sends them there)."""
    big_text = real_text(1_000_000)
    paste = real_text(1_500_000)[1_000_000:]
    async with session("utf-16", options={"progressThreshold": 100_000}) as client:
        small = ClientDoc(client, "file:///small.txt", "hello", "utf-16")
        await token_count(client, small.uri)
        for step in ("open", "paste"):
            if step == "open":
                big = ClientDoc(client, "file:///big.txt", big_text, "utf-16")
            else:
                big.change([(3, 0, paste)])
            big.change([(0, 0, f"typed during the {step} ")])  # waits for the big work
            version, text = big.version, big.text
            pending = asyncio.ensure_future(token_count(client, big.uri))
            small.change([(len(small.text), 0, " world")])
            got = await token_count(client, small.uri)
            # sent after the big request, answered before it: without the worker thread the
            # small document would wait for the whole tokenization
            assert not pending.done(), f"{step}: the big document held up the small one"
            assert got["tokens"] == ref_count(small.text)
            big_got = await pending
            assert (big_got["version"], big_got["characters"]) == (version, len(text))
            assert big_got["tokens"] == ref_count(text)


async def test_requests_after_shutdown_are_refused():
    async with session("utf-16") as client:
        doc = ClientDoc(client, "file:///s.txt", "text", "utf-16")
        await timed(client.shutdown_async(None))
        await expect_error(token_count(client, doc.uri), INVALID_REQUEST)
        client.capabilities = None  # shutdown is done; the session helper must not repeat it
        client.exit(None)


# -- features ----------------------------------------------------------------------------------


async def test_lenses_hover_semantic_tokens_and_progress():
    md = "# Title\n\nSome intro text.\n\n## Details 😀\n\nMore words here.\n" * 3
    async with session("utf-16", options={"livetok": {"contextWindow": 1000, "progressThreshold": 100}},
                       progress=True) as client:
        doc = ClientDoc(client, "file:///notes.md", md, "utf-16", language_id="markdown")
        lenses = await timed(client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri))))
        assert lenses[0].command.title.startswith(f"{ref_count(md):,} tokens · o200k_base · ")
        assert "of 1,000-token context" in lenses[0].command.title
        assert len(lenses) == 1 + 6
        assert all("tokens in this section" in lens.command.title for lens in lenses[1:])
        # work-done progress for the first tokenization (threshold lowered to 100 characters)
        begins = [v for vals in client.progress_reports.values() for v in vals
                  if isinstance(v, types.WorkDoneProgressBegin)]
        ends = [v for vals in client.progress_reports.values() for v in vals
                if isinstance(v, types.WorkDoneProgressEnd)]
        assert begins and ends and "notes.md" in begins[0].message
        hov = await timed(client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            position=types.Position(line=2, character=5))))
        assert "id `" in hov.contents.value and "paragraph (line 3)" in hov.contents.value
        # semantic tokens are opt-in
        sem = await timed(client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri))))
        assert list(sem.data) == []
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"livetok": {"semanticTokens": True}}))
        sem = await timed(client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri))))
        n_tokens = len(tiktoken_ref("o200k_base").encode_ordinary(md))
        assert 0 < len(sem.data) // 5 <= n_tokens and set(sem.data[3::5]) == {0, 1}
        rng = await timed(client.text_document_semantic_tokens_range_async(types.SemanticTokensRangeParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            range=types.Range(start=types.Position(2, 0), end=types.Position(3, 0)))))
        assert 0 < len(rng.data) < len(sem.data)


async def test_configuration_encoding_and_budget():
    async with session("utf-16", options={"encoding": {"default": "o200k_base", "rust": "r50k_base",
                                                        "**/*.cl100k": "cl100k_base"}}) as client:
        text = "fn main() { println!(\"héllo wörld\"); }\n" * 20
        rs = ClientDoc(client, "file:///src/main.rs", text, "utf-16", language_id="rust")
        cl = ClientDoc(client, "file:///x/doc.cl100k", text, "utf-16")
        plain = ClientDoc(client, "file:///p.txt", text, "utf-16")
        assert (await token_count(client, rs.uri))["encoding"] == "r50k_base"
        assert (await token_count(client, rs.uri))["tokens"] == ref_count(text, "r50k_base")
        assert (await token_count(client, cl.uri))["tokens"] == ref_count(text, "cl100k_base")
        assert (await token_count(client, plain.uri))["tokens"] == ref_count(text)
        # switch the default and set a budget: documents are re-tokenized, diagnostics appear
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"livetok": {"encoding": "cl100k_base", "budget": 50}}))
        got = await token_count(client, plain.uri)
        assert (got["encoding"], got["tokens"]) == ("cl100k_base", ref_count(text, "cl100k_base"))
        await poll(lambda: plain.uri in client.diagnostics)
        (diag,) = client.diagnostics[plain.uri]
        assert diag.severity == types.DiagnosticSeverity.Warning and "budget of 50" in diag.message
        # the diagnostic starts at the first token over the budget
        ids = tiktoken_ref("cl100k_base").encode_ordinary(text)
        head = tiktoken_ref("cl100k_base").decode(ids[:50])
        assert diag.range.start == naive_position(text, len(head), "utf-16")
        # under budget again: cleared
        plain.replace_all("short")
        await poll(lambda: not client.diagnostics.get(plain.uri))
        assert list(client.diagnostics[plain.uri]) == []
        # a bad setting is reported, not fatal
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"livetok": {"budget": "lots"}}))
        assert (await token_count(client, plain.uri))["tokens"] == ref_count("short", "cl100k_base")
        assert any("livetok.budget must be an integer" in m.message for m in client.log_messages)


async def test_record_trace(tmp_path):
    async with session("utf-16", args=("--record-trace", str(tmp_path))) as client:
        start, txns = load_txns("friendsforever_flat")
        doc = await replay(client, "file:///rec/friends.txt", "intro\n", [
            [(p + 6, n, s) for p, n, s in t] for t in txns[:300]], "utf-16")
        doc.change([(0, 0, "😀\ud800")])
        doc.close()
        await expect_error(token_count(client, doc.uri), INVALID_PARAMS)  # closed
        still_open = ClientDoc(client, "file:///rec/open.txt", "abc", "utf-16")
        still_open.change([(3, 0, "d")])
        assert (await token_count(client, still_open.uri))["characters"] == 4
    files = sorted(tmp_path.glob("*.json.gz"))
    assert len(files) == 2, files  # the closed document, and the open one at shutdown
    traces = {load_trace(f).start: load_trace(f) for f in files}
    t = traces["intro\n"]
    assert t.replay_text() == t.end == doc.text.replace("\ud800", "\ufffd")
    assert traces["abc"].end == "abcd"
    assert all(f.stat().st_mode & 0o077 == 0 for f in files)  # the user's alone


@pytest.mark.parametrize("transport", ["--tcp", "--ws"])
async def test_tcp_and_websocket(transport):
    """An editor's session over TCP / WebSocket (with the printed token); its ``exit`` ends
    that session only, and the listener stops on SIGTERM (``test_security_serve.py`` covers
    refused handshakes and several sessions at once)."""
    import signal

    proc = await asyncio.create_subprocess_exec(
        *SERVER, transport, "127.0.0.1:0", stderr=asyncio.subprocess.PIPE)
    try:
        port, token = None, None
        while port is None:
            line = await asyncio.wait_for(proc.stderr.readline(), 60)
            assert line, "server exited before listening"
            if m := re.match(rb"livetok token: (\S+)", line):
                token = m.group(1).decode()
            m = re.search(rb"livetok listening on [^\s:]+:(\d+)", line)
            port = int(m.group(1)) if m else None
        assert (token is not None) == (transport == "--ws")
        for session in range(2):
            client = LanguageClient()
            counts: list = []
            client.feature("livetok/didChangeTokenCount")(lambda p: counts.append(p))
            if transport == "--tcp":
                await client.start_tcp("127.0.0.1", port)
            else:  # pygls builds ws://{host}:{port}: the token rides on the port
                await client.start_ws("127.0.0.1", f"{port}/?token={token}")  # type: ignore[arg-type]
            await timed(client.initialize_session(types.InitializeParams(
                capabilities=types.ClientCapabilities())))
            doc = ClientDoc(client, "file:///net.txt", "over the network 😀" * (session + 1),
                            "utf-16")
            doc.change([(5, 0, "wire ")])
            got = await token_count(client, doc.uri)
            assert got["tokens"] == ref_count(doc.text)
            await timed(client.shutdown_async(None))
            client.exit(None)
            await client.stop()
            assert proc.returncode is None, "the exit of one session stopped the server"
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_cli_help():
    import subprocess

    out = subprocess.run([*SERVER, "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--record-trace" in out.stdout and "--tcp" in out.stdout
    bad = subprocess.run([*SERVER, "--tcp", "nowhere"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr
