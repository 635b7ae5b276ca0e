"""The session's open documents by URI, and how many code points they hold together
(``ls.store``; the session's size admission reads :attr:`DocumentStore.chars`)."""

from __future__ import annotations

from typing import Iterator

from livetok.server.lsp.documents import OpenDocument, UnknownDocument

__all__ = ["DocumentStore"]


class DocumentStore:
    """The open documents by URI, and how many code points they hold together.

    Runtime complexity: dictionary operations, ``O(1)``.
    """

    def __init__(self) -> None:
        self._docs: dict[str, OpenDocument] = {}
        #: the code points of the documents held (kept by :meth:`add`, :meth:`remove` and
        #: :meth:`resized`)
        self.chars = 0

    def __contains__(self, uri: object) -> bool:
        return uri in self._docs

    def __iter__(self) -> Iterator[OpenDocument]:
        return iter(list(self._docs.values()))

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, od: OpenDocument) -> OpenDocument | None:
        """Add (or replace) a document; returns the replaced one."""
        old = self._docs.get(od.uri)
        self._docs[od.uri] = od
        self.chars += od.length - (old.length if old is not None else 0)
        return old

    def get(self, uri: str) -> OpenDocument:
        """The open document at ``uri`` or :class:`UnknownDocument`."""
        od = self._docs.get(uri)
        if od is None:
            raise UnknownDocument(
                f"document {uri!r} is not open: send textDocument/didOpen first "
                f"({len(self._docs)} document(s) open)"
            )
        return od

    def find(self, uri: str) -> OpenDocument | None:
        """The open document at ``uri`` or None."""
        return self._docs.get(uri)

    def remove(self, uri: str) -> OpenDocument | None:
        """Forget a document; returns it (None if it was not open)."""
        od = self._docs.pop(uri, None)
        if od is not None:
            self.chars -= od.length
        return od
