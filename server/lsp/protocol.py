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
on every change; see :meth:`LivetokProtocol._register_builtin_features`).

Custom messages (see ``docs/protocol.md``):

- request ``livetok/tokenCount``: ``{"textDocument": {"uri"}, "range"?}`` ->
  ``{"uri", "version", "encoding", "tokens", "characters", "rangeTokens"?}``
- notification ``livetok/didChangeTokenCount`` (server -> client): the same fields, sent
  after changes are applied, coalesced when changes arrive faster than it is sent.
- request ``livetok/listEncodings``: no params -> ``{"encodings": [{"name", "description"}],
  "current", "tokenizer"}``, what an encoding picker offers.

Below JSON-RPC, :class:`Framer` (``framing.py``) splits the LSP base protocol (``Content-Length`` headers) of
stdio and TCP into message bodies and finds its feet again after a bad frame; both it and
:meth:`LivetokProtocol.decode` enforce the limits (message size, JSON nesting) that keep a
hostile or broken client from going unanswered or taking the server down (``docs/security.md``).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import re
from typing import Any, Callable, Generator

import cattrs
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification
from pygls.protocol.language_server import lsp_method

from livetok.server.lsp.bigtext import MIN_BYTES as BIG_TEXT_BYTES
from livetok.server.lsp.bigtext import split_text_member
from livetok.server.lsp.framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    MAX_JSON_DEPTH,
    Frame,
    Framer,
    Refusal,
    deep_refusal,
    nesting_exceeds,
    refusal,
)

__all__ = [
    "TOKEN_COUNT",
    "LIST_ENCODINGS",
    "DID_CHANGE_TOKEN_COUNT",
    "REQUEST_FAILED",
    "MAX_JSON_DEPTH",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "Frame",
    "Framer",
    "LivetokProtocol",
    "nesting_exceeds",
]

log = logging.getLogger(__name__)

TOKEN_COUNT = "livetok/tokenCount"
DID_CHANGE_TOKEN_COUNT = "livetok/didChangeTokenCount"
LIST_ENCODINGS = "livetok/listEncodings"
#: LSP ``RequestFailed``: the request was valid but the server cannot answer it now
REQUEST_FAILED = -32803
#: bodies up to this size have their brackets counted (in C) before their depth is walked
_SHALLOW_BYTES = 1 << 16
#: handled by the server alone: pygls's workspace does not keep a copy of the text
_OWN_SYNC = (types.TEXT_DOCUMENT_DID_OPEN, types.TEXT_DOCUMENT_DID_CHANGE,
             types.TEXT_DOCUMENT_DID_CLOSE)


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


_JSON_STRING = rb'"(?:[^"\\]|\\.)*"'
#: the top-level ``"id"`` of a message that cannot be parsed whole, when it comes before any
#: array or object member (``{"jsonrpc": "2.0", "id": 7, "method": ..., "params": [[[...``)
_LEADING_ID = re.compile(
    rb'\s*\{\s*(?:' + _JSON_STRING + rb'\s*:\s*(?:' + _JSON_STRING
    + rb'|-?[0-9][0-9.eE+-]*|true|false|null)\s*,\s*)*?"id"\s*:\s*(-?[0-9]+|'
    + _JSON_STRING + rb')\s*[,}]', re.S)


def _leading_id(body: bytes | str) -> int | str | None:
    """The id of a message too deep to parse, read from its first members (None if not there).

    >>> _leading_id(b'{"jsonrpc": "2.0", "id": 7, "params": [[[[') , _leading_id(b'{"a": [1], "id": 2}')
    (7, None)
    """
    head = body[:1 << 16]
    m = _LEADING_ID.match(head.encode("utf-8", "replace") if isinstance(head, str) else head)
    if m is None:
        return None
    try:
        value = json.loads(m.group(1))
    except ValueError:
        return None
    return value if isinstance(value, (int, str)) else None


class LivetokProtocol(LanguageServerProtocol):
    """pygls's LSP protocol with message decoding that never leaves a request unanswered."""

    #: called with (method, raw params, reason) when a notification fails to decode
    on_invalid_notification: Callable[[str, Any, str], None] | None = None
    #: True while the transport hands over the messages of input it read
    #: (``transport.pump``): what a handler leaves to do once the input is handled (the
    #: coalesced counts) waits for :meth:`input_handled` instead of an event-loop callback
    reading = False
    #: True while the transport hands over a message it read alone (``transport.take``):
    #: nothing else read waits behind it, so what it changes may be published at once
    alone = False

    def write_json(self, body: str) -> None:
        """Frame and write one message whose JSON text ``body`` (ASCII: ``json.dumps``'s
        ``ensure_ascii``) is made already (a keystroke's count, ``publishing.py``), as
        ``notify_json`` writes the ``json.dumps`` of its message; nothing after ``exit`` (the
        session's ``exited``). A failed write is reported as pygls reports it.

        Runtime complexity: ``O(len(body))``.
        """
        if getattr(self, "exited", False):
            return
        writer = self.writer
        if writer is None:  # pygls logs that there is no transport
            super()._send_data(json.loads(body))
            return
        try:
            res = writer.write((f"Content-Length: {len(body)}\r\n\r\n{body}"
                                if self._include_headers else body).encode("ascii"))
            if res is not None and inspect.isawaitable(res):
                asyncio.ensure_future(res)
        except BrokenPipeError:
            log.exception("Error sending data. BrokenPipeError", exc_info=True)
            raise
        except Exception as error:
            log.exception("Error sending data", exc_info=True)
            self._server._report_server_error(error, JsonRpcInternalError)

    def input_handled(self) -> None:
        """The input read so far is handled: the session publishes what changed (its
        ``publisher``), in the same turn of the event loop."""
        publisher = getattr(self._server, "publisher", None)
        if publisher is not None:
            publisher.input_handled()

    # -- decoding ------------------------------------------------------------------------------

    def decode(self, body: bytes | str) -> Any | None:
        """Parse and type one message body; answer the errors; None when nothing to dispatch.

        A message nested more than :data:`MAX_JSON_DEPTH` levels deep is refused with
        ``InvalidRequest`` (-32600), answered under its id when that can be read, whether the
        parser could read it (then the depth is measured on the result) or gave up.

        Runtime complexity: ``O(len(body))``.
        """
        parts = None
        split = split_text_member(body) \
            if isinstance(body, bytes) and len(body) >= BIG_TEXT_BYTES else None
        try:
            if split is not None:  # a big didOpen: its text in blocks (see bigtext.py)
                data, parts = split
            elif isinstance(body, bytes) and body.startswith(b'{"'):
                # json.loads(body) as it does it (a body starting so is UTF-8 to its
                # detect_encoding), without the detection
                data = json.loads(body.decode("utf-8", "surrogatepass"))
            else:
                data = json.loads(body)
        except RecursionError:  # nested deeper than the C parser's recursion guard allows
            self._refuse(deep_refusal(_leading_id(body), None))
            return None
        except (ValueError, UnicodeDecodeError) as exc:
            self._send_error(None, JsonRpcParseError(f"invalid JSON: {exc}"))
            return None
        # the stdio front (front.py) asks the same function before it answers anything; an id
        # that is not an integer or a string never reaches pygls (which files it as a dict key)
        # a short body with few brackets cannot nest too deep (a keystroke's has 6): not walked
        refused = refusal(data, isinstance(body, bytes) and len(body) <= _SHALLOW_BYTES and (
            body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH))
        if refused is not None:
            self._refuse(refused)
            return None
        if "id" not in data and parts is None and self.take_notification(data):
            return None
        try:
            message = self.structure_message(data)
            if parts is not None:
                message.params.text_document.text = parts
            return message
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

    def take_notification(self, data: dict[str, Any]) -> bool:
        """Whether notification ``data`` was handled from its JSON, before lsprotocol types it
        (``SessionProtocol``: the keystroke); False here: every message is typed."""
        return False

    def get_message_type(self, method: str) -> Any:  # type: ignore[override]
        # pygls caches these per (protocol, method) in a class-wide lru_cache, which keeps up to
        # 128 finished sessions of a listener alive with their documents; it is one dict lookup
        return types.METHOD_TO_TYPES.get(method, (None,))[0]

    def get_result_type(self, method: str) -> Any:  # type: ignore[override]
        return types.METHOD_TO_TYPES.get(method, (None, None))[1]

    def structure_message(self, data: dict[str, Any]) -> Any:
        # pygls's version logs a traceback per failure; decode() reports instead
        if "id" in data and "method" in data:
            t = self.get_message_type(data["method"])
            if t is not None:
                return self._converter.structure(data, t)
        elif "id" not in data and "method" in data:
            if data["method"] == types.TEXT_DOCUMENT_DID_CHANGE:
                # not typed: its one handler reads the JSON (sync.did_change_json)
                return JsonRPCNotification(method=data["method"],
                                           jsonrpc=data.get("jsonrpc", ""),
                                           params=data.get("params"))
            t = self.get_message_type(data["method"])
            if t is not None:
                return self._converter.structure(data, t)
        return super().structure_message(data)

    def _refuse(self, refused: Refusal) -> None:
        """Answer a message :func:`.framing.refusal` refuses (``InvalidRequest``); a silent
        one (a notification) is logged and reported to ``on_invalid_notification``."""
        if refused.silent:
            log.warning("dropped notification %s: %s", refused.method, refused.reason)
            if self.on_invalid_notification is not None and refused.method is not None:
                self.on_invalid_notification(refused.method, None, refused.reason)
            return
        self._send_error(refused.msg_id, JsonRpcInvalidRequest(refused.reason))

    def reject_frame(self, reason: str, body: bytes = b"") -> None:
        """Answer a frame :class:`Framer` could not read with a parse error (-32700), under
        the id its body starts with, if any, else id null."""
        self._send_error(_leading_id(body) if body else None, JsonRpcParseError(reason))

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
        """pygls's dispatch by message kind, without its ``isinstance`` checks against
        runtime protocols (two per message, ~15 us of a keystroke's ~150 us), and answering
        the requests pygls ignores after shutdown."""
        method = getattr(message, "method", None)
        if self._shutdown and method != types.EXIT:
            if method is not None and hasattr(message, "id"):
                self._send_error(message.id, JsonRpcInvalidRequest("the server is shutting down"))
            return
        if message.jsonrpc != self.VERSION:
            log.warning("ignored a message with jsonrpc %r", message.jsonrpc)
            return
        ctx = contextvars.copy_context()  # as pygls: each handler in its own context
        if method is not None:
            if hasattr(message, "id"):
                ctx.run(self._handle_request, message.id, method, message.params)
            else:
                ctx.run(self._handle_notification, method, message.params)
        elif hasattr(message, "result"):
            ctx.run(self._handle_response, message.id, message.result)
        else:
            ctx.run(self._handle_response, message.id, None, message.error)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls's: the server's handler (which finishes the documents being built and what
        waits on them), then the requests still waiting are cancelled (answered with -32800).

        subtle: pygls cancels them while it iterates over its table of requests, and a cancel
        answers at once, which removes the entry: the shutdown itself failed ("dictionary
        changed size during iteration": -32603, and exit status 1). Here over a copy.
        """
        if (handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

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

    def _register_builtin_features(self) -> None:
        """pygls's built-in handlers, less those of ``didOpen``/``didChange``/``didClose``.

        pygls's keep a copy of every open document (its workspace), rebuilding the whole
        string on each change, and are generators that call the server's handler as a second
        step (a random id, a future and two callbacks per keystroke, ~10 % of a didChange's
        time in a burst). livetok's ``OpenDocument`` holds the text: without the built-ins,
        pygls dispatches these straight to the server's ``@feature`` handlers.
        """
        super()._register_builtin_features()  # type: ignore[no-untyped-call]
        for method in _OWN_SYNC:
            self.fm.builtin_features.pop(method, None)
