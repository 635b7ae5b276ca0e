"""``livetok.compare``'s records: an encoding a document is also counted with, and one
document's count under it (``docs/protocol.md``). ``documents.py`` keeps them up to date with
each edit; ``views.py`` shows them; ``compare_session.py`` loads them for the session.
"""

from __future__ import annotations

from dataclasses import dataclass

from livetok.incremental import Document, PieceEncoding

__all__ = ["Compared", "ComparedCount"]


@dataclass(frozen=True)
class Compared:
    """An encoding ``livetok.compare`` lists: the name as listed, the encoding it is counted
    with, and whether that count is exact (a model the catalog marks ≈ is counted with its
    stand-in, and ``note`` says why it is only ≈)."""

    name: str
    encoding: PieceEncoding
    exact: bool = True
    note: str | None = None


class ComparedCount:
    """One document's count under a :class:`Compared` encoding: its own core ``Document``,
    edited with the document's (None: the encoding is the document's own, whose count is
    shared), and the count its last build or edit gave."""

    __slots__ = ("compared", "doc", "tokens")

    def __init__(self, compared: Compared, doc: Document | None) -> None:
        self.compared = compared
        self.doc = doc
        self.tokens = doc.token_count if doc is not None else 0
