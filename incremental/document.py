"""The incremental document: a text and its token sequence, re-tokenized only around edits.

An edit is handled on two levels (the argument is written out in ``docs/algorithms.md``):

1. **Pieces.** The encoding cuts text into pieces (pre-tokens) that are tokenized
   independently. After replacing ``text[start:end]``, pieces left of a *restart* boundary and
   right of a *resync* boundary are unchanged:

   - restart: walk left from the piece holding ``start`` while the previous piece's
     :meth:`~livetok.incremental.protocol.PieceEncoding.horizon` reaches ``start`` (what decides
     that piece may have been edited). The horizons' dominance property (a piece's reading
     region that crosses a later piece start is dominated by that piece's region) makes the
     first piece whose predecessor stays left of ``start`` a safe restart;
   - resync: re-split the new text from the restart; stop at the first new boundary at or after
     the edit's end that is also an old (shifted) boundary, since the split from a boundary
     depends only on the text after it, which is unchanged there.

2. **Tokens inside a long piece.** A changed piece is encoded from scratch when short. When long
   (a CJK paragraph, a base64 line), Algorithm 1 of *Formalizing BPE Tokenization* (Berglund &
   van der Merwe) glues instead: keep the old piece's tokens left of the edit (a correct
   tokenization by Remark 3) and right of it, re-encode a window from an old token ``u_i`` to an
   old token ``u'_j``, and accept once the window's first token equals ``u_i`` and its last equals
   ``u'_j`` (Corollary 2 / Theorem 1); otherwise widen the failing side (steps 4-5, here by
   doubling the number of tokens, which keeps the halting state and so the proof).

Only the tokens that changed are replaced in the :class:`~livetok.incremental.tokenseq.TokenSeq`.
"""

from __future__ import annotations

import logging
from array import array
from dataclasses import dataclass
from itertools import chain
from typing import Any, Callable, Iterator, NamedTuple, Optional, Sequence, Tuple

from .text import sanitize
from .protocol import PieceEncoding
from .registry import get_encoding
from .tokenseq import CLEAN, PIECE_START, PLACEHOLDER, SeqView, TokenSeq

__all__ = ["Document", "EditResult", "TokenInfo", "EditStats"]

log = logging.getLogger(__name__)

#: pieces at least this long (code points) are updated by Algorithm 1 gluing
GLUE_MIN_CP = 48
#: characters of old text right of an edit read in the first re-split attempt
FIRST_WINDOW = 64


class TokenInfo(NamedTuple):
    """One token of a document."""

    index: int  #: position in the token sequence (0-based, counted tokens only)
    id: int
    bytes: bytes
    start: int  #: code point offset of the first character that starts in the token
    end: int  #: code point offset after the last such character


@dataclass(frozen=True, init=False)
class EditResult:
    """What one :meth:`Document.edit` changed."""

    version: int
    start: int  #: edit start (code points)
    old_end: int  #: end of the replaced text, old coordinates
    new_end: int  #: end of the inserted text, new coordinates
    tokens_removed: int
    tokens_added: int
    token_count: int

    def __init__(
        self,
        version: int,
        start: int,
        old_end: int,
        new_end: int,
        tokens_removed: int,
        tokens_added: int,
        token_count: int,
    ) -> None:
        # the generated __init__ of a frozen dataclass sets each field through
        # object.__setattr__ (1.6 µs here, once per edit); writing the instance dict directly
        # stores the same fields (a frozen instance still refuses attribute assignment)
        d = self.__dict__
        d["version"] = version
        d["start"] = start
        d["old_end"] = old_end
        d["new_end"] = new_end
        d["tokens_removed"] = tokens_removed
        d["tokens_added"] = tokens_added
        d["token_count"] = token_count


@dataclass
class EditStats:
    """Counters for benchmarks and the widening study (cumulative over the document's life)."""

    edits: int = 0
    pieces_resplit: int = 0
    glued_pieces: int = 0
    glue_widenings: int = 0
    window_retries: int = 0


#: code points per block of a byte-level document's first build (see ``_build_bytelevel``)
_BUILD_BLOCK = 1 << 18

#: first window (code points) of a substring's head that ``Document.count_range`` splits
_COUNT_WINDOW = 4096

#: a segment of an edit's new tokens, a plain tuple ``(kind, a, b, ids, cps, flags)`` (a
#: NamedTuple cost ~0.4 µs more per segment to build): kind 0 = the old tokens ``[a, b)`` of the
#: sequence, kept; kind 1 = new tokens ``ids`` with their code point lengths and flags
_Seg = Tuple[int, int, int, Optional[Sequence[int]], Optional[Sequence[int]], Optional[bytearray]]


class _PieceFlags(dict[Sequence[int], bytes]):
    """``flags[ids]``: the token flags of a piece whose tokens are ``ids``: each token's CLEAN
    flag, and PIECE_START on the first (made on first use)."""

    def __init__(self, clean: Any) -> None:
        super().__init__()
        self._clean = clean

    def __missing__(self, ids: Sequence[int]) -> bytes:
        clean = self._clean
        flags = bytes([clean[i] | PIECE_START if k == 0 else clean[i]
                       for k, i in enumerate(ids)])
        self[ids] = flags
        return flags


class Document:
    """A text and its exact token sequence, updated incrementally.

    >>> doc = Document("Hello world", encoding="cl100k_base")
    >>> doc.token_ids()
    [9906, 1917]
    >>> r = doc.edit(5, 5, ",")
    >>> doc.text, doc.token_ids() == doc.encoding.encode(doc.text)
    ('Hello, world', True)
    >>> doc.token_at(7).bytes
    b' world'
    """

    def __init__(
        self,
        text: str = "",
        encoding: str | PieceEncoding = "o200k_base",
        *,
        load: int = 256,
    ) -> None:
        if not isinstance(text, str):
            raise TypeError(f"Document text must be str, not {type(text).__name__}")
        enc: Any = get_encoding(encoding) if isinstance(encoding, str) else encoding
        if not isinstance(enc, PieceEncoding):
            raise TypeError(
                f"{enc!r} is not a livetok encoding: pass a name from list_encodings() or an "
                "object implementing livetok.incremental.PieceEncoding"
            )
        self._enc = enc
        self._glue = bool(getattr(enc, "supports_glue", False))
        clean = getattr(enc, "clean_starts", None)
        self._clean: Any = clean
        #: long pieces are glued over raw bytes (``encode_bytes_piece``, clean-start flags)
        self._byte_level = clean is not None and hasattr(enc, "encode_bytes_piece")
        # per-token tables of byte-level encodings, fixed for the encoding's life
        self._lead: Any = getattr(enc, "lead_counts", None)
        byte_cps = self._byte_level and getattr(self._lead, "typecode", None) == "B"
        self._seq = TokenSeq(load, cps_type="B" if byte_cps else "I")
        self.version = 0
        self.stats = EditStats()
        text = sanitize(text)
        if text:
            if self._builds_by_blocks():
                self._build_bytelevel(text)
            else:
                ids, cps, flags = self._encode_pieces(text, 0, list(enc.split(text, 0)))
                self._seq.replace(0, 0, ids, cps, flags, text)

    @classmethod
    def from_blocks(
        cls, blocks: Sequence[str], encoding: str | PieceEncoding = "o200k_base", *,
        load: int = 256, after_block: Callable[[int], None] | None = None,
    ) -> Document:
        """The document of ``"".join(blocks)``, built block by block without joining them.

        ``blocks`` are consecutive slices of a text without surrogates, cut where no piece can
        span (``Encoding.iter_blocks``). A big text whose ``str`` takes 4 bytes a character
        (one emoji suffices) then need not stay whole in memory beside the document being
        built: each block is stored by its own widest character. ``after_block(i)`` is called
        after block ``i`` is in (the server gives freed memory back to the system there).

        >>> doc = Document.from_blocks(["a = 1\\n", "b = 2\\n"], "cl100k_base")
        >>> doc.text, doc.token_ids() == doc.encoding.encode("a = 1\\nb = 2\\n")
        ('a = 1\\nb = 2\\n', True)

        Runtime complexity: as the constructor.
        """
        doc = cls("", encoding, load=load)
        if not doc._builds_by_blocks():
            return cls("".join(blocks), encoding, load=load)
        for i, block in enumerate(blocks):
            doc._build_bytelevel(block)
            if after_block is not None:
                after_block(i)
        return doc

    # -- read access --------------------------------------------------------------------------

    @property
    def encoding(self) -> Any:
        """The encoding object."""
        return self._enc

    @property
    def text(self) -> str:
        """The whole text. Runtime complexity: ``O(n)`` (joins the chunks)."""
        return self._seq.text()

    @property
    def length(self) -> int:
        """Length in code points. Runtime complexity: ``O(1)``."""
        return self._seq.total_cp

    def __len__(self) -> int:
        return self._seq.total_cp

    @property
    def token_count(self) -> int:
        """Number of tokens. Runtime complexity: ``O(1)``."""
        return self._seq.total_counted

    def token_ids(self) -> list[int]:
        """All token ids. Runtime complexity: ``O(number of tokens)``."""
        return self._seq.ids()

    def slice(self, start: int, end: int) -> str:
        """``text[start:end]`` without building the whole text.

        Runtime complexity: ``O(log n + (end - start))``.
        """
        start, end = self._check_range(start, end)
        return self._seq.slice_text(start, end)

    def token_at(self, cp_offset: int) -> TokenInfo | None:
        """The token holding the character at ``cp_offset`` (None where no token is, e.g.
        WordPiece whitespace, or at the end of the text).

        Runtime complexity: ``O(log n)``.
        """
        if not isinstance(cp_offset, int) or isinstance(cp_offset, bool):
            raise TypeError(f"offset must be int, not {type(cp_offset).__name__}")
        if not 0 <= cp_offset <= self._seq.total_cp:
            raise ValueError(
                f"offset {cp_offset} is outside the document (0..{self._seq.total_cp} code points)"
            )
        seq = self._seq
        if cp_offset >= seq.total_cp:
            return None
        ti, ts = seq.locate(cp_offset)
        tid, w, f = seq.get(ti)
        if f & PLACEHOLDER:
            return None
        return TokenInfo(seq.counted_before(ti), tid, self._enc.token_bytes(tid), ts, ts + w)

    def iter_tokens(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, int]]:
        """Yield ``(id, start_cp, end_cp)`` of the tokens overlapping ``[start, end)``.

        Tokens holding no whole character (the tail bytes of a split character) are yielded
        with ``start_cp == end_cp``.

        Runtime complexity: ``O(log n + k)`` for ``k`` tokens.
        """
        seq = self._seq
        if end is None:
            end = seq.total_cp
        start, end = self._check_range(start, end)
        if start >= end:
            return
        ti, pos = seq.locate(start)
        for tid, w, f in seq.iter_from(ti):
            if pos >= end:
                break
            if not f & PLACEHOLDER:
                yield tid, pos, pos + w
            pos += w

    def count_range(self, start: int, end: int) -> int:
        """Exact ``len(encoding.encode(text[start:end]))``, re-encoding only near the ends.

        Runtime complexity: ``O(log n + (end - start))`` for the slice, plus the pieces at the
        two ends.
        """
        start, end = self._check_range(start, end)
        if start == end:
            return 0
        enc = self._enc
        seq = self._seq
        sub = seq.slice_text(start, end)
        n = len(sub)
        if n <= 2048:
            return len(enc.encode(sub))
        # left: split the substring from its start until a boundary is also a document boundary.
        # The split runs over a window of the substring's head, grown while a piece's decision
        # reads past it: splitting all of a long substring only to take its first pieces cost
        # O(n) up front for non-ASCII text (its class codes), ~1 s for 10 MB.
        w = min(n, _COUNT_WINDOW)
        while True:
            count = 0
            q1 = None
            q1_tok = 0
            grow = w < n
            for ps, pe in enc.split(sub[:w] if w < n else sub, 0):
                h = enc.horizon(sub, ps, n)
                if h > n:
                    grow = False
                    break  # this piece read the substring's end: leave the rest to the right
                if h > w:
                    break  # decided by text past the window: grow it (w < n here)
                count += self._count_sub(start + ps, start + pe, sub[ps:pe])
                t = seq.piece_start_at(start + pe)
                if t is not None:
                    q1, q1_tok = start + pe, t
                    grow = False
                    break
            if not grow:
                break
            w = min(n, 4 * w)
        if q1 is None:
            return self._count_split(sub, start)
        # right: restart at a document piece whose predecessors did not read past `end`
        k_tok = seq.prev_piece_start(seq.locate(end - 1)[0])
        k_cp = seq.token_start_cp(k_tok)
        while k_tok > q1_tok:
            p_tok = seq.prev_piece_start(k_tok - 1)
            p_cp = seq.token_start_cp(p_tok)
            if p_cp < q1:
                break
            if enc.horizon(sub, p_cp - start, n) <= n:
                break
            k_tok, k_cp = p_tok, p_cp
        if k_tok < q1_tok or k_cp < q1:
            return self._count_split(sub, start)
        count += seq.counted_before(k_tok) - seq.counted_before(q1_tok)
        # the tail alone: a piece reads nothing left of its start, and splitting only the tail
        # keeps the split's up-front work (non-ASCII class codes) to the tail
        tail = sub[k_cp - start :]
        for ps, pe in enc.split(tail, 0):
            count += self._count_sub(k_cp + ps, k_cp + pe, tail[ps:pe])
        return count

    def _count_piece(self, piece: str, at_start: bool) -> int:
        return len(self._enc.encode_piece(piece, at_text_start=at_start))

    def _count_split(self, sub: str, start: int) -> int:
        """``len(encode(sub))`` for ``sub = text[start:start + len(sub)]``: piece by piece with
        :meth:`_count_sub` for byte-level encodings (whose pieces do not depend on where the
        text starts), else one ``encode``."""
        if not (self._glue and self._byte_level):
            return len(self._enc.encode(sub))
        return sum(
            self._count_sub(start + ps, start + pe, sub[ps:pe]) for ps, pe in self._enc.split(sub, 0)
        )

    def _count_sub(self, s: int, e: int, piece: str) -> int:
        """Tokens of ``piece == text[s:e]``, a piece of a substring's split, re-encoding only
        its ends when it lies inside one long document piece ``P = [A, B)``.

        Algorithm 1 of *Formalizing BPE Tokenization* twice, one side each (the old tokens of
        ``P`` between two of their boundaries are the tokenization of that text, Remark 3):

        1. cut at ``e < B``: re-encode ``text[u_i : e]`` from an old token ``u_i`` of ``P``
           (starting at or after ``s``, nearest ``e`` first, doubled on failure) until the first
           new token is ``u_i``; then the tokens of ``text[A:e]`` are the old ones before
           ``u_i`` and the new ones;
        2. cut at ``s > A``: re-encode ``text[s : u'_j]`` up to a token ``u'_j`` of step 1's
           tokenization that ends on a character boundary (nearest ``s`` first, doubled on
           failure) until the last new token is ``u'_j``; the tokens of ``piece`` are the new
           ones and those after ``u'_j``.

        A side whose candidates run out (the window would leave ``[s, e)``) encodes the whole
        piece, Algorithm 1's ``i = 1`` / ``j = m`` case. Short pieces, pieces across document
        pieces and encodings that are not byte-level are encoded.

        Runtime complexity: ``O(log n + load + chunks P spans)`` plus the BPE of the windows,
        ``O(w log w)`` for windows of ``w`` bytes (a few tokens on each side for real text).
        """
        if e - s < GLUE_MIN_CP or not (self._glue and self._byte_level):
            return self._count_piece(piece, s == 0)
        enc = self._enc
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

        def bpe_count(a: int, b: int) -> list[int]:
            return enc.encode_bytes_piece(piece[a - s : b - s].encode("utf-8"))

        lo = ti if ts == s else ti + 1  # the first token of P at or after s
        hi, tail = tb, 0
        if e < b_cp:
            # 1. cut at e: windows [u_i, e), glued when their first token is u_i
            got = _glue_side(_left_candidates(seq, lo, seq.locate(e)[0]),
                             lambda cp: bpe_count(cp, e), 0)
            if got is None:
                return len(bpe_count(s, e))
            hi, tail = got[0], len(got[1])
        if s == a_cp:
            return seq.counted_before(hi) - seq.counted_before(ta) + tail
        # 2. cut at s: windows [s, end of u'_j), glued when their last token is u'_j
        got = _glue_side(_right_candidates(seq, lo, hi), lambda cp: bpe_count(s, cp), -1)
        if got is None:
            return len(bpe_count(s, e))
        return len(got[1]) + seq.counted_before(hi) - seq.counted_before(got[0] + 1) + tail

    # -- editing --------------------------------------------------------------------------------

    def edit(self, start: int, end: int, new_text: str) -> EditResult:
        """Replace ``text[start:end]`` (code points) by ``new_text``; tokens follow exactly.

        Raises ``TypeError``/``ValueError`` for bad arguments, leaving the document unchanged.

        Runtime complexity: ``O(log n + w)`` where ``w`` is the re-split window (the edit plus
        the pieces around it) and the Algorithm 1 window inside long pieces.
        """
        if not isinstance(new_text, str):
            raise TypeError(f"new_text must be str, not {type(new_text).__name__}")
        seq = self._seq
        # plain ints in range skip the checks (which also accept int subclasses, not bool)
        if not (type(start) is int and type(end) is int and 0 <= start <= end <= seq.total_cp):
            start, end = self._check_range(start, end)
        new_text = sanitize(new_text)
        before = seq.total_counted
        if end - start == len(new_text) and seq.slice_text(start, end) == new_text:
            self.version += 1
            return EditResult(self.version, start, end, end, 0, 0, before)
        removed, added = self._apply(start, end, new_text)
        self.version += 1
        self.stats.edits += 1
        return EditResult(
            self.version, start, end, start + len(new_text), removed, added, seq.total_counted
        )

    def _check_range(self, start: int, end: int) -> tuple[int, int]:
        for name, v in (("start", start), ("end", end)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{name} must be an int code point offset, not {type(v).__name__}")
        n = self._seq.total_cp
        if start < 0 or end < 0:
            raise ValueError(f"negative offset ({start}, {end}): offsets count code points from 0")
        if start > end:
            raise ValueError(f"reversed range: start {start} > end {end}")
        if end > n:
            raise ValueError(f"range ({start}, {end}) runs past the end of the text ({n} code points)")
        return start, end

    def _builds_by_blocks(self) -> bool:
        """Whether the first build goes block by block (byte-level BPE with per-piece ids)."""
        return self._clean is not None and hasattr(self._enc, "encode_by_piece")

    def _build_bytelevel(self, text: str) -> None:
        """Initial build for byte-level BPE encodings, one block of text at a time.

        Blocks are cut where no piece can span (``Encoding.iter_blocks``), so their encodings
        concatenate to the text's. Going by blocks bounds what the build holds besides the
        result (one block's per-piece lists, not the whole text's: a 100 MB text peaked at
        ~30 bytes per character when encoded whole) and keeps every C call short, so a build
        in a worker thread gives the interpreter lock back often to the thread serving the
        other documents.

        Runtime complexity: ``O(n)`` regex and lookup work plus BPE of new pieces.
        """
        seq = self._seq
        for block in self._enc.iter_blocks(text, _BUILD_BLOCK):
            ids, cps, flags = self._encode_all_bytelevel(block)
            seq.replace(seq.total_tokens, seq.total_tokens, ids, cps, flags, block)

    def _encode_all_bytelevel(self, text: str) -> tuple[Any, Any, bytearray]:
        """Tokens of a text for byte-level BPE encodings, with the per-token work done in C."""
        enc = self._enc
        per_piece = enc.encode_by_piece(text)
        ids = array("I", chain.from_iterable(per_piece))
        cps = array(self._seq.cps_type, map(enc.lead_counts.__getitem__, ids))
        # the flags of each piece's tokens, PIECE_START on its first (a piece starts on a
        # character: that flag is CLEAN already), looked up by the piece's ids: most pieces
        # of a text repeat, so this is one C loop (10 MB: ~0.3 s; setting PIECE_START in a
        # loop over the 2.1 million pieces after the clean flags took ~0.8 s)
        flags = bytearray(b"".join(map(_PieceFlags(self._clean).__getitem__, per_piece)))
        return ids, cps, flags

    def _encode_pieces(
        self, text: str, base: int, spans: list[tuple[int, int]]
    ) -> tuple[list[int], list[int], bytearray]:
        """Ids, code point lengths and flags for pieces ``spans`` of ``text`` (offset ``base``)."""
        enc = self._enc
        ids: list[int] = []
        cps: list[int] = []
        flags = bytearray()
        lead = getattr(enc, "lead_counts", None)
        clean = self._clean
        for s, e in spans:
            piece = text[s:e]
            at0 = base + s == 0
            pids = enc.encode_piece(piece, at_text_start=at0)
            if not pids:
                ids.append(0)
                cps.append(e - s)
                flags.append(PIECE_START | CLEAN | PLACEHOLDER)
                continue
            k = len(ids)
            ids.extend(pids)
            if lead is not None:
                cps.extend([lead[i] for i in pids])
            else:
                cps.extend(enc.token_cp_lens(piece, pids, at_text_start=at0))
            if clean is not None:
                flags.extend([clean[i] for i in pids])
            else:
                flags.extend([CLEAN if w else 0 for w in cps[k:]])
            flags[k] |= PIECE_START | CLEAN
        return ids, cps, flags

    def _new_tokens(self, ids: Sequence[int], first_is_piece_start: bool) -> _Seg:
        lead = self._lead
        clean = self._clean
        cps = [lead[i] for i in ids]
        flags = bytearray([clean[i] for i in ids])
        if first_is_piece_start and flags:
            flags[0] |= PIECE_START
        return (1, 0, 0, ids, cps, flags)

    def _apply(self, start: int, end: int, new_text: str) -> tuple[int, int]:
        enc = self._enc
        seq = self._seq
        # every query below is about the neighbourhood of the edit: answer it in one chunk
        v = SeqView(seq, start)
        horizon = enc.horizon
        n_old = seq.total_cp
        delta = len(new_text) - (end - start)
        new_end = start + len(new_text)

        # 1. restart: the piece holding `start`, moved left while its predecessor's horizon
        #    reaches `start` (see module docstring)
        if seq.total_tokens == 0:
            r_tok, r = 0, 0
        else:
            r_tok, r = v.piece_holding(min(start, n_old - 1))
            while r_tok > 0:
                p_tok, p = v.piece_start_of(r_tok - 1)
                head = v.slice_text(p, start)
                if horizon(head, 0, len(head)) <= len(head):
                    break
                r_tok, r = p_tok, p

        # 2. re-split from r until a new boundary at/after new_end coincides with an old one.
        #    The first window reaches past the end of the old piece that holds `start`: inside
        #    one long piece (a line of CJK letters has no other boundary) the earliest possible
        #    resync is that piece's end, and each round re-splits from r.
        extra = FIRST_WINDOW
        if r_tok < seq.total_tokens:
            extra = max(extra, self._old_piece_end(v, r_tok) - end + FIRST_WINDOW)
        left_text = v.slice_text(r, start)
        while True:
            w_end_old = min(n_old, end + extra)
            window = left_text + new_text + v.slice_text(end, w_end_old)
            at_doc_end = w_end_old >= n_old
            wlen = len(window)
            spans: list[tuple[int, int]] = []
            q_tok = None
            for ps, pe in enc.split(window, 0):
                spans.append((ps, pe))
                q_new = r + pe
                # subtle: a piece's ids may depend on whether it starts the text
                # (SentencePiece's dummy prefix), so never resync where that status changed
                if q_new >= new_end and (q_new == 0) == (q_new - delta == 0):
                    t = v.piece_start_at(q_new - delta)
                    if t is not None:
                        q_tok = t
                        break
            # Every piece kept must depend on the window alone (its horizon within `wlen`).
            # Only the last one is asked: by the horizons' dominance property (protocol.py),
            # a piece `j` left of the last piece (start `s`) has `horizon(j) <= max(
            # horizon(last), s + 4)`, so `s + 4 <= wlen` and `horizon(last) <= wlen` clear
            # them all (the regex encodings' horizons are >= s + 4; for others the earlier
            # pieces are asked when `s + 4 > wlen`). So the window is accepted exactly when
            # asking every piece in turn would accept it; otherwise it grows either way.
            if q_tok is not None and not at_doc_end:
                ps = spans[-1][0]
                if horizon(window, ps, wlen) > wlen or (
                    ps + 4 > wlen
                    and any(horizon(window, s, wlen) > wlen for s, _ in spans[:-1])
                ):
                    q_tok = None
            if q_tok is not None:
                break
            if at_doc_end:
                # the window reached the end of the text: the last piece ends there
                q_tok = seq.total_tokens
                break
            # grow x4, and at least past the end of the old piece there (see above)
            extra *= 4
            if end + extra < n_old:
                t = v.piece_holding(end + extra)[0]
                extra = max(extra, self._old_piece_end(v, t) - end + FIRST_WINDOW)
            self.stats.window_retries += 1
        self.stats.pieces_resplit += len(spans)

        # 3. tokens of the new pieces, as segments (old tokens kept in place, or new ones)
        segs: list[_Seg] = []
        glue = self._glue
        encode_piece = enc.encode_piece
        lead = self._lead
        clean = self._clean
        for ps, pe in spans:
            a, b = r + ps, r + pe
            if (b <= start or a >= new_end) and (a == 0) == (
                (a if b <= start else a - delta) == 0
            ):
                oa = a if b <= start else a - delta
                ob = b if b <= start else b - delta
                old = v.old_piece(oa, ob)
                if old is not None:
                    segs.append((0, old[0], old[1], None, None, None))
                    continue
            piece = window[ps:pe]
            if glue and pe - ps >= GLUE_MIN_CP:
                segs.extend(self._glue_piece(a, b, piece, start, end, new_text, delta))
            else:
                ids = encode_piece(piece, at_text_start=a == 0)
                if ids and lead is not None and clean is not None:
                    # _piece_segment's byte-level case, inline
                    fl = bytearray([clean[i] for i in ids])
                    fl[0] |= PIECE_START
                    segs.append((1, 0, 0, ids, [lead[i] for i in ids], fl))
                else:
                    segs.append(self._piece_segment(piece, ids, a == 0))

        # 4. trim old segments that stay in place, then replace the rest in the sequence
        t0, t1 = r_tok, q_tok
        i, j = 0, len(segs)
        while i < j and segs[i][0] == 0 and segs[i][1] == t0:
            t0 = segs[i][2]
            i += 1
        while j > i and segs[j - 1][0] == 0 and segs[j - 1][2] == t1:
            t1 = segs[j - 1][1]
            j -= 1
        ids: list[int] = []
        cps: list[int] = []
        flags = bytearray()
        for kind, sa, sb, s_ids, s_cps, s_flags in segs[i:j]:
            if kind == 1:
                ids.extend(s_ids)  # type: ignore[arg-type]
                cps.extend(s_cps)  # type: ignore[arg-type]
                flags += s_flags  # type: ignore[operator]
            else:
                for tid, w, f in _take(seq.iter_from(sa), sb - sa):
                    ids.append(tid)
                    cps.append(w)
                    flags.append(f)
        c0 = v.token_start_cp(t0)
        c1 = v.token_start_cp(t1) if t1 < seq.total_tokens else n_old
        # subtle: trimming never crosses the edit (only unchanged pieces become old segments)
        assert r <= c0 <= start and end <= c1 <= w_end_old, (c0, c1, start, end)
        # the new text of [c0, c1) lies in the window, which is the new text of [r, w_end_old)
        text = window[c0 - r : c1 + delta - r]
        removed = v.counted_between(t0, t1)
        seq.replace(t0, t1, ids, cps, flags, text, v)
        # a placeholder token is always a whole piece: PIECE_START | CLEAN | PLACEHOLDER
        added = len(ids) - flags.count(PIECE_START | CLEAN | PLACEHOLDER)
        return removed, added

    @staticmethod
    def _old_piece_end(v: SeqView, tok: int) -> int:
        """Where the old piece holding token ``tok`` ends (code points; the text's end for the
        last piece).

        Runtime complexity: ``O(log C + load + chunks the piece spans)``.
        """
        nxt = v.next_piece_start(tok)
        return v.token_start_cp(nxt) if nxt < v.seq.total_tokens else v.seq.total_cp

    def _piece_segment(self, piece: str, ids: Sequence[int], at0: bool) -> _Seg:
        if not ids:
            return (1, 0, 0, [0], [len(piece)], bytearray([PIECE_START | CLEAN | PLACEHOLDER]))
        if self._lead is not None and self._clean is not None:
            return self._new_tokens(ids, True)
        return self._generic_tokens(piece, ids, True, at0)

    def _generic_tokens(self, text: str, ids: Sequence[int], piece_start: bool, at0: bool) -> _Seg:
        """Tokens of any protocol encoding: code points from ``token_cp_lens``; a token is
        taken to start on a character boundary when it covers at least one code point (a
        byte-fallback run gives its characters to its first token)."""
        cps = list(self._enc.token_cp_lens(text, ids, at_text_start=at0))
        flags = bytearray([CLEAN if w else 0 for w in cps])
        if piece_start and flags:
            flags[0] |= PIECE_START | CLEAN
        return (1, 0, 0, ids, cps, flags)

    def _glue_piece(
        self, a: int, b: int, piece: str, start: int, end: int, new_text: str, delta: int
    ) -> list[_Seg]:
        """Tokens of the changed long piece ``[a, b)`` (new coordinates) by Algorithm 1.

        ``tau1`` = old tokens of the old piece starting at ``a`` that end by ``start``;
        ``tau2`` = old tokens of the old piece ending at ``b`` (old ``b - delta``) that start at
        or after ``end``. Both are correct tokenizations of their text (Remark 3).
        """
        enc = self._enc
        seq = self._seq
        byte_level = self._byte_level
        # tau1: tokens [l_lo, l_hi) of the old piece starting at `a` that end by `start`
        # subtle: a changed piece can lie wholly left (or right) of the edit when the edit
        # changed only what its split read, so both sides are also clipped to [a, b)
        lstop = min(start, b)
        l_lo = seq.piece_start_at(a) if a < lstop else None
        left_it: Iterator[tuple[int, int, int]] = iter(())
        if l_lo is not None:
            l_hi = min(
                seq.locate(lstop)[0] if lstop < seq.total_cp else seq.total_tokens,
                seq.next_piece_start(l_lo),
            )
            if l_hi > l_lo:
                left_it = _left_candidates(seq, l_lo, l_hi)
        # tau2: tokens [r_lo, r_hi) of the old piece ending at `b - delta` that start at `end`+
        ob = b - delta
        rstart = max(end, a - delta)
        r_hi = seq.piece_start_at(ob) if ob > rstart else None
        right_it: Iterator[tuple[int, int, int]] = iter(())
        if r_hi is not None and r_hi > 0:
            ti, ts = seq.locate(rstart)
            r_lo = max(ti if ts == rstart else ti + 1, seq.prev_piece_start(r_hi - 1))
            if r_hi > r_lo:
                right_it = _right_candidates(seq, r_lo, r_hi)
        left: list[tuple[int, int, int]] = []  # (token index, start cp, id), nearest first
        right: list[tuple[int, int, int]] = []  # (token index, end cp (old), id), nearest first
        nl = 1 if _fill(left, left_it, 1) else 0
        nr = 1 if _fill(right, right_it, 1) else 0
        while True:
            li, lcp, lid = left[nl - 1] if nl else (-1, a, -1)
            if nr:
                ri, rcp_old, rid = right[nr - 1]
                rcp = rcp_old + delta
            else:
                ri, rcp, rid = -1, b, -1
            # step 2 of Algorithm 1: tokenize u_i ... u_n (middle) u'_1 ... u'_j
            wtext = piece[lcp - a : rcp - a]
            if byte_level:
                v = enc.encode_bytes_piece(wtext.encode("utf-8"))
            else:
                v = enc.encode_piece(wtext, at_text_start=lcp == 0)
            # step 3: glue once the boundary tokens agree (or a side reached the piece's end)
            left_ok = lcp == a or v[0] == lid
            right_ok = rcp == b or v[-1] == rid
            if left_ok and right_ok:
                break
            self.stats.glue_widenings += 1
            # steps 4-5, widening by doubling the number of old tokens re-encoded
            if not left_ok:
                nl = _widen(left, left_it, nl)
            if not right_ok:
                nr = _widen(right, right_it, nr)
        self.stats.glued_pieces += 1
        segs: list[_Seg] = []
        if nl and l_lo is not None and li > l_lo:
            segs.append((0, l_lo, li, None, None, None))
        if byte_level:
            segs.append(self._new_tokens(v, lcp == a))
        else:
            segs.append(self._generic_tokens(wtext, v, lcp == a, lcp == 0))
        if nr and r_hi is not None and ri + 1 < r_hi:
            segs.append((0, ri + 1, r_hi, None, None, None))
        return segs

    # -- invariants -------------------------------------------------------------------------------

    def _check(self) -> None:
        """Assert every invariant, including equality with a full re-encode (slow: tests only)."""
        seq = self._seq
        seq._check()
        text = seq.text()
        enc = self._enc
        spans = list(enc.split(text, 0))
        want_ids, want_cps, want_flags = self._encode_pieces(text, 0, spans)
        got_ids = [i for c in seq.chunks for i in c.ids]
        got_cps = [w for c in seq.chunks for w in c.cps]
        got_flags = bytearray(b"".join(bytes(c.flags) for c in seq.chunks))
        if got_ids != want_ids or got_flags != want_flags or got_cps != want_cps:
            k = next(
                (i for i, (x, y) in enumerate(zip(got_ids, want_ids)) if x != y),
                min(len(got_ids), len(want_ids)),
            )
            raise AssertionError(
                f"token sequence differs from a full encode at token {k}: "
                f"got {got_ids[max(0, k - 3):k + 4]} want {want_ids[max(0, k - 3):k + 4]}; "
                f"flags got {list(got_flags[max(0, k - 3):k + 4])} "
                f"want {list(want_flags[max(0, k - 3):k + 4])}; text {text!r:.200}"
            )
        assert seq.total_counted == len(enc.encode(text)), "count differs from encode()"


def _fill(lst: list[Any], it: Iterator[Any], k: int) -> bool:
    """Pull from ``it`` until ``lst`` has ``k`` items; False if it ran out first."""
    while len(lst) < k:
        x = next(it, None)
        if x is None:
            return False
        lst.append(x)
    return True


def _widen(lst: list[Any], it: Iterator[Any], n: int) -> int:
    """Double the number of candidates used; 0 once none are left (window reaches the piece
    boundary, the "i = 1" / "j = m" case of Algorithm 1)."""
    if _fill(lst, it, 2 * n):
        return 2 * n
    return len(lst) if len(lst) > n else 0


def _glue_side(
    candidates: Iterator[tuple[int, int, int]], encode_to: Any, end: int
) -> tuple[int, Sequence[int]] | None:
    """One side of Algorithm 1: for old tokens ``(index, cp, id)`` from ``candidates`` (nearest
    the cut first, doubled on each failure as in :meth:`Document._glue_piece`), re-encode the
    window ``encode_to(cp)`` until its token at ``end`` (0: first, -1: last) is the candidate.

    Returns ``(index, window tokens)``, or None when the candidates run out.
    """
    cands: list[tuple[int, int, int]] = []
    k = 1 if _fill(cands, candidates, 1) else 0
    while k:
        index, cp, tid = cands[k - 1]
        v = encode_to(cp)
        if v[end] == tid:
            return index, v
        k = _widen(cands, candidates, k)
    return None


def _left_candidates(seq: TokenSeq, lo: int, hi: int) -> Iterator[tuple[int, int, int]]:
    """Tokens of ``[lo, hi)`` that start on a character boundary, right to left."""
    pos = seq.token_start_cp(hi)
    idx = hi
    for tid, w, f in seq.iter_back(hi):
        idx -= 1
        pos -= w
        if idx < lo:
            return
        if f & CLEAN:
            yield idx, pos, tid


def _right_candidates(seq: TokenSeq, lo: int, hi: int) -> Iterator[tuple[int, int, int]]:
    """Tokens of ``[lo, hi)`` that end on a character boundary, left to right."""
    pos = seq.token_start_cp(lo)
    idx = lo
    pending: tuple[int, int] | None = None
    for tid, w, f in seq.iter_from(lo):
        if idx >= hi:
            break
        if pending is not None and f & CLEAN:
            yield pending[0], pos, pending[1]
        pos += w
        pending = (idx, tid)
        idx += 1
    if pending is not None:
        yield pending[0], pos, pending[1]  # the piece's last token ends on its boundary


def _take(it: Iterator[Any], n: int) -> Iterator[Any]:
    for k, x in enumerate(it):
        if k >= n:
            break
        yield x
