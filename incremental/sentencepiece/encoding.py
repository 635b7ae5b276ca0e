"""SentencePiece BPE encodings (Llama / Mistral ``tokenizer.model``), our own implementation.

The model file is read by :mod:`.model_proto` (no ``protobuf``, no ``sentencepiece`` at run
time). Encoding follows SentencePiece's ``bpe::Model::Encode`` and
``SentencePieceProcessor::Encode``:

1. **Normalize** (only the identity normalizer is supported, which is what Llama and Mistral
   models declare): prepend the *dummy prefix* ``▁`` when ``add_dummy_prefix`` is set and turn
   every U+0020 into ``▁`` (U+2581) when ``escape_whitespaces`` is set. Nothing else changes,
   so code point ``i`` of the text is code point ``i`` (or ``i + 1`` after the dummy prefix) of
   the normalized text.
2. **BPE** with the SentencePiece semantics of Definition 3 of *Formalizing BPE Tokenization*
   (Berglund & van der Merwe): start from single characters and repeatedly merge the adjacent
   pair whose concatenation is the vocabulary piece with the *highest score*, the leftmost such
   pair on ties. In the paper's terms the dictionary has a rule ``u ⋄ v`` for each split of each
   piece ``uv``, prioritised by ``score(uv)``; one subtlety the paper's strict rule order does
   not have is that pieces may share a score (Mistral's 15 whitespace pieces ``▁▁`` ... all
   score ``-1e9``), and SentencePiece then takes the leftmost pair among *all* pieces of that
   score. :func:`sp_bpe` implements it with the priority queue over a linked list of symbols of
   *Byte Pair Encoding and Data Structures* (``shared/papers/003``, "Priority Queue + Linked
   List"): ``O(n log n)``; :func:`sp_bpe_naive` is the ``O(n^2)`` reference.
3. **Ids**: a final symbol that is no vocabulary piece is unknown: with ``byte_fallback`` it
   becomes one ``<0xXX>`` token per UTF-8 byte, otherwise ``unk_id``, and a run of consecutive
   unknown symbols becomes a single ``unk_id`` (as ``PopulateSentencePieceText`` does). Pieces of
   type UNUSED are re-split into the two symbols that formed them (``resegment``).

**Pieces** (the :class:`~livetok.incremental.piece_encoding.PieceEncoding` contract). A merge only
ever forms a vocabulary piece, so no symbol ever spans a position ``i`` where the two
characters ``c[i-1] c[i]`` occur together in *no* vocabulary piece: cutting the text there
changes nothing (each side's merges are the restriction of the whole string's merge sequence
to that side, because the queue's order restricted to one side is that side's own order).
This is exactly how the model's training-time ``split_by_whitespace`` / ``split_digits`` /
``split_by_unicode_script`` shows up in its vocabulary: no Mistral piece has ``▁`` after another
character, and no piece holds an ASCII digit next to anything. We therefore derive the pieces
from the vocabulary itself: a *piece boundary* is every position whose character pair is not
*joinable* (inside some piece; or both characters unknown when there is no byte fallback, since
their ``unk`` tokens would be fused). This is finer than splitting by whitespace (most CJK
characters are pieces of their own and split too) and needs one character of look-ahead, so
``horizon(start) = end of the piece + 1``.

**User-defined pieces** (type USER_DEFINED; Mistral's v3 model has ``[REFERENCE_DOC_0]`` ...
``[REFERENCE_DOC_19]``, v7 also ``[REF]`` and ``[/REF]``). SentencePiece builds a
``PrefixMatcher`` (a trie) of them (``ModelInterface::InitializePieces``) and
``bpe::Model::Encode`` starts by cutting the *normalized* text into initial symbols with it:
at each position the longest user-defined piece that starts there is one symbol, marked
``freeze``, otherwise one character is; the scan then continues after the symbol (leftmost
longest, greedy, never overlapping). ``MaybeAddNewSymbolPair`` never pairs a frozen symbol, so a
user-defined match is one token of its own and the BPE runs on the text between matches; the
pieces stay in ``pieces_`` (they are NORMAL for the id lookup and the BPE). The normalizer uses
the same matcher (``Normalizer::NormalizePrefix``) only to copy a match through unnormalized;
with the identity normalizer that changes nothing but the space escaping, so user-defined
pieces holding a space or ``▁`` are refused (the matcher would then see text the raw text
does not spell) and the matches of the normalized text are those of the raw text. We scan
with one regular expression, the pieces longest first (:attr:`SentencePieceEncoding._ud_re`):
``finditer`` takes the first alternative that matches at each position and resumes after it,
which is the same scan.

*Pieces with user-defined pieces.* (a) The scan is synchronised at every pair boundary: a
match is an occurrence of a vocabulary piece, so its inner pairs are joinable and no match
spans a boundary; the scan reaches the boundary, and left of it the longest match at each
position fits on the left side. So each piece of the pair split is encoded on its own as
before, its matches being those of the whole text. (b) :meth:`SentencePieceEncoding.split`
also cuts *before and after every match*: a match start is a point where the scan resumes
(so the right side scans the same), a match end is where it resumes after the frozen symbol,
and no merge crosses a frozen symbol; a user-defined token is known, so no ``unk`` run fuses
across it either. A piece is thus a single match or has no match at all, and the piece at
``start`` is still a function of the text up to the end of its pair piece plus one character
(the scan inside that pair piece reads nothing beyond it), so ``horizon`` is unchanged and
dominated as before (the pieces of one pair piece share its horizon). (c) Algorithm 1 (the
glue of long pieces, ``supports_glue``) stays exact: a glued piece with no match holds no
occurrence of any user-defined piece at all (the scan tried every position), nor does any of
its substrings, so on it and on the old tokens of its prefix and suffix the encoding is the
plain BPE the theorem is about. A single match is one token; a model whose user-defined piece
is as long as ``GLUE_MIN_CP`` turns the glue off rather than glue inside a match. Without the
cuts of (b) the glue is wrong (measured, v7): replacing the ``x`` of ``([`` * 30 + ``[REFx``
+ ``)`` * 60, one piece, by ``]`` glues the old tokens ``…([``, ``[`` to a window that starts
``REF``, ``]))`` while SentencePiece gives ``[REF]``, ``))))``.
"""

from __future__ import annotations

import os
from itertools import accumulate, compress, count
from operator import add, not_
from pathlib import Path
from typing import Iterator, Sequence

import regex

from ..piece_memo import GenerationalCache
from ..vocab.find import MISTRAL_V1_ENV, find_mistral_v1
from ..glue import GLUE_MIN_CP
from ..stream import EncodeStreamMixin
from ..text import require_str, sanitize
from .bpe import sp_bpe
from .pairs import SentencePiecePairs
from .model_proto import PieceType, SentencePieceModel, read_model_file
from .tables import (
    SPACE,
    SentencePieceModelError,
    byte_piece_ids,
    check_supported,
    piece_tables,
    raw_pairs,
)

__all__ = [
    "PieceIdError",
    "SentencePieceEncoding",
    "SentencePieceModelError",
    "load_sentencepiece",
    "load_mistral_v1",
]

#: coarse words longer than this are encoded piece by piece (finest split) instead of whole
_LONG_WORD = 64
#: :meth:`SentencePieceEncoding._unpaired` skips the inside of long runs of one character
#: in ranges of at least this many characters (sampled every ``_SAMPLE`` characters)
_SKIP_FROM = 4096
_SAMPLE = 1024
#: strings longer than this take the pair engine (:mod:`.pairs`), shorter ones the heap
#: (both exact; the pair table is compiled only when a long string comes)
_PAIRS_FROM = 64


class PieceIdError(IndexError, ValueError):
    """A token id out of range: an ``IndexError``, as sentencepiece raises, and a
    ``ValueError``, as livetok raised before, so either ``except`` catches it."""


# --- the encoding ----------------------------------------------------------------------------


class SentencePieceEncoding(EncodeStreamMixin):
    """A SentencePiece BPE model as a livetok encoding (ids equal ``SentencePieceProcessor``'s).

    >>> enc = load_mistral_v1()                      # doctest: +SKIP
    >>> enc.encode("Hello world")                    # doctest: +SKIP
    [22557, 1526]
    """

    supports_glue = True

    def __init__(self, model: SentencePieceModel, *, name: str, source: str = "") -> None:
        ts, ns = model.trainer_spec, model.normalizer_spec
        check_supported(model, name)
        self.name = name
        self.source = source
        self.model = model
        self._pieces = list(model.pieces)
        self._types = list(model.types)
        n = len(self._pieces)
        self.add_dummy_prefix = ns.add_dummy_prefix
        self.escape_whitespaces = ns.escape_whitespaces
        self.byte_fallback = ts.byte_fallback
        self.unk_surface = ts.unk_surface
        #: the whitespace symbol of the normalized text
        self.space = SPACE if ns.escape_whitespaces else " "
        # pieces the BPE may form (SentencePiece's ``pieces_``) and the other, reserved ones
        self._piece_ids, self._reserved, unk_id = piece_tables(model, name)
        self.unk_id = unk_id
        self.bos_id = ts.bos_id
        self.eos_id = ts.eos_id
        self._neg_scores = [-s for s in model.scores]
        self._unused = frozenset(
            i for i, t in enumerate(self._types) if t == PieceType.UNUSED
        )
        self._byte_ids = byte_piece_ids(self._reserved, self._types, name) if self.byte_fallback else []
        #: the vocabulary on the pair engine (:mod:`.pairs`), compiled on the first long
        #: string (~0.5 s for Mistral's 32,000 pieces); None where ties keep the heap
        self._pair_table: SentencePiecePairs | None = None
        self._pairs_compiled = False
        self._byte_of = {bid: b for b, bid in enumerate(self._byte_ids)}
        # joinable character pairs: adjacent characters inside some formable piece
        pairs: set[str] = set()
        for p in self._piece_ids:
            for k in range(len(p) - 1):
                pairs.add(p[k : k + 2])
        self._pairs = frozenset(pairs)
        # the same pairs as they appear in the raw text (a space normalizes to ``▁``)
        self._raw_pairs = raw_pairs(pairs) if self.escape_whitespaces else frozenset(pairs)
        self._known_chars = frozenset(p for p in self._piece_ids if len(p) == 1) | frozenset(
            p for p in self._reserved if len(p) == 1
        )
        self._join_unknown = not self.byte_fallback
        # user-defined pieces: SentencePiece's PrefixMatcher (module docstring), longest first
        ud = sorted(
            (p for p, t in zip(self._pieces, self._types) if t == PieceType.USER_DEFINED),
            key=lambda p: (-len(p), p),
        )
        self.user_defined: tuple[str, ...] = tuple(ud)
        self._ud_re = regex.compile("|".join(regex.escape(p) for p in ud)) if ud else None
        #: Algorithm 1 stays exact unless a glued piece could be one user-defined match
        self.supports_glue = not ud or len(ud[0]) < GLUE_MIN_CP
        #: :class:`~livetok.incremental.piece_encoding.QuietEncoding` (:meth:`quiet`): a boundary is
        #: decided by the two characters around it, so ``M = 2`` (0: not offered, with
        #: user-defined pieces, whose matches the scan decides further away)
        self.quiet_margin = 0 if ud else 2
        self.max_piece_len = max(len(p) for p in self._piece_ids) if self._piece_ids else 1
        # Coarse words: a whitespace run starts a new word when no formable piece has the
        # space symbol after another character (checked here, true for Llama/Mistral); the
        # finest pieces are then found inside each word by the pair test.
        sp = self.space
        ws_chars = " \u2581" if self.escape_whitespaces else " "
        coarse_ok = not any(
            p[k] == sp and p[k - 1] != sp for p in self._piece_ids for k in range(1, len(p))
        ) and (sp in self._known_chars or not self._join_unknown)
        cls = regex.escape(ws_chars)
        if coarse_ok:
            self._coarse = regex.compile(f"[{cls}]+[^{cls}]*|[^{cls}]+")
        else:
            self._coarse = regex.compile(r"(?s).+")
        self._cache: GenerationalCache[tuple[str, bool], tuple[tuple[int, ...], tuple[int, ...]]]
        self._cache = GenerationalCache()
        self._cut_cache: GenerationalCache[str, tuple[int, ...]] = GenerationalCache()
        #: the last long piece encoded (not cached): a document asks for its ids, then for
        #: their lengths (``token_cp_lens``)
        self._last_long: tuple[tuple[str, bool], tuple[tuple[int, ...], tuple[int, ...]]] | None = None
        self.n_vocab = n

    # -- vocabulary ---------------------------------------------------------------------------

    def id_to_piece(self, token_id: int) -> str:
        """The vocabulary piece of ``token_id`` (``▁`` for spaces); :class:`PieceIdError` (an
        ``IndexError``, as sentencepiece raises) for an id out of range, negative ones too.

        Runtime complexity: ``O(1)``.
        """
        self._check_id(token_id)
        return self._pieces[token_id]

    def _check_id(self, token_id: int) -> None:
        """Raise :class:`PieceIdError` unless ``0 <= token_id < n_vocab``."""
        if not 0 <= token_id < self.n_vocab:
            raise PieceIdError(
                f"token id {token_id} out of range 0..{self.n_vocab - 1} of {self.name}"
            )

    def piece_to_id(self, piece: str) -> int:
        """Id of ``piece``, or ``unk_id`` when it is not in the vocabulary.

        Runtime complexity: ``O(len(piece))`` (hashing).
        """
        pid = self._piece_ids.get(piece)
        if pid is None:
            pid = self._reserved.get(piece, self.unk_id)
        return pid

    def score(self, token_id: int) -> float:
        """Merge score of ``token_id`` (higher merges first).

        Runtime complexity: ``O(1)``.
        """
        return -self._neg_scores[token_id]

    # -- normalization ------------------------------------------------------------------------

    def normalize(self, text: str, *, at_text_start: bool = True) -> str:
        """The normalized text SentencePiece runs BPE on (dummy prefix, spaces as ``▁``).

        >>> enc = load_mistral_v1()                  # doctest: +SKIP
        >>> enc.normalize("a b")                     # doctest: +SKIP
        '▁a▁b'

        Runtime complexity: ``O(len(text))``.
        """
        if self.escape_whitespaces:
            text = text.replace(" ", SPACE)
        if at_text_start and self.add_dummy_prefix and text:
            text = self.space + text
        return text

    # -- encoding -----------------------------------------------------------------------------

    def _ids_and_lens(self, norm: str) -> tuple[list[int], list[int]]:
        """Ids of a normalized string and the normalized code points each id covers."""
        if self._ud_re is None:
            table = self._pairs_for(norm)
            if table is not None:
                sym_ids, sym_lens = table.symbols(norm)
                if max(sym_ids, default=0) < table.n_vocab:
                    return sym_ids, sym_lens  # (no unknown character: the ids are final)
                ends = list(accumulate(sym_lens, initial=0))
                spans = list(zip(ends, ends[1:]))
            else:
                spans = self._bpe(norm)
        else:
            spans = self._ud_spans(norm, self._ud_re)
        ids: list[int] = []
        lens: list[int] = []
        get = self._piece_ids.get
        prev_unk = False
        for s, e in spans:
            w = norm[s:e]
            pid = get(w)
            if pid is None:
                pid = self._reserved.get(w, self.unk_id)
            if pid == self.unk_id:
                if self.byte_fallback:
                    # subtle: the character goes to its first byte token, 0 to the others
                    first = True
                    for b in w.encode("utf-8"):
                        ids.append(self._byte_ids[b])
                        lens.append(e - s if first else 0)
                        first = False
                elif prev_unk:
                    lens[-1] += e - s  # SentencePiece fuses a run of unknowns into one <unk>
                else:
                    ids.append(pid)
                    lens.append(e - s)
                prev_unk = True
            else:
                ids.append(pid)
                lens.append(e - s)
                prev_unk = False
        return ids, lens

    def _ud_spans(self, norm: str, ud_re: regex.Pattern[str]) -> list[tuple[int, int]]:
        """The final symbols of ``norm`` with user-defined pieces: each match of the prefix
        matcher's scan is one frozen symbol, the BPE runs on the text between matches."""
        spans: list[tuple[int, int]] = []
        at = 0
        for m in ud_re.finditer(norm):
            s, e = m.span()
            if s > at:
                spans.extend((at + a, at + b) for a, b in self._bpe(norm[at:s]))
            spans.append((s, e))
            at = e
        if at == 0:
            return self._bpe(norm)
        if at < len(norm):
            spans.extend((at + a, at + b) for a, b in self._bpe(norm[at:]))
        return spans

    def _pairs_for(self, s: str) -> SentencePiecePairs | None:
        """The pair table (:mod:`.pairs`) for a string longer than ``_PAIRS_FROM``, compiled
        on first use; None for shorter strings and for models it does not fit."""
        if len(s) <= _PAIRS_FROM:
            return None
        if not self._pairs_compiled:
            self._pair_table = SentencePiecePairs.compile(
                self._piece_ids, self._neg_scores, self._unused)
            self._pairs_compiled = True
        return self._pair_table

    def _bpe(self, s: str) -> list[tuple[int, int]]:
        """The final symbols of ``s``: the pair engine (:mod:`.pairs`) when the model
        compiles to it, else the priority queue (:func:`.bpe.sp_bpe`)."""
        table = self._pairs_for(s)
        if table is not None:
            return table.spans(s)
        return sp_bpe(s, self._piece_ids, self._neg_scores, self._unused)

    def _encode_piece_cached(self, piece: str, at_text_start: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
        key = (piece, at_text_start)
        hit = self._cache.recall(key)
        if hit is not None:
            return hit
        last = self._last_long
        if last is not None and last[0] == key:
            return last[1]  # a long piece asked again (its ids, then its lengths)
        norm = self.normalize(sanitize(piece), at_text_start=at_text_start)
        ids, lens = self._ids_and_lens(norm)
        if at_text_start and self.add_dummy_prefix and lens:
            lens[0] -= 1  # the dummy prefix is not in the text
            assert lens[0] >= 0
        hit = (tuple(ids), tuple(lens))
        if len(piece) <= _LONG_WORD:
            self._cache.put(key, hit)
        else:
            self._last_long = (key, hit)
        return hit

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> list[int]:
        """Token ids of one piece of :meth:`split` (``at_text_start``: it starts the text).

        >>> enc = load_mistral_v1()                  # doctest: +SKIP
        >>> enc.encode_piece("Hello", at_text_start=True)  # doctest: +SKIP
        [22557]

        Runtime complexity: ``O(m log m)`` for a piece of ``m`` code points, ``O(m)`` cached.
        """
        return list(self._encode_piece_cached(piece, at_text_start)[0])

    def token_cp_lens(
        self, piece: str, ids: Sequence[int], *, at_text_start: bool = False
    ) -> list[int]:
        """Code points of ``piece`` each token of ``ids`` covers (byte-fallback runs: first).

        Runtime complexity: as :meth:`encode_piece`.
        """
        got_ids, lens = self._encode_piece_cached(piece, at_text_start)
        if list(got_ids) != list(ids):
            raise ValueError(
                "token_cp_lens: ids are not the encoding of this piece; pass the ids that "
                "encode_piece(piece, at_text_start=...) returned for the same piece"
            )
        return list(lens)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, equal to ``SentencePieceProcessor.encode(text)`` (no BOS).

        Runtime complexity: ``O(n)`` splitting plus ``O(m log m)`` per uncached piece.
        """
        require_str(text, "encode")
        text = sanitize(text)
        out: list[int] = []
        extend = out.extend
        cache_get = self._cache.get
        first = True
        for m in self._coarse.finditer(text):
            word = m.group()
            hit = cache_get((word, first))
            if hit is not None:
                extend(hit[0])
            elif len(word) <= _LONG_WORD:
                extend(self._encode_piece_cached(word, first)[0])
            else:
                # long word (CJK, minified code): encode its finest pieces, each cacheable
                for a, b in self._word_pieces(word):
                    extend(self._encode_piece_cached(word[a:b], first and a == 0)[0])
            first = False
        return out

    def count(self, text: str) -> int:
        """Number of tokens of ``text``.

        Runtime complexity: as :meth:`encode`.
        """
        return len(self.encode(text))

    def pieces(self, text: str) -> list[tuple[int, int]]:
        """Code point spans ``(start, end)`` of the pieces of ``text`` (the spans of
        :meth:`split`, which tile the text), as ``Encoding.pieces``.

        Runtime complexity: ``O(len(text))``.
        """
        require_str(text, "pieces")
        return list(self.split(sanitize(text), 0))

    # -- decoding -----------------------------------------------------------------------------

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes ``token_id`` stands for (``▁`` as a space; control tokens: empty);
        :class:`PieceIdError` for an id out of range.

        Runtime complexity: ``O(len(piece))``.
        """
        self._check_id(token_id)
        b = self._byte_of.get(token_id)
        if b is not None:
            return bytes([b])
        t = self._types[token_id]
        if t == PieceType.CONTROL:
            return b""
        if t == PieceType.UNKNOWN:
            return self.unk_surface.encode("utf-8")
        p = self._pieces[token_id]
        if self.escape_whitespaces:
            p = p.replace(SPACE, " ")
        return p.encode("utf-8")

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``: the inverse of :meth:`encode` on text without unknowns.

        The dummy prefix's space is dropped from the first token, as SentencePiece does; an id
        out of range raises :class:`PieceIdError` (an ``IndexError``), as in sentencepiece.

        Runtime complexity: ``O(total bytes)``.
        """
        out = bytearray()
        leading = self.add_dummy_prefix
        for tid in ids:
            bs = self.token_bytes(tid)
            if leading and tid not in self._byte_of and bs:
                if bs.startswith(b" ") and not out:
                    bs = bs[1:]
                leading = False
            out += bs
        return out.decode("utf-8", errors="replace")

    # -- pieces (PieceEncoding protocol) ---------------------------------------------------------

    def _joinable(self, a: str, b: str) -> bool:
        """Whether no piece boundary may separate adjacent characters ``a`` and ``b``."""
        if a + b in self._raw_pairs:
            return True
        if not self._join_unknown:
            return False
        if self.escape_whitespaces:
            a = SPACE if a == " " else a
            b = SPACE if b == " " else b
        return a not in self._known_chars and b not in self._known_chars

    def _word_pieces(self, word: str) -> tuple[tuple[int, int], ...]:
        """Finest pieces of one coarse word, as spans relative to the word (cached): cut at
        each non-joinable pair, and around each user-defined match (module docstring)."""
        cuts = self._cut_cache.recall(word)
        if cuts is None:
            joinable = self._joinable
            cl = [0]
            for i in self._unpaired(word, 0, len(word)):
                if not joinable(word[i - 1], word[i]):
                    cl.append(i)
            cl.append(len(word))
            if self._ud_re is not None:
                # subtle: one scan of the whole word is the scan of each pair piece, as the
                # scan is synchronised at every pair boundary (module docstring, (a))
                more = {i for m in self._ud_re.finditer(word) for i in m.span()}
                if more:
                    cl = sorted(more.union(cl))
            cuts = tuple(cl)
            if len(word) <= _LONG_WORD:
                self._cut_cache.put(word, cuts)
        return tuple(zip(cuts, cuts[1:]))

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        """Yield ``(start_cp, end_cp)`` of each piece of ``text[pos:]`` (``pos`` a boundary).

        A boundary is every position whose character pair is not joinable, and each edge of a
        user-defined match (module docstring); the matcher's scan resumes at every boundary,
        so ``split(text, pos)`` is the tail of ``split(text)`` for every boundary ``pos``.

        >>> enc = load_mistral_v1()                  # doctest: +SKIP
        >>> [("hi  there 42"[s:e]) for s, e in enc.split("hi  there 42")]  # doctest: +SKIP
        ['hi', '  there', ' ', '4', '2']

        Runtime complexity: ``O(len(text) - pos)`` for the whole iteration, lazily.
        """
        for m in self._coarse.finditer(text, pos):
            s0 = m.start()
            for a, b in self._word_pieces(m.group()):
                yield s0 + a, s0 + b

    def horizon(self, text: str, start: int, limit: int) -> int:
        """End of the pair piece at ``start`` plus one (the character that ends it), or
        ``>= limit``. With user-defined pieces the piece at ``start`` may end earlier, at a
        match's edge, which the scan decides inside the pair piece: the same bound holds.

        Runtime complexity: ``O(min(h, limit) - start)``.
        """
        n = len(text)
        stop = min(n, max(limit, start + 1))
        joinable = self._joinable
        a, step = start + 1, 64
        while a < stop:
            b = min(stop, a + step)
            for i in self._unpaired(text, a - 1, b):
                if not joinable(text[i - 1], text[i]):
                    return i + 1
            a, step = b, step * 2
        return n + 1 if stop == n else stop

    def quiet(self, text: str) -> bool:
        """``QuietEncoding.quiet``: no position ``M`` or more from the ends of ``text`` is a
        piece boundary. *Locality*: without user-defined pieces a boundary is a pair that is
        not joinable (the coarse split's cuts before a whitespace run are such pairs: the
        coarse split is used only when no piece has the space symbol after another
        character), a function of the two characters around it; the horizon is the piece's
        end plus one.

        Runtime complexity: ``O(len(text))``, in C but for the candidate pairs.
        """
        m = self.quiet_margin
        if m <= 0:
            return False
        joinable = self._joinable
        return not any(not joinable(text[i - 1], text[i])
                       for i in self._unpaired(text, m - 1, len(text) - m + 1))

    def _unpaired(self, text: str, lo: int, hi: int) -> Iterator[int]:
        """The positions ``i`` in ``[lo + 1, hi)`` whose pair ``text[i - 1:i + 1]`` occurs in
        no piece as the raw text spells it (where a cut may be: :meth:`_joinable` decides),
        in increasing order, found by C iteration (a long word costs no Python step per
        character).

        A long range skips the inside of runs of 64 or more of one character ``c`` whose
        pair ``cc`` occurs in a piece (no position inside such a run is yielded): the
        characters sampled every ``_SAMPLE`` positions, each run found by a regex of that
        character (a line of a million ``a``: ~1 ms instead of ~90 ms).

        Runtime complexity: ``O(hi - lo)``.
        """
        if hi - lo < _SKIP_FROM:
            return self._pair_test(text, lo, hi)
        pairs = self._raw_pairs
        chars = {c for c in set(text[lo:hi:_SAMPLE]) if c + c in pairs}
        runs = sorted(m.span() for c in list(chars)[:8]
                      for m in regex.finditer(regex.escape(c) + "{64,}", text, pos=lo,
                                              endpos=hi))
        if not runs:
            return self._pair_test(text, lo, hi)
        out: list[int] = []
        at = lo
        for a, b in runs:
            out += self._pair_test(text, at, a + 1)  # up to the pair entering the run
            at = b - 1  # (the pairs inside the run are cc: no cut)
        out += self._pair_test(text, at, hi)
        return iter(out)

    def _pair_test(self, text: str, lo: int, hi: int) -> Iterator[int]:
        return compress(count(lo + 1), map(not_, map(self._raw_pairs.__contains__,
                                                     map(add, text[lo:hi - 1],
                                                         text[lo + 1:hi]))))

    # -- invariants -----------------------------------------------------------------------------

    def _check(self) -> None:
        """Assert the vocabulary tables are consistent (for tests).

        Runtime complexity: ``O(vocabulary size)``.
        """
        for p, i in self._piece_ids.items():
            assert self._pieces[i] == p, (p, i)
        for p, i in self._reserved.items():
            assert self._pieces[i] == p, (p, i)
        assert len(self._piece_ids) + len(self._reserved) == self.n_vocab
        assert self._types[self.unk_id] == PieceType.UNKNOWN
        for p in self.user_defined:
            assert self._types[self._piece_ids[p]] == PieceType.USER_DEFINED, p
        for (piece, _first), (ids, lens) in self._cache.items():
            assert len(ids) == len(lens) and sum(lens) == len(piece), (piece, ids, lens)

    def __repr__(self) -> str:
        return f"<SentencePieceEncoding {self.name!r} n_vocab={self.n_vocab}>"


# --- loading -------------------------------------------------------------------------------------


def load_sentencepiece(path: str | os.PathLike[str], *, name: str | None = None) -> SentencePieceEncoding:
    """Load a SentencePiece BPE ``.model`` file as an encoding.

    Runtime complexity: ``O(file size)``.
    """
    p = Path(path)
    model = read_model_file(p)
    return SentencePieceEncoding(model, name=name or p.stem, source=str(p))


def load_mistral_v1() -> SentencePieceEncoding:
    """The ``mistral-7b-v0.1`` encoding (32,000 pieces, byte fallback), found by
    :func:`~livetok.incremental.vocab.find.find_mistral_v1` and built at each call;
    ``get_encoding("mistral-7b-v0.1")`` keeps the one the registry loaded.

    Raises :class:`SentencePieceModelError` saying how to install the model when it is absent.

    Runtime complexity: ``O(file size)``.
    """
    path = find_mistral_v1()
    if path is None:
        raise SentencePieceModelError(
            "mistral-7b-v0.1: tokenizer.model.v1 not found; install it with "
            f"`pip install --no-deps mistral-common` or set {MISTRAL_V1_ENV} to a "
            "tokenizer.model file"
        )
    return load_sentencepiece(path, name="mistral-7b-v0.1")

