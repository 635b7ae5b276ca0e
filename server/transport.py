"""Reading messages from stdio, TCP or WebSocket and handing them to the protocol.

This replaces pygls's read loops for two reasons:

1. every message body goes through :meth:`LivetokProtocol.decode`, which answers invalid
   requests instead of dropping them (see ``protocol.py``);
2. stdin is read in large chunks into a buffer, and a message already in the buffer is
   handled without returning to the event loop. Callbacks scheduled while handling (the
   coalesced ``livetok/didChangeTokenCount``) therefore run only when the input is drained:
   a burst of changes yields one notification, a lone keystroke yields one right away.

Concurrency model: one thread runs the asyncio loop and every handler, in arrival order, so
changes are applied in order and a request sees exactly the changes sent before it. Blocking
reads of stdin happen in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, Protocol

from pygls.io_ import StdoutWriter

from .protocol import LivetokProtocol

__all__ = ["BufferedReader", "serve_stdio", "serve_tcp", "serve_ws", "read_messages"]

log = logging.getLogger(__name__)

_CONTENT_LENGTH = re.compile(rb"content-length:\s*(\d+)\s*$", re.IGNORECASE)
_CHUNK = 1 << 20


class AsyncLineReader(Protocol):
    async def readline(self) -> bytes: ...

    async def readexactly(self, n: int) -> bytes: ...


class BufferedReader:
    """An async reader over a blocking file descriptor that reads big chunks in a thread.

    ``readline``/``readexactly`` return without suspending when the buffer already holds
    the data, which is what lets a burst of messages be handled back to back.
    """

    def __init__(self, fd: int, executor: ThreadPoolExecutor) -> None:
        self._fd = fd
        self._executor = executor
        self._buf = bytearray()
        self._pos = 0
        self._eof = False

    async def _fill(self) -> None:
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(self._executor, os.read, self._fd, _CHUNK)
        if not data:
            self._eof = True
            return
        if self._pos > len(self._buf) // 2:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += data

    async def readline(self) -> bytes:
        while True:
            i = self._buf.find(b"\n", self._pos)
            if i >= 0:
                line = bytes(self._buf[self._pos : i + 1])
                self._pos = i + 1
                return line
            if self._eof:
                line = bytes(self._buf[self._pos :])
                self._pos = len(self._buf)
                return line
            await self._fill()

    async def readexactly(self, n: int) -> bytes:
        while len(self._buf) - self._pos < n and not self._eof:
            await self._fill()
        data = bytes(self._buf[self._pos : self._pos + n])
        self._pos += len(data)
        return data


async def read_messages(reader: AsyncLineReader, protocol: LivetokProtocol,
                        stop: threading.Event) -> None:
    """Read ``Content-Length`` framed messages until EOF or ``stop``; dispatch each one."""
    while not stop.is_set():
        length = None
        while True:  # headers, up to the empty line
            header = await reader.readline()
            if not header:
                return
            if not header.strip():
                if length is not None:
                    break
                continue  # stray blank line before any header
            m = _CONTENT_LENGTH.match(header)
            if m:
                length = int(m.group(1))
        body = await reader.readexactly(length)
        if len(body) < length:
            return
        dispatch(protocol, body)


def dispatch(protocol: LivetokProtocol, body: bytes) -> None:
    """Decode and handle one message; a handler's failure never ends the loop."""
    try:
        message = protocol.decode(body)
        if message is not None:
            protocol.handle_message(message)
    except SystemExit:
        raise
    except Exception:
        log.exception("unexpected error while handling a message; continuing")


def serve_stdio(protocol: LivetokProtocol, stdin: BinaryIO, stdout: BinaryIO,
                executor: ThreadPoolExecutor, stop: threading.Event) -> None:
    """Serve one client over a pair of pipes until EOF or ``exit``."""
    protocol.set_writer(StdoutWriter(stdout))
    asyncio.run(read_messages(BufferedReader(stdin.fileno(), executor), protocol, stop))


def serve_tcp(protocol: LivetokProtocol, host: str, port: int, stop: threading.Event,
              on_listening: Any = None) -> None:
    """Serve one client at a time over TCP (the protocol object holds one session)."""

    async def main() -> None:
        done = asyncio.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            protocol.set_writer(writer)  # type: ignore[arg-type]
            try:
                await read_messages(reader, protocol, stop)
            finally:
                writer.close()
                done.set()

        server = await asyncio.start_server(connection, host, port, limit=1 << 26)
        addr = server.sockets[0].getsockname()
        log.info("livetok listening on %s:%s", addr[0], addr[1])
        if on_listening:
            on_listening(addr)
        async with server:
            await done.wait()

    asyncio.run(main())


def serve_ws(protocol: LivetokProtocol, host: str, port: int, stop: threading.Event,
             on_listening: Any = None) -> None:
    """Serve one client over WebSocket (one JSON message per frame, no headers)."""
    try:
        from websockets.asyncio.server import serve
        from websockets.exceptions import ConnectionClosed
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise SystemExit("livetok serve --ws needs the 'websockets' package: "
                         "pip install 'livetok[ws]'") from exc
    from pygls.io_ import WebSocketWriter

    async def main() -> None:
        done = asyncio.Event()

        async def connection(ws: Any) -> None:
            protocol.set_writer(WebSocketWriter(ws), include_headers=False)
            try:
                while not stop.is_set():
                    try:
                        data = await ws.recv(decode=False)
                    except ConnectionClosed:
                        break
                    dispatch(protocol, data)
            finally:
                done.set()

        async with serve(connection, host, port, max_size=1 << 26) as server:
            addr = next(iter(server.sockets)).getsockname()
            log.info("livetok listening on ws://%s:%s", addr[0], addr[1])
            if on_listening:
                on_listening(addr)
            await done.wait()

    asyncio.run(main())
