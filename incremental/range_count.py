"""``Document.count_range``: the exact count of a range of a document, re-encoding only its ends.

The count of ``text[start:end]`` alone is not the sum of the document's tokens there: the range
may cut pieces (and the pieces at its ends may split differently in the substring). So the
substring is split from its start until a boundary is also a document boundary, the middle is
read from the token sequence, and the tail is split again from a document piece whose
predecessors did not read past ``end`` (the restart rule of ``docs/algorithms.md`` section 2).
A piece of the substring that lies inside one long document piece is counted by Algorithm 1
(:func:`.glue.glue`), one side per cut (section 3).
"""

from __future__ import annotations

from typing import Iterator, Sequence

from .glue import GLUE_MIN_CP, glue
from .piece_encoding import ByteLevelEncoding, PieceEncoding
from .tokenseq import TokenSeq

__all__ = ["RangeCounter"]

#: substrings up to this long are encoded whole
_SHORT = 2048
#: first window (code points) of a substring's head that the left split reads
_COUNT_WINDOW = 4096


class RangeCounter:
    """Counts ranges of one document's text (its token sequence and encoding)."""

    __slots__ = ("_seq", "_enc", "_bl")

    def __init__(self, seq: TokenSeq, enc: PieceEncoding, bl: ByteLevelEncoding | None) -> None:
        self._seq = seq
        self._enc = enc
        #: the byte-level encoding when pieces are glued over raw bytes, else None
        self._bl = bl if enc.supports_glue else None

    def count(self, start: int, end: int) -> int:
        """Exact ``len(encoding.encode(text[start:end]))`` for ``0 <= start < end <= n``.

        Runtime complexity: ``O(log n + (end - start))`` for the slice, plus the pieces at the
        two ends.
        """
        seq = self._seq
        sub = seq.slice_text(start, end)
        if len(sub) <= _SHORT:
            return len(self._enc.encode(sub))
        head = self._head(sub, start)
        if head is None:
            return self._count_split(sub, start)
        count, q1, q1_tok = head
        tail = self._tail_start(sub, start, end, q1, q1_tok)
        if tail is None:
            return self._count_split(sub, start)
        k_tok, k_cp = tail
        count += seq.counted_before(k_tok) - seq.counted_before(q1_tok)
        # the tail alone: a piece reads nothing left of its start, and splitting only the tail
        # keeps the split's up-front work (non-ASCII class codes) to the tail
        rest = sub[k_cp - start :]
        for ps, pe in self._enc.split(rest, 0):
            count += self._count_sub(k_cp + ps, k_cp + pe, rest[ps:pe])
        return count

    def _head(self, sub: str, start: int) -> tuple[int, int, int] | None:
        """Split ``sub`` from its start until a piece ends on a document piece start ``q1``:
        ``(tokens before q1, q1, its token)``, or None when no such boundary is found.

        The split runs over a window of the substring's head, grown while a piece's decision
        reads past it (splitting a long substring whole only to take its first pieces cost
        ``O(n)`` up front for non-ASCII text).
        """
        enc = self._enc
        seq = self._seq
        n = len(sub)
        w = min(n, _COUNT_WINDOW)
        while True:
            count = 0
            grow = w < n
            for ps, pe in enc.split(sub[:w] if w < n else sub, 0):
                h = enc.horizon(sub, ps, n)
                if h > n:
                    return None  # this piece read the substring's end: split it whole
                if h > w:
                    break  # decided by text past the window: grow it (w < n here)
                count += self._count_sub(start + ps, start + pe, sub[ps:pe])
                t = seq.piece_start_at(start + pe)
                if t is not None:
                    return count, start + pe, t
            if not grow:
                return None
            w = min(n, 4 * w)

    def _tail_start(
        self, sub: str, start: int, end: int, q1: int, q1_tok: int
    ) -> tuple[int, int] | None:
        """A document piece ``(token, cp)`` at or after ``q1`` from which the substring's tail
        splits as the document does: no piece before it read past ``end``."""
        seq = self._seq
        n = len(sub)
        k_tok = seq.prev_piece_start(seq.locate(end - 1)[0])
        k_cp = seq.token_start_cp(k_tok)
        while k_tok > q1_tok:
            p_tok = seq.prev_piece_start(k_tok - 1)
            p_cp = seq.token_start_cp(p_tok)
            if p_cp < q1 or self._enc.horizon(sub, p_cp - start, n) <= n:
                break
            k_tok, k_cp = p_tok, p_cp
        if k_tok < q1_tok or k_cp < q1:
            return None
        return k_tok, k_cp

    def _count_piece(self, piece: str, at_start: bool) -> int:
        return len(self._enc.encode_piece(piece, at_text_start=at_start))

    def _count_split(self, sub: str, start: int) -> int:
        """``len(encode(sub))`` for ``sub = text[start:start + len(sub)]``: piece by piece with
        :meth:`_count_sub` for byte-level encodings (whose pieces do not depend on where the
        text starts), else one ``encode``."""
        if self._bl is None:
            return len(self._enc.encode(sub))
        spans = self._enc.split(sub, 0)
        return sum(self._count_sub(start + ps, start + pe, sub[ps:pe]) for ps, pe in spans)

    def _count_sub(self, s: int, e: int, piece: str) -> int:
        """Tokens of ``piece == text[s:e]``, a piece of a substring's split, re-encoding only
        its ends when it lies inside one long document piece ``P = [A, B)``.

        The old tokens of ``P`` between two of their boundaries are the tokenization of that
        text (Remark 3), so each cut is Algorithm 1 with one side:

        1. cut at ``e < B``: windows ``[u_i, e)`` from old tokens ``u_i`` at or after ``s``;
           then the tokens of ``text[A:e]`` are the old ones before ``u_i`` and the window's;
        2. cut at ``s > A``: windows ``[s, u'_j)`` up to old tokens before step 1's window;
           the tokens of ``piece`` are the window's and the old ones after ``u'_j``.

        A side whose candidates run out encodes the whole piece (``i = 1`` / ``j = m``).
        Short pieces, pieces across document pieces and encodings that are not byte-level are
        encoded.

        Runtime complexity: ``O(log n + load + chunks P spans)`` plus the BPE of the windows,
        ``O(w log w)`` for windows of ``w`` bytes (a few tokens on each side for real text).
        """
        bl = self._bl
        if e - s < GLUE_MIN_CP or bl is None:
            return self._count_piece(piece, s == 0)
        seq = self._seq
        ti, ts = seq.locate(s)
        ta = seq.prev_piece_start(ti)
        tb = seq.next_piece_start(ta)
        b_cp = seq.token_start_cp(tb) if tb < seq.total_tokens else seq.total_cp
        if b_cp < e:
            return self._count_piece(piece, s == 0)  # across document pieces
        a_cp = seq.token_start_cp(ta)
        if s == a_cp and e == b_cp:
            return seq.counted_before(tb) - seq.counted_before(ta)  # a whole document piece

        def encode(ws: int, we: int) -> Sequence[int]:
            if ws == s and we == e:  # a whole piece (ignore_merges: maybe one token)
                return bl.encode_piece(piece)
            return bl.encode_bytes_piece(piece[ws - s : we - s].encode("utf-8"))

        none: Iterator[tuple[int, int, int]] = iter(())
        lo = ti if ts == s else ti + 1  # the first token of P at or after s
        hi, tail = tb, 0
        if e < b_cp:  # 1. cut at e
            g = glue(encode, seq.glue_starts(lo, seq.locate(e)[0]), none, s, e)
            assert g is not None  # (no cap: a window reaching s is the whole piece)
            if g.left is None or g.start == s:
                return len(g.tokens)  # the window is the whole piece
            hi, tail = g.left, len(g.tokens)
        if s == a_cp:
            return seq.counted_before(hi) - seq.counted_before(ta) + tail
        g = glue(encode, none, seq.glue_ends(lo, hi), s, e)  # 2. cut at s
        assert g is not None
        if g.right is None:
            return len(g.tokens)
        return len(g.tokens) + seq.counted_before(hi) - seq.counted_before(g.right + 1) + tail
