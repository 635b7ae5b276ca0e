"""The token sequence of a document: chunked arrays with a blocked index over chunk sums.

A document of 10 MB holds about 2.5 million tokens. Keeping them as Python objects would cost
~100 bytes each, and keeping one flat array would make every edit shift every later offset.
:class:`TokenSeq` keeps the shape of ``sortedcontainers.SortedList`` — a list of small
sublists ("chunks") plus a positional index over them — specialised to a *sequence* (order is
given, not sorted) whose elements carry sizes:

* each :class:`Chunk` holds ``ids`` (``array('I')``), ``cps`` (code points per token,
  ``array('I')``), ``flags`` (``bytearray``) and the chunk's text (``str``);
* sums of the chunks' code point lengths and token counts, kept per block of 64 chunks
  (:class:`_Prefix`), find the chunk that holds a code point offset, or the number of tokens
  before a chunk, with ``O(1)`` Python steps and ``O(sqrt C)``-sized C loops; an edit inside
  one chunk updates them in ``O(1)``;
* chunks split above ``2 * load`` tokens and merge below ``load / 4``, and only then are the
  block sums recomputed (``O(C)`` in C, amortised over many edits).

Flags per token: :data:`PIECE_START` (first token of a pre-token), :data:`CLEAN` (starts on a
character boundary: byte-level tokens may split a UTF-8 character), :data:`PLACEHOLDER` (holds
the code points of a piece that produced no token, e.g. WordPiece whitespace; not counted).

The choice of chunks + block sums over a ``SortedList`` keyed by offset is explained in
``docs/algorithms.md``: keys would have to be shifted on every edit.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import Iterator, Sequence

__all__ = ["TokenSeq", "SeqView", "Chunk", "PIECE_START", "CLEAN", "PLACEHOLDER"]

PIECE_START = 1
CLEAN = 2
PLACEHOLDER = 4


class Chunk:
    """A run of consecutive tokens with their text."""

    __slots__ = ("ids", "cps", "flags", "text", "ncounted", "has_ps", "_cum")

    def __init__(self, ids: array, cps: array, flags: bytearray, text: str) -> None:
        self.ids = ids
        self.cps = cps
        self.flags = flags
        self.text = text
        self.ncounted = len(ids) - _placeholders(flags)
        self.has_ps = any(flags.count(f) for f in _PIECE_START_FLAG_VALUES)
        self._cum: list[int] | None = None

    def cum(self) -> list[int]:
        """``cum[i]``: code points before token ``i`` in this chunk (length ``n + 1``)."""
        c = self._cum
        if c is None:
            c = self._cum = [0, *accumulate(self.cps)]
        return c

    def __len__(self) -> int:
        return len(self.ids)


_PLACEHOLDER_FLAG_VALUES = [f for f in range(8) if f & PLACEHOLDER]
_PIECE_START_FLAG_VALUES = [f for f in range(8) if f & PIECE_START]
_PIECE_START_BYTES = [bytes([f]) for f in _PIECE_START_FLAG_VALUES]


def _placeholders(flags: bytearray) -> int:
    """Number of placeholder tokens (C-speed ``count`` per flag combination)."""
    return sum(flags.count(f) for f in _PLACEHOLDER_FLAG_VALUES)


class _Prefix:
    """Per-chunk sizes with prefix sums over blocks of chunks (square-root decomposition).

    ``sizes[i]`` is chunk ``i``'s size; ``_blocks[b]`` the sum of ``sizes`` over block ``b``
    (``BLOCK`` chunks). The prefix sums of the few block sums (``C / BLOCK``: about 80 for
    the 5,000 chunks of a 10 MB document) are rebuilt by ``accumulate`` (C speed) after an
    update, and a query bisects them, then sums or accumulates within one block, again in C.
    An update is ``O(1)``, a query ``O(C / BLOCK + BLOCK)`` C steps and ``O(1)`` Python steps,
    and no step ever walks all chunks in Python. Measured here against the alternatives: a
    Python Fenwick tree costs ``O(log C)`` Python steps per query and update, and one prefix
    list over all chunks, even patched lazily, costs ``O(C)`` per rebuild (the top cost of an
    edit in a 10 MB document, ahead of the re-tokenization itself).
    """

    __slots__ = ("sizes", "_blocks", "_bpre")

    BLOCK = 64

    def __init__(self, values: Sequence[int]) -> None:
        self.sizes = list(values)
        self.reblock()

    def reblock(self) -> None:
        """Recompute the block sums after ``sizes`` was spliced. ``O(C)`` in C."""
        s, B = self.sizes, self.BLOCK
        self._blocks = [sum(s[i : i + B]) for i in range(0, len(s), B)] or [0]
        self._bpre: list[int] | None = None

    def _block_prefix(self) -> list[int]:
        bp = self._bpre
        if bp is None:
            bp = self._bpre = [0, *accumulate(self._blocks)]
        return bp

    def add(self, i: int, delta: int) -> None:
        if delta:
            self.sizes[i] += delta
            self._blocks[i // self.BLOCK] += delta
            self._bpre = None

    def prefix(self, i: int) -> int:
        """Sum of sizes[0:i]."""
        b, r = divmod(i, self.BLOCK)
        v = self._block_prefix()[b]
        return v + sum(self.sizes[i - r : i]) if r else v

    def find(self, x: int) -> tuple[int, int]:
        """Smallest ``i`` with ``prefix(i + 1) > x``, and ``prefix(i)``; ``(n, total)`` if none."""
        bp = self._block_prefix()
        b = bisect_right(bp, x) - 1
        if b >= len(self._blocks):
            return len(self.sizes), bp[-1]
        lo = b * self.BLOCK
        acc = list(accumulate(self.sizes[lo : lo + self.BLOCK], initial=bp[b]))
        j = bisect_right(acc, x) - 1
        return lo + j, acc[j]


class TokenSeq:
    """Tokens of a document in chunks, findable by code point offset in ``O(log n)``.

    >>> from array import array
    >>> s = TokenSeq(load=4)
    >>> s.replace(0, 0, [7, 8, 9], [2, 1, 3], bytearray([3, 2, 3]), "abcdef")
    >>> s.total_cp, s.total_counted, s.locate(3)
    (6, 3, (2, 3))
    """

    def __init__(self, load: int = 256) -> None:
        self.load = load
        self.chunks: list[Chunk] = [Chunk(array("I"), array("I"), bytearray(), "")]
        self.total_cp = 0
        self.total_counted = 0
        self.total_tokens = 0
        self._reindex()

    # -- index ------------------------------------------------------------------------------

    def _reindex(self) -> None:
        self._fcp = _Prefix([len(c.text) for c in self.chunks])
        self._fcount = _Prefix([c.ncounted for c in self.chunks])
        self._flen = _Prefix([len(c.ids) for c in self.chunks])

    def _chunk_at_cp(self, cp: int) -> tuple[int, int]:
        """Chunk index holding code point ``cp`` and the cp offset of that chunk's start.

        For ``cp == total_cp`` returns the last chunk.
        """
        ci, base = self._fcp.find(cp)
        if ci >= len(self.chunks):
            ci = len(self.chunks) - 1
            base = self.total_cp - len(self.chunks[ci].text)
        return ci, base

    def locate(self, cp: int) -> tuple[int, int]:
        """``(token_index, token_start_cp)`` of the token that holds code point ``cp``.

        A token with zero code points is never returned for ``cp < total_cp``; for
        ``cp == total_cp`` returns ``(total_tokens, total_cp)``.

        Runtime complexity: ``O(log C + load)``.
        """
        if cp >= self.total_cp:
            return self.total_tokens, self.total_cp
        ci, base = self._chunk_at_cp(cp)
        ch = self.chunks[ci]
        cum = ch.cum()
        j = bisect_right(cum, cp - base) - 1
        # bisect_right puts us on the last token starting at or before cp; zero-width tokens
        # before a real one share its start, so skip forward over them
        while ch.cps[j] == 0:
            j += 1
        return self._flen.prefix(ci) + j, base + cum[j]

    def first_at_or_after(self, cp: int) -> tuple[int, int]:
        """``(index, start_cp)`` of the first token whose start is ``>= cp`` (zero-width ones
        included); ``(total_tokens, total_cp)`` when there is none.

        Runtime complexity: ``O(log C + load)``.
        """
        if cp >= self.total_cp:
            # zero-width tokens at the very end hold the last character's tail bytes: they
            # start before ``cp`` in the sense that matters (their character does)
            return self.total_tokens, self.total_cp
        ci, base = self._chunk_at_cp(cp)
        ch = self.chunks[ci]
        cum = ch.cum()
        j = bisect_left(cum, cp - base)
        if j >= len(ch):
            return self._flen.prefix(ci + 1), base + len(ch.text)
        return self._flen.prefix(ci) + j, base + cum[j]

    def piece_start_at(self, cp: int) -> int | None:
        """Index of the token that starts a piece exactly at ``cp``, ``total_tokens`` for
        ``cp == total_cp``, or None when ``cp`` is not a piece boundary.

        Runtime complexity: ``O(log C + load)``.
        """
        if cp == self.total_cp:
            return self.total_tokens
        j, start = self.first_at_or_after(cp)
        while j < self.total_tokens and start == cp:
            _, w, f = self.get(j)
            if f & PIECE_START:
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
        base = self._flen.prefix(ci)
        while ci < len(chunks):
            ch = chunks[ci]
            if ch.has_ps:
                best = -1
                for b in _PIECE_START_BYTES:
                    k = ch.flags.find(b, j)
                    if k >= 0 and (best < 0 or k < best):
                        best = k
                if best >= 0:
                    return base + best
            base += len(ch)
            ci += 1
            j = 0
        return self.total_tokens

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
        base = self._flen.prefix(ci)
        end = j + 1
        while ci >= 0:
            ch = chunks[ci]
            if ch.has_ps:
                best = max(ch.flags.rfind(b, 0, end) for b in _PIECE_START_BYTES)
                if best >= 0:
                    return base + best
            ci -= 1
            if ci >= 0:
                base -= len(chunks[ci])
                end = len(chunks[ci])
        return 0

    def token_global(self, index: int) -> tuple[int, int]:
        """``(chunk_index, local_index)`` of the token at sequence index ``index``."""
        ci, before = self._flen.find(index)
        return ci, index - before

    def token_start_cp(self, index: int) -> int:
        """Code point offset where token ``index`` starts (``total_cp`` for the end)."""
        if index >= self.total_tokens:
            return self.total_cp
        ci, j = self.token_global(index)
        return self._fcp.prefix(ci) + self.chunks[ci].cum()[j]

    def counted_before(self, index: int) -> int:
        """Number of counted (non-placeholder) tokens before token ``index``."""
        if index >= self.total_tokens:
            return self.total_counted
        ci, j = self.token_global(index)
        ch = self.chunks[ci]
        if ch.ncounted == len(ch):
            return self._fcount.prefix(ci) + j
        return self._fcount.prefix(ci) + j - _placeholders(ch.flags[:j])

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
        ``t0`` and ``t1`` without a search when they lie in its chunk.

        Runtime complexity: ``O(log C + load + k)`` for ``k`` new tokens, plus ``O(C)`` when
        chunks split or merge.
        """
        chunks = self.chunks
        if self.total_tokens == 0:
            ci, j0 = 0, 0
        else:
            ci, j0 = (view or self).token_global(t0) if t0 < self.total_tokens else (
                len(chunks) - 1, len(chunks[-1]))
        if t1 >= self.total_tokens:
            cj, j1 = len(chunks) - 1, len(chunks[-1])
        else:
            cj, j1 = (view or self).token_global(t1)
        first, last = chunks[ci], chunks[cj]
        c0 = first.cum()[j0]
        c1 = last.cum()[j1]
        new_ids = first.ids[:j0]
        new_ids.extend(ids)
        new_ids.extend(last.ids[j1:])
        new_cps = first.cps[:j0]
        new_cps.extend(cps)
        new_cps.extend(last.cps[j1:])
        new_flags = first.flags[:j0] + flags + last.flags[j1:]
        new_text = first.text[:c0] + text + last.text[c1:]
        old_cp = sum(len(chunks[k].text) for k in range(ci, cj + 1))
        old_counted = sum(chunks[k].ncounted for k in range(ci, cj + 1))
        old_len = sum(len(chunks[k]) for k in range(ci, cj + 1))
        n = len(new_ids)
        load = self.load
        if ci == cj and load // 4 <= n <= 2 * load or (len(chunks) == 1 and n <= 2 * load):
            ch = Chunk(new_ids, new_cps, new_flags, new_text)
            chunks[ci] = ch
            self._fcp.add(ci, len(ch.text) - old_cp)
            self._fcount.add(ci, ch.ncounted - old_counted)
            self._flen.add(ci, n - old_len)
            self._account(len(ch.text) - old_cp, ch.ncounted - old_counted, n - old_len)
            return
        # re-chunk the affected run, borrowing a neighbour when it would be too small
        if n < load // 4 and len(chunks) > cj - ci + 1:
            if cj + 1 < len(chunks):
                nb = chunks[cj + 1]
                new_ids.extend(nb.ids)
                new_cps.extend(nb.cps)
                new_flags += nb.flags
                new_text += nb.text
                old_cp += len(nb.text)
                old_counted += nb.ncounted
                old_len += len(nb)
                cj += 1
            else:
                nb = chunks[ci - 1]
                new_ids = nb.ids + new_ids
                new_cps = nb.cps + new_cps
                new_flags = nb.flags + new_flags
                new_text = nb.text + new_text
                old_cp += len(nb.text)
                old_counted += nb.ncounted
                old_len += len(nb)
                ci -= 1
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
        for prefix, sizes in (
            (self._fcp, [len(p.text) for p in pieces]),
            (self._fcount, [p.ncounted for p in pieces]),
            (self._flen, [len(p) for p in pieces]),
        ):
            prefix.sizes[ci : cj + 1] = sizes
            prefix.reblock()
        new_counted = sum(p.ncounted for p in pieces)
        self._account(len(new_text) - old_cp, new_counted - old_counted, n - old_len)

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
            assert sum(c.cps) == len(c.text), f"chunk {k}: cps sum {sum(c.cps)} != text {len(c.text)}"
            counted = sum(1 for f in c.flags if not f & PLACEHOLDER)
            assert c.ncounted == counted, f"chunk {k}: ncounted {c.ncounted} != {counted}"
            assert c.has_ps == any(f & PIECE_START for f in c.flags), f"chunk {k}: has_ps"
            if c._cum is not None:
                assert c._cum == [0, *accumulate(c.cps)], f"chunk {k}: stale cum"
            assert len(c) <= 2 * self.load + 1 or len(chunks) == 1, f"chunk {k} too large: {len(c)}"
        assert self.total_cp == sum(len(c.text) for c in chunks), "total_cp"
        assert self.total_counted == sum(c.ncounted for c in chunks), "total_counted"
        assert self.total_tokens == sum(len(c) for c in chunks), "total_tokens"
        for k in range(len(chunks) + 1):
            assert self._fcp.prefix(k) == sum(len(c.text) for c in chunks[:k]), "prefix sums (cp)"
            assert self._flen.prefix(k) == sum(len(c) for c in chunks[:k]), "prefix sums (len)"
            assert self._fcount.prefix(k) == sum(c.ncounted for c in chunks[:k]), "prefix sums (count)"


class SeqView:
    """The queries an edit needs, answered inside one chunk when possible.

    An edit asks a few dozen questions (where is the piece start before this token, where does
    that token start, is this offset a boundary ...), nearly all about the chunk that holds the
    edit. Answering them with ``bisect`` and ``bytearray.find`` on that chunk alone keeps each
    one at C speed; anything outside the chunk falls back to the :class:`TokenSeq` method of
    the same name, so the answers are always the same.
    """

    __slots__ = ("seq", "ci", "ch", "n", "cum", "flags", "t_base", "c_base", "c_end")

    def __init__(self, seq: TokenSeq, cp: int) -> None:
        self.seq = seq
        ci, base = seq._chunk_at_cp(min(cp, max(0, seq.total_cp - 1)))
        ch = seq.chunks[ci]
        self.ci = ci
        self.ch = ch
        self.n = len(ch)
        self.cum = ch.cum()
        self.flags = ch.flags
        self.t_base = seq._flen.prefix(ci)
        self.c_base = base
        self.c_end = base + len(ch.text)

    def locate(self, cp: int) -> tuple[int, int]:
        if self.c_base <= cp < self.c_end:
            cum = self.cum
            j = bisect_right(cum, cp - self.c_base) - 1
            cps = self.ch.cps
            n = self.n
            while j < n and cps[j] == 0:
                j += 1
            if j < n:
                return self.t_base + j, self.c_base + cum[j]
        return self.seq.locate(cp)

    def token_global(self, index: int) -> tuple[int, int]:
        j = index - self.t_base
        if 0 <= j < self.n:
            return self.ci, j
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
            fl = self.flags
            k = max(fl.rfind(b, 0, j + 1) for b in _PIECE_START_BYTES)
            if k >= 0:
                return self.t_base + k
        return self.seq.prev_piece_start(index)

    def next_piece_start(self, index: int) -> int:
        j = index - self.t_base
        if 0 <= j and j + 1 < self.n:
            fl = self.flags
            best = -1
            for b in _PIECE_START_BYTES:
                k = fl.find(b, j + 1)
                if k >= 0 and (best < 0 or k < best):
                    best = k
            if best >= 0:
                return self.t_base + best
        return self.seq.next_piece_start(index)

    def piece_start_at(self, cp: int) -> int | None:
        if self.c_base <= cp < self.c_end:
            rel = cp - self.c_base
            cum = self.cum
            j = bisect_left(cum, rel)
            n = self.n
            fl = self.flags
            cps = self.ch.cps
            while j < n and cum[j] == rel:
                if fl[j] & PIECE_START:
                    return self.t_base + j
                if cps[j]:
                    return None
                j += 1
            if j < n:
                return None
        return self.seq.piece_start_at(cp)

    def slice_text(self, start: int, end: int) -> str:
        if self.c_base <= start and end <= self.c_end:
            return self.ch.text[start - self.c_base : end - self.c_base]
        return self.seq.slice_text(start, end)

    def counted_before(self, index: int) -> int:
        j = index - self.t_base
        if 0 <= j < self.n:
            ch = self.ch
            before = self.seq._fcount.prefix(self.ci)
            if ch.ncounted == self.n:
                return before + j
            return before + j - _placeholders(ch.flags[:j])
        return self.seq.counted_before(index)
