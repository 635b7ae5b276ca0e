"""``Document.edit_at`` (a keystroke's one call into the core, issue 36) against a slow
reference: places given as a line's span and a column in UTF-16, UTF-8 or UTF-32 units (any
column: inside a surrogate pair or a UTF-8 sequence, past the line's end), in either order;
the text, the span, the characters around it and the count must be what the reference says.
"""

from __future__ import annotations

import re

from hypothesis import given, strategies as st

from livetok.incremental import get_encoding
from livetok.incremental.columns import Spot
from livetok.incremental.document import Document
from tests._refs import tiktoken_ref

ENC = "o200k_base"
ALPHABET = ["a", " ", "\n", "\r\n", "\r", "é", "中", "😀", "b c"]
texts = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=30).map("".join)


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, content end) of every line, breaks \\n, \\r\\n and \\r (the slow way)."""
    spans, start = [], 0
    for m in re.finditer(r"\r\n|\r|\n", text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return spans


def width(ch: str, unit: str) -> int:
    if unit == "utf-32":
        return 1
    return len(ch.encode("utf-16-le" if unit == "utf-16" else "utf-8")) // (
        2 if unit == "utf-16" else 1)


def naive_cp(text: str, span: tuple[int, int], col: int, unit: str) -> int:
    """The code point of column ``col``: the characters that end at or before it (a column
    inside a character rounds down; past the end is the end)."""
    cp, used = span[0], 0
    while cp < span[1] and used + width(text[cp], unit) <= col:
        used += width(text[cp], unit)
        cp += 1
    return cp


@given(texts, st.data(), st.sampled_from(["utf-16", "utf-8", "utf-32"]),
       st.sampled_from(["", "x", "\n", "😀", "\r"]))
def test_edit_at_converts_on_the_core_side_as_the_reference(text, data, unit, new):
    spans = line_spans(text)
    la = data.draw(st.integers(0, len(spans) - 1))
    lb = data.draw(st.integers(0, len(spans) - 1))
    ca, cb = data.draw(st.integers(0, 12)), data.draw(st.integers(0, 12))
    around = data.draw(st.booleans())
    a = Spot(*spans[la], ca, True)
    b = Spot(*spans[lb], cb, data.draw(st.booleans()) if unit == "utf-32" else True)
    start, end = naive_cp(text, spans[la], ca, unit), naive_cp(text, spans[lb], cb, unit)
    swapped = start > end
    start, end = min(start, end), max(start, end)
    doc = Document(text, get_encoding(ENC))
    placed = doc.edit_at(a, b, new, unit, around)  # type: ignore[arg-type]
    expected = text[:start] + new + text[end:]
    assert (placed.start, placed.end, placed.swapped) == (start, end, swapped)
    assert doc.text == expected
    assert placed.result.token_count == len(tiktoken_ref(ENC).encode(expected))
    if around or la != lb or swapped:
        assert placed.before == text[start - 1:start] and placed.after == text[end:end + 1]
