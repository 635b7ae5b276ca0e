"""livetok's JSON-RPC layer: custom message names and a protocol that answers every request.

pygls 2.1.1 decodes a message with lsprotocol's types before dispatching it. When that
fails (a negative line, a missing field), pygls logs the error and drops the message: a
request then never gets a response and the client waits forever. :class:`LivetokProtocol`
decodes each message itself (:meth:`LivetokProtocol.decode`): a request that does not
validate is answered with ``InvalidParams`` (-32602) naming the bad field, a notification is
reported to the server (``on_invalid_notification``) so that it can mark the document out of
sync. Requests that arrive after ``shutdown`` get ``InvalidRequest`` instead of silence.

It also keeps document content out of pygls's workspace: ``didOpen``/``didChange``/``didClose``
go straight to livetok's handlers (pygls's ``TextDocument`` would rebuild the whole string
on every change).

Custom messages (see ``docs/protocol.md``):

- request ``livetok/tokenCount``: ``{"textDocument": {"uri"}, "range"?}`` ->
  ``{"uri", "version", "encoding", "tokens", "characters", "rangeTokens"?}``
- notification ``livetok/didChangeTokenCount`` (server -> client): the same fields, sent
  after changes are applied, coalesced when changes arrive faster than it is sent.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

__all__ = [
    "TOKEN_COUNT",
    "DID_CHANGE_TOKEN_COUNT",
    "REQUEST_FAILED",
    "LivetokProtocol",
]

log = logging.getLogger(__name__)

TOKEN_COUNT = "livetok/tokenCount"
DID_CHANGE_TOKEN_COUNT = "livetok/didChangeTokenCount"
#: LSP ``RequestFailed``: the request was valid but the server cannot answer it now
REQUEST_FAILED = -32803


def _describe(exc: BaseException) -> str:
    """A readable reason for a decoding failure: which field, what was expected."""
    cause = exc.__cause__ or exc
    if isinstance(cause, cattrs.BaseValidationError):
        try:
            paths = cattrs.transform_error(cause, path="$")
        except Exception:  # pragma: no cover - transform_error is best effort
            paths = []
        leaves: list[str] = []

        def walk(e: BaseException) -> None:
            subs = getattr(e, "exceptions", None)
            if subs:
                for sub in subs:
                    walk(sub)
            else:
                leaves.append(str(e))

        walk(cause)
        # the leaf says what was wrong ("Position.line should be in range ... but was -1"),
        # the path says where
        return "; ".join(f"{p} ({leaf})" if leaf and leaf not in p else p
                         for p, leaf in zip(paths, leaves + [""] * len(paths)))
    return f"{type(cause).__name__}: {cause}"


class LivetokProtocol(LanguageServerProtocol):
    """pygls's LSP protocol with message decoding that never leaves a request unanswered."""

    #: called with (method, raw params, reason) when a notification fails to decode
    on_invalid_notification: Callable[[str, Any, str], None] | None = None

    # -- decoding ------------------------------------------------------------------------------

    def decode(self, body: bytes | str) -> Any | None:
        """Parse and type one message body; answer the errors; None when nothing to dispatch.

        Runtime complexity: ``O(len(body))``.
        """
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            self._send_error(None, JsonRpcParseError(f"invalid JSON: {exc}"))
            return None
        if not isinstance(data, dict) or data.get("jsonrpc") != self.VERSION:
            msg_id = data.get("id") if isinstance(data, dict) else None
            self._send_error(
                msg_id if isinstance(msg_id, (str, int)) else None,
                JsonRpcInvalidRequest('a message must be a JSON object with "jsonrpc": "2.0"'),
            )
            return None
        try:
            return self.structure_message(data)
        except Exception as exc:
            reason = _describe(exc)
            method = data.get("method")
            if "id" in data and method is not None:
                msg_id = data["id"]
                self._send_error(
                    msg_id if isinstance(msg_id, (str, int)) else None,
                    JsonRpcInvalidParams(f"invalid params for {method}: {reason}"),
                )
            elif method is not None:
                log.warning("dropped notification %s with invalid params: %s", method, reason)
                if self.on_invalid_notification is not None:
                    self.on_invalid_notification(method, data.get("params"), reason)
            else:
                log.warning("dropped undecodable response: %s", reason)
            return None

    def structure_message(self, data: dict[str, Any]) -> Any:
        # pygls's version logs a traceback per failure; decode() reports instead
        if "id" in data and "method" in data:
            t = self.get_message_type(data["method"])
            if t is not None:
                return self._converter.structure(data, t)
        elif "id" not in data and "method" in data:
            t = self.get_message_type(data["method"])
            if t is not None:
                return self._converter.structure(data, t)
        return super().structure_message(data)

    def _send_error(self, msg_id: Any, error: Any) -> None:
        log.warning("answering message %r with error %s: %s", msg_id, error.code, error.message)
        self._send_data(
            {"jsonrpc": self.VERSION, "id": msg_id,
             "error": {"code": error.code, "message": error.message}}
        )

    # -- pending handlers ----------------------------------------------------------------------

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any,
                         args: Any = None, kwargs: Any = None) -> None:
        """pygls's, but a handler's entry in ``_request_futures`` goes when it completes.

        pygls files every generator handler (its built-in ``didOpen``/``didChange``/``didClose``
        and ``didChangeConfiguration`` among them) and every step of one under a fresh random
        id that only a request's answer removes: one entry per notification, forever (50,002
        entries after 50,000 edits). Requests are answered and removed as before; their
        cancellation still finds a request that is running.
        """

        def done(future: Any) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        # a cancel that arrives after the answer is normal (VS Code cancels code lenses and
        # semantic tokens while typing); pygls logs a warning for each one
        future = self._request_futures.pop(msg_id, None)
        if future is None:
            log.debug("cancel for %r, which is already answered", msg_id)
        elif future.cancel():
            log.debug("cancelled request %r", msg_id)

    def handle_message(self, message: Any) -> None:
        # pygls ignores requests after shutdown without answering them
        if self._shutdown and getattr(message, "method", types.EXIT) != types.EXIT \
                and hasattr(message, "id"):
            self._send_error(message.id, JsonRpcInvalidRequest("the server is shutting down"))
            return
        super().handle_message(message)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        # pygls announces the unit it negotiated before the server's handler ran; the server
        # may use another (``--position-encoding``): announce the one its codec uses
        result = yield from super().lsp_initialize(params)
        codec = getattr(self._server, "codec", None)
        if codec is not None:
            result.capabilities.position_encoding = types.PositionEncodingKind(codec.unit)
        return result

    # -- document sync without pygls's workspace -----------------------------------------------

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None
