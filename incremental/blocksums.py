"""Sizes with their sums over blocks, blocks of blocks, and so on: prefix sums and search by sum
in ``O(log C)`` for the chunk index of :mod:`.tokenseq`.

A list of per-chunk sizes that changes by single increments (an edit inside a chunk) and, more
rarely, by splices (chunks split or merged), asked two questions: the sum of the first ``i``
sizes, and the first ``i`` whose prefix sum passes ``x``. :class:`BlockSums` answers both by
walking a tree of sums of fan-out ``BLOCK`` stored level by level in plain lists, so each step
is one C loop (``sum``, ``accumulate`` + ``bisect``) over a slice of at most ``BLOCK`` items.
``docs/algorithms.md`` section 4 has the alternatives measured against it.

>>> s = BlockSums([3, 0, 2, 5])
>>> s.prefix(3), s.find(4), s.find(10)
(5, (2, 3), (4, 10))
>>> s.add(1, 4)
>>> s.prefix(2), s.find(4)
(7, (1, 3))
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import Sequence

__all__ = ["BlockSums"]


class BlockSums:
    """Per-chunk sizes with sums over blocks of chunks, blocks of blocks, and so on: a tree of
    sums with fan-out ``BLOCK`` whose nodes are stored level by level in plain lists.

    ``sizes[i]`` is chunk ``i``'s size; ``levels[0][b]`` is the sum of ``sizes`` over block
    ``b`` (``BLOCK`` chunks), ``levels[k][b]`` the sum of ``levels[k - 1]`` over its block
    ``b``, up to a top level of at most ``BLOCK`` entries: ``log_BLOCK(C)`` levels (2 for the
    ~10,000 chunks of a 10 MB document, 4 up to 32 M chunks). Nothing is cached: an update
    adds its delta at each level, and a query walks down the levels, each time summing or
    accumulating one list slice of at most ``BLOCK`` items in C (``sum``, ``accumulate`` +
    ``bisect``). An update and a query are ``O(log C)``: ``O(log_BLOCK C)`` Python steps and
    ``O(BLOCK)`` C steps per level; a splice (``sizes`` changed in place, then
    :meth:`reblock`) is ``O(C)`` in C. The alternatives measured against it are in
    ``docs/algorithms.md`` section 4.
    """

    __slots__ = ("sizes", "levels")

    BLOCK = 32

    def __init__(self, values: Sequence[int]) -> None:
        # a list, not an array('q'): summing a slice of it is faster (docs/algorithms.md §4)
        self.sizes = list(values)
        self.levels: list[list[int]] = []
        self.reblock()

    def splice(self, a: int, b: int, values: Sequence[int]) -> None:
        """``sizes[a:b] = values``, then the sums from block ``a // BLOCK`` on. ``O(C)`` in C."""
        self.sizes[a:b] = values
        self.reblock(a // self.BLOCK)

    def reblock(self, first: int = 0) -> None:
        """Recompute the sums of blocks ``first, first + 1, ...`` of the first level, and the
        sums above them, after ``sizes`` changed there; add or drop levels so that the top
        one has at most ``BLOCK`` entries (and at least one). ``O(C)`` in C."""
        B = self.BLOCK
        levels = self.levels
        src = self.sizes
        k = 0
        while True:
            if k == len(levels):
                levels.append([])
                first = 0
            lv = levels[k]
            first = min(first, len(lv))
            lv[first:] = [sum(src[i : i + B]) for i in range(first * B, len(src), B)]
            if not lv:
                lv.append(0)
            if len(lv) <= B:
                del levels[k + 1 :]
                return
            src = lv
            first //= B
            k += 1

    def add(self, i: int, delta: int) -> None:
        """``sizes[i] += delta`` and the sums above it. ``O(log C)``."""
        self.sizes[i] += delta
        B = self.BLOCK
        for lv in self.levels:
            i //= B
            lv[i] += delta

    def prefix(self, i: int) -> int:
        """Sum of sizes[0:i]."""
        B = self.BLOCK
        lo = i - i % B
        v = sum(self.sizes[lo:i]) if i > lo else 0
        levels = self.levels
        top = len(levels) - 1
        for k, lv in enumerate(levels):
            i //= B
            if k == top:
                # the top level is one block (at most BLOCK entries), i may equal its length
                return v + sum(lv[:i]) if i else v
            lo = i - i % B
            if i > lo:
                v += sum(lv[lo:i])
        return v  # pragma: no cover (there is always a top level)

    def find(self, x: int) -> tuple[int, int]:
        """Smallest ``i`` with ``prefix(i + 1) > x`` (``x >= 0``), and ``prefix(i)``;
        ``(n, total)`` if none."""
        levels = self.levels
        top = levels[-1]
        acc = list(accumulate(top, initial=0))
        j = bisect_right(acc, x) - 1
        if j >= len(top):
            return len(self.sizes), acc[-1]
        base = acc[j]
        B = self.BLOCK
        # the sums below the block found exceed x - base, so each bisect lands inside its slice
        for k in range(len(levels) - 2, -2, -1):
            lv = levels[k] if k >= 0 else self.sizes
            lo = j * B
            acc = list(accumulate(lv[lo : lo + B], initial=base))
            j = bisect_right(acc, x) - 1
            base = acc[j]
            j += lo
        return j, base
