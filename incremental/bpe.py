"""Byte-level BPE with tiktoken's rank semantics.

Two implementations of the same function ``T(piece)``: repeatedly merge the adjacent pair of
parts whose concatenation has the lowest rank in the vocabulary (leftmost on ties) until no
adjacent pair forms a token; the ids are the ranks of the final parts.

* :func:`bpe_encode` — the priority queue + linked list of *Byte Pair Encoding and Data
  Structures* (``../shared/papers/003``, section "A faster implementation"): symbols live in
  arrays indexed by their start byte (``ends[i]`` is the end of the symbol starting at ``i``,
  ``prevs[i]`` its left neighbour), candidate pairs sit in a binary heap keyed by
  ``(rank, start)``; stale heap entries are detected lazily by re-reading the pair's current
  rank. ``O(n log n)`` per piece instead of ``O(n^2)``.
* :func:`bpe_encode_naive` — the obviously correct ``O(n^2)`` loop (as in tiktoken's
  ``_educational.py`` and minbpe), kept as the reference for tests.

Both are also the SentencePiece ("correct") semantics of Definition 3 of *Formalizing BPE
Tokenization* (Berglund & van der Merwe) for the dictionary whose rules are all splits
``u ⋄ v`` of vocabulary tokens ``uv``, prioritised by ``rank(uv)``.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Mapping

__all__ = ["bpe_encode", "bpe_encode_naive", "bpe_split"]


def bpe_split(piece: bytes, ranks: Mapping[bytes, int]) -> list[tuple[int, int]]:
    """Byte spans ``(start, end)`` of the BPE parts of ``piece`` (priority queue version).

    >>> bpe_split(b"aaa", {b"a": 0, b"aa": 1})
    [(0, 2), (2, 3)]

    Runtime complexity: ``O(n log n)`` for ``n = len(piece)``.
    """
    n = len(piece)
    if n <= 1:
        return [(0, n)] if n else []
    rget = ranks.get
    # ends[i]: end byte of the symbol that starts at i (-1 once absorbed by its left neighbour)
    ends = list(range(1, n + 1))
    prevs = list(range(-1, n - 1))
    heap = []
    for i in range(n - 1):
        r = rget(piece[i : i + 2])
        if r is not None:
            heap.append((r, i))
    heapify(heap)
    while heap:
        rank, i = heappop(heap)
        j = ends[i]
        if j < 0 or j >= n:
            continue  # symbol i was absorbed, or it is the last symbol now
        e = ends[j]
        # subtle: a heap entry is stale when either symbol changed since it was pushed; the
        # pair's bytes then differ, and distinct tokens have distinct ranks, so re-reading the
        # rank of the *current* pair detects staleness exactly.
        if rget(piece[i:e]) != rank:
            continue
        ends[i] = e
        ends[j] = -1
        if e < n:
            prevs[e] = i
            r = rget(piece[i : ends[e]])
            if r is not None:
                heappush(heap, (r, i))
        p = prevs[i]
        if p >= 0:
            r = rget(piece[p:e])
            if r is not None:
                heappush(heap, (r, p))
    out = []
    i = 0
    while i < n:
        e = ends[i]
        out.append((i, e))
        i = e
    return out


def bpe_encode(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """Token ids of one pre-token (priority queue + linked list; see module docstring).

    >>> ranks = {b"a": 0, b"b": 1, b"ab": 2, b"aba": 3}
    >>> bpe_encode(b"ababa", ranks)
    [2, 3]

    Runtime complexity: ``O(n log n)`` for ``n = len(piece)``; ``O(1)`` dictionary hit when the
    whole piece is a token.
    """
    r = ranks.get(piece)
    if r is not None:
        return [r]
    return [ranks[piece[s:e]] for s, e in bpe_split(piece, ranks)]


def bpe_encode_naive(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """Reference BPE: scan all pairs, merge the lowest-ranked (leftmost on ties), repeat.

    >>> bpe_encode_naive(b"ababa", {b"a": 0, b"b": 1, b"ab": 2, b"aba": 3})
    [2, 3]

    Runtime complexity: ``O(n^2)``.
    """
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best = None
        best_i = -1
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best):
                best, best_i = r, i
        if best is None:
            break
        parts[best_i : best_i + 2] = [parts[best_i] + parts[best_i + 1]]
    return [ranks[p] for p in parts]
