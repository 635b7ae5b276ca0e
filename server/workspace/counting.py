"""Counting the files of a workspace map: the cache first, then the misses, on several cores.

Each file is read once (:mod:`.classify`), its bytes hashed (SHA-256) and looked up in each
encoding's :class:`~.cache.CountCache`; only the misses are encoded. A file's count is the
count ``livetok count FILE`` prints: its bytes decoded as UTF-8 (undecodable bytes as U+FFFD)
and ``len(encode(text))``; a text holding a pre-token longer than ``$LIVETOK_MAX_PIECE_CP``
code points is refused as ``livetok count`` refuses it (a file of one 8 MB run of ``=`` would
cost minutes to encode), and left out with the reason.

The misses are counted in batches of at most :data:`BATCH_BYTES`, so memory stays bounded
whatever the folder holds. A batch of :data:`PARALLEL_MIN_BYTES` or more is shared out to
``jobs`` forked processes (:func:`livetok.server.forked.forked_map`, as ``livetok check`` and
``livetok count -j`` do): they inherit the loaded encodings and the batch's bytes (nothing is
sent but indexes), each takes groups of files of about :data:`_GROUP_BYTES` (one message
per group, not per file), and only counts travel back. The encodings are loaded only when a
file misses the cache: a run whose counts all come from it loads no vocabulary.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple, Sequence, cast

from livetok.incremental import Encoding, PieceEncoding, get_encoding, list_encodings
from livetok.incremental.catalog import model_encoding
from livetok.incremental.limits import size_limit
from livetok.incremental.registry import ALIASES, is_file_name
from livetok.incremental.stream import MAX_PIECE_CP, check_pieces

from livetok.server import trust
from livetok.server.forked import forked_map
from livetok.server.walk import Skipped
from livetok.server.workspace.cache import BINARY, CountCache, StatIndex, encoding_identity
from livetok.server.workspace.classify import SNIFF_BYTES, is_binary, read_file
from livetok.server.workspace.scan import MAX_FILE_BYTES_ENV, Candidate, Limits

__all__ = ["BATCH_BYTES", "PARALLEL_MIN_BYTES", "Counted", "Encodings", "check_piece_lengths",
           "count_candidates", "count_text", "max_piece_cp"]

#: the most bytes of cache misses held at once
BATCH_BYTES = 64 << 20
#: a batch of misses this large is counted by forked processes (below it, forking costs more)
PARALLEL_MIN_BYTES = 1 << 20
#: the files a forked process takes at a time, in bytes (many per process: they finish
#: together; one message per group)
_GROUP_BYTES = 256 << 10


def max_piece_cp() -> int:
    """The longest pre-token ``livetok count`` and the map encode: ``$LIVETOK_MAX_PIECE_CP``
    or :data:`~livetok.incremental.stream.MAX_PIECE_CP` (4 Mi code points).

    Runtime complexity: ``O(1)``.
    """
    return size_limit("LIVETOK_MAX_PIECE_CP", MAX_PIECE_CP)


def check_piece_lengths(enc: PieceEncoding, text: str, max_piece: int) -> None:
    """:func:`~livetok.incremental.stream.check_pieces`, the OpenAI encodings' text first cut
    where no piece can span (``split_blocks``): only a slice over the bound goes to it, which
    asks ``protocol.byte_level`` and so builds the per-token tables that counting never reads
    (docs/startup.md).

    Runtime complexity: ``O(len(text))`` C work for a text over the bound, plus a split of
    the slices over it; ``O(1)`` below it.
    """
    if len(text) <= max_piece:
        return
    if isinstance(enc, Encoding):
        for block in enc.split_blocks(text, max_piece // 2):
            check_pieces(enc, block, max_piece)  # at once unless the block is over the bound
    else:
        check_pieces(enc, text, max_piece)


def count_text(enc: PieceEncoding, text: str, max_piece: int) -> int:
    """``len(enc.encode(text))``, or the ``PieceTooLongError`` (a ``ValueError``) of a text
    holding a pre-token longer than ``max_piece`` code points.

    Runtime complexity: as ``enc.encode``.
    """
    check_piece_lengths(enc, text, max_piece)
    return len(enc.encode(text))


def _known(name: str) -> bool:
    """Whether ``name`` can be told apart from a typo without loading it."""
    canonical = ALIASES.get(name, name)
    return (is_file_name(canonical) or canonical in list_encodings(found=False)
            or model_encoding(canonical) is not None)


class Encodings:
    """The encodings of a map: their names, identities and count caches, each loaded only
    when a file misses its cache. ``cache=False``: counts are kept in memory only.

    Runtime complexity: ``O(1)`` per encoding until one is loaded.
    """

    def __init__(self, names: Sequence[str], *, cache: bool = True) -> None:
        if not names:
            raise ValueError("a map needs at least one encoding")
        #: the names as given (the columns of ``livetok count``)
        self.names = list(names)
        #: a count cache per encoding
        self.caches = [CountCache(encoding_identity(n), folder=cache) for n in self.names]
        #: what each file's ``stat`` says of its bytes (shared by every encoding)
        self.stats = StatIndex(folder=cache)
        self._loaded: list[PieceEncoding | None] = [None] * len(self.names)
        for i, name in enumerate(self.names):
            if not _known(name):  # an unknown name fails now, with get_encoding's message
                self._loaded[i] = get_encoding(name)

    def __len__(self) -> int:
        return len(self.names)

    def encoding(self, i: int) -> PieceEncoding:
        """Encoding ``i``, loaded now if need be (its errors are get_encoding's).

        Runtime complexity: ``O(1)`` once loaded.
        """
        enc = self._loaded[i]
        if enc is None:
            enc = self._loaded[i] = get_encoding(self.names[i])
        return enc

    def save(self) -> None:
        """Write the counts added to each cache and the stat index (:meth:`.CountCache.save`)."""
        for c in self.caches:
            c.save()
        self.stats.save()


class Counted(NamedTuple):
    """A file's counts (one per encoding), its size and the SHA-256 of its bytes (a named
    tuple: one is made per file, in half the time of a frozen dataclass)."""

    path: str
    size: int
    digest: bytes
    tokens: tuple[int, ...]


#: a cache miss: the candidate, its bytes, their SHA-256, its counts so far (None: to count)
_Miss = tuple[Candidate, bytes, bytes, list[int | None]]
#: what the forked processes inherit: the encodings, the misses, the groups (miss indexes)
_Work = tuple[list[PieceEncoding | None], list[_Miss], list[list[int]], int]


def _count_group(work: _Work, g: int) -> list[list[int | str]]:
    """The counts of group ``g``'s misses (an error's message in place of a count), in a
    forked process or this one."""
    encs, misses, groups, max_piece = work
    out: list[list[int | str]] = []
    for m in groups[g]:
        _cand, data, _digest, known = misses[m]
        text = data.decode("utf-8", errors="replace")
        row: list[int | str] = []
        for i, n in enumerate(known):
            if n is not None:
                row.append(n)
                continue
            enc = encs[i]
            assert enc is not None  # loaded before the fork
            try:
                row.append(count_text(enc, text, max_piece))
            except ValueError as exc:  # PieceTooLongError, a hostile tokenizer's bound
                row.append(str(exc))
        out.append(row)
    return out


def _groups(misses: list[_Miss], jobs: int) -> list[list[int]]:
    """Miss indexes in groups of about :data:`_GROUP_BYTES` (smaller when few bytes, so that
    every process gets several)."""
    total = sum(len(m[1]) for m in misses)
    size = max(1, min(_GROUP_BYTES, total // (4 * max(jobs, 1)) or 1))
    groups: list[list[int]] = [[]]
    held = 0
    for i, m in enumerate(misses):
        if held >= size:
            groups.append([])
            held = 0
        groups[-1].append(i)
        held += len(m[1])
    return groups


def _count_misses(misses: list[_Miss], encs: Encodings, jobs: int) -> list[list[int | str]]:
    """The counts of ``misses`` (each miss's row: a count or an error per encoding)."""
    needed = sorted({i for m in misses for i, n in enumerate(m[3]) if n is None})
    loaded: list[PieceEncoding | None] = [None] * len(encs)
    for i in needed:
        loaded[i] = encs.encoding(i)
    total = sum(len(m[1]) for m in misses)
    groups = _groups(misses, jobs)
    work: _Work = (loaded, misses, groups, max_piece_cp())
    if jobs > 1 and total >= PARALLEL_MIN_BYTES and len(groups) > 1 \
            and sys.platform.startswith("linux"):
        for i in needed:  # subtle: before the fork, so the processes share what it builds
            enc = loaded[i]
            assert enc is not None
            enc.encode("preload the tables a first encode builds")
        done = forked_map(_count_group, work, len(groups), jobs)
        if done is not None:
            return [row for group in done for row in group]
    return [row for g in range(len(groups)) for row in _count_group(work, g)]


def count_candidates(candidates: Iterable[Candidate], encs: Encodings, root: Path, *,
                     limits: Limits | None = None, jobs: int = 1,
                     progress: Callable[[int], object] | None = None
                     ) -> Iterator[Counted | Skipped]:
    """A :class:`Counted` for each text file of ``candidates`` (files of the map of
    ``root``), or a :class:`~livetok.server.walk.Skipped` saying why it is left out (binary,
    unreadable, a pre-token too long); the files whose ``stat`` the stat index knows first,
    neither read nor hashed, then each batch of the others as it is counted (read, hashed,
    the count caches, the misses encoded). ``progress`` sees the bytes of each file handled.
    The new counts and stats go to the caches (written by :meth:`Encodings.save`).

    Runtime complexity: ``O(1)`` per file the stat index knows; ``O(bytes read)`` hashing
    the others, plus the encoding of the misses divided by ``jobs``.
    """
    limits = limits if limits is not None else Limits.from_env()
    started_ns = time.time_ns()
    unknown: list[Candidate] = []
    held = 0
    for chunk in _chunks(candidates, _LOOKUP_CHUNK):
        for cand, known in zip(chunk, _known_by_stat(chunk, encs)):
            if isinstance(known, Skipped) or isinstance(known, Counted):
                if progress is not None:
                    progress(cand.size)
                yield known
                continue
            unknown.append(cand)
            held += cand.size
            if held >= BATCH_BYTES:
                yield from _read_and_count(unknown, encs, root, limits, jobs, progress,
                                           started_ns)
                unknown, held = [], 0
    if unknown:
        yield from _read_and_count(unknown, encs, root, limits, jobs, progress, started_ns)


#: candidates looked up in the stat index and the count caches at a time
_LOOKUP_CHUNK = 512


def _chunks(items: Iterable[Candidate], n: int) -> Iterator[list[Candidate]]:
    chunk: list[Candidate] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= n:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _known_by_stat(chunk: list[Candidate], encs: Encodings) -> list[Counted | Skipped | None]:
    """For each candidate, its counts (or that it is binary) as the stat index and the count
    caches know them without reading it, or None."""
    key_of = StatIndex.key_of
    digests = encs.stats.get_many([key_of(c.stat) if c.stat is not None else b"" for c in chunk])
    found = [d for d in digests if d is not None and d != BINARY]
    counts = [iter(cache.get_many(found)) for cache in encs.caches]
    out: list[Counted | Skipped | None] = []
    for cand, digest in zip(chunk, digests):
        if digest is None:
            out.append(None)
        elif digest == BINARY:
            out.append(Skipped(Path(cand.path), _BINARY_REASON))
        else:
            tokens = tuple(next(c) for c in counts)
            out.append(None if None in tokens else
                       Counted(cand.path, cand.size, digest, cast("tuple[int, ...]", tokens)))
    return out


_BINARY_REASON = f"binary (a NUL byte in its first {SNIFF_BYTES:,} bytes)"


def _read_and_count(cands: list[Candidate], encs: Encodings, root: Path, limits: Limits,
                    jobs: int, progress: Callable[[int], object] | None, started_ns: int
                    ) -> Iterator[Counted | Skipped]:
    """Read and hash each of ``cands``, take its counts from the caches or count it; record
    the stats that may be (:class:`.cache.StatIndex`)."""
    misses: list[_Miss] = []
    stats: list[tuple[bytes, bytes]] = []
    for cand in cands:
        try:
            data = read_file(Path(cand.path), root, limits.file_bytes, MAX_FILE_BYTES_ENV)
        except trust.UntrustedFile as exc:
            yield Skipped(Path(cand.path), str(exc).split(": ", 1)[-1])
            continue
        binary = is_binary(data)
        digest = BINARY if binary else hashlib.sha256(data).digest()
        if _unchanged(cand, len(data), started_ns):
            assert cand.stat is not None
            stats.append((StatIndex.key_of(cand.stat), digest))
        if binary:
            yield Skipped(Path(cand.path), _BINARY_REASON)
            continue
        known = [c.get(digest) for c in encs.caches]
        if all(n is not None for n in known):
            if progress is not None:
                progress(len(data))
            yield Counted(cand.path, len(data), digest, tuple(n for n in known if n is not None))
            continue
        misses.append((cand, data, digest, known))
    encs.stats.put_many(stats)
    if misses:
        yield from _settle(misses, encs, jobs, progress)


def _unchanged(cand: Candidate, size: int, started_ns: int) -> bool:
    """Whether the bytes just read (``size`` of them) are the ones ``cand.stat`` stands for,
    to be recorded in the stat index: a stat again equal to it, the size read, and the file
    left alone for :data:`.cache.RACY_NS` before the map started."""
    if cand.stat is None or size != cand.stat.st_size or not StatIndex.stable(cand.stat,
                                                                              started_ns):
        return False
    try:
        again = os.stat(cand.path)
    except OSError:
        return False
    return StatIndex.key_of(again) == StatIndex.key_of(cand.stat)


def _settle(misses: list[_Miss], encs: Encodings, jobs: int,
            progress: Callable[[int], object] | None) -> Iterator[Counted | Skipped]:
    """Count a batch of misses and remember the counts."""
    rows = _count_misses(misses, encs, jobs)
    for (cand, data, digest, _known), row in zip(misses, rows):
        if progress is not None:
            progress(len(data))
        error = next((r for r in row if isinstance(r, str)), None)
        if error is not None:
            yield Skipped(Path(cand.path), f"not counted: {error}")
            continue
        counts = tuple(int(r) for r in row)
        for cache, n in zip(encs.caches, counts):
            cache.put(digest, n)
        yield Counted(cand.path, len(data), digest, counts)
