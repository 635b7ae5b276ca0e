"""Big documents through the server: a size limit that says what it skipped, and a 20 MB open
that does not stop the other documents from being served."""

from __future__ import annotations

import asyncio
import time

import pytest
from lsprotocol import types

from .._lsp import ClientDoc, expect_error, poll, session, token_count
from .._refs import real_text, tiktoken_ref

REQUEST_FAILED, INVALID_PARAMS = -32803, -32602


def ref_count(text: str) -> int:
    return len(tiktoken_ref("o200k_base").encode_ordinary(text))


async def _diagnostics(client, uri: str, want_any: bool) -> list[types.Diagnostic]:
    """The diagnostics of ``uri`` once there are some (``want_any``) or none (a hang guard of
    ``LIVETOK_LSP_TIMEOUT``, not a 10 s race as before)."""
    await poll(lambda: bool(client.diagnostics.get(uri)) == want_any)
    return list(client.diagnostics.get(uri, []))


async def test_documents_over_max_document_size_are_tracked_not_counted():
    async with session("utf-16", options={"maxDocumentSize": 1000}) as client:
        big = ClientDoc(client, "file:///big.txt", "word " * 300, "utf-16")
        small = ClientDoc(client, "file:///small.txt", "hello", "utf-16")
        (diag,) = await _diagnostics(client, big.uri, True)
        assert "maxDocumentSize" in diag.message and "1,500 characters" in diag.message
        err = await expect_error(token_count(client, big.uri), REQUEST_FAILED)
        assert "maxDocumentSize" in err.message
        assert (await token_count(client, small.uri))["tokens"] == ref_count("hello")
        big.change([(0, 0, "still tracked ")])  # applied to the text, not counted
        big.replace_all("short again " * 10)  # within the limit: counted, diagnostic gone
        got = await token_count(client, big.uri)
        assert (got["tokens"], got["characters"]) == (ref_count(big.text), len(big.text))
        assert await _diagnostics(client, big.uri, False) == []
        # raising the limit counts a document that was over it
        big.replace_all("word " * 300)
        await _diagnostics(client, big.uri, True)
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"livetok": {"maxDocumentSize": None}}))
        assert (await token_count(client, big.uri))["tokens"] == ref_count(big.text)
        small.close()
        await expect_error(token_count(client, small.uri), INVALID_PARAMS)


# 5 M code points pass the 4 Mi (1 << 22) thresholds of a big didOpen (the text handed over
# and built by blocks, settle_big_build); 20 M, past the 16 Mi of COUNT_FIRST_MAX too (counted
# after its build: tests/property/test_open_queue.py checks that order in the default run), slow
@pytest.mark.parametrize("size", [5_000_000, pytest.param(20_000_000, marks=pytest.mark.slow)])
async def test_a_20_mb_open_leaves_the_other_documents_served(size):
    """While a 20 MB document (5 MB in the default run) is tokenized, another document is
    edited and counted: each of its requests is answered before the big document's first
    count, and exactly. The round-trip times are printed (the 50 ms target is measured in
    ``benchmarks/``, not asserted here)."""
    big_text = real_text(size)[:size]
    async with session("utf-16") as client:
        small = ClientDoc(client, "file:///small.txt", "hello", "utf-16")
        await token_count(client, small.uri)
        big = ClientDoc(client, "file:///big.txt", big_text, "utf-16")
        pending = asyncio.ensure_future(token_count(client, big.uri))
        latencies = []
        answered_first = 0
        for k in range(40):
            small.change([(len(small.text), 0, f" w{k}")])
            t = time.perf_counter()
            got = await token_count(client, small.uri)
            latencies.append(time.perf_counter() - t)
            assert got["tokens"] == ref_count(small.text)
            answered_first += not pending.done()
            await asyncio.sleep(0.01)
        print(f"small document during a {size // 1_000_000} MB open: {answered_first} of 40 "
              "answered before "
              f"the big count; max {max(latencies) * 1e3:.0f} ms, "
              f"median {sorted(latencies)[20] * 1e3:.1f} ms; " + " ".join(f"{x * 1e3:.0f}" for x in latencies))
        assert answered_first >= 10, "the big document held up the small one"
        big_got = await asyncio.wait_for(pending, 600)
        assert big_got["characters"] == len(big_text)
        assert big_got["tokens"] == ref_count(big_text)


@pytest.mark.parametrize("sections", [20_000, pytest.param(80_000, marks=pytest.mark.slow)])
async def test_code_lenses_of_a_big_markdown_file_leave_other_documents_served(sections):
    """The sections of a big Markdown file (20,000 of them, 800,000 characters: 8 times the
    ``progressThreshold``; 80,000 under slow) are computed in the worker thread: a request
    about another document sent after the code lens request is answered before it."""
    text = "".join(f"## heading {i}\n\nsome words for section {i}\n\n" for i in range(sections))
    async with session("utf-16", options={"progressThreshold": 100_000}) as client:
        small = ClientDoc(client, "file:///small.txt", "hello", "utf-16")
        big = ClientDoc(client, "file:///big.md", text, "utf-16", language_id="markdown")
        await token_count(client, big.uri)
        lenses = asyncio.ensure_future(client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=big.uri))))
        await asyncio.sleep(0)
        got = await token_count(client, small.uri)
        assert not lenses.done(), "the big file's code lenses held up the small document"
        assert got["tokens"] == ref_count("hello")
        result = await asyncio.wait_for(lenses, 600)
        assert len(result) == sections + 1  # the document's lens and one per section
        section0 = "## heading 0\n\nsome words for section 0\n\n"
        assert result[1].command.title.startswith(f"{ref_count(section0)} tokens")


def test_a_handed_over_text_is_built_by_blocks_and_exact(monkeypatch):
    """``OpenDocument`` given its text in a list (as the server hands a big didOpen over)
    builds the document from blocks of that text: same ids, lines and text as from the str;
    over ``max_size`` it is tracked, not tokenized."""
    from livetok.incremental import get_encoding
    from livetok.server.lsp import documents

    monkeypatch.setattr(documents, "_HANDOFF_BLOCK", 1000)
    text = real_text(50_000)[:50_000] + "😀 end"
    enc = get_encoding("o200k_base")
    od = documents.OpenDocument("file:///h.txt", "plaintext", 1, [text], enc)
    od._check()
    assert od.doc.token_ids() == tiktoken_ref("o200k_base").encode_ordinary(text)
    assert len(od.doc._seq.chunks) > 20 and od.text() == text
    small = documents.OpenDocument("file:///s.txt", "plaintext", 1, [text], enc, max_size=10)
    assert small.doc is None and small.too_large and small.text() == text
