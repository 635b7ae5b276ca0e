"""The stdlib ``re`` forms that :mod:`livetok.incremental.pretokenize` runs on ASCII text must
split and read exactly like the reference ``regex`` patterns."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental.pretokenize import _SLACK, Pretokenizer

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
    """All texts of up to two ASCII characters, and of three from the alphabet above."""
    chars = [chr(i) for i in range(128)]
    for n in (1, 2):
        for t in itertools.product(chars, repeat=n):
            check(pre, "".join(t))
    for t in itertools.product(ALPHABET, repeat=3):
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
