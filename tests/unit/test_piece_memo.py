"""Bounded piece memos (``livetok.incremental.piece_memo``) and the block-by-block document build:
memory that stays bounded while the results stay exact."""

from __future__ import annotations

import random

import pytest

from livetok.incremental import Document, get_encoding
from livetok.incremental import piece_memo as cache_mod
from livetok.incremental import document as document_mod
from livetok.incremental.bytelevel import encoding as encoding_mod
from livetok.incremental.piece_memo import GenerationalCache, default_limit

from .._refs import BPE_NAMES, real_text, tiktoken_ref


def test_generational_cache_against_a_dict():
    """Every value recalled is the last one put; both generations stay within the limit; a
    key used at least once per ``limit`` insertions survives any number of turnovers."""
    rng = random.Random(3)
    cache: GenerationalCache[int, int] = GenerationalCache(16)
    truth: dict[int, int] = {}
    for step in range(20_000):
        if step % 10 == 0:
            assert cache.recall(-1) in (None, -1)
            cache.put(-1, -1) if cache.recall(-1) is None else None
        key = rng.randrange(200)
        if rng.random() < 0.5:
            cache.put(key, step)
            truth[key] = step
        else:
            got = cache.recall(key)
            assert got is None or got == truth[key]
        if step % 97 == 0:
            cache.forget(key)
            truth.pop(key, None)
        cache._check()
        assert cache.size() <= 32
    assert cache.recall(-1) == -1  # the hot key was never dropped


def test_default_limit_reads_the_environment(monkeypatch):
    monkeypatch.setenv("LIVETOK_PIECE_CACHE", "1234")
    assert default_limit() == 1234 and GenerationalCache().limit == 1234
    monkeypatch.setenv("LIVETOK_PIECE_CACHE", "lots")
    with pytest.raises(ValueError, match="LIVETOK_PIECE_CACHE"):
        default_limit()
    monkeypatch.delenv("LIVETOK_PIECE_CACHE")
    assert default_limit() == cache_mod.DEFAULT_LIMIT


@pytest.fixture
def small_piece_cache(monkeypatch):
    """Every byte-level encoding gets a piece memo of 64 entries per generation."""
    for name in BPE_NAMES:
        enc = get_encoding(name)
        monkeypatch.setattr(enc, "_cache", encoding_mod.PieceCache(enc.mergeable_ranks, 64))
    yield 64


@pytest.mark.parametrize("name", BPE_NAMES)
def test_piece_cache_stays_bounded_and_exact(name, small_piece_cache):
    enc = get_encoding(name)
    text = real_text(200_000)[:200_000]
    assert enc.encode(text) == tiktoken_ref(name).encode_ordinary(text)
    doc = Document(text[:20_000], encoding=enc)
    rng = random.Random(5)
    words = text.split()
    for _ in range(300):  # typing new words into the document: new pieces all the time
        p = rng.randrange(doc.length + 1)
        doc.edit(p, p, " " + rng.choice(words) + rng.choice("xyz"))
    assert doc.token_ids() == tiktoken_ref(name).encode_ordinary(doc.text)
    enc._cache._check()
    assert enc._cache.size() <= 2 * small_piece_cache


def test_document_builds_block_by_block(monkeypatch):
    """A text of many build blocks gives the ids of one encode, with 1-byte code point counts
    for byte-level encodings."""
    monkeypatch.setattr(document_mod, "_BUILD_BLOCK", 500)
    text = real_text(60_000)[:60_000]
    for name in BPE_NAMES:
        doc = Document(text, encoding=get_encoding(name))
        doc._check()
        assert doc._seq.cps_type == "B"
        assert doc.token_ids() == tiktoken_ref(name).encode_ordinary(text)
        assert len(doc._seq.chunks) > 10


def test_chunk_sums_kept_for_a_bounded_number_of_chunks(monkeypatch):
    """Reading a whole document (token_at everywhere, as semantic tokens or hovers do) keeps
    the per-chunk cumulative sums of at most CUM_CACHED chunks (every chunk kept one before:
    ~9x the text), and the answers stay right."""
    from livetok.incremental import tokenseq

    monkeypatch.setattr(tokenseq, "CUM_CACHED", 8)
    text = real_text(20_000)[:20_000]
    doc = Document(text, encoding=get_encoding("cl100k_base"), load=16)
    assert len(doc._seq.chunks) > 100
    ref = tiktoken_ref("cl100k_base")
    for cp in range(0, len(text), 7):
        tok = doc.token_at(cp)
        assert tok.start <= cp < tok.end or tok.start == tok.end
    assert sum(c._cum is not None for c in doc._seq.chunks) <= 8
    doc.edit(100, 100, "inserted ")
    doc._check()
    assert doc.token_ids() == ref.encode_ordinary(doc.text)


def test_a_widened_piece_cache_keeps_more_and_encodes_the_same():
    """``Encoding.widen_piece_cache`` (bulk counting): the memo holds more pieces, never fewer
    than it did, and the ids stay tiktoken's."""
    from livetok.incremental.bytelevel.encoding import Encoding

    base = get_encoding("cl100k_base")
    assert isinstance(base, Encoding)
    enc = Encoding(base.name, pat_str=base.pat_str, mergeable_ranks=base.mergeable_ranks,
                   special_tokens=base.special_tokens)
    narrow = enc._cache.limit
    enc.widen_piece_cache(narrow * 4)
    assert enc._cache.limit == narrow * 4
    enc.widen_piece_cache(1)  # never narrower
    assert enc._cache.limit == narrow * 4
    def word(i: int) -> str:  # a distinct letters-only word (one piece each)
        out = ""
        while True:
            out += "bcdfghjklmnpqrstvwxz"[i % 20]
            i //= 20
            if not i:
                return " " + out + "a"

    text = "".join(map(word, range(3 * narrow)))  # 3 narrow generations of new pieces
    assert enc.encode(text) == tiktoken_ref("cl100k_base").encode_ordinary(text)
    enc._cache._check()
    assert enc._cache.size() == 3 * narrow  # all kept: the narrow memo would hold 2 at most
