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

  Pieces of at most ``_SCAN_MAX`` bytes (nearly all pieces of real text: 2-12 bytes) skip the
  heap: a list of pair ranks is scanned for its minimum by ``min`` and ``list.index`` (both in
  C) and patched around each merge, as tiktoken's own ``_byte_pair_merge`` does. That is
  ``O(n^2)`` but with a C inner loop: ~17 % faster than the heap on the distinct pieces of
  real text, slower from ~64 bytes on (measured). A constant-factor choice only: ``n`` is
  capped, so the bound stays ``O(n log n)`` and long pieces always take the heap.
* :func:`bpe_encode_naive` — the obviously correct ``O(n^2)`` loop (as in tiktoken's
  ``_educational.py`` and minbpe), kept as the reference for tests.

Both are also the SentencePiece ("correct") semantics of Definition 3 of *Formalizing BPE
Tokenization* (Berglund & van der Merwe) for the dictionary whose rules are all splits
``u ⋄ v`` of vocabulary tokens ``uv``, prioritised by ``rank(uv)``.
"""

from __future__ import annotations

import sys
from heapq import heapify, heappop, heappush
from typing import Mapping

__all__ = ["bpe_encode", "bpe_encode_naive", "bpe_split"]

#: pieces up to this many bytes use the C-speed scan of :func:`_scan_bounds`, longer ones the
#: heap (measured on the distinct pieces of 10 MB of real text and on long repetitive pieces:
#: the scan wins up to ~48 bytes, ties at 64, loses 1.4x at 96 and 2x at 256)
_SCAN_MAX = 48
#: the rank of a pair that is not a token: larger than every rank
_NO_RANK = sys.maxsize


def _scan_bounds(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """Part boundaries ``[0, ..., len(piece)]`` of the BPE of a short piece, by rank scans.

    ``pair[k]`` is the rank of parts ``k`` and ``k + 1`` together (``_NO_RANK`` if not a
    token). Each step merges the pair of lowest rank, the *leftmost* on ties as
    ``list.index`` returns the first minimum (tiktoken's tie rule; equal ranks mean equal
    bytes, as in ``"aaaa"``), then re-reads the two pairs that now involve the merged part.

    Runtime complexity: ``O(n^2)`` for ``n = len(piece)`` (``O(n)`` C work per merge).
    """
    rget = ranks.get
    bounds = list(range(len(piece) + 1))
    pair = [rget(piece[k : k + 2], _NO_RANK) for k in range(len(piece) - 1)]
    while pair:
        best = min(pair)
        if best == _NO_RANK:
            break
        k = pair.index(best)
        # parts k and k+1 become one: drop their shared boundary and their pair
        del bounds[k + 1]
        del pair[k]
        if k < len(pair):
            pair[k] = rget(piece[bounds[k] : bounds[k + 2]], _NO_RANK)
        if k:
            pair[k - 1] = rget(piece[bounds[k - 1] : bounds[k + 1]], _NO_RANK)
    return bounds


def bpe_split(piece: bytes, ranks: Mapping[bytes, int]) -> list[tuple[int, int]]:
    """Byte spans ``(start, end)`` of the BPE parts of ``piece`` (priority queue version).

    >>> bpe_split(b"aaa", {b"a": 0, b"aa": 1})
    [(0, 2), (2, 3)]

    Runtime complexity: ``O(n log n)`` for ``n = len(piece)``.
    """
    n = len(piece)
    if n <= _SCAN_MAX:
        bounds = _scan_bounds(piece, ranks)
        return list(zip(bounds, bounds[1:]))
    return _heap_split(piece, ranks)


def _heap_split(piece: bytes, ranks: Mapping[bytes, int]) -> list[tuple[int, int]]:
    """:func:`bpe_split` by the priority queue + linked list of the paper (any length).

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
    """Token ids of one pre-token (priority queue + linked list, or a rank scan for short
    pieces; see module docstring).

    >>> ranks = {b"a": 0, b"b": 1, b"ab": 2, b"aba": 3}
    >>> bpe_encode(b"ababa", ranks)
    [2, 3]

    Runtime complexity: ``O(n log n)`` for ``n = len(piece)``; ``O(1)`` dictionary hit when the
    whole piece is a token.
    """
    r = ranks.get(piece)
    if r is not None:
        return [r]
    if len(piece) <= _SCAN_MAX:
        bounds = _scan_bounds(piece, ranks)
        return [ranks[piece[s:e]] for s, e in zip(bounds, bounds[1:])]
    return [ranks[piece[s:e]] for s, e in _heap_split(piece, ranks)]


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
