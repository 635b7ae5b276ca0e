"""XLM-R's long pre-tokens edited through the window re-encode (``hf/unigram_window.py``;
issue 35) equal HuggingFace's ``tokenizers`` after every edit: hypothesis draws a line of
tie-prone units (one letter, repeated CJK, digits, base64 letters, JSON, emoji, unknown
characters) and edits at random places and at or next to forced cuts (seeded;
``LIVETOK_EXAMPLES`` sets the count). The model is driven directly (``UnigramModel._long``,
what the pipeline calls for a pre-token over 256 characters), so each example makes many
edits; ``test_hf_xlmr_long_lines.py`` drives whole documents."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental.hf.unigram import _reference_encode

from .._hf_encodings import encoding

pytest.importorskip("tokenizers")

UNITS = ["a", "中文", "中", "字符测试", "的一是不了人我在有他这为之大来以个", "\u0378", "\u0378中",
         "12", "1234567890", "ACGT", "QmFzZTY0+/", "aGVsbG8gd29ybGQ=", '{"id":12,"ok":true},',
         "\U0001F469\u200d\U0001F469\u200d\U0001F467", "\U0001F600", "é", "ーー", "。"]
INSERTS = ["a", "b", "中", "文", "\u0378", "1", "=", '"', "\U0001F600", "字符", "\u2581", "QQ"]


@st.composite
def _case(draw: st.DrawFn) -> tuple[str, list[tuple[float, int, int, str]]]:
    units = draw(st.lists(st.sampled_from(UNITS), min_size=1, max_size=4))
    body = "".join(u * draw(st.integers(1, 40)) for u in units)
    line = "\u2581" + body * (300 // len(body) + 1) + body[: draw(st.integers(0, len(body)))]
    edits = draw(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 2), st.integers(-2, 2),
                                    st.sampled_from(INSERTS)), min_size=1, max_size=12))
    return line, edits


@given(_case())
def test_window_edits_of_xlmr_pretokens_equal_huggingface(
        case: tuple[str, list[tuple[float, int, int, str]]]) -> None:
    model = encoding("xlmr").model
    ref = model._reference()
    win = model._windows()
    assert ref is not None and win is not None
    s, edits = case
    assert model._long(s) == _reference_encode(ref, s)
    for where, kind, near, ins in edits:
        p = 1 + int(where * (len(s) - 1))
        if near:  # next to the nearest forced cut at or after p
            c = next((c for c in range(p, min(len(s), p + 64)) if win.is_cut(s, c)), p)
            p = min(len(s), max(1, c + near))
        if kind == 0 and p < len(s):
            s = s[:p] + s[p + 1:]
        elif kind == 1 and p < len(s):
            s = s[:p] + ins + s[p + 1:]
        else:
            s = s[:p] + ins + s[p:]
        if len(s) <= 256:
            s += "中文" * 200
        assert model._long(s) == _reference_encode(ref, s), (win.last, where, kind, near, ins)
