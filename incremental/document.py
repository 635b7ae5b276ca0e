"""The incremental document: a text and its token sequence, re-tokenized only around edits.

:meth:`Document.edit` (and :meth:`Document.edit_at`, which the server calls with line and
column places) first asks :meth:`~Document._stretch`: an edit at least two margins inside a
long *quiet* piece (:class:`~livetok.incremental.piece_encoding.QuietEncoding`) keeps every
boundary, so the piece only grows or shrinks and Algorithm 1 glues its tokens (steps 3-4
below, without 1-2). Then :meth:`~Document._local`: an edit inside long quiet runs that makes
new boundaries near itself (a letter or a space typed into a line of emoji or CJK letters)
has them decided by a window around it
(:class:`~livetok.incremental.piece_encoding.InnerEncoding`), and steps 3-4 glue the long
pieces on each side. Otherwise it takes four named steps (the argument for each is in
``docs/algorithms.md``, sections 2-4):

1. :meth:`~Document._restart` — the pieces left of a *restart* boundary are unchanged: walk left
   from the piece holding ``start`` while the previous piece's
   :meth:`~livetok.incremental.piece_encoding.PieceEncoding.horizon` reaches ``start`` (the horizons'
   dominance property makes the first piece whose predecessor stays left of ``start`` safe);
2. :meth:`~Document._resplit` — re-split the new text from there until a new boundary at or
   after the edit's end is also an old (shifted) boundary: the split from a boundary depends
   only on the text after it, unchanged there;
3. :meth:`~Document._segments` — the tokens of the new pieces: an unchanged piece keeps its
   old tokens, a short changed piece is encoded, a long one is glued by Algorithm 1 of
   *Formalizing BPE Tokenization* (:mod:`.glue`, in :meth:`~Document._glue_piece`);
4. :meth:`~Document._splice` — only the tokens that changed are replaced in the
   :class:`~livetok.incremental.tokenseq.TokenSeq` (:meth:`TokenSeq.replace`).

Ranges are counted by :class:`.range_count.RangeCounter`.

One concept: the document, one class: its read access, its first build (whole, or block by
block with the helpers the server's forked processes call: :func:`block_tokens`), the four
edit steps above and the invariants that tie them together (:meth:`Document._check`). The
steps share the document's state (its token sequence, the encoding's per-token tables) and
hand each other their intermediate results (``_Resplit``, ``_Seg``), so apart they would
trade private state across files; what stands alone already lives elsewhere: the token
sequence (:mod:`.tokenseq`), Algorithm 1 (:mod:`.glue`), range counts (:mod:`.range_count`).
"""

from __future__ import annotations

import logging
from array import array
from dataclasses import dataclass
from itertools import chain, compress, count, islice
from bisect import bisect_left
from operator import attrgetter, itemgetter, sub
from typing import (Callable, Iterable, Iterator, List, NamedTuple, Optional, Protocol, Sequence,
                    Set, Tuple, TypeVar)

from .columns import Spot, Unit, spot_cp
from .range_count import RangeCounter
from .gcpause import collector_paused as _collector_paused
from .glue import GLUE_MIN_CP, glue
from .piece_encoding import (ByteLevelEncoding, PieceEncoding, byte_level, check_encoding,
                             inner_side, quiet_side)
from .text import sanitize
from .tokenseq import CLEAN, PIECE_START, PLACEHOLDER, SeqView, TokenSeq

__all__ = ["Document", "EditResult", "PlacedEdit", "TokenInfo", "EditStats", "BlockTokens",
           "block_tokens", "block_cps_type"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: characters of old text right of an edit read in the first re-split attempt
FIRST_WINDOW = 64
#: quiet characters of old text on each side of the window :meth:`Document._local` splits
LOCAL_PAD = 32
#: an edit goes to :meth:`Document._local` when the old piece holding it reaches this far from
#: it (shorter pieces cost the general steps less than the window's checks)
LOCAL_MIN_CP = 1024


class TokenInfo(NamedTuple):
    """One token of a document."""

    #: position in the token sequence (0-based, counted tokens only)
    index: int  # type: ignore[assignment]  # (a field named like tuple.index)
    id: int
    bytes: bytes
    start: int  #: code point offset of the first character that starts in the token
    end: int  #: code point offset after the last such character


class EditResult(NamedTuple):
    """What one :meth:`Document.edit` changed (immutable; a ``NamedTuple``, the cheapest typed
    record to build once per edit: ``docs/algorithms.md`` section 4)."""

    version: int
    start: int  #: edit start (code points)
    old_end: int  #: end of the replaced text, old coordinates
    new_end: int  #: end of the inserted text, new coordinates
    tokens_removed: int
    tokens_added: int
    token_count: int


class PlacedEdit(NamedTuple):
    """What one :meth:`Document.edit_at` did: the edit's result, the code point span it
    replaced (``swapped``: the places came end first), and the characters just outside that
    span in the text (``""`` at its ends, or when not asked for)."""

    result: EditResult
    start: int
    end: int
    before: str
    after: str
    swapped: bool


@dataclass
class EditStats:
    """Counters for benchmarks and the widening study (cumulative over the document's life)."""

    edits: int = 0
    pieces_resplit: int = 0
    glued_pieces: int = 0
    glue_widenings: int = 0
    window_retries: int = 0
    #: edits inside a long piece whose boundaries stayed (:meth:`Document._stretch`)
    stretched: int = 0
    #: changed pieces encoded in bulk (:meth:`Document._bulk_segment`: a line of digits)
    bulk_pieces: int = 0
    #: edits inside quiet runs whose new boundaries a window around them decided
    #: (:meth:`Document._local`)
    local: int = 0


#: code points per block of a byte-level document's first build (see ``_build_bytelevel``)
_BUILD_BLOCK = 1 << 18

#: a segment of an edit's new tokens, a plain tuple ``(kind, a, b, ids, cps, flags)`` (cheaper
#: than a NamedTuple, ``docs/algorithms.md`` section 4): kind 0 = the old tokens ``[a, b)`` of
#: the sequence, kept; kind 1 = new tokens ``ids`` with their code point lengths and flags
_Seg = Tuple[int, int, int, Optional[Sequence[int]], Optional[Sequence[int]], Optional[bytearray]]

class _Sliced(Protocol):
    """A text read by plain slices: a ``str``, or the new text of a long piece read lazily
    (:class:`_EditedText`, :class:`_Sub`)."""

    def __len__(self) -> int: ...

    def __getitem__(self, key: slice) -> str: ...


#: what :meth:`Document._resplit` found: ``(window, spans, q_tok, w_end_old, old_starts)``:
#: the new text of ``[r, w_end_old)`` (old coordinates of the end), its pieces (offsets in the
#: window), the old token where the old pieces resume, and the old piece starts of
#: ``[end, w_end_old]`` when it gathered them (else None)
_Resplit = Tuple["_Sliced", List[Tuple[int, int]], int, int, Optional[Set[int]]]
#: old tokens kept between two changed places that :meth:`Document._splice` leaves in place
#: (replacing the runs on each side apart) rather than copy into one replacement
_KEEP_OLD_RUN = 256
#: boundaries past an edit checked one by one for an old piece start before they are checked
#: against the set of the window's old piece starts (``TokenSeq.piece_starts``)
_ASK_MAX = 16


#: ``flags.translate(_WITH_PIECE_START)``: the flags with PIECE_START set
_WITH_PIECE_START = bytes(f | PIECE_START for f in range(256))


class _PieceFlags(dict[Sequence[int], bytes]):
    """``flags[ids]``: the token flags of a piece whose tokens are ``ids``: each token's CLEAN
    flag, and PIECE_START on the first (made on first use)."""

    def __init__(self, clean: bytearray) -> None:
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

    >>> from livetok.incremental import get_encoding
    >>> doc = Document("Hello world", get_encoding("cl100k_base"))
    >>> doc.token_ids()
    [9906, 1917]
    >>> r = doc.edit(5, 5, ",")
    >>> doc.text, doc.token_ids() == doc.encoding.encode(doc.text)
    ('Hello, world', True)
    >>> doc.token_at(7).bytes
    b' world'
    """

    def __init__(self, text: str, encoding: PieceEncoding, *, load: int = 256) -> None:
        """The document of ``text`` under ``encoding``, an encoding object (a name is looked up
        by :func:`livetok.incremental.get_encoding`, the package's face: the document does
        not know the registry). ``load``: tokens per chunk of the token sequence."""
        if not isinstance(text, str):
            raise TypeError(f"Document text must be str, not {type(text).__name__}")
        enc = _checked(encoding)
        self._enc: PieceEncoding = enc
        #: the encoding's byte-level side (per-token tables, raw-byte BPE), or None
        bl = self._bl = byte_level(enc)
        # its per-token tables, fixed for the encoding's life (read on every edit)
        self._lead = bl.lead_counts if bl is not None else None
        self._clean = bl.clean_starts if bl is not None else None
        #: long changed pieces are glued (Algorithm 1) rather than encoded whole
        self._glue = enc.supports_glue
        #: the encoding's local boundaries (:class:`.piece_encoding.QuietEncoding`), for edits deep
        #: inside a long piece (:meth:`_stretch`); None when it does not offer them
        self._quiet = quiet_side(enc) if self._glue else None
        #: the same encoding when it also decides new boundaries inside quiet runs from a window
        #: (:class:`.piece_encoding.InnerEncoding`), for :meth:`_local`; None otherwise
        self._inner = inner_side(enc) if self._quiet is not None and self._bl is not None else None
        #: ``id(text) -> (text, run classes)`` of chunk texts read by :meth:`_run_classes`
        self._classes: dict[int, tuple[str, int]] = {}
        #: ``glue_ok(piece)``: whether a piece may be glued, given the whole piece (or, for a
        #: stretch, its first GLUE_MIN_CP code points); an encoding may refuse some pieces
        #: (a tokenizer.json piece that starts with an added token opening a segment, an NFC
        #: file's piece holding a character NFC may change: ``hf/bytelevel_nfc.py``)
        self._glue_ok: Callable[[str], bool] = getattr(enc, "glue_ok", _any_piece)
        # a byte-level token covers at most as many characters as it has bytes: one byte each
        byte_cps = self._lead is not None and self._lead.typecode == "B"
        self._seq = TokenSeq(load, cps_type="B" if byte_cps else "I")
        self._counter = RangeCounter(self._seq, enc, self._bl)
        self.version = 0
        self.stats = EditStats()
        text = sanitize(text)
        if text:
            if self._bl is not None:
                self._build_bytelevel(self._bl, text)
            else:
                ids, cps, flags = self._encode_pieces(text, 0, list(enc.split(text, 0)))
                self._seq.replace(0, 0, ids, cps, flags, text)
            self._warm_classes()

    @classmethod
    def from_blocks(
        cls, blocks: Sequence[str], encoding: PieceEncoding, *,
        load: int = 256, after_block: Callable[[int], None] | None = None,
        on_count: Callable[[int], None] | None = None,
    ) -> Document:
        """The document of ``"".join(blocks)``, built block by block without joining them.

        ``blocks`` are consecutive slices of a text without surrogates, cut where no piece can
        span (``Encoding.iter_blocks``). A big text whose ``str`` takes 4 bytes a character
        (one emoji suffices) then need not stay whole in memory beside the document being
        built: each block is stored by its own widest character. ``after_block(i)`` is called
        after block ``i`` is in (the server gives freed memory back to the system there).

        With ``on_count``, the build takes two passes: every block is encoded first, then
        ``on_count(n)`` gets the text's exact token count (the server publishes it at once),
        then the token sequence is built from those same ids (nothing is encoded twice). The
        encoded pieces of all blocks are held meanwhile (about a pointer a piece).

        >>> counts = []
        >>> from livetok.incremental import get_encoding
        >>> doc = Document.from_blocks(["a = 1\\n", "b = 2\\n"], get_encoding("cl100k_base"),
        ...                            on_count=counts.append)
        >>> doc.text, doc.token_ids() == doc.encoding.encode("a = 1\\nb = 2\\n")
        ('a = 1\\nb = 2\\n', True)
        >>> counts == [doc.token_count]
        True

        Runtime complexity: as the constructor.
        """
        bl = byte_level(_checked(encoding))
        if bl is None:
            doc = cls("".join(blocks), encoding, load=load)
            if on_count is not None:
                on_count(doc.token_count)
            return doc
        if on_count is None:
            doc = cls("", encoding, load=load)
            for i, block in enumerate(blocks):
                doc._build_bytelevel(bl, block)
                if after_block is not None:
                    after_block(i)
            doc._warm_classes()
            return doc
        with _collector_paused():
            # the encode pass: the ids of every piece, whose count is the first one published
            encoded = [[bl.encode_by_piece(b) for b in bl.iter_blocks(block, _BUILD_BLOCK)]
                       for block in blocks]
            on_count(sum(len(ids) for per_block in encoded for per_piece in per_block
                         for ids in per_piece))
            # subtle: made after the count, as the encoding's per-token tables (built for its
            # first document, ~0.1 s for o200k_base) are not needed to count
            doc = cls("", encoding, load=load)
            for i, block in enumerate(blocks):
                per_block, encoded[i] = encoded[i], []
                doc._add_blocks(bl, bl.iter_blocks(block, _BUILD_BLOCK), per_block)
                if after_block is not None:
                    after_block(i)
        doc._warm_classes()
        return doc

    # -- read access --------------------------------------------------------------------------

    @property
    def encoding(self) -> PieceEncoding:
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

        >>> from livetok.incremental import get_encoding
        >>> Document("Hello world, hello", get_encoding("cl100k_base")).count_range(6, 18)
        3

        Runtime complexity: ``O(log n + (end - start))`` for the slice, plus the pieces at the
        two ends.
        """
        start, end = self._check_range(start, end)
        if start == end:
            return 0
        return self._counter.count(start, end)

    # -- editing --------------------------------------------------------------------------------

    def edit(self, start: int, end: int, new_text: str) -> EditResult:
        """Replace ``text[start:end]`` (code points) by ``new_text``; tokens follow exactly.

        Raises ``TypeError``/``ValueError`` for bad arguments, leaving the document unchanged.

        >>> from livetok.incremental import get_encoding
        >>> doc = Document("Hello world", get_encoding("cl100k_base"))
        >>> doc.edit(6, 11, "there").tokens_added, doc.text
        (1, 'Hello there')

        Runtime complexity: ``O(log n + w)`` where ``w`` is the re-split window (the edit plus
        the pieces around it) and the Algorithm 1 window inside long pieces.
        """
        if not isinstance(new_text, str):
            raise TypeError(f"new_text must be str, not {type(new_text).__name__}")
        seq = self._seq
        # plain ints in range skip the checks (which also accept int subclasses, not bool)
        if not (type(start) is int and type(end) is int and 0 <= start <= end <= seq.total_cp):
            start, end = self._check_range(start, end)
        if not new_text.isascii():  # (sanitize's own first test, without its call)
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

    def edit_at(self, a: Spot, b: Spot, new_text: str, unit: Unit,
                around: bool = False) -> PlacedEdit:
        """Replace the text between places ``a`` and ``b`` (a line and a column in ``unit``,
        :mod:`.columns`) by ``new_text``: the columns are converted on this document's text,
        then :meth:`edit` runs; a language server's keystroke is one call into the core.

        The characters just outside the replaced span (a line index's business at a line
        break) are read when ``around`` is asked, when the places are on two lines or came
        end first, or when the span is a whole line's content.

        >>> from livetok.incremental import get_encoding
        >>> doc = Document("a😀b\\nc", get_encoding("cl100k_base"))
        >>> p = doc.edit_at(Spot(0, 3, 3, True), Spot(0, 3, 3, True), "!", "utf-16")
        >>> p.start, p.end, doc.text
        (2, 2, 'a😀!b\\nc')

        Runtime complexity: :meth:`edit`'s, plus ``O(log n + column)`` for a place on a
        line that is read.
        """
        read = self.slice
        # a place on a line the unit counts in code points needs no reading (spot_cp, inline)
        start = min(a.content_end, a.line_start + a.col) if not a.read else spot_cp(a, read, unit)
        end = start if b == a else (min(b.content_end, b.line_start + b.col) if not b.read
                                    else spot_cp(b, read, unit))
        swapped = start > end
        if swapped:
            start, end = end, start
        before = after = ""
        if around or swapped or a.line_start != b.line_start or (
                start == a.line_start and end == b.content_end):
            total = self._seq.total_cp
            before = read(start - 1, start) if start > 0 else ""
            after = read(end, end + 1) if end < total else ""
        return PlacedEdit(self.edit(start, end, new_text), start, end, before, after, swapped)

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

    def _build_bytelevel(self, bl: ByteLevelEncoding, text: str) -> None:
        """Initial build for byte-level BPE encodings, one block of text at a time.

        Blocks are cut where no piece can span (``Encoding.iter_blocks``), so their encodings
        concatenate to the text's. Going by blocks bounds what the build holds besides the
        result (one block's per-piece lists, not the whole text's) and keeps every C call
        short, so a build in a worker thread gives the interpreter lock back often to the
        thread serving the other documents (measured: ``docs/algorithms.md`` section 1).

        Runtime complexity: ``O(n)`` regex and lookup work plus BPE of new pieces.
        """
        self._add_blocks(bl, bl.iter_blocks(text, _BUILD_BLOCK), None)

    def _add_blocks(self, bl: ByteLevelEncoding, blocks: Iterable[str],
                    encoded: list[list[Sequence[int]]] | None) -> None:
        """Append ``blocks`` (cut by ``iter_blocks``) to the token sequence, each with its
        pieces' ids from ``encoded`` (the encode pass of :meth:`from_blocks`) or encoded here.

        Runtime complexity: ``O(n)`` lookups plus BPE of new pieces when ``encoded`` is None.
        """
        seq = self._seq
        for k, block in enumerate(blocks):
            per_piece = bl.encode_by_piece(block) if encoded is None else encoded[k]
            ids, cps, flags = _token_arrays(bl, per_piece, seq.cps_type)
            seq.replace(seq.total_tokens, seq.total_tokens, ids, cps, flags, block)

    @classmethod
    def from_block_tokens(
        cls, blocks: Sequence[str], tokens: Sequence[BlockTokens],
        encoding: PieceEncoding, *, load: int = 256,
    ) -> Document:
        """The document of ``"".join(blocks)`` from each block's :func:`block_tokens`
        computed elsewhere (the server's forked processes): nothing is encoded here.

        >>> from livetok.incremental import get_encoding
        >>> enc = get_encoding("cl100k_base")
        >>> blocks = ["a = 1\\n", "b = 2\\n"]
        >>> doc = Document.from_block_tokens(
        ...     blocks, [block_tokens(enc, b, block_cps_type(enc)) for b in blocks], enc)
        >>> doc.token_ids() == enc.encode("a = 1\\nb = 2\\n")
        True

        Runtime complexity: ``O(n)`` (the token sequence's build).
        """
        doc = cls("", encoding, load=load)
        seq = doc._seq
        if doc._bl is None or len(blocks) != len(tokens):
            raise ValueError("block tokens need a byte-level encoding and one entry per block")
        for block, (ids, cps, flags) in zip(blocks, tokens):
            seq.replace(seq.total_tokens, seq.total_tokens, ids, cps, flags, block)
        doc._warm_classes()
        return doc

    def _encode_pieces(
        self, text: str, base: int, spans: list[tuple[int, int]]
    ) -> tuple[list[int], list[int], bytearray]:
        """Ids, code point lengths and flags for pieces ``spans`` of ``text`` (offset ``base``)."""
        enc = self._enc
        bl = self._bl
        ids: list[int] = []
        cps: list[int] = []
        flags = bytearray()
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
            if bl is not None:
                lead, clean = bl.lead_counts, bl.clean_starts
                cps.extend([lead[i] for i in pids])
                flags.extend([clean[i] for i in pids])
            else:
                cps.extend(enc.token_cp_lens(piece, pids, at_text_start=at0))
                flags.extend([CLEAN if w else 0 for w in cps[k:]])
            flags[k] |= PIECE_START | CLEAN
        return ids, cps, flags

    def _apply(self, start: int, end: int, new_text: str) -> tuple[int, int]:
        """The stretch, else the four steps (module docstring); returns (tokens removed, tokens
        added)."""
        # every query of the steps is about the neighbourhood of the edit: answered in one chunk
        v = SeqView(self._seq, start)
        seq = self._seq
        if seq.total_tokens == 0:
            held = (0, 0)
        else:
            # the piece holding the edit, found once for the stretch and the restart
            held = v.piece_holding(min(start, seq.total_cp - 1))
            q = self._quiet
            # (an ordinary keystroke is too near its piece's start to be a stretch: no call)
            if q is not None and start - held[1] >= 2 * q.quiet_margin and start < seq.total_cp:
                done = self._stretch(v, held, start, end, new_text)
                if done is not None:
                    return done
        # the piece before it (the restart's first question, asked here for _local)
        pred = v.piece_start_of(held[0] - 1) if held[0] > 0 else None
        nxt = None  # the piece after it, when asked here (the re-split asks it too)
        if self._inner is not None and start < seq.total_cp:
            nxt = v.next_piece_start(held[0])
            if (start - held[1] >= LOCAL_MIN_CP
                    or (pred is not None and start - pred[1] >= LOCAL_MIN_CP)
                    # (a piece of 16 tokens or more may be long: its end is looked up)
                    or (nxt - held[0] >= 16
                        and self._old_piece_end(v, held[0]) - end >= LOCAL_MIN_CP)):
                done = self._local(v, start, end, new_text)
                if done is not None:
                    return done
        r_tok, r, left_text = self._restart(v, held, pred, start)
        rs = self._resplit(v, r_tok, r, left_text, start, end, new_text,
                           nxt if r_tok == held[0] else None)
        segs = self._segments(v, r, r_tok, rs, start, end, new_text)
        return self._splice(v, r, r_tok, rs, segs, start, end)

    def _stretch(self, v: SeqView, held: tuple[int, int], start: int, end: int, new_text: str
                 ) -> tuple[int, int] | None:
        """Steps 1-4 for an edit at least ``2 M`` inside a long old piece ``[a, b)`` whose new
        text around it is quiet (:class:`.piece_encoding.QuietEncoding`, ``M`` its margin): the
        boundaries are the old ones, the piece becomes ``[a, b + delta)``, and Algorithm 1
        re-tokenizes it from the edit outwards (:meth:`_glue_piece`) over the new text read
        lazily (:class:`_EditedText`), so nothing is read or split to the piece's ends. None
        when the edit does not qualify (the general steps then run). ``held``: the first token
        and the start of the old piece holding ``start < total_cp``.

        Runtime complexity: ``O(log n + M + len(new_text))`` plus the glue's window.
        """
        q = self._quiet
        assert q is not None
        m2 = 2 * q.quiet_margin
        p_tok, a = held
        if start - a < m2:
            return None
        b = self._old_piece_end(v, p_tok)
        if b - end < m2 or b - a < GLUE_MIN_CP:
            return None
        if not q.quiet(v.slice_text(start - m2, start) + new_text + v.slice_text(end, end + m2)):
            return None
        if end > start and not q.quiet(v.slice_text(start - m2, end + m2)):
            return None  # the replaced text too (o200k's letter runs: pretokenize.quiet)
        if not self._glue_ok(v.slice_text(a, a + GLUE_MIN_CP)):
            return None
        delta = len(new_text) - (end - start)
        view = _EditedText(v, a, b, start, end, new_text)
        segs = self._glue_piece(a, b + delta, view, start, end, delta)
        q_tok = v.next_piece_start(p_tok)
        self.stats.stretched += 1
        return self._splice(v, a, p_tok, (view, [(0, b + delta - a)], q_tok, b, None),
                            segs, start, end)

    def _local(self, v: SeqView, start: int, end: int, new_text: str) -> tuple[int, int] | None:
        """Steps 1-4 for an edit inside a long piece that makes new boundaries near itself (an
        ASCII letter or a space typed into a line of emoji): a window of new text whose first
        and last :data:`LOCAL_PAD` characters are quiet old text, each inside one old piece
        that reaches 3 characters past the window, is split by the encoding
        (:meth:`.piece_encoding.InnerEncoding.inner_boundaries`, which has the argument); the
        new pieces run from the start ``a`` of the left one to the end ``b`` of the right one,
        and are glued by Algorithm 1 over the new text read lazily (:class:`_EditedText`), so
        nothing is read or split to the pieces' ends. None when no window qualifies (the
        general steps then run).

        Runtime complexity: ``O(log n + LOCAL_PAD + len(new_text))`` plus the glue's windows
        and the piece before ``a`` (its horizon).
        """
        inner = self._inner
        assert inner is not None
        seq = self._seq
        n = seq.total_cp
        pad = LOCAL_PAD
        quiet = inner.quiet
        left = right = None
        for k in (1, 2, 4):  # the pads may have to step over what was typed before
            s0 = start - k * pad
            if s0 < 3:
                break
            l_tok, a = v.piece_holding(s0)
            if s0 - a >= 3 and self._old_piece_end(v, l_tok) >= s0 + pad and quiet(
                    v.slice_text(s0, s0 + pad)):
                left = (s0, l_tok, a)
                break
        for k in (1, 2, 4):
            e0 = end + k * pad
            if e0 + 3 > n:
                break
            r_tok, y = v.piece_holding(e0 - 1)
            b = self._old_piece_end(v, r_tok)
            if b - e0 >= 3 and y <= e0 - pad and quiet(v.slice_text(e0 - pad, e0)):
                right = (e0, r_tok, b)
                break
        if left is None or right is None:
            return None
        s0, l_tok, a = left
        e0, r_tok, b = right
        # (no earlier piece reads the edit: one that reads past its end, o200k's letter piece
        # backtracking over upper-case letters, reads no quiet character, and the left pad
        # is quiet: Pretokenizer.quiet, the argument _stretch uses)
        window = v.slice_text(s0, start) + new_text + v.slice_text(end, e0)
        old_cuts = sorted(c - s0 for c in seq.piece_starts(s0 + 1, e0 - 1))

        def far() -> tuple[int, str, int]:
            brk, at = self._run_break(e0, b + 1)
            return self._run_classes(a, s0), brk, at if 0 <= at < b - e0 else -1

        cuts = inner.inner_boundaries(window, pad, (v.slice_text(s0, e0), old_cuts, far))
        if cuts is None:
            return None
        delta = len(new_text) - (end - start)
        bounds = [0, *[s0 + c - a for c in cuts], b + delta - a]
        view = _EditedText(v, a, b, start, end, new_text)
        rs: _Resplit = (view, list(zip(bounds, bounds[1:])), v.next_piece_start(r_tok), b, None)
        segs = self._segments(v, a, l_tok, rs, start, end, new_text)
        self.stats.local += 1
        return self._splice(v, a, l_tok, rs, segs, start, end)

    def _run_break(self, c0: int, c1: int) -> tuple[str, int]:
        """The first character of the old text ``[c0, c1)`` that
        :meth:`.piece_encoding.InnerEncoding.run_break` finds and its offset from ``c0``,
        ``("", -1)`` when there is none: the chunks whose :meth:`_run_classes` bits say there
        is none are passed over.

        Runtime complexity: ``O(log C + chunks)`` once their bits are known, plus the chunk
        that holds it.
        """
        inner = self._inner
        assert inner is not None
        classes = self._classes
        off = 0
        for part in self._seq.text_parts(c0, c1):
            got = classes.get(id(part))
            if got is None or got[0] is not part or got[1] & 2:
                k = inner.run_break(part)
                if k >= 0:
                    return part[k], off + k
            off += len(part)
        return "", -1

    def _warm_classes(self) -> None:
        """After a build, :meth:`_run_classes` of each chunk whose text is not ASCII (what an
        edit inside a long line of letters of both of o200k's runs would read first: ~14 ns
        a character of such text, a part of its build's time; ASCII text is skipped in
        ``O(1)`` a chunk).

        Runtime complexity: ``O(C)`` plus ``O(non-ASCII text)``.
        """
        inner = self._inner
        if inner is None:
            return
        classes = self._classes
        for t in map(attrgetter("text"), self._seq.chunks):
            if len(t) >= 64 and not t.isascii():
                classes[id(t)] = (t, inner.run_classes(t))

    def _run_classes(self, c0: int, c1: int) -> int:
        """:meth:`.piece_encoding.InnerEncoding.run_classes` of the old text ``[c0, c1)``: ORed
        over the chunks' texts, each whole chunk's kept in ``_classes`` while its text is the
        same object (a chunk edited gets a new one), so that the edits in one long line read
        it once.

        Runtime complexity: ``O(log C + chunks)`` once the chunks are known, else
        ``O(c1 - c0)``.
        """
        inner = self._inner
        assert inner is not None
        classes = self._classes
        bits = 0
        for part in self._seq.text_parts(c0, c1):
            got = classes.get(id(part))
            if got is None or got[0] is not part:
                got = (part, inner.run_classes(part))
                if len(part) >= 64:  # (a whole chunk, or near: the ends' slices are not kept)
                    classes[id(part)] = got
            bits |= got[1]
        if len(classes) > 2 * len(self._seq.chunks) + 64:
            live = {id(c.text) for c in self._seq.chunks}
            self._classes = {k: x for k, x in classes.items() if k in live}
        return bits

    def _restart(self, v: SeqView, held: tuple[int, int], pred: tuple[int, int] | None,
                 start: int) -> tuple[int, int, str]:
        """Step 1: the first token and the code point of the piece the re-split starts at: the
        piece holding ``start`` (``held``: its first token and start, ``(0, 0)`` in an empty
        text; ``pred``: the piece before it, None when there is none), moved left while its
        predecessor's horizon reaches ``start``; and the old text from there to ``start``
        (read here anyway)."""
        horizon = self._enc.horizon
        r_tok, r = held
        head = ""  # the old text [p, start) of the last predecessor p asked about
        p = start
        while r_tok > 0:
            p_tok, p = pred if pred is not None and r_tok == held[0] else v.piece_start_of(
                r_tok - 1)
            head = v.slice_text(p, r) + head if head else v.slice_text(p, start)
            if horizon(head, 0, len(head)) <= len(head):
                break
            r_tok, r = p_tok, p
        return r_tok, r, head[r - p:] if r - p <= len(head) and head else v.slice_text(r, start)

    def _resplit(
        self, v: SeqView, r_tok: int, r: int, left_text: str, start: int, end: int,
        new_text: str, r_next: int | None = None,
    ) -> _Resplit:
        """Step 2: re-split the new text from ``r`` (``left_text``: the old text from there to
        ``start``; ``r_next``: the first token of the old piece after it, when known) until a
        new boundary at or after the edit's end coincides with an old one, over a window of
        old text grown x4 until every piece kept is decided inside it (``docs/algorithms.md``
        section 2)."""
        seq = self._seq
        enc = self._enc
        horizon = enc.horizon
        n_old = seq.total_cp
        delta = len(new_text) - (end - start)
        new_end = start + len(new_text)
        # the first window reaches past the end of the old piece that holds `start`: inside one
        # long piece the earliest possible resync is that piece's end
        extra = FIRST_WINDOW
        if r_tok < seq.total_tokens:
            if r_next is None:
                r_end = self._old_piece_end(v, r_tok)
            else:  # (_old_piece_end, its first question answered)
                r_end = v.token_start_cp(r_next) if r_next < seq.total_tokens else seq.total_cp
            extra = max(extra, r_end - end + FIRST_WINDOW)
        # the pieces a failed round decided inside its window, kept for the next round (which
        # splits on from the last one's end), and how many boundaries they asked about
        kept: list[tuple[int, int]] = []
        kept_asked = 0
        while True:
            w_end_old = min(n_old, end + extra)
            window = left_text + new_text + v.slice_text(end, w_end_old)
            at_doc_end = w_end_old >= n_old
            wlen = len(window)
            spans = kept
            q_tok = None
            # past a few boundaries, the old piece starts they may meet, as a set (an edit
            # that shifts every later piece, as a digit in a line of digits, asks thousands)
            old_starts = None
            asked = kept_asked
            pieces = iter(enc.split(window, spans[-1][1] if spans else 0))
            for ps, pe in pieces:
                spans.append((ps, pe))
                q_new = r + pe
                # subtle: a piece's ids may depend on whether it starts the text
                # (SentencePiece's dummy prefix), so never resync where that status changed
                if q_new >= new_end and (q_new == 0) == (q_new - delta == 0):
                    asked += 1
                    if asked > _ASK_MAX:
                        old_starts = seq.piece_starts(end, w_end_old)
                        if q_new - delta in old_starts:
                            q_tok = v.piece_start_at(q_new - delta)
                        if q_tok is None:
                            q_tok = _bulk_resync(v, pieces, spans, r - delta, old_starts)
                        break
                    q_tok = v.piece_start_at(q_new - delta)
                    if q_tok is not None:
                        break
            # only the last piece's horizon is asked: by dominance it clears the earlier ones
            # when its start s has s + 4 <= wlen (else they are asked too; section 2)
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
                q_tok = seq.total_tokens  # the window reached the end: the last piece ends there
                break
            # the pieces before the last one are decided inside this window when the last
            # one's horizon stays inside it (dominance, as above): the next round keeps them
            # (the last few are tried: the window's end may cut the last piece)
            kept, kept_asked = [], 0
            for k in range(len(spans) - 1, max(0, len(spans) - 4), -1):
                ps = spans[k][0]
                if ps + 4 <= wlen and horizon(window, ps, wlen) <= wlen:
                    kept = spans[:k]
                    kept_asked = asked - sum(
                        r + pe >= new_end and (r + pe == 0) == (r + pe - delta == 0)
                        for _, pe in spans[k:])
                    break
            # grow x4, and at least past the end of the old piece there (see above)
            extra *= 4
            if end + extra < n_old:
                t = v.piece_holding(end + extra)[0]
                extra = max(extra, self._old_piece_end(v, t) - end + FIRST_WINDOW)
            self.stats.window_retries += 1
        self.stats.pieces_resplit += len(spans)
        return window, spans, q_tok, w_end_old, old_starts

    def _segments(
        self, v: SeqView, r: int, r_tok: int, rs: _Resplit, start: int, end: int, new_text: str
    ) -> list[_Seg]:
        """Step 3: the tokens of the re-split pieces, as segments: an unchanged piece (same
        span, left of the edit or right of it after the shift) keeps its old tokens; a changed
        one is encoded, or glued by Algorithm 1 when long. ``r_tok``: the old token that starts
        the piece at ``r``."""
        window, spans, _, _, old_starts = rs
        delta = len(new_text) - (end - start)
        new_end = start + len(new_text)
        segs: list[_Seg] = []
        glue_long = self._glue
        encode_piece = self._enc.encode_piece
        lead = self._lead
        clean = self._clean
        bulk = len(spans)
        if old_starts is not None and lead is not None and clean is not None:
            # the changed short pieces right of the edit, from the first one past any old
            # piece start (an edit in a line of digits shifts every later group), in C loops
            bulk = _bulk_from(spans, r, new_end, delta, old_starts,
                              GLUE_MIN_CP if glue_long else None)
        # the old piece start known to be at code point `known` (the re-split starts at one,
        # and each old piece kept left of the edit ends at the next): no search for it
        known, known_tok = r, r_tok
        for ps, pe in spans if bulk == len(spans) else spans[:bulk]:
            a, b = r + ps, r + pe
            # right of the edit, a piece can be an old one only where an old piece started
            right = a >= new_end and (old_starts is None or a - delta in old_starts)
            if (b <= start or right) and (a == 0) == ((a if b <= start else a - delta) == 0):
                oa = a if b <= start else a - delta
                if oa == known:
                    old = v.old_piece_from(known_tok, oa + pe - ps)
                else:
                    old = v.old_piece(oa, oa + pe - ps)
                if old is not None:
                    segs.append((0, old[0], old[1], None, None, None))
                    known, known_tok = oa + pe - ps, old[1]
                    continue
            if glue_long and pe - ps >= GLUE_MIN_CP:
                # (a window read lazily, _local's, is not sliced whole: its pieces are long)
                whole: _Sliced = window[ps:pe] if type(window) is str else _Sub(window, ps, pe)
                if self._glue_ok(whole[:GLUE_MIN_CP] if type(whole) is _Sub else whole[:]):
                    segs.extend(self._glue_piece(a, b, whole, start, end, delta))
                    continue
            piece = window[ps:pe]
            ids = encode_piece(piece, at_text_start=a == 0)
            if ids and lead is not None and clean is not None:
                # _piece_segment's byte-level case, inline (the common case of an edit)
                fl = bytearray(map(clean.__getitem__, ids))  # (map: no comprehension frame)
                fl[0] |= PIECE_START
                segs.append((1, 0, 0, ids, list(map(lead.__getitem__, ids)), fl))
            else:
                segs.append(self._piece_segment(piece, ids, a == 0))
        if bulk < len(spans):
            segs.append(self._bulk_segment(window, spans[bulk:]))
            self.stats.bulk_pieces += len(spans) - bulk
        return segs

    def _bulk_segment(self, window: _Sliced, spans: list[tuple[int, int]]) -> _Seg:
        """One segment of the byte-level tokens of the changed short pieces ``spans`` of
        ``window`` (none of them at the text's start): their ids through the encoding's piece
        memo in one call (:meth:`~.piece_encoding.ByteLevelEncoding.encode_piece_strings`),
        the per-token tables read by ``map``. When every piece is one token (a line of
        digits: three-digit groups), every token starts a piece; otherwise the pieces are
        encoded one by one and their flags looked up per piece (:class:`_PieceFlags`).

        Runtime complexity: ``O(pieces + tokens)``, C loops but one per piece otherwise.
        """
        bl = self._bl
        lead, clean = self._lead, self._clean
        assert bl is not None and lead is not None and clean is not None
        pieces = list(map(window.__getitem__, map(slice, map(itemgetter(0), spans),
                                                  map(itemgetter(1), spans))))
        ids = bl.encode_piece_strings(pieces)
        if len(ids) == len(pieces):
            # each token starts a piece: its CLEAN flag (always set there) and PIECE_START
            flags = bytearray(map(clean.__getitem__, ids)).translate(_WITH_PIECE_START)
        else:
            per = list(map(self._enc.encode_piece, pieces))
            ids = list(chain.from_iterable(per))
            flags = bytearray(b"".join(map(_PieceFlags(clean).__getitem__, map(tuple, per))))
        return (1, 0, 0, ids, list(map(lead.__getitem__, ids)), flags)

    def _splice(
        self, v: SeqView, r: int, r_tok: int, rs: _Resplit, segs: list[_Seg], start: int, end: int
    ) -> tuple[int, int]:
        """Step 4: trim the old segments that stay in place at both ends, then replace the
        tokens in between in the sequence; returns (tokens removed, tokens added)."""
        seq = self._seq
        window, _, q_tok, w_end_old, _ = rs
        t0, t1 = r_tok, q_tok
        i, j = 0, len(segs)
        while i < j and segs[i][0] == 0 and segs[i][1] == t0:
            t0 = segs[i][2]
            i += 1
        while j > i and segs[j - 1][0] == 0 and segs[j - 1][2] == t1:
            t1 = segs[j - 1][1]
            j -= 1
        if j - i >= 3:
            # a long run of old tokens kept between two changed places (a boundary far from
            # the edit: Document._local) is left where it is: the runs on each side are
            # replaced apart (_splice_apart)
            for k in range(j - 2, i, -1):
                if segs[k][0] == 0 and segs[k][2] - segs[k][1] >= _KEEP_OLD_RUN:
                    return self._splice_apart(v, r, r_tok, rs, segs[i:j], k - i, t0, t1,
                                              start, end)
        ids: Sequence[int]
        cps: Sequence[int]
        if j == i + 1 and segs[i][0] == 1:
            # one new segment (a keystroke's usual case): its lists as they are
            _, _, _, s_ids, s_cps, s_flags = segs[i]
            assert s_ids is not None and s_cps is not None and s_flags is not None
            ids, cps, flags = s_ids, s_cps, s_flags
        else:
            ids, cps, flags = _gather(seq, segs[i:j])
        c0 = r if t0 == r_tok else v.token_start_cp(t0)
        c1 = v.token_start_cp(t1) if t1 < seq.total_tokens else seq.total_cp
        # subtle: trimming never crosses the edit (only unchanged pieces become old segments)
        assert r <= c0 <= start and end <= c1 <= w_end_old, (c0, c1, start, end)
        # the new text of [c0, c1) lies in the window, which is the new text of [r, w_end_old)
        delta = len(window) - (w_end_old - r)  # the window is the new text of old [r, w_end_old)
        text = window[c0 - r : c1 + delta - r]
        removed = v.counted_between(t0, t1)
        seq.replace(t0, t1, ids, cps, flags, text, v)
        # a placeholder token is always a whole piece: PIECE_START | CLEAN | PLACEHOLDER
        added = len(ids) - flags.count(PIECE_START | CLEAN | PLACEHOLDER)
        return removed, added

    def _splice_apart(
        self, v: SeqView, r: int, r_tok: int, rs: _Resplit, segs: list[_Seg], far: int,
        t0: int, t1: int, start: int, end: int,
    ) -> tuple[int, int]:
        """Step 4 when the segments of tokens ``[t0, t1)`` hold a long run of old tokens kept
        (``segs[far]``) between two changed places: the run right of it is replaced first,
        then the one left of it (whose places the first replace does not move); everything
        is asked of the view before either replace (a replace can move what it knows)."""
        seq = self._seq
        window, _, _, w_end_old, _ = rs
        delta = len(window) - (w_end_old - r)  # the window is the new text of old [r, w_end_old)
        jobs = []
        for part, ta, tb in ((segs[far + 1:], segs[far][2], t1), (segs[:far], t0, segs[far][1])):
            ca = r if ta == r_tok else v.token_start_cp(ta)
            cb = v.token_start_cp(tb) if tb < seq.total_tokens else seq.total_cp
            # subtle: trimming never crosses the edit (only unchanged pieces are old segments)
            assert r <= ca and cb <= w_end_old and not (start < ca < end or start < cb < end)
            # the new text of [ca, cb) lies in the window; a run starting at the edit starts
            # left of what was inserted, one ending there ends right of it
            na = ca if ca <= start else ca + delta
            nb = cb + delta if cb >= end else cb
            jobs.append((part, ta, tb, window[na - r : nb - r], v.counted_between(ta, tb)))
        removed = added = 0
        for part, ta, tb, text, gone in jobs:
            ids, cps, flags = _gather(seq, part)
            seq.replace(ta, tb, ids, cps, flags, text)
            removed += gone
            added += len(ids) - flags.count(PIECE_START | CLEAN | PLACEHOLDER)
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
            return _new_tokens(self._lead, self._clean, ids, True)
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
        self, a: int, b: int, piece: _Sliced, start: int, end: int, delta: int
    ) -> list[_Seg]:
        """Tokens of the changed long piece ``[a, b)`` (new coordinates) by Algorithm 1
        (:func:`.glue.glue`): ``tau1`` = old tokens of the old piece starting at ``a`` that end
        by ``start``, ``tau2`` = old tokens of the old piece ending at ``b`` (old ``b - delta``)
        that start at or after ``end``; windows start and end on character boundaries."""
        seq = self._seq
        # subtle: a changed piece can lie wholly left (or right) of the edit when the edit
        # changed only what its split read, so both sides are also clipped to [a, b)
        lstop = min(start, b)
        # an end of the new piece that is no old piece boundary (the edit moved where a piece
        # far from it ends: CJK then an inserted lower-case letter under o200k's cased-run
        # alternatives) is still a place to glue at when an old token starts cleanly there:
        # the old tokens between it and the edit are contiguous tokens of an old piece, so
        # the tokenization of their own text (Remark 3), as Algorithm 1 needs
        # (one search: a piece start is the first clean token at its code point, so the
        # clean token found there is the piece start when there is one)
        l_lo = seq.flagged_start_at(a, CLEAN) if a < lstop else None
        left: Iterator[tuple[int, int, int]] = iter(())
        if l_lo is not None:
            l_hi = min(
                seq.locate(lstop)[0] if lstop < seq.total_cp else seq.total_tokens,
                seq.next_piece_start(l_lo),
            )
            if l_hi > l_lo:
                left = seq.glue_starts(l_lo, l_hi)
        ob = b - delta
        rstart = max(end, a - delta)
        r_hi = seq.flagged_start_at(ob, CLEAN) if ob > rstart else None
        right: Iterator[tuple[int, int, int]] = iter(())
        if r_hi is not None and r_hi > 0:
            ti, ts = seq.locate(rstart)
            r_lo = max(ti if ts == rstart else ti + 1, seq.prev_piece_start(r_hi - 1))
            if r_hi > r_lo:
                right = seq.glue_ends(r_lo, r_hi, delta)
        enc = self._enc
        bl = self._bl
        if bl is not None:
            def encode(ws: int, we: int) -> Sequence[int]:
                if ws == a and we == b:  # the whole piece (ignore_merges: maybe one token)
                    return bl.encode_piece(piece[:])  # (a stretch's piece is an _EditedText)
                return bl.encode_bytes_piece(piece[ws - a : we - a].encode("utf-8"))
        else:
            def encode(ws: int, we: int) -> Sequence[int]:
                return enc.encode_piece(piece[ws - a : we - a], at_text_start=ws == 0)
        g = glue(encode, left, right, a, b)
        assert g is not None  # (no cap and no seam: a side that runs out reaches the piece's end)
        self.stats.glued_pieces += 1
        self.stats.glue_widenings += g.widenings
        segs: list[_Seg] = []
        if g.left is not None and l_lo is not None and g.left > l_lo:
            kept = l_lo
            if not seq.get(l_lo)[2] & PIECE_START:
                # subtle: glued at a clean old token inside an old piece (above): that token
                # now starts the new piece, so it is kept with the piece-start flag added
                tid, w, f = seq.get(l_lo)
                segs.append((1, 0, 0, [tid], [w], bytearray([f | PIECE_START])))
                kept += 1
            if g.left > kept:
                segs.append((0, kept, g.left, None, None, None))
        if self._lead is not None and self._clean is not None:
            segs.append(_new_tokens(self._lead, self._clean, g.tokens, g.start == a))
        else:
            wtext = piece[g.start - a : g.end - a]
            segs.append(self._generic_tokens(wtext, g.tokens, g.start == a, g.start == 0))
        if g.right is not None and r_hi is not None and g.right + 1 < r_hi:
            segs.append((0, g.right + 1, r_hi, None, None, None))
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


def _any_piece(head: str) -> bool:
    """The default ``glue_ok``: every long piece may be glued."""
    return True


def _checked(encoding: PieceEncoding) -> PieceEncoding:
    """``encoding`` once it is known to be an encoding object; a name is refused with what to
    call instead (looking names up is the package face's job, not the document's)."""
    if isinstance(encoding, str):
        raise TypeError(
            f"Document takes an encoding object, not the name {encoding!r}: pass "
            f"livetok.incremental.get_encoding({encoding!r})")
    return check_encoding(encoding)


#: one block's tokens as :class:`TokenSeq` takes them: ids, code points per token, flags
BlockTokens = Tuple["array[int]", "array[int]", bytearray]


def block_cps_type(bl: ByteLevelEncoding) -> str:
    """The typecode of a document's code point counts under ``bl`` (see the constructor)."""
    return "B" if bl.lead_counts.typecode == "B" else "I"


def block_tokens(bl: ByteLevelEncoding, block: str, cps_type: str) -> BlockTokens:
    """The tokens of ``block`` (sanitized, cut where no piece can span) for
    :meth:`Document.from_block_tokens`.

    Runtime complexity: ``O(len(block))`` lookups plus BPE of new pieces.
    """
    parts = [_token_arrays(bl, bl.encode_by_piece(b), cps_type)
             for b in bl.iter_blocks(block, _BUILD_BLOCK)]
    return (array("I", chain.from_iterable(p[0] for p in parts)),
            array(cps_type, chain.from_iterable(p[1] for p in parts)),
            bytearray(b"".join(p[2] for p in parts)))


def _token_arrays(bl: ByteLevelEncoding, per_piece: list[Sequence[int]], cps_type: str,
                  ) -> BlockTokens:
    """Ids, code points per token and flags of consecutive pieces' ids."""
    ids = array("I", chain.from_iterable(per_piece))
    cps = array(cps_type, map(bl.lead_counts.__getitem__, ids))
    # each piece's flags looked up by its ids: most pieces of a text repeat, so this is one C
    # loop (docs/algorithms.md section 4)
    flags = bytearray(b"".join(map(_PieceFlags(bl.clean_starts).__getitem__, per_piece)))
    return ids, cps, flags


def _gather(seq: TokenSeq, segs: list[_Seg]) -> tuple[list[int], list[int], bytearray]:
    """The ids, code point counts and flags of ``segs`` in a row: new tokens as they are, the
    old tokens of an old segment read from ``seq``."""
    ids: list[int] = []
    cps: list[int] = []
    flags = bytearray()
    for kind, sa, sb, s_ids, s_cps, s_flags in segs:
        if kind == 1:
            ids.extend(s_ids)  # type: ignore[arg-type]
            cps.extend(s_cps)  # type: ignore[arg-type]
            flags += s_flags  # type: ignore[arg-type]
        else:
            for tid, w, f in _take(seq.iter_from(sa), sb - sa):
                ids.append(tid)
                cps.append(w)
                flags.append(f)
    return ids, cps, flags


def _new_tokens(lead: array[int], clean: bytearray, ids: Sequence[int], piece_start: bool) -> _Seg:
    """The segment of new byte-level tokens ``ids`` (per-token tables ``lead``, ``clean``)."""
    flags = bytearray(map(clean.__getitem__, ids))
    if piece_start and flags:
        flags[0] |= PIECE_START
    return (1, 0, 0, ids, list(map(lead.__getitem__, ids)), flags)


class _EditedText:
    """The new text of the old span ``[a, b)`` of a document after an edit ``[start, end) ->
    new_text`` inside it, read slice by slice from the old text (``SeqView.slice_text``) and
    ``new_text``: what :meth:`Document._glue_piece` and :meth:`Document._splice` read of a
    stretched piece, without building the whole piece (``str``'s ``len`` and slices)."""

    __slots__ = ("_v", "_a", "_start", "_end", "_new", "_cut", "_n")

    def __init__(self, v: SeqView, a: int, b: int, start: int, end: int, new_text: str) -> None:
        self._v, self._a, self._start, self._end, self._new = v, a, start, end, new_text
        self._cut = start - a  # where the new text begins (relative)
        self._n = b - a + len(new_text) - (end - start)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, key: slice) -> str:
        i, j, step = key.indices(self._n)
        assert step == 1, "only plain slices"
        if i >= j:
            return ""
        cut, k = self._cut, len(self._new)
        a, v = self._a, self._v
        parts = []
        if i < cut:
            parts.append(v.slice_text(a + i, a + min(j, cut)))
        if j > cut and i < cut + k:
            parts.append(self._new[max(i, cut) - cut: min(j, cut + k) - cut])
        if j > cut + k:
            # after the new text, relative position p is old position a + p - delta
            old = a - (k - (self._end - self._start))
            parts.append(v.slice_text(old + max(i, cut + k), old + j))
        return "".join(parts)


class _Sub:
    """``text[i:j]`` of a text read slice by slice (:class:`_EditedText`), itself read slice by
    slice: a long piece of :meth:`Document._local`'s window for :meth:`Document._glue_piece`."""

    __slots__ = ("_text", "_i", "_n")

    def __init__(self, text: _Sliced, i: int, j: int) -> None:
        self._text, self._i, self._n = text, i, j - i

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, key: slice) -> str:
        i, j, step = key.indices(self._n)
        assert step == 1, "only plain slices"
        return self._text[self._i + i : self._i + j] if i < j else ""


def _bulk_from(spans: list[tuple[int, int]], r: int, new_end: int, delta: int,
               old_starts: Set[int], long_cp: int | None) -> int:
    """Where :meth:`Document._segments` may hand the rest of ``spans`` (window coordinates,
    the window starting at ``r``) to :meth:`Document._bulk_segment`: the first index past the
    last piece that starts right of the edit at an old piece start (shifted by ``delta``: it
    may be an unchanged piece) and past every piece of ``long_cp`` code points or more (glued
    by Algorithm 1), and no earlier than the first piece starting at or after ``new_end``;
    ``len(spans)`` when nothing is left. Rare pieces of either kind among many changed ones
    only move the start to after them.

    Runtime complexity: ``O(len(spans))`` (C loops).
    """
    n = len(spans)
    i0 = bisect_left(spans, (new_end - r,))
    if i0 >= n or r + spans[i0][0] == 0:
        return n
    starts = list(map(itemgetter(0), spans[i0:]))
    shifted = map((r - delta).__add__, starts)
    last = -1
    for k in compress(count(), map(old_starts.__contains__, shifted)):
        last = k
    if long_cp is not None:
        lens = map(sub, map(itemgetter(1), spans[i0:]), starts)
        for k in compress(count(), map(long_cp.__le__, lens)):
            last = max(last, k)
    return i0 + last + 1


def _bulk_resync(v: SeqView, pieces: Iterator[tuple[int, int]], spans: list[tuple[int, int]],
                 shift: int, old_starts: Set[int]) -> int | None:
    """The rest of :meth:`Document._resplit`'s loop once its boundaries are checked against
    the set ``old_starts``: the next spans of ``pieces`` are taken in batches (first 64, then
    doubling) and appended to ``spans``, and the first whose end plus ``shift`` (old
    coordinates) is an old piece start ends them (its first token returned, ``spans`` cut
    after it); None when the pieces run out first. Every boundary here lies past the edit's
    end, so the text-start condition of the loop holds (an old start of 0 is passed over).
    The membership test is one C loop per batch, not a Python step per piece: an edit in a
    line of digits shifts every later three-digit group (issue 35).

    Runtime complexity: ``O(pieces taken)`` (C loops), plus ``O(log C + load)`` per
    candidate start.
    """
    size = 64
    while True:
        batch = list(islice(pieces, size))
        if not batch:
            return None
        base = len(spans)
        spans += batch
        ends = map(shift.__add__, map(itemgetter(1), batch))
        for k in compress(count(), map(old_starts.__contains__, ends)):
            oc = shift + batch[k][1]
            q_tok = v.piece_start_at(oc) if oc else None
            if q_tok is not None:
                del spans[base + k + 1:]
                return q_tok
        size *= 2


def _take(it: Iterator[_T], n: int) -> Iterator[_T]:
    for k, x in enumerate(it):
        if k >= n:
            break
        yield x
