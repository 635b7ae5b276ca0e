"""Slow, obviously-correct SentencePiece references, for tests only (as tiktoken keeps
``_educational.py``): nothing on the encoding path imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from ..text import sanitize

if TYPE_CHECKING:
    from .encoding import SentencePieceEncoding

__all__ = ["sp_bpe_naive", "encode_reference", "prefix_match_naive"]


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


def prefix_match_naive(s: str, user_defined: Iterable[str]) -> list[tuple[str, bool]]:
    """Reference for SentencePiece's ``PrefixMatcher`` scan (``bpe::Model::Encode``'s initial
    symbols): at each position the longest user-defined piece starting there, frozen, else one
    character; then on after it.

    >>> prefix_match_naive("a[R][REF]", ["[R", "[REF]"])
    [('a', False), ('[R', True), (']', False), ('[REF]', True)]

    Runtime complexity: ``O(n * u)`` for ``u`` user-defined pieces.
    """
    ud = list(user_defined)
    out: list[tuple[str, bool]] = []
    i = 0
    while i < len(s):
        best = max((p for p in ud if s.startswith(p, i)), key=len, default="")
        w = best or s[i]
        out.append((w, bool(best)))
        i += len(w)
    return out


def encode_reference(enc: SentencePieceEncoding, text: str) -> list[int]:
    """Slow reference for ``enc.encode(text)``: the user-defined pieces of the *whole*
    normalized text by :func:`prefix_match_naive`, then BPE of each run of characters between
    them by :func:`sp_bpe_naive`; no splitting, no cache, no UNUSED resegmentation: the
    obviously-correct Definition 3.

    Runtime complexity: ``O(n^2)``.
    """
    norm = enc.normalize(sanitize(text))
    words: list[str] = []
    run = ""
    for w, frozen in prefix_match_naive(norm, enc.user_defined):
        if frozen:
            words += sp_bpe_naive(run, enc._piece_ids, enc._neg_scores) if run else []
            words.append(w)
            run = ""
        else:
            run += w
    words += sp_bpe_naive(run, enc._piece_ids, enc._neg_scores) if run else []
    out: list[int] = []
    prev_unk = False
    for w in words:
        pid = enc.piece_to_id(w)
        if pid == enc.unk_id and enc.byte_fallback:
            out.extend(enc._byte_ids[b] for b in w.encode("utf-8"))
        elif not (pid == enc.unk_id and prev_unk):
            out.append(pid)
        prev_unk = pid == enc.unk_id
    return out
