"""Slow, obviously-correct SentencePiece references, for tests only (as tiktoken keeps
``_educational.py``): nothing on the encoding path imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

from ..text import sanitize

if TYPE_CHECKING:
    from .encoding import SentencePieceEncoding

__all__ = ["sp_bpe_naive", "encode_reference"]


def sp_bpe_naive(s: str, piece_ids: Mapping[str, int], neg_scores: Sequence[float]) -> list[str]:
    """Reference for :func:`.bpe.sp_bpe`: scan all pairs, merge the best, repeat (no UNUSED logic).

    >>> sp_bpe_naive("aba", {"a": 0, "b": 1, "ab": 2, "ba": 3}, [0.0, 0.0, -2.0, -1.0])
    ['ab', 'a']

    Runtime complexity: ``O(n^2)``.
    """
    parts = list(s)
    while len(parts) > 1:
        best: tuple[float, int] | None = None
        for i in range(len(parts) - 1):
            pid = piece_ids.get(parts[i] + parts[i + 1])
            if pid is not None and (best is None or neg_scores[pid] < best[0]):
                best = (neg_scores[pid], i)
        if best is None:
            break
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts


def encode_reference(enc: SentencePieceEncoding, text: str) -> list[int]:
    """Slow reference for ``enc.encode(text)``: BPE of the *whole* normalized text by
    :func:`sp_bpe_naive`; no splitting, no cache, no UNUSED resegmentation: the
    obviously-correct Definition 3.

    Runtime complexity: ``O(n^2)``.
    """
    norm = enc.normalize(sanitize(text))
    out: list[int] = []
    prev_unk = False
    for w in sp_bpe_naive(norm, enc._piece_ids, enc._neg_scores):
        pid = enc.piece_to_id(w)
        if pid == enc.unk_id and enc.byte_fallback:
            out.extend(enc._byte_ids[b] for b in w.encode("utf-8"))
        elif not (pid == enc.unk_id and prev_unk):
            out.append(pid)
        prev_unk = pid == enc.unk_id
    return out
