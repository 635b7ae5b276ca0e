"""Token ids of a text that arrives in chunks, in memory bounded by the longest piece.

:func:`encode_stream` works with any :class:`~livetok.incremental.protocol.PieceEncoding`
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
vocabulary piece can span (see :mod:`.sentencepiece_bpe`). Inside a piece nothing is emitted
before the piece ends: that is the exact fallback, and it is why memory is bounded by the
longest piece (plus one chunk) rather than by a constant. ``docs/streaming.md`` has the
measurements.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from .protocol import PieceEncoding

__all__ = ["encode_stream", "count_stream", "StreamStats"]


class StreamStats:
    """What :func:`encode_stream` held: the largest buffer, in code points (for benchmarks)."""

    def __init__(self) -> None:
        self.max_buffer_cp = 0
        self.chunks = 0
        self.pieces = 0

    def __repr__(self) -> str:
        return (f"StreamStats(max_buffer_cp={self.max_buffer_cp}, chunks={self.chunks}, "
                f"pieces={self.pieces})")


#: the slack of :meth:`PieceEncoding.horizon`'s dominance property (see :mod:`.protocol`)
_DOMINANCE_SLACK = 4


def _final_prefix(enc: PieceEncoding, buf: str, at_start: bool, out: list[int],
                  stats: StreamStats | None) -> int:
    """Encode the pieces of ``buf`` that more text cannot change; return where they end.

    Appending text is an edit at ``len(buf)``, so this is the document's restart rule run at
    the end of the buffer: walk left from the last piece to the first piece ``i`` whose
    horizon stops before the end, ``h_i < n`` and ``start_i + 4 < n``. By the dominance
    property of :meth:`PieceEncoding.horizon` every earlier piece ``j`` then has
    ``h_j <= max(h_i, start_i + 4) < n``: pieces ``0..i`` are final, with one horizon
    call per piece looked at from the end (usually one or two) instead of one per piece.

    Runtime complexity: ``O(n)`` for the split, plus the encoder's per-piece cost.
    """
    n = len(buf)
    spans = list(enc.split(buf, 0))
    k = len(spans) - 1
    while k >= 0:
        s, e = spans[k]
        # subtle: ``h < n`` (not ``<=``): at ``h == n`` the piece may depend on the text
        # ending exactly there, which the next chunk would change
        if e < n and s + _DOMINANCE_SLACK < n and enc.horizon(buf, s, n) < n:
            break
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


def encode_stream(
    encoding: PieceEncoding,
    chunks: Iterable[str],
    *,
    min_batch_cp: int = 1 << 16,
    stats: StreamStats | None = None,
) -> Iterator[int]:
    """Yield the ids of ``"".join(chunks)`` (equal to ``encoding.encode`` of it), lazily.

    ``min_batch_cp``: chunks are gathered until the buffer holds this many code points before
    pieces are split off, so tiny chunks do not make the splitter rescan the same tail.

    >>> from livetok.incremental.sentencepiece_bpe import load_mistral_v1
    >>> enc = load_mistral_v1()                                   # doctest: +SKIP
    >>> list(encode_stream(enc, ["Hel", "lo wor", "ld"])) == enc.encode("Hello world")  # doctest: +SKIP
    True

    Runtime complexity: ``O(n)`` splitter and horizon work plus the encoder's per-piece cost;
    memory ``O(longest piece + max chunk + min_batch_cp)`` code points.
    """
    buf = ""
    at_start = True
    out: list[int] = []
    for chunk in chunks:
        if not isinstance(chunk, str):
            raise TypeError(
                f"encode_stream() takes chunks of str, not {type(chunk).__name__}; open files "
                "in text mode (encoding='utf-8', errors='replace')"
            )
        if not chunk:
            continue
        buf += chunk
        if stats is not None:
            stats.chunks += 1
            stats.max_buffer_cp = max(stats.max_buffer_cp, len(buf))
        if len(buf) < min_batch_cp:
            continue
        done = _final_prefix(encoding, buf, at_start, out, stats)
        if done:
            buf = buf[done:]
            at_start = False
        if out:
            yield from out
            out.clear()
    # end of text: every remaining piece is final
    for s, e in encoding.split(buf, 0):
        yield from encoding.encode_piece(buf[s:e], at_text_start=at_start and s == 0)
        if stats is not None:
            stats.pieces += 1


def count_stream(encoding: PieceEncoding, chunks: Iterable[str], **kw: object) -> int:
    """Number of tokens of ``"".join(chunks)`` in bounded memory.

    Runtime complexity: as :func:`encode_stream`.
    """
    n = 0
    for _ in encode_stream(encoding, chunks, **kw):  # type: ignore[arg-type]
        n += 1
    return n
