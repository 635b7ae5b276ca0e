"""Work shared out to forked processes: the one place the server and the command line fork
(``livetok count -j``: :func:`.cmd_count.count_parallel`; a big didOpen's encode pass:
:func:`.parallel_open.parallel_block_tokens`).

The processes are forked, not spawned, so they share the loaded vocabulary and the work's data
with this process (copy on write) instead of loading and receiving them; only each item's
result travels back. Fork is used only where it is the platform's own default (Linux): macOS
offers it but warns that system libraries may crash in a forked child.
"""

from __future__ import annotations

import gc
import logging
import sys
from typing import Any, Callable, TypeVar

__all__ = ["forked_map"]

log = logging.getLogger(__name__)

D = TypeVar("D")
T = TypeVar("T")

#: the function and data of the map in progress: set before the fork, read by the children
_TASK: tuple[Callable[[Any, int], Any], Any] | None = None


def _run(i: int) -> Any:
    fn, data = _TASK  # type: ignore[misc]  # set before the fork
    return fn(data, i)


def forked_map(fn: Callable[[D, int], T], data: D, n: int, jobs: int, *,
               ordered: bool = True, freeze: bool = False,
               each: Callable[[T], object] | None = None) -> list[T] | None:
    """``[fn(data, i) for i in range(n)]`` computed by ``min(jobs, n)`` forked processes, or
    ``None`` when no process can be had (not Linux, a limit on processes): the caller then
    does the work itself. ``fn`` must be a module-level function (it is sent by name);
    ``data`` is inherited, never sent. ``ordered=False`` gives the results as they come;
    ``each`` sees every result as it arrives (progress); ``freeze``: each process first moves
    the objects it inherits out of the garbage collector's reach (``gc.freeze``), for callers
    whose process holds many objects (the server: its full collections otherwise write to
    every inherited object and so copy its page; measured, twice the CPU time per block).

    >>> forked_map(pow, 2, 0, jobs=2) if sys.platform.startswith("linux") else []
    []

    Runtime complexity: the items' work divided by the processes, plus their start and the
    results' trip back.
    """
    global _TASK
    import multiprocessing

    if not sys.platform.startswith("linux"):
        return None
    if n == 0:
        return []
    _TASK = (fn, data)
    try:
        try:
            pool = multiprocessing.get_context("fork").Pool(
                max(1, min(jobs, n)), initializer=gc.freeze if freeze else None)
        except OSError as exc:  # no processes to be had (a limit on them)
            log.info("working in this process: cannot fork (%s)", exc)
            return None
        with pool:
            results = (pool.imap(_run, range(n)) if ordered
                       else pool.imap_unordered(_run, range(n)))
            out: list[T] = []
            for r in results:
                if each is not None:
                    each(r)
                out.append(r)
            return out
    finally:
        _TASK = None
