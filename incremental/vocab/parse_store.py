"""A cache of parsed vocabularies: what reading a vocabulary file produces (the ranks of a
``.tiktoken`` file, of GPT-2's ``encoder.json`` + ``vocab.bpe``, a SentencePiece model), kept
in the user's cache directory so that the next process loads it in a fraction of the parse
time (docs/startup.md: the figures and the choices measured).

Where: ``$LIVETOK_CACHE_DIR``, else ``platformdirs.user_cache_dir("livetok")``
(``~/.cache/livetok`` on Linux); ``LIVETOK_CACHE=0`` turns the cache off. One file per real
source file and reader (named by a hash of the reader's kind and the source's real path, so
that links to one file share one entry), written atomically (a temporary file, then
``os.replace``), readable and writable by the user only. At most ``LIVETOK_CACHE_MAX_ENTRIES``
files and ``LIVETOK_CACHE_MAX_BYTES`` bytes are kept: after each write the least recently used
ones (by mtime, touched on every hit) are removed.

The folder and every file in it are untrusted input (a shared or planted cache folder, issue
26). A folder owned by another user or writable by group or others turns the cache off for
the process with one warning. A cache file is opened without blocking and without following a
final symlink, and read only when ``fstat`` says it is a regular file of the user's that no
one else may write: a FIFO, a folder, a device or a symlink planted at its name is a miss
with one warning, never a hang. Its header holds the keys it was made for and a SHA-256 of its
payload. The source key is a SHA-256 of the source files' bytes as they are on disk (the
whole files: cheap next to a parse; the file's identity) and of the reader's kind and
options; the code key, of the code that made it: this cache's format number, the Python
version whose ``marshal`` wrote it, and the source of the modules that parse (livetok's
version as far as the payload is concerned, known without ``importlib.metadata``, which would
make a cached load half as slow again). A file that is truncated, corrupt, from another
livetok or another vocabulary is ignored with a log line (``logging``, logger
``livetok.incremental.vocab.parse_store``) and rebuilt from the source; one that cannot be written
(a read-only home, a full disk) is skipped with a log line. Either way the vocabulary is the
one the source holds.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import re
import stat
import struct
import sys
import tempfile
import time
from typing import Any, Callable, NamedTuple, Sequence, TypeVar

from ..env_limits import size_limit

__all__ = ["FORMAT", "CACHE_DIR_ENV", "CACHE_SWITCH_ENV", "MAX_ENTRIES_ENV", "MAX_BYTES_ENV",
           "MAX_ENTRIES", "MAX_BYTES", "cache_dir", "cached", "cache_file", "folder_refusal",
           "write_private"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

#: the layout of the cache files; raise it when what a reader caches changes shape
FORMAT = 1
#: the folder of the cache files (default: ``platformdirs.user_cache_dir("livetok")``)
CACHE_DIR_ENV = "LIVETOK_CACHE_DIR"
#: ``0`` (or ``off``, ``no``, ``false``) turns the cache off
CACHE_SWITCH_ENV = "LIVETOK_CACHE"
#: the most cache files kept (default :data:`MAX_ENTRIES`)
MAX_ENTRIES_ENV = "LIVETOK_CACHE_MAX_ENTRIES"
#: the most bytes of cache files kept (default :data:`MAX_BYTES`)
MAX_BYTES_ENV = "LIVETOK_CACHE_MAX_BYTES"
#: a few dozen vocabularies (o200k_base's file is 3.4 MB, Gemma 3's 15 MB)
MAX_ENTRIES = 64
MAX_BYTES = 256 << 20

_MAGIC = b"LTVOCAB\n"
#: magic, format, code key, source key, payload length, payload SHA-256
_HEADER = struct.Struct("<8sI32s32sQ32s")
_OFF = {"0", "off", "no", "false"}
#: the names :func:`cache_file` gives (pruning removes these and nothing else)
_ENTRY_NAME = re.compile(r"[^.].*-[0-9a-f]{24}\.marshal")
#: a temporary file this old was left by a process that died while writing it
_STALE_PARTIAL_NS = 3600 * 10**9
#: open a cache file without waiting on a FIFO or a device and without following a symlink
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
#: folders refused in this process, and why (one warning each)
_refused: dict[str, str] = {}


class _Limits(NamedTuple):
    """How much the cache keeps (:data:`MAX_ENTRIES_ENV`, :data:`MAX_BYTES_ENV`)."""
    entries: int
    bytes: int


def _limits() -> _Limits:
    """The limits in force; a ``ValueError`` naming the variable that is not a number."""

    return _Limits(size_limit(MAX_ENTRIES_ENV, MAX_ENTRIES, unit="cache files"),
                   size_limit(MAX_BYTES_ENV, MAX_BYTES))


def cache_dir() -> str | None:
    """The folder of the cache files, or ``None`` when ``LIVETOK_CACHE=0`` turns it off.
    (Whether it may be used is :func:`folder_refusal`'s question.)

    Runtime complexity: ``O(1)``.
    """
    if os.environ.get(CACHE_SWITCH_ENV, "").strip().lower() in _OFF:
        return None
    named = os.environ.get(CACHE_DIR_ENV, "").strip()
    if named:
        return named
    try:
        import platformdirs  # (imported only when a vocabulary is read)
    except ImportError:  # installed without its dependencies: count all the same
        logger.info("vocabulary cache: off, platformdirs is not installed "
                    "(pip install platformdirs, or set %s)", CACHE_DIR_ENV)
        return None
    return platformdirs.user_cache_dir("livetok", appauthor=False)


def folder_refusal(folder: str) -> str | None:
    """Why the cache folder ``folder`` must not be used (``None`` when it may): it is owned by
    another user, or group or others may write in it, so that anyone could plant a cache
    file there. A folder that does not exist yet may be used (it is made with mode 0700); one
    that cannot be looked at is left to the write, which logs why it cannot write there.

    >>> folder_refusal("/no/such/folder") is None
    True

    Runtime complexity: ``O(1)`` (one ``stat``).
    """
    if not hasattr(os, "getuid"):  # (no POSIX owners: the folder is the user profile's)
        return None
    try:
        st = os.stat(folder)  # (a symlinked ~/.cache is the user's choice: its target counts)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    if st.st_uid != os.getuid():
        return f"it is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return (f"group or others may write in it (mode {stat.S_IMODE(st.st_mode):04o}: "
                f"chmod go-w {folder} fixes that)")
    return None


def _usable(folder: str) -> bool:
    """Whether the cache may use ``folder``; a refused one is refused for the rest of the
    process, with one warning that says how to fix it."""
    if folder in _refused:
        return False
    why = folder_refusal(folder)
    if why is None:
        return True
    _refused[folder] = why
    logger.warning("vocabulary cache: off for this process, the folder %s is not trusted: %s, "
                   "and anyone who may write there could plant a cache file; set %s to a "
                   "folder of your own (or %s=0 to turn the cache off)",
                   folder, why, CACHE_DIR_ENV, CACHE_SWITCH_ENV)
    return False


def cache_file(kind: str, name: str, folder: str) -> str:
    """The cache file of the source ``name`` read as ``kind``: one file per reader and real
    source file (links to one file share it; a new livetok or a changed source overwrites
    it, the header telling which bytes it was made from).

    >>> cache_file("tiktoken", "/v/o200k_base.tiktoken", "/c")[:12]
    '/c/tiktoken-'

    Runtime complexity: ``O(len(name))`` (one ``lstat`` per component of the path).
    """
    real = os.path.realpath(name)
    tag = hashlib.sha256(f"{kind}\0{real}".encode("utf-8", "surrogatepass"))
    return os.path.join(folder, f"{kind}-{tag.hexdigest()[:24]}.marshal")


def _code_key(code: Sequence[str]) -> bytes:
    """SHA-256 of what makes a payload: the format, the Python that marshals it, the source of
    the modules ``code`` (file paths) that parse (their installed version when unreadable)."""
    h = hashlib.sha256(f"{FORMAT}\0{sys.implementation.cache_tag}\0{marshal.version}".encode())
    for path in code:
        try:
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        except OSError:  # no source beside the code (a zip, a frozen build): the version
            from importlib.metadata import version

            h.update(f"{path}\0{version('livetok')}".encode())
    return h.digest()


def _source_key(kind: str, blobs: Sequence[bytes]) -> bytes:
    h = hashlib.sha256(kind.encode("utf-8", "surrogatepass") + b"\0")
    for blob in blobs:
        h.update(len(blob).to_bytes(8, "little"))
        h.update(hashlib.sha256(blob).digest())
    return h.digest()


def cached(
    kind: str,
    name: str,
    blobs: Sequence[bytes],
    build: Callable[[], T],
    *,
    valid: Callable[[object], bool],
    code: Sequence[str],
) -> T:
    """What ``build()`` returns for the source ``name`` whose files hold ``blobs``, from the
    cache when a trusted file there has it, else built and written to the cache (and the
    cache then pruned to its limits).

    ``kind`` names the reader and its options (``"tiktoken"``, a size bound, ...), ``code``
    the files of the modules whose code ``build`` runs; ``build`` must return plain
    containers that ``marshal`` writes (and raise, writing nothing, for a bad source), and
    ``valid`` must accept what it returns (a cheap check of the shape: the payload's SHA-256
    already vouches for its bytes). A ``ValueError`` names ``LIVETOK_CACHE_MAX_ENTRIES`` or
    ``LIVETOK_CACHE_MAX_BYTES`` when one is set to something else than a positive number.

    Runtime complexity: ``O(total size of blobs + payload)`` on a hit, plus ``build()`` and
    ``O(files in the folder)`` to prune on a miss.
    """
    folder = cache_dir()
    if folder is None:
        return build()
    limits = _limits()
    if not _usable(folder):
        return build()
    path = cache_file(kind, name, folder)
    code_key = _code_key(code)
    source_key = _source_key(kind, blobs)
    got = _read(path, code_key, source_key, name, limits)
    if got is not None and valid(got[0]):
        return got[0]  # type: ignore[return-value]  # checked by valid()
    if got is not None:
        logger.warning("vocabulary cache %s: unexpected contents; rebuilt from %s", path, name)
    value = build()
    if _write(path, code_key, source_key, value, limits):
        _prune(folder, path, limits)
    return value


def _open_entry(path: str, name: str) -> tuple[int, int] | None:
    """``(fd, size)`` of the cache file ``path`` when it is a regular file of the user's that
    no one else may write, else ``None``: nothing when there is no such file, one warning
    otherwise (a symlink, a FIFO, a folder, a device, another user's file). Never blocks."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):  # (no entry, or no folder yet)
        return None
    except OSError as exc:
        what = ("a symbolic link, never followed" if os.path.islink(path)
                else exc.strerror or str(exc))
        logger.warning("vocabulary cache %s: cannot read it (%s); ignored, reading %s",
                       path, what, name)
        return None
    st = os.fstat(fd)  # subtle: asked of the open file, not of the path (no race)
    # marshal is not safe against crafted data: only a file that no one but the user could
    # have written is read; anything else planted at the name is a miss, not a hang
    why: str | None = None
    if not stat.S_ISREG(st.st_mode):
        why = f"not a regular file but {_file_type(st.st_mode)}"
    elif st.st_mode & 0o022 or hasattr(os, "getuid") and st.st_uid != os.getuid():
        why = "not trusted: owned by another user or writable by others"
    if why is None:
        return fd, st.st_size
    os.close(fd)
    logger.warning("vocabulary cache %s: %s; ignored, reading %s", path, why, name)
    return None


def _file_type(mode: int) -> str:
    """What a file that is not a regular one is, for a log line."""
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return f"a file of type {stat.S_IFMT(mode):o}"


def _read(path: str, code_key: bytes, source_key: bytes, name: str, limits: _Limits
          ) -> tuple[object] | None:
    """``(payload,)`` of the cache file ``path`` when it is trusted and made for the keys
    (and then touched: its mtime says when it was last used), else ``None`` with a log line
    saying why (nothing when there is no such file). Only the header is read from a file
    made for other keys, and no more than its header announces from one made for these.

    Runtime complexity: ``O(file size)``.
    """
    opened = _open_entry(path, name)
    if opened is None:
        return None
    fd, size = opened
    with os.fdopen(fd, "rb") as f:
        header = f.read(_HEADER.size)
        why, length = _why_not(header, size, code_key, source_key)
        if why is None and size > limits.bytes:
            why = f"made under a larger {MAX_BYTES_ENV} ({size:,} bytes)"
        payload = f.read(length) if why is None else b""
        if why is None and hashlib.sha256(payload).digest() != header[-32:]:
            why = "corrupt (its checksum does not match)"
        if why is None:
            _touch(f.fileno())
    if why is not None:
        log = logger.info if why.startswith("made") else logger.warning
        log("vocabulary cache %s: %s; rebuilt from %s", path, why, name)
        return None
    try:
        return (marshal.loads(payload),)
    except (EOFError, ValueError, TypeError) as exc:  # (the checksum matched: a bug)
        logger.warning("vocabulary cache %s: unreadable (%s); rebuilt from %s", path, exc, name)
        return None


def _touch(fd: int) -> None:
    """Mark the open cache file ``fd`` as just used (its mtime orders the pruning)."""
    if os.utime in os.supports_fd:
        try:
            os.utime(fd)
        except OSError:  # (a read-only cache: read all the same, pruned by age of write)
            pass


def _why_not(header: bytes, size: int, code_key: bytes, source_key: bytes
             ) -> tuple[str | None, int]:
    """Why the cache file of ``size`` bytes that starts with ``header`` is not the one
    wanted (``None`` when it may be: its checksum is still to check), and the length of
    the payload it announces."""
    if len(header) < _HEADER.size:
        return "truncated (shorter than its header)", 0
    magic, fmt, code, source, length, _digest = _HEADER.unpack(header)
    if magic != _MAGIC:
        return "not a livetok vocabulary cache", 0
    if fmt != FORMAT or code != code_key:
        return "made by another version of livetok", 0
    if source != source_key:
        return "made from another vocabulary file (or the file changed)", 0
    if size - _HEADER.size != length:
        what = "truncated" if size - _HEADER.size < length else "longer than its header says"
        return f"{what} ({size - _HEADER.size:,} payload bytes, not {length:,})", 0
    return None, length


def _write(path: str, code_key: bytes, source_key: bytes, value: Any, limits: _Limits
           ) -> bool:
    """Write ``value`` to the cache file ``path`` atomically, readable by the user only
    (whatever was planted at ``path``, a symlink included, is replaced, never followed);
    ``False``, with a log line, when that is not possible or the file would pass the
    cache's byte limit."""
    try:
        payload = marshal.dumps(value)
    except ValueError as exc:  # a reader's bug: it returned what marshal cannot write
        logger.warning("vocabulary cache %s: cannot store %s (%s)", path,
                       type(value).__name__, exc)
        return False
    if _HEADER.size + len(payload) > limits.bytes:
        logger.info("vocabulary cache %s: not written (%s bytes, more than %s=%s)", path,
                    f"{_HEADER.size + len(payload):,}", MAX_BYTES_ENV, limits.bytes)
        return False
    header = _HEADER.pack(_MAGIC, FORMAT, code_key, source_key, len(payload),
                          hashlib.sha256(payload).digest())
    try:
        write_private(path, header, payload)
        return True
    except OSError as exc:
        logger.info("vocabulary cache %s: not written (%s); the next start reads the "
                    "vocabulary file again", path, exc.strerror or exc)
        return False


def write_private(path: str, *parts: bytes) -> None:
    """Write ``parts`` to the file ``path`` atomically, readable by the user only: into a
    temporary file beside it (``mkstemp``: created exclusively, not through a link, mode
    0600; its folder made 0700 if missing), then renamed over ``path``, so that whatever was
    planted there, a symlink included, is replaced, never followed. Raises ``OSError``; the
    temporary file of a failed write is removed.

    Runtime complexity: ``O(bytes written)``.
    """
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".partial", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            for part in parts:
                f.write(part)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _prune(folder: str, newest: str, limits: _Limits) -> None:
    """Remove the least recently used cache files of ``folder`` (by mtime, ``newest`` the
    file just written) until at most ``limits.entries`` files of ``limits.bytes`` bytes in
    all are left, and temporary files that a dead process left an hour ago or more. Only
    regular files of the user's named as :func:`cache_file` names them are looked at."""
    entries: list[tuple[bool, int, str, int]] = []  # (is newest, mtime_ns, path, size)
    stale = time.time_ns() - _STALE_PARTIAL_NS
    uid = os.getuid() if hasattr(os, "getuid") else None
    try:
        with os.scandir(folder) as it:
            for e in it:
                is_entry = _ENTRY_NAME.fullmatch(e.name) is not None
                if not is_entry and not (e.name.startswith(".tmp-")
                                         and e.name.endswith(".partial")):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode) or uid is not None and st.st_uid != uid:
                    continue
                if is_entry:
                    entries.append((e.path == newest, st.st_mtime_ns, e.path, st.st_size))
                elif st.st_mtime_ns < stale:
                    _remove(e.path)
    except OSError:
        return
    entries.sort(reverse=True)  # the file just written, then the most recently used
    kept = total = removed = 0
    full = False  # (a prefix is kept: once one file goes, every older one goes too)
    for _, _, path, size in entries:
        full = full or kept == limits.entries or total + size > limits.bytes
        if full:
            removed += _remove(path)
        else:
            kept, total = kept + 1, total + size
    if removed:
        logger.info("vocabulary cache %s: removed %d least recently used files (kept %d, "
                    "%s bytes; %s=%d, %s=%d)", folder, removed, kept, f"{total:,}",
                    MAX_ENTRIES_ENV, limits.entries, MAX_BYTES_ENV, limits.bytes)


def _remove(path: str) -> int:
    """Unlink ``path``: 1 when done, 0 when another process was first (or it cannot)."""
    try:
        os.unlink(path)
        return 1
    except OSError:
        return 0
