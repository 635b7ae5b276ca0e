"""Token counts kept across runs: a file's count in an encoding, keyed by the SHA-256 of the
file's bytes and the encoding's identity, so that reopening a large repository reads and
hashes its files but encodes none of them again.

Where: ``$LIVETOK_COUNT_CACHE_DIR``, else the ``counts`` folder of the vocabulary cache's folder
(:func:`livetok.incremental.vocab_cache.cache_dir`: ``$LIVETOK_CACHE_DIR``, else
``platformdirs.user_cache_dir("livetok")``; ``LIVETOK_CACHE=0`` turns both off), one file per
encoding identity (:func:`encoding_identity`). Nothing a workspace holds chooses the folder or
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
most ``$LIVETOK_COUNT_CACHE_MAX_ENTRIES`` counts are kept per encoding (the least recently
used go first).
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import struct
import tempfile
import threading

from livetok.incremental.catalog import model_encoding
from livetok.incremental.find import find_hf_tokenizer
from livetok.incremental.limits import size_limit
from livetok.incremental.registry import ALIASES, is_file_name, tokenizer_json_path
from livetok.incremental.vocab_cache import CACHE_DIR_ENV, CACHE_SWITCH_ENV, cache_dir, folder_refusal

from livetok.server.version import livetok_version

__all__ = ["COUNT_CACHE_DIR_ENV", "FORMAT", "MAX_ENTRIES_ENV", "CountCache", "encoding_identity"]

log = logging.getLogger(__name__)

#: the layout of a cache file; raise it when the records change shape
FORMAT = 1
#: the folder of the count caches (default: ``counts`` in the vocabulary cache's folder)
COUNT_CACHE_DIR_ENV = "LIVETOK_COUNT_CACHE_DIR"
#: the most counts kept per encoding (40 bytes each on disk)
MAX_ENTRIES_ENV = "LIVETOK_COUNT_CACHE_MAX_ENTRIES"
_MAX_ENTRIES = 400_000
_SUBFOLDER = "counts"
_MAGIC = b"LTCOUNT\n"
#: magic, format, SHA-256 of the encoding identity, number of records, SHA-256 of the records
_HEADER = struct.Struct("<8sI32sQ32s")
#: SHA-256 of a file's bytes, its token count
_RECORD = struct.Struct("<32sQ")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
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
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return f"tokenizer.json:{h.hexdigest()}\0livetok:{livetok_version()}"


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


class CountCache:
    """The cached counts of one encoding identity: ``digest -> tokens``, loaded on first
    use, written by :meth:`save`. Thread-safe.

    >>> c = CountCache("name:example", folder=None)
    >>> c.put(b"\\0" * 32, 7); c.get(b"\\0" * 32), c.get(b"\\1" * 32)
    (7, None)

    Runtime complexity: ``O(1)`` per :meth:`get` and :meth:`put` once loaded; loading and
    saving ``O(entries)``.
    """

    def __init__(self, identity: str, *, folder: str | None | bool = True) -> None:
        #: what the counts depend on (:func:`encoding_identity`)
        self.identity = identity
        self._key = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).digest()
        where = _folder() if folder is True else folder or None
        #: the cache file (None: counts are kept in memory only)
        self.path = (None if where is None else
                     os.path.join(where, f"counts-{self._key.hex()[:24]}.bin"))
        #: digest -> tokens, least recently used first
        self._entries: dict[bytes, int] = {}
        self._loaded = self.path is None
        self._added = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._load()
            return len(self._entries)

    def get(self, digest: bytes) -> int | None:
        """The count of the bytes whose SHA-256 is ``digest``, or None."""
        with self._lock:
            self._load()
            n = self._entries.pop(digest, None)
            if n is not None:
                self._entries[digest] = n  # now the most recently used
            return n

    def put(self, digest: bytes, tokens: int) -> None:
        """Remember ``tokens`` for the bytes whose SHA-256 is ``digest``."""
        with self._lock:
            self._load()
            self._entries.pop(digest, None)
            self._entries[digest] = tokens
            self._added += 1

    def save(self) -> bool:
        """Write the counts to the cache file when some were added since the last save,
        merged with what another process wrote meanwhile; True when written.

        Runtime complexity: ``O(entries)``.
        """
        with self._lock:
            if self.path is None or not self._added:
                return False
            on_disk = self._read()
            if on_disk:  # another process's counts: kept, as older than ours
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

    def _read(self) -> dict[bytes, int]:
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
            limit = _HEADER.size + _RECORD.size * max(_MAX_ENTRIES, _max_entries())
            why = None
            if not stat.S_ISREG(st.st_mode):
                why = "not a regular file"
            elif st.st_mode & 0o022 or hasattr(os, "getuid") and st.st_uid != os.getuid():
                why = "not trusted: owned by another user or writable by others"
            elif st.st_size > limit:
                why = f"larger than {MAX_ENTRIES_ENV} allows ({st.st_size:,} bytes)"
            data = f.read(limit + 1) if why is None else b""
        if why is None:
            why, records = _parse(data, self._key)
            if why is None:
                return records
        log.warning("count cache %s: %s; ignored, rebuilt", self.path, why)
        return {}

    def _write(self) -> bool:
        assert self.path is not None
        payload = b"".join(_RECORD.pack(d, n) for d, n in self._entries.items())
        header = _HEADER.pack(_MAGIC, FORMAT, self._key, len(self._entries),
                              hashlib.sha256(payload).digest())
        folder = os.path.dirname(self.path)
        tmp = None
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            # mkstemp: O_EXCL, mode 0600; os.replace renames over a planted link, never follows it
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".partial", dir=folder)
            with os.fdopen(fd, "wb") as f:
                f.write(header)
                f.write(payload)
            os.replace(tmp, self.path)
            tmp = None
            return True
        except OSError as exc:
            log.info("count cache %s: not written (%s); counted again next time", self.path,
                     exc.strerror or exc)
            return False
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _max_entries() -> int:
    return size_limit(MAX_ENTRIES_ENV, _MAX_ENTRIES, unit="counts")


def _parse(data: bytes, key: bytes) -> tuple[str | None, dict[bytes, int]]:
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
        return "made for another encoding", {}
    if len(payload) != n * _RECORD.size:
        return f"truncated or padded ({len(payload):,} bytes of records, not {n * 40:,})", {}
    if hashlib.sha256(payload).digest() != digest:
        return "corrupt (its checksum does not match)", {}
    return None, dict(_RECORD.iter_unpack(payload))
