"""Where lines start, in code points, kept up to date edit by edit.

The language server receives positions as ``(line, character)`` and the core speaks code
point offsets. :class:`LineIndex` answers "where does line ``k`` start?" and "which line
holds code point ``cp``?" without the document's text, and is updated from each edit in
time proportional to the inserted text (plus ``O(sqrt n)`` bookkeeping), never by
rescanning the document.

Only ``\\n``, ``\\r\\n`` and ``\\r`` end lines, as the LSP specification says. (Python's
``str.splitlines`` also breaks on ``\\v``, ``\\f``, U+0085, U+2028, ...: wrong for LSP.)

Representation: the document is a sequence of lines, each stored as its length in code
points *including* its terminator, plus the terminator's length (0, 1 or 2). There is one
more line than there are terminators: the last line has no terminator and may be empty.
The lengths live in blocks of at most ``2 * _LOAD`` lines (the layout of
``sortedcontainers.SortedList``), with per-block totals and prefix sums over blocks, so a
lookup is two bisections plus a sum inside one block.

Each line also carries two flags beside its terminator's length (in the same byte):
:data:`WIDE` (a character outside ASCII) and :data:`ASTRAL` (one outside the Basic
Multilingual Plane). They say what converting a column needs: on a line without ``WIDE``,
UTF-8 bytes, UTF-16 units and code points are one column each, and without ``ASTRAL``
UTF-16 units are; only the other lines' text is read (``positions.py``). The flags may be
set on a line that no longer has such a character (an edit deletes without looking), never
missing on one that has: a stale flag costs a read, a missing one would be a wrong column.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from itertools import accumulate, compress, repeat
from operator import add, not_
from typing import Iterator, NamedTuple, Sequence

__all__ = ["ASTRAL", "WIDE", "LineIndex", "LineSpan", "flags_of", "naive_lines"]

#: one line terminator; ``\r\n`` first so that it is one terminator, not two
_BREAK = re.compile(r"\r\n|\r|\n")
_LOAD = 512
#: line flags, stored above the terminator length (bits 0-1) in the same byte
WIDE = 4
ASTRAL = 8
_TERM = 3


def flags_of(text: str) -> int:
    """The line flags ``text`` calls for.

    >>> flags_of("abc"), flags_of("é"), flags_of("a😀")
    (0, 4, 12)

    Runtime complexity: ``O(len(text))`` in C.
    """
    if text.isascii():
        return 0
    return WIDE | ASTRAL if max(text) > "\uffff" else WIDE


class LineSpan(NamedTuple):
    """A line's code point span: ``[start_cp, content_end_cp)`` is its text without the
    terminator, ``[content_end_cp, end_cp)`` the terminator (empty on the last line)."""

    start_cp: int
    content_end_cp: int
    end_cp: int


def naive_lines(text: str) -> list[tuple[int, int]]:
    """``(length_with_terminator, terminator_length)`` of every line: the slow reference.

    >>> naive_lines("a\\r\\nbc\\rd\\n")
    [(3, 2), (3, 1), (2, 1), (0, 0)]

    Runtime complexity: ``O(len(text))`` Python steps.
    """
    lines: list[tuple[int, int]] = []
    start = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\r" and i + 1 < n and text[i + 1] == "\n":
            lines.append((i + 2 - start, 2))
            i += 2
            start = i
        elif ch in "\r\n":
            lines.append((i + 1 - start, 1))
            i += 1
            start = i
        else:
            i += 1
    lines.append((n - start, 0))
    return lines


def _split_lines(text: str) -> tuple[array[int], array[int]]:
    """Line lengths and terminator lengths (and flags) of ``text``: without a ``"\\r"``, one
    ``str.split`` and C-level maps (a Python step only per line outside ASCII), else one
    regex pass."""
    if "\r" not in text:  # the common case: every terminator is "\n"
        parts = text.split("\n")
        n = len(parts)
        lengths = array("I", map(add, map(len, parts), repeat(1, n - 1)))
        lengths.append(len(parts[-1]))
        terms = array("B", bytes(repeat(1, n - 1)))
        terms.append(0)
        if not text.isascii():
            for i in compress(range(n), map(not_, map(str.isascii, parts))):
                terms[i] |= flags_of(parts[i])
        return lengths, terms
    lengths = array("I")
    terms = array("B")
    start = 0
    for m in _BREAK.finditer(text):
        end = m.end()
        lengths.append(end - start)
        terms.append(end - m.start())
        start = end
    lengths.append(len(text) - start)
    terms.append(0)
    if not text.isascii():  # the flags of the lines that need them
        start = 0
        for i, n in enumerate(lengths):
            flags = flags_of(text[start : start + n])
            if flags:
                terms[i] |= flags
            start += n
    return lengths, terms


class LineIndex:
    """Line starts of a text in code points, updated incrementally.

    >>> idx = LineIndex("ab\\ncd")
    >>> idx.line_count, idx.line_span(1), idx.line_of(4)
    (2, LineSpan(start_cp=3, content_end_cp=5, end_cp=5), 1)
    >>> idx.replace(2, 3, "", before="b", after="c")   # join the two lines
    (0, 0)
    >>> idx.line_count, idx.length
    (1, 4)
    """

    #: prefix sums over blocks of code points and of lines (set by :meth:`_rebuild_prefix`)
    _cum_cps: list[int]
    _cum_lines: list[int]
    #: ``_cum_cps[j]`` is right for ``j < _stale_from`` (:meth:`resize_line` leaves the rest
    #: to :meth:`_refresh_cum`, done when one of them is read)
    _stale_from: int
    #: length of the indexed text in code points, and its number of lines (terminators + 1);
    #: kept up to date by every update (attributes: read several times per keystroke)
    length: int
    line_count: int

    def __init__(self, text: str = "") -> None:
        lengths, terms = _split_lines(text)
        # arrays, not lists: 5 bytes a line instead of 16 (a 20 MB file of code has ~500,000)
        self._lens: list[array[int]] = [lengths[i : i + _LOAD]
                                        for i in range(0, len(lengths), _LOAD)]
        self._terms: list[array[int]] = [terms[i : i + _LOAD] for i in range(0, len(terms), _LOAD)]
        self._block_cps: list[int] = [sum(b) for b in self._lens]
        #: ``(line, start_cp, end_cp)`` of the line :meth:`line_of` found last: typing stays in
        #: one line, and its lookups then skip the block search
        self._hint: tuple[int, int, int] | None = None
        self._rebuild_prefix()

    @classmethod
    def from_parts(cls, parts: list[str]) -> LineIndex:
        """The index of ``"".join(parts)``, without joining them (the parts of a big text,
        see ``bigtext.py``).

        Runtime complexity: ``O(total length)``.
        """
        lengths = array("I")
        terms = array("B")
        carry = ""
        for k, part in enumerate(parts):
            text = carry + part
            # a "\r" at the end may pair with a "\n" at the start of the next part
            carry = "\r" if text.endswith("\r") and k + 1 < len(parts) else ""
            if carry:
                text = text[:-1]
            lens, ts = _split_lines(text)
            if lengths:  # the last line so far was not ended: this part's first line goes on
                lens[0] += lengths.pop()
                ts[0] |= terms.pop()  # its flags (an unended line's terminator is 0)
            lengths.extend(lens)
            terms.extend(ts)
        self = cls("")
        if lengths:
            self._lens = [lengths[i : i + _LOAD] for i in range(0, len(lengths), _LOAD)]
            self._terms = [terms[i : i + _LOAD] for i in range(0, len(terms), _LOAD)]
            self._block_cps = [sum(b) for b in self._lens]
            self._rebuild_prefix()
        return self

    # -- queries ---------------------------------------------------------------------------

    def line_span(self, line: int) -> LineSpan:
        """Code point span of ``line`` (0-based); raises ``IndexError`` past the last line.

        >>> LineIndex("x\\r\\ny").line_span(0)
        LineSpan(start_cp=0, content_end_cp=1, end_cp=3)

        Runtime complexity: ``O(log n + B)`` for ``B`` lines per block (at most 1024).
        """
        if not 0 <= line < self.line_count:
            raise IndexError(
                f"line {line} out of range: the text has {self.line_count} lines (0-based)"
            )
        b = bisect_right(self._cum_lines, line) - 1
        if b >= self._stale_from:
            self._refresh_cum()
        i = line - self._cum_lines[b]
        lens = self._lens[b]
        start = self._cum_cps[b] + sum(lens[:i])
        end = start + lens[i]
        return LineSpan(start, end - (self._terms[b][i] & _TERM), end)

    def span_flags(self, line: int) -> tuple[int, int, int]:
        """``(start_cp, content_end_cp, flags)`` of ``line`` (an existing one): what a column
        conversion needs (:data:`WIDE`, :data:`ASTRAL`).

        >>> LineIndex("x\\r\\n😀").span_flags(1)
        (3, 4, 12)

        Runtime complexity: as :meth:`line_span`; ``O(log n)`` for the line asked last (or
        found by :meth:`line_of`), whose span is kept.
        """
        b = bisect_right(self._cum_lines, line) - 1
        i = line - self._cum_lines[b]
        term = self._terms[b][i]
        hint = self._hint
        if hint is not None and hint[0] == line:  # typing stays in one line: no sums
            return hint[1], hint[2] - (term & _TERM), term & ~_TERM
        if b >= self._stale_from:
            self._refresh_cum()
        lens = self._lens[b]
        start = self._cum_cps[b] + sum(lens[:i])
        end = start + lens[i]
        self._hint = (line, start, end)
        return start, end - (term & _TERM), term & ~_TERM

    def line_start(self, line: int) -> int:
        """Code point offset where ``line`` starts.

        Runtime complexity: as :meth:`line_span`.
        """
        return self.line_span(line).start_cp

    def line_of(self, cp_offset: int) -> int:
        """The line holding code point ``cp_offset`` (the end of the text is on the last line).

        A terminator belongs to the line it ends, so both offsets inside ``\\r\\n`` map to
        that line.

        >>> idx = LineIndex("ab\\r\\ncd")
        >>> [idx.line_of(i) for i in range(7)]
        [0, 0, 0, 0, 1, 1, 1]

        Runtime complexity: ``O(log n + B)``.
        """
        if not 0 <= cp_offset <= self.length:
            raise IndexError(f"offset {cp_offset} out of range 0..{self.length}")
        if cp_offset == self.length:
            return self.line_count - 1
        hint = self._hint
        if hint is not None and hint[1] <= cp_offset < hint[2]:
            return hint[0]
        if self._stale_from < len(self._cum_cps):
            self._refresh_cum()
        b = bisect_right(self._cum_cps, cp_offset) - 1
        # subtle: empty blocks never exist, so bisect lands on the block holding cp_offset
        base = self._cum_cps[b]
        # the first line of the block whose end lies past the offset (sums and search in C:
        # a Python loop over the block took ~50 us per call)
        ends = list(accumulate(self._lens[b]))
        i = bisect_right(ends, cp_offset - base)
        if i < len(ends):
            line = self._cum_lines[b] + i
            self._hint = (line, base + (ends[i - 1] if i else 0), base + ends[i])
            return line
        raise AssertionError("unreachable: block totals are out of date")  # pragma: no cover

    def lines(self) -> Iterator[LineSpan]:
        """Every line's span, first to last.

        Runtime complexity: ``O(n)`` for ``n`` lines.
        """
        start = 0
        for lens, terms in zip(self._lens, self._terms):
            for n, t in zip(lens, terms):
                yield LineSpan(start, start + n - (t & _TERM), start + n)
                start += n

    # -- update ----------------------------------------------------------------------------

    def replace(
        self, start_cp: int, end_cp: int, new_text: str, *, before: str, after: str
    ) -> tuple[int, int]:
        """Account for ``text[start_cp:end_cp] = new_text``.

        ``before`` is the old ``text[start_cp - 1]`` (``""`` at the start) and ``after`` the
        old ``text[end_cp]`` (``""`` at the end): the only characters outside the edit that
        can change where lines end (a ``\\r`` before an inserted ``\\n``, or an edit that
        splits or joins a ``\\r\\n``). Returns ``(first_line, last_line)``: the lines of the
        new text that were rebuilt (both inclusive); lines after them only moved.

        Runtime complexity: ``O(len(new_text) + B + n / B)`` for ``n`` lines and block size
        ``B``; no rescan of unchanged lines.
        """
        if not 0 <= start_cp <= end_cp <= self.length:
            raise ValueError(
                f"replace({start_cp}, {end_cp}): need 0 <= start <= end <= {self.length}"
            )
        if len(before) != (1 if start_cp > 0 else 0) or len(after) != (
            1 if end_cp < self.length else 0
        ):
            raise ValueError(
                "pass before=text[start-1] (or '' at 0) and after=text[end] (or '' at the end)"
            )
        if "\n" not in new_text and "\r" not in new_text and not (
            not new_text and before == "\r" and after == "\n"
        ) and self.within_line(start_cp, end_cp):
            line = self.line_of(start_cp)
            self.resize_line(line, len(new_text) - (end_cp - start_cp), new_text)
            return line, line
        # Widen the edit by one character on each side when that character could pair with
        # the new text into "\r\n" or was half of one: then every "\r\n" that can be formed
        # or broken lies inside the window, and text outside it keeps its line structure.
        s2 = start_cp - 1 if before == "\r" else start_cp
        e2 = end_cp + 1 if after == "\n" else end_cp
        window = (before if s2 < start_cp else "") + new_text + (after if e2 > end_cp else "")
        first = self.line_of(s2)
        last = self.line_of(e2)
        first_span = self.line_span(first)
        last_span = self.line_span(last)
        head = s2 - first_span.start_cp  # text of the first line left of the window: no break
        tail = last_span.end_cp - e2  # rest of the last line, ending in its own terminator
        tail_term = last_span.end_cp - last_span.content_end_cp

        new_lens, new_terms = _split_lines(window)
        new_lens[0] += head
        new_lens[-1] += tail
        # the kept parts of the first and last lines keep their flags
        new_terms[0] |= self._flags(first)
        new_terms[-1] = tail_term | (new_terms[-1] & ~_TERM) | self._flags(last)
        self._splice(first, last + 1, new_lens, new_terms)
        return first, first + len(new_lens) - 1

    def within_line(self, start_cp: int, end_cp: int) -> bool:
        """Whether ``[start_cp, end_cp)`` lies inside one line's content (its terminator
        excluded), so that replacing it by text without line breaks changes only that line's
        length, whatever the characters beside it are: except when the whole content of a line
        that follows a ``\r`` and ends in ``\n`` is deleted (``\r\n`` forms), which the
        index cannot tell apart, so a range that is a whole line's content is not *within*.

        Runtime complexity: ``O(log n + B)``.
        """
        span = self.line_span(self.line_of(start_cp))
        return end_cp <= span.content_end_cp and not (
            start_cp == span.start_cp > 0 and end_cp == span.content_end_cp)

    def replace_within_line(self, start_cp: int, end_cp: int, new_text: str) -> int:
        """Account for ``text[start_cp:end_cp] = new_text`` where :meth:`within_line` holds
        and ``new_text`` has no ``\r`` or ``\n`` (typing inside a line: nothing to read
        beside the edit); returns the line.

        Runtime complexity: ``O(log n + B + n / B)``.
        """
        assert "\n" not in new_text and "\r" not in new_text, "not within a line"
        line = self.line_of(start_cp)
        self.resize_line(line, len(new_text) - (end_cp - start_cp), new_text)
        return line

    def _flags(self, line: int) -> int:
        b = bisect_right(self._cum_lines, line) - 1
        return self._terms[b][line - self._cum_lines[b]] & ~_TERM

    def resize_line(self, line: int, delta: int, inserted: str = "") -> None:
        """Line ``line``'s content grew by ``delta`` code points (shrank when negative), none of
        them a line break, and now holds ``inserted``, whose characters may set the line's
        flags: typing inside a line, when the caller knows the line
        (:meth:`replace_within_line` finds it).

        Runtime complexity: ``O(log n)``; the block sums after the line's are brought up to
        date, ``O(n / B)`` in C, only when one of them is read next.
        """
        hint = self._hint
        if hint is not None and hint[0] >= line:  # lines before the one resized stay put
            h, s0, e0 = hint
            self._hint = (h, s0, e0 + delta) if h == line else (h, s0 + delta, e0 + delta)
        b = bisect_right(self._cum_lines, line) - 1
        self._lens[b][line - self._cum_lines[b]] += delta
        if not inserted.isascii():  # (flags_of's own test, without a call on a keystroke)
            self._terms[b][line - self._cum_lines[b]] |= flags_of(inserted)
        self._block_cps[b] += delta
        # the block sums after ``b`` are out of date until read (:meth:`_refresh_cum`):
        # typing in one block keeps reading sums up to its own, which stay right
        if b < self._stale_from:
            self._stale_from = b + 1
        self.length += delta

    def _splice(self, lo: int, hi: int, lens: Sequence[int], terms: Sequence[int]) -> None:
        """Replace lines ``lo..hi-1`` by the given lines, then rebalance the touched blocks."""
        self._hint = None
        cum = self._cum_lines
        b_lo = bisect_right(cum, lo) - 1
        b_hi = bisect_right(cum, hi - 1) - 1
        base = cum[b_lo]
        flat_lens = [n for b in range(b_lo, b_hi + 1) for n in self._lens[b]]
        flat_terms = [t for b in range(b_lo, b_hi + 1) for t in self._terms[b]]
        flat_lens[lo - base : hi - base] = lens
        flat_terms[lo - base : hi - base] = terms
        # subtle: a block left tiny by deletions is merged into its right neighbour so that
        # the block count stays O(n / B); only that one extra block is read.
        if len(flat_lens) < _LOAD // 2 and b_hi + 1 < len(self._lens):
            b_hi += 1
            flat_lens += self._lens[b_hi]
            flat_terms += self._terms[b_hi]
        n_chunks = max(1, -(-len(flat_lens) // _LOAD)) if len(flat_lens) > 2 * _LOAD else 1
        size = -(-len(flat_lens) // n_chunks)
        new_l = [array("I", flat_lens[i : i + size]) for i in range(0, len(flat_lens), size)]
        new_t = [array("B", flat_terms[i : i + size]) for i in range(0, len(flat_terms), size)]
        self._lens[b_lo : b_hi + 1] = new_l
        self._terms[b_lo : b_hi + 1] = new_t
        self._block_cps[b_lo : b_hi + 1] = [sum(b) for b in new_l]
        self._rebuild_prefix()

    def _refresh_cum(self) -> None:
        """Bring the code point sums over blocks up to date after :meth:`resize_line`.

        Runtime complexity: ``O(n / B)`` in C.
        """
        self._cum_cps = [0, *accumulate(self._block_cps)]
        self._stale_from = len(self._cum_cps)

    def _rebuild_prefix(self) -> None:
        # O(n / B): cheap next to the per-edit work for any document that fits in memory
        self._cum_cps = [0, *accumulate(self._block_cps)]
        self._stale_from = len(self._cum_cps)
        self._cum_lines = [0, *accumulate(len(b) for b in self._lens)]
        self.length = self._cum_cps[-1]
        self.line_count = self._cum_lines[-1]

    # -- invariants ------------------------------------------------------------------------

    def _check(self, text: str | None = None) -> None:
        """Assert every internal invariant; with ``text``, also agree with :func:`naive_lines`.

        Runtime complexity: ``O(n)`` (``O(len(text))`` with ``text``).
        """
        try:
            assert self._lens and len(self._lens) == len(self._terms) == len(self._block_cps)
            for lens, terms, total in zip(self._lens, self._terms, self._block_cps):
                assert lens, "empty block"
                assert len(lens) <= 2 * _LOAD, "oversized block"
                assert len(lens) == len(terms)
                assert sum(lens) == total, "stale block total"
                assert all(0 <= t & _TERM <= 2 and t & _TERM <= n and t < 16
                           for n, t in zip(lens, terms))
            flags = [t & ~_TERM for ts in self._terms for t in ts]
            flat_terms = [t & _TERM for ts in self._terms for t in ts]
            assert flat_terms[-1] == 0, "last line must have no terminator"
            assert all(t > 0 for t in flat_terms[:-1]), "only the last line lacks a terminator"
            assert self._stale_from <= len(self._cum_cps)
            assert self._cum_cps[: self._stale_from] == [0, *accumulate(
                self._block_cps)][: self._stale_from], "stale block sums below _stale_from"
            self._refresh_cum()
            assert self._cum_cps == [0, *accumulate(self._block_cps)]
            assert self._cum_lines == [0, *accumulate(len(b) for b in self._lens)]
            assert (self.length, self.line_count) == (self._cum_cps[-1], self._cum_lines[-1])
            if self._hint is not None:
                line, start, end = self._hint
                span = self.line_span(line)
                assert (span.start_cp, span.end_cp) == (start, end), f"stale hint {self._hint}"
            if text is not None:
                flat = list(zip([n for b in self._lens for n in b], flat_terms))
                assert flat == naive_lines(text), "lines differ from naive_lines(text)"
                start = 0
                for (n, _), f in zip(flat, flags):  # a flag may be stale, never missing
                    need = flags_of(text[start : start + n])
                    assert need & ~f == 0, f"line at {start} lacks flags {need & ~f}"
                    start += n
        except AssertionError:
            print("LineIndex state:", {"lens": self._lens, "terms": self._terms,
                                       "block_cps": self._block_cps, "text": text})
            raise
