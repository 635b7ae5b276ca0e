"""The position codec: LSP ``(line, character)`` in the negotiated unit <-> code points.

LSP clients count a line's characters in UTF-16 code units (the default), UTF-8 bytes or
UTF-32 code points, whichever ``positionEncoding`` the server picked from the client's
offer. The core counts code points. This module converts, reading only the part of one
line that a conversion needs (the line's text comes from ``Document.slice``), so a
conversion costs ``O(log n)`` to find the line plus the length of the line prefix.

Lone surrogates (JSON ``"\\ud800"`` decodes to one) count as one UTF-16 unit and three
UTF-8 bytes (the core tokenizes them as U+FFFD, which is also three bytes). A column that
falls inside a character (half a surrogate pair, a UTF-8 continuation byte) rounds down to
the start of that character; a column past the end of the line means the end of the line,
as the specification requires.
"""

from __future__ import annotations

from typing import Callable, Literal, NamedTuple

from livetok.server.lsp.lineindex import ASTRAL, WIDE, LineIndex

__all__ = [
    "PositionCodec",
    "PositionError",
    "Unit",
    "UNITS",
    "units_len",
    "prefix_cps",
]

Unit = Literal["utf-8", "utf-16", "utf-32"]
UNITS: tuple[Unit, ...] = ("utf-16", "utf-8", "utf-32")

#: ``read(start_cp, end_cp) -> str``: text of a range (``Document.slice``)
Reader = Callable[[int, int], str]


class PositionError(ValueError):
    """A position that names no place in the document (line past the end, negative)."""


class LineCol(NamedTuple):
    """An LSP position: 0-based line and column in the codec's unit."""

    line: int
    col: int


def units_len(text: str, unit: Unit) -> int:
    """Length of ``text`` in ``unit``.

    >>> units_len("a😀é", "utf-16"), units_len("a😀é", "utf-8"), units_len("a😀é", "utf-32")
    (4, 7, 3)

    Runtime complexity: ``O(len(text))`` in C (``O(1)`` for ASCII).
    """
    if unit == "utf-32" or text.isascii():
        return len(text)
    if unit == "utf-16":
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    return len(text.encode("utf-8", "surrogatepass"))


def prefix_cps(text: str, units: int, unit: Unit) -> int:
    """Code points of the longest prefix of ``text`` that is at most ``units`` long.

    >>> prefix_cps("a😀é", 2, "utf-16"), prefix_cps("a😀é", 3, "utf-16"), prefix_cps("é", 1, "utf-8")
    (1, 2, 0)

    Runtime complexity: ``O(len(text))`` in C.
    """
    if units <= 0:
        return 0
    if unit == "utf-32" or text.isascii():
        return min(units, len(text))
    if unit == "utf-16":
        data = text.encode("utf-16-le", "surrogatepass")[: 2 * units]
        head = data.decode("utf-16-le", "surrogatepass")
        n = len(head)
        # subtle: cutting a surrogate pair in half decodes to a lone high surrogate that is
        # not in the original text; round down to the start of that character
        if n and head[-1] != text[n - 1]:
            n -= 1
        return n
    data = text.encode("utf-8", "surrogatepass")[:units]
    # drop a character cut short: back up to its lead byte when fewer bytes remain than it needs
    cut = len(data)
    i = cut - 1
    while i >= 0 and data[i] & 0xC0 == 0x80:
        i -= 1
    if i >= 0:
        lead = data[i]
        need = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if cut - i < need:
            cut = i
    return len(data[:cut].decode("utf-8", "surrogatepass"))


class PositionCodec:
    """Converts LSP positions in one unit to code point offsets and back.

    >>> idx = LineIndex("héllo\\n😀x")
    >>> text = "héllo\\n😀x"
    >>> codec = PositionCodec("utf-16")
    >>> codec.to_cp(idx, lambda a, b: text[a:b], 1, 2)
    7
    >>> codec.to_position(idx, lambda a, b: text[a:b], 8)
    LineCol(line=1, col=3)

    Runtime complexity: each conversion ``O(log n + B)`` for the line plus the length of the
    line prefix read.
    """

    def __init__(self, unit: Unit = "utf-16") -> None:
        if unit not in UNITS:
            raise ValueError(f"unknown position encoding {unit!r}; use one of {UNITS}")
        self.unit: Unit = unit
        #: the line flags (``lineindex.WIDE``/``ASTRAL``) under which a column is not a code
        #: point: only such lines are read to convert
        self.read_on = 0 if unit == "utf-32" else ASTRAL if unit == "utf-16" else WIDE

    def to_cp(
        self, index: LineIndex, read: Reader, line: int, col: int, *, clamp: bool = False
    ) -> int:
        """Code point offset of ``(line, col)``.

        A column past the line's end is the line's end. A line past the last one raises
        :class:`PositionError`, or with ``clamp=True`` means the end of the document.

        Runtime complexity: ``O(log n + B + min(col, line length))``.
        """
        if line < 0 or col < 0:
            raise PositionError(f"position ({line}, {col}) is negative; lines and columns start at 0")
        if line >= index.line_count:
            if clamp:
                return index.length
            raise PositionError(
                f"line {line} is past the end of the document (it has {index.line_count} "
                f"lines, 0-based: last line is {index.line_count - 1})"
            )
        return self.in_line(index.span_flags(line), read, col)

    def in_line(self, span: tuple[int, int, int], read: Reader, col: int) -> int:
        """Code point offset of column ``col`` of the line of ``span`` (what
        ``LineIndex.span_flags`` gives): read only when the line's flags say that the unit
        counts its characters otherwise than code points.

        Runtime complexity: ``O(1)``, or ``O(min(col, line length))`` when read.
        """
        start, content_end, flags = span
        # every unit covers at most one code point, so `col` code points suffice to read
        end = min(content_end, start + col)
        if not flags & self.read_on:  # a column is a code point on this line
            return end
        return start + prefix_cps(read(start, end), col, self.unit)

    def to_position(self, index: LineIndex, read: Reader, cp_offset: int) -> LineCol:
        """LSP position of code point offset ``cp_offset``.

        An offset inside a ``\\r\\n`` terminator maps to the end of that line's content.

        Runtime complexity: ``O(log n + B + column)``.
        """
        line = index.line_of(cp_offset)
        start, content_end, flags = index.span_flags(line)
        cp = min(cp_offset, content_end)
        if not flags & self.read_on:
            return LineCol(line, cp - start)
        return LineCol(line, units_len(read(start, cp), self.unit))
