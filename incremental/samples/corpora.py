"""Real text available offline, for tests, benchmarks, measurements and the demo's samples: the
one corpus reader of the repository.

livetok must not download corpora, so everything that needs real text reads what is already on
disk, always in the same order (a given size always yields the same text):

* :func:`stdlib_files`, :func:`stdlib_text`: the standard library's ``.py``, ``.txt`` and
  ``.rst`` files (not site-packages), sorted by relative path, read as UTF-8 and concatenated:
  English prose, docstrings and code, about 30 million code points in every Python
  installation. The tests (``tests/_refs.py``), the benchmarks (``benchmarks/_common.py``) and
  the demo's sample texts (``livetok demo``) read it here;
* :func:`cjk_texts`, :func:`cjk_letters`: the CJK sample texts of CPython's own test suite
  (``test/cjkencodings/*-utf8.txt``: Chinese, Japanese and Korean prose), when the Python
  installation ships its tests;
* :func:`trace_texts`: the final documents of the editing traces in ``../shared/traces``
  (English prose, Markdown, Rust, Svelte), when that folder is beside the repository;
* :func:`real_text`: the three mixed (CJK, traces, then the standard library), for the
  SentencePiece tests, the streaming benchmark and the widening measurement of
  ``docs/sentencepiece.md``.

Nothing on the tokenizing path (the core, the families) imports this module.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import sysconfig
import unicodedata
from pathlib import Path
from typing import Iterator

__all__ = [
    "stdlib_dir",
    "stdlib_files",
    "stdlib_text",
    "stdlib_texts",
    "whole_stdlib_text",
    "cjk_texts",
    "cjk_letters",
    "trace_texts",
    "real_text",
]

_ROOT = Path(__file__).resolve().parents[2]
_TRACES = _ROOT.parent / "shared" / "traces"
#: folders of the standard library that are not its own text
_NOT_STDLIB = ("site-packages", "dist-packages", "__pycache__")
#: one line of CJK letters for a Python installed without its tests
_CJK_FALLBACK = "派森语言是一种功能强大而完善的通用型计算机程序设计语言已经具有十多年的发展历史"


def stdlib_dir() -> Path:
    """The standard library of the running Python."""
    return Path(sysconfig.get_paths()["stdlib"])


@functools.lru_cache(maxsize=None)
def stdlib_files(suffixes: tuple[str, ...] = (".py", ".txt", ".rst")) -> tuple[Path, ...]:
    """The standard library's files ending in ``suffixes``, sorted by relative path.

    >>> all(p.suffix == ".py" for p in stdlib_files((".py",))[:5])
    True

    Runtime complexity: ``O(files)`` the first time (one walk of the folder), then ``O(1)``.
    """
    root = stdlib_dir()
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _NOT_STDLIB]
        for f in filenames:
            if f.endswith(suffixes):
                p = Path(dirpath, f)
                found.append((p.relative_to(root).as_posix(), p))
    return tuple(p for _, p in sorted(found))


def _read(p: Path) -> str | None:
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def stdlib_texts(suffixes: tuple[str, ...] = (".py",)) -> Iterator[str]:
    """The text of each of :func:`stdlib_files`, lazily (files that are not UTF-8 skipped).

    Runtime complexity: ``O(size read)``.
    """
    for p in stdlib_files(suffixes):
        t = _read(p)
        if t is not None:
            yield t


@functools.lru_cache(maxsize=None)
def _stdlib_prefix(min_chars: int) -> str:
    parts: list[str] = []
    total = 0
    for t in stdlib_texts((".py", ".txt", ".rst")):
        parts.append(t)
        total += len(t)
        if total >= min_chars:
            break
    text = "".join(parts)
    if len(text) < min_chars:  # a small standard library: repeated
        text = text * (min_chars // max(1, len(text)) + 1)
    return text


def stdlib_text(n_chars: int) -> str:
    """The first ``n_chars`` code points of the standard library's text (see the module
    docstring), repeated when the standard library is shorter.

    >>> len(stdlib_text(1000))
    1000

    Runtime complexity: ``O(n_chars)`` the first time for a size, ``O(n_chars)`` (a slice)
    after.
    """
    return _stdlib_prefix(max(n_chars, 1))[:n_chars]


@functools.lru_cache(maxsize=1)
def whole_stdlib_text() -> str:
    """The whole text of :func:`stdlib_text` (every file once, never repeated).

    Runtime complexity: ``O(size)`` the first time.
    """
    return "".join(stdlib_texts((".py", ".txt", ".rst")))


@functools.lru_cache(maxsize=1)
def cjk_texts() -> tuple[str, ...]:
    """CJK prose from CPython's ``test/cjkencodings`` (empty when tests are not installed).

    Runtime complexity: ``O(total size)`` (a few tens of kilobytes).
    """
    folder = stdlib_dir() / "test" / "cjkencodings"
    if not folder.is_dir():
        return ()
    texts = (_read(f) for f in sorted(folder.glob("*-utf8.txt")))
    return tuple(t for t in texts if t is not None)


@functools.lru_cache(maxsize=1)
def cjk_letters() -> str:
    """The CJK letters (category Lo, from U+3000 up) of :func:`cjk_texts`, each distinct file
    once, in order: text with no space or punctuation, so one pre-token of the byte-level
    encodings. A fixed Chinese sentence when the samples are not installed.

    Runtime complexity: ``O(total size)``.
    """
    out = ["".join(c for c in t if ord(c) >= 0x3000 and unicodedata.category(c) == "Lo")
           for t in dict.fromkeys(cjk_texts())]
    return "".join(out) or _CJK_FALLBACK


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


def real_text(max_chars: int) -> str:
    """About ``max_chars`` code points of mixed real text: CJK samples, traces, then the
    standard library's ``.py`` sources.

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
