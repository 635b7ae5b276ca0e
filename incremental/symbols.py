"""The symbol list both priority-queue BPEs merge in (byte-level ranks, SentencePiece scores).

*Byte Pair Encoding and Data Structures* (Kozma & Voderholzer, 2024) keeps the symbols of a
piece as a doubly linked list over positions: ``ends[i]`` is the end of the symbol that starts
at ``i`` (``-1`` once a left neighbour has absorbed it), ``prevs[i]`` the start of its left
neighbour. A merge of the symbols at ``i`` and ``j = ends[i]`` sets ``ends[i] = ends[j]``,
``ends[j] = -1`` and repoints ``prevs`` of the symbol after; the heap of candidate pairs is
the caller's, because the two merge semantics order and invalidate it differently.
"""

from __future__ import annotations


def unit_symbols(n: int) -> tuple[list[int], list[int]]:
    """``(ends, prevs)`` for ``n`` symbols of one unit each (bytes or code points).

    >>> unit_symbols(3)
    ([1, 2, 3], [-1, 0, 1])

    Runtime complexity: ``O(n)``.
    """
    return list(range(1, n + 1)), list(range(-1, n - 1))


def symbol_spans(ends: list[int], n: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of the symbols left in ``ends`` after merging.

    >>> symbol_spans([2, -1, 3], 3)
    [(0, 2), (2, 3)]

    Runtime complexity: ``O(number of symbols)``.
    """
    out = []
    i = 0
    while i < n:
        e = ends[i]
        out.append((i, e))
        i = e
    return out
