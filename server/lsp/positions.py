"""The position codec: LSP ``(line, character)`` in the negotiated unit <-> code points.

LSP clients count a line's characters in UTF-16 code units (the default), UTF-8 bytes or
UTF-32 code points, whichever ``positionEncoding`` the server picked from the client's
offer. The core counts code points. This module converts, reading only the part of one
line that a conversion needs (the line's text comes from ``Document.slice``), so a
conversion costs ``O(log n)`` to find the line plus the length of the line prefix. The unit
arithmetic is the core's (``livetok.incremental.columns``), which a keystroke's edit uses
on the core's side (``Document.edit_at``: :meth:`PositionCodec.spot` says what the line
index knows of the place); the rules for lone surrogates and columns inside a character are
stated there.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from livetok.incremental.columns import UNITS, Spot, Unit, prefix_cps, spot_cp, units_len
from livetok.server.lsp.lineindex import ASTRAL, WIDE, LineIndex

__all__ = [
    "PositionCodec",
    "PositionError",
    "Unit",
    "UNITS",
    "units_len",
    "prefix_cps",
]

#: ``read(start_cp, end_cp) -> str``: text of a range (``Document.slice``)
Reader = Callable[[int, int], str]


class PositionError(ValueError):
    """A position that names no place in the document (line past the end, negative)."""


class LineCol(NamedTuple):
    """An LSP position: 0-based line and column in the codec's unit."""

    line: int
    col: int


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

    def spot(self, span: tuple[int, int, int], col: int) -> Spot:
        """Column ``col`` of the line of ``span`` (what ``LineIndex.span_flags`` gives) as the
        core's :class:`~livetok.incremental.columns.Spot`: read only when the line's flags say
        that the unit counts its characters otherwise than code points.

        Runtime complexity: ``O(1)``.
        """
        start, content_end, flags = span
        return Spot(start, content_end, col, bool(flags & self.read_on))

    def in_line(self, span: tuple[int, int, int], read: Reader, col: int) -> int:
        """Code point offset of column ``col`` of the line of ``span`` (:meth:`spot`).

        Runtime complexity: ``O(1)``, or ``O(min(col, line length))`` when read.
        """
        return spot_cp(self.spot(span, col), read, self.unit)

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
