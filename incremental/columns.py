"""Columns: a place in a line counted in UTF-16 or UTF-8 units, as a code point offset.

LSP clients count a line's characters in UTF-16 code units (the default), UTF-8 bytes or
UTF-32 code points; the core counts code points. A language server knows where its lines
start (its line index) but not their text: :class:`Spot` is what it knows of a place (the
line's start and content end, the column, whether the line holds characters the unit counts
otherwise than code points), and :func:`spot_cp` turns it into a code point offset, reading
only the line prefix the column covers, and only on such a line. ``Document.edit_at`` does
this on the document's own text, so that a keystroke is converted and applied in one call
into the core (issue 36).

Lone surrogates (JSON ``"\\ud800"`` decodes to one) count as one UTF-16 unit and three
UTF-8 bytes (the core tokenizes them as U+FFFD, which is also three bytes). A column that
falls inside a character (half a surrogate pair, a UTF-8 continuation byte) rounds down to
the start of that character; a column past the end of the line means the end of the line,
as the LSP specification requires.
"""

from __future__ import annotations

from typing import Callable, Literal, NamedTuple

__all__ = ["Unit", "UNITS", "Spot", "units_len", "prefix_cps", "spot_cp"]

Unit = Literal["utf-8", "utf-16", "utf-32"]
UNITS: tuple[Unit, ...] = ("utf-16", "utf-8", "utf-32")


class Spot(NamedTuple):
    """A place as a line index knows it: column ``col`` (in the unit) of the line whose
    content runs from ``line_start`` to ``content_end`` (code points); ``read``: whether the
    unit counts that line's characters otherwise than code points (then its text is read)."""

    line_start: int
    content_end: int
    col: int
    read: bool


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


def spot_cp(spot: Spot, read: Callable[[int, int], str], unit: Unit) -> int:
    """Code point offset of ``spot``; ``read(start, end)`` gives the text of a range.

    >>> text = "héllo\\n😀x"
    >>> spot_cp(Spot(6, 8, 2, True), lambda a, b: text[a:b], "utf-16")
    7
    >>> spot_cp(Spot(0, 5, 9, False), lambda a, b: text[a:b], "utf-16")
    5

    Runtime complexity: ``O(1)``, or ``O(min(col, line length))`` when read.
    """
    start = spot.line_start
    # every unit covers at most one code point, so `col` code points suffice to read
    end = min(spot.content_end, start + spot.col)
    if not spot.read:  # a column is a code point on this line
        return end
    return start + prefix_cps(read(start, end), spot.col, unit)
