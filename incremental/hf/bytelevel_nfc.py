"""A byte-level ``tokenizer.json`` with an ``NFC`` normalizer (Qwen 3) on the byte-level path
(issue 35): the byte-level split and BPE on the text with NFC's one-for-one replacements made,
the exact NFC pipeline only around the few units it changes otherwise.

HuggingFace cuts the added tokens out of the original text, normalizes each segment between
them (NFC), splits the normalized segment with the regex and encodes each piece by BPE. NFC is
local: it acts on *units* (a character that is not unsafe before, :func:`.normalizers.
_unsafe_before`, with the unsafe characters after it), and almost every unit of real text is
its own normal form or a *singleton* that NFC maps to one other character (U+212B, the CJK
compatibility ideographs of Japanese text). The *image* of a text maps its singletons
(:func:`_image`, the same offsets); a unit whose normal form is not its image (``e`` + U+0301,
Hangul jamo, U+0958) is *hard* (:class:`.normalizers.NfcTables`).

**Pieces** (:meth:`NfcByteLevelFile.split`, spans of the original text). From a boundary ``x``
of a segment, let ``k`` be the start of the first hard unit (units cut at ``x``: a boundary is
never inside a hard unit, and a suffix of an unchanged unit is unchanged). The regex pieces of
the image whose reads (the derivation's ``H(s)``, non-decreasing in ``s``) stay before ``k``
are the normalized segment's pieces (the image and the normal form agree there), found by one
C scan for a hard character and a binary search of ``H``. From the first piece that reads
``k``, the segment is normalized in chunks ending on a unit boundary (grown until each piece
kept is decided inside its chunk) and the regex splits the normalized text; its pieces map back
through the alignment (:meth:`.normalizers.UnicodeNormalizer.normalize_aligned`). A normalized
boundary inside a changed unit's image is no boundary: the pieces on both sides join into one
*hard* piece, also when the regex splits the piece's normal form alone otherwise than in its
segment (checked). Past the hard unit, at the first boundary that maps back cleanly, the
image's pieces resume. Since the regex reads nothing left of a piece's start (checked by
:func:`.bytelevel_file.reads_behind` when the file is routed here), the split from any boundary
is the tail of the split from the text's start.

**Ids** (:meth:`NfcByteLevelFile.encode_piece`): a piece without a hard character is one regex
piece of the image (or an added token), encoded by the byte-level file's piece cache
(:class:`.bytelevel_file.ByteLevelFile`); a hard piece's normal form is split alone and its
pieces encoded. Algorithm 1 inside a long piece (:meth:`NfcByteLevelFile.glue_ok`) only where
the piece holds no hard character, so that every window's normal form is its image and its ids
the BPE of those bytes (the CJK line with compatibility ideographs stays glued). The normal
form spells no added token that the original does not (:func:`.bytelevel_file.route` refuses
tokens holding NFC's ASCII outputs ``;`K`` or other characters).

**Code points** (:meth:`NfcByteLevelFile.token_cp_lens`): in a piece without a hard
character, each character goes to the last token that starts on a character boundary at or
before its first byte, so that a token covers code points exactly when it starts on a character
boundary (the document's CLEAN flag for a protocol encoding: Algorithm 1 cuts only there); a
hard piece's characters all go to its first token (its other tokens cover none: no window
starts inside it).

**Horizon** of the piece at ``s``: the byte-level file's (the regex's reads in the image, the
added tokens' in the original) widened through the unit that holds its last character and one
character past it (whether that unit is hard decides the piece's kind); for a hard piece, also
the normalized regex's reads of its last piece, mapped back, with the added-token terms
(:meth:`.bytelevel_file.AddedTokenSplit.token_horizon`) and widened alike. Both terms are
non-decreasing in ``s`` (the regex's reads are; the mapping back is monotone), so earlier
pieces' horizons are dominated. ``tests/unit/test_hf_qwen_bytelevel.py`` checks pieces, ids,
horizons and documents under edits against HuggingFace ``tokenizers`` on text that is not NFC.

The document sees a protocol encoding (not :class:`~..piece_encoding.ByteLevelEncoding`: its
per-token tables would give a hard piece the code points of its normal form).

Runtime complexity: a split or horizon costs the byte-level file's plus a C scan for hard
characters and the image's join (a Python step per singleton); a hard piece costs the
normalization and regex split of its chunk. A long text's image and hard characters are
found once for that text object (:class:`_Scans`): an edit's horizon and ``glue_ok`` of the
window it split read them instead of scanning the line again.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from typing import Generator, Iterator, Sequence

from ..bytelevel.pretokenize import Pretokenizer
from ..glue import GLUE_MIN_CP
from ..stream import EncodeStreamMixin
from ..text import join_surrogates, require_str, sanitize
from .bytelevel_file import ByteLevelFile
from .normalizers import UnicodeNormalizer, nfc_tables

__all__ = ["NfcByteLevelFile"]

_NFC = UnicodeNormalizer("NFC")
#: code points added to a hard chunk before it is normalized again (doubled each time)
_CHUNK_STEP = 32


def _image(text: str) -> str:
    """``text`` with NFC's singletons mapped (its normal form when it holds no hard
    character: :class:`.normalizers.NfcTables`); ``text`` itself when it holds none.

    Runtime complexity: ``O(len(text))``: a C scan and a join, a Python step per singleton.
    """
    if text.isascii():
        return text
    t = nfc_tables()
    parts: list[str] = []
    last = 0
    singles = t.singles
    for m in t.single.finditer(text):
        p = m.start()
        to = singles.get(ord(text[p]))
        if to is not None:
            parts += (text[last:p], to)
            last = p + 1
    if last == 0:
        return text
    parts.append(text[last:])
    return "".join(parts)


def _charwise(text: str) -> bool:
    """Whether NFC changes ``text``, and every slice of it, character for character (no hard
    character). Runtime complexity: ``O(len(text))``, a C scan."""
    return text.isascii() or nfc_tables().find_hard(text, 0, len(text)) < 0


#: texts this long keep their scans (:class:`_Scans`)
_SCANS_MIN = 4096
#: heads of long pieces holding a hard character kept at most (:meth:`NfcByteLevelFile.quiet`)
_HEADS_MAX = 4096


class _Scans:
    """What the scans of one long text found, kept for that text object: an edit asks the
    document's window for its pieces, then for the horizon of the last piece it keeps, then
    whether the long piece may be glued, and each asked for a scan of the whole line (the
    image, the hard characters) before (issue 35: five scans of a 1,000,000-character line
    per edit). Both facts are properties of each character (a singleton's image, a hard
    character: :class:`.normalizers.NfcTables`), so a slice's are the text's, sliced.

    Runtime complexity: the image once, ``O(n)``; :meth:`first_hard` a binary search where
    the scan from the text's start already went, else the C scan from there (never more
    than the scan it replaces).
    """

    __slots__ = ("text", "_image", "_hard", "_to", "_lock", "spans")

    def __init__(self, text: str) -> None:
        self.text = text
        self._image: str | None = None
        #: the hard characters of ``text[:_to]``, in order
        self._hard: list[int] = []
        self._to = 0
        self._lock = threading.Lock()
        #: the long pieces the split yielded, ``(start, end)`` (for :meth:`NfcByteLevelFile.
        #: glue_ok`, which is passed the piece alone)
        self.spans: list[tuple[int, int]] = []

    def image(self) -> str:
        """:func:`_image` of the text."""
        got = self._image
        if got is None:
            got = self._image = _image(self.text)
        return got

    def image_of(self, a: int, b: int) -> str:
        """:func:`_image` of ``text[a:b]``."""
        got = self.image()
        return got if a == 0 and b >= len(got) else got[a:b]

    def first_hard(self, i: int, b: int) -> int:
        """``NfcTables.find_hard(text, i, b)``."""
        with self._lock:
            hard = self._hard
            k = bisect_left(hard, i)
            if k < len(hard):
                return hard[k] if hard[k] < b else -1
            to = self._to
            if b <= to:
                return -1
            if i > to:  # past what the scan from the start saw: scanned alone
                return nfc_tables().find_hard(self.text, i, b)
            p = nfc_tables().find_hard(self.text, to, b)
            if p < 0:
                self._to = b
                return -1
            hard.append(p)
            self._to = p + 1
            return p if p >= i else -1  # (p >= to >= i)


class NfcByteLevelFile(EncodeStreamMixin):
    """A byte-level ``tokenizer.json`` whose normalizer is ``NFC`` (module docstring): ids
    equal HuggingFace's ``Tokenizer.encode(text, add_special_tokens=False).ids``; ``decode``
    its ``decode(ids, skip_special_tokens=False)``.

    Built by :func:`.reader.from_prepared` around the file's :class:`.bytelevel_file.
    ByteLevelFile` (which encodes text that NFC leaves as it is) when :func:`.bytelevel_file.
    route` accepts the file with its normalizer.
    """

    supports_glue = True
    #: ``piece_encoding.QuietEncoding``'s margin (:meth:`quiet`; 0: not offered)
    quiet_margin = 0
    tiktoken_equivalent = False

    def __init__(self, inner: ByteLevelFile) -> None:
        self._bl = inner
        self._split = inner._split
        self.name = inner.name
        self.source = inner.source
        self.special_tokens = inner.special_tokens
        self.max_token_value = inner.max_token_value
        #: the scans of the last long text split (:class:`_Scans`)
        self._kept: _Scans | None = None
        #: local boundaries where the file's pattern has them (:meth:`quiet`)
        self.quiet_margin = inner.quiet_margin
        #: the first ``GLUE_MIN_CP`` characters of every piece long enough for a stretch that
        #: :meth:`split` yielded holding a hard character (:meth:`glue_ok`), and whether
        #: there were too many to keep (then every such head is refused)
        self._hard_heads: set[str] = set()
        self._heads_full = False
        # the NFC tables (~1 s of one pass over the code points) are made meanwhile, so that
        # the first edit of a text that is not ASCII does not wait for them all
        threading.Thread(target=nfc_tables, name="livetok-nfc-tables", daemon=True).start()

    @property
    def n_vocab(self) -> int:
        return self._bl.n_vocab

    def __repr__(self) -> str:
        return f"<NfcByteLevelFile {self.name!r} n_vocab={self.n_vocab}>"

    # -- what NFC changes --------------------------------------------------------------------

    def _scans(self, text: str, make: bool = False) -> _Scans | None:
        """The kept scans of ``text`` (this very object), made with ``make`` when it is long."""
        got = self._kept
        if got is not None and got.text is text:
            return got
        if make and len(text) >= _SCANS_MIN:
            got = self._kept = _Scans(text)
            return got
        return None

    def _hard(self, text: str, x: int, b: int) -> tuple[int, int]:
        """``(k, j)``: the first unit of ``text[x:b]`` (units cut at ``x``) whose normal form
        is not its singletons' image (a *hard* unit), or ``(b, b)``.

        Runtime complexity: ``O(k - x)`` C scans plus the normalization of each unit that
        holds a hard character.
        """
        t = nfc_tables()
        run, unsafe = t.unsafe_run, t.unsafe
        kept = self._scans(text)
        i = x
        while True:
            p = kept.first_hard(i, b) if kept is not None else t.find_hard(text, i, b)
            if p < 0:
                return b, b
            k = p
            while k > x and ord(text[k]) in unsafe:
                k -= 1
            j = run.match(text, p + 1, b).end()  # type: ignore[union-attr]
            unit = text[k:j]
            if _NFC.normalize(unit) != unit.translate(t.singles):
                return k, j
            i = j

    @staticmethod
    def _widen(text: str, h: int) -> int:
        """``h`` widened through the unsafe characters at ``h`` and one character past them
        (what deciding whether the unit holding ``text[h - 1]`` is hard reads: at the text's
        end, whether it ends there)."""
        if h >= len(text):
            return max(h, len(text) + 1)
        if text[h] < "\u0300":  # (no character below U+0300 is unsafe before)
            return h + 1
        return nfc_tables().unsafe_run.match(text, h).end() + 1  # type: ignore[union-attr]

    def _reach(self, text: str, s: int, limit: int) -> int:
        """The regex's reads from ``s`` (no added-token terms): ``Pretokenizer.horizon``."""
        return Pretokenizer.horizon(self._split, text, s, limit)

    def _file_horizon(self, text: str, start: int, limit: int) -> int:
        """The byte-level file's horizon of the piece at ``start``: the regex's reads in the
        image of ``text`` (its singletons mapped: the regex sees the normal form), the
        added-token terms in ``text`` (raw tokens are found in the original).

        Runtime complexity: as the file's, plus a scan of what it read for a singleton (the
        image of ``text[start:limit]`` where there is one).
        """
        end = min(len(text), limit)
        h = self._split.horizon(text, start, limit)
        if start >= end or text.isascii() or nfc_tables().single.search(
                text, start, min(h, end)) is None:
            return h  # the regex read no singleton: the image reads the same
        kept = self._scans(text)
        seg = kept.image_of(start, end) if kept is not None else _image(text[start:end])
        y = start + self._reach(seg, 0, end - start)
        return self._split.token_horizon(text, start, limit, y)

    # -- pieces ------------------------------------------------------------------------------

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        kept = self._scans(text, True)
        if kept is None:
            if text.isascii() or self.quiet_margin <= 0:
                return ((s, e) for s, e, _ in self._pieces(text, pos))
            return self._split_noted(text, pos)
        return self._split_kept(text, pos, kept)

    def _split_kept(self, text: str, pos: int, kept: _Scans) -> Iterator[tuple[int, int]]:
        """:meth:`split` of a long text, its long pieces noted in ``kept`` and the heads of
        those holding a hard character in :attr:`_hard_heads`."""
        spans = kept.spans
        least = 4 * self.quiet_margin if self.quiet_margin > 0 else len(text) + 1
        for s, e, _ in self._pieces(text, pos):
            if e - s >= least and kept.first_hard(s, e) >= 0:
                self._note_head(text[s:s + GLUE_MIN_CP])
            if e - s >= _SCANS_MIN:
                spans.append((s, e))
            yield s, e

    def _split_noted(self, text: str, pos: int) -> Iterator[tuple[int, int]]:
        """:meth:`split` of a short text that is not ASCII, the heads of its pieces long
        enough for a stretch that hold a hard character noted."""
        least = 4 * self.quiet_margin
        find_hard = nfc_tables().find_hard
        for s, e, _ in self._pieces(text, pos):
            if e - s >= least and find_hard(text, s, e) >= 0:
                self._note_head(text[s:s + GLUE_MIN_CP])
            yield s, e

    def _note_head(self, head: str) -> None:
        """Keep ``head`` in :attr:`_hard_heads` (at most ``_HEADS_MAX``: past it, every
        head is refused)."""
        if len(self._hard_heads) >= _HEADS_MAX:
            self._heads_full = True
        else:
            self._hard_heads.add(head)

    def quiet(self, text: str) -> bool:
        """``QuietEncoding.quiet`` (``piece_encoding``), offered where the file's pattern has
        a quiet twin (:data:`.bytelevel_file.QUIET_TWINS`, Qwen 3's): ``text`` holds no hard
        character (so NFC maps it, and every slice of it, character for character: its
        image) and :meth:`.bytelevel_file.AddedTokenSplit.quiet` holds of it with the regex
        reading its image.

        *Why the stretch is exact.* Around a quiet text the normalized text is the image, so
        the twin's argument holds for the regex on it: no boundary of the normalized segment
        moves or appears near the edit, and a hard piece elsewhere (whose decision reads its
        own units and the regex's reads, at most ``M`` past it) keeps its span. The stretched
        piece is glued, which needs it without a hard character: the old piece had none, for
        the document asks :meth:`glue_ok` of its first ``GLUE_MIN_CP`` characters, and every
        piece that long the split yielded holding a hard character has its head kept
        (:attr:`_hard_heads`); a stretch keeps a piece's head and adds no hard character.

        Runtime complexity: ``O(len(text))``, C scans.
        """
        if self.quiet_margin <= 0 or not _charwise(text):
            return False
        return self._split.quiet(text, _image(text))

    def _pieces(self, text: str, pos: int) -> Iterator[tuple[int, int, int]]:
        """``(start, end, reach)`` of the pieces from ``pos``: ``reach`` is -1 for a piece of
        the image, else what deciding the hard piece read (original coordinates, widened)."""
        if text.isascii():  # nothing NFC changes: the file's own pieces
            yield from ((s, e, -1) for s, e in self._split.split(text, pos))
            return
        kept = self._scans(text)
        image = kept.image() if kept is not None else _image(text)
        parts = self._split._parts(text, pos)
        if parts is None:
            yield from self._segment(text, image, pos, len(text))
            return
        for a, b, token in parts:
            if token:
                yield a, b, -1
            else:
                yield from self._segment(text, image, a, b)

    def _segment(self, text: str, image: str, x: int, b: int
                 ) -> Iterator[tuple[int, int, int]]:
        """The pieces of the segment ``text[:b]`` from its boundary ``x`` (``image``: the text
        with its singletons mapped, the same offsets)."""
        form = self._split._form(image)
        while x < b:
            k, j = self._hard(text, x, b)
            if k >= b:
                yield from ((*m.span(), -1) for m in form.finditer(image, x, b))
                return
            spans = []
            for m in form.finditer(image, x, b):
                if m.start() >= k:
                    break
                spans.append(m.span())
            # the first piece whose reads reach k (H is non-decreasing in the start)
            lo, hi = 0, len(spans)
            while lo < hi:
                mid = (lo + hi) // 2
                if self._reach(image, spans[mid][0], k + 1) > k:
                    hi = mid
                else:
                    lo = mid + 1
            for s, e in spans[:lo]:
                yield s, e, -1
            x = spans[lo][0] if lo < len(spans) else (spans[-1][1] if spans else x)
            x = yield from self._hard_pieces(text, x, b, j)

    def _hard_pieces(self, text: str, x: int, b: int, hard_end: int
                     ) -> Generator[tuple[int, int, int], None, int]:
        """The pieces from ``x`` through the hard unit ending at ``hard_end``, from the
        normalized text (module docstring); returns the boundary where the image's pieces
        resume."""
        run = nfc_tables().unsafe_run
        z = hard_end
        step = _CHUNK_STEP
        while True:
            z = b if z >= b else run.match(text, z, b).end()  # type: ignore[union-attr]
            chunk = text[x:z]
            norm, align = _NFC.normalize_aligned(chunk)
            if align is None:
                align = list(range(len(chunk) + 1))
            out = self._chunk_pieces(text, x, z, b, norm, align, hard_end)
            if out is not None:
                pieces, resume = out
                yield from pieces
                return resume
            z = min(b, z + step)
            step *= 2

    def _chunk_pieces(self, text: str, x: int, z: int, b: int, norm: str, align: list[int],
                      hard_end: int) -> tuple[list[tuple[int, int, int]], int] | None:
        """The pieces of the normalized chunk ``norm`` (of ``text[x:z]``) mapped back, up to
        the first clean boundary at or past ``hard_end``; None when a piece before it is not
        decided inside the chunk (the caller grows it)."""
        form = self._split._form(norm)
        at_end = z >= b
        n = len(norm)
        out: list[tuple[int, int, int]] = []
        ps = 0
        subs: list[tuple[int, int]] = []
        for m in form.finditer(norm):
            ns, ne = m.span()
            r = self._reach(norm, ns, n)
            if not at_end and r >= n:
                return None
            subs.append((ns, ne))
            if ne < n and align[ne] == align[ne - 1]:
                continue  # inside a changed unit's image
            piece_n = norm[ps:ne]
            oa, ob = align[ps], align[ne]
            if piece_n != _image(text[x + oa:x + ob]):
                # a hard piece: encoded by splitting its normal form alone (encode_piece)
                alone = [(p - ps, q - ps) for p, q in subs]
                if [mm.span() for mm in form.finditer(piece_n)] != alone:
                    continue  # split alone otherwise: join the next piece
            elif len(subs) > 1:
                continue
            reach = self._split.token_horizon(text, x + oa, len(text), x + _back(align, r, n))
            out.append((x + oa, x + ob, self._widen(text, reach)))
            ps, subs = ne, []
            if x + ob >= hard_end:
                return out, x + ob
        if at_end:
            return out, b
        return None

    def horizon(self, text: str, start: int, limit: int) -> int:
        h = self._file_horizon(text, start, limit)
        if h > limit:
            return h
        h = self._widen(text, h)
        kept = self._scans(text)
        if kept.first_hard(start, min(h, len(text))) < 0 if kept is not None else _charwise(
                text[start:h]):
            return h  # no hard unit: a piece of the image
        for _, _, reach in self._pieces(text, start):
            return max(h, reach)
        return h

    def glue_ok(self, piece: str) -> bool:
        """Whether Algorithm 1 may glue inside ``piece`` (the document passes the whole
        piece, or for a stretch its first ``GLUE_MIN_CP`` characters): only where NFC changes
        it character for character (no hard character), so that each window's normal form is
        its image and its ids the BPE of those bytes; a head kept in :attr:`_hard_heads` is
        refused (:meth:`quiet`).

        Runtime complexity: ``O(len(piece))``, a C scan; a comparison with the text it was
        split from when that text's scans are kept (:class:`_Scans`).
        """
        if len(piece) == GLUE_MIN_CP and (self._heads_full or piece in self._hard_heads):
            return False  # the head of a piece that holds a hard character (:meth:`quiet`)
        kept = self._kept
        if kept is not None and len(piece) >= _SCANS_MIN:
            for s, e in kept.spans:
                if e - s == len(piece) and kept.text.startswith(piece, s):
                    return kept.first_hard(s, e) < 0
        return _charwise(piece)

    # -- ids ---------------------------------------------------------------------------------

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> Sequence[int]:
        """Token ids of one piece (module docstring, *Ids*), or of a window of a piece that
        :meth:`glue_ok` accepted (the BPE of its image's bytes).

        Runtime complexity: as the byte-level file's, plus the normalization of a hard piece.
        """
        if _charwise(piece):
            return self._bl.encode_piece(_image(piece))
        norm = _NFC.normalize(piece)
        if norm == _image(piece):
            return self._bl.encode_piece(norm)  # (a hard unit NFC leaves as it is)
        form = self._split._form(norm)
        return self._bl.encode_piece_strings(m.group() for m in form.finditer(norm))

    def token_cp_lens(self, piece: str, ids: Sequence[int], *, at_text_start: bool = False
                      ) -> list[int]:
        """Code points of ``piece`` per token (module docstring, *Code points*).

        Runtime complexity: ``O(len(ids))``.
        """
        if not ids:
            return []
        if not _charwise(piece) and _NFC.normalize(piece) != _image(piece):
            return [len(piece)] + [0] * (len(ids) - 1)
        lead = self._bl.lead_counts
        clean = self._bl.clean_starts
        out = [lead[i] for i in ids]
        last = 0
        for k in range(1, len(ids)):
            if clean[ids[k]]:
                last = k
            elif out[k]:
                out[last] += out[k]
                out[k] = 0
        return out

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``: HuggingFace's ``encode(text, add_special_tokens=False)``.

        Runtime complexity: ``O(n)`` split and normalization plus BPE of the new pieces.
        """
        require_str(text, "encode")
        text = join_surrogates(text)
        if _image(text) is text and _charwise(text):
            return self._bl._encode_ordinary(text)  # NFC leaves it as it is
        out: list[int] = []
        parts = self._split._parts(text, 0)
        for a, b, token in parts if parts is not None else [(0, len(text), False)]:
            if token:
                out.extend(self._bl.encode_piece(text[a:b]))
                continue
            norm = _NFC.normalize(text[a:b])
            form = self._split._form(norm)
            out += self._bl.encode_piece_strings(m.group() for m in form.finditer(norm))
        return out

    def count(self, text: str) -> int:
        """``len(encode(text))``."""
        return len(self.encode(text))

    def encode_by_piece(self, text: str) -> list[Sequence[int]]:
        """The ids of each piece of ``text`` (sanitized), in order."""
        text = sanitize(text)
        return [self.encode_piece(text[s:e]) for s, e in self.split(text)]

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """HuggingFace's ``decode(ids, skip_special_tokens=False)``."""
        return self._bl.decode(ids, errors)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes token ``token_id`` stands for."""
        return self._bl.token_bytes(token_id)


def _back(align: list[int], r: int, n: int) -> int:
    """The original offset (in the chunk) up to which the units holding ``norm[:r]`` reach:
    ``r`` moved to the end of the changed unit's image it falls in, mapped back."""
    while 0 < r < n and align[r] == align[r - 1]:
        r += 1
    return align[min(r, n)]
