"""The Precompiled normalizer's splice (``hf/precompiled.py``, ``Charsmap._spliced``; issue 35):
a long text one edit away from a recent one is normalized between the shared ends only, and
its text and alignment equal a normalization of the whole, on XLM-R's charsmap, on texts whose
clusters span the edit (ZWJ emoji sequences, combining marks, Hangul jamo, CR LF) and on runs
of one character."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental.hf.precompiled import Charsmap, common_ends

from .._hf_encodings import encoding

#: characters whose clusters join across a place (so a splice must find a certain break)
_JOINERS = ["\u200d", "\u0301", "\ufe0f", "\U0001F3FD", "\u1100", "\u1161", "\u11a8", "\r",
            "\n", "\U0001F1E6", "\U0001F1EB", "\u0915", "\u094d", "\u0600"]
_BASE = ["a", " ", "\U0001F469", "\U0001F468", "中", "Ａ", "\ufb01", "é", "\u3000", "1"]
_ALPHABET = _JOINERS + _BASE


def _charsmap() -> Charsmap:
    norm = encoding("xlmr").normalizer
    return norm.steps[0].charsmap  # type: ignore[no-any-return]


def _fresh(cm: Charsmap) -> Charsmap:
    """A charsmap with the same tables and an empty memory of recent texts."""
    twin = Charsmap(cm.table, cm._lookup, [])
    twin._hot = cm._hot
    return twin


@st.composite
def _text_and_edits(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, str]]]:
    unit = draw(st.lists(st.sampled_from(_ALPHABET), min_size=1, max_size=12))
    reps = draw(st.integers(0, 3000))
    text = "".join(unit) * (4096 // len(unit) + 1) + "".join(unit) * reps
    edits = []
    n = len(text)
    for _ in range(draw(st.integers(1, 6))):
        a = draw(st.integers(0, n))
        b = draw(st.integers(a, min(n, a + 3)))
        new = "".join(draw(st.lists(st.sampled_from(_ALPHABET), max_size=3)))
        edits.append((a, b, new))
        n += len(new) - (b - a)
    return text, edits


@given(_text_and_edits())
def test_a_spliced_normalization_equals_the_whole(case: tuple[str, list[tuple[int, int, str]]]
                                                  ) -> None:
    cm = _fresh(_charsmap())
    text, edits = case
    assert len(text) >= 4096
    cm.normalize_aligned(text)
    for a, b, new in edits:
        text = text[:a] + new + text[b:]
        got = cm.normalize_aligned(text)
        want = _fresh(cm)._aligned(text)
        assert got == want, (a, b, new)
        assert got[0] == cm.normalize(text)


def test_the_splice_runs_and_normalizes_only_near_the_edit(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    cm = _fresh(_charsmap())
    rng = random.Random(35)
    zwj = ["\U0001F469\u200d\U0001F469\u200d\U0001F467", "\U0001F468\u200d\U0001F4BB", "中文",
           "e\u0301"]
    text = "".join(rng.choice(zwj) for _ in range(20_000))
    cm.normalize_aligned(text)
    seen: list[int] = []
    whole = Charsmap._aligned

    def counted(self: Charsmap, t: str) -> tuple[str, list[int]]:
        seen.append(len(t))
        return whole(self, t)

    monkeypatch.setattr(Charsmap, "_aligned", counted)
    for _ in range(20):
        p = rng.randrange(len(text))
        ch = rng.choice([c for c in ("\u200d", "x", "\U0001F469") if c != text[p]])
        text = text[:p] + ch + text[p + 1:]
        got = cm.normalize_aligned(text)
        assert seen and seen[-1] < 64, seen
        monkeypatch.setattr(Charsmap, "_aligned", whole)
        assert got == _fresh(cm)._aligned(text)
        monkeypatch.setattr(Charsmap, "_aligned", counted)


@pytest.mark.parametrize("old,new", [("abcXdef", "abcdef"), ("aaaa", "aaa"), ("", "ab"),
                                     ("same", "same"), ("ab", "ba"), ("xaaay", "xaay")])
def test_common_ends(old: str, new: str) -> None:
    p, s = common_ends(old, new)
    assert old[:p] == new[:p] and (p == min(len(old), len(new)) or old[p] != new[p])
    assert p + s <= min(len(old), len(new))
    assert s == 0 or old[-s:] == new[-s:]
    m = min(len(old), len(new)) - p
    assert s == m or old[len(old) - s - 1] != new[len(new) - s - 1]
