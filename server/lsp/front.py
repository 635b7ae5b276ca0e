"""The start of a stdio session: ``initialize`` answered before pygls and lsprotocol exist.

Importing the language server (pygls, lsprotocol's ~1,000 attrs classes, the core) takes
~0.5 s, and the vocabulary more: an editor would wait that long for its ``initialize``
answer. So ``livetok serve`` on stdio starts in two threads:

1. ``livetok-start`` (:class:`Starter`) loads the default encoding; then, when told to
   (:meth:`Starter.go`), imports the server and makes it;
2. the main thread reads the first message (:func:`read_first`) and, when it is an
   ``initialize`` request that looks well formed, answers it at once
   (:func:`initialize_result`: the capabilities the full server announces, from the one
   table both read, ``capabilities.py``; ``tests/e2e/test_startup.py`` checks the answers
   are equal for many clients).
   It reads on (:func:`serve_early`): for each ``didOpen`` it builds the document the
   server would build and publishes its count, and it answers ``livetok/tokenCount``,
   ``hover`` and ``codeLens`` about those documents (:class:`EarlyServer`, with the
   server's own :mod:`.answers`). When the input pauses it tells the starter to go (the two
   threads share one interpreter lock: importing pygls earlier would halve the speed of the
   first count) and goes on answering until the server is made, or until a message needs
   the server (which it then waits for).

Once the server exists, :class:`HandOver` gives it the same ``initialize`` message, so it
reads the client's capabilities, ``initializationOptions`` and position encoding as if it
had answered itself; its own answer is dropped (and compared with the one sent: a
difference is logged as an error). The server then keeps the front's documents
(``LivetokServer.adopt_documents``: no text is encoded twice) and handles every message read
so far that the front did not answer, in order (for a ``didOpen`` it publishes the count
again), and all that follow. A first message that is not such an ``initialize`` (a request
sent too early, bad JSON) is left to the full server, which answers it as before; LSP's
lifecycle (``ServerNotInitialized`` before the ``initialize``, ``InvalidRequest`` for a
second one, which the front hands over unread) is the server's to keep
(``lifecycle.SessionProtocol``). The front applies the server's limits by calling the
server's own functions (``framing.refusal``, ``framing.lsp_integer``, ``answers.py``,
``uris.local_path``): what the server would refuse, the front leaves to it.
Measured in ``docs/benchmarks-server.md`` (cold start).

Only stdio starts this way: ``--tcp`` and ``--ws`` make a server per connection after the
listener is up, so a client never waits for the imports there.
"""

from __future__ import annotations

import json
import logging
import os
import select
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, cast

from livetok.server.lsp.capabilities import announced, json_at as _get
from livetok.server.lsp.settings import DEFAULT_ENCODING, SettingsError, parse_settings, workspace_root
from livetok.server.lsp.framing import Frame, Framer, lsp_integer, refusal
from livetok.server.lsp.uris import local_path
from livetok.server.version import livetok_version

if TYPE_CHECKING:
    from pygls.io_ import Writer

    from livetok.server.lsp.documents import EarlyDocument
    from livetok.server.lsp.positions import Unit
    from livetok.server.lsp.session import LivetokServer

__all__ = ["EarlyServer", "HandOver", "Starter", "initialize_result", "read_first", "serve_early"]

log = logging.getLogger(__name__)

#: the position units livetok reads and writes (pygls's ``_SUPPORTED_ENCODINGS``)
UNITS = ("utf-8", "utf-16", "utf-32")
_READ_BYTES = 1 << 20
#: the header pygls writes after Content-Length
_CONTENT_TYPE = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
#: an ``initialize`` is a few KB (VS Code's ~10 KB); a bigger first message is left to the server
_MAX_INITIALIZE_BYTES = 1 << 20
#: the longest text the front counts (~0.5 s of o200k_base): beyond, the server's import
#: waits too long behind it, and the server counts big texts first in its worker thread
EARLY_MAX_CHARS = 1 << 21
#: a didOpen message bigger than this is left to the server (JSON: up to 6 bytes a character)
_MAX_EARLY_BYTES = 6 * EARLY_MAX_CHARS


def negotiated_unit(client_caps: Mapping[str, Any], forced: str | None) -> str:
    """The position unit: ``forced`` if given, else the client's first offer that livetok
    supports, else UTF-16 (as pygls's ``choose_position_encoding``).

    >>> negotiated_unit({"general": {"positionEncodings": ["utf-32", "utf-8"]}}, None)
    'utf-32'
    >>> negotiated_unit({"general": {"positionEncodings": ["ucs-2"]}}, None), negotiated_unit({}, "utf-8")
    ('utf-16', 'utf-8')
    """
    if forced is not None:
        return forced
    for offer in _get(client_caps, "general", "positionEncodings") or ():
        if offer in UNITS:
            return str(offer)
    return "utf-16"


def initialize_result(params: Any, forced_unit: str | None) -> dict[str, Any] | None:
    """The ``initialize`` result the full server would send for ``params``, or None when
    the params are not well formed enough to be sure (the full server then answers).

    ``forced_unit`` is ``--position-encoding``; ``initializationOptions.positionEncoding``
    comes next, then the client's offers.

    >>> initialize_result({"processId": None, "capabilities": {}}, None)["capabilities"]["positionEncoding"]
    'utf-16'
    >>> initialize_result({"capabilities": []}, None) is None
    True

    Runtime complexity: ``O(size of params)``.
    """
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    if not isinstance(params.get("processId", None), (int, type(None))):
        return None
    caps = params["capabilities"]
    offers = _get(caps, "general", "positionEncodings")
    if offers is not None and not (isinstance(offers, list)
                                   and all(isinstance(o, str) for o in offers)):
        return None
    try:
        settings_unit = parse_settings(params.get("initializationOptions")).position_encoding
    except SettingsError:
        settings_unit = None  # the full server warns that it ignores them
    out = announced(caps, negotiated_unit(caps, forced_unit or settings_unit))
    return {"capabilities": out, "serverInfo": {"name": "livetok", "version": livetok_version()}}


def read_first(fd: int, framer: Framer) -> Frame | None:
    """Read ``fd`` until ``framer`` has a first frame; None when the input ends first. The
    bytes after that frame stay in ``framer``.

    Runtime complexity: ``O(bytes read)``.
    """
    while True:
        for frame in framer.frames():
            return frame
        data = os.read(fd, _READ_BYTES)
        if not data:
            return None
        framer.feed(data)


def answer_first(frame: Frame | None, forced_unit: str | None,
                 write: Callable[[bytes], None]) -> dict[str, Any] | None:
    """Answer ``frame`` with :func:`initialize_result` if it is an ``initialize`` request
    the front can answer; returns the message sent, or None (the full server answers)."""
    if frame is None or frame.kind != "message" or len(frame.body) > _MAX_INITIALIZE_BYTES:
        return None
    try:
        message = json.loads(frame.body)
    except (ValueError, RecursionError):
        return None
    if refusal(message) is not None:  # the server's own check: it answers with the error
        return None
    if not (message.get("method") == "initialize" and message.get("id") is not None):
        return None
    result = initialize_result(message.get("params"), forced_unit)
    if result is None:
        return None
    sent = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    write(framed(sent))
    return sent


def framed(message: Mapping[str, Any]) -> bytes:
    """``message`` as pygls writes it: JSON after a ``Content-Length`` header.

    Runtime complexity: ``O(size of message)``.
    """
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n%s\r\n%s" % (len(body), _CONTENT_TYPE, body)


def load_encoding(name: str) -> None:
    """Load encoding ``name`` and the per-token tables a ``Document`` needs (built on first
    use); a failure is only logged: the document that needs the encoding reports it."""
    from livetok.incremental import get_encoding

    try:
        getattr(get_encoding(name), "clean_starts", None)
    except Exception as exc:
        log.info("livetok: preloading %r failed: %s", name, exc)


class Starter(threading.Thread):
    """Loads the default encoding, then, once :meth:`go` is called, imports and makes the
    full server. The import waits so that it does not take the interpreter from the front
    while the front counts the first documents (the threads share one interpreter lock)."""

    def __init__(self, make_server: Callable[[], LivetokServer]) -> None:
        super().__init__(name="livetok-start", daemon=True)
        self._make_server = make_server
        self._go = threading.Event()
        self._ready = threading.Event()
        self._server: LivetokServer | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        try:
            from livetok.incremental import get_encoding

            # what EarlyServer needs first (it waits for this load, not for another one);
            # a failure is its to tell. The per-token tables a Document needs come after
            # the first count (Document.from_blocks), not here: the threads share one
            # interpreter lock, and the encode would wait for them
            get_encoding(DEFAULT_ENCODING)
            from livetok.server.lsp import documents  # noqa: F401  (EarlyServer's next need)
        except Exception:
            pass
        finally:
            self._go.wait()
        try:
            self._server = self._make_server()
        except BaseException as exc:  # re-raised in the main thread by server()
            self._error = exc
            return
        finally:
            self._ready.set()
        load_encoding(DEFAULT_ENCODING)  # and the tables a Document needs

    def go(self) -> None:
        """Start making the server (once the front has nothing it can do alone)."""
        self._go.set()

    def going(self) -> bool:
        """Whether :meth:`go` was called."""
        return self._go.is_set()

    def made(self) -> bool:
        """Whether making the server is over (made, or failed): :meth:`server` will not wait."""
        return self._ready.is_set()

    def server(self) -> LivetokServer:
        """The full server, once made (waits for it); what making it raised, if it failed."""
        self.go()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        assert self._server is not None
        return self._server


#: the front starts importing the server after this long without input (the client is done
#: with its start); it answers what it can meanwhile
IDLE_S = 0.1
#: how often the front looks whether the server is made, while it waits for input
_POLL_S = 0.02


def _readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` has input within ``timeout`` seconds (True where that cannot be known,
    e.g. pipes on Windows: the caller then reads and may block)."""
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    except (OSError, ValueError):
        return True


def serve_early(fd: int, framer: Framer, params: Any, unit: str,
                write: Callable[[bytes], None], starter: Starter
                ) -> tuple[list[Frame], dict[str, EarlyDocument]]:
    """After the front's ``initialize`` answer: read on, building the document of each
    ``didOpen`` and publishing its count, and answering the requests about those documents
    that :class:`EarlyServer` can (:data:`EARLY_REQUESTS`), until a message needs the full
    server or the server is made. Once the input pauses for :data:`IDLE_S`, ``starter``
    makes the server while the front goes on answering.

    Returns the frames for the full server, in order (those the front answered are not
    among them; the rest stays in ``framer``), and the documents the front built.

    Runtime complexity: ``O(bytes read)`` plus the documents built and the requests answered.
    """
    early = EarlyServer(params, unit, write)
    frames: list[Frame] = []
    while True:
        frame = next(framer.frames(), None)
        if frame is None:
            if starter.made():
                break
            if not _readable(fd, _POLL_S if starter.going() else IDLE_S):
                starter.go()
                continue
            data = os.read(fd, _READ_BYTES)
            if not data:
                break
            framer.feed(data)
            continue
        handled = early.handle(frame)
        if handled is not ANSWERED:
            frames.append(frame)
        if handled is None:
            break
    return frames, early.documents


#: what :meth:`EarlyServer.handle` returns for a request it answered (its frame is dropped)
ANSWERED = "answered"
#: ``protocol.TOKEN_COUNT`` and ``DID_CHANGE_TOKEN_COUNT``, here without importing pygls
#: (``tests/e2e/test_startup.py`` checks they are the same)
TOKEN_COUNT = "livetok/tokenCount"
DID_CHANGE_TOKEN_COUNT = "livetok/didChangeTokenCount"
#: the requests the front answers about the documents it built
EARLY_REQUESTS = (TOKEN_COUNT, "textDocument/hover", "textDocument/codeLens")


class EarlyServer:
    """What the front does before the full server exists: for a ``didOpen``, the document
    the full server would build (an :class:`~.documents.OpenDocument` of the same encoding),
    its ``livetok/didChangeTokenCount``, and the answers to :data:`EARLY_REQUESTS` about it,
    computed by the same :mod:`.answers` functions the server's handlers call. The server then
    keeps those documents (``LivetokServer.adopt_documents``): each text is encoded once.

    ``initialized`` is passed over; anything else, any request whose params are not plainly
    well formed, and any document the front cannot be sure of (a budget file, the settings'
    limits, budget or compared encodings, text that the server sanitizes, a text long enough
    for the server's work-done progress) or whose encoding is a tokenizer.json
    (its load may take seconds, which the server spends in its worker thread), is left to
    the full server.
    """

    def __init__(self, params: Any, unit: str, write: Callable[[bytes], None]) -> None:
        options, root = None, None
        if isinstance(params, dict):  # relative paths read as the full server reads them
            options = params.get("initializationOptions")
            root = workspace_root(params.get("workspaceFolders"), params.get("rootUri"),
                                  params.get("rootPath"))
        try:
            self.settings = parse_settings(options, root=root)
        except SettingsError:
            self.settings = parse_settings(None)  # the server ignores them too
        self._unit = unit
        self._write = write
        #: the documents built, by URI
        self.documents: dict[str, EarlyDocument] = {}

    def handle(self, frame: Frame) -> bool | str | None:
        """True: ``frame`` was a notification the front took care of (it still goes to the
        server); :data:`ANSWERED`: a request the front answered (it does not); None: the full
        server is needed for it (as for any message the front fails on: it never exits).

        What the server refuses whole (:func:`.framing.refusal`: too deep, a bad id or
        ``jsonrpc``) is left to the server, which answers it with the error."""
        if frame.kind != "message" or len(frame.body) > _MAX_EARLY_BYTES:
            return None
        try:
            message = json.loads(frame.body)
        except (ValueError, RecursionError):
            return None
        if refusal(message) is not None:
            return None
        try:
            return self._handle(message)
        except Exception:  # a bug here must not end the session: the server does it again
            log.exception("livetok: the front failed on a message; the server handles it")
            return None

    def _handle(self, message: dict[str, Any]) -> bool | str | None:
        method = message.get("method")
        if "id" in message:
            return ANSWERED if self._answer(message) else None
        if method == "initialized":
            return True
        if method != "textDocument/didOpen":
            return None
        td = _get(message, "params", "textDocument")
        if not (isinstance(td, dict) and isinstance(td.get("uri"), str)
                and td["uri"] not in self.documents
                and isinstance(td.get("languageId"), str)
                and lsp_integer(td.get("version")) and isinstance(td.get("text"), str)):
            return None
        return self._open(td["uri"], td["languageId"], td["version"], td["text"]) or None

    def _open(self, uri: str, language_id: str, version: int, text: str) -> bool:
        from livetok.incremental import get_encoding
        from livetok.server.lsp.documents import EarlyDocument, OpenDocument
        from livetok.server.lsp.positions import PositionCodec

        limit = self.settings.max_document_size
        if (len(text) > EARLY_MAX_CHARS or (limit is not None and len(text) > limit)
                or len(text) >= self.settings.progress_threshold  # the server shows progress
                or self.settings.compare  # the server keeps the compared counts
                or _budget_file_for(uri)):
            return False
        try:
            text.encode("utf-8")  # lone surrogates: the server sanitizes, and warns
            name = self.settings.encoding_for(uri, language_id)
            if self.settings.refusal(name) is not None:
                return False  # a workspace's tokenizer.json, not trusted: the server says so
            if not _built_in(name):
                return False  # a tokenizer.json may take seconds: the server loads it aside
            enc = get_encoding(name)
        except Exception:  # the server reports it
            return False

        def publish(tokens: int, characters: int) -> None:  # before the structure is built
            self._write(framed({"jsonrpc": "2.0", "method": DID_CHANGE_TOKEN_COUNT,
                        "params": {"uri": uri, "version": version, "encoding": enc.name,
                                   "tokens": tokens, "characters": characters}}))

        od = OpenDocument(uri, language_id, version, text, enc,
                          PositionCodec(cast("Unit", self._unit)), warn=log.info,
                          on_count=publish)
        if od.doc is None:  # the core failed: the server tries again, and reports it
            return False
        self.documents[uri] = EarlyDocument(version, text, od)
        return True

    def _answer(self, message: dict[str, Any]) -> bool:
        """Answer ``message`` if it is one of :data:`EARLY_REQUESTS` about a document built
        here, with well-formed params, as the server answers it (:mod:`.answers`, the server's
        own functions); whether it was answered."""
        from livetok.server.lsp.answers import ANSWERS

        method, params = message.get("method"), message.get("params")
        uri = _get(params, "textDocument", "uri")
        early = self.documents.get(uri) if isinstance(uri, str) else None
        if method not in EARLY_REQUESTS or early is None or type(message["id"]) not in (int, str):
            return False
        if method == "textDocument/codeLens" and self.settings.budget is not None:
            return False  # its lenses show the budget: the server's BudgetWatch
        try:
            result = ANSWERS[method](early.od, params, self.settings)
        except Exception:  # a bad param, a position out of range: the server answers the error
            return False
        self._write(framed({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        return True


def _built_in(name: str) -> bool:
    """Whether encoding or model ``name`` is counted with a built-in encoding: not a
    ``tokenizer.json`` (a file, ``hf:ORG/NAME``, or a model read from the Hugging Face cache),
    whose load may take seconds.

    Runtime complexity: ``O(models)``.
    """
    from livetok.incremental.names.catalog import find_model
    from livetok.incremental.names.registry import ALIASES, list_encodings

    model = find_model(name)
    return ALIASES.get(name, model.encoding if model is not None else name) in list_encodings(
        found=False)


#: ``budgets.CONFIG_NAMES`` (test_startup checks), here so that most opens need not import it
BUDGET_FILE_NAMES = ("livetok.toml", "pyproject.toml")


def _budget_file_for(uri: str) -> bool:
    """Whether a budget file (``livetok.toml``, ``[tool.livetok]``) may rule ``uri``'s
    encoding, or ``uri`` is one: the full server reads those.

    Runtime complexity: ``O(depth)`` file tests; a candidate file is then read.
    """
    path = local_path(uri)  # the server's own limits: None for a path no file can have
    if path is None:
        return False
    if path.name in BUDGET_FILE_NAMES:
        return True
    # subtle: lexists, as the server's ConfigFinder: a test never raises (a folder's path
    # plus a budget file's name may pass the length limit that the document's path keeps)
    if not any(os.path.lexists(d / name) for d in path.parents for name in BUDGET_FILE_NAMES):
        return False
    from livetok.server.budgets.discovery import ConfigFinder

    try:
        return ConfigFinder().config_for(path) is not None
    except Exception:  # a ConfigError, or whatever a hostile budget file does: the full
        return True  # server reads it again and reports it


class HandOver:
    """A writer for the full server while it reads the ``initialize`` the front answered:
    its own answer to that id is dropped (compared with ``sent``); everything else goes to
    ``writer``. Once the answer has passed, writes go straight through.

    Runtime complexity: ``O(1)`` per write after the hand-over, ``O(message)`` before.
    """

    def __init__(self, writer: Writer, sent: Mapping[str, Any],
                 on_invalid: Callable[[str], None] | None = None) -> None:
        self._writer = writer
        self._sent = sent
        #: called with the announced position unit when the server found the params invalid
        self._on_invalid = on_invalid
        self.pending = True
        #: the full server's own answer, dropped (for tests and the drift check)
        self.dropped: dict[str, Any] | None = None

    def write(self, data: bytes) -> None:
        if self.pending:
            _, _, body = data.partition(b"\r\n\r\n")
            message = json.loads(body)
            if message.get("id") == self._sent["id"] and "method" not in message:
                self.pending = False
                self.dropped = message
                self._compare(message)
                return
        self._writer.write(data)

    def close(self) -> None:
        self._writer.close()

    def _compare(self, own: Mapping[str, Any]) -> None:
        if "error" in own:
            log.error("livetok: initialize was answered before its params were checked, and "
                      "they are invalid: %s; the server goes on with the defaults and the "
                      "position encoding it announced", own["error"].get("message"))
            if self._on_invalid is not None:
                self._on_invalid(self._sent["result"]["capabilities"]["positionEncoding"])
        elif own.get("result") != self._sent["result"]:
            log.error("livetok: the initialize answer sent early differs from the server's "
                      "own (a bug: front.py must follow the features): sent %s, own %s",
                      json.dumps(self._sent["result"]), json.dumps(own.get("result")))
