"""The livetok language server: the state of a session (:class:`LivetokServer`), made of parts
it holds, each with its own module and public API:

=====================  ===========================  ==========================================
``ls.encodings``       :mod:`.encodings`            a document's encoding: choice, trust, load
``ls.compared``        :mod:`.compare_session`      ``livetok.compare``'s encodings
``ls.admission``       :mod:`.admission`            the session's size bound; big-open progress
``ls.reencoder``       :mod:`.reencode`             what a settings change rebuilds
``ls.publisher``       :mod:`.publishing`           coalesced counts and diagnostics
``ls.budgets``         :mod:`.budget_watch`         budget files
``ls.pending``         :mod:`.pending`              didChanges read and not applied yet
``ls.background``      :mod:`.background`           the worker thread and busy documents
``ls.store``           :mod:`.store`                the open documents
=====================  ===========================  ==========================================

The session's lifecycle is :class:`.lifecycle.SessionProtocol`'s (re-exported here).

Handlers are plain functions ``handler(ls, params)`` under ``@feature(METHOD)``, as in
pygls's examples: :mod:`.handlers` holds the decorators (a server is made per connection, so
they record the handlers and each :class:`LivetokServer` registers them when it is created),
:mod:`.sync` the lifecycle and document-sync notifications, :mod:`.requests` the requests. A
didChange passes through five functions (``docs/architecture.md``): from
``SessionProtocol.take_notification``, ``sync.did_change_json`` -> ``OpenDocument.apply`` ->
``Document.edit_at`` / ``Document.edit`` -> ``TokenSeq.replace``, then ``Publisher.publish``
once the input waiting to be read is handled; a keystroke read alone takes
``did_change_json``'s lane (``OpenDocument.keystroke``, ``Publisher.publish_now``).

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
document such an encoding rebuilds it the same way (``reencode.py``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, cast

from lsprotocol import types
from pygls.exceptions import FeatureNotificationError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from livetok.incremental import Document, PieceEncoding

from livetok.server.lsp import requests, sync, workspace_counts as workspace  # noqa: F401  (they register their handlers)
from livetok.server.lsp.admission import Admission
from livetok.server.lsp.background import Background
from livetok.server.lsp.budget_watch import BudgetWatch
from livetok.server.lsp.compare_session import Comparisons
from livetok.server.lsp.documents import (
    CountCallback,
    DocumentFactory,
    EncodingChoice,
    DocumentUnavailable,
    EarlyDocument,
    OpenDocument,
    Patch,
)
from livetok.server.lsp.encodings import Encodings
from livetok.server.lsp.handlers import FEATURES, uri_of
from livetok.server.lsp.lifecycle import FAILED, SessionProtocol
from livetok.server.lsp.memory import collect_ended_sessions, return_free_memory
from livetok.server.lsp.pending import PendingChanges
from livetok.server.lsp.store import DocumentStore
from livetok.server.lsp.positions import PositionCodec, Unit
from livetok.server.lsp.publishing import Publisher
from livetok.server.lsp.reencode import Reencoder
from livetok.server.lsp.settings import Settings
from livetok.server.lsp.trace_recorder import TraceRecorder
from livetok.server.version import livetok_version

if TYPE_CHECKING:
    from pygls.server import ServerErrors

__all__ = ["LivetokServer", "SessionProtocol", "create_server"]

log = logging.getLogger(__name__)

#: a document at least this long gives its memory back to the system (``malloc_trim``)
#: when it is closed or its text replaced: else the process keeps it, unused
_TRIM_CHARS = 1 << 20

__version__ = livetok_version()


class LivetokServer(LanguageServer):
    """The language server: its settings and documents, and the parts that act on them."""

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
        #: the thread that loads the default encoding after initialize (``Encodings.preload``)
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
        self.publisher = Publisher(self)
        #: budget files (livetok.toml, [tool.livetok]): diagnostics and lenses of budgets
        self.budgets = BudgetWatch(publish=self.publisher.diagnostics)
        self.encodings = Encodings(self)
        self.compared = Comparisons(self)
        self.admission = Admission(self)
        self.reencoder = Reencoder(self)
        #: didChanges read and not applied yet (``pending.py``)
        self.pending = PendingChanges(self)
        self.background = Background(settle=self.pending.apply)
        #: the stdio front's documents, until their didOpen is handled (:meth:`early_document`)
        self._early: dict[str, EarlyDocument] = {}
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
        self.warn(FAILED.format(error))

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
                self.warn(FAILED.format(f"{type(exc).__name__}: {exc}"))

        self.background.defer(uri, run, merges=merges)

    # -- documents -------------------------------------------------------------------------------

    def open_document(self, uri: str, language_id: str, version: int, text: str | list[str],
                      enc: PieceEncoding | None = None,
                      on_count: CountCallback | None = None,
                      choice: EncodingChoice | None = None,
                      built: OpenDocument | None = None) -> OpenDocument:
        """A new :class:`OpenDocument` with this server's codec, factory and limits (and
        ``enc``, else the encoding of ``choice``, else of the document's ``Encodings.choice``;
        ``built``: the stdio front's ``OpenDocument`` of ``text``)."""
        if enc is None:
            choice = choice or self.encodings.choice(uri, language_id)
            enc = self.encodings.load(choice, uri)
        return OpenDocument(uri, language_id, version, text, enc, self.codec,
                            document_factory=self.factory, warn=self.warn,
                            max_size=self.settings.max_document_size, on_count=on_count,
                            choice=choice, built=built,
                            compare=self.compared.encodings() if self.settings.compare else ())

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

    def document(self, params: Any) -> OpenDocument:
        """The open document a request is about, or the error that says why not."""
        uri = uri_of(params)
        if uri is None:
            raise JsonRpcInvalidParams('params.textDocument.uri must be a string (the document URI)')
        why = self.admission.why(uri)
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
        self.admission.forget(uri)
        self.budgets.forget(uri)
        if od is not None and self.recorder is not None:
            self.recorder.close(uri, od.text())
        self.publisher.forget(uri)
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
        self.publisher.clear()
        self.admission.clear()
        if big:
            return_free_memory()

    def applied(self, od: OpenDocument, length_before: int, patches: list[Patch]) -> None:
        """After ``od``'s changes (``patches``): the session's size limit, the memory a big
        replaced text held, and ``Publisher.changed``.

        Runtime complexity: ``O(1)``, plus ``O(len(patches))`` for a big document.
        """
        length = od.lines.length
        self.store.chars += length - length_before
        if self.max_open_chars is not None and length > length_before:
            why = self.admission.not_kept(od.uri, length)
            if why is not None:
                self.admission.drop(od.uri, why)
                return
        if length_before >= _TRIM_CHARS and any(p.n_deleted >= _TRIM_CHARS for p in patches):
            return_free_memory()  # a big text replaced (the demo's samples)
        self.publisher.changed(od.uri, patches)

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


def create_server(**kwargs: Any) -> LivetokServer:
    """A new server (``record_trace=DIR`` records edit traces)."""
    return LivetokServer(**kwargs)
