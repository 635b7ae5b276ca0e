"""Real text available offline on any machine with Python, for tests, benchmarks and docs.

livetok must not download corpora, so the SentencePiece tests, the streaming benchmark and the
widening measurement of ``docs/sentencepiece.md`` read text that is already on disk:

* the CJK sample texts of CPython's own test suite (``test/cjkencodings/*-utf8.txt``: Chinese,
  Japanese and Korean prose), when the Python installation ships its tests;
* the final documents of the editing traces in ``shared/traces`` (English prose, Markdown, Rust,
  Svelte), when that folder is beside the repository;
* the standard library's Python sources (English docstrings and comments, code), which every
  Python installation has: tens of megabytes.

Everything is read in a fixed order, so a given ``max_chars`` always yields the same text.
"""

from __future__ import annotations

import functools
import gzip
import os
import json
import sysconfig
from pathlib import Path
from typing import Iterator

__all__ = ["cjk_texts", "trace_texts", "stdlib_texts", "real_text"]

_ROOT = Path(__file__).resolve().parents[2]
_TRACES = _ROOT.parent / "shared" / "traces"


def _stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


@functools.lru_cache(maxsize=1)
def cjk_texts() -> tuple[str, ...]:
    """CJK prose from CPython's ``test/cjkencodings`` (empty list when tests are not installed).

    Runtime complexity: ``O(total size)`` (a few tens of kilobytes).
    """
    folder = _stdlib_dir() / "test" / "cjkencodings"
    out = []
    if folder.is_dir():
        for f in sorted(folder.glob("*-utf8.txt")):
            try:
                out.append(f.read_text("utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    return tuple(out)


@functools.lru_cache(maxsize=1)
def trace_texts() -> tuple[str, ...]:
    """The ``endContent`` of each editing trace in ``../shared/traces`` (may be empty).

    Runtime complexity: ``O(total size)``.
    """
    out = []
    if _TRACES.is_dir():
        for f in sorted(_TRACES.glob("*.json.gz")):
            try:
                with gzip.open(f, "rt", encoding="utf-8") as fh:
                    out.append(json.load(fh)["endContent"])
            except (OSError, ValueError, KeyError):
                continue
    return tuple(out)


def stdlib_texts() -> Iterator[str]:
    """The standard library's ``.py`` files, depth-first in sorted name order (lazily).

    Runtime complexity: ``O(size read)``; directories are listed only as far as iterated.
    """
    for root, dirs, files in os.walk(_stdlib_dir()):
        # prune third-party packages; sort for a fixed order
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            try:
                yield Path(root, name).read_text("utf-8")
            except (OSError, UnicodeDecodeError):
                continue


def real_text(max_chars: int) -> str:
    """About ``max_chars`` code points of real text: CJK samples, traces, then stdlib sources.

    >>> len(real_text(1000)) <= 1000
    True

    Runtime complexity: ``O(max_chars)`` plus directory listing.
    """
    parts: list[str] = []
    total = 0

    def sources() -> Iterator[str]:
        yield from cjk_texts()
        yield from trace_texts()
        yield from stdlib_texts()

    for t in sources():
        if total >= max_chars:
            break
        t = t[: max_chars - total]
        parts.append(t)
        total += len(t)
    return "\n".join(parts)[:max_chars]
