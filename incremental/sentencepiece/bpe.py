"""The BPE of SentencePiece models: Definition 3 of *Formalizing BPE Tokenization* (Berglund &
van der Merwe) with SentencePiece's tie-breaking, by the priority queue over a linked list of
symbols of *Byte Pair Encoding and Data Structures* (``shared/papers/003``).

Start from single characters and repeatedly merge the adjacent pair whose concatenation is the
vocabulary piece with the *highest score*, the leftmost such pair on ties (SentencePiece's
``bpe::Model::Encode``). :func:`._reference.sp_bpe_naive` is the ``O(n^2)`` reference the tests
compare with.
"""

from __future__ import annotations

import heapq
from typing import Mapping, Sequence

from ..symbols import symbol_spans, unit_symbols

__all__ = ["sp_bpe"]


def sp_bpe(
    s: str,
    piece_ids: Mapping[str, int],
    neg_scores: Sequence[float],
    unused: frozenset[int] = frozenset(),
) -> list[tuple[int, int]]:
    """Code-point spans ``(start, end)`` of the final BPE symbols of ``s`` (priority queue).

    Definition 3 of *Formalizing BPE Tokenization*, with SentencePiece's order: highest score
    first (``neg_scores[id]`` is minus the score), leftmost on ties. The symbols form a linked
    list stored in arrays indexed by start position (``end[i]`` is the end of the symbol that
    starts at ``i``, ``-1`` once it is absorbed; ``prev[i]`` its left neighbour); candidate
    pairs sit in a binary heap keyed ``(-score, left)`` and stale entries are dropped when
    popped, as in *Byte Pair Encoding and Data Structures* and ``bpe_model.cc``. A final symbol
    whose piece is UNUSED is re-split into the two symbols last seen forming it.

    >>> ids = {"a": 0, "b": 1, "ab": 2, "ba": 3}
    >>> sp_bpe("aba", ids, [0.0, 0.0, -2.0, -1.0])   # "ab" scores 2, "ba" 1: merge "ab" first
    [(0, 2), (2, 3)]

    Runtime complexity: ``O(n log n)`` for ``n = len(s)``.
    """
    n = len(s)
    if n <= 1:
        return [(0, n)] if n else []
    get = piece_ids.get
    end, prev = unit_symbols(n)
    heap: list[tuple[float, int, int, int]] = []
    rev: dict[str, tuple[str, str]] = {}
    push = heapq.heappush

    def add(left: int, right: int) -> None:
        e = end[right]
        pid = get(s[left:e])
        if pid is None:
            return
        push(heap, (neg_scores[pid], left, right, e))
        if unused and pid in unused:
            # subtle: SentencePiece keeps the *last* pushed split of an unused piece
            rev[s[left:e]] = (s[left:right], s[right:e])

    for i in range(n - 1):
        pid = get(s[i : i + 2])
        if pid is not None:
            heap.append((neg_scores[pid], i, i + 1, i + 2))
            if unused and pid in unused:
                rev[s[i : i + 2]] = (s[i], s[i + 1])
    heapq.heapify(heap)
    pop = heapq.heappop
    while heap:
        _, left, right, e = pop(heap)
        # stale when left was absorbed or has absorbed right, or right has grown since
        if end[left] != right or end[right] != e:
            continue
        end[left] = e
        end[right] = -1
        if e < n:
            prev[e] = left
            add(left, e)
        p = prev[left]
        if p >= 0:
            add(p, left)
    spans = symbol_spans(end, n)
    if not rev:
        return spans
    out: list[tuple[int, int]] = []
    for i, e in spans:
        _resegment(s, i, e, rev, piece_ids, unused, out)
    return out


def _resegment(
    s: str,
    i: int,
    e: int,
    rev: dict[str, tuple[str, str]],
    piece_ids: Mapping[str, int],
    unused: frozenset[int],
    out: list[tuple[int, int]],
) -> None:
    w = s[i:e]
    pid = piece_ids.get(w)
    split = rev.get(w) if pid is not None and pid in unused else None
    if split is None:
        out.append((i, e))
        return
    m = i + len(split[0])
    _resegment(s, i, m, rev, piece_ids, unused, out)
    _resegment(s, m, e, rev, piece_ids, unused, out)
