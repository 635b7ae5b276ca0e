"""The HTTP side of ``livetok demo``: which requests it answers, and with what.

Every request passes the same gate, in this order (see ``docs/security.md``, ``livetok demo``):

1. ``Host`` must name this server as a browser would write it (:class:`AllowedHosts`), else
   421: a DNS-rebinding page, whose ``Host`` is its own domain, reads nothing;
2. only ``GET`` and ``HEAD`` (405 with ``Allow`` otherwise); ``HEAD`` gets ``GET``'s headers
   and no body;
3. a path longer than :data:`MAX_PATH_CHARS` gets 414;
4. the WebSocket handshake on ``/lsp`` needs the page's own ``Origin`` (403 otherwise);
5. files are served only when they are regular files inside their folder once every symlink
   is resolved (:func:`regular_file_inside`), else 404;
6. samples come in the sizes of :data:`SAMPLE_SIZES` only, built once in a worker thread.

Error bodies are short and generic: they never hold a filesystem path, and a handler's
unexpected exception is logged here and answered with a bare 500.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import logging
import os
import socket
import stat
from dataclasses import replace
from http import HTTPStatus
from pathlib import Path
from typing import Any, Iterable, Mapping, TypedDict
from urllib.parse import parse_qs, unquote, urlsplit

from websockets.datastructures import Headers
from websockets.http11 import Response

from livetok.incremental.samples import corpora as corpus

__all__ = ["AllowedHosts", "DemoSite", "SAMPLE_SIZES", "MAX_PATH_CHARS", "ENCODINGS",
           "list_traces", "regular_file_inside", "sample_text"]

log = logging.getLogger(__name__)

#: encodings offered in the page's menu (the server accepts these names)
ENCODINGS = ["o200k_base", "cl100k_base", "r50k_base", "bert-base-uncased", "mistral-7b-v0.1"]
#: the sample sizes served, in bytes; the page's buttons ask for 1 MiB and 10 MiB
SAMPLE_SIZES = (10 << 10, 100 << 10, 1 << 20, 10 << 20)
#: longer request paths get 414 (no route of the demo is near this long)
MAX_PATH_CHARS = 1024
#: the WebSocket route of the language server
LSP_PATH = "/lsp"
_METHODS = ("GET", "HEAD")
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
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


# -- who may ask ---------------------------------------------------------------------------------


def _split_authority(value: str) -> tuple[str, str | None]:
    """``"[::1]:80"`` -> ``("[::1]", "80")``; ``"localhost"`` -> ``("localhost", None)``."""
    end = value.find("]") + 1 if value.startswith("[") else 0  # past an IPv6 literal
    colon = value.find(":", end)
    return (value, None) if colon < 0 else (value[:colon], value[colon + 1:])


def _is_ip_literal(name: str) -> bool:
    """An IPv4 address, or an IPv6 address in brackets, as a browser writes it in ``Host``."""
    try:
        if name.startswith("[") and name.endswith("]"):
            ipaddress.IPv6Address(name[1:-1])
        else:
            ipaddress.IPv4Address(name)
    except ValueError:
        return False
    return True


class AllowedHosts:
    """The ``Host`` values that name this server, as a browser writes them.

    Always the loopback names (``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT``), plus
    each non-loopback address listened on, plus ``host_name`` when the user chose a name. On
    a wildcard address (``0.0.0.0``, ``::``) any IP literal and the machine's host name are
    allowed too: a DNS-rebinding page cannot make the browser send an IP literal as its
    ``Host``, only its own domain name.

    >>> hosts = AllowedHosts(8765, ["127.0.0.1"])
    >>> hosts.host_ok("localhost:8765"), hosts.host_ok("evil.example:8765")
    (True, False)
    >>> hosts.origin_ok("http://127.0.0.1:8765"), hosts.origin_ok("http://evil.example")
    (True, False)

    Runtime complexity: ``O(len(value))`` per check.
    """

    def __init__(self, port: int, addresses: Iterable[str], host_name: str | None = None
                 ) -> None:
        self.port = str(port)
        self.names = set(_LOOPBACK_NAMES)
        self.any_ip = False
        for addr in addresses:
            ip = ipaddress.ip_address(addr.split("%", 1)[0])  # drop an IPv6 zone id
            if ip.is_unspecified:
                self.any_ip = True
            elif not ip.is_loopback:
                self.names.add(f"[{ip.compressed}]" if ip.version == 6 else ip.compressed)
        if host_name and not _is_ip_literal(host_name) and ":" not in host_name:
            self.names.add(host_name.lower())
        if self.any_ip:
            self.names.add(socket.gethostname().lower())

    def host_ok(self, value: str | None) -> bool:
        """Whether a ``Host`` header value names this server."""
        if not value:
            return False
        name, port = _split_authority(value.strip().lower())
        # browsers leave out the default port
        if port != self.port and not (port is None and self.port == "80"):
            return False
        return name in self.names or (self.any_ip and _is_ip_literal(name))

    def origin_ok(self, value: str | None) -> bool:
        """Whether an ``Origin`` header value is the page's own (``http://`` + an allowed Host)."""
        prefix = "http://"
        if not value or not value.lower().startswith(prefix):
            return False
        authority = value[len(prefix):]
        return "/" not in authority and "@" not in authority and self.host_ok(authority)


# -- content -------------------------------------------------------------------------------------


def regular_file_inside(folder: Path | None, name: str) -> Path | None:
    """The resolved path of file ``name`` in ``folder`` when it is a regular file inside the
    folder once every symlink is resolved; None otherwise (also for sub-folders, hidden names
    and names the filesystem refuses).

    >>> regular_file_inside(Path(__file__).parent, "site.py") is not None
    True
    >>> regular_file_inside(Path(__file__).parent, "../pyproject.toml") is None
    True

    Runtime complexity: ``O(len(name))`` plus one ``resolve`` and one ``stat``.
    """
    if folder is None or not name or name.startswith(".") or any(c in name for c in "/\\\0"):
        return None
    try:
        root = folder.resolve(strict=True)
        target = (root / name).resolve(strict=True)
        if not target.is_relative_to(root) or not stat.S_ISREG(target.stat().st_mode):
            return None
    except (OSError, ValueError, RuntimeError):  # missing, too long, a symlink loop
        return None
    return target


def _read_regular_file(path: Path) -> bytes | None:
    """The bytes of ``path`` when it is still a regular file (not swapped for a symlink or a
    FIFO since it was checked; a FIFO would block the read); None otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read()


class TraceEntry(TypedDict):
    """One editing trace as the page lists it (``/api/config``'s ``traces``)."""

    name: str
    bytes: int


def list_traces(folder: Path | None) -> list[TraceEntry]:
    """The editing traces (``*.json``, ``*.json.gz``) the demo serves from ``folder``: regular
    files inside it, by name, with their sizes.

    Runtime complexity: ``O(n log n)`` for ``n`` entries in the folder.
    """
    if folder is None or not folder.is_dir():
        return []
    out: list[TraceEntry] = []
    for f in sorted(folder.iterdir()):
        if not (f.name.endswith(".json") or f.name.endswith(".json.gz")):
            continue
        target = regular_file_inside(folder, f.name)
        if target is not None:
            out.append({"name": f.name, "bytes": target.stat().st_size})
    return out


def _stdlib_sources() -> list[Path]:
    """The standard library's ``.py`` files of the one corpus reader, less tests and IDLE."""
    root = corpus.stdlib_dir()
    files = []
    for f in corpus.stdlib_files((".py",)):
        top = f.relative_to(root).parts[0]
        if "test" in top or top == "idlelib":
            continue
        files.append(f)
    return files


def sample_text(size: int) -> str:
    """About ``size`` bytes of text: Python standard library sources, each headed by its file
    name, cut at a line break (a repeated paragraph when the sources are not installed).

    >>> s = sample_text(2000)
    >>> len(s.encode("utf-8")) <= 2000 and s.endswith("\\n")
    True

    Runtime complexity: ``O(size)`` plus one listing of the standard library.
    """
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
    data = "".join(parts).encode("utf-8")[:max(0, size)]
    cut = data.rfind(b"\n")
    return data[: cut + 1 if cut >= 0 else len(data)].decode("utf-8", errors="ignore")


# -- responses -----------------------------------------------------------------------------------


def response(status: int, body: bytes, content_type: str,
             extra: Mapping[str, str] | None = None) -> Response:
    """An HTTP response that closes the connection and is never cached."""
    st = HTTPStatus(status)
    headers = Headers([
        ("Date", email.utils.formatdate(usegmt=True)),
        ("Connection", "close"),
        ("Content-Length", str(len(body))),
        ("Content-Type", content_type),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
    ])
    for k, v in (extra or {}).items():
        headers[k] = v
    return Response(st.value, st.phrase, headers, body)


def text_response(status: int, text: str, extra: Mapping[str, str] | None = None) -> Response:
    """A plain-text response (errors: keep ``text`` generic, never a filesystem path)."""
    return response(status, text.encode("utf-8"), "text/plain; charset=utf-8", extra)


_NOT_FOUND = "not found\n"
_SAMPLE_SIZES_TEXT = ", ".join(str(n) for n in SAMPLE_SIZES)


class DemoSite:
    """Answers the demo's HTTP requests and lets through the ``/lsp`` handshakes it allows.

    ``hosts`` is set once the server listens (the port may be chosen then); until then every
    request is refused.
    """

    def __init__(self, static_dir: Path, traces_dir: Path | None) -> None:
        self.static_dir = static_dir
        self.traces_dir = traces_dir
        self.hosts: AllowedHosts | None = None
        #: sample size -> the task building its bytes (built once, kept)
        self._samples: dict[int, asyncio.Task[bytes]] = {}

    async def respond(self, method: str, path: str, headers: Headers) -> Response | None:
        """The response to a request, or None for a WebSocket handshake on ``/lsp`` that may
        proceed (the caller still caps the number of sessions).

        Runtime complexity: ``O(size of the file or sample answered)``.
        """
        try:
            out = await self._gate_and_route(method, path, headers)
        except Exception:  # a broken request must not take the server down, nor show a path
            log.exception("demo: %s %.200s failed", method, path)
            out = text_response(500, "internal error; the livetok demo's log has the details\n")
        if out is not None and method == "HEAD":
            out = replace(out, body=b"")  # the headers (Content-Length too) stay GET's
        return out

    async def _gate_and_route(self, method: str, path: str, headers: Headers
                              ) -> Response | None:
        host = headers.get_all("Host")
        if self.hosts is None or len(host) != 1 or not self.hosts.host_ok(host[0]):
            return text_response(421, "this livetok demo answers only at the address it "
                                 "printed when it started\n")
        if method not in _METHODS:
            return text_response(405, "only GET and HEAD are supported\n",
                                 {"Allow": ", ".join(_METHODS)})
        if len(path) > MAX_PATH_CHARS:
            return text_response(414, "request path too long\n")
        url = urlsplit(path)
        route = unquote(url.path)
        if route == LSP_PATH:
            return self._lsp_handshake(method, headers)
        if route == "/api/config":
            return response(200, json.dumps(self.config()).encode(), "application/json")
        if route == "/api/sample":
            return await self._sample(url.query)
        if route.startswith("/api/traces/"):
            return await self._trace(route[len("/api/traces/"):])
        return await self._static("index.html" if route == "/" else route[1:])

    def _lsp_handshake(self, method: str, headers: Headers) -> Response | None:
        if method != "GET" or "websocket" not in headers.get("Upgrade", "").lower():
            return text_response(426, "/lsp is livetok's language server over WebSocket\n")
        origin = headers.get_all("Origin")
        if len(origin) != 1 or not self.hosts or not self.hosts.origin_ok(origin[0]):
            return text_response(403, "/lsp accepts WebSocket connections from the demo's own "
                                 "page only\n")
        return None

    def config(self) -> dict[str, Any]:
        """What the page needs: ``{"version", "encodings", "traces", "tracesMissing"?}``."""
        from livetok.server.lsp.session import __version__

        traces = list_traces(self.traces_dir)
        out: dict[str, Any] = {"version": __version__, "encodings": ENCODINGS, "traces": traces}
        if not traces:
            out["tracesMissing"] = ("no editing traces found; start `livetok demo --traces DIR` "
                                    "with a folder of *.json.gz editing traces")
        return out

    async def _sample(self, query: str) -> Response:
        raw = parse_qs(query).get("size", [str(1 << 20)])[0]
        size = int(raw) if raw.isascii() and raw.isdigit() else -1
        if size not in SAMPLE_SIZES:
            return text_response(400, f"size must be one of {_SAMPLE_SIZES_TEXT} (bytes)\n")
        task = self._samples.get(size)
        if task is None:
            # subtle: the build takes a second or more: a worker thread keeps the loop serving
            task = asyncio.ensure_future(asyncio.to_thread(
                lambda: sample_text(size).encode("utf-8")))
            self._samples[size] = task
        try:
            body = await asyncio.shield(task)  # a dropped request must not cancel the build
        except Exception:
            self._samples.pop(size, None)  # let the next request try again
            raise
        return response(200, body, "text/plain; charset=utf-8")

    async def _trace(self, name: str) -> Response:
        if not (name.endswith(".json") or name.endswith(".json.gz")):
            return text_response(404, _NOT_FOUND)
        data = await self._read(self.traces_dir, name)
        if data is None:
            return text_response(404, _NOT_FOUND)
        extra = {"Content-Encoding": "gzip"} if data[:2] == b"\x1f\x8b" else None
        return response(200, data, "application/json", extra)

    async def _static(self, name: str) -> Response:
        data = await self._read(self.static_dir, name)
        if data is None:
            return text_response(404, _NOT_FOUND)
        return response(200, data, _TYPES.get(Path(name).suffix, "application/octet-stream"))

    @staticmethod
    async def _read(folder: Path | None, name: str) -> bytes | None:
        def read() -> bytes | None:
            target = regular_file_inside(folder, name)
            return None if target is None else _read_regular_file(target)

        return await asyncio.to_thread(read)
