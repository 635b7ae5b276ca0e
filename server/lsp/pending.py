"""A document's ``didChange`` messages that the server read while earlier work ran, applied
together: the server keeps up with the typist.

The transport reads input in large chunks and handles the messages of a chunk back to back
(``transport.py``). When one keystroke costs 80 ms (``o200k_base`` on a digit line: every
later three-digit group moves), the keys typed meanwhile arrive in one chunk; applied in turn,
twenty keys at 100 ms cost 1.6 s of work and the last count came 584 ms after the last key.
Here a ``didChange`` of a document whose last batch took :data:`MERGE_S` or more only adds its
changes to the document's pending batch (:meth:`PendingChanges.add`; a quick one is applied
as it comes, as before); the batch is applied, in one ``OpenDocument.apply`` (which gathers
changes near each other into one re-tokenization, ``region.py``), when:

- the messages read so far are handled (a callback the event loop runs before it reads on);
- any other message arrives (``SessionProtocol.handle_message``), or a request reads the
  document (``LivetokServer.document``), or a message deferred in a busy document's backlog
  runs (``Background``'s ``settle``): a request sees exactly the changes sent before it.

A batch that is big (as big as a huge paste), that starts on a line of :data:`LONG_LINE`
code points or more (until one there was quick), or that follows one that took
:data:`SLOW_APPLY_S` or more runs in the worker thread (``background.py``), so other documents
and requests are not held up behind it; the document's messages wait in its backlog
meanwhile, where its ``didChange`` messages merge again into the next batch. Every count the
server publishes is that of the version its batch ended with (``docs/protocol.md``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import TYPE_CHECKING, Any

from livetok.server.lsp.documents import OpenDocument, Patch, TextChange

if TYPE_CHECKING:
    from livetok.server.lsp.session import LivetokServer

__all__ = ["LONG_LINE", "MERGE_S", "PendingChanges", "SLOW_APPLY_S"]

log = logging.getLogger(__name__)

#: a document whose last batch took less than this applies a didChange as it comes (waiting
#: for the messages after it cost a loop turn, ~10-30 % of such a keystroke); a slower one
#: gathers the didChanges read with it into one batch
MERGE_S = 0.002
#: a document whose last batch took this long applies its next one in the worker thread
SLOW_APPLY_S = 0.02
#: a batch that starts on a line this long runs in the worker thread until one such batch
#: took less than :data:`SLOW_APPLY_S`: the first edit of a long piece can take seconds (a
#: 50,000-digit line under ``o200k_base``: 2.4 s, its piece cache cold), which must not hold
#: up the other documents, while a quick one pays the thread's hand-over (up to a switch
#: interval of the interpreter lock, 5 ms) for nothing
LONG_LINE = 1 << 13


class PendingChanges:
    """The changes read but not applied yet, per document, and when they are applied.

    Every method runs on the event loop's thread.

    Runtime complexity: :meth:`add` ``O(changes)``; applying, one ``OpenDocument.apply``.
    """

    def __init__(self, server: LivetokServer) -> None:
        self._server = server
        #: ``uri -> [document, changes, last version, code points inserted]``
        self._batches: dict[str, list[Any]] = {}
        self._scheduled = False

    def __bool__(self) -> bool:
        return bool(self._batches)

    def add(self, od: OpenDocument, version: int, changes: list[TextChange],
            inserted: int, *, found: bool = False) -> None:
        """Add a ``didChange`` of ``od`` (``inserted`` code points in all) to its batch;
        without a running event loop (direct calls in tests) the batch is applied now.
        ``found``: the caller found ``od`` open at its URI and not busy, just now."""
        batch = self._batches.get(od.uri)
        if batch is not None and batch[0] is not od:  # another document at that URI since
            self.apply(od.uri)  # (not expected)
            batch = None
        if batch is None:
            if od.apply_seconds < MERGE_S:  # quick to apply: now, as it comes
                self._apply(od, changes, version, inserted, False, found=found)
                return
            self._batches[od.uri] = [od, changes, version, inserted]
        else:
            batch[1].extend(changes)
            batch[2] = version
            batch[3] += inserted
        if self._scheduled:
            return
        try:
            asyncio.get_running_loop().call_soon(self.apply_all)
            self._scheduled = True
        except RuntimeError:  # no loop: called outside a session (unit tests)
            self.apply_all()

    def apply_all(self, *, inline: bool = False) -> None:
        """Apply every document's batch (``inline``: on this thread, never in the worker)."""
        self._scheduled = False
        for uri in list(self._batches):
            self.apply(uri, inline=inline)

    def drop(self, uri: str) -> None:
        """Forget ``uri``'s batch (its document is closed)."""
        self._batches.pop(uri, None)

    def clear(self) -> None:
        self._batches.clear()

    def apply(self, uri: str, *, inline: bool = False) -> None:
        """Apply ``uri``'s batch: in the worker thread when it is big, starts on a line of
        :data:`LONG_LINE` or more or the last one was slow (unless ``inline``), else now;
        then the count is published
        (``LivetokServer.applied``). A failure is logged and told to the user, as a
        handler's is."""
        batch = self._batches.pop(uri, None)
        if batch is None:
            return
        od: OpenDocument = batch[0]
        changes: list[TextChange] = batch[1]
        version: int = batch[2]
        inserted: int = batch[3]
        del batch
        self._apply(od, changes, version, inserted, inline)

    def _apply(self, od: OpenDocument, changes: list[TextChange], version: int, inserted: int,
               inline: bool, *, found: bool = False) -> None:
        """:meth:`apply` of a batch taken out of :attr:`_batches` (or never put there: a quick
        document's didChange, :meth:`add`; ``found`` as there)."""
        ls = self._server
        uri = od.uri
        if not found:  # (a keystroke's document was looked up a moment ago)
            if ls.store.find(uri) is not od:
                return  # closed or replaced meanwhile: its changes went with it
            if ls.background.busy(uri):  # not expected (work starts after a flush): it waits
                ls.background.defer(uri, functools.partial(self.add, od, version, changes,
                                                           inserted), merges=True)
                return
        before = od.lines.length
        rng = changes[0].range if changes else None  # (an empty didChange only has a version)
        if rng is not None and rng[0] < od.lines.line_count:  # the batch's first line
            line_start, line_end, _flags = od.lines.span_flags(rng[0])
        else:
            line_start = line_end = 0
        long = line_end - line_start >= LONG_LINE
        if not inline and (od.apply_seconds >= SLOW_APPLY_S
                           or inserted >= ls.settings.progress_threshold  # a huge paste
                           or long and (od.long_line_seconds is None
                                        or od.long_line_seconds >= SLOW_APPLY_S)):
            work = functools.partial(_timed_apply, od, changes, version, long)
            del changes  # subtle: the worker's work holds them, nothing else
            if ls.background.start(uri, work, functools.partial(ls.applied, od, before)):
                return
            changes = work.args[1]
        started = time.perf_counter()
        try:
            patches = od.apply(changes, version)
        except Exception as exc:
            log.exception("applying the changes of %s failed", uri)
            ls.warn(f"livetok: handling a notification failed ({type(exc).__name__}: {exc}); "
                    "the server keeps running")
            return
        finally:
            od.apply_seconds = time.perf_counter() - started
            if long:
                od.long_line_seconds = od.apply_seconds
        ls.applied(od, before, patches)


def _timed_apply(od: OpenDocument, changes: list[TextChange], version: int,
                 long: bool) -> list[Patch]:
    """``od.apply``, keeping how long it took (runs in the worker thread for a slow one)."""
    started = time.perf_counter()
    try:
        return od.apply(changes, version)
    finally:
        od.apply_seconds = time.perf_counter() - started
        if long:
            od.long_line_seconds = od.apply_seconds
