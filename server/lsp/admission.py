"""Whether a session keeps a document's text: :class:`Admission` (``ls.admission``).

A session may bound the code points its open documents hold together
(``LivetokServer.max_open_chars``: ``livetok demo`` sets one). A document that would pass it is
not kept (:meth:`Admission.drop`): a diagnostic tells the user, requests on it fail with the
reason, its changes are ignored, until it is closed or opened again. Documents being built in
the worker thread count toward the bound meanwhile (:meth:`Admission.opening`). A big didOpen
also shows work-done progress (:meth:`Admission.progress_begin`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from livetok.server.lsp.publishing import notice

if TYPE_CHECKING:
    from livetok.server.lsp.session import LivetokServer

__all__ = ["Admission"]

#: documents not kept (over ``max_open_chars``) whose reason the session remembers
_MAX_NOT_KEPT = 1024


class Admission:
    """The session's documents not kept, and those being opened, against its size bound."""

    def __init__(self, ls: LivetokServer) -> None:
        self._ls = ls
        #: didOpens being built in the worker thread: ``uri -> characters``, counted toward
        #: ``max_open_chars`` before they are in the store
        self._opening: dict[str, int] = {}
        #: documents not kept for ``max_open_chars``: ``uri -> why`` (the latest ones)
        self._not_kept: dict[str, str] = {}
        self._progress_n = 0

    def why(self, uri: str) -> str | None:
        """Why ``uri`` is not kept (:meth:`drop`), or None: it may be open.

        Runtime complexity: ``O(1)``.
        """
        return self._not_kept.get(uri)

    def forget(self, uri: str) -> None:
        """``uri`` is closed or opened again: whether it is kept is decided anew."""
        self._not_kept.pop(uri, None)

    def opening(self, uri: str, n_chars: int) -> None:
        """``uri``, of ``n_chars`` code points, is being built in the worker thread: it counts
        toward the bound until :meth:`opened`."""
        self._opening[uri] = n_chars

    def opened(self, uri: str) -> None:
        """``uri``'s build (:meth:`opening`) ended: it is in the store, or failed."""
        self._opening.pop(uri, None)

    def clear(self) -> None:
        """The session ended (``LivetokServer.release``): nothing is remembered."""
        self._opening.clear()
        self._not_kept.clear()

    def not_kept(self, uri: str, n_chars: int) -> str | None:
        """Why a text of ``n_chars`` code points at ``uri`` cannot be held within
        ``max_open_chars`` beside the session's other documents, or None.

        Runtime complexity: ``O(documents being opened)``.
        """
        ls = self._ls
        if ls.max_open_chars is None:
            return None
        od = ls.store.find(uri)
        others = (ls.store.chars - (od.length if od is not None else 0)
                  + sum(n for u, n in self._opening.items() if u != uri))
        if others + n_chars <= ls.max_open_chars:
            return None
        return (f"livetok: {uri} is not kept: with its {n_chars:,} characters this session's "
                f"open documents would hold {others + n_chars:,}, over its limit of "
                f"{ls.max_open_chars:,}; close other documents, then reopen this one")

    def drop(self, uri: str, why: str) -> None:
        """Forget ``uri`` and its text (:meth:`not_kept` said ``why``): a diagnostic tells the
        user, requests on it fail with ``why``, its changes are ignored, until it is closed
        or opened again."""
        ls = self._ls
        ls.close(uri)
        self._not_kept[uri] = why
        if len(self._not_kept) > _MAX_NOT_KEPT:
            del self._not_kept[next(iter(self._not_kept))]  # the oldest
        ls.warn(why)
        ls.publisher.diagnostics(
            uri, [notice(why, "not-kept", types.DiagnosticSeverity.Warning)])

    def progress_begin(self, uri: str, n_chars: int) -> str:
        """Start a work-done progress for a big didOpen; returns its token."""
        self._progress_n += 1
        token = f"livetok/open/{self._progress_n}"
        protocol = self._ls.protocol
        # subtle: the begin notification follows the create request without awaiting its
        # answer; clients handle messages in order, so the token exists when begin arrives
        protocol.send_request(types.WINDOW_WORK_DONE_PROGRESS_CREATE,
                              types.WorkDoneProgressCreateParams(token=token))
        name = uri.rsplit("/", 1)[-1]
        protocol.notify(types.PROGRESS, types.ProgressParams(
            token=token, value=types.WorkDoneProgressBegin(
                title="livetok", cancellable=False,
                message=f"tokenizing {name} ({n_chars:,} characters)")))
        return token
