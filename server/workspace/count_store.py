"""Token counts kept across runs: a file's count in an encoding, keyed by the SHA-256 of the
file's bytes and the encoding's identity (:class:`CountCache`), so that reopening a large
repository encodes none of its files again; and beside the counts a stat index
(:class:`StatIndex`: a file's device, inode, size, mtime and ctime -> the SHA-256 of its
bytes), so that it neither reads nor hashes a file that did not change.

Where: ``$LIVETOK_COUNT_CACHE_DIR``, else the ``counts`` folder of the vocabulary cache's folder
(:func:`livetok.incremental.vocab.parse_store.cache_dir`: ``$LIVETOK_CACHE_DIR``, else
``platformdirs.user_cache_dir("livetok")``; ``LIVETOK_CACHE=0`` turns both off), one file per
encoding identity (:func:`encoding_identity`) and one stat index. Nothing a workspace holds chooses the folder or
the file's name, and no path is stored: a cloned repository can neither make livetok write
elsewhere nor plant counts (it cannot write in the user's cache folder, and each count there
was computed by livetok from bytes whose hash is its key).

The file is untrusted all the same (a shared or tampered cache folder, a disk error), and is
read by the rules of the vocabulary cache (issue 26): a folder owned by another user or
writable by others turns the cache off with one warning; a cache file is opened without
following a final symbolic link and without blocking, and read only when it is a regular file
of the user's that no one else may write, no larger than its bound; its header names the
format and the encoding identity and holds a SHA-256 of the records. Anything else (truncated,
corrupt, another encoding's, a FIFO planted at its name) is ignored with a log line and the
file is rebuilt from the counts made now; a cache that cannot be written (a read-only home, a
full disk) is skipped with a log line. The records are fixed-size binary (``struct``, never
``marshal`` or ``pickle``): the worst a crafted file could do is give wrong counts, and only
the user can write one.

A write goes to a temporary file in the folder, renamed over the cache file (atomic: a reader
sees the old file or the new one). Two processes writing the same file (an editor and a
``livetok count -r``) merge: a writer first reads what is on disk and keeps its entries. At
most ``$LIVETOK_COUNT_CACHE_MAX_ENTRIES`` counts are kept per encoding, and as many entries
in the stat index (the least recently used go first).
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import struct
import threading
from typing import Any, ClassVar, Generic, Iterable, Sequence, TypeVar

from livetok.incremental.names.catalog import model_encoding
from livetok.incremental.vocab.find import find_hf_tokenizer
from livetok.incremental.env_limits import size_limit
from livetok.incremental.vocab.readers import vocabulary_limit
from livetok.incremental.names.registry import ALIASES, is_file_name, tokenizer_json_path
from livetok.incremental.vocab.parse_store import CACHE_DIR_ENV, CACHE_SWITCH_ENV, cache_dir, folder_refusal, write_private

from livetok.server import trust
from livetok.server.version import livetok_version

__all__ = ["BINARY", "COUNT_CACHE_DIR_ENV", "FORMAT", "MAX_ENTRIES_ENV", "RACY_NS", "CountCache",
           "StatIndex", "encoding_identity"]

log = logging.getLogger(__name__)

#: the layout of a cache file; raise it when the records change shape
FORMAT = 1
#: the folder of the count caches (default: ``counts`` in the vocabulary cache's folder)
COUNT_CACHE_DIR_ENV = "LIVETOK_COUNT_CACHE_DIR"
#: the most counts kept per encoding (40 bytes each on disk), and entries in the stat index
#: (72 bytes each)
MAX_ENTRIES_ENV = "LIVETOK_COUNT_CACHE_MAX_ENTRIES"
_MAX_ENTRIES = 400_000
_SUBFOLDER = "counts"
_MAGIC = b"LTCOUNT\n"
#: magic, format, SHA-256 of the encoding identity, number of records, SHA-256 of the records
_HEADER = struct.Struct("<8sI32sQ32s")
#: a stat recorded no sooner than this after the file's last change (see StatIndex)
RACY_NS = 2_000_000_000
#: the value of a binary file in the stat index (no SHA-256 is 32 zero bytes)
BINARY = bytes(32)
_U64 = (1 << 64) - 1
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
V = TypeVar("V")
#: folders refused in this process (one warning each)
_refused: set[str] = set()


def encoding_identity(name: str) -> str:
    """What the counts of encoding ``name`` depend on: its canonical name (aliases and model
    names resolved) and livetok's version; for a ``tokenizer.json`` (a path, ``hf:ORG/NAME``),
    the SHA-256 of the file instead of its name, so an edited file gets new counts. Found
    without loading the encoding: a run whose counts all come from the cache loads none.

    >>> encoding_identity("gpt-4o") == encoding_identity("o200k_base")
    True

    Runtime complexity: ``O(1)`` for a name; ``O(file size)`` for a ``tokenizer.json``.
    """
    canonical = ALIASES.get(name, name)
    if not is_file_name(canonical):
        model = model_encoding(canonical)  # a model's name: its tokenizer's (VocabularyError
        if model is not None and model != canonical:  # for an ≈ one, as get_encoding says)
            return encoding_identity(model)
        return f"name:{canonical}\0livetok:{livetok_version()}"
    if canonical.startswith("hf:"):
        path = str(find_hf_tokenizer(canonical))
    else:
        path = tokenizer_json_path(os.path.abspath(os.path.expanduser(canonical)), canonical)
    # bounded, a regular file only, opened without blocking: a link to /dev/zero or a FIFO
    # is refused (trust.UntrustedFile, a ValueError), not hashed for ever or waited for
    digest = trust.file_sha256(path, root=None, limit=vocabulary_limit(),
                               what="tokenizer.json", env=trust.VOCAB_BYTES_ENV)
    return f"tokenizer.json:{digest}\0livetok:{livetok_version()}"


def _folder() -> str | None:
    """The folder of the count caches, or None when the cache is off or not trusted."""
    base = cache_dir()
    if base is None:
        return None
    named = os.environ.get(COUNT_CACHE_DIR_ENV, "").strip()
    folders = (named,) if named else (base, os.path.join(base, _SUBFOLDER))
    for folder in folders:
        why = folder_refusal(folder)
        if why is not None:
            if folder not in _refused:
                _refused.add(folder)
                log.warning("count cache: off, the folder %s is not trusted: %s, and anyone "
                            "who may write there could plant counts; set %s to a folder of "
                            "your own (or %s=0 to turn the cache off)", folder, why,
                            CACHE_DIR_ENV, CACHE_SWITCH_ENV)
            return None
    return folders[-1]


class _Records(Generic[V]):
    """A map ``key -> value`` of fixed-size binary records kept in one file of the cache
    folder, by the rules of the module's docstring: loaded on first use, written by
    :meth:`save`, at most ``$LIVETOK_COUNT_CACHE_MAX_ENTRIES`` entries (the least recently
    used go first). Thread-safe. :class:`CountCache` and :class:`StatIndex` are two.

    Runtime complexity: ``O(1)`` per key read or written once loaded; loading and saving
    ``O(entries)``.
    """

    #: the layout of a record: the key, then the value (two fields)
    _record: ClassVar[struct.Struct]
    #: the cache file's name, before its identity's hash
    _prefix: ClassVar[str]

    def __init__(self, identity: str, *, folder: str | None | bool = True) -> None:
        #: what the records depend on (for counts: :func:`encoding_identity`)
        self.identity = identity
        self._key = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).digest()
        where = _folder() if folder is True else folder or None
        #: the cache file (None: the records are kept in memory only)
        self.path = (None if where is None else
                     os.path.join(where, f"{self._prefix}-{self._key.hex()[:24]}.bin"))
        #: key -> value, least recently used first
        self._entries: dict[bytes, V] = {}
        self._loaded = self.path is None
        self._added = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._load()
            return len(self._entries)

    def get(self, key: bytes) -> V | None:
        """The value of ``key``, or None.

        Runtime complexity: ``O(1)`` once loaded.
        """
        return self.get_many((key,))[0]

    def get_many(self, keys: Sequence[bytes]) -> list[V | None]:
        """The values of ``keys`` (None where unknown), under one lock; each one found is
        now the most recently used.

        Runtime complexity: ``O(len(keys))`` once loaded.
        """
        with self._lock:
            self._load()
            entries = self._entries
            out = [entries.pop(k, None) for k in keys]
            for k, v in zip(keys, out):
                if v is not None:
                    entries[k] = v
            return out

    def put(self, key: bytes, value: V) -> None:
        """Remember ``value`` for ``key``.

        Runtime complexity: ``O(1)`` once loaded.
        """
        self.put_many(((key, value),))

    def put_many(self, items: Iterable[tuple[bytes, V]]) -> None:
        """Remember each ``(key, value)`` of ``items``, under one lock.

        Runtime complexity: ``O(len(items))`` once loaded.
        """
        with self._lock:
            self._load()
            for key, value in items:
                self._entries.pop(key, None)
                self._entries[key] = value
                self._added += 1

    def save(self) -> bool:
        """Write the records to the cache file when some were added since the last save,
        merged with what another process wrote meanwhile; True when written.

        Runtime complexity: ``O(entries)``.
        """
        with self._lock:
            if self.path is None or not self._added:
                return False
            on_disk = self._read()
            if on_disk:  # another process's records: kept, as older than ours
                merged = {d: n for d, n in on_disk.items() if d not in self._entries}
                merged.update(self._entries)
                self._entries = merged
            limit = _max_entries()
            if len(self._entries) > limit:
                for d in list(self._entries)[:len(self._entries) - limit]:
                    del self._entries[d]
            if self._write():
                self._added = 0
                return True
            return False

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            self._entries = self._read()

    def _read(self) -> dict[bytes, V]:
        """The records of the cache file, or nothing (with a log line saying why, unless
        there is no file)."""
        assert self.path is not None
        try:
            fd = os.open(self.path, _OPEN_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            return {}
        except OSError as exc:
            what = "a symbolic link, never followed" if os.path.islink(self.path) else (
                exc.strerror or str(exc))
            log.warning("count cache %s: cannot read it (%s); ignored, rebuilt", self.path, what)
            return {}
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            # (a lowered limit still reads the file: its oldest entries go at the next save)
            limit = _HEADER.size + self._record.size * max(_MAX_ENTRIES, _max_entries())
            why = None
            if not stat.S_ISREG(st.st_mode):
                why = "not a regular file"
            elif st.st_mode & 0o022 or hasattr(os, "getuid") and st.st_uid != os.getuid():
                why = "not trusted: owned by another user or writable by others"
            elif st.st_size > limit:
                why = f"larger than {MAX_ENTRIES_ENV} allows ({st.st_size:,} bytes)"
            data = f.read(limit + 1) if why is None else b""
        if why is None:
            why, records = _parse(data, self._key, self._record)
            if why is None:
                return records
        log.warning("count cache %s: %s; ignored, rebuilt", self.path, why)
        return {}

    def _write(self) -> bool:
        assert self.path is not None
        pack = self._record.pack
        payload = b"".join(pack(d, n) for d, n in self._entries.items())
        header = _HEADER.pack(_MAGIC, FORMAT, self._key, len(self._entries),
                              hashlib.sha256(payload).digest())
        try:  # replaces a planted file or link at the path, never follows it
            write_private(self.path, header, payload)
            return True
        except OSError as exc:
            log.info("count cache %s: not written (%s); counted again next time", self.path,
                     exc.strerror or exc)
            return False


class CountCache(_Records[int]):
    """The cached counts of one encoding identity: ``digest -> tokens`` (the SHA-256 of a
    file's bytes, its count), in the file ``counts-HASH.bin``.

    >>> c = CountCache("name:example", folder=None)
    >>> c.put(b"\\0" * 32, 7); c.get(b"\\0" * 32), c.get(b"\\1" * 32)
    (7, None)

    Runtime complexity: as the records' (``O(1)`` per count once loaded).
    """

    #: SHA-256 of a file's bytes, its token count
    _record = struct.Struct("<32sQ")
    _prefix = "counts"


class StatIndex(_Records[bytes]):
    """What a file's ``stat`` says of its bytes: ``(device, inode, size, mtime, ctime) ->
    SHA-256`` of the bytes read when the file had that ``stat`` (or :data:`BINARY`), in the
    file ``stats-HASH.bin`` beside the counts, one for every encoding. A file whose ``stat``
    is known is neither read nor hashed (the warm map's saving); any change to the file
    changes its ``stat``, and a new ``stat`` is a miss (read, hashed, counted from the
    count cache when its bytes are known).

    The rule (git's "racy clean" rule): a ``stat`` is recorded only when the bytes were read
    whole, an ``fstat`` after the read equals the ``stat`` before it, and the file's mtime
    and ctime are older than :data:`RACY_NS` before the map started. Without the last rule,
    a file written twice within one tick of the file system's clock (the same size, the same
    times) could keep the first write's count; with it, any write after the record gets a
    later ctime (which no program can set back: ``utime`` sets only mtime and atime, and
    updates ctime), so a new ``stat``. No path is stored: the key is the file's identity on
    its device (a hard link shares it, and its bytes); an inode reused by a new file has a
    later ctime. What could still fool it: a clock set back by more than :data:`RACY_NS`
    between the record and a write that also keeps size and mtime, on the same inode.

    >>> s = StatIndex(folder=None)
    >>> key = StatIndex.key_of(os.stat(os.__file__))
    >>> s.put(key, b"h" * 32); s.get(key) == b"h" * 32, len(key)
    (True, 40)

    Runtime complexity: as the records' (``O(1)`` per file once loaded).
    """

    #: the file's identity and times, the SHA-256 of its bytes
    _record = struct.Struct("<40s32s")
    _prefix = "stats"
    _key_of = struct.Struct("<QQQqq").pack

    def __init__(self, *, folder: str | None | bool = True) -> None:
        super().__init__(f"stat-index\0format:{FORMAT}", folder=folder)

    @staticmethod
    def key_of(st: os.stat_result) -> bytes:
        """The key of a file's ``stat``: device, inode, size, mtime and ctime (in ns).

        Runtime complexity: ``O(1)``.
        """
        return StatIndex._key_of(st.st_dev & _U64, st.st_ino & _U64, st.st_size,
                                 st.st_mtime_ns, st.st_ctime_ns)

    @staticmethod
    def stable(st: os.stat_result, started_ns: int) -> bool:
        """Whether ``st`` may be recorded, for a map started at ``started_ns``
        (``time.time_ns()``): its mtime and ctime older than :data:`RACY_NS` before it.

        Runtime complexity: ``O(1)``.
        """
        return max(st.st_mtime_ns, st.st_ctime_ns) < started_ns - RACY_NS


def _max_entries() -> int:
    return size_limit(MAX_ENTRIES_ENV, _MAX_ENTRIES, unit="counts")


def _parse(data: bytes, key: bytes, record: struct.Struct) -> tuple[str | None, dict[bytes, Any]]:
    """The records of a cache file's bytes, or why they cannot be used."""
    if len(data) < _HEADER.size:
        return "truncated (shorter than its header)", {}
    magic, fmt, file_key, n, digest = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if magic != _MAGIC:
        return "not a livetok count cache", {}
    if fmt != FORMAT:
        return "made by another version of livetok", {}
    if file_key != key:
        return "made for another encoding (or the other kind of cache file)", {}
    if len(payload) != n * record.size:
        return (f"truncated or padded ({len(payload):,} bytes of records, "
                f"not {n * record.size:,})"), {}
    if hashlib.sha256(payload).digest() != digest:
        return "corrupt (its checksum does not match)", {}
    return None, dict(record.iter_unpack(payload))
