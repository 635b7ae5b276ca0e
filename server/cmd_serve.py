"""``livetok serve``: run the language server on stdio (default), TCP or WebSocket."""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["add_parser", "run", "parse_address"]


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


def add_parser(sub: Any) -> argparse.ArgumentParser:
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
                       help="listen on TCP (port 0 picks a free port; the address is logged)")
    where.add_argument("--ws", type=parse_address, metavar="HOST:PORT",
                       help="listen for a WebSocket client (needs the websockets package)")
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
    """Serve until the client exits or disconnects; returns the exit status."""
    from .app import create_server
    from .transport import serve_stdio, serve_tcp, serve_ws

    handler: logging.Handler = (logging.FileHandler(args.log_file) if args.log_file
                                else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(args.log_level)
    # pygls logs every message body at INFO: far too much for a 10 MB document
    logging.getLogger("pygls").setLevel(max(logging.WARNING, root.level))
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_drop_answered_errors)

    server = create_server(record_trace=args.record_trace,
                           position_encoding=args.position_encoding)
    stop = threading.Event()
    status = 0
    try:
        if args.tcp:
            serve_tcp(server.protocol, *args.tcp, stop, on_listening=_announce)
        elif args.ws:
            serve_ws(server.protocol, *args.ws, stop, on_listening=_announce)
        else:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="stdin") as pool:
                serve_stdio(server.protocol, sys.stdin.buffer, sys.stdout.buffer, pool, stop)
    except SystemExit as exc:  # the LSP exit notification
        status = exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        status = 130
    finally:
        server.save_traces()
    return status


def _drop_answered_errors(record: logging.LogRecord) -> bool:
    """Drop pygls's tracebacks for InvalidParams / RequestFailed errors: livetok raises them on
    purpose to answer a bad request, and the answer itself tells the client what to fix."""
    exc = record.exc_info[1] if record.exc_info else None
    return getattr(exc, "code", None) not in (-32602, -32803)


def _announce(addr: Any) -> None:
    # a machine-readable line so that tests and editors can connect to port 0
    print(f"livetok listening on {addr[0]}:{addr[1]}", file=sys.stderr, flush=True)
