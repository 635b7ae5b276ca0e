"""The livetok language server: the state of a session (:class:`LivetokServer`) and its
lifecycle protocol (:class:`SessionProtocol`).

Handlers are plain functions ``handler(ls, params)`` under ``@feature(METHOD)``, as in
pygls's examples: :mod:`.handlers` holds the decorators (a server is made per connection, so
they record the handlers and each :class:`LivetokServer` registers them when it is created),
:mod:`.sync` the lifecycle and document-sync notifications, :mod:`.requests` the requests. A
keystroke passes through five functions (``docs/architecture.md``): ``sync.did_change`` ->
``OpenDocument.apply`` -> ``Document.edit`` -> ``TokenSeq.replace``, then
:meth:`LivetokServer.publish` once the input waiting to be read is handled.

Notifications cannot be answered: a notification handler that raises is reported by pygls
to :meth:`LivetokServer.report_server_error`, which logs it to stderr and sends the client a
``window/logMessage`` warning; it never stops the server or touches other documents. See
``transport.py`` for the concurrency model and ``background.py`` for big documents, which
are tokenized in a worker thread.

Encodings are loaded off the event loop. A document whose encoding this process has not
loaded yet, or whose encoding is a ``tokenizer.json`` (read again when the file changed; a
trusted 96 MB one takes ~30 s), is opened as a big document is: the worker thread loads the
encoding and builds the document, and meanwhile the document is busy (``background.py``):
its changes and requests wait in its backlog and are answered, in order, once it is built
with its own encoding; the other documents are served as usual. No count is published for
it before then (the client's first count is the exact one). A settings change that gives a
document such an encoding rebuilds it the same way (:meth:`LivetokServer._reencode`).

One concept: the state of one session and what changes it (documents opened, closed and
rebuilt, encodings chosen and loaded, settings, budgets, coalesced publishing), as the methods
of one class that the handlers call. Splitting it by method group would leave every part
reaching into the same attributes.

The session's lifecycle (LSP's "Lifecycle Messages") is kept by :class:`SessionProtocol`: a
request before ``initialize`` gets ``ServerNotInitialized`` (-32002) and a notification is
dropped (``exit`` excepted); a second ``initialize`` gets ``InvalidRequest`` (-32600); after
``shutdown`` requests get ``InvalidRequest`` (``protocol.py``); ``exit`` ends the session at
once, status 0 after ``shutdown`` and 1 without, and nothing is written after it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, cast

from lsprotocol import types
from pygls.exceptions import (
    FeatureNotificationError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol.language_server import lsp_method

from livetok.incremental import Document, PieceEncoding, get_encoding
from livetok.incremental.vocab.catalog import find_model, model_encoding
from livetok.incremental.vocab.registry import is_file_name

from livetok.server.lsp import views
from livetok.server.lsp import requests, sync, workspace_counts as workspace  # noqa: F401  (they register their handlers)
from livetok.server.lsp.handlers import FEATURES, uri_of
from livetok.server.lsp.background import Background
from livetok.server.lsp.budget_watch import BudgetWatch
from livetok.server.lsp.settings import DEFAULT_ENCODING, Settings, workspace_folders
from livetok.server.lsp.compared import Compared, ComparedCount
from livetok.server.lsp.documents import (
    CountCallback,
    DocumentFactory,
    EncodingChoice,
    DocumentStore,
    DocumentUnavailable,
    EarlyDocument,
    OpenDocument,
    Patch,
)
from livetok.server.lsp.memory import collect_ended_sessions, return_free_memory
from livetok.server.lsp.pending import PendingChanges
from livetok.server.lsp.positions import PositionCodec, Unit
from livetok.server.lsp.protocol import DID_CHANGE_TOKEN_COUNT, LivetokProtocol
from livetok.server.lsp.trace_recorder import TraceRecorder
from livetok.server.version import livetok_version

if TYPE_CHECKING:
    from pygls.server import ServerErrors

__all__ = ["LivetokServer", "SessionProtocol", "create_server"]

log = logging.getLogger(__name__)

#: a notification burst is published at least this often even if input never pauses
_MAX_COALESCE_S = 0.05
#: what the client is told when a notification handler raised
_FAILED = "livetok: handling a notification failed ({}); the server keeps running"
#: encoding names whose failure was shown that the server remembers (see ``_shown_failures``)
_MAX_SHOWN_FAILURES = 64
#: documents not kept (over ``max_open_chars``) whose reason the server remembers
_MAX_NOT_KEPT = 1024
#: a document at least this long gives its memory back to the system (``malloc_trim``)
#: when it is closed or its text replaced: else the process keeps it, unused
_TRIM_CHARS = 1 << 20
#: encoding names this process has loaded (``get_encoding`` returns them at once): another
#: name is loaded in the worker thread (``LivetokServer.ready_encoding``)
_READY: set[str] = set()

__version__ = livetok_version()


def _encoding_inputs(settings: Settings) -> tuple[Any, ...]:
    """The settings :meth:`LivetokServer.encoding_choice` reads: when they are equal, every
    document keeps its encoding (a new setting that names encodings must be added here)."""
    return (settings.encoding, settings.tokenizer, settings.encoding_by_language,
            settings.encoding_by_glob, settings.trust_workspace_tokenizers, settings.root,
            settings.relative_paths)


#: ``livetok.compare``'s encodings and a document's counts under them
CompareCounts = tuple[tuple[Compared, ...], list[ComparedCount]]


def _compare_inputs(settings: Settings) -> tuple[Any, ...]:
    """The settings :meth:`LivetokServer.compare_encodings` reads: when they are equal, the
    compared encodings loaded stay."""
    return (settings.compare, settings.trust_workspace_tokenizers, settings.root,
            settings.relative_paths)


def _notice(message: str, code: str,
            severity: types.DiagnosticSeverity = types.DiagnosticSeverity.Information,
            ) -> types.Diagnostic:
    """A diagnostic at the top of a document that says why it is not counted (over
    ``livetok.maxDocumentSize``: ``too-large``; not kept, over the session's limit:
    ``not-kept``), in place of budget verdicts, which need its counts."""
    p = types.Position(0, 0)
    return types.Diagnostic(range=types.Range(start=p, end=p), message=message,
                            severity=severity, source="livetok", code=code)


class SessionProtocol(LivetokProtocol):
    """:class:`LivetokProtocol` keeping the session's lifecycle: nothing but ``initialize``
    (and ``exit``) before ``initialize``, one ``initialize``, nothing after ``exit``.

    Whichever answers the ``initialize`` (this server, or ``front.py`` before it exists: then
    :meth:`LivetokServer.adopt_initialize` marks it seen), the client sees LSP's rules.
    """

    #: an ``initialize`` request was handled (or answered by the front)
    initialize_seen = False
    #: ``exit`` came: the session is over and nothing more is written
    exited = False

    def handle_message(self, message: Any) -> None:
        """Apply the lifecycle's rules, then dispatch as :class:`LivetokProtocol` does.

        Runtime complexity: ``O(1)`` besides the dispatch.
        """
        method = getattr(message, "method", None)
        if self.exited:
            return
        if method == types.INITIALIZE and not self._shutdown:
            if self.initialize_seen:
                self._send_error(message.id, JsonRpcInvalidRequest(
                    "initialize was sent already: a session is initialized once (send "
                    "shutdown and exit, then start a new session)"))
                return
            self.initialize_seen = True
        elif method not in (None, types.EXIT) and not self.initialize_seen:
            if hasattr(message, "id"):
                self._send_error(message.id, JsonRpcServerNotInitialized(
                    f"{method} before initialize: send the initialize request first"))
            else:  # LSP: notifications before initialize are dropped
                log.info("dropped %s: it came before initialize", method)
            return
        pending = cast(LivetokServer, self._server).pending
        if pending and method != types.EXIT:
            pending.apply_all()  # every message sees the changes sent before it (pending.py)
        super().handle_message(message)

    def take_notification(self, data: dict[str, Any]) -> bool:
        """A keystroke's ``didChange`` goes from its JSON to :func:`.sync.did_change_json`
        while the session runs (before ``initialize`` and after ``shutdown`` the lifecycle's
        rules apply, in :meth:`handle_message`); False: it is typed and dispatched.

        Runtime complexity: ``O(1)`` besides the handler.
        """
        if (data.get("method") != types.TEXT_DOCUMENT_DID_CHANGE or self.exited
                or self._shutdown or not self.initialize_seen):
            return False
        server = cast(LivetokServer, self._server)
        try:
            return sync.did_change_json(server, data.get("params"))
        except Exception as exc:  # reported as a typed handler's failure is
            log.exception("a notification handler failed: textDocument/didChange")
            server.warn(_FAILED.format(f"{type(exc).__name__}: {exc}"))
            return True

    # pygls's is a generator that first runs the server's own exit handler (livetok has none)
    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:  # type: ignore[override]
        """End the session now (``SystemExit``: status 0 after ``shutdown``, 1 without). The
        transport stops reading; callbacks still queued (a coalesced count) write nothing."""
        status = 0 if self._shutdown else 1
        self.exited = True
        self._shutdown = True  # what checks for shutdown (publish) stops too
        try:
            closing = self.writer.close() if self.writer is not None else None
            if inspect.isawaitable(closing):
                asyncio.ensure_future(closing)
        except Exception:  # the client may have closed its end first
            log.info("closing the output at exit failed", exc_info=True)
        raise SystemExit(status)

    def _send_data(self, data: Any) -> None:
        # after exit the output is closed: a write would fail, and pygls would report the
        # failure by writing again (a loop of errors that kept a session alive for seconds)
        if not self.exited:
            super()._send_data(data)

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """``notify(method, params)`` for params made of JSON values only (livetok's own
        notifications): sent as a plain dict, which ``json.dumps`` writes without pygls's
        message class and converter (unstructuring the notification through cattrs was a
        third of publishing a count).

        Runtime complexity: ``O(len(message))``.
        """
        if not self.exited:
            super()._send_data({"jsonrpc": self.VERSION, "method": method, "params": params})


class LivetokServer(LanguageServer):
    """The language server: open documents, settings and the coalesced count notifications."""

    protocol: SessionProtocol
    #: the most code points this session's open documents may hold together (None: no
    #: bound; ``livetok demo`` sets one): a document that would pass it is not kept
    max_open_chars: int | None = None

    def __init__(
        self,
        *,
        record_trace: str | None = None,
        position_encoding: str | None = None,
        document_factory: DocumentFactory = Document,
    ) -> None:
        super().__init__(
            "livetok",
            __version__,
            protocol_cls=SessionProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.settings: Settings = Settings()
        #: the workspace's folder, which relative tokenizer paths in the settings are read from
        self.root: str | None = None
        #: the thread that loads the default encoding after initialize (see _preload)
        self.preload: threading.Thread | None = None
        self.store = DocumentStore()
        self.codec = PositionCodec("utf-16")
        #: ``--position-encoding``: the unit used whatever the client announces
        self.forced_unit = position_encoding
        self.recorder = TraceRecorder(record_trace) if record_trace else None
        self.factory = document_factory
        self.progress_ok = False
        self.refresh_lenses = False
        self.refresh_semantic = False
        #: documents to publish: True for their count and diagnostics, False for diagnostics
        self._dirty: dict[str, bool] = {}
        self._dirty_since: float | None = None
        self._publish_scheduled = False
        self._published: dict[str, tuple[Any, ...]] = {}
        #: budget files (livetok.toml, [tool.livetok]): diagnostics and lenses of budgets
        self.budgets = BudgetWatch(publish=self._publish_diagnostics)
        self._progress_n = 0
        #: encodings whose failure to load the user was shown (once each, until the
        #: settings change): a workspace of documents gives one message, not one each; the
        #: latest :data:`_MAX_SHOWN_FAILURES` names only (a client naming ever new unknown
        #: encodings must not grow the server)
        self._shown_failures: dict[str, None] = {}
        #: didChanges read and not applied yet (``pending.py``)
        self.pending = PendingChanges(self)
        self.background = Background(settle=self.pending.apply)
        #: didOpens being built in the worker thread: ``uri -> characters``, counted toward
        #: :attr:`max_open_chars` before they are in the store
        self._opening: dict[str, int] = {}
        #: documents not kept for :attr:`max_open_chars`: ``uri -> why`` (the latest ones)
        self._not_kept: dict[str, str] = {}
        #: the stdio front's documents, until their didOpen is handled (:meth:`early_document`)
        self._early: dict[str, EarlyDocument] = {}
        #: ``livetok.compare``'s encodings loaded for the current settings, by name (None: it
        #: failed, and the user was told once); emptied when those settings change
        self._compared: dict[str, Compared | None] = {}
        self.protocol.on_invalid_notification = self._on_invalid_notification
        for method, options, handler in FEATURES:
            self.feature(method, options)(handler)

    # -- reporting -------------------------------------------------------------------------------

    def warn(self, message: str) -> None:
        """Log a recovered problem to stderr and to the client's log."""
        if self.background.in_worker():
            self.background.post(lambda: self.warn(message))
            return
        log.warning("%s", message)
        try:
            self.protocol.notify(types.WINDOW_LOG_MESSAGE, types.LogMessageParams(
                type=types.MessageType.Warning, message=message))
        except Exception:  # no transport yet (unit tests)
            pass

    def show_error(self, message: str) -> None:
        """Log a recovered problem the user must act on (a setting naming a file that cannot
        be read) and show it (``window/showMessage``, an error)."""
        if self.background.in_worker():
            self.background.post(lambda: self.show_error(message))
            return
        self.warn(message)
        try:
            self.protocol.notify(types.WINDOW_SHOW_MESSAGE, types.ShowMessageParams(
                type=types.MessageType.Error, message=message))
        except Exception:  # no transport yet (unit tests)
            pass

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        """pygls's hook for a handler that raised. A notification cannot be answered: its
        error is logged with its traceback and the client is warned; the server keeps
        running. Others as pygls does (a request's error is in its answer)."""
        if source is not FeatureNotificationError:
            super().report_server_error(error, source)
            return
        data = getattr(error, "data", None)
        trace = "".join(data.get("traceback", ())) if isinstance(data, dict) else ""
        log.error("a notification handler failed: %s\n%s", error, trace)
        self.warn(_FAILED.format(error))

    def later(self, uri: str, handler: Callable[[LivetokServer, Any], object],
              params: Any, *, merges: bool = False) -> None:
        """Run ``handler(self, params)`` after the background work on ``uri``, at its place
        in that document's backlog; a failure is reported as pygls reports a handler's.
        ``merges``: a didChange, merged with those next to it (``Background.defer``)."""

        def run() -> None:
            try:
                handler(self, params)
            except Exception as exc:
                log.exception("a deferred %s failed", handler.__name__)
                self.warn(_FAILED.format(f"{type(exc).__name__}: {exc}"))

        self.background.defer(uri, run, merges=merges)

    # -- documents -------------------------------------------------------------------------------

    def encoding_choice(self, uri: str, language_id: str) -> EncodingChoice:
        """The encoding name a document gets (a budget file's rule, else the settings') and
        why it must not be loaded (None: it may).

        Runtime complexity: ``O(globs)``; a path name adds ``O(components)`` system calls.
        """
        # a budget file's rule for the document wins: its verdicts then come from live counts
        name = self.budgets.encoding_for(uri) or self.settings.encoding_for(uri, language_id)
        return EncodingChoice(name, self.refusal(name))

    def refusal(self, name: str) -> str | None:
        """Why the encoding ``name`` must not be loaded, or None: the one trust rule
        (:meth:`.Settings.refusal`, :func:`livetok.server.trust.tokenizer_refusal`) over every
        workspace folder of the session, not only the first. Every way an encoding name enters
        the session asks here: documents, ``livetok.compare``, the workspace map, the preload.

        Runtime complexity: ``O(1)`` for a name that is not a path; else ``O(path components
        * folders)`` system calls.
        """
        try:
            folders = workspace_folders(self.workspace.folders)
        except RuntimeError:  # no workspace before initialize (unit tests)
            folders = ()
        return self.settings.refusal(name, folders)

    def trusted_encoding(self, name: str, what: str) -> str:
        """``name`` when :meth:`refusal` lets it in, else the default encoding, the user told
        why as for a document (:meth:`_unavailable`: shown once). ``what`` names what is
        counted ("the workspace map").

        Runtime complexity: as :meth:`refusal`.
        """
        refusal = self.refusal(name)
        if refusal is None:
            return name
        self._unavailable(name, what, ValueError(refusal))
        return DEFAULT_ENCODING

    def load_encoding(self, choice: EncodingChoice, uri: str) -> PieceEncoding:
        """The encoding ``choice`` names, or the default one when it is refused or cannot be
        loaded (the user is told why, :meth:`_unavailable`). Callable from the worker thread.

        Runtime complexity: ``O(1)`` once loaded; the first time, the vocabulary's load.
        """
        try:
            if choice.refusal is not None:  # a workspace's tokenizer.json, not trusted
                raise ValueError(choice.refusal)  # (docs/security.md)
            enc: PieceEncoding = get_encoding(choice.name)
            _READY.add(choice.name)
        except Exception as exc:
            self._unavailable(choice.name, uri, exc)
            enc = get_encoding(DEFAULT_ENCODING)
            _READY.add(DEFAULT_ENCODING)
        return enc

    def ready_encoding(self, choice: EncodingChoice, uri: str) -> PieceEncoding | None:
        """The encoding of ``choice`` when getting it takes no time (a name this process has
        loaded, not a file: a file is read again when it changed), else None: the caller
        loads it in the worker thread (:meth:`load_encoding`), so that a big tokenizer.json
        does not hold up the other documents.

        Runtime complexity: ``O(1)``.
        """
        name = DEFAULT_ENCODING if choice.refusal is not None else choice.name
        if name not in _READY or is_file_name(name):
            return None
        return self.load_encoding(choice, uri)

    def encoding_for(self, uri: str, language_id: str) -> PieceEncoding:
        """The encoding of a document: :meth:`load_encoding` of its :meth:`encoding_choice`."""
        return self.load_encoding(self.encoding_choice(uri, language_id), uri)

    def _unavailable(self, name: str, uri: str, exc: Exception) -> None:
        """Tell the user that ``name`` cannot be used for ``uri``: shown the first time (until
        the settings change), only logged after."""
        if self.background.in_worker():
            self.background.post(lambda: self._unavailable(name, uri, exc))
            return
        key = "tokenizer" if name == self.settings.tokenizer else "encoding"
        message = (f"livetok: encoding {name!r} for {uri} is unavailable ({exc}); using "
                   f"{DEFAULT_ENCODING}. Set livetok.{key} to "
                   + ("a tokenizer.json path." if key == "tokenizer"
                      else "a name the server lists (livetok/listEncodings)."))
        if name in self._shown_failures:
            self.warn(message)
        else:  # the first time: shown, not only logged
            self._shown_failures[name] = None
            if len(self._shown_failures) > _MAX_SHOWN_FAILURES:
                del self._shown_failures[next(iter(self._shown_failures))]  # the oldest
            self.show_error(message)

    def open_document(self, uri: str, language_id: str, version: int, text: str | list[str],
                      enc: PieceEncoding | None = None,
                      on_count: CountCallback | None = None,
                      choice: EncodingChoice | None = None,
                      built: OpenDocument | None = None) -> OpenDocument:
        """A new :class:`OpenDocument` with this server's codec, factory and limits (and
        ``enc``, else the encoding of ``choice``, else of the document's :meth:`encoding_choice`;
        ``built``: the stdio front's ``OpenDocument`` of ``text``)."""
        if enc is None:
            choice = choice or self.encoding_choice(uri, language_id)
            enc = self.load_encoding(choice, uri)
        return OpenDocument(uri, language_id, version, text, enc, self.codec,
                            document_factory=self.factory, warn=self.warn,
                            max_size=self.settings.max_document_size, on_count=on_count,
                            choice=choice, built=built,
                            compare=self.compare_encodings() if self.settings.compare else ())

    # -- livetok.compare -------------------------------------------------------------------------

    def compare_ready(self) -> bool:
        """Whether every encoding ``livetok.compare`` lists is loaded (or failed) already, so
        that a document can be built with them now; else the worker thread loads them
        (:meth:`compare_encodings`), as it loads a document's own encoding.

        Runtime complexity: ``O(compared)``.
        """
        return all(name in self._compared for name in self.settings.compare)

    def compare_encodings(self) -> tuple[Compared, ...]:
        """The encodings ``livetok.compare`` lists, loaded (the first time: callable from the
        worker thread), in order; one that cannot be loaded is left out, and the user is told
        once (until the settings change) how to fix it.

        Runtime complexity: ``O(compared)`` once loaded; the first time, their loads.
        """
        cache = self._compared
        out = []
        for name in self.settings.compare:
            if name not in cache:
                try:
                    cache[name] = self._load_compared(name)
                except Exception as exc:
                    cache[name] = None
                    self._compare_unavailable(name, exc)
            found = cache[name]
            if found is not None:
                out.append(found)
        return tuple(out)

    def _load_compared(self, name: str) -> Compared:
        """The encoding ``name`` of ``livetok.compare``: refused as ``livetok.encoding``'s
        names are (an untrusted workspace tokenizer.json), a model's tokenizer, or for a model
        the catalog marks ≈ its stand-in, never labelled exact (``note`` says why)."""
        refusal = self.refusal(name)
        if refusal is not None:
            raise ValueError(refusal)
        model = None if is_file_name(name) else find_model(name)
        if model is None or model.exact:
            enc = get_encoding(name)
            _READY.add(name)
            return Compared(name, enc)
        stand_in = model_encoding(name, approximate=True)
        assert stand_in is not None  # a model's name
        note = (f"≈ {model.title}: counted with the stand-in {model.encoding}, not the "
                f"model's own tokenizer. {model.why}")
        return Compared(name, get_encoding(stand_in), exact=False, note=note)

    def _compare_unavailable(self, name: str, exc: Exception) -> None:
        """Tell the user that ``name`` of ``livetok.compare`` is left out (shown once)."""
        if self.background.in_worker():
            self.background.post(lambda: self._compare_unavailable(name, exc))
            return
        self.show_error(f"livetok: livetok.compare: {name!r} is left out ({exc}). Fix or "
                        "remove it in livetok.compare: a name the server lists "
                        "(livetok/listEncodings), a model's name (`livetok models`) or a "
                        "tokenizer.json path.")

    def _recompare(self, od: OpenDocument) -> None:
        """After ``livetok.compare`` changed: ``od``'s compared counts built again; in the
        worker thread (``od`` busy meanwhile) when an encoding must be loaded or the document
        is big, as a didOpen would be."""
        uri = od.uri
        if self.store.find(uri) is not od:
            return  # replaced or closed meanwhile: its successor has the current ones
        assert not self.background.busy(uri), "a busy document's work builds its compared counts"

        def use(counts: CompareCounts) -> None:
            od.use_compare(*counts)
            self.changed(uri)

        build = functools.partial(self._compare_counts, od)
        if not self.compare_ready() or od.length >= self.settings.progress_threshold:
            if self.background.start(uri, build, use):
                return
        use(build())

    def _compare_counts(self, od: OpenDocument) -> CompareCounts:
        """``livetok.compare``'s encodings (loaded when needed) and ``od``'s counts under
        them; callable from the worker thread while ``od`` is busy."""
        compare = self.compare_encodings()
        return compare, od.compare_counts(compare)

    def adopt_documents(self, early: dict[str, EarlyDocument]) -> None:
        """The documents the stdio front built for the ``didOpen`` messages it read
        (``front.py``): handling those messages keeps their core document and line index (see
        :meth:`early_document`) rather than encoding each text a second time."""
        self._early.update(early)

    def early_document(self, uri: str, version: int, text: object,
                       enc: PieceEncoding) -> OpenDocument | None:
        """The front's document of this ``didOpen``, once: None unless the front built one
        of the same version, text and encoding object.

        Runtime complexity: ``O(1)``, plus comparing the texts (``O(n)``, in C) on a match.
        """
        early = self._early.pop(uri, None)
        if (early is None or early.version != version or early.od.doc is None
                or early.od.doc.encoding is not enc or early.text != text):
            return None
        return early.od

    def first_count(self, uri: str, version: int, encoding: str) -> CountCallback:
        """The ``on_count`` of a didOpen built in the worker thread: the exact count of the
        text goes to the client as soon as the encode pass has it, before the document's
        token sequence and line index are built (which the document's backlog waits for)."""

        def send(tokens: int, characters: int) -> None:
            if not self.protocol._shutdown:
                self.protocol.notify_json(DID_CHANGE_TOKEN_COUNT, views.CountInfo(
                    uri, version, encoding, tokens, characters).to_json())

        def post(tokens: int, characters: int) -> None:
            try:
                self.background.post(lambda: send(tokens, characters))
            except RuntimeError:  # the loop is closed (shutdown): nobody to tell
                log.info("no early count for %s: the event loop is closed", uri)

        return post

    def document(self, params: Any) -> OpenDocument:
        """The open document a request is about, or the error that says why not."""
        uri = uri_of(params)
        if uri is None:
            raise JsonRpcInvalidParams('params.textDocument.uri must be a string (the document URI)')
        why = self._not_kept.get(uri)
        if why is not None:
            raise DocumentUnavailable(why)
        if self.pending:  # the changes sent before the request, applied (pending.py)
            self.pending.apply(uri, inline=True)
        return self.store.get(uri)

    def close(self, uri: str) -> None:
        """Forget ``uri``: its document, pending count, budgets and diagnostics; the memory
        of a big one goes back to the system.

        Runtime complexity: ``O(1)``; ``O(heap)`` for a document of :data:`_TRIM_CHARS` or more.
        """
        if self.recorder is not None:  # the trace's text has every change recorded
            self.pending.apply(uri, inline=True)
        self.pending.drop(uri)
        od = self.store.remove(uri)
        self._dirty.pop(uri, None)
        self._not_kept.pop(uri, None)
        self.budgets.forget(uri)
        if od is not None and self.recorder is not None:
            self.recorder.close(uri, od.text())
        if self._published.pop(uri, None):
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if od is not None and od.length >= _TRIM_CHARS:
            del od  # the last reference: its blocks are freed, then given back
            return_free_memory()

    def release(self) -> None:
        """At the end of a session (a listener's connection, a demo tab): forget its
        documents and give their memory back now. The server itself waits for the garbage
        collector (it and pygls's protocol refer to each other); its documents need not.
        Builds still in the worker thread are dropped (``Background.close``): what they make
        is never stored, and their memory goes back once they end. What the session leaves is
        collected once its caller is done with it (:func:`collect_ended_sessions`, scheduled).

        Runtime complexity: ``O(documents)``, plus ``O(heap)`` when they were big.
        """
        self.background.close(on_idle=collect_ended_sessions)
        try:  # after the session's coroutine has let go of this server
            asyncio.get_running_loop().call_soon(collect_ended_sessions)
        except RuntimeError:  # no event loop: called outside a session (unit tests)
            pass
        big = self.store.chars >= _TRIM_CHARS
        self.store = DocumentStore()
        self.pending.clear()
        self._dirty.clear()
        self._published.clear()
        self._opening.clear()
        self._not_kept.clear()
        if big:
            return_free_memory()

    def not_kept(self, uri: str, n_chars: int) -> str | None:
        """Why a text of ``n_chars`` code points at ``uri`` cannot be held within
        :attr:`max_open_chars` beside the session's other documents, or None.

        Runtime complexity: ``O(documents being opened)``.
        """
        if self.max_open_chars is None:
            return None
        od = self.store.find(uri)
        others = (self.store.chars - (od.length if od is not None else 0)
                  + sum(n for u, n in self._opening.items() if u != uri))
        if others + n_chars <= self.max_open_chars:
            return None
        return (f"livetok: {uri} is not kept: with its {n_chars:,} characters this session's "
                f"open documents would hold {others + n_chars:,}, over its limit of "
                f"{self.max_open_chars:,}; close other documents, then reopen this one")

    def drop(self, uri: str, why: str) -> None:
        """Forget ``uri`` and its text (:meth:`not_kept` said ``why``): a diagnostic tells the
        user, requests on it fail with ``why``, its changes are ignored, until it is closed
        or opened again."""
        self.close(uri)
        self._not_kept[uri] = why
        if len(self._not_kept) > _MAX_NOT_KEPT:
            del self._not_kept[next(iter(self._not_kept))]  # the oldest
        self.warn(why)
        self._publish_diagnostics(
            uri, [_notice(why, "not-kept", types.DiagnosticSeverity.Warning)])

    def applied(self, od: OpenDocument, length_before: int, patches: list[Patch]) -> None:
        """After ``od``'s changes (``patches``): the session's size limit, the memory a big
        replaced text held, and :meth:`changed`.

        Runtime complexity: ``O(1)``, plus ``O(len(patches))`` for a big document.
        """
        length = od.lines.length
        self.store.chars += length - length_before
        if self.max_open_chars is not None and length > length_before:
            why = self.not_kept(od.uri, length)
            if why is not None:
                self.drop(od.uri, why)
                return
        if length_before >= _TRIM_CHARS and any(p.n_deleted >= _TRIM_CHARS for p in patches):
            return_free_memory()  # a big text replaced (the demo's samples)
        self.changed(od.uri, patches)

    def progress_begin(self, uri: str, n_chars: int) -> str:
        """Start a work-done progress for a big didOpen; returns its token."""
        self._progress_n += 1
        token = f"livetok/open/{self._progress_n}"
        # subtle: the begin notification follows the create request without awaiting its
        # answer; clients handle messages in order, so the token exists when begin arrives
        self.protocol.send_request(types.WINDOW_WORK_DONE_PROGRESS_CREATE,
                                   types.WorkDoneProgressCreateParams(token=token))
        name = uri.rsplit("/", 1)[-1]
        self.protocol.notify(types.PROGRESS, types.ProgressParams(
            token=token, value=types.WorkDoneProgressBegin(
                title="livetok", cancellable=False,
                message=f"tokenizing {name} ({n_chars:,} characters)")))
        return token

    def budget_files_changed(self, uris: list[str]) -> None:
        """Re-read the budget files among ``uris``; every document's budgets are checked again."""
        if self.budgets.changed(uris):
            self.reencode_all(encodings=True, limits=False, budgets=True)

    def workspace_folders_changed(self) -> None:
        """After ``workspace/didChangeWorkspaceFolders``: what the trust rule (:meth:`refusal`)
        says of a ``tokenizer.json`` may have changed with the folders, so each document's
        encoding and ``livetok.compare``'s are chosen (and loaded) again; a name now refused is
        shown again.

        Runtime complexity: ``O(documents)`` choices, plus the rebuilds.
        """
        self._compared = {}
        self._shown_failures.clear()
        self.reencode_all(encodings=True, limits=False, budgets=False, compare=True)

    def settings_changed(self, old: Settings) -> None:
        """After ``didChangeConfiguration``: redo for each document only what the settings
        that changed feed (:meth:`reencode_all`); a change no document depends on (semantic
        tokens, the context window) sends nothing per document.

        Runtime complexity: ``O(1)`` when no encoding, limit or budget setting changed.
        """
        new = self.settings
        self.budgets.trust_tokenizers = new.trust_workspace_tokenizers
        self._shown_failures.clear()  # a setting named again is shown again
        compare = _compare_inputs(new) != _compare_inputs(old)
        if compare:  # loaded again, and a failure shown again
            self._compared = {}
        self.reencode_all(encodings=_encoding_inputs(new) != _encoding_inputs(old),
                          limits=new.max_document_size != old.max_document_size,
                          budgets=(new.budget != old.budget or new.trust_workspace_tokenizers
                                   != old.trust_workspace_tokenizers),
                          compare=compare)

    def reencode_all(self, *, encodings: bool = True, limits: bool = True,
                     budgets: bool = True, compare: bool = False) -> None:
        """After a settings or budget file change: with ``encodings`` (what names encodings
        changed) a document whose :meth:`encoding_choice` changed, and with ``limits`` one
        whose ``maxDocumentSize`` verdict changed, is rebuilt and counted again; with
        ``budgets`` (the budget setting, the trust in tokenizers or a budget file changed)
        the others' budget diagnostics are computed again, and sent where they differ; with
        ``compare`` (``livetok.compare`` changed) each document's compared counts are built
        again and its count sent. Nothing else is sent per document; code lenses are asked
        for again (one request).

        Runtime complexity: ``O(documents)`` choices, plus the rebuilds and budget checks;
        ``O(1)`` when all four are false.
        """
        if encodings or limits or budgets or compare:
            for od in list(self.store):
                work = functools.partial(self._reencode, od.uri, encodings, budgets, compare)
                if self.background.busy(od.uri):
                    self.background.defer(od.uri, work)
                else:
                    work()
        if self.refresh_lenses:
            self.protocol.send_request(types.WORKSPACE_CODE_LENS_REFRESH, None)

    def _reencode(self, uri: str, encodings: bool, budgets: bool, compare: bool = False) -> None:
        """:meth:`reencode_all` for one document; an encoding that needs loading is loaded in
        the worker thread, as for a didOpen (the document waits). A document built again
        gets the current compared encodings; one kept, with ``compare``, gets them too
        (:meth:`_recompare`)."""
        od = self.store.find(uri)
        if od is None:
            return
        limit = self.settings.max_document_size
        flips = (limit is not None and od.length > limit) != (od.too_large is not None)
        choice = od.choice
        if encodings or choice is None:
            choice = self.encoding_choice(od.uri, od.language_id)
        if choice == od.choice and not flips:
            self._replace(od, choice, budgets, None, compare)
            return
        enc = self.ready_encoding(choice, uri)
        if enc is None or not self.compare_ready():
            def load_and_rebuild() -> tuple[OpenDocument | None, bool, CompareCounts | None]:
                fresh = self._rebuilt(od, choice, self.load_encoding(choice, uri), flips)
                # subtle: od kept, its compared counts are built here too: deferred to its
                # backlog, they would come after the messages that arrived meanwhile
                return fresh, False, (self._compare_counts(od) if fresh is None and compare
                                      else None)

            if self.background.start(uri, load_and_rebuild, lambda result: self._replace(
                    od, choice, budgets, *result)):
                return
            enc = self.load_encoding(choice, uri)
        self._replace(od, choice, budgets, self._rebuilt(od, choice, enc, flips), compare)

    def _rebuilt(self, od: OpenDocument, choice: EncodingChoice, enc: PieceEncoding,
                 flips: bool) -> OpenDocument | None:
        """``od`` built again with ``enc`` (and the current limit), or None when neither its
        encoding nor its ``maxDocumentSize`` verdict changes (``flips``). Runs in the worker
        thread when ``enc`` had to be loaded: ``od`` is busy then, nothing else touches it."""
        if enc is od.encoding and not flips:
            return None
        fresh = self.open_document(od.uri, od.language_id, od.version, od.text(), enc,
                                   choice=choice)
        fresh.out_of_sync = od.out_of_sync
        return fresh

    def _replace(self, od: OpenDocument, choice: EncodingChoice, budgets: bool,
                 fresh: OpenDocument | None, compare: bool = False,
                 counts: CompareCounts | None = None) -> None:
        """Put ``fresh`` in ``od``'s place and have it counted; without one, ``od`` stays
        (another name for the same encoding: an alias, a fallback) and with ``budgets`` its
        budget diagnostics are checked again, with ``counts`` (built in the worker thread)
        or ``compare`` (built now, :meth:`_recompare`) its compared counts replaced."""
        if fresh is not None:
            self.store.add(fresh)
            self.changed(od.uri)
            return
        od.choice = choice
        od.max_size = self.settings.max_document_size  # from the next full-text change
        if budgets:
            self.changed(od.uri, count=False)
        if counts is not None:
            od.use_compare(*counts)
            self.changed(od.uri)
        elif compare:
            self._recompare(od)

    def refuse_change(self, params: Any, reason: str) -> None:
        """A ``didChange`` the converter refused (``sync.read_did_change``): reported as a
        notification that failed to decode is (:meth:`_on_invalid_notification`)."""
        hook = self.protocol.on_invalid_notification
        if hook is not None:
            hook(types.TEXT_DOCUMENT_DID_CHANGE, params, reason)

    def _on_invalid_notification(self, method: str, params: Any, reason: str) -> None:
        """A notification that failed to decode: a lost change leaves its document out of
        sync (its text kept as it was, its requests refused until a full-text change or a
        reopen). Logged each time; the client is told once per document going out of sync
        (20,000 bad changes are one message)."""
        log.warning("livetok: ignored %s with invalid params (%s)", method, reason)
        td = params.get("textDocument") if isinstance(params, dict) else None
        uri = td.get("uri") if isinstance(td, dict) else None
        if method != types.TEXT_DOCUMENT_DID_CHANGE or not isinstance(uri, str):
            self.warn(f"livetok: ignored {method} with invalid params ({reason})")
            return

        def mark() -> None:
            od = self.store.find(uri)
            if od is None:
                self.warn(f"livetok: ignored {method} with invalid params ({reason})")
                return
            if od.out_of_sync is not None:
                return  # told already (and logged above)
            od.out_of_sync = f"a didChange could not be decoded: {reason}"
            message = (f"livetok: ignored {method} of {od.uri} with invalid params ({reason}); "
                       "the document is out of sync until a full-text change or reopen")
            self.warn(message)
            try:  # shown once: its count stops until then
                self.protocol.notify(types.WINDOW_SHOW_MESSAGE, types.ShowMessageParams(
                    type=types.MessageType.Warning, message=message))
            except Exception:  # no transport yet (unit tests)
                pass

        if self.background.busy(uri):
            self.background.defer(uri, mark)
        else:
            self.pending.apply(uri)  # the changes before it stay applied
            mark()

    def preload_encoding(self, name: str) -> None:
        """Load the default encoding while the client finishes its handshake, so the first
        didOpen does not wait for the vocabulary and its tables (~0.4 s for o200k_base). A didOpen that
        comes sooner waits for this load (``get_encoding`` loads each name once); a failure
        is reported by that didOpen, with the fallback, so here it is only logged. A name the
        trust rule refuses (:meth:`refusal`) is not loaded: the default encoding is, which a
        refused document falls back to."""
        try:
            if self.refusal(name) is not None:  # not read, not even parsed (docs/security.md)
                name = DEFAULT_ENCODING
            enc = get_encoding(name)
            # the per-token tables a Document needs, built on first use (~0.1 s for o200k_base)
            getattr(enc, "clean_starts", None)
            _READY.add(name)
        except Exception as exc:  # reported again, to the client, when a document needs it
            log.info("livetok: preloading %r failed: %s", name, exc)

    def adopt_initialize(self, unit: str) -> None:
        """The front answered ``initialize`` (announcing position unit ``unit``) but this
        server found its params invalid: go on with the defaults, the announced unit, and the
        session initialized (the client was told it is)."""
        self.codec = PositionCodec(cast(Unit, unit))
        self.protocol.initialize_seen = True

    def save_traces(self) -> None:
        """Write the traces of documents still open (``--record-trace``). After ``exit`` the
        process ends now: documents still being built in the worker are not waited for."""
        if self.recorder is None:
            return
        if not self.protocol.exited:
            self.background.finish_all()
        for uri in self.recorder.open_uris():
            if self.background.busy(uri):
                continue  # only after exit: its work was not waited for
            od = self.store.find(uri)
            self.recorder.close(uri, od.text() if od is not None else "")

    # -- coalesced notifications -----------------------------------------------------------------

    def changed(self, uri: str, patches: list[Patch] | None = None, *,
                count: bool = True) -> None:
        """``uri`` changed: its ``patches`` go to the trace (``--record-trace``), and
        :meth:`publish` runs once the input waiting to be read has been handled (at the
        latest 50 ms into an uninterrupted burst), so a burst costs one notification.
        ``count=False``: only its budget diagnostics may have changed (a budget setting).

        Runtime complexity: ``O(1)`` besides recording.
        """
        if patches is not None and self.recorder is not None:
            self.recorder.change(uri, patches)
        self._dirty[uri] = count or self._dirty.get(uri, False)
        now = time.monotonic()
        if self._dirty_since is None:
            self._dirty_since = now
        if now - self._dirty_since >= _MAX_COALESCE_S:
            self.publish()
        elif not self._publish_scheduled:
            try:
                asyncio.get_running_loop().call_soon(self.publish)
                self._publish_scheduled = True
            except RuntimeError:  # no loop: called outside a session (unit tests)
                self.publish()

    def publish(self) -> None:
        """Keystroke step 5: send ``livetok/didChangeTokenCount`` (and budget diagnostics)
        for the documents that :meth:`changed` since the last time.

        Runtime complexity: ``O(1)`` per document for the count (``TokenSeq`` keeps it),
        plus its budget check.
        """
        self._publish_scheduled = False
        self._dirty_since = None
        dirty, self._dirty = self._dirty, {}
        if self.protocol._shutdown:
            return  # after shutdown the client may already have closed the stream
        for uri, count in dirty.items():
            od = self.store.find(uri)
            if od is None or self.background.busy(uri):
                continue  # a busy document is marked changed again when its work is done
            if not count:
                if od.doc is not None and od.out_of_sync is None:
                    self._publish_budgets(od)
                continue
            try:
                info = views.token_count(od)
            except DocumentUnavailable as exc:
                log.info("no count for %s: %s", uri, exc)
                if od.too_large is not None:
                    self._publish_diagnostics(
                        uri, [_notice(f"livetok: {od.too_large}", "too-large")], od.version)
                continue
            except Exception:
                log.exception("counting %s failed", uri)
                continue
            self.protocol.notify_json(DID_CHANGE_TOKEN_COUNT, info.to_json())
            # whether a budget file can cover the document was decided when it opened (or
            # when a budget file or setting changed since): most keystrokes check nothing
            # (and a document with diagnostics shown gets them cleared or renewed)
            if (self.settings.budget is not None or uri in self._published
                    or self.budgets.may_cover(uri)):
                self._publish_budgets(od)

    def _publish_budgets(self, od: OpenDocument) -> None:
        """Publish ``od``'s budget diagnostics (when they differ from the last ones sent): a
        budget file's verdicts where one covers the document, else ``livetok.budget``'s."""
        try:
            self._publish_diagnostics(
                od.uri, self.budgets.diagnostics(od, self.settings.budget), od.version)
        except Exception:
            log.exception("budget diagnostic for %s failed", od.uri)

    def _publish_diagnostics(self, uri: str, diagnostics: list[types.Diagnostic],
                             version: int | None = None) -> None:
        """Publish ``uri``'s diagnostics when they differ from the last ones sent."""
        key = tuple((d.range, d.message, d.severity) for d in diagnostics)
        if self._published.get(uri, ()) == key:
            return
        if key:
            self._published[uri] = key
        else:
            self._published.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=diagnostics))


def create_server(**kwargs: Any) -> LivetokServer:
    """A new server (``record_trace=DIR`` records edit traces)."""
    return LivetokServer(**kwargs)
