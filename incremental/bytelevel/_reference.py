"""Slow, obviously correct byte-level BPE, kept beside the fast one as the reference for tests
(as tiktoken keeps ``_educational.py``); nothing on a runtime path imports it."""

from __future__ import annotations

from typing import Mapping

__all__ = ["bpe_encode_naive"]


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
