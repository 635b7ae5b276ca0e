"""The server process's memory: give freed C heap back to the system, keep the cyclic
garbage collector off the objects of big documents, and collect what an ended session left.

A big document's build frees lists and blocks into glibc's heap, which keeps them, and leaves
hundreds of thousands of tracked objects that every full collection would walk while holding
the interpreter lock; a session that ends leaves a web of objects that refer to each other.
These three functions are the whole policy; ``documents.py`` calls the first two after a
build, ``session.py`` the last at a session's end (``docs/architecture.md``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from typing import Callable

__all__ = ["collect_ended_sessions", "return_free_memory", "settle_big_build"]


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return None


_TRIM = _malloc_trim()


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
