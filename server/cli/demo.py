"""``livetok demo``: a browser editor (CodeMirror 6) with live token counts over LSP.

One process, one port: an HTTP request gets the page and its assets (built into
``static/demo/`` from ``demo/web/``, so no Node is needed at run time), sample documents and
editing traces; a WebSocket upgrade on ``/lsp`` gets a fresh livetok language server (one
JSON-RPC message per WebSocket message, as with ``livetok serve --ws``). Every connection
has its own server, so reloading the page starts a new session. ``demo_site.py`` answers the
HTTP requests and decides which handshakes may proceed; this module runs the sessions.

Routes (``GET`` and ``HEAD`` only, with this server's own ``Host``):

==========================  =================================================================
``/``                       the page (``static/demo/index.html``) and its assets
``/api/config``             ``{"version", "encodings", "traces": [...], "tracesMissing"?}``
``/api/sample?size=N``      ``N`` bytes of Python standard library sources, ``N`` one of
                            ``demo_site.SAMPLE_SIZES`` (10 KiB, 100 KiB, 1 MiB, 10 MiB)
``/api/traces/NAME``        an editing trace from the traces folder (gzip as sent on disk)
``/lsp``                    the language server, over WebSocket, for the page's own origin;
                            at most ``MAX_SESSIONS`` at a time
==========================  =================================================================

A session holds at most ``MAX_SESSION_CHARS`` code points of open documents together: a
document that would pass it is not kept (a diagnostic says so; requests on it fail), and a
closed document's memory goes back to the system (``LivetokServer.close``).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import ipaddress
import logging
import os
import sys
import threading
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection
    from websockets.http11 import Request, Response

    from livetok.server.lsp.session import LivetokServer
    from livetok.server.cli.main import Subparsers
    from livetok.server.demo.site import DemoSite, list_traces
    from livetok.server.lsp.transport import SocketAddress

__all__ = ["add_parser", "run", "serve_demo", "find_traces_dir", "exposure_warning",
           "STATIC_DIR", "MAX_SESSIONS", "MAX_MESSAGE_BYTES", "MAX_DOCUMENT_CHARS",
           "MAX_SESSION_CHARS", "MAX_SEND_QUEUE_BYTES"]

log = logging.getLogger(__name__)

#: the built page (``npm run build`` in ``demo/web`` writes it)
STATIC_DIR = Path(__file__).resolve().parents[1] / "demo" / "static" / "demo"
#: language server sessions at once (one per tab); the next handshake gets 503
MAX_SESSIONS = 16
#: the largest WebSocket message a session accepts: the page sends the 10 MiB sample as one
#: full-text didChange of about 10.4 MiB of JSON
MAX_MESSAGE_BYTES = 16 << 20
#: code points a document may hold to be counted (``livetok.maxDocumentSize``, which a page
#: may lower but not raise): as much as one message can bring; longer ones are kept as text
MAX_DOCUMENT_CHARS = 16 << 20
#: code points the open documents of one session may hold together (``max_open_chars``):
#: four documents at the ceiling; the next one is not kept (each 10 MB one took ~27 MB)
MAX_SESSION_CHARS = 64 << 20
#: answers a session's page has not read yet; past this the connection is cut
#: (``transport.BoundedWebSocketWriter``; the page's largest answers are far smaller)
MAX_SEND_QUEUE_BYTES = 16 << 20


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "demo",
        help="open a browser editor with live token counts",
        description="Serve a page with an editor (CodeMirror 6) that talks LSP over WebSocket "
        "to a livetok server in this process: live token count, per-keystroke update time, "
        "token boundaries, selection count, 1 MB / 10 MB samples and editing-trace replay. "
        "Uses the websockets package (a dependency of livetok).",
    )
    p.add_argument("--port", type=int, default=8765,
                   help="HTTP and WebSocket port (default 8765; 0 picks a free port)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; another address makes the "
                   "page, its samples and traces and the language server reachable from other "
                   "machines, with a warning)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--traces", metavar="DIR",
                   help="folder of editing traces (*.json, *.json.gz) for the replay button "
                   "(default: $LIVETOK_TRACES, else ../shared/traces next to the source tree "
                   "or the current directory)")
    p.add_argument("--log-level", default="WARNING",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="stderr log level (default WARNING)")
    return p


# -- traces --------------------------------------------------------------------------------------


def find_traces_dir(explicit: str | None = None) -> Path | None:
    """The editing-traces folder: ``explicit``, ``$LIVETOK_TRACES``, or ``../shared/traces``
    next to the source tree or the working directory; None when there is none."""
    if explicit:
        return Path(explicit)
    candidates = []
    if os.environ.get("LIVETOK_TRACES"):
        candidates.append(Path(os.environ["LIVETOK_TRACES"]))
    candidates.append(Path(__file__).resolve().parent.parent.parent / "shared" / "traces")
    candidates.append(Path.cwd().parent / "shared" / "traces")
    for c in candidates:
        if c.is_dir():
            return c
    return None


# -- server --------------------------------------------------------------------------------------


class _Sessions:
    """The open ``/lsp`` sessions, at most ``limit`` at a time, each counting documents of at
    most ``max_document_chars`` code points and holding at most ``max_session_chars``."""

    def __init__(self, limit: int, max_document_chars: int,
                 max_session_chars: int = MAX_SESSION_CHARS) -> None:
        self.limit = limit
        self.max_document_chars = max_document_chars
        self.max_session_chars = max_session_chars
        self.open = 0

    @property
    def full(self) -> bool:
        return self.open >= self.limit

    async def run(self, ws: ServerConnection) -> None:
        """One browser tab: a fresh language server for this WebSocket until it closes."""
        if self.full:
            # subtle: handshakes are capped in process_request, but several may pass it
            # before their sessions start; this closes the extra ones (1013: try again later)
            await ws.close(1013, f"at most {self.limit} demo sessions at a time")
            return
        self.open += 1
        try:
            await _lsp_session(ws, _capped_server_class()(self.max_document_chars,
                                                          self.max_session_chars))
        finally:
            self.open -= 1


@functools.cache
def _capped_server_class() -> Callable[[int, int], LivetokServer]:
    """``LivetokServer`` whose ``livetok.maxDocumentSize`` never passes a ceiling, whatever
    the page sends in ``initializationOptions`` or ``didChangeConfiguration``, and whose open
    documents hold at most ``max_session_chars`` code points together."""
    from dataclasses import replace

    from livetok.server.lsp.session import LivetokServer
    from livetok.server.lsp.settings import Settings

    class CappedServer(LivetokServer):
        def __init__(self, max_document_chars: int, max_session_chars: int) -> None:
            self._ceiling = max_document_chars
            super().__init__()
            self.max_open_chars = max_session_chars

        # subtle: the server replaces ``settings`` whole (at initialize, on each configuration
        # change), so the setter is the one place where the ceiling always applies
        @property
        def settings(self) -> Settings:
            return self._settings

        @settings.setter
        def settings(self, value: Settings) -> None:
            limit = value.max_document_size
            self._settings = replace(value, max_document_size=self._ceiling if limit is None
                                     else min(limit, self._ceiling))

    return CappedServer


async def _lsp_session(ws: ServerConnection, server: LivetokServer) -> None:
    """Serve LSP on ``ws`` with ``server`` (new for this socket) until the socket closes or
    the client exits."""
    from websockets.exceptions import ConnectionClosed

    from livetok.server.lsp.transport import BoundedWebSocketWriter, dispatch

    writer = BoundedWebSocketWriter(ws, MAX_SEND_QUEUE_BYTES, f"demo {ws.remote_address}")
    server.protocol.set_writer(writer, include_headers=False)
    try:
        while True:
            try:
                data = await ws.recv(decode=False)
            except ConnectionClosed:
                break
            try:
                dispatch(server.protocol, data)
            except SystemExit:  # the client sent `exit`: end this session only
                break
    finally:
        server.release()  # a closed tab leaves its documents: their memory goes back now
        await ws.close()


async def serve_demo(host: str, port: int, site: DemoSite, stop: asyncio.Event,
                     on_listening: Callable[[list[SocketAddress]], None] | None = None, *,
                     max_sessions: int = MAX_SESSIONS,
                     max_document_chars: int = MAX_DOCUMENT_CHARS,
                     max_session_chars: int = MAX_SESSION_CHARS) -> None:
    """Serve the page and ``/lsp`` until ``stop`` is set; ``on_listening`` gets the address
    of each listening socket (``getsockname()``) once requests are answered."""
    from websockets.asyncio.server import serve

    from livetok.server.demo.site import AllowedHosts, text_response

    sessions = _Sessions(max_sessions, max_document_chars, max_session_chars)

    async def process_request(connection: ServerConnection, request: Request) -> Response | None:
        out = await site.respond(request.method, request.path, request.headers)
        if out is None and sessions.full:
            return text_response(503, f"too many demo sessions are open (at most "
                                 f"{max_sessions}): close a tab of the demo and reload\n")
        return out

    async with serve(sessions.run, host, port, process_request=process_request,
                     max_size=MAX_MESSAGE_BYTES, server_header="livetok-demo",
                     # opening a 10 MB document blocks the loop for seconds: no ping timeouts
                     ping_interval=None) as server:
        addrs = [sock.getsockname() for sock in server.sockets]
        site.hosts = AllowedHosts(addrs[0][1], [a[0] for a in addrs], host)
        if on_listening:
            on_listening(addrs)
        await stop.wait()


def exposure_warning(addresses: Sequence[str], traces: Path | None) -> str | None:
    """The warning printed when the demo listens on a non-loopback address (None otherwise).

    >>> exposure_warning(["127.0.0.1", "::1"], None) is None
    True
    >>> "other machines" in exposure_warning(["0.0.0.0"], None)
    True

    Runtime complexity: ``O(len(addresses))``.
    """
    exposed = [a for a in addresses if not ipaddress.ip_address(a.split("%", 1)[0]).is_loopback]
    if not exposed:
        return None
    folder = f" (the files in {traces})" if traces else ""
    return (f"livetok demo: warning: listening on {', '.join(exposed)}: other machines that "
            f"reach this address can read the page, its samples and the editing traces{folder}, "
            f"and open up to {MAX_SESSIONS} language server sessions (this machine's CPU and "
            "memory). Use --host 127.0.0.1 (the default) to keep the demo on this machine.")


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("websockets") is None:
        print("livetok demo needs the 'websockets' package: pip install 'livetok[ws]'",
              file=sys.stderr)
        return 2
    from livetok.server.demo.site import DemoSite, list_traces
    from livetok.server.lsp.memory import one_heap

    one_heap()  # before the first thread (memory.py)
    if not (STATIC_DIR / "index.html").is_file():
        print(f"livetok demo: the page is missing from {STATIC_DIR} "
              "(build it with `npm ci && npm run build` in demo/web)", file=sys.stderr)
        return 2
    traces = find_traces_dir(args.traces)
    if args.traces and not Path(args.traces).is_dir():
        print(f"livetok demo: --traces {args.traces}: not a folder", file=sys.stderr)
        return 2
    site = DemoSite(STATIC_DIR, traces)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLogger().level))
    # websockets logs each plain HTTP request as a failed handshake at INFO
    logging.getLogger("websockets").setLevel(max(logging.WARNING, logging.getLogger().level))
    if not list_traces(traces):
        print(f"livetok demo: no editing traces in {traces or '../shared/traces'}; the replay "
              "button is off (--traces DIR names a folder of *.json.gz traces)", file=sys.stderr)

    def listening(addrs: list[SocketAddress]) -> None:
        warning = exposure_warning([a[0] for a in addrs], traces)
        if warning:
            print(warning, file=sys.stderr, flush=True)
        host = addrs[0][0] if ":" not in addrs[0][0] else f"[{addrs[0][0]}]"
        url = f"http://{host}:{addrs[0][1]}/"
        # a machine-readable line: tests and scripts read the port from it
        print(f"livetok demo listening on {url}", file=sys.stderr, flush=True)
        if not args.no_browser:
            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    async def main() -> None:
        await serve_demo(args.host, args.port, site, asyncio.Event(), listening)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        print(f"livetok demo: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0
