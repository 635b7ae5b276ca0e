"""The changes of one batch that the core has not been given yet, as one replacement.

A ``didChange`` may hold many changes (20,000 inserts at one place in one message), and the
server merges the ``didChange`` messages of one document that it read while earlier work ran
(``pending.py``). Given to the core one by one, each change re-tokenizes its own window: a
keystroke on a digit line costs ~80 ms under ``o200k_base`` (every later three-digit group
moves), so twenty keys cost twenty times that. :class:`EditRegion` instead gathers the changes
that fall near each other into one span of the text as it was before the batch, and the
replacement of that span, so that the core re-tokenizes the union of their windows once
(``OpenDocument.apply``). A change far from the region (more than :data:`NEAR` code points
away) closes it first: gluing it in would re-tokenize all the text between.

Meanwhile the region answers reads of the current text (the position codec reads lines to
convert a column): left of the region and right of it from the text before the batch, inside
it from the region's own text.

The region's text is a gap buffer (``left`` + ``right``, the gap at the last change):
typing at one cursor appends to ``left``, so ``k`` keystrokes cost ``O(k)`` string work
instead of ``O(k * region)``.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["EditRegion", "NEAR"]

#: a change more than this many code points from the region closes it (see the docstring)
NEAR = 1 << 10

#: ``read(start_cp, end_cp) -> str`` of the text before the batch
Reader = Callable[[int, int], str]


class EditRegion:
    """Current text = ``base[:lo] + left + right + base[lo + n_base:]``, where ``base`` is the
    text before the batch (read through ``read_base``) and ``left + right`` replaces its
    ``n_base`` code points from ``lo``.

    >>> base = "hello world"
    >>> r = EditRegion(lambda a, b: base[a:b], 6, 6, "big ")
    >>> r.replace(10, 10, "s")  # in current coordinates: "hello big |world"
    >>> r.read(0, 16), r.replacement()
    ('hello big sworld', (6, 6, 'big s'))
    >>> r.replace(14, 15, "")  # deletes the "l" of "sworld", base text taken in
    >>> r.read(0, 15), r.replacement()
    ('hello big sword', (6, 10, 'big swor'))

    Runtime complexity: :meth:`replace` ``O(len(text) + distance the gap moves + code points
    taken in from the base)``; :meth:`read` ``O(end - start)`` plus the base's reads.
    """

    __slots__ = ("read_base", "lo", "n_base", "left", "right")

    def __init__(self, read_base: Reader, start: int, end: int, text: str) -> None:
        self.read_base = read_base
        self.lo = start
        self.n_base = end - start
        self.left = text
        self.right = ""

    def end(self) -> int:
        """The region's end in current coordinates."""
        return self.lo + len(self.left) + len(self.right)

    def near(self, start: int, end: int) -> bool:
        """Whether a change of current span ``[start, end)`` joins this region."""
        return start <= self.end() + NEAR and end >= self.lo - NEAR

    def replace(self, start: int, end: int, text: str) -> None:
        """Apply ``current[start:end] = text`` (a span that is :meth:`near`)."""
        if start < self.lo:  # take in the base text between
            self.left = self.read_base(start, self.lo) + self.left
            self.n_base += self.lo - start
            self.lo = start
        hi = self.end()
        if end > hi:
            base_hi = self.lo + self.n_base
            self.right += self.read_base(base_hi, base_hi + end - hi)
            self.n_base += end - hi
        k = start - self.lo  # move the gap to the change's start
        left = self.left
        if k < len(left):
            self.right = left[k:] + self.right
            self.left = left[:k]
        elif k > len(left):
            m = k - len(left)
            self.left = left + self.right[:m]
            self.right = self.right[m:]
        if end > start:
            self.right = self.right[end - start:]
        if text:
            self.left += text

    def read(self, start: int, end: int) -> str:
        """``current[start:end]``."""
        lo, hi = self.lo, self.end()
        parts = []
        if start < lo:
            parts.append(self.read_base(start, min(end, lo)))
        s, e = max(start, lo) - lo, min(end, hi) - lo
        if s < e:
            n = len(self.left)
            if s < n:
                parts.append(self.left[s:min(e, n)])
            if e > n:
                parts.append(self.right[max(s - n, 0):e - n])
        if end > hi:
            shift = self.lo + self.n_base - hi  # current -> base coordinates right of it
            parts.append(self.read_base(max(start, hi) + shift, end + shift))
        return parts[0] if len(parts) == 1 else "".join(parts)

    def replacement(self) -> tuple[int, int, str]:
        """``(start, end, text)``: the batch as one replacement of the base text."""
        return self.lo, self.lo + self.n_base, self.left + self.right
