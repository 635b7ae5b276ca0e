"""Token ids of a text that arrives in chunks, in memory bounded by the longest piece.

:func:`encode_stream` works with any :class:`~livetok.incremental.piece_encoding.PieceEncoding`
(tiktoken-style regex encodings, SentencePiece BPE, WordPiece). It keeps a buffer that always
starts at a piece boundary of the whole text and emits a piece's ids as soon as the splitter has
*certainly* finished that piece, which the encoding's :meth:`horizon` tells: when the piece at
``s`` has horizon ``h < len(buffer)``, the piece is a function of ``buffer[s:h]`` and any text
appended later cannot change it (nor, therefore, the pieces before it). A piece's ids depend
only on the piece (and on whether it starts the text), so they are final too.

This is the left-to-right tokenization of Section 4 of *Formalizing BPE Tokenization*
(Berglund & van der Merwe) with the pre-tokenizer doing the work of the lookahead: instead of
Theorem 2's ``l(D) <= |D| · max |uv|`` symbols (943,680 for Mistral's vocabulary read as a
dictionary, and Theorem 2 needs a *proper* dictionary, which a SentencePiece vocabulary is not:
``livetok analyze mistral-7b-v0.1``), the lookahead is the piece horizon: a few characters for
the regex encodings, one character for SentencePiece, whose pieces are cut wherever no
vocabulary piece can span (see :mod:`.sentencepiece.encoding`). Inside a piece nothing is emitted
before the piece ends: that is the exact fallback, and it is why memory is bounded by the
longest piece (plus one chunk) rather than by a constant. ``docs/streaming.md`` has the
measurements.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from .text import join_surrogates, sanitize
from .piece_encoding import ByteLevelEncoding, PieceEncoding, StreamStats, byte_level, check_encoding

__all__ = ["encode_stream", "count_stream", "check_pieces", "StreamStats", "PieceTooLongError",
           "MAX_PIECE_CP", "EncodeStreamMixin"]

#: the longest pre-token the command line encodes (``livetok count``; the library's default is
#: no bound): a piece is held whole and its BPE takes ~40-150 bytes and ~1-5 us per code point
#: (measured, o200k_base: 4 M code points of NUL 0.6 s / 0.2 GB, of CJK letters or emoji
#: 18 s / 0.6 GB), so longer ones are refused instead. Real text has pieces of a few dozen.
MAX_PIECE_CP = 1 << 22
#: a buffer this long that ends inside one piece is split again only once it has doubled, so
#: a long piece costs O(its length) splits, not one per chunk
_GROW_FROM = 1 << 20


class PieceTooLongError(ValueError):
    """A pre-token longer than the ``max_piece_cp`` given to :func:`encode_stream` or
    :func:`check_pieces`; ``length`` is its length (at least), ``bound`` the bound."""

    def __init__(self, piece: str, length: int, bound: int, *, at_least: bool) -> None:
        self.length = length
        self.bound = bound
        some = f"{'at least ' if at_least else ''}{length:,}"
        run = len(piece) - len(piece.lstrip(piece[:1]))  # the first character's run
        if piece and run == len(piece):
            what = f"a run of {some} {piece[0]!r}"
        elif run * 2 >= len(piece):
            what = f"{some} code points, a run of {run:,} {piece[0]!r} and more"
        else:
            what = f"{some} code points from {piece[:12]!r}"
        super().__init__(
            f"a single pre-token longer than {bound:,} code points ({what}); livetok encodes "
            "a pre-token whole, so it stops here rather than hold it in memory "
            "(LIVETOK_MAX_PIECE_CP raises the bound)"
        )


def _piece_strings(bl: ByteLevelEncoding | None) -> Callable[[str], list[str]] | None:
    """The encoding's one-call splitter into piece strings, when it has one."""
    return bl.piece_strings if bl is not None else None


#: the slack of :meth:`PieceEncoding.horizon`'s dominance property (see :mod:`.piece_encoding`)
_DOMINANCE_SLACK = 4


def _is_final(enc: PieceEncoding, buf: str, s: int, e: int) -> bool:
    """The walk's test (:func:`_final_prefix`): the piece ``buf[s:e]`` and, by dominance, every
    piece before it are final whatever text is appended."""
    n = len(buf)
    # subtle: ``h < n`` (not ``<=``): at ``h == n`` the piece may depend on the text ending
    # exactly there, which the next chunk would change
    return e < n and s + _DOMINANCE_SLACK < n and enc.horizon(buf, s, n) < n


def _final_prefix(enc: PieceEncoding, bl: ByteLevelEncoding | None, buf: str, at_start: bool,
                  out: list[int], stats: StreamStats | None) -> int:
    """Encode the pieces of ``buf`` that more text cannot change; return where they end.

    Appending text is an edit at ``len(buf)``, so this is the document's restart rule run at
    the end of the buffer: walk left from the last piece to the first piece ``i`` whose
    horizon stops before the end, ``h_i < n`` and ``start_i + 4 < n``. By the dominance
    property of :meth:`PieceEncoding.horizon` every earlier piece ``j`` then has
    ``h_j <= max(h_i, start_i + 4) < n``: pieces ``0..i`` are final, with one horizon
    call per piece looked at from the end (usually one or two) instead of one per piece.

    Runtime complexity: ``O(n)`` for the split, plus the encoder's per-piece cost.
    """
    piece_strings = _piece_strings(bl)
    if bl is not None and piece_strings is not None:
        return _final_prefix_strings(bl, buf, piece_strings(buf), out, stats)
    spans = list(enc.split(buf, 0))
    k = len(spans) - 1
    while k >= 0 and not _is_final(enc, buf, *spans[k]):
        k -= 1
    if k < 0:
        return 0
    encode_piece = enc.encode_piece
    extend = out.extend
    for s, e in spans[: k + 1]:
        extend(encode_piece(buf[s:e], at_text_start=at_start and s == 0))
    if stats is not None:
        stats.pieces += k + 1
    return spans[k][1]


def _final_prefix_strings(enc: ByteLevelEncoding, buf: str, pieces: list[str], out: list[int],
                          stats: StreamStats | None) -> int:
    """:func:`_final_prefix` for an encoding that splits into piece strings in one C call and
    encodes a list of pieces at once (``Encoding.piece_strings`` / ``encode_piece_strings``):
    the same walk from the end, over piece lengths instead of spans, and no Python step per
    piece. (30 MB of real text in 1 M-character chunks, o200k_base: 9.3 s piece by piece,
    3.8 s this way, against 3.4 s for tiktoken on 4 M-character slices.)
    """
    n = len(buf)
    k = len(pieces) - 1
    e = n  # the end of piece k
    while k >= 0:
        s = e - len(pieces[k])
        if _is_final(enc, buf, s, e):
            break
        e = s
        k -= 1
    if k < 0:
        return 0
    out += enc.encode_piece_strings(pieces[: k + 1])
    if stats is not None:
        stats.pieces += k + 1
    return e


def encode_stream(
    encoding: PieceEncoding,
    chunks: Iterable[str],
    *,
    min_batch_cp: int = 1 << 16,
    stats: StreamStats | None = None,
    max_piece_cp: int | None = None,
) -> Iterator[int]:
    """Yield the ids of ``"".join(chunks)`` (equal to ``encoding.encode`` of it), lazily.

    ``min_batch_cp``: chunks are gathered until the buffer holds this many code points before
    pieces are split off, so tiny chunks do not make the splitter rescan the same tail.
    Surrogate code points are handled as in ``encode``: U+FFFD one for one (:func:`.sanitize`),
    except that tiktoken-style encodings (``joins_surrogate_pairs``) first join a pair into its
    character, as tiktoken does (:func:`.join_surrogates`), also when chunks cut it.

    >>> from livetok.incremental.sentencepiece.encoding import load_mistral_v1
    >>> enc = load_mistral_v1()                                   # doctest: +SKIP
    >>> list(encode_stream(enc, ["Hel", "lo wor", "ld"])) == enc.encode("Hello world")  # doctest: +SKIP
    True

    ``max_piece_cp``: raise :class:`PieceTooLongError` as soon as the text holds a piece
    longer than this (a file of one repeated character is one piece), before encoding it:
    memory then stays ``O(max_piece_cp + max chunk)``. ``None``: no bound.

    Runtime complexity: ``O(n)`` splitter and horizon work plus the encoder's per-piece cost;
    memory ``O(longest piece + max chunk + min_batch_cp)`` code points.
    """
    for batch in _batches(encoding, chunks, min_batch_cp, stats, max_piece_cp):
        yield from batch


class EncodeStreamMixin:
    """A base class that gives an encoding the method form of :func:`encode_stream`, which
    :class:`~livetok.incremental.piece_encoding.PieceEncoding` declares (every livetok encoding
    inherits it)."""

    __slots__ = ()

    def encode_stream(self, chunks: Iterable[str], *, min_batch_cp: int = 1 << 16,
                      stats: StreamStats | None = None) -> Iterator[int]:
        """Yield the ids of ``"".join(chunks)``, equal to ``encode`` of it, lazily and in
        memory bounded by the longest piece: :func:`encode_stream`, where the options are
        described.

        >>> from livetok.incremental import get_encoding
        >>> enc = get_encoding("bert-base-uncased")
        >>> list(enc.encode_stream(["Tokeni", "zation!"])) == enc.encode("Tokenization!")
        True

        Runtime complexity: as ``encode``; memory ``O(longest piece + max chunk +
        min_batch_cp)`` code points.
        """
        # check_encoding: O(1) once the class has passed (get_encoding checked it)
        return encode_stream(check_encoding(self), chunks, min_batch_cp=min_batch_cp,
                             stats=stats)


def _batches(
    encoding: PieceEncoding,
    chunks: Iterable[str],
    min_batch_cp: int,
    stats: StreamStats | None,
    max_piece_cp: int | None = None,
) -> Iterator[list[int]]:
    """The ids of :func:`encode_stream` in lists, one per buffer of final pieces."""
    bound = max_piece_cp if max_piece_cp is not None else float("inf")
    bl = byte_level(encoding)
    if bl is not None and bl.joins_surrogate_pairs:
        chunks = _pairs_joined(chunks)
    buf = ""
    at_start = True
    retry_at = min_batch_cp  # split the buffer once it holds this many code points
    for chunk in chunks:
        if not isinstance(chunk, str):
            raise TypeError(
                f"encode_stream() takes chunks of str, not {type(chunk).__name__}; open files "
                "in text mode (encoding='utf-8', errors='replace')"
            )
        if not chunk:
            continue
        buf += sanitize(chunk)
        if stats is not None:
            stats.chunks += 1
            stats.max_buffer_cp = max(stats.max_buffer_cp, len(buf))
        if len(buf) < retry_at and len(buf) <= bound:
            continue
        out: list[int] = []
        done = _final_prefix(encoding, bl, buf, at_start, out, stats)
        if done:
            buf = buf[done:]
            at_start = False
        # subtle: a buffer that ends inside one long piece waits to double before the next
        # split (each split reads all of it: one per chunk would be quadratic)
        retry_at = max(min_batch_cp, 2 * len(buf) if len(buf) >= _GROW_FROM else 0)
        if len(buf) > bound:
            raise _too_long(encoding, buf, int(bound), at_least=True)
        if out:
            yield out
    # end of text: every remaining piece is final
    if not buf:
        return
    piece_strings = _piece_strings(bl)
    if bl is not None and piece_strings is not None:
        # the rest is a whole text that starts at a piece boundary: its own split is the tail
        # of the whole text's split (pieces read nothing to the left of their start)
        pieces = piece_strings(buf)
        if stats is not None:
            stats.pieces += len(pieces)
        yield bl.encode_piece_strings(pieces)
        return
    out = []
    for s, e in encoding.split(buf, 0):
        out += encoding.encode_piece(buf[s:e], at_text_start=at_start and s == 0)
        if stats is not None:
            stats.pieces += 1
    yield out


def _too_long(encoding: PieceEncoding, text: str, bound: int, *,
              at_least: bool) -> PieceTooLongError:
    """The error for ``text``, which holds (or, unfinished, ends in) a piece over ``bound``."""
    piece_strings = _piece_strings(byte_level(encoding))
    if piece_strings is not None:
        longest = max(piece_strings(text), key=len, default="")
    else:
        s, e = max(encoding.split(text, 0), key=lambda span: span[1] - span[0], default=(0, 0))
        longest = text[s:e]
    return PieceTooLongError(longest, len(longest), bound, at_least=at_least)


def check_pieces(encoding: PieceEncoding, text: str, max_piece_cp: int) -> None:
    """Raise :class:`PieceTooLongError` when a pre-token of ``text`` is longer than
    ``max_piece_cp`` code points (what :func:`encode_stream` refuses), before anything
    encodes it.

    Texts no longer than the bound pass at once. Otherwise, for an encoding with
    ``split_blocks``, the text is cut where no piece can span into slices of half the bound
    or a little more (real text has such cuts every few lines, so this costs a search per
    slice); only a slice longer than the bound is split into pieces. Other encodings are
    split whole.

    >>> from livetok.incremental import get_encoding
    >>> check_pieces(get_encoding("o200k_base"), "ab\\n" + "=" * 30, 20)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    livetok.incremental.stream.PieceTooLongError: a single pre-token longer than 20 code points (a run of 30 '='); ...

    Runtime complexity: ``O(1)`` for short texts; ``O(len(text))`` C work otherwise, plus a
    split of the slices over the bound.
    """
    if len(text) <= max_piece_cp:
        return
    bl = byte_level(encoding)
    slices = [text] if bl is None else bl.split_blocks(text, max_piece_cp // 2)
    for block in slices:
        if len(block) > max_piece_cp:
            err = _too_long(encoding, block, max_piece_cp, at_least=False)
            if err.length > max_piece_cp:
                raise err


def _pairs_joined(chunks: Iterable[str]) -> Iterator[str]:
    """``chunks`` with each surrogate pair joined into its character and other surrogates made
    U+FFFD (:func:`.join_surrogates`, what tiktoken-style encodings' ``encode`` does), also a
    pair cut between two chunks: a chunk's last high surrogate waits for the next chunk."""
    held = ""
    for chunk in chunks:
        if not isinstance(chunk, str):
            yield chunk  # _batches raises the TypeError
            continue
        chunk = held + chunk
        held = ""
        if chunk and "\ud800" <= chunk[-1] <= "\udbff":
            chunk, held = chunk[:-1], chunk[-1]
        yield join_surrogates(chunk)
    if held:
        yield join_surrogates(held)


def count_stream(
    encoding: PieceEncoding,
    chunks: Iterable[str],
    *,
    min_batch_cp: int = 1 << 16,
    stats: StreamStats | None = None,
    max_piece_cp: int | None = None,
) -> int:
    """Number of tokens of ``"".join(chunks)`` in bounded memory (no Python step per token);
    ``max_piece_cp`` as in :func:`encode_stream`.

    Runtime complexity: as :func:`encode_stream`.
    """
    return sum(map(len, _batches(encoding, chunks, min_batch_cp, stats, max_piece_cp)))
