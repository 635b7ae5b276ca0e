"""The trust boundary: what a cloned repository names is read only inside it, and bounded.

A repository is untrusted input (``docs/security.md``): its budget files, the baselines and
``.gitignore`` files they bring, the files ``livetok check`` walks, the ``tokenizer.json``
files it names. Everything here reads or writes such a file by one rule:

- the path is resolved (every symbolic link followed) and must lie inside ``root``, the
  folder that vouches for it (the budget file's folder, the folder ``livetok check`` walks);
- the resolved path is opened without blocking and without following a final symbolic link
  (``O_NONBLOCK | O_NOFOLLOW``), then checked with ``fstat`` to be a regular file, so a FIFO,
  a device (``/dev/zero``) or a link swapped in between the two steps is refused, not read;
- the read stops one byte past ``limit`` (each limit has an environment variable);
- a write (the ratchet's baseline, nothing else) goes to a temporary file in the same folder
  and is renamed over the target, and only over a regular file that is already a baseline.

Every refusal is an :class:`UntrustedFile` whose message says which file, why, and how to
proceed; it never quotes the file's contents.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from livetok.incremental.load import size_limit

__all__ = [
    "MAX_CONFIG_BYTES_ENV",
    "UntrustedFile",
    "config_limit",
    "inside",
    "is_baseline_data",
    "parses_as_baseline",
    "read_bytes",
    "read_text",
    "real",
    "write_baseline_file",
]

#: budget files, ``.gitignore`` files and baselines: bounded by this variable (default 4 MiB)
MAX_CONFIG_BYTES_ENV = "LIVETOK_MAX_CONFIG_BYTES"
_MAX_CONFIG_BYTES = 4 << 20
_BLOCK = 1 << 20


class UntrustedFile(ValueError):
    """A file named by a repository that livetok will not read or write; the message is
    ``"PATH: why; what to do"``."""


def config_limit() -> int:
    """The most bytes read from a budget file, a ``.gitignore`` or a baseline
    (``$LIVETOK_MAX_CONFIG_BYTES``, default 4 MiB).

    Runtime complexity: ``O(1)``.
    """
    return size_limit(MAX_CONFIG_BYTES_ENV, _MAX_CONFIG_BYTES)


def real(path: str | os.PathLike[str]) -> Path:
    """``path`` with every symbolic link resolved (a loop or a missing part is left as it is:
    the open then fails and says so).

    Runtime complexity: ``O(path components)`` system calls.
    """
    return Path(os.path.realpath(path))


def inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path``, resolved, is ``root`` (resolved) or below it.

    >>> inside("/etc/passwd", "/etc"), inside("/etc/../root/x", "/etc")
    (True, False)

    Runtime complexity: ``O(path components)`` system calls.
    """
    r, p = real(root), real(path)
    return p == r or r in p.parents


def _open_regular(path: Path, label: str, what: str) -> int:
    """A descriptor of the regular file ``path`` (no final link followed, never blocking)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UntrustedFile(f"{label}: a symbolic link that changed while it was read; "
                                f"not read as a {what}") from None
        raise UntrustedFile(f"{label}: cannot read the {what}: {exc.strerror or exc}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a file")
        raise UntrustedFile(f"{label}: {kind}, not a regular file; livetok reads a {what} "
                            "only from a regular file")
    return fd


def read_text(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None,
              limit: int, what: str, env: str = MAX_CONFIG_BYTES_ENV,
              label: str | None = None) -> str:
    """The text (UTF-8, undecodable bytes replaced) of the regular file ``path``, which must
    resolve inside ``root`` (any folder when ``root`` is None) and hold at most ``limit``
    bytes; else :class:`UntrustedFile`. ``what`` names the file's role in messages ("budget
    file"); ``env`` is the variable that raises ``limit``; ``label`` is the path shown.

    Runtime complexity: ``O(min(file size, limit))``; memory ``O(limit)``.
    """
    return read_bytes(path, root=root, limit=limit, what=what, env=env,
                      label=label).decode("utf-8", errors="replace")


def read_bytes(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None,
               limit: int, what: str, env: str = MAX_CONFIG_BYTES_ENV,
               label: str | None = None, walked: bool = False) -> bytes:
    """The bytes of the regular file ``path``, by the rules of :func:`read_text` (the
    workspace map hashes a file's bytes and looks for NUL bytes before decoding them).
    ``walked``: the caller reached ``path`` from ``root`` through folders that are not links
    (:func:`.walk.walk` enters no linked folder) and ``path`` is not a link itself, so it is
    inside ``root`` without resolving it again (three ``realpath`` calls: half the time of
    reading a small file); its last part is still opened without following a link.

    Runtime complexity: ``O(min(file size, limit))``; memory ``O(limit)``.
    """
    label = label if label is not None else os.fspath(path)
    resolved = Path(path) if walked else real(path)
    if root is not None and not walked and not inside(resolved, root):
        raise UntrustedFile(f"{label}: resolves to a file outside {os.fspath(root)}; livetok "
                            f"reads a {what} only inside the folder that names it")
    fd = _open_regular(resolved, label, what)
    try:
        if os.fstat(fd).st_size > limit:
            raise UntrustedFile(_too_big(label, what, limit, env))
        os.set_blocking(fd, True)
        blocks: list[bytes] = []
        total = 0
        while block := os.read(fd, _BLOCK):
            total += len(block)
            if total > limit:  # grew while read
                raise UntrustedFile(_too_big(label, what, limit, env))
            blocks.append(block)
    except OSError as exc:
        raise UntrustedFile(f"{label}: cannot read the {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return b"".join(blocks)


def _too_big(label: str, what: str, limit: int, env: str) -> str:
    return (f"{label}: more than {limit:,} bytes, more than livetok reads for a {what}; "
            f"not a {what}, or set {env} to a larger number of bytes")


def is_baseline_data(data: Any) -> bool:
    """Whether parsed JSON is a livetok baseline (``{"livetok-baseline": 1, "files": {...}}``,
    or an older one with ``files`` only).

    >>> is_baseline_data({"livetok-baseline": 1, "files": {}}), is_baseline_data([1])
    (True, False)

    Runtime complexity: ``O(1)``.
    """
    return isinstance(data, dict) and isinstance(data.get("files"), dict) and set(data) <= {
        "livetok-baseline", "files"}


def write_baseline_file(path: Path, text: str, *, root: Path | None) -> None:
    """Write ``text`` to the baseline file ``path``, which must lie in ``root`` (when given),
    not be a symbolic link, and be either missing or a regular file that already is a
    baseline (:func:`parses_as_baseline`): a repository cannot make ``--update-baseline`` write over a shell profile or any
    other file. The text goes to a temporary file beside it, renamed over it.

    Runtime complexity: ``O(len(text))``.
    """
    label = os.fspath(path)
    folder = real(path.parent)
    if root is not None and not inside(folder, root):
        raise UntrustedFile(f"{label}: outside {root}; livetok writes a baseline only inside "
                            "its budget file's folder")
    target = folder / path.name
    if os.path.lexists(target):
        st = os.lstat(target)
        if stat.S_ISLNK(st.st_mode):
            raise UntrustedFile(f"{label}: a symbolic link; livetok writes a baseline only to a "
                                "regular file (delete the link to have one written)")
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedFile(f"{label}: not a regular file; not written")
        try:
            old = read_text(target, root=None, limit=config_limit(), what="baseline",
                            label=label)
        except UntrustedFile as exc:
            raise UntrustedFile(f"{exc}; not overwritten") from None
        if not parses_as_baseline(old):
            raise UntrustedFile(f"{label}: not a livetok baseline, so livetok does not write "
                                "over it; delete it or name another baseline file")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)  # replaces the name itself: a link planted now is replaced
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def parses_as_baseline(text: str) -> bool:
    """Whether ``text`` is a livetok baseline's JSON (see :func:`is_baseline_data`).

    Runtime complexity: ``O(len(text))``.
    """
    try:
        return is_baseline_data(json.loads(text))
    except ValueError:
        return False
