"""The token map of one folder: built once (:meth:`WorkspaceMap.build`), then kept up to date
file by file (:meth:`WorkspaceMap.refresh`), with the live counts of open documents laid over
the counts of their files on disk (:meth:`WorkspaceMap.set_live`).

What is in the map and why the rest is not is :mod:`.scan`'s and :mod:`.classify`'s; counting,
with the persistent cache, is :mod:`.counting`'s; the tree of totals :mod:`.tree`'s. Every
entry left out is kept in :attr:`WorkspaceMap.skipped` with its reason and logged (logger
``livetok.server.workspace.tokenmap``).

The map may be built or refreshed in one thread while another reads it: every change to the
tree and every read of it (:meth:`WorkspaceMap.to_json`) holds :attr:`WorkspaceMap.lock`, a
few microseconds per file.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from livetok.server.budgets.discovery import CONFIG_NAMES, ConfigFinder
from livetok.server.budgets.limits import printable
from livetok.server.walk import Skipped
from livetok.server.workspace.counting import Counted, Encodings, count_candidates
from livetok.server.workspace.scan import Candidate, Limits, scan, why_left_out
from livetok.server.workspace.tree import Sort, TokenTree

__all__ = ["REBUILD_NAMES", "WorkspaceMap"]

log = logging.getLogger(__name__)

#: a change to one of these files may change what is in the map: it is built again (from the
#: cache, so without encoding what did not change)
REBUILD_NAMES = frozenset({".gitignore", *CONFIG_NAMES})
#: more changed paths than this at once (a checkout): built again rather than file by file
_REFRESH_MAX = 500


class WorkspaceMap:
    """Per-file counts and per-folder totals of the folder ``root`` in ``encodings``.

    Runtime complexity: :meth:`build` as :func:`.counting.count_candidates` over the folder;
    :meth:`refresh` ``O(depth)`` plus reading and counting each changed file.
    """

    def __init__(self, root: Path, encodings: Encodings, *, limits: Limits | None = None,
                 jobs: int = 1, gitignore: bool = True) -> None:
        self.root = root.absolute()
        #: read the ``.gitignore`` files (False: ``--no-ignore``)
        self.gitignore = gitignore
        self.encodings = encodings
        self.limits = limits if limits is not None else Limits.from_env()
        self.jobs = jobs
        self.lock = threading.Lock()
        self.tree = TokenTree(self.root, encodings.names)
        #: every entry left out, and why
        self.skipped: dict[Path, str] = {}
        #: each counted file's counts from disk (what the tree shows unless it is open), by
        #: its path (a ``str``: no ``Path`` is made per file)
        self.disk: dict[str, tuple[int, ...]] = {}
        self.sizes: dict[str, int] = {}
        #: open documents' live counts, shown in place of their files' counts
        self.live: dict[str, tuple[int, ...]] = {}
        #: built at least once, to the end
        self.complete = False

    def build(self, progress: Callable[[int], object] | None = None) -> None:
        """Scan the folder and count every file in it (the cache first), in place of what
        the map held; the tree fills as files are counted.

        Runtime complexity: see the class.
        """
        finder = ConfigFinder()
        with self.lock:
            self.tree = TokenTree(self.root, self.encodings.names)
            self.skipped, self.disk, self.sizes = {}, {}, {}
            self.complete = False
        for result in count_candidates(self._candidates(finder), self.encodings, self.root,
                                       limits=self.limits, jobs=self.jobs, progress=progress):
            if isinstance(result, Counted):
                self._put(result)
            else:
                self._skip(result)
        self.encodings.save()
        with self.lock:
            for path, tokens in self.live.items():
                if path in self.disk:
                    self.tree.set_file(path, tokens, self.sizes[path])
            self.complete = True
        log.info("workspace map of %s: %d files, %d entries left out", printable(str(self.root)),
                 self.tree.root.files, len(self.skipped))

    def _candidates(self, finder: ConfigFinder) -> Iterator[Candidate]:
        """The files :func:`.scan.scan` gives, the entries it leaves out noted."""
        for item in scan(self.root, finder=finder, limits=self.limits,
                         gitignore=self.gitignore):
            if isinstance(item, Candidate):
                yield item
            else:
                self._skip(item)

    def _skip(self, item: Skipped) -> bool:
        with self.lock:
            self.skipped[item.path] = item.reason
        log.info("workspace map: left out %s: %s", printable(str(item.path)),
                 printable(item.reason))
        return False

    def _put(self, c: Counted) -> None:
        with self.lock:
            self.disk[c.path] = c.tokens
            self.sizes[c.path] = c.size
            self.tree.set_file(c.path, self.live.get(c.path, c.tokens), c.size)

    def _drop(self, path: Path) -> None:
        s = str(path)
        below = s.rstrip(os.sep) + os.sep
        with self.lock:
            self.tree.remove(path)
            for table in (self.disk, self.sizes):
                for p in [p for p in table if p == s or p.startswith(below)]:
                    del table[p]

    def refresh(self, paths: Iterable[Path]) -> None:
        """Bring the map up to date with changes to ``paths`` on disk (created, changed or
        deleted files or folders): each file read and counted again (the cache first), or
        taken out with the reason; a new folder, a ``.gitignore`` or budget file, or more
        than 500 paths at once: the whole map built again (from the cache).

        Runtime complexity: ``O(depth)`` per path plus reading and counting it.
        """
        changed = sorted({p.absolute() for p in paths})
        inside = [p for p in changed if p == self.root or self.root in p.parents]
        if not inside:
            return
        if len(inside) > _REFRESH_MAX or any(
                p.name in REBUILD_NAMES or p == self.root or p.is_dir() for p in inside):
            self.build()
            return
        finder = ConfigFinder()
        candidates: list[Candidate] = []
        for p in inside:
            got = why_left_out(p, self.root, finder=finder, limits=self.limits,
                               gitignore=self.gitignore)
            if isinstance(got, Candidate):
                candidates.append(got)
                continue
            self._drop(p)
            if got.startswith("cannot read it") and not p.exists():
                with self.lock:
                    self.skipped.pop(p, None)  # deleted: nothing to say
            else:
                self._skip(Skipped(p, got))
        with self.lock:
            for cand in candidates:
                self.skipped.pop(Path(cand.path), None)
        for result in count_candidates(candidates, self.encodings, self.root,
                                       limits=self.limits, jobs=1):
            if isinstance(result, Counted):
                self._put(result)
            else:
                self._drop(result.path)
                self._skip(result)
        self.encodings.save()

    def set_live(self, path: Path | str, tokens: tuple[int, ...] | None) -> bool:
        """Show ``tokens`` (an open document's live counts) for the file ``path`` in place of
        its counts on disk, or its disk counts again with None (closed); a file the map does
        not hold is not added. True when what the tree shows changed.

        Runtime complexity: ``O(depth)``.
        """
        path = os.path.abspath(path)
        with self.lock:
            old = self.live.get(path)
            if tokens is None:
                self.live.pop(path, None)
            else:
                self.live[path] = tokens
            if path not in self.disk or old == tokens:
                return False
            self.tree.set_file(path, tokens if tokens is not None else self.disk[path],
                               self.sizes[path])
            return True

    def to_json(self, *, start: Path | None = None, depth: int | None = None,
                sort: Sort = "tokens", index: int = 0,
                label: Callable[[Path], Any] | None = None) -> dict[str, Any] | None:
        """The tree as JSON (:meth:`.tree.TokenTree.to_json`), read under the lock.

        Runtime complexity: ``O(nodes shown)``.
        """
        with self.lock:
            return self.tree.to_json(start=start, depth=depth, sort=sort, index=index,
                                     label=label)
