"""The server's line index and position codec against slow references (property tests).

Every mutation of a :class:`LineIndex` is followed by ``_check(text)``, which compares the
whole structure with :func:`naive_lines`. Block size is shrunk so that a few dozen lines
already exercise block splits and merges.
"""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import livetok.server.cli.serve
import livetok.server.lsp.settings
import livetok.server.lsp.documents
import livetok.server.lsp.lineindex as lineindex_mod
import livetok.server.budgets.markdown
import livetok.server.lsp.positions
from livetok.server.lsp.lineindex import LineIndex, naive_lines
from livetok.server.lsp.positions import PositionCodec, PositionError, prefix_cps, units_len

# characters chosen to hit every line-break case and every width: ASCII, 2- and 3-byte UTF-8,
# astral (surrogate pair in UTF-16), a lone surrogate, and the breaks LSP must NOT split on
ALPHABET = ["a", "b", " ", "\n", "\r", "\r\n", "é", "中", "😀", "\ud800", "\v", "\f",
            "\x85", "\u2028", "\0"]
texts = st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(lineindex_mod, "_LOAD", 4)


def naive_line_starts(text: str) -> list[int]:
    starts = [0]
    for n, _t in naive_lines(text)[:-1]:
        starts.append(starts[-1] + n)
    return starts


@pytest.mark.parametrize("module", [lineindex_mod, livetok.server.lsp.positions,
                                    livetok.server.lsp.settings, livetok.server.budgets.markdown,
                                    livetok.server.lsp.documents, livetok.server.cli.serve])
def test_doctests(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def test_naive_lines_by_hand():
    assert naive_lines("") == [(0, 0)]
    assert naive_lines("\r\n\r") == [(2, 2), (1, 1), (0, 0)]
    assert naive_lines("a\vb\x85c\u2028") == [(6, 0)]  # only \n, \r\n, \r end lines


@given(texts)
def test_build_matches_naive(text):
    idx = LineIndex(text)
    idx._check(text)
    starts = naive_line_starts(text)
    assert [idx.line_start(k) for k in range(idx.line_count)] == starts
    for cp in range(len(text) + 1):
        expected = max(k for k, s in enumerate(starts) if s <= cp)
        # an offset inside "\r\n" belongs to the line the pair ends
        assert idx.line_of(cp) == expected


@given(texts, st.data())
def test_replace_sequences(text, data):
    idx = LineIndex(text)
    for _ in range(data.draw(st.integers(1, 12))):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, len(text)))
        new = data.draw(texts)
        rebuilt = idx.replace(start, end, new, before=text[start - 1 : start],
                              after=text[end : end + 1])
        text = text[:start] + new + text[end:]
        idx._check(text)
        assert 0 <= rebuilt[0] <= rebuilt[1] < idx.line_count


def test_replace_splits_and_joins_crlf():
    idx = LineIndex("a\r\nb")
    idx.replace(2, 2, "x", before="\r", after="\n")  # split the pair: "a\rx\nb"
    idx._check("a\rx\nb")
    assert idx.line_count == 3
    idx.replace(2, 3, "", before="\r", after="\n")  # join it again
    idx._check("a\r\nb")
    assert idx.line_count == 2


def test_replace_rejects_wrong_context():
    idx = LineIndex("abc")
    with pytest.raises(ValueError, match="before=text"):
        idx.replace(1, 1, "x", before="", after="b")
    with pytest.raises(ValueError, match="0 <= start <= end"):
        idx.replace(2, 1, "x", before="b", after="b")
    with pytest.raises(IndexError, match="out of range"):
        idx.line_span(5)


class LineIndexMachine(RuleBasedStateMachine):
    """Random edits, including large pastes that create and delete many blocks."""

    @initialize(text=texts)
    def start(self, text):
        self.text = text
        self.idx = LineIndex(text)

    @rule(data=st.data(), new=texts)
    def edit(self, data, new):
        start = data.draw(st.integers(0, len(self.text)))
        end = data.draw(st.integers(start, min(len(self.text), start + 8)))
        self.idx.replace(start, end, new, before=self.text[start - 1 : start],
                         after=self.text[end : end + 1])
        self.text = self.text[:start] + new + self.text[end:]

    @rule(data=st.data(), lines=st.integers(10, 60))
    def paste_many_lines(self, data, lines):
        pos = data.draw(st.integers(0, len(self.text)))
        new = "x\n" * lines
        self.idx.replace(pos, pos, new, before=self.text[pos - 1 : pos],
                         after=self.text[pos : pos + 1])
        self.text = self.text[:pos] + new + self.text[pos:]

    @precondition(lambda self: len(self.text) > 0)
    @rule(data=st.data())
    def delete_big_range(self, data):
        start = data.draw(st.integers(0, len(self.text)))
        end = data.draw(st.integers(start, len(self.text)))
        self.idx.replace(start, end, "", before=self.text[start - 1 : start],
                         after=self.text[end : end + 1])
        self.text = self.text[:start] + self.text[end:]

    @rule(data=st.data(), keys=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 2),
                                                  st.sampled_from(["a", "é", "😀", "", "中b"])),
                                        min_size=1, max_size=6))
    def type_in_lines(self, data, keys):
        """Keystrokes inside lines (``resize_line`` / ``replace_within_line``, which leave the
        block sums after the line's out of date until read), each followed by the lookups a
        keystroke makes, against the text; ``_check`` only runs after the rule."""
        for pick, deleted, typed in keys:
            spans = naive_lines(self.text)
            starts = naive_line_starts(self.text)
            line = pick % len(spans)
            content = spans[line][0] - spans[line][1]
            a = starts[line] + pick % (content + 1)
            b = min(a + deleted, starts[line] + content)
            if pick % 2:
                self.idx.resize_line(line, len(typed) - (b - a), typed)
            else:
                assert self.idx.replace_within_line(a, b, typed) == line
            self.text = self.text[:a] + typed + self.text[b:]
            spans = naive_lines(self.text)
            starts = naive_line_starts(self.text)
            for k in {line, pick % len(spans), len(spans) - 1, 0}:
                start, content_end, flags = self.idx.span_flags(k)
                assert (start, content_end) == (starts[k], starts[k] + spans[k][0] - spans[k][1])
                assert flags & lineindex_mod.flags_of(self.text[start:content_end]) == (
                    lineindex_mod.flags_of(self.text[start:content_end]))
            cp = pick % (len(self.text) + 1)
            assert self.idx.line_of(cp) == (max(i for i, s in enumerate(starts) if s <= cp)
                                            if cp < len(self.text) else len(spans) - 1)
            assert self.idx.length == len(self.text)

    @invariant()
    def agrees(self):
        self.idx._check(self.text)


TestLineIndexMachine = LineIndexMachine.TestCase


# -- the codec ------------------------------------------------------------------------------


def naive_units(text: str, unit: str) -> int:
    return sum(1 if unit == "utf-32" else
               (2 if ord(c) > 0xFFFF else 1) if unit == "utf-16" else
               (1 if ord(c) < 0x80 else 2 if ord(c) < 0x800 else 3 if ord(c) < 0x10000 else 4)
               for c in text)


def naive_to_cp(text: str, line: int, col: int, unit: str) -> int:
    """Walk character by character: the obviously correct conversion."""
    starts = naive_line_starts(text)
    spans = naive_lines(text)
    start = starts[line]
    content_end = start + spans[line][0] - spans[line][1]
    used = 0
    cp = start
    while cp < content_end:
        w = naive_units(text[cp], unit)
        if used + w > col:
            break
        used += w
        cp += 1
    return cp


@pytest.mark.parametrize("unit", ["utf-16", "utf-8", "utf-32"])
@given(text=texts, data=st.data())
def test_codec_round_trip_against_naive(unit, text, data):
    idx = LineIndex(text)
    codec = PositionCodec(unit)  # type: ignore[arg-type]
    read = lambda a, b: text[a:b]  # noqa: E731
    line = data.draw(st.integers(0, idx.line_count - 1))
    col = data.draw(st.integers(0, 60))
    cp = codec.to_cp(idx, read, line, col)
    assert cp == naive_to_cp(text, line, col, unit)
    # and back: every code point offset not inside "\r\n" round-trips exactly
    for off in range(len(text) + 1):
        pos = codec.to_position(idx, read, off)
        line_start = naive_line_starts(text)[pos.line]
        inside_terminator = off > line_start + naive_lines(text)[pos.line][0] - naive_lines(text)[pos.line][1]
        assert pos.col == naive_units(text[line_start:min(off, line_start + naive_lines(text)[pos.line][0] - naive_lines(text)[pos.line][1])], unit)
        if not inside_terminator:
            assert codec.to_cp(idx, read, pos.line, pos.col) == off


def test_codec_errors_and_clamping():
    text = "ab\ncd"
    idx = LineIndex(text)
    codec = PositionCodec("utf-16")
    read = lambda a, b: text[a:b]  # noqa: E731
    assert codec.to_cp(idx, read, 0, 99) == 2  # past the line end: the line end
    assert codec.to_cp(idx, read, 7, 0, clamp=True) == 5
    with pytest.raises(PositionError, match="past the end of the document"):
        codec.to_cp(idx, read, 2, 0)
    with pytest.raises(PositionError, match="negative"):
        codec.to_cp(idx, read, -1, 0)
    with pytest.raises(ValueError, match="unknown position encoding"):
        PositionCodec("utf-7")  # type: ignore[arg-type]


def test_prefix_rounds_down_inside_a_character():
    assert prefix_cps("😀x", 1, "utf-16") == 0  # half a surrogate pair
    assert prefix_cps("😀x", 3, "utf-16") == 2
    assert prefix_cps("中x", 2, "utf-8") == 0  # inside a 3-byte character
    assert prefix_cps("\ud800x", 1, "utf-16") == 1  # a real lone surrogate is one unit
    assert units_len("\ud800", "utf-8") == 3
