"""``livetok serve``: run the language server on stdio (default), TCP or WebSocket.

With ``--tcp``/``--ws`` the server listens until SIGINT/SIGTERM and gives each connection its
own session; ``--once`` serves one client and exits when it leaves, for an editor that starts
a server per session. What each transport guarantees is in ``docs/security.md``.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import os
import secrets
import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, BinaryIO, Callable

if TYPE_CHECKING:  # the server's modules are imported when it starts (not for --help)
    from livetok.server.lsp.documents import EarlyDocument
    from livetok.server.lsp.session import LivetokServer
    from livetok.server.cli.main import Subparsers
    from livetok.server.lsp.transport import SocketAddress

__all__ = ["add_parser", "run", "parse_address", "parse_size", "exposure_warning"]

#: a token shorter than this is easy to guess; a generated one has 43 characters
_SHORT_TOKEN = 16


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; ``PORT`` alone means 127.0.0.1).

    >>> parse_address("127.0.0.1:2087"), parse_address("[::1]:0"), parse_address("8080")
    (('127.0.0.1', 2087), ('::1', 0), ('127.0.0.1', 8080))
    """
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    try:
        n = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, e.g. 127.0.0.1:2087, got {value!r}")
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0..65535, got {n}")
    return host, n


def parse_size(value: str) -> int:
    """A byte count, with an optional binary suffix K, M or G.

    >>> parse_size("65536"), parse_size("64M"), parse_size("1g")
    (65536, 67108864, 1073741824)
    """
    text = value.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    try:
        n = int(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes such as 65536 or 64M, "
                                         f"got {value!r}")
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes, got {value!r}")
    return n


def exposure_warning(host: str, port: int, transport: str) -> str | None:
    """What listening on ``host`` exposes, or None for a loopback address.

    >>> exposure_warning("127.0.0.1", 2087, "--tcp") is None, exposure_warning("::1", 1, "--ws")
    (True, None)
    >>> exposure_warning("0.0.0.0", 2087, "--ws")[:46]
    'livetok: warning: listening on 0.0.0.0 (every '
    """
    if host == "localhost":
        return None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is not None and ip.is_loopback:
        return None
    where = f"{host} (every network interface)" if ip is not None and ip.is_unspecified else host
    guard = ("the token is then the only guard: keep it secret" if transport == "--ws" else
             "--tcp has no authentication at all: prefer --ws with its token, or an SSH "
             "tunnel to 127.0.0.1")
    return (f"livetok: warning: listening on {where}: anyone who can reach this address on "
            f"port {port} can open a session and send documents to it; {guard}")


def add_parser(sub: Subparsers) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "serve",
        help="run the language server (stdio by default)",
        description="Run livetok's language server: live token counts as code lenses, hover, "
        "diagnostics and the livetok/tokenCount request. Talks LSP on stdin/stdout unless "
        "--tcp or --ws is given.",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--stdio", action="store_true", help="use stdin/stdout (the default)")
    where.add_argument("--tcp", type=parse_address, metavar="HOST:PORT",
                       help="listen on TCP, one session per connection, until interrupted "
                       "(port 0 picks a free port; the address is printed on stderr). PORT "
                       "alone means 127.0.0.1; another address warns what it exposes")
    where.add_argument("--ws", type=parse_address, metavar="HOST:PORT",
                       help="listen for WebSocket clients, one session per connection, until "
                       "interrupted; a client must give the token (printed on stderr, or "
                       "--token-file, or $LIVETOK_TOKEN) as ?token= or Authorization: Bearer "
                       "(needs the websockets package)")
    p.add_argument("--once", action="store_true",
                   help="with --tcp/--ws: serve one client, refuse others, and exit when it "
                   "leaves (for an editor that starts a server per session)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="with --ws: also accept handshakes from web pages of this origin, "
                   "e.g. http://127.0.0.1:8000 (repeatable; by default a handshake with an "
                   "Origin header, which browsers send, is refused)")
    p.add_argument("--token-file", metavar="FILE",
                   help="with --ws: read the token from FILE instead of generating one "
                   "(also: environment variable LIVETOK_TOKEN)")
    p.add_argument("--max-message-size", type=parse_size, default=None, metavar="BYTES",
                   help="largest message accepted (default 512M: a 100 MB document as JSON); "
                   "a bigger one is answered with an error and skipped")
    p.add_argument("--max-send-queue", type=parse_size, default=None, metavar="BYTES",
                   help="with --tcp/--ws: close a connection whose client has not read this "
                   "many bytes of answers (default 64M)")
    p.add_argument("--record-trace", metavar="DIR",
                   help="record each document's edits as an editing trace in DIR "
                   "(replay with `livetok replay`)")
    p.add_argument("--position-encoding", choices=["utf-8", "utf-16", "utf-32"],
                   help="read and write LSP positions in this unit whatever the client offers "
                   "(for clients that send code points without saying so, such as Emacs "
                   "lsp-mode 8: utf-32); default: negotiated, utf-16 when the client offers "
                   "nothing")
    p.add_argument("--log-level", default="WARNING",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="stderr log level (default WARNING)")
    p.add_argument("--log-file", metavar="FILE", help="log to FILE instead of stderr")
    return p


def run(args: argparse.Namespace) -> int:
    """Serve until the client exits or disconnects (stdio, ``--once``) or until SIGINT or
    SIGTERM (``--tcp``, ``--ws``); returns the exit status."""
    from livetok.server.lsp.framing import DEFAULT_MAX_MESSAGE_BYTES

    problem = _check_options(args)
    if problem:
        print(f"livetok serve: {problem}", file=sys.stderr)
        return 2
    from livetok.server.lsp.memory import one_heap

    one_heap()  # before the first thread (the stdio front's Starter, the worker)
    _set_up_logging(args)
    max_message_bytes = args.max_message_size or DEFAULT_MAX_MESSAGE_BYTES

    def make_server() -> LivetokServer:
        from livetok.server.lsp.session import create_server

        return create_server(record_trace=args.record_trace,
                             position_encoding=args.position_encoding)

    try:
        if not (args.tcp or args.ws):
            return _run_stdio(make_server, max_message_bytes, args.position_encoding)
        from livetok.server.lsp.transport import DEFAULT_MAX_SEND_QUEUE, Limits, WsAccess, serve_tcp, serve_ws

        limits = Limits(max_message_bytes=max_message_bytes,
                        max_send_queue=args.max_send_queue or DEFAULT_MAX_SEND_QUEUE)
        if args.tcp:
            return serve_tcp(make_server, *args.tcp, limits=limits, once=args.once,
                             on_listening=_announcer("--tcp", None))
        token, generated = _ws_token(args)
        access = WsAccess(token, frozenset(o.rstrip("/") for o in args.allow_origin))
        return serve_ws(make_server, *args.ws, access=access, limits=limits, once=args.once,
                        on_listening=_announcer("--ws", token if generated else None))
    except KeyboardInterrupt:
        return 130
    except _TokenError as exc:
        print(f"livetok serve: {exc}", file=sys.stderr)
        return 2


def _run_stdio(make_server: Callable[[], LivetokServer], max_message_bytes: int,
               forced_unit: str | None) -> int:
    """Serve on stdio; ``initialize`` is answered while the server is imported (``front.py``)."""
    from livetok.server.lsp.framing import Framer
    from livetok.server.lsp.front import HandOver, Starter, answer_first, read_first, serve_early

    starter = Starter(make_server)
    starter.start()
    stdout = sys.stdout.buffer
    framer = Framer(max_message_bytes=max_message_bytes)
    first = read_first(sys.stdin.buffer.fileno(), framer)
    write = _write_flushed(stdout)
    sent = answer_first(first, forced_unit, write)
    frames = [] if first is None else [first]
    early: dict[str, EarlyDocument] = {}
    if sent is not None:  # the first documents and answers, while the server is not made
        assert first is not None
        more, early = serve_early(sys.stdin.buffer.fileno(), framer,
                                  json.loads(first.body)["params"],
                                  sent["result"]["capabilities"]["positionEncoding"], write,
                                  starter)
        frames += more
    server = starter.server()
    server.adopt_documents(early)

    from pygls.io_ import StdoutWriter

    from livetok.server.lsp.transport import Limits, serve_stdio

    writer = StdoutWriter(stdout)
    status = 0
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="stdin") as pool:
            status = serve_stdio(
                server.protocol, sys.stdin.buffer, stdout, pool,
                Limits(max_message_bytes=max_message_bytes), framer=framer, first=frames,
                writer=writer if sent is None else HandOver(writer, sent, server.adopt_initialize))
    except SystemExit as exc:  # the LSP exit notification
        status = exc.code if isinstance(exc.code, int) else 0
    finally:
        server.save_traces()
    return status


def _write_flushed(stream: BinaryIO) -> Callable[[bytes], None]:
    def write(data: bytes) -> None:
        stream.write(data)
        stream.flush()

    return write


def _check_options(args: argparse.Namespace) -> str | None:
    if not args.ws and (args.allow_origin or args.token_file):
        return "--allow-origin and --token-file go with --ws"
    if not (args.tcp or args.ws) and (args.once or args.max_send_queue):
        return "--once and --max-send-queue go with --tcp or --ws"
    return None


def _set_up_logging(args: argparse.Namespace) -> None:
    handler: logging.Handler = (logging.FileHandler(args.log_file) if args.log_file
                                else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(args.log_level)
    # pygls logs every message body at INFO: far too much for a 10 MB document
    logging.getLogger("pygls").setLevel(max(logging.WARNING, root.level))
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_drop_answered_errors)
    # websockets logs every refused handshake with a traceback; transport.py logs one line
    logging.getLogger("websockets").setLevel(max(logging.WARNING, root.level))


class _TokenError(Exception):
    pass


def _ws_token(args: argparse.Namespace) -> tuple[str, bool]:
    """The WebSocket token, and whether it was generated (then it is printed)."""
    if args.token_file:
        try:
            token = open(args.token_file, encoding="utf-8").read().strip()
            mode = os.stat(args.token_file).st_mode
        except OSError as exc:
            raise _TokenError(f"cannot read --token-file {args.token_file}: {exc}") from exc
        if not token:
            raise _TokenError(f"--token-file {args.token_file} is empty: put a secret in it, "
                              "e.g. python3 -c 'import secrets; print(secrets.token_urlsafe())'")
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            print(f"livetok: warning: other users can read {args.token_file}; "
                  f"chmod 600 {args.token_file}", file=sys.stderr)
    elif "LIVETOK_TOKEN" in os.environ:
        token = os.environ["LIVETOK_TOKEN"].strip()
        if not token:
            raise _TokenError("LIVETOK_TOKEN is empty: unset it to get a generated token, or "
                              "put a secret in it")
    else:
        return secrets.token_urlsafe(32), True
    if len(token) < _SHORT_TOKEN:
        print(f"livetok: warning: the token has {len(token)} characters, easy to guess; use "
              f"{_SHORT_TOKEN} or more", file=sys.stderr)
    return token, False


def _drop_answered_errors(record: logging.LogRecord) -> bool:
    """Drop pygls's tracebacks for InvalidParams / RequestFailed errors: livetok raises them on
    purpose to answer a bad request, and the answer itself tells the client what to fix."""
    exc = record.exc_info[1] if record.exc_info else None
    return getattr(exc, "code", None) not in (-32602, -32803)


def _announcer(transport: str, token: str | None) -> Callable[[SocketAddress], None]:
    def announce(addr: SocketAddress) -> None:
        warning = exposure_warning(addr[0], addr[1], transport)
        if warning:
            print(warning, file=sys.stderr, flush=True)
        if token is not None:  # before the address: a client that read it has the token
            print(f"livetok token: {token}", file=sys.stderr, flush=True)
        # a machine-readable line so that tests and editors can connect to port 0
        print(f"livetok listening on {addr[0]}:{addr[1]}", file=sys.stderr, flush=True)

    return announce
