"""A byte-level ``tokenizer.json`` with an ``NFC`` normalizer (Qwen 3) on the byte-level path
(issue 35): the byte-level split and BPE where NFC leaves the text as it is, the exact
NFC pipeline only around the characters it changes.

HuggingFace cuts the added tokens out of the original text, normalizes each segment between
them (NFC), splits the normalized segment with the regex and encodes each piece by BPE. NFC is
local: it acts on *units* (a character that is not unsafe before, :func:`.normalizers.
_unsafe_before`, with the unsafe characters after it: ``normalize`` is the concatenation of the
units' normal forms), and almost every unit of real text is its own normal form. A unit that NFC
changes (``e`` + U+0301, Hangul jamo, a singleton such as U+212B) is *changed*.

**Pieces** (:meth:`NfcByteLevelFile.split`, spans of the original text). From a boundary ``x``
of a segment, let ``k`` be the start of the first changed unit (units cut at ``x``: a boundary
is never inside a changed unit, and a suffix of an unchanged unit is unchanged). The regex
pieces of the original text whose reads (the derivation's ``H(s)``, non-decreasing in ``s``)
stay before ``k`` are the normalized segment's pieces too (the two texts agree there): *clean*
pieces, found by one C scan for a character that may change (``_suspects``) and a binary
search of ``H`` over them. From the first piece that reads ``k``, the segment is normalized in
chunks ending on a unit boundary (grown until each piece kept is decided inside its chunk) and
the regex splits the normalized text; its pieces map back through the alignment
(:meth:`.normalizers.UnicodeNormalizer.normalize_aligned`). A normalized boundary inside a changed
unit's image is no boundary: the pieces on both sides join into one *dirty* piece, also when
the regex splits the piece's normalized text alone otherwise than in its segment (checked).
Past the changed unit, at the first boundary that maps back cleanly, the clean pieces resume.
Since the regex reads nothing left of a piece's start (checked by :func:`.bytelevel_file.reads_behind` when the
file is routed here), the split from any boundary is the tail of the split from the text's
start.

**Ids** (:meth:`NfcByteLevelFile.encode_piece`): a piece that NFC leaves as it is is one regex
piece (or an added token), encoded by the byte-level file (:class:`.bytelevel_file.
ByteLevelFile`'s piece cache); a dirty piece's normal form is split alone and its pieces encoded.
Algorithm 1 inside a long piece (:meth:`NfcByteLevelFile.glue_ok`) only where the piece holds no
character that may change, so that every window of it is its own normal form and its ids are the
BPE of its bytes.

**Code points** (:meth:`NfcByteLevelFile.token_cp_lens`): in a clean piece, each character goes
to the last token that starts on a character boundary at or before its first byte, so that a
token covers code points exactly when it starts on a character boundary (the document's CLEAN
flag for a protocol encoding: Algorithm 1 cuts only there); a dirty piece's characters all go
to its first token (its other tokens cover none: no window starts inside it).

**Horizon** of the piece at ``s``: the byte-level file's (the regex's and the added tokens'
reads) widened through the unit that holds its last character and one character past it
(whether that unit is changed decides the piece's kind); for a dirty piece, also the normalized
regex's reads of its last piece, mapped back and widened alike. Both terms are non-decreasing
in ``s`` (the regex's reads are; the mapping back is monotone), so earlier pieces' horizons are
dominated. ``tests/unit/test_hf_qwen_bytelevel.py`` checks pieces, ids, horizons and documents
under edits against HuggingFace ``tokenizers`` on text that is not NFC.

The document sees a protocol encoding (not :class:`~..piece_encoding.ByteLevelEncoding`: its
per-token tables would give a dirty piece the code points of its normal form).

Runtime complexity: a clean text costs one C scan more than the byte-level file per split; a
dirty piece costs the normalization and regex split of its chunk.
"""

from __future__ import annotations

from typing import Generator, Iterator, Sequence

from ..bytelevel.pretokenize import Pretokenizer
from ..stream import EncodeStreamMixin
from ..text import join_surrogates, require_str, sanitize
from .bytelevel_file import ByteLevelFile
from .normalizers import UnicodeNormalizer, nfc_change_tables

__all__ = ["NfcByteLevelFile"]

_NFC = UnicodeNormalizer("NFC")
#: code points added to a dirty chunk before it is normalized again (doubled each time)
_CHUNK_STEP = 32


#: what NFC may change (:func:`.normalizers.nfc_change_tables`)
_tables = nfc_change_tables


class NfcByteLevelFile(EncodeStreamMixin):
    """A byte-level ``tokenizer.json`` whose normalizer is ``NFC`` (module docstring): ids
    equal HuggingFace's ``Tokenizer.encode(text, add_special_tokens=False).ids``; ``decode``
    its ``decode(ids, skip_special_tokens=False)``.

    Built by :func:`.reader.from_prepared` around the file's :class:`.bytelevel_file.
    ByteLevelFile` (which encodes text that NFC leaves as it is) when :func:`.bytelevel_file.
    route` accepts the file with its normalizer.
    """

    supports_glue = True
    #: no local boundaries (``piece_encoding.QuietEncoding``): every edit re-splits
    quiet_margin = 0
    tiktoken_equivalent = False

    def __init__(self, inner: ByteLevelFile) -> None:
        self._bl = inner
        self._split = inner._split
        self.name = inner.name
        self.source = inner.source
        self.special_tokens = inner.special_tokens
        self.max_token_value = inner.max_token_value

    @property
    def n_vocab(self) -> int:
        return self._bl.n_vocab

    def __repr__(self) -> str:
        return f"<NfcByteLevelFile {self.name!r} n_vocab={self.n_vocab}>"

    # -- what NFC changes --------------------------------------------------------------------

    @staticmethod
    def _stable(text: str) -> bool:
        """Whether NFC leaves ``text`` as it is and any window of it too (no suspect
        character). Runtime complexity: ``O(len(text))``, a C scan."""
        return text.isascii() or _tables()[0].search(text) is None

    @staticmethod
    def _changed(text: str, x: int, b: int) -> tuple[int, int]:
        """``(k, j)``: the first unit of ``text[x:b]`` that NFC changes (units cut at ``x``),
        or ``(b, b)``.

        Runtime complexity: ``O(k - x)`` C scans plus the normalization of each suspect unit.
        """
        suspect, run, unsafe = _tables()
        i = x
        while True:
            m = suspect.search(text, i, b)
            if m is None:
                return b, b
            p = m.start()
            k = p
            while k > x and ord(text[k]) in unsafe:
                k -= 1
            j = run.match(text, p + 1, b).end()  # type: ignore[union-attr]
            unit = text[k:j]
            if _NFC.normalize(unit) != unit:
                return k, j
            i = j

    @staticmethod
    def _widen(text: str, h: int) -> int:
        """``h`` widened through the unsafe characters at ``h`` and one character past them
        (what deciding whether the unit holding ``text[h - 1]`` is changed reads: at the
        text's end, whether it ends there)."""
        if h >= len(text):
            return max(h, len(text) + 1)
        return _tables()[1].match(text, h).end() + 1  # type: ignore[union-attr]

    def _reach(self, text: str, s: int, limit: int) -> int:
        """The regex's reads from ``s`` (no added-token terms): ``Pretokenizer.horizon``."""
        return Pretokenizer.horizon(self._split, text, s, limit)

    # -- pieces ------------------------------------------------------------------------------

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        return ((s, e) for s, e, _ in self._pieces(text, pos))

    def _pieces(self, text: str, pos: int) -> Iterator[tuple[int, int, int]]:
        """``(start, end, reach)`` of the pieces from ``pos``: ``reach`` is -1 for a clean
        piece, else what deciding the dirty piece read (original coordinates, widened)."""
        parts = self._split._parts(text, pos)
        if parts is None:
            yield from self._segment(text, pos, len(text))
            return
        for a, b, token in parts:
            if token:
                yield a, b, -1
            else:
                yield from self._segment(text, a, b)

    def _segment(self, text: str, x: int, b: int) -> Iterator[tuple[int, int, int]]:
        """The pieces of the segment ``text[:b]`` from its boundary ``x``."""
        form = self._split._form(text)
        while x < b:
            k, j = self._changed(text, x, b)
            if k >= b:
                yield from ((*m.span(), -1) for m in form.finditer(text, x, b))
                return
            spans = []
            for m in form.finditer(text, x, b):
                if m.start() >= k:
                    break
                spans.append(m.span())
            # the first piece whose reads reach k (H is non-decreasing in the start)
            lo, hi = 0, len(spans)
            while lo < hi:
                mid = (lo + hi) // 2
                if self._reach(text, spans[mid][0], k + 1) > k:
                    hi = mid
                else:
                    lo = mid + 1
            for s, e in spans[:lo]:
                yield s, e, -1
            x = spans[lo][0] if lo < len(spans) else (spans[-1][1] if spans else x)
            x = yield from self._dirty(text, x, b, j)

    def _dirty(self, text: str, x: int, b: int, dirty_end: int
               ) -> Generator[tuple[int, int, int], None, int]:
        """The pieces from ``x`` through the changed unit ending at ``dirty_end``, from the
        normalized text (module docstring); returns the boundary where clean pieces resume."""
        run = _tables()[1]
        z = dirty_end
        step = _CHUNK_STEP
        while True:
            z = b if z >= b else run.match(text, z, b).end()  # type: ignore[union-attr]
            chunk = text[x:z]
            norm, align = _NFC.normalize_aligned(chunk)
            if align is None:
                align = list(range(len(chunk) + 1))
            out = self._chunk_pieces(text, x, z, b, norm, align, dirty_end)
            if out is not None:
                pieces, resume = out
                yield from pieces
                return resume
            z = min(b, z + step)
            step *= 2

    def _chunk_pieces(self, text: str, x: int, z: int, b: int, norm: str, align: list[int],
                      dirty_end: int) -> tuple[list[tuple[int, int, int]], int] | None:
        """The pieces of the normalized chunk ``norm`` (of ``text[x:z]``) mapped back, up to
        the first clean boundary at or past ``dirty_end``; None when a piece before it is not
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
            if piece_n != text[x + oa:x + ob]:
                alone = [(p - ps, q - ps) for p, q in subs]
                if [mm.span() for mm in form.finditer(piece_n)] != alone:
                    continue  # split alone otherwise: join the next piece
            elif len(subs) > 1:
                continue
            reach = self._split.token_horizon(text, x + oa, len(text), x + _back(align, r, n))
            out.append((x + oa, x + ob, self._widen(text, reach)))
            ps, subs = ne, []
            if x + ob >= dirty_end:
                return out, x + ob
        if at_end:
            return out, b
        return None

    def horizon(self, text: str, start: int, limit: int) -> int:
        h = self._split.horizon(text, start, limit)
        if h > limit:
            return h
        h = self._widen(text, h)
        if self._stable(text[start:h]):
            return h  # no unit that may change: a clean piece
        for _, _, reach in self._pieces(text, start):
            return max(h, reach)
        return h

    def glue_ok(self, piece: str) -> bool:
        """Whether Algorithm 1 may glue inside ``piece`` (the document passes the whole
        piece): only where it holds no character NFC may change, so that each window is its
        own normal form and its ids the BPE of its bytes.

        Runtime complexity: ``O(len(piece))``, a C scan.
        """
        return self._stable(piece)

    # -- ids ---------------------------------------------------------------------------------

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> Sequence[int]:
        """Token ids of one piece (module docstring, *Ids*), or of a window of a piece that
        :meth:`glue_ok` accepted (the BPE of its bytes).

        Runtime complexity: as the byte-level file's, plus the normalization of a dirty piece.
        """
        if self._stable(piece):
            return self._bl.encode_piece(piece)
        norm = _NFC.normalize(piece)
        if norm == piece:
            return self._bl.encode_piece(piece)
        form = self._split._form(norm)
        return self._bl.encode_piece_strings(m.group() for m in form.finditer(norm))

    def token_cp_lens(self, piece: str, ids: Sequence[int], *, at_text_start: bool = False
                      ) -> list[int]:
        """Code points of ``piece`` per token (module docstring, *Code points*).

        Runtime complexity: ``O(len(ids))``.
        """
        if not ids:
            return []
        if not self._stable(piece) and _NFC.normalize(piece) != piece:
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
        if self._stable(text):
            return self._bl._encode_ordinary(text)
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
