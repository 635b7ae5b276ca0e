"""What the session sends unasked: a document's count (``livetok/didChangeTokenCount``) and its
diagnostics (budget verdicts, or why it is not counted), coalesced: :class:`Publisher`
(``ls.publisher``).

A document that :meth:`Publisher.changed` is published once the input waiting to be read is
handled (at the latest 50 ms into an uninterrupted burst), so a burst of keystrokes costs one
notification (keystroke step 5, :meth:`Publisher.publish`). Diagnostics are sent only when
they differ from the last ones sent for the document.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from livetok.server.lsp import views
from livetok.server.lsp.documents import CountCallback, DocumentUnavailable, Patch
from livetok.server.lsp.protocol import DID_CHANGE_TOKEN_COUNT

if TYPE_CHECKING:
    from livetok.server.lsp.documents import OpenDocument
    from livetok.server.lsp.session import LivetokServer

__all__ = ["Publisher", "count_message", "notice"]

log = logging.getLogger(__name__)

#: a notification burst is published at least this often even if input never pauses
_MAX_COALESCE_S = 0.05


def notice(message: str, code: str,
           severity: types.DiagnosticSeverity = types.DiagnosticSeverity.Information,
           ) -> types.Diagnostic:
    """A diagnostic at the top of a document that says why it is not counted (over
    ``livetok.maxDocumentSize``: ``too-large``; not kept, over the session's limit:
    ``not-kept``), in place of budget verdicts, which need its counts."""
    p = types.Position(0, 0)
    return types.Diagnostic(range=types.Range(start=p, end=p), message=message,
                            severity=severity, source="livetok", code=code)


def count_message(od: OpenDocument) -> str | None:
    """The JSON text of the ``livetok/didChangeTokenCount`` notification of ``od``'s count,
    as ``json.dumps`` writes that message (``views.token_count(od).to_json()`` as its
    params; ``tests/unit/test_keystroke_path.py`` compares them), when the count is the
    plain one: ``od`` is counted, in sync and has no ``livetok.compare`` counts; else None
    (``views.token_count`` says why not, or adds the compared counts). A keystroke's count
    is written from it without a message dict and ``json.dumps`` (``od.uri_json``,
    ``od.encoding_json``).

    Runtime complexity: ``O(len(uri))``.
    """
    if od.doc is None or od.out_of_sync is not None or od.compared:
        return None
    return (f'{{"jsonrpc": "2.0", "method": "{DID_CHANGE_TOKEN_COUNT}", "params": {{'
            f'"uri": {od.uri_json}, "version": {od.version}, "encoding": {od.encoding_json}, '
            f'"tokens": {od.token_count}, "characters": {od.lines.length}}}}}')


class Publisher:
    """The session's coalesced counts and its diagnostics as last sent."""

    def __init__(self, ls: LivetokServer) -> None:
        self._ls = ls
        #: documents to publish: True for their count and diagnostics, False for diagnostics
        self._dirty: dict[str, bool] = {}
        self._dirty_since: float | None = None
        self._publish_scheduled = False
        #: the diagnostics last sent, by document (none sent: absent)
        self._published: dict[str, tuple[Any, ...]] = {}

    @property
    def due(self) -> bool:
        """Whether a document changed since the last :meth:`publish`."""
        return bool(self._dirty)

    def changed(self, uri: str, patches: list[Patch] | None = None, *,
                count: bool = True) -> None:
        """``uri`` changed: its ``patches`` go to the trace (``--record-trace``), and
        :meth:`publish` runs once the input waiting to be read has been handled (at the
        latest 50 ms into an uninterrupted burst), so a burst costs one notification.
        ``count=False``: only its budget diagnostics may have changed (a budget setting).

        Runtime complexity: ``O(1)`` besides recording.
        """
        recorder = self._ls.recorder
        if patches is not None and recorder is not None:
            recorder.change(uri, patches)
        self._dirty[uri] = count or self._dirty.get(uri, False)
        now = time.monotonic()
        if self._dirty_since is None:
            self._dirty_since = now
        if now - self._dirty_since >= _MAX_COALESCE_S:
            self.publish()
        elif self._ls.protocol.reading:
            pass  # the transport calls input_handled() once the input read is handled
        elif not self._publish_scheduled:
            try:
                asyncio.get_running_loop().call_soon(self.publish)
                self._publish_scheduled = True
            except RuntimeError:  # no loop: called outside a session (unit tests)
                self.publish()

    def input_handled(self) -> None:
        """The transport handled the input it read: what changed meanwhile is published now,
        in the same turn of the event loop (no callback scheduled for it).

        Runtime complexity: ``O(1)`` when nothing changed, else :meth:`publish`'s.
        """
        if self._dirty:
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
        ls = self._ls
        if ls.protocol._shutdown:
            return  # after shutdown the client may already have closed the stream
        for uri, count in dirty.items():
            od = ls.store.find(uri)
            if od is None or ls.background.busy(uri):
                continue  # a busy document is marked changed again when its work is done
            if not count:
                if od.doc is not None and od.out_of_sync is None:
                    self.budgets(od)
                continue
            message = count_message(od)
            if message is not None:  # the plain count: its text made here
                ls.protocol.write_json(message)
            else:
                try:
                    info = views.token_count(od)
                except DocumentUnavailable as exc:
                    log.info("no count for %s: %s", uri, exc)
                    if od.too_large is not None:
                        self.diagnostics(
                            uri, [notice(f"livetok: {od.too_large}", "too-large")], od.version)
                    continue
                except Exception:
                    log.exception("counting %s failed", uri)
                    continue
                ls.protocol.notify_json(DID_CHANGE_TOKEN_COUNT, info.to_json())
            self._after_count(od)

    def publish_now(self, od: OpenDocument) -> None:
        """Keystroke step 5 for a keystroke read alone (``sync.did_change_json``'s lane, when
        nothing else waits to be published): ``od``'s count written at once, as
        :meth:`publish` writes it, from its text (:func:`count_message`: the lane takes
        only documents whose count is the plain one), then its budget diagnostics.

        Runtime complexity: ``O(1)``, plus the budget check when a budget can cover ``od``.
        """
        message = count_message(od)
        assert message is not None, "publish_now: a count views.token_count must make"
        self._ls.protocol.write_json(message)
        self._after_count(od)

    def _after_count(self, od: OpenDocument) -> None:
        """After ``od``'s count: its budget diagnostics, when a budget can give it some."""
        ls = self._ls
        # whether a budget file can cover the document was decided when it opened (or when a
        # budget file or setting changed since): most keystrokes check nothing (and a
        # document with diagnostics shown gets them cleared or renewed)
        if (ls.settings.budget is not None or od.uri in self._published
                or ls.budgets.may_cover(od.uri)):
            self.budgets(od)

    def budgets(self, od: OpenDocument) -> None:
        """Publish ``od``'s budget diagnostics (when they differ from the last ones sent): a
        budget file's verdicts where one covers the document, else ``livetok.budget``'s."""
        ls = self._ls
        try:
            self.diagnostics(od.uri, ls.budgets.diagnostics(od, ls.settings.budget), od.version)
        except Exception:
            log.exception("budget diagnostic for %s failed", od.uri)

    def diagnostics(self, uri: str, diagnostics: list[types.Diagnostic],
                    version: int | None = None) -> None:
        """Publish ``uri``'s diagnostics when they differ from the last ones sent."""
        key = tuple((d.range, d.message, d.severity) for d in diagnostics)
        if self._published.get(uri, ()) == key:
            return
        if key:
            self._published[uri] = key
        else:
            self._published.pop(uri, None)
        self._ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=diagnostics))

    def first_count(self, uri: str, version: int, encoding: str) -> CountCallback:
        """The ``on_count`` of a didOpen built in the worker thread: the exact count of the
        text goes to the client as soon as the encode pass has it, before the document's
        token sequence and line index are built (which the document's backlog waits for)."""
        ls = self._ls

        def send(tokens: int, characters: int) -> None:
            if not ls.protocol._shutdown:
                ls.protocol.notify_json(DID_CHANGE_TOKEN_COUNT, views.CountInfo(
                    uri, version, encoding, tokens, characters).to_json())

        def post(tokens: int, characters: int) -> None:
            try:
                ls.background.post(lambda: send(tokens, characters))
            except RuntimeError:  # the loop is closed (shutdown): nobody to tell
                log.info("no early count for %s: the event loop is closed", uri)

        return post

    def forget(self, uri: str) -> None:
        """``uri`` was closed: nothing more is published for it, and its diagnostics shown
        are cleared.

        Runtime complexity: ``O(1)``.
        """
        self._dirty.pop(uri, None)
        if self._published.pop(uri, None):
            self._ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def clear(self) -> None:
        """The session ended (``LivetokServer.release``): nothing more is published."""
        self._dirty.clear()
        self._published.clear()
