"""A BERT WordPiece encoding, exact against HF ``tokenizers``, and live in documents.

:class:`WordPieceEncoding` chains the pieces of a HF ``BertWordPiece`` pipeline:

1. *added tokens*: text that spells an added token with ``normalized: false`` (``[MASK]``,
   ``[CLS]`` ... in every BERT ``tokenizer.json``) is cut out first and becomes that token, as
   HF's ``AddedVocabulary`` does (leftmost-longest), even with ``add_special_tokens=False``;
2. :class:`~livetok.incremental.wordpiece.bert_normalize.BertNormalizer` on the rest;
3. E2E WordPiece (:mod:`livetok.incremental.wordpiece.e2e`, Section 4 of *Fast WordPiece
   Tokenization*): BertPreTokenizer and LinMaxMatch in one pass.

``add_special_tokens=True`` adds the post-processor's ``[CLS]`` ... ``[SEP]``; the default does
not (livetok counts the text's tokens).

**Pieces** (the :class:`~livetok.incremental.piece_encoding.PieceEncoding` contract). A piece is a
stretch of *source* text that normalizes and pre-tokenizes independently of its neighbours:
usually one word, one punctuation character, or one run of whitespace (its own piece, with no
tokens). A cut between characters ``a`` and ``b`` is made when

- ``b`` survives clean-text and is a canonical starter (so NFD cannot reorder marks across the
  cut, and no deleted character joins the neighbours),
- the normalized ``b`` starts with, or the normalized ``a`` ends with, whitespace or
  punctuation (so the pre-tokenizer separates words there anyway),
- ``a`` and ``b`` are not both plain whitespace (a run of spaces stays one piece),
- and no position ``q`` at or after the piece start has a prefix of an added token covering the
  cut (``q + k(q) > cut`` where ``k(q)`` is the longest added-token prefix at ``q``).

The decision at a cut reads the text only up to the character right of it, hence
``horizon = piece end + 1``: sound, and trivially monotone from piece to piece.

>>> from livetok.incremental import get_encoding
>>> enc = get_encoding("bert-base-uncased")
>>> enc.encode("Hello, [MASK] world!")
[7592, 1010, 103, 2088, 999]
>>> list(enc.split("Hi  there"))
[(0, 2), (2, 4), (4, 9)]
>>> enc.decode(enc.encode("Héllo, World!"))
'hello, world!'
"""

from __future__ import annotations

import re
import string
from operator import index
from typing import Any, Collection, Iterator, Mapping, Sequence

from ..piece_memo import GenerationalCache
from ..stream import EncodeStreamMixin
from ..text import require_str, sanitize
from .bert_normalize import (
    CUT_BEFORE_OK,
    HEAD_BREAK,
    SPACE_ONLY,
    TAIL_BREAK,
    BertNormalizer,
    bert_tables,
)
from .e2e import E2EWordPiece
from .linmaxmatch import LinMaxMatch

__all__ = ["WordPieceEncoding", "CLEANUPS"]

#: HF token ids are ``u32``
_U32 = 1 << 32
CLEANUPS = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)


#: slow (character by character) steps of one piece scan after which the quiet characters
#: learned so far are compiled into its run pattern
_QUIET_SCAN = 256


class WordPieceEncoding(EncodeStreamMixin):
    """A WordPiece encoding (BERT pipeline) implementing the ``PieceEncoding`` protocol.

    >>> from livetok.incremental import get_encoding
    >>> enc = get_encoding("bert-base-uncased")
    >>> enc.name, enc.supports_glue, enc.n_vocab
    ('bert-base-uncased', False, 30522)
    >>> ids = enc.encode("Tokenization!")
    >>> [enc.token_bytes(i) for i in ids]
    [b'token', b'##ization', b'!']

    Runtime complexity: construction ``O(M m)`` for the vocabulary's total length ``M`` and
    longest token ``m`` (Algorithm 2); encoding ``O(n)`` (Algorithm 3).
    """

    #: WordPiece is not a merge-rule BPE: the document re-encodes whole pieces instead
    supports_glue = False

    def __init__(
        self,
        name: str,
        vocab: Mapping[str, int],
        *,
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
        normalizer: BertNormalizer | None = None,
        added_tokens: Mapping[str, int] | None = None,
        special_tokens: Collection[str] = (),
        cls_sep: tuple[Sequence[int], Sequence[int]] = ((), ()),
        decoder_prefix: str | None = "##",
        decoder_cleanup: bool = True,
        source: str = "",
    ) -> None:
        self.name = name
        self.source = source
        self.normalizer = normalizer
        self._lmm = linmaxmatch_of(vocab, unk_token, continuing_subword_prefix,
                                   max_input_chars_per_word, source or name)
        t = bert_tables()
        self._e2e = E2EWordPiece(self._lmm, punctuation=t.punct_chars, whitespace=t.space_chars)
        self.added_tokens: dict[str, int] = dict(added_tokens or {})
        self.special_tokens: frozenset[str] = frozenset(special_tokens)
        unknown = self.special_tokens - set(self.added_tokens)
        if unknown:
            raise ValueError(f"special tokens {sorted(unknown)} must also be in added_tokens")
        self._cls, self._sep = list(cls_sep[0]), list(cls_sep[1])
        self.decoder_prefix = decoder_prefix
        self.decoder_cleanup = decoder_cleanup
        self._id_to_token: dict[int, str] = dict(self._lmm.id_to_token)
        self._id_to_token.update({i: s for s, i in self.added_tokens.items()})
        self.n_vocab = max(self._id_to_token, default=-1) + 1
        # added tokens: leftmost-longest alternation, and a prefix trie for piece cutting
        if self.added_tokens:
            alts = sorted((s for s in self.added_tokens if s), key=lambda s: (-len(s), s))
            self._added_re: re.Pattern[str] | None = re.compile("|".join(map(re.escape, alts)))
        else:
            self._added_re = None
        self._added_trie: dict[str, Any] = {}
        for s in self.added_tokens:
            node = self._added_trie
            for ch in s:
                node = node.setdefault(ch, {})
        self._added_first: frozenset[str] = frozenset(s[0] for s in self.added_tokens if s)
        self._ident_flags: dict[str, int] = {}
        #: a run of *plain* characters: ASCII letters and digits that start no added token
        #: (no cut inside the run or at its inner edges, and the normalizer keeps each as one
        #: character); None when some of them is not plain under this normalizer
        plain = [c for c in string.ascii_letters + string.digits if c not in self._added_first]
        self._plain_run: re.Pattern[str] | None = None
        if plain and all(self._flags(c) == CUT_BEFORE_OK for c in plain):
            self._plain_run = re.compile("[" + "".join(plain) + "]+")
        #: *quiet* characters, learned as pieces are cut (issue 35: a line of emoji ZWJ
        #: sequences is one 100,000-character word): no cut before or after one inside a run
        #: of them (no head or tail break), no break character anywhere in its normal form,
        #: no added token starting with it; each with its normal form's length. The plain
        #: characters are the first. ``_quiet_re`` matches runs of those known when it was
        #: compiled (:meth:`_compile_quiet`), ``_quiet_len`` maps each to
        #: as many characters as its normal form has (``str.translate``: a run's normal
        #: length in one C call)
        self._quiet: dict[str, int] = {c: 1 for c in plain} if self._plain_run else {}
        self._quiet_re: re.Pattern[str] | None = self._plain_run
        self._quiet_len: dict[int, str] = {ord(c): "x" * k for c, k in self._quiet.items()}
        self._quiet_compiled = len(self._quiet)
        self._quiet_gone: list[str] = []  # the quiet characters whose normal form is empty
        #: a run of white space that is only space (``SPACE_ONLY``: no cut between two of
        #: them) and starts no added token: a line of 25,000 spaces is one piece
        blanks = [c for c in " \t\n\r" if c not in self._added_first
                  and self._flags(c) & SPACE_ONLY]
        self._space_run: re.Pattern[str] | None = re.compile(
            "[" + "".join(map(re.escape, blanks)) + "]+") if blanks else None
        self._piece_cache: GenerationalCache[str, list[int]] = GenerationalCache()
        self._lens_cache: GenerationalCache[str, tuple[list[int], list[int]]] = GenerationalCache()

    def __repr__(self) -> str:
        return f"<WordPieceEncoding {self.name!r} ({self.n_vocab} tokens, from {self.source!r})>"

    @property
    def vocab(self) -> Mapping[str, int]:
        """The WordPiece vocabulary (token -> id), without added tokens that are not in it.

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").vocab["##s"]
        2015

        Runtime complexity: ``O(1)``.
        """
        return self._lmm.vocab

    @property
    def unk_id(self) -> int:
        """Id of the unknown token.

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").unk_id
        100

        Runtime complexity: ``O(1)``.
        """
        return self._lmm.unk_id

    @property
    def linmaxmatch(self) -> LinMaxMatch:
        """The LinMaxMatch trie (Algorithm 1 on single words: ``.tokenize(word)``).

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").linmaxmatch.tokenize("unaffable")
        [14477, 20961, 3468]

        Runtime complexity: ``O(1)``.
        """
        return self._lmm

    # -- encoding --------------------------------------------------------------------------------

    def _segments(self, text: str) -> Iterator[tuple[int, int, int | None]]:
        """``(start, end, added_token_id or None)`` covering ``text``: added tokens cut out."""
        pos = 0
        if self._added_re is not None and not self._added_first.isdisjoint(text):
            for m in self._added_re.finditer(text):
                if m.start() > pos:
                    yield pos, m.start(), None
                yield m.start(), m.end(), self.added_tokens[m.group()]
                pos = m.end()
        if pos < len(text):
            yield pos, len(text), None

    def _normalize(self, text: str) -> str:
        return self.normalizer.normalize(text) if self.normalizer is not None else text

    def _encode(self, text: str) -> list[int]:
        out: list[int] = []
        for a, b, tid in self._segments(text):
            if tid is not None:
                out.append(tid)
            else:
                out.extend(self._e2e.tokenize(self._normalize(text[a:b])))
        return out

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text``, as HF ``Tokenizer.encode(text, add_special_tokens=...).ids``.

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").encode("Σ ß", add_special_tokens=True)
        [101, 1173, 1096, 102]

        Runtime complexity: ``O(len(text))``.
        """
        require_str(text, "encode")
        ids = self._encode(sanitize(text))
        if add_special_tokens:
            return self._cls + ids + self._sep
        return ids

    def count(self, text: str, *, add_special_tokens: bool = False) -> int:
        """Number of tokens of ``text`` (``len(encode(text, ...))``).

        Runtime complexity: as :meth:`encode`.
        """
        return len(self.encode(text, add_special_tokens=add_special_tokens))

    def pieces(self, text: str) -> list[tuple[int, int]]:
        """Code point spans ``(start, end)`` of the pieces of ``text`` (the spans of
        :meth:`split`, which tile the text, white space included), as ``Encoding.pieces``.

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").pieces("Hi, you")
        [(0, 2), (2, 3), (3, 4), (4, 7)]

        Runtime complexity: ``O(len(text))``.
        """
        require_str(text, "pieces")
        return list(self.split(sanitize(text), 0))

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> list[int]:
        """Token ids of one piece from :meth:`split` (``[]`` for whitespace).

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").encode_piece("Unaffable")
        [14477, 20961, 3468]

        Pieces are memoized (a bounded :class:`.cache.GenerationalCache`): a document's
        words repeat.

        Runtime complexity: ``O(len(piece))``; ``O(1)`` expected for a cached piece.
        """
        ids = self._piece_cache.recall(piece)
        if ids is None:
            ids = self._long_quiet(piece)
        if ids is None:
            ids = self._encode(sanitize(piece))
            if len(piece) <= 256:
                self._piece_cache.put(piece, ids)
        return list(ids)

    def token_cp_lens(
        self, piece: str, ids: Sequence[int], *, at_text_start: bool = False
    ) -> list[int]:
        """Code points of ``piece`` covered by each token of ``ids`` (they sum to ``len(piece)``).

        A token starts at the source character of its first normalized character; leading
        whitespace and deleted characters go to the token on their left (or the first token).

        >>> from livetok.incremental import get_encoding
        >>> enc = get_encoding("bert-base-uncased")
        >>> [enc.token_bytes(i) for i in enc.encode_piece("Unaffable")]
        [b'una', b'##ffa', b'##ble']
        >>> enc.token_cp_lens("Unaffable", enc.encode_piece("Unaffable"))
        [3, 3, 3]

        Runtime complexity: ``O(len(piece) log len(piece))`` (the aligned, slow normalizer);
        ``O(1)`` expected for a piece seen before (memoized like :meth:`encode_piece`).
        """
        cached = self._lens_cache.recall(piece)
        if cached is not None and cached[0] == list(ids):
            return list(cached[1])
        if self._long_quiet(piece) == list(ids):
            return [len(piece)]
        lens = self._token_cp_lens(sanitize(piece), ids)
        if len(piece) <= 256:
            self._lens_cache.put(piece, (list(ids), lens))
        return list(lens)

    def _long_quiet(self, piece: str) -> list[int] | None:
        """``[unk]`` for a piece of quiet characters (``_quiet``) whose normal form is longer
        than ``max_input_chars_per_word``, without normalizing it; else None. Such a piece is
        one word (no break character in any character's normal form, so HF's pre-tokenizer
        leaves it whole), its normal form as long as its characters' normal forms together
        (the normalizer works character by character; NFD's reordering keeps the length):
        HF's word-length limit makes it ``[UNK]``. A hostile line (``"a" * 100_000``, emoji
        ZWJ sequences) is one such piece, re-read on every keystroke in it.

        Runtime complexity: ``O(len(piece))``, two C calls.
        """
        run = self._quiet_re
        limit = self._lmm.max_input_chars_per_word
        if run is None or len(piece) <= limit:
            return None
        m = run.match(piece)
        if m is None or m.end() != len(piece):
            return None
        # at least its length less the characters that vanish (few kinds: C counts)
        gone = self._quiet_gone
        if len(gone) <= 8 and len(piece) - sum(map(piece.count, gone)) > limit:
            return [self._lmm.unk_id]
        return [self._lmm.unk_id] if len(piece.translate(self._quiet_len)) > limit else None

    def _learn_quiet(self, ch: str, f: int) -> None:
        """Add ``ch`` (flags ``f``) to the quiet characters when it is one (see ``_quiet``).

        Runtime complexity: ``O(1)``.
        """
        if f & (HEAD_BREAK | TAIL_BREAK) or ch in self._quiet or ch in self._added_first \
                or "\ud800" <= ch <= "\udfff":
            return
        norm = self._normalize(ch)
        t = bert_tables()
        if any(ord(c) in t.pretok_space_set or ord(c) in t.punct_set for c in norm):
            return
        self._quiet_len[ord(ch)] = "x" * len(norm)
        self._quiet[ch] = len(norm)
        if not norm:
            self._quiet_gone.append(ch)

    def _compile_quiet(self) -> re.Pattern[str] | None:
        """The run pattern of the quiet characters known now (recompiled when some were learned
        since the last time; ``_next_cut`` asks after ``_QUIET_SCAN`` slow steps in one scan, so
        the compile's ``O(k)`` is paid for by the scan it shortens)."""
        if len(self._quiet) > self._quiet_compiled:
            self._quiet_compiled = len(self._quiet)
            self._quiet_re = re.compile("[" + "".join(map(re.escape, self._quiet)) + "]+")
        return self._quiet_re

    def _token_cp_lens(self, piece: str, ids: Sequence[int]) -> list[int]:
        starts: list[int] = []
        got: list[int] = []
        for a, b, tid in self._segments(piece):
            if tid is not None:
                got.append(tid)
                starts.append(a)
                continue
            seg = piece[a:b]
            if self.normalizer is not None:
                norm, src = self.normalizer.normalize_aligned(seg)
            else:
                norm, src = seg, list(range(len(seg)))
            for t, s, _ in self._e2e.words_with_spans(norm):
                got.append(t)
                starts.append(a + src[s])
        if got != list(ids):
            raise ValueError(
                f"ids {list(ids)[:8]}... are not the encoding of this piece ({got[:8]}...): pass "
                "the ids that encode_piece returned for it"
            )
        if not starts:
            return []
        lens: list[int] = []
        prev = 0
        for k in range(len(starts)):
            nxt = len(piece) if k + 1 == len(starts) else max(prev, starts[k + 1])
            lens.append(nxt - prev)
            prev = nxt
        return lens

    # -- pieces ----------------------------------------------------------------------------------

    def _flags(self, ch: str) -> int:
        if self.normalizer is not None:
            return self.normalizer.char_flags(ch)
        f = self._ident_flags.get(ch)
        if f is None:
            t = bert_tables()
            f = CUT_BEFORE_OK
            if ord(ch) in t.pretok_space_set:
                f |= HEAD_BREAK | TAIL_BREAK | SPACE_ONLY
            elif ord(ch) in t.punct_set:
                f |= HEAD_BREAK | TAIL_BREAK
            self._ident_flags[ch] = f
        return f

    def _added_prefix_len(self, text: str, q: int) -> int:
        """``k(q)``: length of the longest prefix of ``text[q:]`` that starts an added token."""
        node = self._added_trie
        k = 0
        n = len(text)
        while q + k < n:
            node = node.get(text[q + k])  # type: ignore[assignment]
            if node is None:
                break
            k += 1
        return k

    def _next_cut(self, text: str, start: int, give_up: int) -> int:
        """End of the piece that starts at ``start`` (a boundary); ``give_up + 1`` if it is
        past ``give_up`` (the caller only needs a lower bound then)."""
        n = len(text)
        flags = self._flags
        trie = self._added_trie
        cover = start
        prev = flags(text[start]) if start < n else 0
        p = start + 1
        run = self._quiet_re
        blank = self._space_run
        learn = self._learn_quiet
        slow = 0
        while p < n:
            q = p - 1
            if (run is not None and (m := run.match(text, q)) is not None and m.end() > p) or (
                    blank is not None and (m := blank.match(text, q)) is not None
                    and m.end() > p):
                # quiet characters (or only-space ones) from q on: no cut before any of them
                # but the first
                e = m.end()
                if e - 1 > give_up:
                    return max(p, give_up + 1) + 1
                p = e
                prev = flags(text[e - 1])
                continue
            if text[q] in trie:
                cover = max(cover, q + self._added_prefix_len(text, q))
            f = flags(text[p])
            if not f & (HEAD_BREAK | TAIL_BREAK):
                learn(text[p], f)
            slow += 1
            if slow == _QUIET_SCAN:
                run = self._compile_quiet()
            if (
                p >= cover
                and f & CUT_BEFORE_OK
                and (f & HEAD_BREAK or prev & TAIL_BREAK)
                and not (f & prev & SPACE_ONLY)
            ):
                return p
            if p > give_up:
                return p + 1
            prev = f
            p += 1
        return n

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        """Yield ``(start_cp, end_cp)`` pieces tiling ``text[pos:]`` (``pos``: a piece boundary).

        >>> from livetok.incremental import get_encoding
        >>> enc = get_encoding("bert-base-uncased")
        >>> [ "Héllo, wörld!"[a:b] for a, b in enc.split("Héllo, wörld!")]
        ['Héllo', ',', ' ', 'wörld', '!']

        Runtime complexity: ``O(len(text) - pos)``, lazily.
        """
        n = len(text)
        a = pos
        while a < n:
            b = self._next_cut(text, a, n)
            yield a, b
            a = b

    def horizon(self, text: str, start: int, limit: int) -> int:
        """The end of the piece at ``start``, plus one (module docstring: the cut rule).

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").horizon("hello world", 0, 11)
        6

        Runtime complexity: ``O(piece length)``, and at most ``O(limit - start)``.
        """
        return self._next_cut(text, start, limit) + 1

    # -- decoding --------------------------------------------------------------------------------

    def token_bytes(self, token_id: int) -> bytes:
        """UTF-8 of the vocabulary entry of ``token_id`` (``##`` included).

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").token_bytes(2015)
        b'##s'

        Runtime complexity: ``O(1)``.
        """
        tok = self._id_to_token.get(token_id)
        if tok is None:
            raise KeyError(
                f"token id {token_id} is not in {self.name} (ids are 0..{self.n_vocab - 1})"
            )
        return tok.encode("utf-8")

    def id_to_token(self, token_id: int) -> str | None:
        """The token string of ``token_id`` (``None`` if unknown).

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").id_to_token(2015)
        '##s'

        Runtime complexity: ``O(1)``.
        """
        return self._id_to_token.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        """The id of ``token`` (an added token or a vocabulary entry), or ``None``.

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("bert-base-uncased").token_to_id("[MASK]")
        103

        Runtime complexity: ``O(1)``.
        """
        tid = self.added_tokens.get(token)
        return tid if tid is not None else self._lmm.vocab.get(token)

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        """Text of ``ids`` as HF's ``Tokenizer.decode`` gives it (WordPiece decoder, cleanup).

        >>> from livetok.incremental import get_encoding
        >>> enc = get_encoding("bert-base-uncased")
        >>> enc.decode([101, 7592, 1010, 2088, 999, 102])
        'hello, world!'

        An id the vocabulary does not hold is skipped, as HF skips it; an id that is not an
        integer (``int`` or anything with ``__index__``) raises ``TypeError`` and one outside ``0..2**32 - 1`` (HF's ``u32``, where
        HF raises ``OverflowError``) ``ValueError``.

        Runtime complexity: ``O(total token length)``.
        """
        toks = []
        for i in ids:
            try:
                i = index(i)  # ints, and numpy's integers, as HF takes them
            except TypeError:
                raise TypeError(f"token ids are ints, not {type(i).__name__} ({i!r})") from None
            if not 0 <= i < _U32:
                raise ValueError(f"token id {i} is outside 0..2**32 - 1")
            t = self._id_to_token.get(i)
            if t is None or (skip_special_tokens and t in self.special_tokens):
                continue
            toks.append(t)
        if self.decoder_prefix is None:
            return " ".join(toks)
        prefix = self.decoder_prefix
        out = []
        for k, t in enumerate(toks):
            if k:
                t = t.replace(prefix, "", 1) if t.startswith(prefix) else " " + t
            if self.decoder_cleanup:
                for a, b in CLEANUPS:
                    t = t.replace(a, b)
            out.append(t)
        return "".join(out)

    # -- invariants ------------------------------------------------------------------------------

    def _check(self, *, brute_force: bool | None = None) -> None:
        """Assert the automata's invariants; Definition 1 by brute force for small vocabularies.

        Runtime complexity: ``O(trie)``; with ``brute_force``, ``O(M m^2)``.
        """
        if brute_force is None:
            brute_force = len(self._lmm.vocab) <= 2000
        self._e2e._check()
        if brute_force:
            self._lmm._check()
        for s, i in self.added_tokens.items():
            assert self._id_to_token[i] == s, (s, i)


#: vocabularies with at least this many tokens keep their LinMaxMatch tables in the
#: vocabulary cache (bert-base-uncased's 30,522: built in ~0.4 s, read in ~0.03 s); smaller
#: ones, built in milliseconds, are built every time
CACHE_MIN_TOKENS = 5_000


def linmaxmatch_of(vocab: Mapping[str, int], unk_token: str, prefix: str, max_chars: int,
                   source: str) -> LinMaxMatch:
    """The :class:`LinMaxMatch` of ``vocab`` and the options, its tables (Algorithm 2's trie,
    failure links and pops: :meth:`LinMaxMatch.tables`) read from the vocabulary cache
    (:mod:`..vocab_cache`, keyed by the vocabulary and the options, and by
    ``linmaxmatch.py``'s code) when it holds them, else built and put there. ``source``
    names the cache file (one per source).

    Runtime complexity: ``O(vocabulary)`` to key and read the cache; Algorithm 2's
    ``O(M m)`` on a miss.
    """
    import marshal

    from ..vocab import parse_store as vocab_cache
    from . import linmaxmatch

    def build(tables: Any = None) -> LinMaxMatch:
        return LinMaxMatch(vocab, unk_token=unk_token, suffix_indicator=prefix,
                           max_input_chars_per_word=max_chars, tables=tables)

    if len(vocab) < CACHE_MIN_TOKENS:
        return build()
    built: list[LinMaxMatch] = []

    def tables() -> Any:
        built.append(build())
        return built[0].tables()

    key = marshal.dumps((list(vocab.items()), unk_token, prefix, int(max_chars)))
    got = vocab_cache.cached("linmaxmatch", source, [key], tables,
                             valid=LinMaxMatch.valid_tables, code=[linmaxmatch.__file__])
    return built[0] if built else build(got)
