"""``livetok serve --record-trace DIR``: write each editing session as an edit-replay trace.

The format is the one of the shared editing traces (``shared/traces/README.md``): gzipped
JSON ``{"startContent", "endContent", "txns": [{"time", "patches": [[pos, n_deleted,
"inserted"], ...]}]}`` with positions in code points, one transaction per ``didChange``.
A trace is written when its document is closed (or reopened) and, for documents still
open, when the server stops. Applying every patch to ``startContent`` gives
``endContent``, so a user's session can be replayed as a test
(``livetok replay FILE``, or :func:`livetok.server.cli.traces.load_trace`).
"""

from __future__ import annotations

import gzip
import itertools
import json
import logging
import os
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, TypedDict

from livetok.incremental import sanitize

from livetok.server.lsp.documents import Patch

__all__ = ["TraceRecorder"]

log = logging.getLogger(__name__)


class _Transaction(TypedDict):
    """One ``didChange`` as the trace file holds it (the patches are JSON arrays)."""

    time: str
    patches: list[tuple[int, int, str]]


class _Session:
    def __init__(self, uri: str, text: str) -> None:
        self.uri = uri
        self.start = sanitize(text)
        self.txns: list[_Transaction] = []


#: numbers the trace files of this process (several sessions may record at once)
_SERIAL = itertools.count(1)


class TraceRecorder:
    """Collects the patches of every open document and writes one file per session."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._open: dict[str, _Session] = {}

    def open(self, uri: str, text: str) -> None:
        """Start recording ``uri`` from ``text``."""
        self._open[uri] = _Session(uri, text)

    def change(self, uri: str, patches: Iterable[Patch]) -> None:
        """Record one ``didChange`` (one transaction)."""
        s = self._open.get(uri)
        if s is None:
            return
        # the core sees lone surrogates as U+FFFD; record what it saw, so replays agree
        s.txns.append({
            "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            "patches": [(p.pos, p.n_deleted, sanitize(p.inserted)) for p in patches],
        })

    def close(self, uri: str, end_text: str) -> Path | None:
        """Write ``uri``'s trace (ending in ``end_text``) and stop recording it."""
        s = self._open.pop(uri, None)
        if s is None:
            return None
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", s.uri.rsplit("/", 1)[-1])[-80:] or "document"
        # one counter for the process: sessions of `serve --tcp` each have a recorder
        path = self.dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{next(_SERIAL)}-{name}.json.gz"
        data = {"uri": s.uri, "startContent": s.start, "endContent": sanitize(end_text),
                "txns": s.txns}
        try:
            # the whole document is in the file: readable by the user alone (0600, whatever
            # the umask), created exclusively so that no existing file or link is written
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as raw, gzip.open(raw, "wt", encoding="utf-8") as f:
                json.dump(data, f, ensure_ascii=False)
        except OSError:
            log.exception("could not write trace %s", path)
            return None
        log.info("recorded trace %s (%d transactions)", path, len(s.txns))
        return path

    def open_uris(self) -> list[str]:
        """URIs still being recorded."""
        return list(self._open)

