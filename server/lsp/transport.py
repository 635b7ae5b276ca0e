"""Reading messages from stdio, TCP or WebSocket and handing them to a protocol; sessions.

This replaces pygls's read loops for three reasons:

1. every message body goes through :meth:`LivetokProtocol.decode`, which answers invalid
   requests instead of dropping them, and the byte stream through :class:`Framer`, which
   answers bad frames and finds its feet again (see ``protocol.py``);
2. input is read in large chunks, and the messages a chunk holds are handled back to back
   without returning to the event loop. Callbacks scheduled while handling (the coalesced
   ``livetok/didChangeTokenCount``) therefore run only when the input is drained: a burst of
   changes yields one notification, a lone keystroke yields one right away;
3. a listener (``--tcp``, ``--ws``) gives every connection its own language server, so one
   client never sees another's documents, notifications or answers, and a client that stops
   reading is cut off once its unsent answers pass a bound (``docs/security.md``).

Concurrency model: one thread runs the asyncio loop and every handler of every session, in
arrival order, so changes are applied in order and a request sees exactly the changes sent
before it. stdin is read in that thread too, when the loop says it has input (a worker
thread reads it only when it cannot be polled: a regular file). Writes never wait: each
connection's writer queues what the client has not read yet, up to its bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Mapping, Sequence
from urllib.parse import parse_qs, urlsplit

from pygls.io_ import StdoutWriter

from livetok.server.lsp.protocol import DEFAULT_MAX_MESSAGE_BYTES, Frame, Framer, LivetokProtocol

if TYPE_CHECKING:  # websockets is imported when --ws serves; app imports this module
    from pygls.io_ import Writer
    from websockets.asyncio.server import ServerConnection
    from websockets.http11 import Request, Response

    from livetok.server.lsp.session import LivetokServer

__all__ = [
    "DEFAULT_MAX_SEND_QUEUE",
    "BoundedTransportWriter",
    "BoundedWebSocketWriter",
    "Limits",
    "WsAccess",
    "dispatch",
    "handle_frame",
    "pump",
    "serve_stdio",
    "serve_tcp",
    "serve_ws",
    "take",
]

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
#: ``--max-send-queue``'s default: answers a client has not read yet, per connection
DEFAULT_MAX_SEND_QUEUE = 64 << 20

#: a new language server for one session (``create_server`` with the command line's options)
ServerFactory = Callable[[], "LivetokServer"]
#: a listening socket's address as ``getsockname`` gives it: ``(host, port)``, and for IPv6
#: ``(host, port, flowinfo, scope_id)``
SocketAddress = tuple[Any, ...]


@dataclass(frozen=True)
class Limits:
    """Per-connection bounds: the largest message read, the most unsent bytes held."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_send_queue: int = DEFAULT_MAX_SEND_QUEUE


# -- reading -------------------------------------------------------------------------------------


def dispatch(protocol: LivetokProtocol, body: bytes) -> None:
    """Decode and handle one message; a handler's failure never ends the loop (``exit``'s
    SystemExit does: the caller ends the session)."""
    try:
        message = protocol.decode(body)
        if message is not None:
            protocol.handle_message(message)
    except SystemExit:
        raise
    except Exception:
        log.exception("unexpected error while handling a message; continuing")


def pump(framer: Framer, protocol: LivetokProtocol, who: str) -> bool:
    """Handle every frame complete in ``framer``; False when ``who`` does not speak LSP (the
    caller closes the connection).

    Then :meth:`LivetokProtocol.input_handled`: the counts the messages changed go out in
    this turn of the event loop, once for all of them.

    Runtime complexity: ``O(bytes consumed)`` plus the handlers.
    """
    protocol.reading = True
    try:
        for frame in framer.frames():
            if not handle_frame(frame, protocol, who):
                return False
        return True
    finally:
        protocol.reading = False
        protocol.input_handled()


def take(framer: Framer, protocol: LivetokProtocol, who: str, data: bytes) -> bool:
    """Handle the bytes ``data`` just read, as :func:`pump` does after ``framer.feed(data)``:
    when they are one whole message and nothing waits before them (a keystroke),
    ``Framer.whole`` hands its body over without the buffer and the frame loop.

    Runtime complexity: ``O(len(data))`` plus the handlers.
    """
    body = framer.whole(data)
    if body is None:
        framer.feed(data)
        return pump(framer, protocol, who)
    protocol.reading = protocol.alone = True
    try:
        dispatch(protocol, body)
        return True
    finally:
        protocol.reading = protocol.alone = False
        protocol.input_handled()


def handle_frame(frame: Frame, protocol: LivetokProtocol, who: str) -> bool:
    """Handle one frame (:func:`dispatch` a message, answer an error); False when the
    stream is not LSP."""
    if frame.kind == "message":
        dispatch(protocol, frame.body)
    elif frame.kind == "error":
        protocol.reject_frame(frame.reason, frame.body)
    elif frame.kind == "skipped":
        log.warning("%s: %s", who, frame.reason)
    else:
        log.warning("%s: closing the connection: %s", who, frame.reason)
        return False
    return True


def _input_ended(framer: Framer, who: str, consequence: str) -> int:
    """Log how the input ended; 1 when in the middle of a frame."""
    reason = framer.close()
    if reason is None:
        return 0
    log.error("%s: %s; %s", who, reason, consequence)
    return 1


def serve_stdio(protocol: LivetokProtocol, stdin: BinaryIO, stdout: BinaryIO,
                executor: ThreadPoolExecutor, limits: Limits = Limits(), *,
                framer: Framer | None = None, first: Sequence[Frame] = (),
                writer: Writer | None = None) -> int:
    """Serve one client over a pair of pipes until EOF (status 0, or 1 when the input ended
    in the middle of a message) or ``exit`` (SystemExit).

    ``first`` and ``framer``: frames and the bytes after them that were read already
    (``front.py``), handled before reading more; ``writer``: instead of ``stdout``'s.
    """
    protocol.set_writer(writer if writer is not None else StdoutWriter(stdout))
    if framer is None:
        framer = Framer(max_message_bytes=limits.max_message_bytes)

    fd = stdin.fileno()

    async def main() -> int:
        loop = asyncio.get_running_loop()
        for frame in first:
            handle_frame(frame, protocol, "stdin")
        pump(framer, protocol, "stdin")
        ended: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            # called by the loop when the pipe has input: read and handle it here, in the
            # loop's thread (a reader thread cost a thread switch and a queue per keystroke)
            try:
                data = os.read(fd, _CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except BaseException as exc:  # noqa: BLE001 - ended below, raised by main()
                loop.remove_reader(fd)
                if not ended.done():
                    ended.set_exception(exc)
                return
            if not data:
                loop.remove_reader(fd)
                if not ended.done():
                    ended.set_result(None)
                return
            try:
                take(framer, protocol, "stdin", data)
            except BaseException as exc:  # noqa: BLE001 - exit's SystemExit, raised by main()
                loop.remove_reader(fd)
                if not ended.done():
                    ended.set_exception(exc)

        try:
            loop.add_reader(fd, readable)
        except (PermissionError, ValueError, NotImplementedError, OSError):
            # not pollable (a regular file; Windows' pipes): a worker thread reads instead
            while data := await loop.run_in_executor(executor, os.read, fd, _CHUNK):
                take(framer, protocol, "stdin", data)
        else:
            await ended
        return _input_ended(framer, "stdin", "exiting with status 1 so that the editor "
                            "restarts the server")

    return asyncio.run(main())


# -- bounded writers -----------------------------------------------------------------------------


class _BoundedWriter:
    """What both bounded writers share: the cut-off and its log line.

    A write finds the bytes the client has not read yet; over ``max_pending_bytes``, the
    connection is cut instead. A single answer bigger than the bound (semantic tokens of a
    huge document) still goes out when the queue is short: what is held stays under the
    bound plus one message.
    """

    def __init__(self, max_pending_bytes: int, who: str) -> None:
        self.max_pending_bytes = max_pending_bytes
        self.who = who
        #: set once the client was cut off for not reading
        self.overflowed = False

    def _cut_off(self, unsent: int) -> None:
        self.overflowed = True
        log.warning("%s: closing the connection: the client has not read %d bytes of answers, "
                    "over the limit of %d (livetok serve --max-send-queue)",
                    self.who, unsent, self.max_pending_bytes)
        self._abort()

    def _abort(self) -> None:
        raise NotImplementedError


class BoundedTransportWriter(_BoundedWriter):
    """A pygls writer for an asyncio transport (TCP) that aborts the connection once the
    bytes the client has not read (the transport's buffer) pass ``max_pending_bytes``.

    Runtime complexity: ``O(1)`` per write besides the copy into the transport.
    """

    def __init__(self, transport: asyncio.WriteTransport, max_pending_bytes: int,
                 who: str = "client") -> None:
        super().__init__(max_pending_bytes, who)
        self._transport = transport

    def write(self, data: bytes) -> None:
        if self._transport.is_closing():
            return  # the client left (or was cut off): its answers go nowhere
        unsent = self._transport.get_write_buffer_size()
        if unsent > self.max_pending_bytes:
            self._cut_off(unsent)
            return
        self._transport.write(data)

    def close(self) -> None:
        # subtle: synchronous, so that pygls's ``exit`` raises SystemExit inside dispatch(),
        # where the session catches it; an awaitable would raise it in a loop callback
        self._transport.close()

    def _abort(self) -> None:
        self._transport.abort()


class BoundedWebSocketWriter(_BoundedWriter):
    """A pygls writer for a ``websockets`` connection that holds at most ``max_pending_bytes``
    of messages the client has not read, and closes the connection past that.

    pygls's ``WebSocketWriter`` starts a ``ws.send`` per message and forgets it: a client that
    never reads makes each send wait for ever on a transport buffer that keeps every answer.
    Here each write starts a send too (a send writes its frame into the transport before its
    first wait, so the order of messages holds), and the bytes not yet taken by the socket
    (sends not started plus the transport's buffer) are counted; when a write finds them
    past the bound, the connection is aborted and later writes are dropped. (A send waiting
    for the buffer to drain still holds its message: the memory held stays under about twice
    the bound.) ``close`` is synchronous, so that pygls's handling of ``exit`` raises
    SystemExit in the caller of ``dispatch``, which can end this session alone.

    >>> BoundedWebSocketWriter(None, 64 << 20).max_pending_bytes
    67108864

    Runtime complexity: ``O(1)`` per write besides the send itself.
    """

    def __init__(self, ws: ServerConnection, max_pending_bytes: int = DEFAULT_MAX_SEND_QUEUE,
                 who: str = "client") -> None:
        super().__init__(max_pending_bytes, who)
        self._ws = ws
        self._not_started = 0  # bytes of sends created but not yet run
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def unsent_bytes(self) -> int:
        """Bytes written here that the socket has not taken yet."""
        transport = getattr(self._ws, "transport", None)
        buffered = transport.get_write_buffer_size() if transport is not None else 0
        return self._not_started + buffered

    def write(self, data: bytes) -> None:
        if self._closed:
            return
        unsent = self.unsent_bytes()
        if unsent > self.max_pending_bytes:
            self._cut_off(unsent)
            return
        self._not_started += len(data)
        task = asyncio.ensure_future(self._send(data))
        self._tasks.add(task)  # a task nobody holds may be collected before it runs
        task.add_done_callback(self._tasks.discard)

    async def _send(self, data: bytes) -> None:
        from websockets.exceptions import ConnectionClosed

        self._not_started -= len(data)  # from here the bytes are in the transport's buffer
        if self._closed:
            return
        try:
            await self._ws.send(data)
        except ConnectionClosed:
            pass  # the read loop sees the close and ends the session

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            task = asyncio.ensure_future(self._ws.close())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _abort(self) -> None:
        self._closed = True
        transport = getattr(self._ws, "transport", None)
        if transport is not None:
            transport.abort()


# -- sessions and listeners ----------------------------------------------------------------------


def _end_session(server: LivetokServer, who: str) -> None:
    """What a session leaves behind: traces of documents still open (``--record-trace``);
    its documents' memory goes back to the system."""
    try:
        server.save_traces()
    except Exception:
        log.exception("%s: saving traces failed", who)
    server.release()
    log.info("%s: session ended", who)


class _Sessions:
    """The live sessions of a listener, and when it stops: on SIGINT/SIGTERM, or, with
    ``once``, when its first session ends (later connections are refused meanwhile)."""

    def __init__(self, once: bool) -> None:
        self.once = once
        self.started = 0
        #: the listener's exit status: with ``once``, 1 when its session's client sent
        #: ``exit`` without ``shutdown`` (LSP), else 0
        self.status = 0
        self.stop = asyncio.Event()
        self._closers: set[Callable[[], None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.stop.set)
            except (NotImplementedError, RuntimeError):  # Windows: Ctrl+C still interrupts
                pass

    def refuse(self) -> bool:
        """Whether a new connection must be turned away (``--once`` and one came already)."""
        return self.once and self.started > 0

    def begin(self, close: Callable[[], None]) -> None:
        """A session starts; ``close()`` ends its connection when the listener stops."""
        self.started += 1
        self._closers.add(close)
        self._idle.clear()

    def exited(self, exc: SystemExit) -> None:
        """A session's client sent ``exit``; with ``once`` its status is the listener's."""
        if self.once:
            self.status = exc.code if isinstance(exc.code, int) else 0

    def end(self, close: Callable[[], None]) -> None:
        self._closers.discard(close)
        if not self._closers:
            self._idle.set()
        if self.once:
            self.stop.set()

    async def close_all(self) -> None:
        """Close every live session's connection and wait (a while) for them to end: each
        sees its input end, and its ``finally`` saves its traces."""
        for close in list(self._closers):
            close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._idle.wait(), 10)


def _peer(addr: object) -> str:
    return f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) and len(addr) >= 2 else str(addr)


def serve_tcp(make_server: ServerFactory, host: str, port: int, *, limits: Limits = Limits(),
              once: bool = False,
              on_listening: Callable[[SocketAddress], None] | None = None) -> int:
    """Serve LSP over TCP, a fresh language server per connection, until SIGINT/SIGTERM (or,
    with ``once``, until the first connection ends); returns the exit status."""

    async def session(sessions: _Sessions, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        who = f"tcp {_peer(writer.get_extra_info('peername'))}"
        if sessions.refuse():
            log.warning("%s: refused: this server serves one client (--once)", who)
            writer.close()
            return
        sessions.begin(writer.close)
        server = make_server()
        server.protocol.set_writer(BoundedTransportWriter(writer.transport,
                                                          limits.max_send_queue, who))
        framer = Framer(max_message_bytes=limits.max_message_bytes, strict_start=True)
        log.info("%s: session started", who)
        try:
            while data := await reader.read(_CHUNK):
                if not take(framer, server.protocol, who, data):
                    break
            else:
                _input_ended(framer, who, "this session ends")
        except SystemExit as exc:  # the client sent `exit`: this session ends, the others go on
            sessions.exited(exc)
        except ConnectionError as exc:
            log.info("%s: connection lost: %s", who, exc)
        finally:
            writer.close()
            _end_session(server, who)
            sessions.end(writer.close)

    async def main() -> int:
        sessions = _Sessions(once)
        listener = await asyncio.start_server(
            lambda r, w: session(sessions, r, w), host, port, limit=_CHUNK)
        addr = listener.sockets[0].getsockname()
        log.info("livetok listening on %s:%s", addr[0], addr[1])
        if on_listening:
            on_listening(addr)
        await sessions.stop.wait()
        listener.close()
        await sessions.close_all()
        return sessions.status

    return asyncio.run(main())


@dataclass(frozen=True)
class WsAccess:
    """Who may open a WebSocket session: the secret ``token`` (``?token=`` on the URL or
    ``Authorization: Bearer``), and the ``Origin`` header, which must be absent (an editor)
    or one of ``allowed_origins`` (a web page that was let in on purpose)."""

    token: str
    allowed_origins: frozenset[str] = field(default_factory=frozenset)

    def refusal(self, path: str, headers: Mapping[str, str]) -> str | None:
        """Why a handshake with this path and these headers is refused, or None to accept.

        >>> a = WsAccess("s3cret", frozenset({"http://127.0.0.1:8000"}))
        >>> a.refusal("/?token=s3cret", {}), a.refusal("/", {"Authorization": "Bearer s3cret"})
        (None, None)
        >>> a.refusal("/?token=s3cret", {"Origin": "https://evil.example"})[:32]
        "origin 'https://evil.example' is"
        >>> a.refusal("/", {})[:16]
        'missing or wrong'

        Runtime complexity: ``O(len(path) + len(token))``.
        """
        origins = _header_values(headers, "Origin")
        if len(origins) > 1:
            return "more than one Origin header"
        if origins and origins[0] not in self.allowed_origins:
            return (f"origin {origins[0]!r} is not allowed (a web page); start livetok serve "
                    f"--ws with --allow-origin {origins[0]} to let it in")
        offered = parse_qs(urlsplit(path).query).get("token", [])
        for value in _header_values(headers, "Authorization"):
            scheme, _, credentials = value.partition(" ")
            if scheme.lower() == "bearer":
                offered.append(credentials.strip())
        expected = self.token.encode("utf-8")
        # compare_digest: the time taken does not tell how much of a guess was right
        if not any(hmac.compare_digest(t.encode("utf-8"), expected) for t in offered):
            return ("missing or wrong token: give the one livetok serve --ws printed (or read "
                    "from --token-file / LIVETOK_TOKEN) as ?token= or Authorization: Bearer")
        return None


def _header_values(headers: Mapping[str, str], name: str) -> list[str]:
    """Every value of a header (websockets' ``Headers`` may repeat one; a dict in doctests)."""
    get_all = getattr(headers, "get_all", None)  # Headers: a Mapping that also has get_all
    if get_all is not None:
        return list(get_all(name))
    return [headers[name]] if name in headers else []


def serve_ws(make_server: ServerFactory, host: str, port: int, *, access: WsAccess,
             limits: Limits = Limits(), once: bool = False,
             on_listening: Callable[[SocketAddress], None] | None = None) -> int:
    """Serve LSP over WebSocket (one JSON message per frame, no headers), a fresh language
    server per connection that passes ``access``, until SIGINT/SIGTERM (or, with ``once``,
    until the first session ends); returns the exit status."""
    try:
        from websockets.asyncio.server import serve
        from websockets.exceptions import ConnectionClosed
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise SystemExit("livetok serve --ws needs the 'websockets' package: "
                         "pip install 'livetok[ws]'") from exc

    async def main() -> int:
        sessions = _Sessions(once)

        def handshake(connection: ServerConnection, request: Request) -> Response | None:
            who = f"ws {_peer(connection.remote_address)}"
            reason = access.refusal(request.path, request.headers)
            if reason is None and sessions.refuse():
                reason = "this server serves one client (--once)"
            if reason is None:
                return None
            log.warning("%s: refused the WebSocket handshake: %s", who, reason)
            return connection.respond(403, f"livetok: {reason}\n")

        async def session(ws: ServerConnection) -> None:
            who = f"ws {_peer(ws.remote_address)}"
            sessions.begin(ws.transport.close)
            server = make_server()
            server.protocol.set_writer(BoundedWebSocketWriter(ws, limits.max_send_queue, who),
                                       include_headers=False)
            log.info("%s: session started", who)
            try:
                while True:
                    try:
                        data = await ws.recv(decode=False)
                    except ConnectionClosed as exc:
                        if exc.sent is not None and exc.sent.code == 1009:  # message too big
                            log.warning("%s: closed: a message was over the limit of %d bytes "
                                        "(livetok serve --max-message-size)", who,
                                        limits.max_message_bytes)
                        break
                    server.protocol.reading = True
                    try:
                        dispatch(server.protocol, data)
                    finally:
                        server.protocol.reading = False
                        server.protocol.input_handled()
            except SystemExit as exc:  # the client sent `exit`: this session ends, the others go on
                sessions.exited(exc)
            finally:
                _end_session(server, who)
                sessions.end(ws.transport.close)

        async with serve(session, host, port, process_request=handshake,
                         max_size=limits.max_message_bytes) as listener:
            addr = next(iter(listener.sockets)).getsockname()
            log.info("livetok listening on ws://%s:%s", addr[0], addr[1])
            if on_listening:
                on_listening(addr)
            await sessions.stop.wait()
        # leaving ``serve`` closes the open connections (1001, going away): each session's
        # recv fails and its ``finally`` saves its traces
        return sessions.status

    return asyncio.run(main())
