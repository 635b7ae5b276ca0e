"""``livetok/workspaceCounts``: the workspace token map for the editor (``docs/protocol.md``).

The request answers per-file counts and per-folder totals of the workspace folders
(:class:`livetok.server.workspace.tokenmap.WorkspaceMap`, the map ``livetok count -r``
prints) in one encoding: the one the params name, else the document's they name, else the
settings' default. What is computed is the ``workspace`` room's; this module translates and
schedules:

- **Off the event loop.** A folder's map is built by one worker thread of the session (a
  daemon: an ``exit`` never waits for it), with forked processes when cores are spare
  (``LIVETOK_OPEN_JOBS``, as a big didOpen). The request waits for it at most ``wait``
  milliseconds (default :data:`WAIT_MS`) and then answers with what is counted so far and
  ``"complete": false``; ``livetok/didChangeWorkspaceCounts`` tells the client when a map is
  complete, or changed, so it asks again. An encoding's identity (a ``tokenizer.json``'s
  SHA-256, by :func:`livetok.server.trust.file_sha256`) and its count caches are found and
  read in a thread too.
- **Trust.** The map's encoding passes the trust rule that documents pass
  (:meth:`.Encodings.refusal`): one named in the request and refused is an invalid-params
  error; the settings' default, refused, is replaced by the default encoding, the user told
  why as for a document. Every workspace folder is the workspace, one added later too
  (``workspace/didChangeWorkspaceFolders``: the open documents' encodings are chosen again).
- **Open documents** show their live count in place of their file's when they are counted in
  the map's encoding (the common case: the map takes the document's encoding).
- **Watched files.** The first request asks the client, when it can (dynamic registration),
  to report changes of every file (``workspace/didChangeWatchedFiles``, ``**/*``): a changed
  file is read and counted again (its cached count when its bytes are known) and its folders'
  totals follow; a ``.gitignore`` or budget file change builds the map again from the cache.
- **The log.** When a map is built, the entries left out (ignored, binary, too large, ...)
  are sent to the client's log (``window/logMessage``, type Log), with their reasons.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from livetok.server import trust
from livetok.server.lsp.budget_watch import path_of
from livetok.server.lsp.answers import field_of
from livetok.server.lsp.handlers import feature
from livetok.server.lsp.protocol import REQUEST_FAILED
from livetok.server.parallel_open import open_jobs
from livetok.server.workspace.count_store import encoding_identity
from livetok.server.workspace.counting import Encodings
from livetok.server.workspace.tokenmap import WorkspaceMap

if TYPE_CHECKING:
    from livetok.server.lsp.session import LivetokServer

__all__ = ["DID_CHANGE_WORKSPACE_COUNTS", "WAIT_MS", "WORKSPACE_COUNTS"]

log = logging.getLogger(__name__)

WORKSPACE_COUNTS = "livetok/workspaceCounts"
DID_CHANGE_WORKSPACE_COUNTS = "livetok/didChangeWorkspaceCounts"
#: how long a request waits for a map being built before answering with what it has
WAIT_MS = 2000
_MAX_WAIT_MS = 60_000
_REGISTRATION_ID = "livetok/workspaceFiles"
#: maps kept per session (a folder in an encoding each); the least recently asked go
_MAX_MAPS = 8
#: entries left out listed in the client's log per build
_MAX_LOGGED = 200


class _Worker:
    """One daemon thread running jobs in order (an ``exit`` does not wait for it, as it
    would for a ``ThreadPoolExecutor``'s)."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = \
            queue.Queue()
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._jobs.put((job, fut))
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="livetok-map", daemon=True)
            self._thread.start()
        return fut

    def _run(self) -> None:
        while True:
            job, fut = self._jobs.get()
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(job())
            except BaseException as exc:  # the request answers with it
                fut.set_exception(exc)


class _Service:
    """One session's maps, their builds and the watched-file changes waiting for them."""

    def __init__(self, ls: LivetokServer, loop: asyncio.AbstractEventLoop) -> None:
        self.ls = weakref.ref(ls)
        self.loop = loop
        self.worker = _Worker()
        #: (folder, encoding name) -> its map and the future of its last build or refresh
        self.maps: dict[tuple[Path, str], tuple[WorkspaceMap, concurrent.futures.Future[Any]]] = {}
        self.encodings: dict[str, Encodings] = {}
        self.identities: dict[str, str] = {}
        self.registered = False
        self._pending: set[Path] = set()
        self._lock = threading.Lock()

    def map_for(self, folder: Path, name: str) -> tuple[WorkspaceMap, concurrent.futures.Future[Any]]:
        """The map of ``folder`` in ``name``, its build started (in the worker) if new."""
        key = (folder, name)
        with self._lock:
            got = self.maps.pop(key, None)
        if got is None:
            # the request loaded the encodings (in a thread) before asking for a map
            m = WorkspaceMap(folder, self.encodings[name], jobs=open_jobs())
            got = (m, self.worker.submit(lambda: self._built(m)))
        with self._lock:
            while len(self.maps) >= _MAX_MAPS:
                del self.maps[next(iter(self.maps))]
            self.maps[key] = got  # now the most recently asked
        return got

    def forget(self, fut: concurrent.futures.Future[Any]) -> None:
        """Drop the map whose build ended with ``fut`` (it failed: asked again, rebuilt)."""
        with self._lock:
            self.maps = {k: v for k, v in self.maps.items() if v[1] is not fut}

    def _built(self, m: WorkspaceMap) -> None:
        m.build()
        self._post(lambda ls: _log_skipped(ls, m))
        self._post(lambda ls: _notify(ls, [m]))

    def changed(self, paths: list[Path]) -> None:
        """Files changed on disk: the maps holding them are brought up to date in the worker
        (changes that come meanwhile are taken in the same run)."""
        with self._lock:
            first = not self._pending
            self._pending.update(paths)
        if first:
            self.worker.submit(self._refresh)

    def _refresh(self) -> None:
        with self._lock:
            paths, self._pending = self._pending, set()
            maps = [m for m, _fut in self.maps.values()]
        touched = []
        for m in maps:
            if any(p == m.root or m.root in p.parents for p in paths):
                m.refresh(paths)
                touched.append(m)
        if touched:
            self._post(lambda ls: _notify(ls, touched))

    def _post(self, fn: Callable[[LivetokServer], None]) -> None:
        """Run ``fn(ls)`` on the event loop (from the worker), unless the session is over."""
        def run() -> None:
            ls = self.ls()
            if ls is not None and not ls.protocol._shutdown:
                fn(ls)
        try:
            self.loop.call_soon_threadsafe(run)
        except RuntimeError:  # the loop is closed: nobody to tell
            pass

    def identity(self, name: str) -> str | None:
        """:func:`.cache.encoding_identity` of ``name`` as :meth:`learn` found it (None:
        unknown, or not found yet); never computed here, on the event loop."""
        return self.identities.get(name)

    async def learn(self, names: set[str]) -> None:
        """Find the identities of ``names`` not known yet, in a thread: a ``tokenizer.json``'s
        is its bytes' SHA-256, which takes its size's time (bounded, a regular file only:
        :func:`livetok.server.trust.file_sha256`)."""
        for name in names - self.identities.keys():
            try:
                self.identities[name] = await asyncio.to_thread(encoding_identity, name)
            except (OSError, ValueError) as exc:
                log.info("livetok: no identity for %r: %s", name, exc)


_SERVICES: weakref.WeakKeyDictionary[Any, _Service] = weakref.WeakKeyDictionary()


def _service(ls: LivetokServer) -> _Service:
    svc = _SERVICES.get(ls)
    if svc is None:
        svc = _SERVICES[ls] = _Service(ls, asyncio.get_running_loop())
    return svc


def _notify(ls: LivetokServer, maps: list[WorkspaceMap]) -> None:
    ls.protocol.notify_json(DID_CHANGE_WORKSPACE_COUNTS,
                            {"folders": sorted({m.root.as_uri() for m in maps})})


def _log_skipped(ls: LivetokServer, m: WorkspaceMap) -> None:
    """The entries the map left out, with their reasons, in the client's log."""
    with m.lock:
        items = sorted(m.skipped.items())
    if not items:
        return
    lines = [f"livetok: workspace map of {m.root}: {len(items):,} entries left out"]
    lines += [f"  {p}: {why}" for p, why in items[:_MAX_LOGGED]]
    if len(items) > _MAX_LOGGED:
        lines.append(f"  and {len(items) - _MAX_LOGGED:,} more")
    try:
        ls.protocol.notify(types.WINDOW_LOG_MESSAGE, types.LogMessageParams(
            type=types.MessageType.Log, message="\n".join(lines)))
    except Exception:  # no transport (unit tests)
        log.info("%s", "\n".join(lines))


def _encoding(ls: LivetokServer, params: Any) -> str:
    """The map's encoding: ``params.encoding``, else the document's, else the default; each
    passes the trust rule (a document's passed it when it was opened)."""
    name = field_of(params, "encoding")
    if name is not None:
        if not isinstance(name, str) or not name:
            raise JsonRpcInvalidParams(f"encoding must be an encoding's name, got {name!r}")
        refusal = ls.encodings.refusal(name)
        if refusal is not None:
            raise JsonRpcInvalidParams(refusal)
        return name
    td = field_of(params, "textDocument")
    uri = field_of(td, "uri")
    od = ls.store.find(uri) if isinstance(uri, str) else None
    if od is not None:
        return od.encoding.name
    return ls.encodings.trusted(ls.settings.default_encoding, "the workspace map")


def _folders(ls: LivetokServer, params: Any) -> list[Path]:
    """The workspace folders (or the one below them that ``params.folder`` names)."""
    roots: list[Path] = []
    for f in ls.workspace.folders.values():
        p = path_of(f.uri)
        if p is not None:
            roots.append(p)
    if not roots and ls.root:
        roots.append(Path(ls.root))
    asked = field_of(params, "folder")
    if asked is None:
        return roots
    p = path_of(asked) if isinstance(asked, str) else None
    if p is None or not any(trust.inside(p, r) for r in roots) or not p.is_dir():
        raise JsonRpcInvalidParams(f"folder must be the file: URI of a folder in the "
                                   f"workspace, got {asked!r}")
    return [p]


def _wait_s(params: Any) -> float:
    wait = field_of(params, "wait")
    if wait is None:
        return WAIT_MS / 1000
    if isinstance(wait, bool) or not isinstance(wait, int) or not 0 <= wait <= _MAX_WAIT_MS:
        raise JsonRpcInvalidParams(f"wait must be milliseconds from 0 to {_MAX_WAIT_MS:,}, "
                                   f"got {wait!r}")
    return wait / 1000


def _watch(ls: LivetokServer, svc: _Service) -> None:
    """Ask the client to report every file's changes (once, when it can)."""
    if svc.registered or not ls.budgets.dynamic:
        return
    svc.registered = True
    ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
        id=_REGISTRATION_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/*")]))]))


def _overlay(ls: LivetokServer, svc: _Service, m: WorkspaceMap, name: str) -> None:
    """Lay the open documents counted in ``name`` over their files' counts in ``m``."""
    want = svc.identity(name)
    live: dict[str, tuple[int, ...]] = {}
    for od in ls.store:
        path = path_of(od.uri)
        if path is None or not (m.root in path.parents) or ls.background.busy(od.uri):
            continue
        if od.doc is None or od.out_of_sync is not None or svc.identity(od.encoding.name) != want:
            continue
        live[str(path)] = (int(od.doc.token_count),)
    for old in list(m.live):
        if old not in live:
            m.set_live(old, None)
    for p, tokens in live.items():
        m.set_live(p, tokens)


def _folder_json(m: WorkspaceMap, depth: int | None) -> dict[str, Any]:
    """A map as the result's folder object: ``tokens`` one number, ``uri`` for ``path``,
    ``live`` on open documents."""
    raw = m.to_json(depth=depth, label=lambda p: p.as_uri())
    if raw is None:
        raw = {"name": m.root.name, "path": m.root.as_uri(), "kind": "folder", "tokens": [0],
               "files": 0, "bytes": 0, "children": []}
    live = {Path(p).as_uri() for p in m.live}

    def flat(o: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": o["name"], "uri": o["path"], "kind": o["kind"],
                               "tokens": o["tokens"][0], "files": o["files"], "bytes": o["bytes"]}
        if o["kind"] == "file" and o["path"] in live:
            out["live"] = True
        if "children" in o:
            out["children"] = [flat(c) for c in o["children"]]
        return out

    out = flat(raw)
    out["skipped"] = len(m.skipped)
    out["complete"] = m.complete
    return out


@feature(WORKSPACE_COUNTS)
async def workspace_counts(ls: LivetokServer, params: Any) -> dict[str, Any]:
    """``livetok/workspaceCounts``: each workspace folder's map (see the module docstring)."""
    svc = _service(ls)
    name = _encoding(ls, params)
    folders = _folders(ls, params)
    wait = _wait_s(params)
    depth = field_of(params, "depth")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
        raise JsonRpcInvalidParams(f"depth must be an integer >= 0, got {depth!r}")
    if name not in svc.encodings:
        # its identity hashes a tokenizer.json, its caches are read from disk: in a thread
        try:
            svc.encodings[name] = await asyncio.to_thread(Encodings, [name])
        except (OSError, ValueError) as err:
            raise JsonRpcException(message=f"livetok: no workspace map in {name}: {err}",
                                   code=REQUEST_FAILED) from None
    maps = [svc.map_for(f, name) for f in folders]
    pending = [asyncio.wrap_future(fut) for _m, fut in maps if not fut.done()]
    if pending and wait > 0:
        await asyncio.wait(pending, timeout=wait)
    for _m, fut in maps:
        if fut.done() and fut.exception() is not None:
            exc = fut.exception()
            svc.forget(fut)
            raise JsonRpcException(message=f"livetok: the workspace map in {name} failed: "
                                   f"{type(exc).__name__}: {exc}", code=REQUEST_FAILED)
    _watch(ls, svc)
    await svc.learn({name, *(od.encoding.name for od in ls.store)})
    out = []
    for m, _fut in maps:
        _overlay(ls, svc, m, name)
        out.append(_folder_json(m, depth))
    return {"encoding": name, "contextWindow": ls.settings.context_window,
            "complete": all(f["complete"] for f in out), "folders": out}


@feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def workspace_folders_changed(ls: LivetokServer,
                              params: types.DidChangeWorkspaceFoldersParams) -> None:
    """Folders added or removed (pygls has updated ``ls.workspace``): every folder is the
    workspace for the trust rule (:meth:`.Encodings.refusal`), so each open document's
    encoding and ``livetok.compare``'s are chosen again; a ``tokenizer.json`` that now lies in
    a workspace folder and is not trusted is dropped (a document's for the default encoding),
    the user told why."""
    ls.reencoder.workspace_folders_changed()


@feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def watched_files_changed(ls: LivetokServer, params: types.DidChangeWatchedFilesParams) -> None:
    """Changed files on disk update the maps that hold them (after the budget files' handler)."""
    svc = _SERVICES.get(ls)
    if svc is None or not svc.maps:
        return
    paths = [p for c in params.changes if (p := path_of(c.uri)) is not None]
    if paths:
        svc.changed(paths)
