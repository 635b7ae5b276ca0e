"""The handler registry: how every LSP handler is registered, and how a request is answered.

Handlers are plain functions ``handler(ls, params)`` under a decorator naming their LSP
method, as in pygls's examples (``@server.feature``). A server is made per connection
(``livetok serve --tcp``, the demo's websockets), so :func:`feature` and :func:`request`
record them in :data:`FEATURES`, and each ``LivetokServer`` registers those with pygls's own
``self.feature`` when it is created (``docs/architecture.md`` says why). The handlers
themselves live in :mod:`.session` (lifecycle, document sync) and :mod:`.requests`.

A request handler returns its answer; :func:`_answer` gives it at once, or at the request's
place in its document's backlog while the document is busy with background work, and maps
livetok's errors to JSON-RPC errors in one place (:func:`_compute`):

=============================  ===========================================
``UnknownDocument``            ``InvalidParams`` (-32602): open it first
``PositionError``              ``InvalidParams`` (-32602): names the bound
``DocumentUnavailable``        ``RequestFailed`` (-32803): how to re-sync
=============================  ===========================================
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, Callable, Generator, TypeVar

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from livetok.server.lsp.answers import field_of
from livetok.server.lsp.documents import DocumentUnavailable, OpenDocument, UnknownDocument
from livetok.server.lsp.positions import PositionError
from livetok.server.lsp.protocol import REQUEST_FAILED

if TYPE_CHECKING:
    from livetok.server.lsp.session import LivetokServer

__all__ = ["FEATURES", "Heavy", "feature", "request", "uri_of"]

F = TypeVar("F", bound=Callable[..., Any])
#: ``heavy(ls, od)``: answering takes time linear in a big document (see :func:`_answer`)
Heavy = Callable[["LivetokServer", OpenDocument], bool]
#: the handlers every new server registers: (LSP method, options, ``handler(ls, params)``)
FEATURES: list[tuple[str, Any, Callable[..., Any]]] = []


def feature(method: str, options: Any = None) -> Callable[[F], F]:
    """pygls's ``@server.feature(method, options)`` for a server made per connection:
    ``handler(ls, params)`` is registered on every :class:`LivetokServer` created after. A
    second handler of one notification (pygls takes one per method) runs after the first,
    whatever the first did (``workspace/didChangeWatchedFiles``: the budget files, then the
    workspace map)."""

    def record(handler: F) -> F:
        for i, (m, opts, first) in enumerate(FEATURES):
            if m == method:
                FEATURES[i] = (m, opts if opts is not None else options,
                               functools.partial(_both, first=first, then=handler))
                return handler
        FEATURES.append((method, options, handler))
        return handler

    return record


def _both(ls: LivetokServer, params: Any, *, first: Callable[..., Any],
          then: Callable[..., Any]) -> None:
    """Two handlers of one notification, in the order they were registered."""
    try:
        first(ls, params)
    finally:
        then(ls, params)


def request(method: str, options: Any = None, *, heavy: Heavy | None = None,
            ) -> Callable[[F], F]:
    """:func:`feature` for a request: ``handler(ls, params)`` returns the answer, which
    :func:`_answer` gives at once or at the request's place in its document's backlog."""

    def record(handler: F) -> F:
        FEATURES.append((method, options, functools.partial(_answer, handler=handler,
                                                             heavy=heavy)))
        return handler

    return record


def _compute(handler: Callable[..., Any], ls: LivetokServer, params: Any) -> Any:
    """``handler(ls, params)``, with livetok's document errors as JSON-RPC errors."""
    try:
        return handler(ls, params)
    except (UnknownDocument, PositionError) as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    except DocumentUnavailable as exc:
        raise JsonRpcException(message=str(exc), code=REQUEST_FAILED) from exc


def _outcome(handler: Callable[..., Any], ls: LivetokServer, params: Any) -> tuple[bool, Any]:
    """``(True, answer)`` or ``(False, error)``: computed off the loop, settled on it."""
    try:
        return True, _compute(handler, ls, params)
    except Exception as exc:  # answered as the error it is, on the loop's thread
        return False, exc


def _settle(fut: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if not fut.cancelled():
        if outcome[0]:
            fut.set_result(outcome[1])
        else:
            fut.set_exception(outcome[1])


async def _wait_for(fut: asyncio.Future[Any]) -> Any:
    """Await a deferred request's answer (run by pygls as a sub-handler of a generator)."""
    return await fut


def _answer(ls: LivetokServer, params: Any, *, handler: Callable[..., Any],
            heavy: Heavy | None) -> Generator[Any, Any, Any]:
    """Answer a request at once or, when its document is busy with background work, at its
    place in that document's backlog (see ``background.py``).

    ``heavy(ls, od)`` says when answering takes time linear in a big document (the sections
    of a long Markdown file, semantic tokens of a whole big file): the answer is then
    computed in the worker thread, as a big didOpen is, so other documents are served
    meanwhile; this document's later messages wait for it, in order.

    Subtle: a generator, not a coroutine. pygls runs it synchronously up to its first
    ``yield``, so an answer that needs no waiting goes out before the next message is read;
    a coroutine would run after the messages already read, and could see later changes.
    """
    uri = uri_of(params)
    if uri is not None and heavy is not None and not ls.background.busy(uri):
        od = ls.store.find(uri)
        if od is not None and od.length >= ls.settings.progress_threshold and heavy(ls, od):
            fut_w: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            if ls.background.start(uri, functools.partial(_outcome, handler, ls, params),
                                   functools.partial(_settle, fut_w)):
                return (yield _wait_for, (fut_w,), {})
    if uri is None or not ls.background.busy(uri):
        return _compute(handler, ls, params)
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def in_turn() -> None:
        if not fut.cancelled():
            _settle(fut, _outcome(handler, ls, params))

    ls.background.defer(uri, in_turn)
    return (yield _wait_for, (fut,), {})


def uri_of(params: Any) -> str | None:
    """The ``textDocument.uri`` of request params, if there is one."""
    td = field_of(params, "text_document") or field_of(params, "textDocument")
    uri = field_of(td, "uri")
    return uri if isinstance(uri, str) else None
