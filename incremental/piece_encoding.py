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

Besides these, every encoding offers the same whole-text entry points, so that code written
for one family runs on any: :meth:`PieceEncoding.encode`, :meth:`PieceEncoding.count`,
:meth:`PieceEncoding.decode` and :meth:`PieceEncoding.encode_stream` (a text that arrives in
chunks; livetok's encodings get it from :class:`.stream.EncodeStreamMixin` or, byte-level,
define it alike; both run :func:`.stream.encode_stream`).

All offsets are Unicode code points (``cp``). A token may cover zero code points (a byte-level
token that ends inside a multi-byte character gives that character to the token holding its
first byte; WordPiece's ``[UNK]`` or SentencePiece byte-fallback tokens likewise).

Byte-level encodings (the tiktoken family) also satisfy :class:`ByteLevelEncoding`: per-token
tables and byte-level entry points that let the document and :mod:`.stream` do per-token work
in C. :func:`check_encoding` (called by ``get_encoding`` and ``Document``) rejects an object
that lacks a member of :class:`PieceEncoding`, naming what is missing; :func:`byte_level`
answers once, at construction, whether the byte-level paths apply.
"""

from __future__ import annotations

from array import array
from typing import Callable, Iterable, Iterator, Protocol, Sequence
from typing import runtime_checkable


__all__ = ["PieceEncoding", "ByteLevelEncoding", "QuietEncoding", "check_encoding", "byte_level",
           "quiet_side", "InnerEncoding", "inner_side"]



class StreamStats:
    """What :func:`encode_stream` held: the largest buffer, in code points (for benchmarks)."""

    def __init__(self) -> None:
        self.max_buffer_cp = 0
        self.chunks = 0
        self.pieces = 0

    def __repr__(self) -> str:
        return (f"StreamStats(max_buffer_cp={self.max_buffer_cp}, chunks={self.chunks}, "
                f"pieces={self.pieces})")


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

    def count(self, text: str) -> int:
        """Number of tokens of ``text``: ``len(encode(text))``."""
        ...

    def encode_stream(self, chunks: Iterable[str], *, min_batch_cp: int = 1 << 16,
                      stats: StreamStats | None = None) -> Iterator[int]:
        """Yield the ids of ``"".join(chunks)``, equal to ``encode`` of it, lazily and in
        memory bounded by the longest piece (:func:`.stream.encode_stream`, which gives the
        options' meaning; :class:`.stream.EncodeStreamMixin` implements the method with it).
        """
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

    def encode_piece(self, piece: str, *, at_text_start: bool = False) -> Sequence[int]:
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


@runtime_checkable
class ByteLevelEncoding(PieceEncoding, Protocol):
    """What the document and :mod:`.stream` use besides :class:`PieceEncoding` when tokens are
    byte strings (the tiktoken family): per-token tables and whole-block entry points."""

    #: True when ``encode`` joins a surrogate pair stored as two code points into its
    #: character first (tiktoken does); :func:`.stream.encode_stream` then joins pairs that
    #: chunks cut
    joins_surrogate_pairs: bool

    @property
    def clean_starts(self) -> bytearray:
        """``clean_starts[id]``: the document's CLEAN flag (2) where token ``id`` starts on a
        character boundary, else 0."""
        ...

    @property
    def lead_counts(self) -> array[int]:
        """``lead_counts[id]``: characters whose first UTF-8 byte is in token ``id`` (the
        token's code point length in the document)."""
        ...

    @property
    def piece_strings(self) -> Callable[[str], list[str]] | None:
        """The pieces of a text as strings in one C call per block, or None (no fast form)."""
        ...

    def encode_piece_strings(self, pieces: Iterable[str]) -> list[int]:
        """Token ids of consecutive whole pieces (from :attr:`piece_strings`), concatenated."""
        ...

    def encode_bytes_piece(self, data: bytes) -> list[int]:
        """Token ids of the BPE of ``data`` (a window inside one piece: Algorithm 1)."""
        ...

    def encode_by_piece(self, text: str) -> list[Sequence[int]]:
        """The ids of each piece of ``text``, one sequence per piece."""
        ...

    def iter_blocks(self, text: str, size: int) -> Iterator[str]:
        """Consecutive slices of ``text`` of about ``size`` code points, cut where no piece can
        span (their encodings concatenate to the text's)."""
        ...

    def split_blocks(self, text: str, size: int) -> list[str]:
        """The slices of :meth:`iter_blocks` as a list."""
        ...


@runtime_checkable
class QuietEncoding(PieceEncoding, Protocol):
    """An optional capability: piece boundaries decided *locally*, so that an edit deep inside
    a long piece that creates no boundary near itself leaves every boundary where it was (the
    piece only stretches) and the document re-tokenizes it by Algorithm 1 without re-splitting
    it to its end. Gemma's pieces, whose pre-tokenizer never splits a line without spaces and
    whose vocabulary has every pair of ``ACGT`` as a token, are what it is for.

    With ``M = quiet_margin``, the encoding guarantees, for every text:

    1. the horizon of every piece is at most its end plus ``M``;
    2. whether a position ``c`` is a piece boundary is a function of ``text[c - M : c + M]``
       (and of the piece's own start only through cuts closer than ``M``, of which a quiet
       stretch has none);
    3. ``quiet(w)`` true means: wherever ``w`` occurs, at ``[x, x + len(w))``, no position of
       ``[x + M, x + len(w) - M]`` is a piece boundary.

    The document (``Document._stretch``) asks ``quiet`` of the new text around an edit that
    lies at least ``2 M`` inside its old piece: by 2 the boundaries left of the edit and right
    of it are the old ones, shifted; by 3 none is new near it; by 1 no earlier piece reads the
    edit.
    """

    #: ``M`` above, in code points
    quiet_margin: int

    def quiet(self, text: str) -> bool:
        """Whether ``text`` certainly holds no piece boundary ``M`` or more from its ends (3.
        above); False when unsure."""
        ...


def quiet_side(enc: PieceEncoding) -> QuietEncoding | None:
    """``enc`` as a :class:`QuietEncoding` when it offers the capability (its ``quiet_margin``
    is positive: an encoding may offer it for some pipelines only), else None."""
    margin = getattr(enc, "quiet_margin", 0)
    if isinstance(margin, int) and margin > 0 and callable(getattr(enc, "quiet", None)):
        return enc  # type: ignore[return-value]  # checked: the two members
    return None


class InnerEncoding(QuietEncoding, Protocol):
    """An optional capability beside :class:`QuietEncoding`: the boundaries an edit makes
    inside quiet runs, decided from a window around it (``Document._local``: an ASCII letter
    or a space typed into a line of emoji, which splits the line's one piece, without
    re-splitting the line to its end). The tiktoken patterns offer it
    (:meth:`.bytelevel.pretokenize.Pretokenizer.inner_boundaries` has the argument)."""

    #: whether it is offered (an encoding class may offer it for some patterns only)
    inner_windows: bool

    def inner_boundaries(
        self, text: str, pad: int,
        old: tuple[str, list[int], Callable[[], tuple[int, str, int]]] | None = None,
    ) -> list[int] | None:
        """The piece boundaries strictly inside the new text ``text`` of a window whose first
        and last ``pad`` characters are quiet old text inside long old pieces, or None when
        the window does not decide them; ``old``: the window's old text, its boundaries
        strictly inside (relative), and a function giving the :meth:`run_classes` of the old
        text from the left piece's start to the window, and the first character from the
        window's end to the right piece's end (included) where :meth:`run_break` finds one
        ("" if none) with its offset past the window's end when it lies inside the piece (-1
        otherwise; asked only when the runs have states, as o200k's letter pieces)."""
        ...

    def run_classes(self, text: str) -> int:
        """Bits saying what of ``text`` bears on a run's course far from an edit (0: nothing);
        ORed over parts of a text, they are the whole text's."""
        ...

    def run_break(self, text: str) -> int:
        """Where the first character of ``text`` that can change a run's course is (the one
        bit 2 of :meth:`run_classes` says is there), -1 when none is."""
        ...


def inner_side(enc: PieceEncoding) -> InnerEncoding | None:
    """``enc`` as an :class:`InnerEncoding` when it is a :class:`QuietEncoding` that offers
    ``inner_boundaries`` (``inner_windows`` true), else None."""
    if quiet_side(enc) is not None and getattr(enc, "inner_windows", False) is True and callable(
            getattr(enc, "inner_boundaries", None)):
        return enc  # type: ignore[return-value]  # checked: the members
    return None


def _members(proto: type) -> list[str]:
    """The public members a protocol class declares itself (annotations and methods)."""
    names = set(vars(proto).get("__annotations__", {}))
    names.update(k for k in vars(proto) if not k.startswith("_"))
    return sorted(names)


_PIECE_MEMBERS = _members(PieceEncoding)
_BYTE_LEVEL_MEMBERS = sorted({*_PIECE_MEMBERS, *_members(ByteLevelEncoding)})

# An ``isinstance`` against a runtime-checkable protocol looks up every member: it is done
# once per class instead of once per document (protocol members are class attributes in every
# livetok encoding; cost: ``docs/algorithms.md`` section 2).
#: the classes that passed :func:`check_encoding`
_PIECE_CLASSES: set[type] = set()
#: ``class -> is it byte-level``, for the classes :func:`byte_level` has seen
_BYTE_LEVEL: dict[type, bool] = {}


def check_encoding(enc: object) -> PieceEncoding:
    """``enc`` itself, once it is known to implement :class:`PieceEncoding`.

    >>> check_encoding(object())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: <object object at ...> is not a livetok encoding: it lacks count, decode, ...

    Runtime complexity: ``O(1)`` (one attribute lookup per member).
    """
    if type(enc) in _PIECE_CLASSES:
        return enc  # type: ignore[return-value]  # a checked class
    if isinstance(enc, PieceEncoding):
        _PIECE_CLASSES.add(type(enc))
        return enc
    missing = [m for m in _PIECE_MEMBERS if not hasattr(enc, m)]
    mixin = ("; a class gets encode_stream by inheriting "
             "livetok.incremental.stream.EncodeStreamMixin" if "encode_stream" in missing else "")
    raise TypeError(
        f"{enc!r} is not a livetok encoding: it lacks {', '.join(missing)}. Pass a name from "
        "livetok.incremental.list_encodings() or an object implementing "
        f"livetok.incremental.piece_encoding.PieceEncoding{mixin}"
    )


def byte_level(enc: PieceEncoding) -> ByteLevelEncoding | None:
    """``enc`` as a :class:`ByteLevelEncoding` when it is one (all of its members), else None.

    >>> from livetok.incremental import get_encoding
    >>> byte_level(get_encoding("cl100k_base")) is not None
    True

    Runtime complexity: ``O(1)``. The class and the instance's own attributes are asked first,
    so the per-token tables (properties a byte-level encoding builds on first use,
    ``O(vocabulary)``) are not built by the check itself; only an object that lacks a member
    there (one answered by ``__getattr__``, say) is checked with ``isinstance``, which reads
    them.
    """
    cls = type(enc)
    kind = _BYTE_LEVEL.get(cls)
    if kind is None:
        own = getattr(enc, "__dict__", {})
        kind = _BYTE_LEVEL[cls] = (all(hasattr(cls, m) or m in own for m in _BYTE_LEVEL_MEMBERS)
                                   or isinstance(enc, ByteLevelEncoding))
    return enc if kind else None  # type: ignore[return-value]  # checked for its class
