"""The stdlib ``re`` forms that :mod:`livetok.incremental.bytelevel.pretokenize` runs on ASCII text must
split and read exactly like the reference ``regex`` patterns."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental.bytelevel.pretokenize import _SLACK, Pretokenizer

from ..conftest import SLOW

NAMES = ["r50k_base", "cl100k_base", "o200k_base"]

# one or two characters of every class the patterns tell apart (letters by case and by
# contraction letter, digits, apostrophe, slash, the white space kinds, \x1c-\x1f which are not
# White_Space, punctuation, controls)
ALPHABET = "aAsStTdDmMlLvVrReEzZ09'/ \t\n\r\x0b\x0c\x1c\x1f.,!-_\x00\x7f"


@pytest.fixture(scope="module", params=NAMES)
def pre(request) -> Pretokenizer:
    return Pretokenizer(request.param)


def reference_horizon(pre: Pretokenizer, text: str, start: int, limit: int) -> int:
    end = min(limit, len(text))
    best = start
    for r in pre._readers:  # the ``regex`` readers, whatever the text
        m = r.match(text, start, end)
        if m is not None and m.end() > best:
            best = m.end()
    return best + _SLACK


def check(pre: Pretokenizer, text: str) -> None:
    assert text.isascii()
    spans = pre.split_reference(text)
    assert list(pre.split(text)) == spans
    for s, _ in spans:
        assert list(pre.split(text, s)) == pre.split_reference(text, s)
    for start in range(len(text) + 1):
        for limit in {start, start + 3, start + 5, len(text)}:
            assert pre.horizon(text, start, limit) == reference_horizon(pre, text, start, limit)


def test_the_ascii_forms_exist(pre) -> None:
    """Without them the tests below would compare the reference with itself."""
    assert pre._ascii_split is not None and pre._ascii_readers is not None


def test_every_short_ascii_text(pre) -> None:
    """All texts of up to two ASCII characters, and of three from the alphabet above: every
    seventh of those in order by default (each character still in each place: about 2.5 s a
    pattern), all 59,319 under slow (about 9 s a pattern)."""
    chars = [chr(i) for i in range(128)]
    for n in (1, 2):
        for t in itertools.product(chars, repeat=n):
            check(pre, "".join(t))
    for t in itertools.islice(itertools.product(ALPHABET, repeat=3), 0, None, 1 if SLOW else 7):
        check(pre, "".join(t))


@given(st.text(st.sampled_from(ALPHABET), max_size=40))
def test_ascii_texts(pre, text) -> None:
    check(pre, text)


@given(st.text(st.characters(max_codepoint=127), max_size=40))
def test_any_ascii_texts(pre, text) -> None:
    check(pre, text)


# both forms of the readers (ASCII text takes the ``re`` form, any other text the ``regex`` one)
MIXED = ALPHABET + "é中ǅʰ\u0301\u00a0\u2028١"


@given(st.text(st.sampled_from(MIXED), max_size=50))
def test_horizons_are_dominated_by_later_pieces(pre, text) -> None:
    """The property the document relies on, for horizons limited to the text (as the re-split
    window asks them): for pieces ``j`` left of ``i``, ``horizon(j) <= max(horizon(i),
    s_i + 4)``; and ``horizon(p) >= p + 4``."""
    n = len(text)
    starts = [s for s, _ in pre.split(text)]
    hs = [pre.horizon(text, s, n) for s in starts]
    for k, (s, h) in enumerate(zip(starts, hs)):
        assert h >= s + _SLACK
        for i in range(k + 1, len(starts)):
            assert h <= max(hs[i], starts[i] + _SLACK), (text, s, starts[i])


def test_custom_pattern_under_a_known_name_reads_conservatively() -> None:
    """tiktoken lets a caller name an encoding ``o200k_base`` and give it another ``pat_str``;
    the name's readers (and ASCII forms) bound only the name's own pattern, so such a pattern
    must get the conservative reader. With the name's readers, the horizon of ``"hello"``
    below would be 9, inside the first piece (a whole line here)."""
    line_pattern = r"[^\n]+\n?|\n"
    pre = Pretokenizer("o200k_base", line_pattern)
    text = "hello world\nfoo"
    assert pre.split_reference(text) == [(0, 12), (12, 15)]
    assert list(pre.split(text)) == [(0, 12), (12, 15)]
    assert pre.fast is None and pre._ascii_split is None and pre._ascii_readers is None
    for start in (0, 12):
        assert pre.horizon(text, start) >= len(text)


def test_custom_pattern_document_edits_match_tiktoken() -> None:
    """The same through a Document: every edit of a text whose pieces are whole lines gives
    tiktoken's ids for the same pattern. (The document also re-splits until piece boundaries
    agree, so this passed with the name's readers too; the test above is the one that fails.)"""
    import random

    import tiktoken

    from livetok.incremental import Document, Encoding, get_encoding

    base = get_encoding("o200k_base")
    line_pattern = r"[^\n]+\n?|\n"
    enc = Encoding("o200k_base", pat_str=line_pattern, mergeable_ranks=base.mergeable_ranks)
    ref = tiktoken.Encoding(
        "o200k_lines", pat_str=line_pattern, mergeable_ranks=base.mergeable_ranks,
        special_tokens={},
    )
    rng = random.Random(7)
    text = "hello world, this is one line\nand another line here\n" * 3
    doc = Document(text, encoding=enc)
    for _ in range(200):
        pos = rng.randint(0, len(text))
        end = min(len(text), pos + rng.choice([0, 0, 1, 3]))
        ins = rng.choice(["", "a", " ", "x", "\n", "ab cd"])
        doc.edit(pos, end, ins)
        text = text[:pos] + ins + text[end:]
        assert doc.token_ids() == ref.encode_ordinary(text), (pos, end, ins)
    doc._check()


# long non-ASCII segments: one letter run (a single piece) and short pieces (prose with
# punctuation, Cyrillic words, digits), for the choice of engine in ``Pretokenizer.finditer``
_LONG_RUN = ["中文字符测试的", "日本語のテキスト", "한국어텍스트", "abcdé", "AbC"]
_SHORT = ["中文，", "字。", "слово ", "Ωμέγα, ", "12 345 ", " !? ", "\n", "é ", "'s "]


@pytest.mark.parametrize("name", NAMES)
def test_long_non_ascii_texts_take_the_faster_engine_and_split_the_same(name, monkeypatch):
    """Long non-ASCII text whose first pieces are long (a line of CJK letters without spaces)
    is split by ``regex`` (2-3x faster there than the class codes, measured); other text by the
    class codes. Both must give the reference spans, whatever the text does after the sample.
    """
    from livetok.incremental.bytelevel import pretokenize

    pre = Pretokenizer(name)
    assert pre.fast is not None
    calls: list[str] = []
    fast_finditer = pre.fast.finditer

    def spy(text: str, pos: int = 0):
        calls.append("codes")
        return fast_finditer(text, pos)

    monkeypatch.setattr(pre.fast, "finditer", spy)
    rng = __import__("random").Random(name)
    n_long = n_codes = 0
    for trial in range(60):
        parts: list[str] = []
        size = rng.choice([100, 3000, pretokenize._SAMPLE_FROM, 9000])
        while sum(map(len, parts)) < size:
            pool = _LONG_RUN if rng.random() < (0.9 if trial % 2 else 0.1) else _SHORT
            parts.append(rng.choice(pool) * rng.choice([1, 3, 40]))
        text = "".join(parts)
        pos = rng.choice([0, 0, 1, 7])
        long_sample = len(text) - pos >= pretokenize._SAMPLE_FROM and not text.isascii() and (
            len(pre.split_reference(text[: pos + pretokenize._SAMPLE_CHARS], pos))
            <= pretokenize._SAMPLE_CHARS // pretokenize._LONG_PIECE)
        calls.clear()
        assert [m.span() for m in pre.finditer(text, pos)] == pre.split_reference(text, pos)
        assert calls == ([] if long_sample else ["codes"]), (trial, len(text))
        calls.clear()
        assert list(pre.split(text, pos)) == pre.split_reference(text, pos)
        # (split takes its own ASCII form on ASCII text)
        assert calls == ([] if long_sample or text.isascii() else ["codes"]), (trial, len(text))
        n_long += long_sample
        n_codes += not long_sample
    assert n_long >= 5 and n_codes >= 5, (n_long, n_codes)
