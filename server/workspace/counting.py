"""Counting the files of a workspace map: the stat index first, then the count caches, then
the misses, on several cores.

A file whose ``stat`` the stat index knows (:class:`~.count_store.StatIndex`: it did not change
since it was read) is neither read nor hashed: its SHA-256 comes from the index and its
counts from each encoding's :class:`~.count_store.CountCache`. Any other file is read once
(:mod:`.classify`), its bytes hashed (SHA-256) and looked up in the count caches; only the
misses are encoded. A file's count is the count ``livetok count FILE`` prints: its bytes
decoded as UTF-8 (undecodable bytes as U+FFFD) and ``len(encode(text))``; a text holding a
pre-token longer than ``$LIVETOK_MAX_PIECE_CP`` code points is refused as ``livetok count``
refuses it (a file of one 8 MB run of ``=`` would cost minutes to encode), and left out with
the reason.

The files to read go in batches of at most :data:`BATCH_BYTES`. A batch of
:data:`PARALLEL_MIN_BYTES` or more is shared out to ``jobs`` forked processes
(:func:`livetok.server.forked.forked_map`, as ``livetok check`` and ``livetok count -j``
do): they inherit the loaded encodings and the count caches (nothing is sent but indexes),
each takes groups of files of about :data:`_GROUP_BYTES` (one message per group, not per
file) and reads, hashes and counts them itself, so reading overlaps counting and no process
holds more than one file's bytes; only sizes, hashes and counts travel back. Such a batch
loads the encodings before the fork; a smaller one loads them only when a file misses the
cache, and a run whose counts all come from the caches loads no vocabulary.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple, Sequence, cast

from livetok.incremental import Encoding, PieceEncoding, get_encoding, list_encodings
from livetok.incremental.names.catalog import model_encoding
from livetok.incremental.env_limits import size_limit
from livetok.incremental.names.registry import ALIASES, is_file_name
from livetok.incremental.stream import MAX_PIECE_CP, check_pieces

from livetok.server import trust
from livetok.server.forked import forked_map
from livetok.server.walk import Skipped
from livetok.server.workspace.count_store import BINARY, CountCache, StatIndex, encoding_identity
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

    def widen_piece_caches(self, limit: int) -> None:
        """The piece memo of each byte-level encoding loaded, widened to ``limit`` pieces per
        generation (``Encoding.widen_piece_cache``). Runtime complexity: ``O(encodings)``."""
        for enc in self._loaded:
            if isinstance(enc, Encoding):
                enc.widen_piece_cache(limit)

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


class _Read(NamedTuple):
    """What reading one file gave: its size, the SHA-256 of its bytes (:data:`.cache.BINARY`
    for a binary file), its count (or an error's message) per encoding, or why it was not
    read (a ``str`` in place of the counts); and whether its stat may be recorded."""

    size: int
    digest: bytes
    counts: tuple[int | str, ...] | str
    recordable: bool


class _Reader:
    """Reads, hashes and counts the files of a map (:meth:`one`), in this process or in
    forked ones that inherit it: the encodings needed are then loaded before the fork, and
    the count caches are read as they were at the fork."""

    def __init__(self, encs: Encodings, root: Path, limits: Limits, started_ns: int) -> None:
        self.encs = encs
        self.root = root
        self.limits = limits
        self.started_ns = started_ns
        self.max_piece = max_piece_cp()

    def one(self, cand: Candidate) -> _Read:
        """Read ``cand``: bounded, binary or not, its SHA-256, its counts from the caches or
        counted."""
        try:
            data = read_file(Path(cand.path), self.root, self.limits.file_bytes,
                             MAX_FILE_BYTES_ENV)
        except trust.UntrustedFile as exc:
            return _Read(cand.size, b"", str(exc).split(": ", 1)[-1], False)
        recordable = _unchanged(cand, len(data), self.started_ns)
        if is_binary(data):
            return _Read(len(data), BINARY, (), recordable)
        digest = hashlib.sha256(data).digest()
        text = None
        counts: list[int | str] = []
        for i, cache in enumerate(self.encs.caches):
            n = cache.get(digest)
            if n is None:
                if text is None:
                    text = data.decode("utf-8", errors="replace")
                try:
                    n = count_text(self.encs.encoding(i), text, self.max_piece)
                except ValueError as exc:  # PieceTooLongError, a hostile tokenizer's bound
                    counts.append(str(exc))
                    continue
            counts.append(n)
        return _Read(len(data), digest, tuple(counts), recordable)


#: what the forked processes inherit: the files, the groups (file indexes), the reader
_Work = tuple[list[Candidate], list[list[int]], _Reader]


#: pieces per generation of a counting process's piece memo: files of one repository share
#: their words at distances a live document's memo forgets (counting half of a 10,000-file,
#: 50 MB repository: 9.0 s of CPU with the default, 4.7 s with this; about 8 MB more)
BULK_PIECE_CACHE = 1 << 16


def _read_group(work: _Work, g: int) -> list[_Read]:
    """:meth:`_Reader.one` of group ``g``'s files, in a forked process (whose byte-level
    encodings keep :data:`BULK_PIECE_CACHE` pieces)."""
    cands, groups, reader = work
    reader.encs.widen_piece_caches(BULK_PIECE_CACHE)
    return [reader.one(cands[i]) for i in groups[g]]


def _groups(cands: list[Candidate], jobs: int) -> list[list[int]]:
    """File indexes in groups of about :data:`_GROUP_BYTES` (smaller when few bytes, so that
    every process gets several)."""
    total = sum(c.size for c in cands)
    size = max(1, min(_GROUP_BYTES, total // (4 * max(jobs, 1)) or 1))
    groups: list[list[int]] = [[]]
    held = 0
    for i, c in enumerate(cands):
        if held >= size:
            groups.append([])
            held = 0
        groups[-1].append(i)
        held += c.size
    return groups


def _read_all(cands: list[Candidate], reader: _Reader, jobs: int) -> Iterator[_Read]:
    """:meth:`_Reader.one` of each of ``cands``, in order: shared out to ``jobs`` forked
    processes when there are bytes enough (each reads, hashes and counts its own files:
    only the counts travel back), else here."""
    total = sum(c.size for c in cands)
    groups = _groups(cands, jobs)
    if jobs > 1 and total >= PARALLEL_MIN_BYTES and len(groups) > 1 \
            and sys.platform.startswith("linux"):
        for i in range(len(reader.encs)):  # subtle: before the fork, so the processes share
            reader.encs.encoding(i).encode("preload the tables a first encode builds")
        done = forked_map(_read_group, (cands, groups, reader), len(groups), jobs)
        if done is not None:
            for group in done:
                yield from group
            return
    for cand in cands:
        yield reader.one(cand)


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
            out.append(Skipped(Path(cand.path), BINARY_REASON))
        else:
            tokens = tuple(next(c) for c in counts)
            out.append(None if None in tokens else
                       Counted(cand.path, cand.size, digest, cast("tuple[int, ...]", tokens)))
    return out


#: why a binary file is left out (``livetok count -r`` sums these in one line)
BINARY_REASON = f"binary (a NUL byte in its first {SNIFF_BYTES:,} bytes)"


def _read_and_count(cands: list[Candidate], encs: Encodings, root: Path, limits: Limits,
                    jobs: int, progress: Callable[[int], object] | None, started_ns: int
                    ) -> Iterator[Counted | Skipped]:
    """Read and hash each of ``cands``, take its counts from the caches or count it
    (:func:`_read_all`); remember the new counts and the stats that may be recorded
    (:class:`.cache.StatIndex`)."""
    stats: list[tuple[bytes, bytes]] = []
    for cand, got in zip(cands, _read_all(cands, _Reader(encs, root, limits, started_ns), jobs)):
        if progress is not None:
            progress(got.size)
        if isinstance(got.counts, str):
            yield Skipped(Path(cand.path), got.counts)
            continue
        if got.recordable and cand.stat is not None:
            stats.append((StatIndex.key_of(cand.stat), got.digest))
        if got.digest == BINARY:
            yield Skipped(Path(cand.path), BINARY_REASON)
            continue
        error = next((n for n in got.counts if isinstance(n, str)), None)
        if error is not None:
            yield Skipped(Path(cand.path), f"not counted: {error}")
            continue
        counts = tuple(int(n) for n in got.counts)
        for cache, n in zip(encs.caches, counts):
            if cache.get(got.digest) is None:  # (counted now: in another process, maybe)
                cache.put(got.digest, n)
        yield Counted(cand.path, got.size, got.digest, counts)
    encs.stats.put_many(stats)


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
