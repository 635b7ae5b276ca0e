"""The server process's memory: give freed C heap back to the system, keep the cyclic
garbage collector off the objects of big documents, and collect what an ended session left.

A big document's build frees lists and blocks into glibc's heap, which keeps them, and leaves
hundreds of thousands of tracked objects that every full collection would walk while holding
the interpreter lock; a session that ends leaves a web of objects that refer to each other.
These functions are the whole policy: ``livetok serve`` and ``livetok demo`` call
:func:`one_heap` first thing, ``documents.py`` calls :func:`return_free_memory` and
:func:`settle_big_build` after a build, ``session.py`` :func:`collect_ended_sessions` at a
session's end (``docs/architecture.md``).
"""

from __future__ import annotations

import ctypes
import gc
import sys
from typing import Callable

__all__ = ["collect_ended_sessions", "one_heap", "return_free_memory", "settle_big_build"]


def _libc() -> ctypes.CDLL | None:
    """The C library this process runs on (its own symbols: no ``ctypes.util`` lookup, which
    imports ``tempfile`` and more, ~12 ms), or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def _libc_function(name: str) -> Callable[..., int] | None:
    """``name`` from glibc, or None where it does not exist (musl and others)."""
    libc = _libc()
    try:
        return None if libc is None else getattr(libc, name)
    except AttributeError:
        return None


_TRIM = _libc_function("malloc_trim")
#: glibc's ``mallopt`` parameter for the number of heaps (``M_ARENA_MAX``)
_M_ARENA_MAX = -8


def one_heap() -> None:
    """Make every thread of this process allocate from one C heap (glibc's ``mallopt
    (M_ARENA_MAX, 1)``); call it before any thread starts. A no-op off glibc.

    subtle: by default a thread gets a heap (*arena*) of its own, so a document built in the
    worker thread (``background.py``) and the caches it fills live in a second heap, where
    what stays alive after a build is scattered over pages that ``malloc_trim`` cannot give
    back: the resident set a session's end comes back to then depended on when it ended
    (measured in ``docs/security.md``, "A session's end frees what it started"). Python
    threads run one at a time (the interpreter lock), so the one heap's lock is not contended.

    Runtime complexity: ``O(1)``.
    """
    mallopt = _libc_function("mallopt")
    if mallopt is not None:
        mallopt(_M_ARENA_MAX, 1)


def return_free_memory() -> None:
    """Give the C heap's free memory back to the system (glibc's ``malloc_trim``).

    After a big document is built, the blocks and lists of the build are freed into glibc's
    heap, which keeps them: the server's resident set stayed ~2.5x the text above what it
    holds. A no-op where ``malloc_trim`` does not exist.
    """
    if _TRIM is not None:
        _TRIM(0)


def settle_big_build() -> None:
    """After (a part of) a big document's build: give freed memory back
    (:func:`return_free_memory`) and move every object alive to the cyclic garbage
    collector's permanent generation (``gc.freeze``).

    Subtle: a document's chunks are objects the collector tracks (~400,000 for 100 MB), and
    each full collection walked them all while holding the interpreter lock: 30 ms at 40 MB,
    the slowest round trip of the other documents during a 100 MB open. Frozen objects are
    still freed when nothing refers to them; a reference cycle that is already garbage at
    the freeze would stay, so the young generations (where new garbage is) are collected
    first, which is cheap.
    """
    return_free_memory()
    gc.collect(1)
    gc.freeze()


def collect_ended_sessions() -> None:
    """After a session's end: collect what it left (a server and pygls's protocol refer to each
    other, as a connection's objects do), then give the freed memory back.

    subtle: :func:`settle_big_build` freezes every object alive after a big build
    (``gc.freeze``) and the collector never looks at frozen objects again: a session that was
    alive then (the one whose build it was, any other) stayed in memory for good once it
    ended, with what it held. So they are thawed, collected and frozen again (what is still
    alive: the other sessions' documents stay out of later collections' way).

    Runtime complexity: ``O(objects alive)``: one full collection, ~30 ms per 40 MB of
    documents open in other sessions; once per session.
    """
    if gc.get_freeze_count():
        gc.unfreeze()
        gc.collect()
        gc.freeze()
    else:
        gc.collect()
    return_free_memory()
