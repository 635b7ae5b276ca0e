"""``livetok demo``: a browser editor (CodeMirror 6) with live token counts over LSP.

One process, one port: an HTTP request gets the page and its assets (built into
``static/demo/`` from ``demo/web/``, so no Node is needed at run time), sample documents and
editing traces; a WebSocket upgrade on ``/lsp`` gets a fresh livetok language server (one
JSON-RPC message per WebSocket message, as with ``livetok serve --ws``). Every connection
has its own server, so reloading the page starts a new session.

Routes:

==========================  =================================================================
``/``                       the page (``static/demo/index.html``) and its assets
``/api/config``             ``{"version", "encodings", "traces": [...], "tracesMissing"?}``
``/api/sample?size=N``      ``N`` bytes (at most 64 MB) of Python standard library sources
``/api/traces/NAME``        an editing trace from the traces folder (gzip as sent on disk)
``/lsp``                    the language server, over WebSocket
==========================  =================================================================
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import importlib.util
import json
import logging
import os
import sys
import sysconfig
import threading
import webbrowser
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["add_parser", "run", "sample_text", "find_traces_dir", "STATIC_DIR"]

log = logging.getLogger(__name__)

#: the built page (``npm run build`` in ``demo/web`` writes it)
STATIC_DIR = Path(__file__).resolve().parent / "static" / "demo"
#: encodings offered in the page's menu (the server accepts these names)
ENCODINGS = ["o200k_base", "cl100k_base", "r50k_base", "bert-base-uncased", "mistral-7b-v0.1"]
_MAX_SAMPLE = 64 << 20
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".map": "application/json",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
#: used when the standard library sources are not installed (some distributions strip them)
_FALLBACK_PARAGRAPH = (
    "Tokenizers split text into pieces that a language model reads one at a time. "
    "The count depends on the encoding: o200k_base, cl100k_base and r50k_base merge bytes "
    "differently, so the same paragraph costs a different number of tokens in each. "
    "Ünïcödé, emoji 🙂 and CJK 漢字 take more tokens than plain English words.\n\n"
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "demo",
        help="open a browser editor with live token counts",
        description="Serve a page with an editor (CodeMirror 6) that talks LSP over WebSocket "
        "to a livetok server in this process: live token count, per-keystroke update time, "
        "token boundaries, selection count, 1 MB / 10 MB samples and editing-trace replay. "
        "Needs the websockets package (pip install 'livetok[ws]').",
    )
    p.add_argument("--port", type=int, default=8765,
                   help="HTTP and WebSocket port (default 8765; 0 picks a free port)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--traces", metavar="DIR",
                   help="folder of editing traces (*.json, *.json.gz) for the replay button "
                   "(default: $LIVETOK_TRACES, else ../shared/traces next to the source tree "
                   "or the current directory)")
    p.add_argument("--log-level", default="WARNING",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                   help="stderr log level (default WARNING)")
    return p


# -- content -------------------------------------------------------------------------------------


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


def list_traces(folder: Path | None) -> list[dict[str, Any]]:
    if folder is None or not folder.is_dir():
        return []
    out = []
    for f in sorted(folder.iterdir()):
        if f.is_file() and (f.name.endswith(".json") or f.name.endswith(".json.gz")):
            out.append({"name": f.name, "bytes": f.stat().st_size})
    return out


_sample_cache: dict[int, str] = {}


def _stdlib_sources() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).parts
        if rel and (rel[0] in ("site-packages", "dist-packages") or "test" in rel[0]
                    or rel[0] == "idlelib"):
            continue
        files.append(f)
    return files


def sample_text(size: int) -> str:
    """About ``size`` bytes of text: Python standard library sources, each headed by its path,
    cut at a line break (a repeated paragraph when the sources are not installed)."""
    size = max(0, min(size, _MAX_SAMPLE))
    if size in _sample_cache:
        return _sample_cache[size]
    parts: list[str] = []
    total = 0
    try:
        files = _stdlib_sources()
    except OSError:
        files = []
    for f in files:
        if total >= size:
            break
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        chunk = f"# ---- {f.name} ----\n{text}\n"
        parts.append(chunk)
        total += len(chunk.encode("utf-8"))
    if total < size:
        reps = (size - total) // len(_FALLBACK_PARAGRAPH.encode("utf-8")) + 1
        parts.append(_FALLBACK_PARAGRAPH * reps)
    text = "".join(parts)
    data = text.encode("utf-8")[:size]
    cut = data.rfind(b"\n")
    text = data[: cut + 1 if cut >= 0 else len(data)].decode("utf-8", errors="ignore")
    _sample_cache.clear()  # keep one sample: a 10 MB string is enough to hold on to
    _sample_cache[size] = text
    return text


# -- HTTP ----------------------------------------------------------------------------------------


def _response(status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> Any:
    from websockets.datastructures import Headers
    from websockets.http11 import Response

    st = HTTPStatus(status)
    headers = Headers([
        ("Date", email.utils.formatdate(usegmt=True)),
        ("Connection", "close"),
        ("Content-Length", str(len(body))),
        ("Content-Type", content_type),
        ("Cache-Control", "no-store"),
    ])
    for k, v in (extra or {}).items():
        headers[k] = v
    return Response(st.value, st.phrase, headers, body)


def _text(status: int, text: str) -> Any:
    return _response(status, text.encode("utf-8"), "text/plain; charset=utf-8")


class DemoSite:
    """Answers the page's HTTP requests (everything but the ``/lsp`` WebSocket)."""

    def __init__(self, static_dir: Path, traces_dir: Path | None) -> None:
        self.static_dir = static_dir
        self.traces_dir = traces_dir

    def config(self) -> dict[str, Any]:
        from .app import __version__

        traces = list_traces(self.traces_dir)
        out: dict[str, Any] = {"version": __version__, "encodings": ENCODINGS, "traces": traces}
        if not traces:
            where = str(self.traces_dir) if self.traces_dir else "../shared/traces"
            out["tracesMissing"] = (f"no editing traces found ({where} is missing or empty); "
                                    "start `livetok demo --traces DIR` with a folder of "
                                    "*.json.gz editing traces")
        return out

    def handle(self, path: str) -> Any:
        url = urlsplit(path)
        route = unquote(url.path)
        if route == "/api/config":
            return _response(200, json.dumps(self.config()).encode(), "application/json")
        if route == "/api/sample":
            try:
                size = int(parse_qs(url.query).get("size", ["1048576"])[0])
            except ValueError:
                return _text(400, "size must be an integer number of bytes\n")
            if not 0 < size <= _MAX_SAMPLE:
                return _text(400, f"size must be between 1 and {_MAX_SAMPLE} bytes\n")
            return _response(200, sample_text(size).encode("utf-8"), "text/plain; charset=utf-8")
        if route.startswith("/api/traces/"):
            name = route[len("/api/traces/"):]
            known = {t["name"] for t in list_traces(self.traces_dir)}
            if name not in known or self.traces_dir is None:
                return _text(404, f"no trace named {name!r}\n")
            data = (self.traces_dir / name).read_bytes()
            extra = {"Content-Encoding": "gzip"} if data[:2] == b"\x1f\x8b" else None
            return _response(200, data, "application/json", extra)
        if route == "/":
            route = "/index.html"
        name = route.lstrip("/")
        f = self.static_dir / name
        if "/" in name or "\\" in name or name.startswith(".") or not f.is_file():
            if not (self.static_dir / "index.html").is_file():
                return _text(500, f"the demo page is not built: {self.static_dir} has no "
                             "index.html (run `npm ci && npm run build` in demo/web)\n")
            return _text(404, f"not found: {route}\n")
        ctype = _TYPES.get(f.suffix, "application/octet-stream")
        return _response(200, f.read_bytes(), ctype)


# -- server --------------------------------------------------------------------------------------


async def _lsp_session(ws: Any) -> None:
    """One browser tab: a fresh language server for this WebSocket until it closes."""
    from websockets.exceptions import ConnectionClosed
    from pygls.io_ import WebSocketWriter

    from .app import create_server
    from .transport import dispatch

    server = create_server()
    server.protocol.set_writer(WebSocketWriter(ws), include_headers=False)
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
        await ws.close()


async def serve_demo(host: str, port: int, site: DemoSite, stop: asyncio.Event,
                     on_listening: Any = None) -> None:
    """Serve the page and ``/lsp`` until ``stop`` is set."""
    from websockets.asyncio.server import serve

    def process_request(connection: Any, request: Any) -> Any:
        if urlsplit(request.path).path == "/lsp":
            if "websocket" not in request.headers.get("Upgrade", "").lower():
                return _text(426, "/lsp is livetok's language server over WebSocket\n")
            return None  # proceed with the WebSocket handshake
        try:
            return site.handle(request.path)
        except Exception as exc:  # a broken request must not take the server down
            log.exception("demo: %s failed", request.path)
            return _text(500, f"{type(exc).__name__}: {exc}\n")

    async with serve(_lsp_session, host, port, process_request=process_request,
                     max_size=1 << 27, server_header="livetok-demo",
                     # opening a 10 MB document blocks the loop for seconds: no ping timeouts
                     ping_interval=None) as server:
        sock = next(iter(server.sockets)).getsockname()
        if on_listening:
            on_listening(sock)
        await stop.wait()


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("websockets") is None:
        print("livetok demo needs the 'websockets' package: pip install 'livetok[ws]'",
              file=sys.stderr)
        return 2
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

    def listening(sock: Any) -> None:
        host = sock[0] if ":" not in sock[0] else f"[{sock[0]}]"
        url = f"http://{host}:{sock[1]}/"
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
