"""A tiktoken-compatible encoding: regex pre-tokenization + byte-level BPE, in pure Python.

``Encoding.encode`` returns exactly tiktoken's ``encode_ordinary``: special tokens are known by
name (:attr:`Encoding.special_tokens`) but text that spells ``<|endoftext|>`` is ordinary text,
because editors hold such text and must count it without an exception. Code written for
tiktoken's ``encode`` gets tiktoken's behaviour by saying so: ``allowed_special`` turns the
named special tokens spelled in the text into their ids, and ``disallowed_special`` (tiktoken's
default is ``"all"``, livetok's is none) raises ``ValueError`` where the text spells one.

Surrogates: the methods that return ids only (``encode``, ``count``, ...) join a surrogate
pair as tiktoken does (:func:`~livetok.incremental.text.join_surrogates`), those that return
code point offsets (``pieces``, ``encode_by_piece``) replace each surrogate by U+FFFD
(:func:`~livetok.incremental.text.sanitize`); :mod:`livetok.incremental.text` says why.

One concept: :class:`Encoding`, tiktoken's whole ``Encoding`` API (encode and decode, special
tokens, batches, single tokens) over one vocabulary, pre-tokenizer and piece cache
(:class:`PieceCache`), plus the piece-level methods the :class:`~livetok.incremental.Document`
uses. Every method reads the same tables and cache, and tiktoken's API is one class: split
across modules, it would be one class in several files. The algorithms it calls live in
:mod:`.bpe`, :mod:`.pretokenize` and :mod:`.fastsplit`; its measured choices are in
``docs/algorithms.md``, section 1 ("Encoder choices").
"""

from __future__ import annotations

from array import array
from collections import deque
from functools import cached_property, partial
from operator import index
from typing import AbstractSet, Any, Callable, Collection, Iterable, Iterator, Literal, Mapping
from typing import Sequence

import regex

from .bpe import SCAN_MAX, bpe_encode, scan_ids
from ..piece_memo import GenerationalCache
from .pretokenize import PATTERNS, Pretokenizer
from ..stream import EncodeStreamMixin
from ..text import join_surrogates, require_str, sanitize


__all__ = ["Encoding", "UnknownTokenError", "PieceCache", "unpickle_encoding"]

#: the name :class:`Pretokenizer` knows each tiktoken pattern by
_PATTERN_NAMES = {pat: name for name, pat in PATTERNS.items()}
#: bytes that are *not* UTF-8 continuation bytes (0b10xxxxxx), for counting characters
_NON_CONTINUATION = bytes(b for b in range(256) if b & 0xC0 != 0x80)
#: characters per block of :meth:`Encoding._encode_fast`: it bounds the memory of the
#: per-block lists; speed hardly depends on it (docs/algorithms.md, "Encoder choices")
_BLOCK_CHARS = 1 << 16
#: longer pieces are not kept in the cache between calls (they are rare and can be huge)
_CACHE_PIECE_CHARS = 64
#: run an iterator to its end in C, keeping nothing (``deque(it, maxlen=0)``)
_drain: Callable[[Iterable[object]], object] = partial(deque, maxlen=0)


class PieceCache(GenerationalCache[str, tuple[int, ...]]):
    """``piece -> ids`` (a tuple) of the pieces seen lately; ``cache[piece]`` encodes a piece
    that is missing (``__missing__``), so looking up a block's pieces by ``map`` is one C loop
    that calls Python only for new pieces, with no ``None`` checks.

    A miss is one Python call: the older generation (see :mod:`..piece_memo`: the memo is bounded to
    two generations), then the whole-piece rank lookup and, for a piece that is not a token,
    the rank scan of :func:`.bpe.scan_ids` (the heap BPE for long pieces). Long pieces are
    kept only until :meth:`end_call`, so that each distinct piece is BPE-encoded once per call
    (texts repeat their pieces) without keeping big strings.
    """

    __slots__ = ("_ranks", "_rget", "_rank_of", "_call_only")

    def __init__(self, ranks: dict[bytes, int], limit: int | None = None) -> None:
        super().__init__(limit)
        self._ranks = ranks
        self._rget = ranks.get
        self._rank_of = ranks.__getitem__
        self._call_only: list[str] = []

    def encode_new(self, piece: str) -> tuple[int, ...]:
        """Token ids of ``piece`` (sanitized), computed (the cache is not read or written).

        Runtime complexity: ``O(m log m)`` for ``m`` bytes.
        """
        data = piece.encode()
        r = self._rget(data)
        if r is not None:
            return (r,)
        # subtle: tuples of ints, not lists: the garbage collector stops tracking them, so a
        # big cache does not lengthen every full collection
        if len(data) <= SCAN_MAX:
            return scan_ids(data, self._rget, self._rank_of)
        return tuple(bpe_encode(data, self._ranks))

    def __missing__(self, piece: str) -> tuple[int, ...]:
        ids = self._old.get(piece)
        if ids is None:
            ids = self.encode_new(piece)
        self.put(piece, ids)
        if len(piece) > _CACHE_PIECE_CHARS:
            self._call_only.append(piece)
        return ids

    def lookup(self, piece: str) -> tuple[int, ...]:
        """Token ids of one piece outside a call (long pieces are computed, not kept).

        Runtime complexity: ``O(1)`` when cached, else as :meth:`encode_new`.
        """
        ids = self.recall(piece)
        if ids is None:
            ids = self.encode_new(piece)
            if len(piece) <= _CACHE_PIECE_CHARS:
                self.put(piece, ids)
        return ids

    def end_call(self) -> None:
        """Forget the long pieces of the call that ends."""
        # subtle: another thread's call may share the cache; dropping its long pieces early
        # costs it a re-encode, never a wrong id
        while self._call_only:
            self.forget(self._call_only.pop())


class UnknownTokenError(KeyError, ValueError):
    """A token id that names no token: out of range, negative, or in the gap between the
    ordinary and the special tokens. Both a ``KeyError``, as tiktoken raises, and a
    ``ValueError``, as livetok raised before, so either ``except`` catches it."""

    def __str__(self) -> str:
        # KeyError's own __str__ shows the repr of its argument, quotes included
        return str(self.args[0]) if self.args else ""


class Encoding(EncodeStreamMixin):
    """An OpenAI-style encoding (``o200k_base``, ``cl100k_base``, ``r50k_base``, ...).

    >>> from livetok.incremental import get_encoding
    >>> enc = get_encoding("cl100k_base")
    >>> enc.encode("hello world")
    [15339, 1917]
    >>> enc.decode([15339, 1917])
    'hello world'
    """

    supports_glue = True
    #: whether :meth:`encode` gives special tokens' ids for their text (a tokenizer.json's
    #: added tokens: :mod:`..hf.bytelevel_file`); tiktoken's ``encode_ordinary`` never does,
    #: so their code point width in the tables is 0
    specials_in_text = False
    #: whether tiktoken built from this encoding's ``pat_str``, ``mergeable_ranks`` and
    #: ``special_tokens`` gives its ids (``encode_ordinary``): a reference for checks; False
    #: for a tokenizer.json file (its merges' own priorities, its added tokens)
    tiktoken_equivalent = True
    #: :meth:`encode` joins a surrogate pair into one character, as tiktoken does (see module
    #: docstring); :func:`.stream.encode_stream` reads this to do the same across chunks
    joins_surrogate_pairs = True

    def __init__(
        self,
        name: str,
        *,
        pat_str: str | None = None,
        mergeable_ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int] | None = None,
        source: str = "",
        pretokenizer: Pretokenizer | None = None,
    ) -> None:
        self.name = name
        self.source = source
        if pretokenizer is not None:
            # a split built by the caller (a tokenizer.json file's: :mod:`..hf.bytelevel_file`)
            self._pre = pretokenizer
        else:
            # subtle: Pretokenizer keys its fast splitter and horizon readers by name; a known
            # pattern under another name (tiktoken's "gpt2", a user's own encoding) gets them
            pre_name = name if pat_str is None else _PATTERN_NAMES.get(pat_str, name)
            self._pre = Pretokenizer(pre_name, pat_str)
        self.pat_str = self._pre.pat_str
        #: :class:`~.piece_encoding.QuietEncoding`'s ``M``, the pre-tokenizer's (punctuation
        #: runs of the tiktoken patterns, :meth:`quiet`; 0 for others)
        self.quiet_margin: int = self._pre.quiet_margin
        #: :class:`~.piece_encoding.InnerEncoding`'s flag (:meth:`inner_boundaries` offered: the
        #: three tiktoken patterns, not a file's derived one)
        self.inner_windows: bool = self._pre.inner_windows
        self.mergeable_ranks: dict[bytes, int] = dict(mergeable_ranks)
        self.special_tokens: dict[str, int] = dict(special_tokens or {})
        self.max_token_value = max(
            [*self.mergeable_ranks.values(), *self.special_tokens.values()], default=-1
        )
        # the per-token tables (decoder, lead-byte counts, CLEAN flags) are built on first use
        # (decode, a Document), which `livetok count` never makes
        self._cache = PieceCache(self.mergeable_ranks)
        self._special_res: dict[frozenset[str], Any] = {}

    @cached_property
    def _tables(self) -> tuple[list[bytes | None], array[int], bytearray]:
        """``(decoder, lead, clean)``, built once: the bytes of each id (``None`` in a gap),
        the characters that *start* in each token (UTF-8 lead bytes: a token's code point
        length), and 2 (the document's CLEAN flag) where a token starts on a character
        boundary. Two threads may both build them; the results are equal.

        Runtime complexity: ``O(vocabulary bytes)``.
        """
        size = self.max_token_value + 1
        decoder: list[bytes | None] = [None] * size
        wide = self.specials_in_text and any(len(t) > 255 for t in self.special_tokens)
        lead = array("I", bytes(4 * size)) if wide else array("B", bytes(size))
        clean = bytearray(size)
        for tok, rank in self.mergeable_ranks.items():
            decoder[rank] = tok
            lead[rank] = len(tok.translate(None, _CONTINUATION_BYTES))
            if not 0x80 <= tok[0] < 0xC0:
                clean[rank] = 2
        for tok_s, rank in self.special_tokens.items():
            # an id with two names decodes to the first (o200k_harmony's 200018 to
            # <|endofprompt|>, as in tiktoken)
            if decoder[rank] is None:
                decoder[rank] = tok_s.encode("utf-8")
                if self.specials_in_text:
                    lead[rank] = len(tok_s)  # a document holds its characters
            clean[rank] = 2
        return decoder, lead, clean

    @property
    def _decoder(self) -> list[bytes | None]:
        return self._tables[0]

    @property
    def clean_starts(self) -> bytearray:
        """``clean_starts[id]``: 2 (the document's CLEAN flag) where token ``id`` starts on a
        character boundary, else 0."""
        return self._tables[2]

    # -- tiktoken-compatible API -------------------------------------------------------------

    @property
    def n_vocab(self) -> int:
        """Number of token ids (``max_token_value + 1``), as tiktoken defines it."""
        return self.max_token_value + 1

    def encode(
        self,
        text: str,
        *,
        allowed_special: AbstractSet[str] | Literal["all"] = frozenset(),
        disallowed_special: Collection[str] | Literal["all"] = (),
    ) -> list[int]:
        """Token ids of ``text``; equal to tiktoken's ``encode_ordinary``.

        With ``allowed_special`` (names of special tokens, or ``"all"``), text that spells one
        of them becomes its id, and with ``disallowed_special`` such text raises
        ``ValueError``: both as in tiktoken's ``encode``, whose ids are then returned. Only the
        defaults differ: none allowed (as tiktoken) and none disallowed (tiktoken: ``"all"``).

        >>> from livetok.incremental import get_encoding
        >>> enc = get_encoding("cl100k_base")
        >>> enc.encode("hi<|endoftext|>"), enc.encode("hi<|endoftext|>", allowed_special="all")
        ([6151, 27, 91, 8862, 728, 428, 91, 29], [6151, 100257])

        Runtime complexity: ``O(n)`` regex work plus ``O(m log m)`` BPE per uncached piece of
        ``m`` bytes.
        """
        require_str(text, "encode")
        if allowed_special or disallowed_special:
            return self._encode_special(text, allowed_special, disallowed_special)
        return self._encode_ordinary(join_surrogates(text))

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of ``text``, special-token text as ordinary text (tiktoken's
        ``encode_ordinary``; livetok's :meth:`encode` with its defaults).

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("r50k_base").encode_ordinary("hello world")
        [31373, 995]

        Runtime complexity: as :meth:`encode`.
        """
        require_str(text, "encode_ordinary")
        return self._encode_ordinary(join_surrogates(text))

    def _encode_ordinary(self, text: str) -> list[int]:
        """Token ids of ``text``, which holds no surrogate (:func:`join_surrogates`)."""
        fast = self._pre.fast
        if fast is not None:
            return self._encode_fast(text, fast)
        out: list[int] = []
        extend = out.extend
        lookup = self._cache.__getitem__  # encodes new pieces
        try:
            for m in self._pre.finditer(text):
                s, e = m.span()
                extend(lookup(text[s:e]))
        finally:
            self._cache.end_call()
        return out

    @property
    def special_tokens_set(self) -> set[str]:
        """The names of the special tokens (tiktoken's ``special_tokens_set``)."""
        return set(self.special_tokens)

    @property
    def eot_token(self) -> int:
        """The id of ``<|endoftext|>`` (tiktoken's ``eot_token``)."""
        try:
            return self.special_tokens["<|endoftext|>"]
        except KeyError:
            raise KeyError(f"{self.name} has no <|endoftext|> token") from None

    def _special_regex(self, names: AbstractSet[str]) -> Any:
        """A regex matching any of ``names`` (longest first, so that one name that is a prefix
        of another never hides it), compiled once per set."""
        key = frozenset(names)
        cache = self._special_res
        pat = cache.get(key)
        if pat is None:
            alts = sorted(key, key=lambda t: (-len(t), t))
            pat = cache[key] = regex.compile("|".join(map(regex.escape, alts)))
        return pat

    def _encode_special(
        self,
        text: str,
        allowed_special: AbstractSet[str] | Literal["all"],
        disallowed_special: Collection[str] | Literal["all"],
    ) -> list[int]:
        """:meth:`encode` with special tokens, as tiktoken's ``encode``: the text between the
        allowed special tokens it spells is encoded as ordinary text (pieces never cross a
        special token), each special token becomes its id.

        Runtime complexity: as :meth:`encode`, plus one regex scan per argument.
        """
        specials = self.special_tokens
        allowed = set(specials) if allowed_special == "all" else set(allowed_special)
        if disallowed_special == "all":
            disallowed = set(specials) - allowed
        else:
            disallowed = set(disallowed_special)
        text = join_surrogates(text)
        if disallowed:
            m = self._special_regex(disallowed).search(text)
            if m is not None:
                tok = m.group()
                raise ValueError(
                    f"Encountered text corresponding to disallowed special token {tok!r}. "
                    f"To encode it as the special token, pass allowed_special={{{tok!r}}} (or "
                    f"'all'); to encode it as ordinary text, leave it out of "
                    f"disallowed_special (disallowed_special=() for all of them)."
                )
        allowed &= set(specials)
        if not allowed:
            return self._encode_ordinary(text)
        out: list[int] = []
        pos = 0
        for m in self._special_regex(allowed).finditer(text):
            out += self._encode_ordinary(text[pos : m.start()])
            out.append(specials[m.group()])
            pos = m.end()
        out += self._encode_ordinary(text[pos:])
        return out

    def encode_batch(
        self,
        texts: Iterable[str],
        *,
        num_threads: int = 8,
        allowed_special: AbstractSet[str] | Literal["all"] = frozenset(),
        disallowed_special: Collection[str] | Literal["all"] = (),
    ) -> list[list[int]]:
        """:meth:`encode` of each text (tiktoken's ``encode_batch``). ``num_threads`` is
        accepted for tiktoken's signature only: pure-Python encoding gains nothing from threads
        under the GIL, so the texts are encoded one after another in this thread."""
        return [
            self.encode(t, allowed_special=allowed_special, disallowed_special=disallowed_special)
            for t in texts
        ]

    def encode_ordinary_batch(self, texts: Iterable[str], *, num_threads: int = 8) -> list[list[int]]:
        """:meth:`encode_ordinary` of each text (tiktoken's ``encode_ordinary_batch``;
        ``num_threads`` as in :meth:`encode_batch`)."""
        return [self.encode_ordinary(t) for t in texts]

    def decode_batch(
        self, batch: Iterable[Sequence[int]], *, errors: str = "replace", num_threads: int = 8
    ) -> list[str]:
        """:meth:`decode` of each id sequence (tiktoken's ``decode_batch``)."""
        return [self.decode(ids, errors=errors) for ids in batch]

    def decode_bytes_batch(
        self, batch: Iterable[Sequence[int]], *, num_threads: int = 8
    ) -> list[bytes]:
        """:meth:`decode_bytes` of each id sequence (tiktoken's ``decode_bytes_batch``)."""
        return [self.decode_bytes(ids) for ids in batch]

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of a text or byte string that is one token, ordinary or special (tiktoken's
        ``encode_single_token``; a special token by its name or its bytes, so that
        ``encode_single_token(decode_single_token_bytes(i)) == i`` for every id); ``KeyError``
        when it is not one token.

        >>> from livetok.incremental import get_encoding
        >>> enc = get_encoding("r50k_base")
        >>> enc.encode_single_token(" world"), enc.encode_single_token(b"<|endoftext|>")
        (995, 50256)

        Runtime complexity: ``O(len(text_or_bytes))``.
        """
        if isinstance(text_or_bytes, str):
            key = text_or_bytes.encode("utf-8", errors="surrogatepass")
        else:
            key = bytes(text_or_bytes)
        rank = self.mergeable_ranks.get(key)
        if rank is not None:
            return rank
        try:
            return self.special_tokens[key.decode("utf-8")]
        except (KeyError, UnicodeDecodeError):
            raise KeyError(f"{text_or_bytes!r} is not one token of {self.name}") from None

    def _encode_fast(self, text: str, fast: Any) -> list[int]:
        """:meth:`encode` by the fast splitter, block by block (``FastSplitter.blocks``).

        Blocks keep the per-piece lists small (10 MB of text has 2.4 million pieces), and most
        blocks of real text are ASCII even when the text is not, so they take the splitter's
        ASCII path. A block is then three C loops: the split, the cache lookups by ``map``
        (which call Python only for pieces not seen before, see :class:`PieceCache`) and the
        concatenation (:meth:`_add_ids`).
        """
        out: list[int] = []
        try:
            for block in fast.blocks(text, _BLOCK_CHARS):
                self._add_ids(out, fast.pieces(block))
        finally:
            self._cache.end_call()
        return out

    def _add_ids(self, out: list[int], pieces: Iterable[str]) -> None:
        """Append the ids of whole ``pieces`` to ``out`` through the piece cache (a miss
        encodes the piece); the caller calls ``end_call`` when its call ends.

        ``out.extend`` of each tuple, driven by a zero-length ``deque`` (faster than
        ``out += chain.from_iterable(...)``: docs/algorithms.md, "Encoder choices").
        """
        _drain(map(out.extend, map(self._cache.__getitem__, pieces)))

    def encode_blocks(self, text: str) -> Iterator[tuple[int, list[int]]]:
        """:meth:`encode` of ``text`` in blocks, for callers that report progress.

        Yields ``(code points, ids)`` per block of about 64 K code points, cut where no piece
        can span (``FastSplitter.blocks``; one block for a pattern it does not know): the ids
        concatenated are ``encode(text)`` and the code points add up to ``len(text)`` (less
        one per surrogate pair, which counts as the one character it stands for).

        Runtime complexity: as :meth:`encode`.
        """
        text = join_surrogates(text)
        fast = self._pre.fast
        if fast is None:
            yield len(text), self._encode_ordinary(text)
            return
        try:
            for block in fast.blocks(text, _BLOCK_CHARS):
                ids: list[int] = []
                self._add_ids(ids, fast.pieces(block))
                yield len(block), ids
        finally:
            self._cache.end_call()

    def split_blocks(self, text: str, size: int) -> list[str]:
        """``join_surrogates(text)`` cut into consecutive slices of about ``size`` code points
        or more, at places no piece can span (``FastSplitter.blocks``), so that the encodes of
        the slices concatenate to ``encode(text)``: for callers that encode the slices apart (in
        other processes, say). One slice when the pattern has no fast form or the text no cut.

        >>> from livetok.incremental import get_encoding
        >>> [len(b) for b in get_encoding("o200k_base").split_blocks("a = 1\\nb = 2\\nc", 4)]
        [6, 6, 1]

        Runtime complexity: ``O(len(text))``.
        """
        text = join_surrogates(text)
        fast = self._pre.fast
        return [text] if fast is None else list(fast.blocks(text, size))

    def iter_blocks(self, text: str, size: int) -> Iterator[str]:
        """The slices of :meth:`split_blocks`, one at a time, of a text that is already
        sanitized (no surrogates): a caller building something big from them (``Document``)
        holds one slice at a time.

        Runtime complexity: ``O(len(text))`` in all, lazily.
        """
        fast = self._pre.fast
        if fast is None:
            yield text
        else:
            yield from fast.blocks(text, size)

    @property
    def piece_strings(self) -> Callable[[str], list[str]] | None:
        """The pieces of a (sanitized) text as strings, in one C call per block, or ``None``
        when the pattern has no fast form (a custom ``pat_str``): for callers such as
        :func:`.stream.encode_stream` that then encode them with
        :meth:`encode_piece_strings`.
        """
        fast = self._pre.fast
        return None if fast is None else fast.pieces

    def encode_piece_strings(self, pieces: Iterable[str]) -> list[int]:
        """Token ids of consecutive whole pieces (from :attr:`piece_strings`), concatenated.

        Runtime complexity: as :meth:`encode` without the split.
        """
        out: list[int] = []
        try:
            self._add_ids(out, pieces)
        finally:
            self._cache.end_call()
        return out

    def _piece_ids(self, text: str, fast: Any) -> list[Sequence[int]]:
        """As :meth:`_encode_fast`, one tuple of ids per piece."""
        out: list[Sequence[int]] = []
        cache = self._cache
        lookup = cache.__getitem__
        try:
            for block in fast.blocks(text, _BLOCK_CHARS):
                out += map(lookup, fast.pieces(block))
        finally:
            cache.end_call()
        return out

    def encode_by_piece(self, text: str) -> list[Sequence[int]]:
        """Token ids of each pre-token of ``text`` (sanitized), in order.

        Runtime complexity: as :meth:`encode`.
        """
        text = sanitize(text)
        fast = self._pre.fast
        if fast is not None:
            return self._piece_ids(text, fast)
        return [self.encode_piece(text[s:e]) for s, e in self._pre.split(text)]

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` (``len(encode_ordinary(text))``).

        Runtime complexity: as :meth:`encode`.
        """
        return len(self.encode_ordinary(text))

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """Concatenated bytes of ``ids``.

        An id that is not an integer (``int`` or anything with ``__index__``, such as numpy's
        integers) raises ``TypeError``; a negative id, one past the vocabulary or one that
        names no token (a gap between the ordinary and the special tokens) raises
        :class:`UnknownTokenError` naming it, a ``KeyError`` as in tiktoken and a
        ``ValueError`` (a negative id must not index the table from its end; tiktoken raises
        ``OverflowError`` there).

        Runtime complexity: ``O(len(ids))``.
        """
        if not isinstance(ids, (list, tuple, array)):
            ids = list(ids)  # read twice below
        decoder = self._decoder
        try:
            parts = [decoder[i] for i in ids]
            if parts and min(ids) < 0:
                raise IndexError
            return b"".join(parts)  # type: ignore[arg-type]  # None (a gap): TypeError
        except (IndexError, TypeError):
            wrong = [i for i in ids if not hasattr(type(i), "__index__")]
            if wrong:
                raise TypeError(
                    f"token ids are ints, not {type(wrong[0]).__name__} ({wrong[0]!r})"
                ) from None
            bad = [i for i in map(index, ids) if not 0 <= i < len(decoder) or decoder[i] is None]
            raise self._unknown_ids(bad) from None

    def _unknown_ids(self, bad: list[int]) -> UnknownTokenError:
        """The error for ids that name no token: which ones, and which ids do."""
        decoder = self._decoder
        gaps = ", except the ids between its ordinary and special tokens" if (
            None in decoder) else ""
        return UnknownTokenError(
            f"unknown token id(s) {bad[:5]} for {self.name} (ids are "
            f"0..{len(decoder) - 1}{gaps})"
        )

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """Text of ``ids``; invalid UTF-8 becomes U+FFFD, like tiktoken's ``decode``
        (``errors``: any error handler of ``bytes.decode``, e.g. ``"strict"``, ``"ignore"``).

        >>> from livetok.incremental import get_encoding
        >>> enc = get_encoding("cl100k_base")
        >>> enc.decode([9468, 239]), enc.decode([9468, 239], errors="ignore")
        ('\ufffd', '')

        Runtime complexity: ``O(len(ids))``.
        """
        return self.decode_bytes(ids).decode("utf-8", errors=errors)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token id, ordinary or special (tiktoken's
        ``decode_single_token_bytes``); :class:`UnknownTokenError` (a ``KeyError``) for an id
        that names no token.

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("r50k_base").token_bytes(995)
        b' world'

        Runtime complexity: ``O(1)``.
        """
        i = index(token_id)  # TypeError for a non-integer
        decoder = self._decoder
        b = decoder[i] if 0 <= i < len(decoder) else None
        if b is None:
            raise self._unknown_ids([i])
        return b

    decode_single_token_bytes = token_bytes

    def decode_tokens_bytes(self, ids: Sequence[int]) -> list[bytes]:
        """The bytes of each token id (tiktoken's ``decode_tokens_bytes``).

        Runtime complexity: ``O(len(ids))``.
        """
        return [self.token_bytes(i) for i in ids]

    def decode_with_offsets(self, ids: Sequence[int]) -> tuple[str, list[int]]:
        """Text of ``ids`` and the code point offset where each token starts in it (tiktoken's
        ``decode_with_offsets``): a token that starts inside a character gets the offset of
        that character. Invalid UTF-8 raises ``UnicodeDecodeError``, as in tiktoken.

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("cl100k_base").decode_with_offsets([15339, 1917])
        ('hello world', [0, 5])

        Runtime complexity: ``O(len(ids))``.
        """
        parts = self.decode_tokens_bytes(ids)
        offsets: list[int] = []
        cp = 0
        for b in parts:
            # a token that starts with a continuation byte starts inside the previous character
            offsets.append(max(0, cp - (0x80 <= b[0] < 0xC0)))
            cp += len(b.translate(None, _CONTINUATION_BYTES))
        return b"".join(parts).decode("utf-8", errors="strict"), offsets

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary token, sorted (tiktoken's ``token_byte_values``).

        Runtime complexity: ``O(V log V)`` for ``V`` tokens.
        """
        return sorted(self.mergeable_ranks)

    def is_special_token(self, token_id: int) -> bool:
        """Whether ``token_id`` is the id of a special token (tiktoken's ``is_special_token``).

        Runtime complexity: ``O(1)``.
        """
        return token_id in self._special_ids

    @cached_property
    def _special_ids(self) -> frozenset[int]:
        return frozenset(self.special_tokens.values())

    # -- pieces (pre-tokens) -----------------------------------------------------------------

    def pieces(self, text: str) -> list[tuple[int, int]]:
        """Code point spans ``(start, end)`` of the pre-tokens of ``text``.

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("o200k_base").pieces("Hi there")
        [(0, 2), (2, 8)]

        Runtime complexity: ``O(len(text))``.
        """
        require_str(text, "pieces")
        return list(self._pre.split(sanitize(text)))

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        """Piece spans of ``text[pos:]`` (``pos`` a boundary); see :class:`PieceEncoding`."""
        return self._pre.split(text, pos)

    def horizon(self, text: str, start: int, limit: int) -> int:
        """Bound on what deciding the piece at ``start`` reads; see :mod:`.pretokenize`."""
        return self._pre.horizon(text, start, limit)

    def quiet(self, text: str) -> bool:
        """See :meth:`.pretokenize.Pretokenizer.quiet`."""
        return self._pre.quiet(text)

    def inner_boundaries(
        self, text: str, pad: int,
        old: tuple[str, list[int], Callable[[], tuple[int, str, int]]] | None = None,
    ) -> list[int] | None:
        """See :meth:`.pretokenize.Pretokenizer.inner_boundaries`."""
        return self._pre.inner_boundaries(text, pad, old)

    def run_classes(self, text: str) -> int:
        """See :meth:`.pretokenize.Pretokenizer.run_classes`."""
        return self._pre.run_classes(text)

    def run_break(self, text: str) -> int:
        """See :meth:`.pretokenize.Pretokenizer.run_break`."""
        return self._pre.run_break(text)

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> Sequence[int]:
        """Token ids of one pre-token (cached for short pieces; a tuple).

        >>> from livetok.incremental import get_encoding
        >>> get_encoding("cl100k_base").encode_piece(" world")
        (1917,)

        Runtime complexity: ``O(m log m)`` for ``m`` bytes, ``O(1)`` when cached.
        """
        return self._cache.lookup(piece)

    def widen_piece_cache(self, limit: int) -> None:
        """Keep up to ``limit`` pieces per generation in the piece memo (never fewer than it
        keeps now): for counting many files at once, whose pieces recur across files at
        distances a live document's memo (:data:`.cache.DEFAULT_LIMIT`) forgets. Each
        generation of ``65,536`` pieces holds about 8 MB more than the default.

        >>> from livetok.incremental import get_encoding
        >>> enc = get_encoding("cl100k_base")
        >>> enc.widen_piece_cache(1 << 16)

        Runtime complexity: ``O(1)``.
        """
        self._cache.limit = max(self._cache.limit, limit)

    def encode_bytes_piece(self, data: bytes) -> list[int]:
        """BPE of raw bytes (no pre-tokenization): used for windows inside one piece."""
        r = self.mergeable_ranks.get(data)
        return [r] if r is not None else bpe_encode(data, self.mergeable_ranks)

    def token_cp_lens(
        self, piece: str, ids: Sequence[int], *, at_text_start: bool = False
    ) -> list[int]:
        """Characters that start in each token (a split character goes to its first byte)."""
        lead = self._tables[1]
        return [lead[i] for i in ids]

    @property
    def lead_counts(self) -> array[int]:
        """``lead_counts[id]``: characters whose first UTF-8 byte is in token ``id``."""
        return self._tables[1]

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    def _variant(
        self,
        name: str,
        *,
        special_tokens: Mapping[str, int] | None = None,
        cls: type[Encoding] | None = None,
    ) -> Encoding:
        """This encoding under another ``name`` (with other ``special_tokens``, of a subclass
        ``cls``), sharing the vocabulary, pre-tokenizer and piece cache instead of building
        them again: tiktoken's ``gpt2`` is ``r50k_base`` under its own name, ``o200k_harmony``
        is ``o200k_base`` with more special tokens.

        Runtime complexity: ``O(1)``; ``O(vocabulary)`` with new special tokens.
        """
        new = object.__new__(cls or type(self))
        new.__dict__.update(self.__dict__)
        new.name = name
        if special_tokens is not None:
            new.special_tokens = dict(special_tokens)
            new.max_token_value = max(
                [max(self.mergeable_ranks.values(), default=-1), *new.special_tokens.values()]
            )
            new._special_res = {}
            # the tables built from the special tokens are built again on first use
            for attr in ("_tables", "_special_ids"):
                new.__dict__.pop(attr, None)
        return new

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling (for a process pool, say) as its vocabulary, pattern and special tokens;
        the registry pickles the encodings that ``get_encoding`` returns as their name
        (:func:`livetok.incremental.names.registry._reduce`), as tiktoken does."""
        return unpickle_encoding, (type(self), self._constructor_args())

    def _constructor_args(self) -> dict[str, Any]:
        return {"name": self.name, "pat_str": self.pat_str, "source": self.source,
                "mergeable_ranks": self.mergeable_ranks, "special_tokens": self.special_tokens}


def unpickle_encoding(cls: type[Encoding], kwargs: dict[str, Any]) -> Encoding:
    """An encoding of class ``cls`` built by :class:`Encoding`'s constructor (see
    :meth:`Encoding.__reduce__`): subclasses may have constructors of their own."""
    enc = cls.__new__(cls)
    Encoding.__init__(enc, **kwargs)
    return enc


# bytes 0x80..0xBF: deleting every *other* byte leaves the continuation bytes; we want the
# opposite, so translate(None, delete=continuation) leaves lead bytes and ASCII.
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
