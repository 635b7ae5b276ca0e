"""The token sequence of a document: chunked arrays with a blocked index over chunk sums.

A document of 10 MB holds about 2.5 million tokens. Keeping them as Python objects would cost
~100 bytes each, and keeping one flat array would make every edit shift every later offset.
:class:`TokenSeq` keeps the shape of ``sortedcontainers.SortedList`` — a list of small
sublists ("chunks") plus a positional index over them — specialised to a *sequence* (order is
given, not sorted) whose elements carry sizes:

* each :class:`Chunk` holds ``ids`` (``array('I')``), ``cps`` (code points per token,
  ``array('I')``), ``flags`` (``bytearray``) and the chunk's text (``str``);
* sums of the chunks' code point lengths and token counts, kept per block of 32 chunks, per
  block of 32 blocks, and so on up to one top block (:class:`.blocksums.BlockSums`, a tree of
  sums stored level by level), find the chunk that holds a code point offset, or the number
  of tokens before a chunk, in ``O(log C)`` steps, each a C loop over one list slice of at
  most 32 items (two levels for a 10 MB document); an edit inside one chunk updates them in
  ``O(log C)`` (one list increment per level, nothing rebuilt). The index searched by code
  point packs each chunk's code points and tokens into one int (:data:`POS_SHIFT`), so one
  search gives both;
* an edit inside one chunk rewrites that chunk's arrays in place (slice assignment); one that
  ends in the next chunk rewrites the tail of the one and the head of the other in place;
* chunks split above ``2 * load`` tokens and merge below ``load / 4``, and only then are the
  block sums recomputed (``O(C)`` in C, amortised over many edits);
* an edit asks its questions through a :class:`SeqView` of the chunk that holds it, which
  covers only a window of ``2 * SeqView.HALF`` tokens of a large chunk (so that an edit does
  not build code point offsets for all of its chunk's tokens), and the sequence remembers the
  last view's chunk while edits stay in it (typing in one place skips the index search).

Flags per token: :data:`PIECE_START` (first token of a pre-token), :data:`CLEAN` (starts on a
character boundary: byte-level tokens may split a UTF-8 character), :data:`PLACEHOLDER` (holds
the code points of a piece that produced no token, e.g. WordPiece whitespace; not counted).
A piece always starts on a character boundary and a placeholder is always a whole piece, so a
token's flags are one of ``0``, ``CLEAN``, ``PIECE_START | CLEAN`` and
``PIECE_START | CLEAN | PLACEHOLDER`` (checked by :meth:`TokenSeq._check`): a piece start is
found with one or two ``bytearray.find`` calls, and placeholders are counted with one
``count``.

The choice of chunks + block sums over a ``SortedList`` keyed by offset is explained in
``docs/algorithms.md`` (section 4, with the alternatives measured): keys would have to be
shifted on every edit.

One concept: the chunked sequence, read and edited through its index, and its one-chunk view
(:class:`SeqView`) are one structure. The view reads the chunks' arrays and cached sums
(:meth:`Chunk.cum`), the index and the sequence's hint directly, answers each query as the
:class:`TokenSeq` method of the same name does (falling back to it outside its chunk) with the
same piece-start searches (``_find_ps``, ``_rfind_ps``, ``_start_at``), and
:meth:`TokenSeq._check` asserts the invariants of both together. Apart, the sequence's private
state would have to become public and the two halves of every query would sit in two files;
the index's sums, which know nothing of tokens, are :mod:`.blocksums`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from itertools import accumulate, chain, compress
from operator import sub
from typing import Iterator, Sequence

from .blocksums import BlockSums

__all__ = ["TokenSeq", "SeqView", "Chunk", "PIECE_START", "CLEAN", "PLACEHOLDER"]

PIECE_START = 1
CLEAN = 2
PLACEHOLDER = 4

#: the chunk index searched by code point packs each chunk's code points and tokens into one
#: int, ``cp << POS_SHIFT | tokens``. While the total token count stays below
#: ``2**POS_SHIFT`` (4 billion; :meth:`TokenSeq.replace` refuses more before changing
#: anything), packing is linear: a sum of packed values is the packed pair of sums, and
#: packed prefix sums are ordered as their code point parts, so ``find(cp << POS_SHIFT |
#: _POS_MASK)`` returns the chunk holding ``cp`` with the code points *and* tokens before it
#: in one search (``docs/algorithms.md`` section 4). The values stay within a C long (the
#: fast path of ``sum``) below 2**31 code points; above, only slower.
POS_SHIFT = 32
_POS_MASK = (1 << POS_SHIFT) - 1


#: chunks whose cumulative sums are kept at once (all documents together; see Chunk.cum)
CUM_CACHED = 4096
_cum_kept: deque[Chunk] = deque()


class Chunk:
    """A run of consecutive tokens with their text (edited in place by
    :meth:`TokenSeq.replace`: its arrays by slice assignment, its text and counts replaced)."""

    __slots__ = ("ids", "cps", "flags", "text", "ncounted", "has_ps", "_cum")

    def __init__(self, ids: array[int], cps: array[int], flags: bytearray, text: str) -> None:
        self.ids = ids
        self.cps = cps
        self.flags = flags
        self.text = text
        self.ncounted = len(ids) - flags.count(_PH)
        self.has_ps = _PS in flags or _PH in flags
        self._cum: array[int] | None = None

    def cum(self) -> array[int]:
        """``cum[i]``: code points before token ``i`` in this chunk (length ``n + 1``).

        Kept until the chunk is edited, for the last :data:`CUM_CACHED` chunks that needed
        one (in every document), as an array: 4 bytes a token (``docs/algorithms.md``
        section 4 has why not a list).
        """
        c = self._cum
        if c is None:
            c = self._cum = array("I", accumulate(self.cps, initial=0))
            _cum_kept.append(self)
            while len(_cum_kept) > CUM_CACHED:
                _cum_kept.popleft()._cum = None  # (harmless when it is this chunk again)
        return c

    def __len__(self) -> int:
        return len(self.ids)


#: the flag values a token can have: a piece always starts cleanly, and a placeholder is a
#: whole piece, so ``_PS`` and ``_PH`` are the only piece starts (one ``find`` each)
_FLAG_VALUES = frozenset({0, CLEAN, PIECE_START | CLEAN, PIECE_START | CLEAN | PLACEHOLDER})
_PS = PIECE_START | CLEAN
_PH = PIECE_START | CLEAN | PLACEHOLDER
#: ``flags.translate(_CLEAN_SEL)``: 1 where a token's flags hold CLEAN, else 0
_CLEAN_SEL = bytes(1 if f & CLEAN else 0 for f in range(256))


def _start_at(cum: Sequence[int], flags: bytearray, cps: Sequence[int], n: int, rel: int
              ) -> int:
    """In a run of ``n`` tokens (``cum``: code points before each, ``flags``, ``cps``), the
    index of the token that starts a piece exactly at ``rel``; -1 when no piece starts there;
    ``n`` when the run cannot tell (only zero-width tokens from ``rel`` to its end: the next
    run's first token decides).

    Runtime complexity: ``O(log n)`` plus the zero-width tokens at ``rel``.
    """
    j = bisect_left(cum, rel)
    while j < n and cum[j] == rel:
        if flags[j] & PIECE_START:
            return j
        if cps[j]:
            return -1
        j += 1
    return -1 if j < n else n


def _rfind_ps(flags: bytearray, end: int | None, has_ph: bool) -> int:
    """Index of the last piece start in ``flags[:end]`` (all of it for ``None``), or -1."""
    k = flags.rfind(_PS, 0, end)
    if has_ph:
        k = max(k, flags.rfind(_PH, 0, end))
    return k


def _find_ps(flags: bytearray, begin: int, has_ph: bool) -> int:
    """Index of the first piece start in ``flags[begin:]``, or -1."""
    k = flags.find(_PS, begin)
    if has_ph:
        h = flags.find(_PH, begin)
        if h >= 0 and (k < 0 or h < k):
            k = h
    return k


def _splice(head: array[int], j0: int, mid: Sequence[int], tail: array[int], j1: int) -> array[int]:
    """``head[:j0] + mid + tail[j1:]`` as a new array of ``head``'s type."""
    out = head[:j0]
    out.extend(mid)
    out.extend(tail[j1:])
    return out


class TokenSeq:
    """Tokens of a document in chunks, findable by code point offset or token index.

    Runtime complexities below count ``C`` chunks: an index query (:class:`.blocksums.BlockSums`) takes
    ``O(log C)`` steps (one list slice of at most 32 items per level, 2 levels for a 10 MB
    document).

    >>> from array import array
    >>> s = TokenSeq(load=4)
    >>> s.replace(0, 0, [7, 8, 9], [2, 1, 3], bytearray([3, 2, 3]), "abcdef")
    >>> s.total_cp, s.total_counted, s.locate(3)
    (6, 3, (2, 3))
    """

    def __init__(self, load: int = 256, cps_type: str = "I") -> None:
        self.load = load
        #: typecode of the ``cps`` arrays: ``"B"`` (1 byte a token) when no token can cover
        #: 256 code points or more (byte-level BPE: at most its longest token's bytes), which
        #: makes a document ~20 % smaller; ``"I"`` otherwise
        self.cps_type = cps_type
        self.chunks: list[Chunk] = [Chunk(array("I"), array(cps_type), bytearray(), "")]
        self.total_cp = 0
        self.total_counted = 0
        self.total_tokens = 0
        #: ``(chunk index, chunk, its first code point, its first token)`` of the last
        #: :class:`SeqView`, kept while edits stay in that chunk (which moves no chunk start):
        #: consecutive edits in one place skip the index search
        self._hint: tuple[int, Chunk, int, int] | None = None
        self._reindex()

    # -- index ------------------------------------------------------------------------------

    def _reindex(self) -> None:
        #: per chunk ``code points << POS_SHIFT | tokens``: one search by code point finds the
        #: chunk, its first code point and its first token (see :data:`POS_SHIFT`)
        self._fpos = BlockSums([len(c.text) << POS_SHIFT | len(c.ids) for c in self.chunks])
        self._fcount = BlockSums([c.ncounted for c in self.chunks])
        self._flen = BlockSums([len(c.ids) for c in self.chunks])
        #: 1 per chunk holding a piece start (``has_ps``): :meth:`next_piece_start` and
        #: :meth:`prev_piece_start` skip the chunks of a long piece in ``O(log C)``
        self._fps = BlockSums([int(c.has_ps) for c in self.chunks])

    def _chunk_at_cp(self, cp: int) -> tuple[int, int]:
        """Chunk index holding code point ``cp`` and the cp offset of that chunk's start.

        For ``cp == total_cp`` returns the last chunk.
        """
        ci, v = self._fpos.find(cp << POS_SHIFT | _POS_MASK)
        base = v >> POS_SHIFT
        if ci >= len(self.chunks):
            ci = len(self.chunks) - 1
            base = self.total_cp - len(self.chunks[ci].text)
        return ci, base

    def _chunk_cum(self, cp: int) -> tuple[int, int, Chunk, array[int]]:
        """``(ci, base, chunk, cum)``: the chunk holding ``cp < total_cp``, its index, its first
        code point and its cumulative code points (:meth:`Chunk.cum`)."""
        ci, base = self._chunk_at_cp(cp)
        ch = self.chunks[ci]
        return ci, base, ch, ch.cum()

    def locate(self, cp: int) -> tuple[int, int]:
        """``(token_index, token_start_cp)`` of the token that holds code point ``cp``.

        A token with zero code points is never returned for ``cp < total_cp``; for
        ``cp == total_cp`` returns ``(total_tokens, total_cp)``.

        Runtime complexity: ``O(log C + load)``.
        """
        if cp >= self.total_cp:
            return self.total_tokens, self.total_cp
        ci, base, ch, cum = self._chunk_cum(cp)
        j = bisect_right(cum, cp - base) - 1
        # bisect_right puts us on the last token starting at or before cp; zero-width tokens
        # before a real one share its start, so skip forward over them
        while ch.cps[j] == 0:
            j += 1
        return self._flen.prefix(ci) + j, base + cum[j]

    def piece_starts(self, c0: int, c1: int) -> set[int]:
        """The code points in ``[c0, c1]`` where a piece starts (``total_cp`` included when in
        range): a set to reject candidates in ``O(1)`` before :meth:`piece_start_at` finds the
        token (an edit's re-split asks about every new boundary past the edit).

        Runtime complexity: ``O(log C + tokens in the range)``, C loops per chunk.
        """
        out: set[int] = set()
        total = self.total_cp
        if c1 >= total >= c0:
            out.add(total)
        if c0 >= total:
            return out
        ci, base = self._chunk_at_cp(c0)
        chunks = self.chunks
        while ci < len(chunks) and base <= c1:
            ch = chunks[ci]
            cum = ch.cum()
            j0 = bisect_left(cum, c0 - base) if c0 > base else 0
            j1 = bisect_right(cum, c1 - base, j0, len(ch.ids))
            out.update(compress(map(base.__add__, cum[j0:j1]),
                                map(PIECE_START.__and__, ch.flags[j0:j1])))
            base += len(ch.text)
            ci += 1
        return out

    def first_at_or_after(self, cp: int) -> tuple[int, int]:
        """``(index, start_cp)`` of the first token whose start is ``>= cp`` (zero-width ones
        included); ``(total_tokens, total_cp)`` when there is none.

        Runtime complexity: ``O(log C + load)``.
        """
        if cp >= self.total_cp:
            # zero-width tokens at the very end hold the last character's tail bytes: they
            # start before ``cp`` in the sense that matters (their character does)
            return self.total_tokens, self.total_cp
        ci, base, ch, cum = self._chunk_cum(cp)
        j = bisect_left(cum, cp - base)
        if j >= len(ch):
            return self._flen.prefix(ci + 1), base + len(ch.text)
        return self._flen.prefix(ci) + j, base + cum[j]

    def piece_start_at(self, cp: int) -> int | None:
        """Index of the token that starts a piece exactly at ``cp``, ``total_tokens`` for
        ``cp == total_cp``, or None when ``cp`` is not a piece boundary.

        Runtime complexity: ``O(log C + load)``.
        """
        return self.flagged_start_at(cp, PIECE_START)

    def flagged_start_at(self, cp: int, flag: int) -> int | None:
        """Index of the token carrying ``flag`` (``PIECE_START``, ``CLEAN``) that starts
        exactly at ``cp`` (zero-width tokens there are passed over), ``total_tokens`` for
        ``cp == total_cp``, or None when no such token starts there.

        Runtime complexity: ``O(log C + load)``.
        """
        if cp >= self.total_cp:
            return self.total_tokens if cp == self.total_cp else None
        j, start = self.first_at_or_after(cp)
        while j < self.total_tokens and start == cp:
            _, w, f = self.get(j)
            if f & flag:
                return j
            if w:
                return None
            j += 1
        return None

    def next_piece_start(self, index: int) -> int:
        """Index of the first piece-start token after ``index`` (``total_tokens`` if none).

        Runtime complexity: ``O(log C + load + chunks skipped)``.
        """
        if index + 1 >= self.total_tokens:
            return self.total_tokens
        ci, j = self.token_global(index + 1)
        chunks = self.chunks
        # this chunk and the next one (the usual case), then the next chunk that has a piece
        # start by the per-chunk flags' sums (the chunks of one long piece have none)
        for ci in range(ci, min(ci + 2, len(chunks))):
            ch = chunks[ci]
            if ch.has_ps:
                k = _find_ps(ch.flags, j, ch.ncounted != len(ch.ids))
                if k >= 0:
                    return self._flen.prefix(ci) + k
            j = 0
        ci, _ = self._fps.find(self._fps.prefix(ci + 1))
        if ci >= len(chunks):
            return self.total_tokens
        ch = chunks[ci]
        return self._flen.prefix(ci) + _find_ps(ch.flags, 0, ch.ncounted != len(ch.ids))

    def prev_piece_start(self, index: int) -> int:
        """Index of the last piece-start token at or before ``index`` (0 if none).

        Runtime complexity: ``O(log C + load + chunks skipped)``.
        """
        if index >= self.total_tokens:
            index = self.total_tokens - 1
        if index <= 0:
            return 0
        ci, j = self.token_global(index)
        chunks = self.chunks
        end: int | None = j + 1
        # this chunk and the one before, then the last earlier chunk that has a piece start
        for ci in range(ci, max(ci - 2, -1), -1):
            ch = chunks[ci]
            if ch.has_ps:
                k = _rfind_ps(ch.flags, end, ch.ncounted != len(ch.ids))
                if k >= 0:
                    return self._flen.prefix(ci) + k
            end = None  # the whole chunk
        before = self._fps.prefix(ci)
        if before == 0:
            return 0
        ci, _ = self._fps.find(before - 1)
        ch = chunks[ci]
        return self._flen.prefix(ci) + _rfind_ps(ch.flags, None, ch.ncounted != len(ch.ids))

    def token_global(self, index: int) -> tuple[int, int]:
        """``(chunk_index, local_index)`` of the token at sequence index ``index``."""
        ci, before = self._flen.find(index)
        return ci, index - before

    def token_start_cp(self, index: int) -> int:
        """Code point offset where token ``index`` starts (``total_cp`` for the end)."""
        if index >= self.total_tokens:
            return self.total_cp
        ci, j = self.token_global(index)
        return (self._fpos.prefix(ci) >> POS_SHIFT) + self.chunks[ci].cum()[j]

    def counted_before(self, index: int) -> int:
        """Number of counted (non-placeholder) tokens before token ``index``."""
        if index >= self.total_tokens:
            return self.total_counted
        ci, j = self.token_global(index)
        ch = self.chunks[ci]
        if ch.ncounted == len(ch):
            return self._fcount.prefix(ci) + j
        return self._fcount.prefix(ci) + j - ch.flags.count(_PH, 0, j)

    def get(self, index: int) -> tuple[int, int, int]:
        """``(id, cps, flags)`` of token ``index``."""
        ci, j = self.token_global(index)
        ch = self.chunks[ci]
        return ch.ids[j], ch.cps[j], ch.flags[j]

    def iter_from(self, index: int) -> Iterator[tuple[int, int, int]]:
        """Yield ``(id, cps, flags)`` from token ``index`` to the end."""
        if index >= self.total_tokens:
            return
        ci, j = self.token_global(index)
        chunks = self.chunks
        while ci < len(chunks):
            ch = chunks[ci]
            yield from zip(ch.ids[j:], ch.cps[j:], ch.flags[j:])
            ci += 1
            j = 0

    def iter_back(self, index: int) -> Iterator[tuple[int, int, int]]:
        """Yield ``(id, cps, flags)`` of tokens ``index - 1, index - 2, ...``."""
        if index <= 0:
            return
        if index >= self.total_tokens:
            ci, j = len(self.chunks) - 1, len(self.chunks[-1])
        else:
            ci, j = self.token_global(index)
        chunks = self.chunks
        while ci >= 0:
            ch = chunks[ci]
            for k in range(j - 1, -1, -1):
                yield ch.ids[k], ch.cps[k], ch.flags[k]
            ci -= 1
            if ci >= 0:
                j = len(chunks[ci])

    def slice_text(self, start: int, end: int) -> str:
        """``text[start:end]`` gathered from the chunks (no whole-document copy).

        Runtime complexity: ``O(log C + (end - start) + load)``.
        """
        if start >= end:
            return ""
        ci, base = self._chunk_at_cp(start)
        parts = []
        chunks = self.chunks
        while ci < len(chunks) and base < end:
            t = chunks[ci].text
            parts.append(t[max(0, start - base) : end - base])
            base += len(t)
            ci += 1
        return "".join(parts)

    def text_parts(self, start: int, end: int) -> Iterator[str]:
        """``text[start:end]`` as the chunks hold it: each whole chunk inside the range is its
        own ``str`` object (the same object until the chunk is edited, so a caller may key a
        cache on it), the parts of the chunks at the ends are slices.

        Runtime complexity: ``O(log C)`` to start, then ``O(1)`` per whole chunk.
        """
        if start >= end:
            return
        ci, base = self._chunk_at_cp(start)
        chunks = self.chunks
        while ci < len(chunks) and base < end:
            t = chunks[ci].text
            yield t if start <= base and base + len(t) <= end else t[max(0, start - base) : end - base]
            base += len(t)
            ci += 1

    def text(self) -> str:
        """The whole text. Runtime complexity: ``O(n)``."""
        return "".join(c.text for c in self.chunks)

    def ids(self) -> list[int]:
        """All counted token ids. Runtime complexity: ``O(n)``."""
        out: list[int] = []
        for c in self.chunks:
            if c.ncounted == len(c.ids):
                out.extend(c.ids)
            else:
                out.extend(i for i, f in zip(c.ids, c.flags) if not f & PLACEHOLDER)
        return out

    def glue_starts(self, lo: int, hi: int) -> Iterator[tuple[int, int, int]]:
        """``(index, start_cp, id)`` of the tokens of ``[lo, hi)`` that start on a character
        boundary, right to left: where an Algorithm 1 window may start (:func:`.glue.glue`).

        Chunk by chunk, each chunk's part in C (``accumulate`` of the code points, ``compress``
        by the flags): a window that widens over a long run of changed tokens pulls them by
        the thousand (``docs/algorithms.md`` section 3).

        Runtime complexity: ``O(log C)`` to start, then ``O(1)`` per token.
        """
        return chain.from_iterable(self._glue_starts_parts(lo, hi))

    def _glue_starts_parts(self, lo: int, hi: int) -> Iterator[Iterator[tuple[int, int, int]]]:
        """:meth:`glue_starts`, one iterator per chunk."""
        if lo >= hi:
            return
        pos = self.token_start_cp(hi)
        chunks = self.chunks
        if hi >= self.total_tokens:
            ci, j = len(chunks) - 1, len(chunks[-1])
        else:
            ci, j = self.token_global(hi)
        left = hi - lo  # tokens still to walk
        while left > 0 and ci >= 0:
            ch = chunks[ci]
            i = max(0, j - left)  # this chunk's tokens [i, j), walked right to left
            cps = ch.cps[i:j]
            cps.reverse()
            starts = accumulate(cps, sub, initial=pos)
            next(starts)
            ids = ch.ids[i:j]
            ids.reverse()
            sel = ch.flags[i:j].translate(_CLEAN_SEL)
            sel.reverse()
            first = lo + left - 1  # the global index of token j - 1
            yield compress(zip(range(first, first - (j - i), -1), starts, ids), sel)
            pos -= sum(cps)
            left -= j - i
            ci -= 1
            if ci >= 0:
                j = len(chunks[ci])

    def glue_ends(self, lo: int, hi: int, shift: int = 0) -> Iterator[tuple[int, int, int]]:
        """``(index, end_cp + shift, id)`` of the tokens of ``[lo, hi)`` that end on a character
        boundary (the next one starts cleanly, or it is the last), left to right: where an
        Algorithm 1 window may end. ``shift`` moves the offsets to an edit's new coordinates.

        Chunk by chunk in C, as :meth:`glue_starts`.

        Runtime complexity: ``O(log C)`` to start, then ``O(1)`` per token.
        """
        return chain.from_iterable(self._glue_ends_parts(lo, hi, shift))

    def _glue_ends_parts(self, lo: int, hi: int, shift: int
                         ) -> Iterator[Iterator[tuple[int, int, int]]]:
        """:meth:`glue_ends`, one iterator per chunk."""
        if lo >= hi or lo >= self.total_tokens:
            return
        pos = self.token_start_cp(lo) + shift
        ci, j = self.token_global(lo)
        chunks = self.chunks
        idx = lo
        while idx < hi and ci < len(chunks):
            ch = chunks[ci]
            stop = min(len(ch), j + hi - idx)  # this chunk's tokens [j, stop)
            ends = accumulate(ch.cps[j:stop], initial=pos)
            next(ends)
            # token t ends cleanly when token t + 1 starts cleanly: the next chunk's first
            # token for the chunk's last one; the range's last token always
            sel = bytearray(ch.flags[j + 1 : stop + 1].translate(_CLEAN_SEL))
            if len(sel) < stop - j:
                nxt = chunks[ci + 1].flags[0] if ci + 1 < len(chunks) else CLEAN
                sel.append(1 if nxt & CLEAN else 0)
            if idx + stop - j >= hi:
                sel[-1] = 1
            yield compress(zip(range(idx, idx + stop - j), ends, ch.ids[j:stop]), sel)
            pos += sum(ch.cps[j:stop])
            idx += stop - j
            ci += 1
            j = 0

    # -- mutation -----------------------------------------------------------------------------

    def replace(
        self,
        t0: int,
        t1: int,
        ids: Sequence[int],
        cps: Sequence[int],
        flags: bytearray,
        text: str,
        view: SeqView | None = None,
    ) -> None:
        """Replace tokens ``[t0, t1)`` (and their text) by new tokens holding ``text``.

        ``view``: a :class:`SeqView` of this (unchanged) sequence, to find the chunks of
        ``t0`` and ``t1`` without a search when they lie in its chunk. Steps: find both cuts
        (:meth:`_cuts`), then rewrite the chunks in place when they stay within their size
        bounds (:meth:`_in_place`, nearly every edit), else re-chunk the run (:meth:`_rechunk`).

        >>> seq = TokenSeq(load=4)
        >>> seq.replace(0, 0, [1, 2], [2, 3], bytearray([3, 2]), "hello")
        >>> seq.replace(1, 2, [7, 8], [1, 2], bytearray([2, 2]), "llo")
        >>> seq.ids(), seq.text()
        ([1, 7, 8], 'hello')

        Runtime complexity: ``O(log C + load + k)`` for ``k`` new tokens, plus ``O(C)`` when
        chunks split or merge.
        """
        if not (isinstance(cps, array) and cps.typecode == self.cps_type):
            cps = array(self.cps_type, cps)  # OverflowError for a too long token: never silent
        if self.total_tokens - (t1 - t0) + len(ids) > _POS_MASK:  # before any change (POS_SHIFT)
            raise MemoryError(f"a TokenSeq holds at most {_POS_MASK:,} tokens")
        ci, j0, c0, cj, j1, c1 = self._cuts(t0, t1, view)
        hint = self._hint
        self._hint = None
        if self._in_place(ci, j0, c0, cj, j1, c1, ids, cps, flags, text):
            if hint is not None and hint[0] == ci:
                self._hint = hint  # the first chunk's start did not move
            return
        self._rechunk(ci, j0, c0, cj, j1, c1, ids, cps, flags, text)

    def _cuts(self, t0: int, t1: int, view: SeqView | None) -> tuple[int, int, int, int, int, int]:
        """``(ci, j0, c0, cj, j1, c1)``: the chunks of tokens ``t0`` and ``t1``, their indexes
        there and the code points before them in their chunks (the view's when it covers them:
        no search, no sum)."""
        if view is not None:
            j = t0 - view.t_base
            k = t1 - view.t_base
            if 0 <= j <= k < view.n:  # both ends in the view's window: the common case
                off = view.c_base - view.k_base
                return (view.ci, view.lo + j, off + view.cum[j],
                        view.ci, view.lo + k, off + view.cum[k])
        chunks = self.chunks
        total = self.total_tokens
        finder = view or self
        if total == 0:
            ci, j0 = 0, 0
        elif t0 < total:
            ci, j0 = finder.token_global(t0)
        else:
            ci, j0 = len(chunks) - 1, len(chunks[-1])
        if t1 >= total:
            cj, j1 = len(chunks) - 1, len(chunks[-1])
        else:
            cj, j1 = finder.token_global(t1)
        return ci, j0, self._chunk_cp(ci, j0, view), cj, j1, self._chunk_cp(cj, j1, view)

    def _chunk_cp(self, ci: int, j: int, view: SeqView | None) -> int:
        """Code points before token ``j`` in chunk ``ci``: from the view or a cached ``cum``
        when there is one, else a C-speed sum rather than building a ``cum``."""
        c = view.chunk_cp(ci, j) if view is not None else None
        if c is None:
            ch = self.chunks[ci]
            c = ch._cum[j] if ch._cum is not None else sum(ch.cps[:j])
        return c

    def _in_place(
        self, ci: int, j0: int, c0: int, cj: int, j1: int, c1: int,
        ids: Sequence[int], cps: Sequence[int], flags: bytearray, text: str,
    ) -> bool:
        """Rewrite the cut chunks in place when they stay within their size bounds (False:
        nothing done). One chunk: its arrays edited by slice assignment (a memmove in C),
        ``O(1)`` index updates. A range that ends in the next chunk (often at its first token):
        the tail of the first and the head of the next rewritten, both in place
        (``docs/algorithms.md`` section 4 has the measurements)."""
        chunks = self.chunks
        load = self.load
        first = chunks[ci]
        if ci == cj:
            n = len(first.ids) - (j1 - j0) + len(ids)
            if not (load // 4 <= n <= 2 * load or (len(chunks) == 1 and n <= 2 * load)):
                return False
            self._rewrite(ci, first, j0, j1, c0, c1, ids, cps, flags, text)
            return True
        last = chunks[cj]
        if not (cj == ci + 1 and load // 4 <= j0 + len(ids) <= 2 * load
                and load // 4 <= len(last.ids) - j1):
            return False
        self._rewrite(ci, first, j0, len(first.ids), c0, len(first.text), ids, cps, flags, text)
        if j1:
            self._rewrite(cj, last, 0, j1, 0, c1, (), (), bytearray(), "")
        return True

    def _rechunk(
        self, ci: int, j0: int, c0: int, cj: int, j1: int, c1: int,
        ids: Sequence[int], cps: Sequence[int], flags: bytearray, text: str,
    ) -> None:
        """Replace chunks ``ci..cj`` by new chunks of the spliced tokens (borrowing a neighbour
        when the run would be too small), then splice the indexes.

        Runtime complexity: ``O(load + k)`` for the run plus ``O(C)`` for the index.
        """
        chunks = self.chunks
        load = self.load
        first, last = chunks[ci], chunks[cj]
        new_ids = _splice(first.ids, j0, ids, last.ids, j1)
        new_cps = _splice(first.cps, j0, cps, last.cps, j1)
        new_flags = first.flags[:j0] + flags + last.flags[j1:]
        new_text = first.text[:c0] + text + last.text[c1:]
        if len(new_ids) < load // 4 and len(chunks) > cj - ci + 1:
            if cj + 1 < len(chunks):
                nb = chunks[cj + 1]
                new_ids.extend(nb.ids)
                new_cps.extend(nb.cps)
                new_flags += nb.flags
                new_text += nb.text
                cj += 1
            else:
                nb = chunks[ci - 1]
                new_ids = nb.ids + new_ids
                new_cps = nb.cps + new_cps
                new_flags = nb.flags + new_flags
                new_text = nb.text + new_text
                ci -= 1
        old = chunks[ci : cj + 1]
        n = len(new_ids)
        pieces: list[Chunk] = []
        if n == 0:
            pieces.append(Chunk(new_ids, new_cps, new_flags, new_text))
        else:
            k = max(1, -(-n // load))
            step = -(-n // k)
            cum = [0, *accumulate(new_cps)]
            for a in range(0, n, step):
                b = min(n, a + step)
                pieces.append(
                    Chunk(new_ids[a:b], new_cps[a:b], new_flags[a:b], new_text[cum[a] : cum[b]])
                )
        if len(chunks) > cj - ci + 1:
            # an empty chunk is only allowed when it is the only one
            pieces = [p for p in pieces if len(p)]
        chunks[ci : cj + 1] = pieces
        # splice the per-chunk sizes (C-speed list slice assignment) instead of re-reading
        # every chunk; the prefix sums rebuild lazily
        self._fpos.splice(ci, cj + 1, [len(p.text) << POS_SHIFT | len(p) for p in pieces])
        self._fcount.splice(ci, cj + 1, [p.ncounted for p in pieces])
        self._flen.splice(ci, cj + 1, [len(p) for p in pieces])
        self._fps.splice(ci, cj + 1, [int(p.has_ps) for p in pieces])
        self._account(
            len(new_text) - sum(len(c.text) for c in old),
            sum(p.ncounted for p in pieces) - sum(c.ncounted for c in old),
            n - sum(len(c) for c in old),
        )

    def _rewrite(
        self,
        ci: int,
        ch: Chunk,
        j0: int,
        j1: int,
        c0: int,
        c1: int,
        ids: Sequence[int],
        cps: Sequence[int],
        flags: bytearray,
        text: str,
    ) -> None:
        """Replace tokens ``[j0, j1)`` of chunk ``ci`` (code points ``[c0, c1)`` of its text)
        in place, and add the differences to the indexes and totals; the caller keeps the
        chunk's size within bounds.

        Runtime complexity: ``O(load + k + log C)`` for ``k`` new tokens.
        """
        fl = ch.flags
        removed_ph = fl.count(_PH, j0, j1) if ch.ncounted != len(fl) else 0
        ch.ids[j0:j1] = array("I", ids)
        ch.cps[j0:j1] = cps if isinstance(cps, array) else array(self.cps_type, cps)
        fl[j0:j1] = flags
        ft = ch.text
        ch.text = ft[:c0] + text + ft[c1:]
        ch._cum = None
        dcount = len(ids) - flags.count(_PH) - (j1 - j0 - removed_ph)
        ch.ncounted += dcount
        had = ch.has_ps
        ch.has_ps = _PS in fl or _PH in fl
        if had != ch.has_ps:
            self._fps.add(ci, 1 if ch.has_ps else -1)
        dcp = len(text) - (c1 - c0)
        dlen = len(ids) - (j1 - j0)
        self._add(ci, dcp, dcount, dlen)
        self.total_cp += dcp  # (_account, inline: once per edit)
        self.total_counted += dcount
        self.total_tokens += dlen

    def _add(self, ci: int, dcp: int, dcount: int, dlen: int) -> None:
        """``BlockSums.add`` on the three indexes, each skipped when its delta is 0 (typing
        often replaces a token by one token: only the code points change)."""
        # packed: (cp << POS_SHIFT | tokens) + (dcp << POS_SHIFT) + dlen is the packed new
        # value (the packing is linear while token counts stay below 2**POS_SHIFT)
        dpos = (dcp << POS_SHIFT) + dlen
        if dpos:
            self._fpos.add(ci, dpos)
        if dcount:
            self._fcount.add(ci, dcount)
        if dlen:
            self._flen.add(ci, dlen)

    def _account(self, dcp: int, dcount: int, dlen: int) -> None:
        self.total_cp += dcp
        self.total_counted += dcount
        self.total_tokens += dlen

    # -- invariants -------------------------------------------------------------------------

    def _check(self) -> None:
        """Assert every structural invariant (tests call this after each mutation)."""
        chunks = self.chunks
        assert chunks, "no chunks"
        assert len(chunks) == 1 or all(len(c) for c in chunks), "empty chunk among several"
        for k, c in enumerate(chunks):
            assert len(c.ids) == len(c.cps) == len(c.flags), f"chunk {k}: array lengths differ"
            assert c.cps.typecode == self.cps_type, f"chunk {k}: cps typecode {c.cps.typecode}"
            assert sum(c.cps) == len(c.text), f"chunk {k}: cps sum {sum(c.cps)} != text {len(c.text)}"
            counted = sum(1 for f in c.flags if not f & PLACEHOLDER)
            assert c.ncounted == counted, f"chunk {k}: ncounted {c.ncounted} != {counted}"
            assert c.has_ps == any(f & PIECE_START for f in c.flags), f"chunk {k}: has_ps"
            assert set(c.flags) <= _FLAG_VALUES, f"chunk {k}: flags {set(c.flags) - _FLAG_VALUES}"
            if c._cum is not None:
                assert list(c._cum) == [0, *accumulate(c.cps)], f"chunk {k}: stale cum"
            assert len(c) <= 2 * self.load + 1 or len(chunks) == 1, f"chunk {k} too large: {len(c)}"
        assert self.total_cp == sum(len(c.text) for c in chunks), "total_cp"
        assert self.total_counted == sum(c.ncounted for c in chunks), "total_counted"
        assert self.total_tokens == sum(len(c) for c in chunks), "total_tokens"
        if self._hint is not None:
            ci, ch, cp0, t0 = self._hint
            assert chunks[ci] is ch, "hint: chunk"
            assert cp0 == sum(len(c.text) for c in chunks[:ci]), "hint: code points"
            assert t0 == sum(len(c) for c in chunks[:ci]), "hint: tokens"
        cp = tokens = counted = ps = 0
        for k in range(len(chunks) + 1):  # running sums: O(C) prefix queries, not O(C^2) sums
            assert self._fpos.prefix(k) == cp << POS_SHIFT | tokens, "prefix sums (cp, tokens)"
            assert self._flen.prefix(k) == tokens, "prefix sums (len)"
            assert self._fcount.prefix(k) == counted, "prefix sums (count)"
            assert self._fps.prefix(k) == ps, "prefix sums (piece-start chunks)"
            if k < len(chunks):
                cp += len(chunks[k].text)
                tokens += len(chunks[k])
                counted += chunks[k].ncounted
                ps += chunks[k].has_ps


class SeqView:
    """The queries an edit needs, answered inside one chunk when possible.

    An edit asks a few dozen questions (where is the piece start before this token, where does
    that token start, is this offset a boundary ...), nearly all about the chunk that holds the
    edit. Answering them with ``bisect`` and ``bytearray.find`` on that chunk alone keeps each
    one at C speed; anything outside the chunk falls back to the :class:`TokenSeq` method of
    the same name, so the answers are always the same. A few methods answer two questions at
    once (:meth:`piece_start_of`, :meth:`old_piece`, :meth:`counted_between`): an edit asks them
    together, and one call costs less than two.
    """

    __slots__ = (
        "seq", "ci", "lo", "ch", "n", "cum", "cps", "flags", "has_ph",
        "t_base", "c_base", "c_end", "k_base", "k_end", "_far",
    )

    cum: Sequence[int]  #: code points before each token of the window (``n + 1`` entries)
    cps: Sequence[int]
    flags: bytearray

    #: in a chunk of more than ``3 * HALF`` tokens without a cached ``cum``, the view covers
    #: ``2 * HALF`` tokens around the one estimated to hold ``cp`` (building ``cum`` for the
    #: whole chunk cost more than any other step of finding an edit's place)
    HALF = 32

    def __init__(self, seq: TokenSeq, cp: int) -> None:
        self.seq = seq
        #: the chunk outside the view that :meth:`piece_start_at` read last: ``(chunk, first
        #: code point, end, first token, cum)`` (an edit's re-split asks about consecutive
        #: boundaries, chunk after chunk)
        self._far: tuple[Chunk, int, int, int, Sequence[int]] | None = None
        cp = min(cp, max(0, seq.total_cp - 1))
        h = seq._hint
        if h is not None and h[2] <= cp < h[2] + len(h[1].text):
            ci, ch, base, t_base = h
        else:
            ci, v = seq._fpos.find(cp << POS_SHIFT | _POS_MASK)
            if ci >= len(seq.chunks):  # cp == total_cp == 0: the one empty chunk
                ci, base = seq._chunk_at_cp(cp)
                t_base = seq._flen.prefix(ci)
            else:
                base = v >> POS_SHIFT
                t_base = v & _POS_MASK
            ch = seq.chunks[ci]
            seq._hint = (ci, ch, base, t_base)
        self.ci = ci
        self.ch = ch
        n = len(ch.ids)
        tl = len(ch.text)
        self.k_base = base  # the chunk's code points, for slice_text
        self.k_end = base + tl
        self.has_ph = ch.ncounted != n
        H = self.HALF
        if ch._cum is None and n > 3 * H and tl:
            # the token holding cp, estimated from the chunk's mean token width; the window
            # is [lo, hi) of the chunk's tokens, and its cum starts at 0 on token lo
            hi = min(n, max(0, (cp - base) * n // tl - H) + 2 * H)
            lo = hi - 2 * H
            cps = ch.cps
            wcps = cps[lo:hi]
            cum = [0, *accumulate(wcps)]
            # code points before the window, summed from the nearer end of the chunk
            off = sum(cps[:lo]) if lo <= n - hi else tl - cum[-1] - sum(cps[hi:])
            if 0 <= cp - base - off < cum[-1]:
                self.lo = lo
                self.n = hi - lo
                self.cum = cum
                self.cps = wcps
                self.flags = ch.flags[lo:hi]
                self.t_base = t_base + lo
                self.c_base = base + off
                self.c_end = base + off + cum[-1]
                return
        self.lo = 0
        self.n = n
        self.cum = ch.cum()
        self.cps = ch.cps
        self.flags = ch.flags
        self.t_base = t_base
        self.c_base = base
        self.c_end = base + tl

    def locate(self, cp: int) -> tuple[int, int]:
        rel = cp - self.c_base
        if 0 <= rel and cp < self.c_end:
            cum = self.cum
            j = bisect_right(cum, rel) - 1
            cps = self.cps
            n = self.n
            while j < n and cps[j] == 0:
                j += 1
            if j < n:
                return self.t_base + j, self.c_base + cum[j]
        return self.seq.locate(cp)

    def token_global(self, index: int) -> tuple[int, int]:
        j = index - self.t_base
        if 0 <= j < self.n:
            return self.ci, self.lo + j
        return self.seq.token_global(index)

    def token_start_cp(self, index: int) -> int:
        j = index - self.t_base
        if 0 <= j < self.n:
            return self.c_base + self.cum[j]
        if j == self.n and index < self.seq.total_tokens:
            return self.c_end
        return self.seq.token_start_cp(index)

    def prev_piece_start(self, index: int) -> int:
        j = index - self.t_base
        if 0 <= j < self.n:
            k = _rfind_ps(self.flags, j + 1, self.has_ph)
            if k >= 0:
                return self.t_base + k
        return self.seq.prev_piece_start(index)

    def _piece_start_in_view(self, j: int) -> tuple[int, int] | None:
        """The last piece start at or before the view's token ``j`` and its code point, if the
        view holds one."""
        k = _rfind_ps(self.flags, j + 1, self.has_ph)
        if k >= 0:
            return self.t_base + k, self.c_base + self.cum[k]
        return None

    def piece_start_of(self, index: int) -> tuple[int, int]:
        """``(prev_piece_start(index), token_start_cp of it)``."""
        j = index - self.t_base
        if 0 <= j < self.n:
            found = self._piece_start_in_view(j)
            if found is not None:
                return found
        t = self.seq.prev_piece_start(index)
        return t, self.token_start_cp(t)

    def piece_holding(self, cp: int) -> tuple[int, int]:
        """``piece_start_of(locate(cp)[0])`` for ``cp < total_cp``: the first token of the
        piece that holds code point ``cp``, and where it starts."""
        rel = cp - self.c_base
        if 0 <= rel and cp < self.c_end:
            # the last token starting at or before cp, as in locate(): it is never a
            # zero-width token (one would start where the next one does, so bisect_right
            # passes it), so locate()'s skip over them never moves here
            found = self._piece_start_in_view(bisect_right(self.cum, rel) - 1)
            if found is not None:
                return found
        return self.piece_start_of(self.locate(cp)[0])

    def next_piece_start(self, index: int) -> int:
        j = index - self.t_base
        if 0 <= j and j + 1 < self.n:
            k = _find_ps(self.flags, j + 1, self.has_ph)
            if k >= 0:
                return self.t_base + k
        return self.seq.next_piece_start(index)

    def piece_start_at(self, cp: int) -> int | None:
        rel = cp - self.c_base
        if 0 <= rel and cp < self.c_end:
            j = _start_at(self.cum, self.flags, self.cps, self.n, rel)
            if j < self.n:
                return None if j < 0 else self.t_base + j
            return self.seq.piece_start_at(cp)
        return self._far_piece_start_at(cp)

    def _far_piece_start_at(self, cp: int) -> int | None:
        """:meth:`piece_start_at` outside the view: the chunk holding ``cp`` is found once and
        kept (``_far``) while the questions stay in it.

        Runtime complexity: ``O(log load)`` in the kept chunk, else ``O(log C + load)``.
        """
        seq = self.seq
        if not 0 <= cp < seq.total_cp:
            return seq.piece_start_at(cp)
        far = self._far
        if far is None or not far[1] <= cp < far[2]:
            ci, base = seq._chunk_at_cp(cp)
            ch = seq.chunks[ci]
            far = self._far = (ch, base, base + len(ch.text), seq._flen.prefix(ci), ch.cum())
        ch, base, _, t_base, cum = far
        n = len(ch.ids)
        j = _start_at(cum, ch.flags, ch.cps, n, cp - base)
        if j < n:
            return None if j < 0 else t_base + j
        return seq.piece_start_at(cp)

    def old_piece(self, a: int, b: int) -> tuple[int, int] | None:
        """``(ta, tb)`` when ``[a, b)`` is exactly one piece of the sequence (``ta`` its first
        token, ``tb`` the next piece's, or ``total_tokens`` when it ends the text), else None."""
        ta = self.piece_start_at(a)
        if ta is None:
            return None
        return self.old_piece_from(ta, b)

    def old_piece_from(self, ta: int, b: int) -> tuple[int, int] | None:
        """:meth:`old_piece` of ``[a, b)`` when ``ta`` is known to start a piece at ``a`` (one
        search less: an edit's re-split starts at a known piece start)."""
        tb = self.next_piece_start(ta)
        seq = self.seq
        if self.token_start_cp(tb) == b or (tb == seq.total_tokens and b == seq.total_cp):
            return ta, tb
        return None

    def chunk_cp(self, ci: int, j: int) -> int | None:
        """Code points before token ``j`` of chunk ``ci`` in that chunk, when the view covers
        it (None otherwise)."""
        j -= self.lo
        if ci == self.ci and 0 <= j <= self.n:
            return self.c_base - self.k_base + self.cum[j]
        return None

    def slice_text(self, start: int, end: int) -> str:
        k_base = self.k_base
        if k_base <= start and end <= self.k_end:
            return self.ch.text[start - k_base : end - k_base]
        return self.seq.slice_text(start, end)

    def counted_before(self, index: int) -> int:
        j = index - self.t_base
        if 0 <= j < self.n:
            j += self.lo  # in the chunk
            before = self.seq._fcount.prefix(self.ci)
            if not self.has_ph:
                return before + j
            return before + j - self.ch.flags.count(_PH, 0, j)
        return self.seq.counted_before(index)

    def counted_between(self, t0: int, t1: int) -> int:
        """``counted_before(t1) - counted_before(t0)`` for ``t0 <= t1``."""
        j0 = t0 - self.t_base
        j1 = t1 - self.t_base
        if 0 <= j0 and j1 <= self.n:
            if not self.has_ph:
                return j1 - j0
            return j1 - j0 - self.flags.count(_PH, j0, j1)
        return self.seq.counted_before(t1) - self.seq.counted_before(t0)
