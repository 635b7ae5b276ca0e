"""Slow work on one document in a worker thread, while the server keeps serving the others.

The first tokenization of a big file and a huge paste take seconds (a 10 MB document: about
as long as ``Encoding.encode`` of it). Run on the event loop, they would hold up every other
document's keystrokes for that long. :class:`Background` runs such work in one worker thread
and marks the document *busy* until it is done:

- every message about a busy document (changes, close, reopen, requests) waits in that
  document's backlog and runs, in arrival order, when the work is done; a request's answer is
  computed at its place in the backlog, so it sees exactly the changes sent before it, as
  when nothing is busy;
- messages about other documents are handled at once;
- a document's ``didChange`` messages that wait next to each other in its backlog are merged
  (``defer(..., merges=True)``): before any other message of the backlog runs, ``settle(uri)``
  applies the changes gathered so far, in one batch (``pending.py``).

Python threads share one interpreter lock: the worker gives it up every few milliseconds
(``sys.getswitchinterval``) except inside one long C call (the regex split of a whole paste),
so other documents wait milliseconds, at worst a fraction of a second, instead of the whole
tokenization.

The worker is a daemon thread (:class:`_Worker`), started when work comes and gone when none is
left: the interpreter joins a ``ThreadPoolExecutor``'s threads at exit, so an ``exit`` during
a 30 s tokenization kept the process for those 30 s; a daemon thread never keeps it, and a
finished session leaves no thread behind: at its end (:meth:`Background.close`) the work not
started is dropped, the work running has its result dropped when it ends (a build cannot be
stopped halfway), and the thread ends then.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable, Generic, TypeVar

__all__ = ["Background"]

log = logging.getLogger(__name__)

#: what one job's work returns and its ``done`` receives
T = TypeVar("T")


class _Worker:
    """Runs submitted work in order in one daemon thread, started by :meth:`submit` when none
    is running and ended when nothing is left to run.

    Runtime complexity: ``O(1)`` per :meth:`submit`, plus a thread start after an idle spell.
    """

    #: the worker thread's name (:meth:`Background.in_worker` recognises it)
    NAME = "livetok-bg"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[tuple[Future[Any], Callable[[], Any]]] = deque()
        self._running = False

    def submit(self, fn: Callable[[], T]) -> Future[list[T]]:
        """Run ``fn()`` after the work submitted before; its error, or its result in a box
        (a one-item list) that the taker empties, goes to the future."""
        future: Future[list[T]] = Future()
        with self._lock:
            self._queue.append((future, fn))
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name=self.NAME, daemon=True).start()
        return future

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._running = False
                    return
                future, fn = self._queue.popleft()
            if future.set_running_or_notify_cancel():
                box: list[Any] = []
                error: BaseException | None = None
                try:
                    box.append(fn())
                except BaseException as exc:  # the caller's to report, as an executor does
                    error = exc
                # subtle: the work (and what it held: a paste's text) is dropped before the
                # result is handed over, and the result travels in a box that the event loop
                # empties: this thread never holds a document the loop is done with (a closed
                # document's memory is given back at once, ``LivetokServer.close``)
                del fn
                if error is None:
                    future.set_result(box)
                else:
                    future.set_exception(error)
                del box, error
            del future

    def drop_queued(self) -> None:
        """Cancel the work not started yet (its future is cancelled, its closure dropped); the
        work running now goes on, and the thread ends after it."""
        with self._lock:
            queued, self._queue = self._queue, deque()
        for future, _fn in queued:
            future.cancel()
        del queued


def _ignore(_result: Any) -> None:
    """The ``done`` of a job whose session ended."""


class _Job(Generic[T]):
    __slots__ = ("future", "done", "handled")

    def __init__(self, future: Future[list[T]], done: Callable[[T], None]) -> None:
        self.future = future
        self.done = done
        self.handled = False


class Background:
    """Busy documents, their backlogs, and the worker thread.

    Every method runs on the event loop's thread, except the ``work`` given to :meth:`start`.
    """

    def __init__(self, settle: Callable[[str], None] | None = None) -> None:
        #: ``(fn, merges)`` per busy document, in arrival order
        self._backlog: dict[str, deque[tuple[Callable[[], None], bool]]] = {}
        #: run before a deferred message that does not merge (see the module's docstring)
        self._settle = settle
        self._jobs: dict[str, _Job[Any]] = {}  # each job has its own result type
        self._worker = _Worker()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: set by :meth:`close`: the session ended, results are dropped
        self._closed = False
        self._on_idle: Callable[[], None] | None = None

    @staticmethod
    def in_worker() -> bool:
        """True in the worker thread (where nothing may write to the client directly)."""
        return threading.current_thread().name.startswith(_Worker.NAME)

    def post(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` soon on the event loop's thread (callable from the worker)."""
        assert self._loop is not None
        if not self._closed:  # after the session's end nobody is told anything
            self._loop.call_soon_threadsafe(fn)

    def busy(self, uri: str) -> bool:
        """Whether work on ``uri`` is running, so messages about it must :meth:`defer`."""
        return uri in self._backlog

    def busy_uris(self) -> list[str]:
        return list(self._backlog)

    def defer(self, uri: str, fn: Callable[[], None], *, merges: bool = False) -> None:
        """Run ``fn()`` after the work on ``uri`` and after what was deferred before it;
        ``merges``: ``fn`` gathers a didChange with those around it (no ``settle`` before it)."""
        self._backlog[uri].append((fn, merges))

    def start(self, uri: str, work: Callable[[], T], done: Callable[[T], None]) -> bool:
        """Run ``work()`` in the worker, then ``done(result)`` on the event loop, then the backlog.

        Returns False, doing nothing, when no event loop is running (direct calls in unit
        tests): the caller then does the work itself. ``work`` must touch nothing but the
        document it is for; if it raises, the error is logged and ``done`` is not called.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        assert uri not in self._backlog, f"{uri} is already busy"
        self._loop = loop
        self._backlog[uri] = deque()
        job = _Job(self._worker.submit(work), done)
        self._jobs[uri] = job
        asyncio.wrap_future(job.future, loop=loop).add_done_callback(
            lambda _f: self._finish(uri, job))
        return True

    def _finish(self, uri: str, job: _Job[Any]) -> None:
        if job.handled:
            return
        job.handled = True
        if self._jobs.get(uri) is job:
            del self._jobs[uri]
        if self._closed:
            self._drop_result(job)
            return
        try:
            result = job.future.result().pop()  # taken out of its box (see _Worker._run)
        except Exception:
            log.exception("background work on %s failed", uri)
        else:
            try:
                job.done(result)
            except Exception:
                log.exception("finishing background work on %s failed", uri)
        self._drain(uri)

    def _drain(self, uri: str) -> None:
        backlog = self._backlog.pop(uri, deque())
        while backlog:
            fn, merges = backlog[0]
            if not merges and self._settle is not None:
                try:
                    self._settle(uri)  # the changes gathered before it, applied
                except Exception:
                    log.exception("applying the changes of %s failed", uri)
                if uri in self._backlog:  # they went to the worker: fn waits for them
                    self._backlog[uri].extendleft(reversed(backlog))
                    return
            backlog.popleft()
            try:
                fn()
            except Exception:
                log.exception("a deferred message about %s failed", uri)
            if uri in self._backlog:
                # fn started new work on this document: what is left waits for it, ahead of
                # anything that arrives later
                self._backlog[uri].extendleft(reversed(backlog))
                return

    def close(self, on_idle: Callable[[], None] | None = None) -> None:
        """At the end of the session: the backlogs and the work not started are dropped, and
        the work running now has its result dropped when it ends (its ``done`` is not called:
        a document built for a session that is gone is never stored); the worker thread ends
        with that work. ``on_idle()`` runs on the event loop when the last dropped result is
        gone (the memory it held can go back to the system); not at all when nothing ran.

        Runtime complexity: ``O(jobs + deferred messages)``.
        """
        self._closed = True
        self._on_idle = on_idle
        self._backlog.clear()
        self._worker.drop_queued()  # their futures are cancelled: _finish drops them too

    def _drop_result(self, job: _Job[Any]) -> None:
        """After :meth:`close`: forget what ``job`` made, then ``on_idle`` once none is left."""
        job.done = _ignore
        future = job.future
        if future.done() and not future.cancelled() and future.exception() is None:
            future.result().clear()  # the box emptied: the result's memory is freed here
        if not self._jobs and self._on_idle is not None:
            on_idle, self._on_idle = self._on_idle, None
            on_idle()

    def finish_all(self) -> None:
        """Wait for every job and run what waits on it, in this thread (at shutdown)."""
        while self._jobs:
            uri, job = next(iter(self._jobs.items()))
            try:
                job.future.result()
            except Exception:
                pass  # logged by _finish
            self._finish(uri, job)
