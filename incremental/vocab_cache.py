"""A cache of parsed vocabularies: what reading a vocabulary file produces (the ranks of a
``.tiktoken`` file, of GPT-2's ``encoder.json`` + ``vocab.bpe``, a SentencePiece model), kept
in the user's cache directory so that the next process loads it in a fraction of the parse
time (docs/startup.md: the figures and the choices measured).

Where: ``$LIVETOK_CACHE_DIR``, else ``platformdirs.user_cache_dir("livetok")``
(``~/.cache/livetok`` on Linux); ``LIVETOK_CACHE=0`` turns the cache off. One file per source
(named by a hash of the reader's kind and the source's path), written atomically (a temporary
file, then ``os.replace``), readable and writable by the user only.

A cache file is never trusted blindly. Its header holds the keys it was made for and a
SHA-256 of its payload. The source key is a SHA-256 of the source files' bytes as they are on
disk (the whole files: cheap next to a parse) and of the reader's kind and options; the code
key, of the code that made it: this cache's format number, the Python version whose
``marshal`` wrote it, and the source of the modules that parse (livetok's version as far as
the payload is concerned, known without ``importlib.metadata``, which would make a cached
load half as slow again). A file that is truncated, corrupt, from another livetok or another
vocabulary, not owned by the user or writable by others is ignored with a log line
(``logging``, logger ``livetok.incremental.vocab_cache``) and rebuilt from the source; one
that cannot be written (a read-only home, a full disk) is skipped with a log line. Either way
the vocabulary is the one the source holds.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import stat
import struct
import sys
import tempfile
from typing import Any, Callable, Sequence, TypeVar

__all__ = ["FORMAT", "CACHE_DIR_ENV", "CACHE_SWITCH_ENV", "cache_dir", "cached", "cache_file"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

#: the layout of the cache files; raise it when what a reader caches changes shape
FORMAT = 1
#: the folder of the cache files (default: ``platformdirs.user_cache_dir("livetok")``)
CACHE_DIR_ENV = "LIVETOK_CACHE_DIR"
#: ``0`` (or ``off``, ``no``, ``false``) turns the cache off
CACHE_SWITCH_ENV = "LIVETOK_CACHE"

_MAGIC = b"LTVOCAB\n"
#: magic, format, code key, source key, payload length, payload SHA-256
_HEADER = struct.Struct("<8sI32s32sQ32s")
_OFF = {"0", "off", "no", "false"}


def cache_dir() -> str | None:
    """The folder of the cache files, or ``None`` when ``LIVETOK_CACHE=0`` turns it off.

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


def cache_file(kind: str, name: str, folder: str) -> str:
    """The cache file of the source ``name`` read as ``kind`` (one file per source: a new
    livetok or a changed source overwrites it).

    >>> cache_file("tiktoken", "/v/o200k_base.tiktoken", "/c")[:12]
    '/c/tiktoken-'

    Runtime complexity: ``O(len(name))``.
    """
    tag = hashlib.sha256(f"{kind}\0{os.path.abspath(name)}".encode("utf-8", "surrogatepass"))
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
    cache when a trusted file there has it, else built and written to the cache.

    ``kind`` names the reader and its options (``"tiktoken"``, a size bound, ...), ``code``
    the files of the modules whose code ``build`` runs; ``build`` must return plain
    containers that ``marshal`` writes (and raise, writing nothing, for a bad source), and
    ``valid`` must accept what it returns (a cheap check of the shape: the payload's SHA-256
    already vouches for its bytes).

    Runtime complexity: ``O(total size of blobs + payload)`` on a hit, plus ``build()`` on a
    miss.
    """
    folder = cache_dir()
    if folder is None:
        return build()
    path = cache_file(kind, name, folder)
    code_key = _code_key(code)
    source_key = _source_key(kind, blobs)
    got = _read(path, code_key, source_key, name)
    if got is not None and valid(got[0]):
        return got[0]  # type: ignore[return-value]  # checked by valid()
    if got is not None:
        logger.warning("vocabulary cache %s: unexpected contents; rebuilt from %s", path, name)
    value = build()
    _write(path, code_key, source_key, value)
    return value


def _read(path: str, code_key: bytes, source_key: bytes, name: str) -> tuple[object] | None:
    """``(payload,)`` of the cache file ``path`` when it is trusted and made for the keys,
    else ``None`` with a log line saying why (nothing when there is no such file). Only the
    header is read from a file made for other keys, and no more than its header announces
    from one made for these.

    Runtime complexity: ``O(file size)``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.info("vocabulary cache %s: cannot read it (%s); reading %s", path, exc, name)
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        # subtle: marshal is not safe against crafted data: only a file that no one but the
        # user could have written is read (asked of the open file, not of the path)
        if (not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022
                or hasattr(os, "getuid") and st.st_uid != os.getuid()):
            logger.warning("vocabulary cache %s: not trusted (owned by another user or "
                           "writable by others); ignored, reading %s", path, name)
            return None
        header = f.read(_HEADER.size)
        why, length = _why_not(header, st.st_size, code_key, source_key)
        payload = f.read(length) if why is None else b""
    if why is None and hashlib.sha256(payload).digest() != header[-32:]:
        why = "corrupt (its checksum does not match)"
    if why is not None:
        log = logger.info if why.startswith("made") else logger.warning
        log("vocabulary cache %s: %s; rebuilt from %s", path, why, name)
        return None
    try:
        return (marshal.loads(payload),)
    except (EOFError, ValueError, TypeError) as exc:  # (the checksum matched: a bug)
        logger.warning("vocabulary cache %s: unreadable (%s); rebuilt from %s", path, exc, name)
        return None


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


def _write(path: str, code_key: bytes, source_key: bytes, value: Any) -> None:
    """Write ``value`` to the cache file ``path`` atomically, readable by the user only;
    skipped with a log line when that is not possible."""
    try:
        payload = marshal.dumps(value)
    except ValueError as exc:  # a reader's bug: it returned what marshal cannot write
        logger.warning("vocabulary cache %s: cannot store %s (%s)", path,
                       type(value).__name__, exc)
        return
    header = _HEADER.pack(_MAGIC, FORMAT, code_key, source_key, len(payload),
                          hashlib.sha256(payload).digest())
    folder = os.path.dirname(path)
    tmp = None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".partial", dir=folder)  # mode 0600
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            f.write(payload)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        logger.info("vocabulary cache %s: not written (%s); the next start reads the "
                    "vocabulary file again", path, exc.strerror or exc)
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
