"""The session's lifecycle (LSP's "Lifecycle Messages"), kept by :class:`SessionProtocol`: a
request before ``initialize`` gets ``ServerNotInitialized`` (-32002) and a notification is
dropped (``exit`` excepted); a second ``initialize`` gets ``InvalidRequest`` (-32600); after
``shutdown`` requests get ``InvalidRequest`` (``protocol.py``); ``exit`` ends the session at
once, status 0 after ``shutdown`` and 1 without, and nothing is written after it.

Its ``initialize`` answer announces the capabilities of ``capabilities.py``, the table the
stdio front answers with too. It is also where a keystroke's ``didChange`` leaves pygls's path: :meth:`SessionProtocol.
take_notification` hands its JSON to :func:`.sync.did_change_json` (``docs/architecture.md``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from typing import TYPE_CHECKING, Any, Generator, cast

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.protocol.language_server import lsp_method

from livetok.server.lsp import sync
from livetok.server.lsp.capabilities import announced
from livetok.server.lsp.protocol import LivetokProtocol

if TYPE_CHECKING:
    from livetok.server.lsp.session import LivetokServer

__all__ = ["FAILED", "SessionProtocol"]

log = logging.getLogger(__name__)

#: what the client is told when a notification handler raised
FAILED = "livetok: handling a notification failed ({}); the server keeps running"


class SessionProtocol(LivetokProtocol):
    """:class:`LivetokProtocol` keeping the session's lifecycle: nothing but ``initialize``
    (and ``exit``) before ``initialize``, one ``initialize``, nothing after ``exit``.

    Whichever answers the ``initialize`` (this server, or ``front.py`` before it exists: then
    :meth:`LivetokServer.adopt_initialize` marks it seen), the client sees LSP's rules.
    """

    #: an ``initialize`` request was handled (or answered by the front)
    initialize_seen = False
    #: ``exit`` came: the session is over and nothing more is written
    exited = False

    def handle_message(self, message: Any) -> None:
        """Apply the lifecycle's rules, then dispatch as :class:`LivetokProtocol` does.

        Runtime complexity: ``O(1)`` besides the dispatch.
        """
        method = getattr(message, "method", None)
        if self.exited:
            return
        if method == types.INITIALIZE and not self._shutdown:
            if self.initialize_seen:
                self._send_error(message.id, JsonRpcInvalidRequest(
                    "initialize was sent already: a session is initialized once (send "
                    "shutdown and exit, then start a new session)"))
                return
            self.initialize_seen = True
        elif method not in (None, types.EXIT) and not self.initialize_seen:
            if hasattr(message, "id"):
                self._send_error(message.id, JsonRpcServerNotInitialized(
                    f"{method} before initialize: send the initialize request first"))
            else:  # LSP: notifications before initialize are dropped
                log.info("dropped %s: it came before initialize", method)
            return
        pending = cast("LivetokServer", self._server).pending
        if pending and method != types.EXIT:
            pending.apply_all()  # every message sees the changes sent before it (pending.py)
        super().handle_message(message)

    def take_notification(self, data: dict[str, Any]) -> bool:
        """A keystroke's ``didChange`` goes from its JSON to :func:`.sync.did_change_json`
        while the session runs (before ``initialize`` and after ``shutdown`` the lifecycle's
        rules apply, in :meth:`handle_message`); False: it is typed and dispatched.

        Runtime complexity: ``O(1)`` besides the handler.
        """
        if (data.get("method") != types.TEXT_DOCUMENT_DID_CHANGE or self.exited
                or self._shutdown or not self.initialize_seen):
            return False
        server = cast("LivetokServer", self._server)
        try:
            return sync.did_change_json(server, data.get("params"))
        except Exception as exc:  # reported as a typed handler's failure is
            log.exception("a notification handler failed: textDocument/didChange")
            server.warn(FAILED.format(f"{type(exc).__name__}: {exc}"))
            return True

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams,
                       ) -> Generator[Any, Any, types.InitializeResult]:
        """pygls's ``initialize`` (the server's handler, the position unit its codec uses),
        announcing the capabilities of the one table the stdio front reads too
        (``capabilities.py``), not pygls's own reading of the registered handlers.

        Runtime complexity: ``O(size of the client's capabilities)``.
        """
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        unit = result.capabilities.position_encoding
        caps = announced(self._converter.unstructure(params.capabilities),
                         str(getattr(unit, "value", unit) or "utf-16"))
        result.capabilities = self._converter.structure(caps, types.ServerCapabilities)
        self.server_capabilities = result.capabilities
        return result

    # pygls's is a generator that first runs the server's own exit handler (livetok has none)
    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:  # type: ignore[override]
        """End the session now (``SystemExit``: status 0 after ``shutdown``, 1 without). The
        transport stops reading; callbacks still queued (a coalesced count) write nothing."""
        status = 0 if self._shutdown else 1
        self.exited = True
        self._shutdown = True  # what checks for shutdown (publish) stops too
        try:
            closing = self.writer.close() if self.writer is not None else None
            if inspect.isawaitable(closing):
                asyncio.ensure_future(closing)
        except Exception:  # the client may have closed its end first
            log.info("closing the output at exit failed", exc_info=True)
        raise SystemExit(status)

    def _send_data(self, data: Any) -> None:
        # after exit the output is closed: a write would fail, and pygls would report the
        # failure by writing again (a loop of errors that kept a session alive for seconds)
        if not self.exited:
            super()._send_data(data)

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """``notify(method, params)`` for params made of JSON values only (livetok's own
        notifications): ``json.dumps`` of a plain dict, framed and written by
        :meth:`LivetokProtocol.write_json`, as the floor server does
        (``benchmarks/floor_server.py``): no pygls message class and converter (unstructuring
        the notification through cattrs was a third of publishing a count), nor pygls's
        ``_send_data`` (its ``default=`` serializer, a log call and an awaitable check per
        message).

        Runtime complexity: ``O(len(message))``.
        """
        if self.exited:
            return
        # ASCII (``ensure_ascii``): its length in bytes is its length
        self.write_json(json.dumps({"jsonrpc": self.VERSION, "method": method, "params": params}))
