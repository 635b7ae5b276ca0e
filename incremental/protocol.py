"""The contract between an encoding and the incremental :class:`~livetok.incremental.Document`.

Every tokenizer livetok serves (tiktoken-style byte-level BPE, WordPiece, SentencePiece BPE)
is cut into *pieces* first: spans of text that are tokenized independently of each other
(pre-tokens for the regex encodings, words for WordPiece, whitespace-delimited pieces for
SentencePiece). The document re-splits only a few pieces around an edit and re-encodes only
the pieces that changed, so an encoding must tell it three things:

1. how text splits into pieces, starting at any piece boundary (:meth:`PieceEncoding.split`);
2. how far right of a piece's start the splitter may have *looked* to decide that piece
   (:meth:`PieceEncoding.horizon`), so the document knows which pieces left of an edit can
   change;
3. the token ids of one piece and how many code points of the piece each token covers
   (:meth:`PieceEncoding.encode_piece`, :meth:`PieceEncoding.token_cp_lens`).

All offsets are Unicode code points (``cp``). A token may cover zero code points (a byte-level
token that ends inside a multi-byte character gives that character to the token holding its
first byte; WordPiece's ``[UNK]`` or SentencePiece byte-fallback tokens likewise).
"""

from __future__ import annotations

from typing import Iterator, Protocol, Sequence, runtime_checkable

__all__ = ["PieceEncoding"]


@runtime_checkable
class PieceEncoding(Protocol):
    """What :class:`~livetok.incremental.Document` needs from an encoding."""

    #: registry name, e.g. ``"o200k_base"``
    name: str

    #: True when :meth:`encode_piece` is a merge-rule / rank BPE for which Algorithm 1 of
    #: *Formalizing BPE Tokenization* (gluing a re-encoded window once its boundary tokens
    #: agree with the old ones) is valid inside one piece. False for WordPiece.
    supports_glue: bool

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` as the reference library gives them (no special tokens)."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (invalid UTF-8 replaced by U+FFFD)."""
        ...

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes (UTF-8 for text-level vocabularies) that ``token_id`` stands for."""
        ...

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        """Yield ``(start_cp, end_cp)`` piece spans tiling ``text[pos:]``, left to right.

        ``pos`` must be a piece boundary of ``text`` (0 or the end of an earlier piece); the
        result must then equal the tail of ``split(text, 0)`` that starts at ``pos``. Lazy:
        the document stops iterating as soon as it has resynchronised.
        """
        ...

    def horizon(self, text: str, start: int, limit: int) -> int:
        """Upper bound on what deciding the piece that starts at ``start`` looks at.

        Return ``h`` such that the piece at ``start`` (its end, and whether it exists) is a
        function of ``text[start:h]`` alone, *and* of whether ``h == len(text)`` when
        ``h >= len(text)``. ``h`` may be anything ``>= limit`` if the true bound is at or past
        ``limit`` (the caller only asks "is it below limit?"), which lets implementations
        stop scanning early. Must be sound: too large is slow, too small is wrong.

        It must also be *dominated* by later pieces: for pieces ``j`` left of ``i``,
        ``horizon(j) <= max(horizon(i), start_i + 4)``. The document walks left from an edit
        while the previous piece's horizon reaches the edit, and this property guarantees no
        earlier piece could reach it either (``horizon(p) = end_of_piece + 1`` satisfies it;
        the regex encodings' run readers are proved to in ``docs/algorithms.md``).
        """
        ...

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> list[int]:
        """Token ids of one piece (``piece`` is a whole span yielded by :meth:`split`).

        ``at_text_start`` is True for the piece at offset 0 (SentencePiece's dummy prefix
        depends on it). The ids may be empty (WordPiece whitespace); the concatenation of
        ``encode_piece`` over ``split(text)`` must equal ``encode(text)``.
        """
        ...

    def token_cp_lens(
        self, piece: str, ids: Sequence[int], *, at_text_start: bool = False
    ) -> list[int]:
        """Code points of ``piece`` covered by each token of ``ids``.

        One entry per id, each >= 0, summing to ``len(piece)`` (for empty ``ids`` the piece
        is held by the document as an uncounted placeholder). Used for ``token_at`` and
        hover; a token that covers part of a character gets 0 or the whole character.
        """
        ...
