"""The livetok language server: LSP handlers that translate protocol types and call the core.

Each handler converts lsprotocol types to plain values (code point offsets through the
position codec), calls :mod:`.documents` / :mod:`.features`, and converts the answer back.
Errors map to JSON-RPC errors in one place (:func:`_answers`):

=============================  ===========================================
``UnknownDocument``            ``InvalidParams`` (-32602): open it first
``PositionError``              ``InvalidParams`` (-32602): names the bound
``DocumentUnavailable``        ``RequestFailed`` (-32803): how to re-sync
=============================  ===========================================

Notifications cannot be answered: their problems are logged to stderr and sent to the
client as ``window/logMessage`` warnings, and never stop the server or touch other
documents. See ``transport.py`` for the concurrency model and ``background.py`` for big
documents, which are tokenized in a worker thread.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
import time
from typing import Any, Callable

from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from livetok.incremental import Document, get_encoding

from .background import Background
from .bigtext import TextParts
from .budget_watch import BudgetWatch
from .config import DEFAULT_ENCODING, Settings, SettingsError, parse_settings
from .documents import (
    DocumentStore,
    DocumentUnavailable,
    OpenDocument,
    TextChange,
    UnknownDocument,
)
from .features import (
    SEMANTIC_TOKEN_TYPES,
    code_lenses,
    hover,
    markdown_sections,
    semantic_tokens,
    token_count,
)
from .positions import PositionCodec, PositionError
from .protocol import DID_CHANGE_TOKEN_COUNT, REQUEST_FAILED, TOKEN_COUNT, LivetokProtocol
from .trace_recorder import TraceRecorder
from .version import livetok_version

__all__ = ["LivetokServer", "create_server"]

log = logging.getLogger(__name__)

#: a notification burst is flushed at least this often even if input never pauses
_MAX_COALESCE_S = 0.05
_LEGEND = types.SemanticTokensLegend(token_types=SEMANTIC_TOKEN_TYPES, token_modifiers=[])
_MARKDOWN_IDS = frozenset({"markdown", "md", "mdx"})
#: a didOpen text at least this long is handed over to its document (built by blocks)
_HANDOFF_CHARS = 1 << 22

__version__ = livetok_version()


def _answers(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Map livetok's document errors to JSON-RPC errors for a request handler."""

    @functools.wraps(fn)
    def wrapper(params: Any) -> Any:
        try:
            return fn(params)
        except (UnknownDocument, PositionError) as exc:
            raise JsonRpcInvalidParams(str(exc)) from exc
        except DocumentUnavailable as exc:
            raise JsonRpcException(message=str(exc), code=REQUEST_FAILED) from exc

    return wrapper


async def _wait_for(fut: asyncio.Future[Any]) -> Any:
    """Await a deferred request's answer (run by pygls as a sub-handler of a generator)."""
    return await fut


def _reports(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Log a notification handler's failure instead of letting it escape."""

    @functools.wraps(fn)
    def wrapper(self: LivetokServer, params: Any) -> None:
        try:
            fn(self, params)
        except Exception as exc:
            log.exception("%s failed", fn.__name__)
            self.warn(f"livetok: {fn.__name__.strip('_')} failed ({type(exc).__name__}: {exc}); "
                      "the server keeps running")

    return wrapper


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` for dicts, else the attribute (pygls turns untyped params into
    namedtuples)."""
    if isinstance(obj, dict):
        return obj.get(name)
    if isinstance(obj, (str, int, float, bool, list)):
        return None
    return getattr(obj, name, None)


def _uri_of(params: Any) -> str | None:
    """The ``textDocument.uri`` of request params, if there is one."""
    td = _field(params, "text_document") or _field(params, "textDocument")
    uri = _field(td, "uri")
    return uri if isinstance(uri, str) else None


def _too_large_diagnostic(message: str) -> types.Diagnostic:
    """What a document over ``livetok.maxDocumentSize`` shows (in place of budget verdicts,
    which need its counts)."""
    p = types.Position(0, 0)
    return types.Diagnostic(range=types.Range(start=p, end=p), message=f"livetok: {message}",
                            severity=types.DiagnosticSeverity.Information, source="livetok",
                            code="too-large")


def _nonneg_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise JsonRpcInvalidParams(f"{what} must be an integer >= 0, got {value!r}")
    return value


class LivetokServer(LanguageServer):
    """The language server: open documents, settings and the coalesced count notifications."""

    protocol: LivetokProtocol

    def __init__(
        self,
        *,
        record_trace: str | None = None,
        position_encoding: str | None = None,
        document_factory: Callable[[str, Any], Any] = Document,
    ) -> None:
        super().__init__(
            "livetok",
            __version__,
            protocol_cls=LivetokProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.settings = Settings()
        #: the thread that loads the default encoding after initialize (see _preload)
        self.preload: threading.Thread | None = None
        self.store = DocumentStore()
        self.codec = PositionCodec("utf-16")
        #: ``--position-encoding``: the unit used whatever the client announces
        self._forced_unit = position_encoding
        self.recorder = TraceRecorder(record_trace) if record_trace else None
        self._factory = document_factory
        self._progress_ok = False
        self._refresh_lenses = False
        self._refresh_semantic = False
        self._dirty: dict[str, None] = {}
        self._dirty_since: float | None = None
        self._flush_scheduled = False
        self._published: dict[str, tuple] = {}
        #: budget files (livetok.toml, [tool.livetok]): diagnostics and lenses of budgets
        self.budgets = BudgetWatch(publish=self._publish_diagnostics)
        self._progress_n = 0
        self.background = Background()
        self.protocol.on_invalid_notification = self._on_invalid_notification
        self._register()

    # -- plumbing --------------------------------------------------------------------------------

    def _register(self) -> None:
        def f(method: str, options: Any = None) -> Callable[[Callable[..., Any]], Any]:
            # pygls tags handlers with attributes, which bound methods cannot carry
            def register(fn: Callable[..., Any]) -> Any:
                if inspect.isgeneratorfunction(fn):
                    def handler(params: Any) -> Any:  # pygls runs generators step by step
                        return (yield from fn(params))
                else:
                    def handler(params: Any) -> Any:
                        return fn(params)

                handler.__name__ = getattr(fn, "__name__", method)
                return self.feature(method, options)(handler)

            return register

        f(types.INITIALIZE)(self._initialize)
        f(types.SHUTDOWN)(self._shutdown)
        f(types.TEXT_DOCUMENT_DID_OPEN)(self._did_open)
        f(types.TEXT_DOCUMENT_DID_CHANGE)(self._did_change)
        f(types.TEXT_DOCUMENT_DID_CLOSE)(self._did_close)
        f(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(self._did_change_configuration)
        f(types.INITIALIZED)(self._initialized)
        f(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(self._did_change_watched_files)
        f(types.TEXT_DOCUMENT_DID_SAVE)(self._did_save)
        f(TOKEN_COUNT)(self._request(self._token_count))
        f(types.TEXT_DOCUMENT_HOVER)(self._request(self._hover))
        f(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))(
            self._request(self._code_lens, lambda od: od.language_id in _MARKDOWN_IDS))
        # with the legend as options, pygls advertises {legend, full: true, range: true}
        f(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, _LEGEND)(
            self._request(self._semantic_full, lambda od: self.settings.semantic_tokens))
        f(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, _LEGEND)(self._request(self._semantic_range))

    def _request(self, fn: Callable[[Any], Any],
                 heavy: Callable[[OpenDocument], bool] | None = None) -> Callable[[Any], Any]:
        """A request handler that answers at once, or, when its document is busy with
        background work, at its place in that document's backlog (see ``background.py``).

        ``heavy(od)`` says when answering takes time linear in a big document (the sections
        of a long Markdown file, semantic tokens of a whole big file): the answer is then
        computed in the worker thread, as a big didOpen is, so other documents are served
        meanwhile; this document's later messages wait for it, in order.

        It is a generator function: pygls runs it synchronously up to its first ``yield``, so
        an answer that needs no waiting goes out before the next message is read.
        """
        mapped = _answers(fn)

        def settle(fut: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
            if not fut.cancelled():
                if outcome[0]:
                    fut.set_result(outcome[1])
                else:
                    fut.set_exception(outcome[1])

        def in_worker(params: Any) -> tuple[bool, Any]:
            try:
                return True, mapped(params)
            except Exception as exc:  # answered as the error it is, on the loop's thread
                return False, exc

        def handler(params: Any) -> Any:
            uri = _uri_of(params)
            if uri is not None and heavy is not None and not self.background.busy(uri):
                od = self.store.find(uri)
                if od is not None and od.length >= self.settings.progress_threshold and heavy(od):
                    fut_w: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                    if self.background.start(uri, functools.partial(in_worker, params),
                                             functools.partial(settle, fut_w)):
                        return (yield _wait_for, (fut_w,), {})
            if uri is None or not self.background.busy(uri):
                return mapped(params)
            fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

            def answer() -> None:
                if fut.cancelled():
                    return
                try:
                    fut.set_result(mapped(params))
                except Exception as exc:
                    fut.set_exception(exc)

            self.background.defer(uri, answer)
            return (yield _wait_for, (fut,), {})

        handler.__name__ = fn.__name__
        return handler

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

    def _encoding(self, uri: str, language_id: str) -> Any:
        # a budget file's rule for the document wins: its verdicts then come from live counts
        name = self.budgets.encoding_for(uri) or self.settings.encoding_for(uri, language_id)
        try:
            return get_encoding(name)
        except Exception as exc:
            self.warn(f"livetok: encoding {name!r} for {uri} is unavailable ({exc}); using "
                      f"{DEFAULT_ENCODING}. Set livetok.encoding to a name the server lists.")
            return get_encoding(DEFAULT_ENCODING)

    def _open_document(self, uri: str, language_id: str, version: int, text: str) -> OpenDocument:
        enc = self._encoding(uri, language_id)
        return OpenDocument(uri, language_id, version, text, enc, self.codec,
                            document_factory=self._factory, warn=self.warn,
                            max_size=self.settings.max_document_size)

    def _doc(self, params: Any) -> OpenDocument:
        td = _field(params, "text_document") or _field(params, "textDocument")
        uri = _field(td, "uri")
        if not isinstance(uri, str):
            raise JsonRpcInvalidParams('params.textDocument.uri must be a string (the document URI)')
        return self.store.get(uri)

    def _on_invalid_notification(self, method: str, params: Any, reason: str) -> None:
        """A notification that failed to decode: a lost change leaves its document out of sync."""
        self.warn(f"livetok: ignored {method} with invalid params ({reason})")
        if method != types.TEXT_DOCUMENT_DID_CHANGE or not isinstance(params, dict):
            return
        td = params.get("textDocument")
        uri = td.get("uri") if isinstance(td, dict) else None
        if not isinstance(uri, str):
            return

        def mark() -> None:
            od = self.store.find(uri)
            if od is None:
                return
            od.out_of_sync = f"a didChange could not be decoded: {reason}"
            self.warn(f"livetok: {od.uri} is out of sync until a full-text change or reopen")

        if self.background.busy(uri):
            self.background.defer(uri, mark)
        else:
            mark()

    # -- lifecycle -------------------------------------------------------------------------------

    def _initialize(self, params: types.InitializeParams) -> None:
        try:
            self.settings = parse_settings(params.initialization_options)
        except SettingsError as exc:
            self.warn(f"livetok: ignoring initializationOptions: {exc}")
        forced = self._forced_unit or self.settings.position_encoding
        if forced is not None:
            # LivetokProtocol.lsp_initialize announces the codec's unit
            unit: Any = types.PositionEncodingKind(forced)
        else:
            unit = ServerCapabilitiesBuilder.choose_position_encoding(params.capabilities)
        self.codec = PositionCodec(str(unit.value if hasattr(unit, "value") else unit))  # type: ignore[arg-type]
        caps = params.capabilities
        self._progress_ok = bool(caps.window and caps.window.work_done_progress)
        ws = caps.workspace
        self._refresh_lenses = bool(ws and ws.code_lens and ws.code_lens.refresh_support)
        self._refresh_semantic = bool(
            ws and ws.semantic_tokens and ws.semantic_tokens.refresh_support)
        self.budgets.initialize(caps)
        self.preload = threading.Thread(
            target=self._preload, args=(self.settings.encoding,), name="livetok-preload",
            daemon=True)
        self.preload.start()

    def _initialized(self, params: Any) -> None:
        if self.budgets.dynamic:  # ask the client to report changes of budget files
            self.client_register_capability(self.budgets.registration())

    def _preload(self, name: str) -> None:
        """Load the default encoding while the client finishes its handshake, so the first
        didOpen does not wait for the vocabulary and its tables (~0.4 s for o200k_base). A didOpen that
        comes sooner waits for this load (``get_encoding`` loads each name once); a failure
        is reported by that didOpen, with the fallback, so here it is only logged."""
        try:
            enc = get_encoding(name)
            # the per-token tables a Document needs, built on first use (~0.1 s for o200k_base)
            getattr(enc, "clean_starts", None)
        except Exception as exc:  # reported again, to the client, when a document needs it
            log.info("livetok: preloading %r failed: %s", name, exc)

    def _shutdown(self, params: Any) -> None:
        self.background.finish_all()  # documents still being tokenized, and what waits on them
        self.flush()  # counts still pending go out before the shutdown answer
        self.save_traces()

    def save_traces(self) -> None:
        """Write the traces of documents still open (``--record-trace``)."""
        if self.recorder is None:
            return
        self.background.finish_all()
        for uri in self.recorder.open_uris():
            od = self.store.find(uri)
            self.recorder.close(uri, od.text() if od is not None else "")

    # -- document sync ---------------------------------------------------------------------------

    @_reports
    def _did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        td = params.text_document
        if self.background.busy(td.uri):
            self.background.defer(td.uri, lambda: self._did_open(params))
            return
        if td.uri in self.store:
            self.warn(f"livetok: {td.uri} opened twice; replacing it with the new text")
            self._close(td.uri)
        big = len(td.text) >= self.settings.progress_threshold
        token = self._progress_begin(td.uri, len(td.text)) if big and self._progress_ok else None
        started = time.perf_counter()
        enc = self._encoding(td.uri, td.language_id)

        def build() -> OpenDocument:
            text: str | list[str] = td.text
            if isinstance(text, TextParts):  # a big didOpen decoded in blocks (bigtext.py)
                try:
                    text = text.join() if self.recorder is not None else text.take()
                except ValueError as exc:  # decoded only now: it was not a JSON string
                    self.warn(f"livetok: ignored the didOpen of {td.uri}: {exc}")
                    raise
            elif self.recorder is None and len(text) >= _HANDOFF_CHARS:
                # subtle: the params give the text up, so that the only reference left is
                # the one handed over (OpenDocument._build_handed drops it before building)
                text, td.text = [text], ""
            return OpenDocument(td.uri, td.language_id, td.version, text, enc, self.codec,
                                document_factory=self._factory, warn=self.warn,
                                max_size=self.settings.max_document_size)

        def opened(od: OpenDocument) -> None:
            if token is not None:
                n = od.doc.token_count if od.doc is not None else 0
                self.protocol.notify(types.PROGRESS, types.ProgressParams(
                    token=token, value=types.WorkDoneProgressEnd(
                        message=f"{n:,} tokens in {time.perf_counter() - started:.1f} s")))
            self.store.add(od)
            if self.recorder is not None:
                self.recorder.open(td.uri, od.text())
            self._mark_dirty(td.uri)
            if not self.budgets.dynamic:  # no file watcher: an opened budget file is re-read
                self._budget_files_changed([td.uri])

        # a big document is tokenized in the worker thread: the others keep being served
        if not (big and self.background.start(td.uri, build, opened)):
            opened(build())

    def _progress_begin(self, uri: str, n_chars: int) -> str:
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

    @_reports
    def _did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if self.background.busy(uri):
            self.background.defer(uri, lambda: self._did_change(params))
            return
        od = self.store.find(uri)
        if od is None:
            self.warn(f"livetok: didChange for {uri}, which is not open; ignored "
                      "(send textDocument/didOpen first)")
            return
        changes = []
        for c in params.content_changes:
            r = getattr(c, "range", None)
            if r is None:
                changes.append(TextChange(c.text))
            else:
                changes.append(TextChange(
                    c.text, (r.start.line, r.start.character, r.end.line, r.end.character)))
        version = params.text_document.version

        def applied(patches: list[Any]) -> None:
            if self.recorder is not None:
                self.recorder.change(uri, patches)
            self._mark_dirty(uri)

        # a huge paste is tokenized in the worker thread, like a big didOpen
        big = sum(len(c.text) for c in changes) >= self.settings.progress_threshold
        if not (big and self.background.start(uri, lambda: od.apply(changes, version), applied)):
            applied(od.apply(changes, version))

    @_reports
    def _did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if self.background.busy(uri):
            self.background.defer(uri, lambda: self._close(uri))
        else:
            self._close(uri)

    def _close(self, uri: str) -> None:
        od = self.store.remove(uri)
        self._dirty.pop(uri, None)
        self.budgets.forget(uri)
        if od is not None and self.recorder is not None:
            self.recorder.close(uri, od.text())
        if self._published.pop(uri, None):
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @_reports
    def _did_change_configuration(self, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if not isinstance(settings, dict) or "livetok" not in settings:
            return  # not ours (clients send every section's changes here)
        try:
            new = parse_settings(settings["livetok"], self.settings)
        except SettingsError as exc:
            self.warn(f"livetok: ignoring the new settings: {exc}")
            return
        old, self.settings = self.settings, new
        self._reencode_all()
        if self._refresh_semantic and new.semantic_tokens != old.semantic_tokens:
            self.protocol.send_request(types.WORKSPACE_SEMANTIC_TOKENS_REFRESH, None)

    @_reports
    def _did_change_watched_files(self, params: types.DidChangeWatchedFilesParams) -> None:
        self._budget_files_changed([c.uri for c in params.changes])

    @_reports
    def _did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        self._budget_files_changed([params.text_document.uri])

    def _budget_files_changed(self, uris: list[str]) -> None:
        """Re-read the budget files among ``uris``; every document's budgets are checked again."""
        if self.budgets.changed(uris):
            self._reencode_all()

    def _reencode_all(self) -> None:
        """After a settings or budget file change: re-check every document (rebuilt where its
        encoding changed); code lenses are asked for again."""
        for od in list(self.store):
            if self.background.busy(od.uri):
                self.background.defer(od.uri, functools.partial(self._reencode, od.uri))
            else:
                self._reencode(od.uri)
        if self._refresh_lenses:
            self.protocol.send_request(types.WORKSPACE_CODE_LENS_REFRESH, None)

    def _reencode(self, uri: str) -> None:
        """Rebuild ``uri`` if its encoding changed (or it was broken); mark it for new counts."""
        od = self.store.find(uri)
        if od is None:
            return
        if self._encoding(od.uri, od.language_id) is not od.encoding or od.doc is None:
            fresh = self._open_document(od.uri, od.language_id, od.version, od.text())
            fresh.out_of_sync = od.out_of_sync
            self.store.add(fresh)
        self._mark_dirty(od.uri)

    # -- coalesced notifications -----------------------------------------------------------------

    def _mark_dirty(self, uri: str) -> None:
        self._dirty[uri] = None
        now = time.monotonic()
        if self._dirty_since is None:
            self._dirty_since = now
        if now - self._dirty_since >= _MAX_COALESCE_S:
            self.flush()
        elif not self._flush_scheduled:
            try:
                asyncio.get_running_loop().call_soon(self.flush)
                self._flush_scheduled = True
            except RuntimeError:  # no loop: called outside a session (unit tests)
                self.flush()

    def flush(self) -> None:
        """Send ``livetok/didChangeTokenCount`` (and budget diagnostics) for changed documents.

        Runs when the input is drained (see ``transport.py``), so a burst of changes costs
        one notification per document.
        """
        self._flush_scheduled = False
        self._dirty_since = None
        dirty, self._dirty = self._dirty, {}
        if self.protocol._shutdown:
            return  # after shutdown the client may already have closed the stream
        for uri in dirty:
            od = self.store.find(uri)
            if od is None or self.background.busy(uri):
                continue  # a busy document is marked dirty again when its work is done
            try:
                info = token_count(od)
            except DocumentUnavailable as exc:
                log.info("no count for %s: %s", uri, exc)
                if od.too_large is not None:
                    self._publish_diagnostics(uri, [_too_large_diagnostic(od.too_large)],
                                              od.version)
                continue
            except Exception:
                log.exception("counting %s failed", uri)
                continue
            self.protocol.notify(DID_CHANGE_TOKEN_COUNT, info.to_json())
            try:
                self._publish_budget(od)
            except Exception:
                log.exception("budget diagnostic for %s failed", uri)

    def _publish_budget(self, od: OpenDocument) -> None:
        # a budget file's verdicts where one covers the document, else livetok.budget's
        self._publish_diagnostics(od.uri, self.budgets.diagnostics(od, self.settings.budget),
                                  od.version)

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

    # -- requests --------------------------------------------------------------------------------

    def _range_cp(self, od: OpenDocument, rng: Any) -> tuple[int, int]:
        """Code point span of a Range given as lsprotocol type or as plain dict."""
        vals = []
        for end in ("start", "end"):
            pos = _field(rng, end)
            if pos is None:
                raise JsonRpcInvalidParams(f"range.{end} is missing: a Range needs start and end")
            for key in ("line", "character"):
                vals.append(_nonneg_int(_field(pos, key), f"range.{end}.{key}"))
        return od.range_to_cp(tuple(vals))  # type: ignore[arg-type]

    def _token_count(self, params: Any) -> dict[str, Any]:
        # custom params arrive as pygls's namedtuples (or dicts): read them field by field
        if params is None or _field(params, "textDocument") is None:
            raise JsonRpcInvalidParams(
                'livetok/tokenCount takes {"textDocument": {"uri": ...}, "range"?: Range}')
        od = self._doc(params)
        rng = _field(params, "range")
        cp_range = self._range_cp(od, rng) if rng is not None else None
        return token_count(od, cp_range).to_json()

    def _hover(self, params: types.HoverParams) -> types.Hover | None:
        od = self._doc(params)
        pos = params.position
        cp = od.to_cp(pos.line, pos.character)
        info = hover(od, cp, pos.line)
        if info is None:
            return None
        start, end = od.to_position(info.start_cp), od.to_position(info.end_cp)
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=info.markdown),
            range=types.Range(start=types.Position(*start), end=types.Position(*end)))

    def _code_lens(self, params: types.CodeLensParams) -> list[types.CodeLens]:
        od = self._doc(params)
        secs = markdown_sections(od) if od.language_id in _MARKDOWN_IDS else None
        out = []
        for lens in self.budgets.lenses(od, code_lenses(od, self.settings, secs)):
            p = types.Position(lens.line, 0)
            out.append(types.CodeLens(range=types.Range(start=p, end=p),
                                      command=types.Command(title=lens.title, command="")))
        return out

    def _semantic_full(self, params: types.SemanticTokensParams) -> types.SemanticTokens:
        od = self._doc(params)
        if not self.settings.semantic_tokens:
            od.ready()
            return types.SemanticTokens(data=[])
        return types.SemanticTokens(data=semantic_tokens(od, 0, od.length))

    def _semantic_range(self, params: types.SemanticTokensRangeParams) -> types.SemanticTokens:
        od = self._doc(params)
        if not self.settings.semantic_tokens:
            od.ready()
            return types.SemanticTokens(data=[])
        r = params.range
        start = od.to_cp(r.start.line, r.start.character)
        end = od.to_cp(r.end.line, r.end.character, clamp=True)
        if start > end:
            raise PositionError(f"range end {r.end} comes before its start {r.start}")
        return types.SemanticTokens(data=semantic_tokens(od, start, end))


def create_server(**kwargs: Any) -> LivetokServer:
    """A new server (``record_trace=DIR`` records edit traces)."""
    return LivetokServer(**kwargs)
