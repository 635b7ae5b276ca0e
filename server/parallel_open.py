"""The encode pass of a big didOpen in forked processes, one block at a time on each core.

A big text's blocks are cut where no piece can span (``Encoding.iter_blocks``), so they can be
encoded apart and their tokens concatenated (the argument ``livetok count -j`` rests on too,
``cmd_count.count_parallel``). Here each process returns a block's token arrays
(:func:`~livetok.incremental.document.block_tokens`: ids, code points per token, flags), so
the server has the exact count as soon as the last block is back and builds the document from
the same arrays (``Document.from_block_tokens``): nothing is encoded twice.

The processes are forked for one open and gone after it: they share the loaded vocabulary and
the blocks with the server (copy on write) instead of loading and receiving them, and only the
arrays travel back. It pays only with cores to spare: each process's piece cache starts cold
(the pieces common to all blocks are encoded once per process, so below a few megabytes it
costs more than it saves), and the processes do the arrays' work too. By default the server
leaves one core to itself and the editor (:func:`open_jobs`): on two cores it encodes in its
own process unless ``LIVETOK_OPEN_JOBS`` says otherwise.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Sequence

from livetok.incremental import PieceEncoding
from livetok.incremental.bytelevel.encoding import Encoding
from livetok.incremental.document import BlockTokens, block_cps_type, block_tokens
from livetok.incremental.env_limits import size_limit

from livetok.server.forked import forked_map

__all__ = ["PARALLEL_MIN_CHARS", "available_cores", "open_jobs", "parallel_block_tokens"]

log = logging.getLogger(__name__)

#: texts of at least this many code points are encoded by forked processes
PARALLEL_MIN_CHARS = 4 << 20


def available_cores() -> int:
    """The cores this process may run on (``sched_getaffinity`` where there is one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def open_jobs() -> int:
    """Processes for a big didOpen's encode pass: ``LIVETOK_OPEN_JOBS`` (1 encodes in the
    server's own process), else one less than the cores this process may run on, at most 4.
    A value that is not a positive integer is logged and ignored."""
    default = max(1, min(4, available_cores() - 1))
    try:
        return size_limit("LIVETOK_OPEN_JOBS", default, unit="processes")
    except ValueError as exc:
        log.warning("%s; using %d", exc, default)
        return default


def _encode(work: tuple[Encoding, Sequence[str], str], i: int) -> BlockTokens:
    """Block ``i``'s tokens (in a forked process)."""
    enc, blocks, cps_type = work
    return block_tokens(enc, blocks[i], cps_type)


def parallel_block_tokens(enc: PieceEncoding, blocks: Sequence[str], jobs: int | None = None,
                          ) -> list[BlockTokens] | None:
    """Each block's tokens, computed by ``jobs`` (:func:`open_jobs`) forked processes
    (:func:`.forked.forked_map`, each moving what it inherits out of the garbage collector's
    reach); None, for the caller to encode in this process, when that is not possible or not
    worth it: one core, fewer than two blocks, not Linux, not a byte-level ``Encoding``, no
    process to be had.

    Runtime complexity: ``O(n / jobs)`` wall time plus the processes' start and the arrays'
    trip back (``O(tokens)``).
    """
    jobs = open_jobs() if jobs is None else jobs
    if (jobs < 2 or len(blocks) < 2 or not isinstance(enc, Encoding)
            or not sys.platform.startswith("linux")):
        return None
    return forked_map(_encode, (enc, blocks, block_cps_type(enc)), len(blocks), jobs,
                      freeze=True)
