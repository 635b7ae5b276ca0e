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

A ``tokenizer.json`` or an encoding name is let in by one rule, :func:`tokenizer_refusal`,
wherever it comes from (a document's encoding, ``livetok.compare``, the workspace map, a
budget file, any workspace folder): a file inside the workspace is a program of sorts (its
regexes and normalizers run) and is loaded only when the user trusts the workspace, and what
a name resolves to must be a regular file within the vocabulary bound, trusted or not. Such a
file is then read or hashed only by :func:`read_bytes` / :func:`file_sha256` (or the core's
bounded reader), in a worker thread, never on the server's event loop.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import hashlib
import tempfile
from pathlib import Path
from typing import Any, Iterator, Sequence

from livetok.incremental.vocab.find import HF_PREFIX
from livetok.incremental.vocab.readers import vocabulary_limit
from livetok.incremental.env_limits import size_limit
from livetok.incremental.names.registry import is_file_name

__all__ = [
    "MAX_CONFIG_BYTES_ENV",
    "MAX_NAME_CHARS",
    "TRUST_IN_SETTINGS",
    "VOCAB_BYTES_ENV",
    "UntrustedFile",
    "config_limit",
    "file_sha256",
    "inside",
    "is_baseline_data",
    "parses_as_baseline",
    "read_bytes",
    "read_text",
    "real",
    "tokenizer_refusal",
    "write_baseline_file",
]

#: budget files, ``.gitignore`` files and baselines: bounded by this variable (default 4 MiB)
MAX_CONFIG_BYTES_ENV = "LIVETOK_MAX_CONFIG_BYTES"
_MAX_CONFIG_BYTES = 4 << 20
_BLOCK = 1 << 20
#: the longest encoding name or path livetok looks at (Linux's PATH_MAX)
MAX_NAME_CHARS = 4096
#: the variable that bounds a vocabulary or tokenizer.json (the core's reader's bound)
VOCAB_BYTES_ENV = "LIVETOK_MAX_VOCAB_BYTES"
#: what no name or path holds: a NUL byte ends a path for the system, the others are not text
_CONTROL = frozenset(map(chr, [*range(0x20), 0x7F]))


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
        raise UntrustedFile(f"{label}: {_kind(st.st_mode)}, not a regular file; livetok "
                            f"reads a {what} only from a regular file")
    return fd


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, for messages."""
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a file")


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
    return b"".join(_blocks(path, root=root, limit=limit, what=what, env=env, label=label,
                            walked=walked))


def file_sha256(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None,
                limit: int, what: str, env: str = MAX_CONFIG_BYTES_ENV,
                label: str | None = None) -> str:
    """The SHA-256 (hex) of the regular file ``path``, read by the rules of :func:`read_text`
    a block at a time: a link to ``/dev/zero`` or a FIFO is refused at once
    (:class:`UntrustedFile`), never read without end or waited for. Call it off the event
    loop: a big file takes its size's time.

    Runtime complexity: ``O(min(file size, limit))``; memory ``O(1)``.
    """
    h = hashlib.sha256()
    for block in _blocks(path, root=root, limit=limit, what=what, env=env, label=label):
        h.update(block)
    return h.hexdigest()


def _blocks(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None, limit: int,
            what: str, env: str, label: str | None, walked: bool = False) -> Iterator[bytes]:
    """The blocks of the regular file ``path`` (see :func:`read_bytes`), refused with
    :class:`UntrustedFile` once they pass ``limit`` bytes."""
    label = label if label is not None else os.fspath(path)
    resolved = Path(path) if walked else real(path)
    if root is not None and not walked and not inside(resolved, root):
        raise UntrustedFile(f"{label}: resolves to a file outside {os.fspath(root)}; livetok "
                            f"reads a {what} only inside the folder that names it")
    fd = _open_regular(resolved, label, what)
    try:
        if os.fstat(fd).st_size > limit:
            raise UntrustedFile(_too_big(label, what, limit, env))
        os.set_blocking(fd, True)  # a regular file: reads never wait on a writer
        total = 0
        while True:
            try:
                block = os.read(fd, _BLOCK)
            except OSError as exc:
                raise UntrustedFile(f"{label}: cannot read the {what}: "
                                    f"{exc.strerror or exc}") from None
            if not block:
                return
            total += len(block)
            if total > limit:  # grew while read
                raise UntrustedFile(_too_big(label, what, limit, env))
            yield block
    finally:
        os.close(fd)


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


#: how the editor's user trusts a workspace's tokenizer files (:func:`tokenizer_refusal`)
TRUST_IN_SETTINGS = ("set livetok.trustWorkspaceTokenizers to true in your user settings, or "
                     "name a model you installed (hf:ORG/NAME)")


def tokenizer_refusal(name: str, *, workspace: Sequence[str | os.PathLike[str]] = (),
                      trusted: bool = False, relative_to: str | os.PathLike[str] | None = None,
                      how_to_trust: str = TRUST_IN_SETTINGS) -> str | None:
    """Why the encoding ``name`` must not be loaded, or None: livetok's one trust rule for an
    encoding name or a ``tokenizer.json`` path, wherever it enters (documents,
    ``livetok.compare``, the workspace map, budget files; ``docs/security.md``).

    - a name holding a control character (a NUL byte ends a path) or longer than
      :data:`MAX_NAME_CHARS` is refused; another name that is not a path (a built-in
      encoding, a model's name, ``hf:ORG/NAME``: what the user installed) is let in;
    - a path, resolved (every link followed), must name a ``tokenizer.json``: a file named
      ``*.json`` or a model folder holding one (``~/.bashrc`` is neither);
    - ``relative_to``: the path was given relative to this folder (the first workspace
      folder's, a budget file's), so it must resolve inside it, and it is the workspace's;
    - a path that resolves inside ``relative_to`` or any folder of ``workspace`` is loaded
      only when ``trusted`` (a cloned repository's ``tokenizer.json`` runs its regexes and
      normalizers; VS Code's workspace trust, ``livetok.trustWorkspaceTokenizers``), and
      the refusal ends with ``how_to_trust`` (``livetok check --trust-tokenizers``);
    - trusted or not, what it resolves to must be a regular file (``stat``: never opened
      here, so a FIFO cannot block and ``/dev/zero`` is not read) within the vocabulary
      bound (``$LIVETOK_MAX_VOCAB_BYTES``).

    >>> tokenizer_refusal("o200k_base") is None, tokenizer_refusal("hf:org/name") is None
    (True, True)
    >>> tokenizer_refusal("/etc/passwd").split(";")[0]
    "livetok reads a tokenizer.json (a file named *.json, or a model folder holding one): '/etc/passwd' is neither"
    >>> tokenizer_refusal("x\\x00.json").split(";")[0]
    "'x\\\\x00.json' is not an encoding name or a path"

    Runtime complexity: ``O(len(name) + path components * (len(workspace) + 1))`` system calls.
    """
    if len(name) > MAX_NAME_CHARS or not _CONTROL.isdisjoint(name):
        shown = repr(name[:60]) + ("…" if len(name) > 60 else "")
        return (f"{shown} is not an encoding name or a path; a name holds no control character "
                f"(a NUL byte ends a path) and at most {MAX_NAME_CHARS:,} characters")
    if name.startswith(HF_PREFIX) or not is_file_name(name):
        return None
    resolved = real(os.path.expanduser(name))
    st = _stat(resolved)
    if st is not None and stat.S_ISDIR(st.st_mode):  # a model's folder: its tokenizer.json
        resolved = real(resolved / "tokenizer.json")
        st = _stat(resolved)
    elif not resolved.name.lower().endswith(".json"):
        return (f"livetok reads a tokenizer.json (a file named *.json, or a model folder "
                f"holding one): {name!r} is neither; name one")
    if relative_to is not None and not inside(resolved, relative_to):
        return (f"{name!r} leads out of the folder it is named relative to: it resolves to a "
                f"file outside {real(relative_to)}; name a tokenizer.json inside that folder "
                "(or, in the settings, by an absolute path)")
    within = relative_to is not None or any(inside(resolved, r) for r in workspace)
    if within and not trusted:
        return (f"{name!r} is inside the workspace, and livetok loads a workspace's "
                "tokenizer.json only when you trust it (its regexes and normalizers run "
                f"as code): {how_to_trust}")
    if st is None:
        return None  # missing: the load says so, with the path
    if not stat.S_ISREG(st.st_mode):
        return (f"{name!r} resolves to {_kind(st.st_mode)}, not a regular file; livetok reads "
                "a tokenizer.json only from a regular file")
    limit = vocabulary_limit()
    if st.st_size > limit:
        return _too_big(repr(name), "tokenizer.json", limit, VOCAB_BYTES_ENV)
    return None


def _stat(path: Path) -> os.stat_result | None:
    """``os.stat(path)`` (links followed; never opens, so never blocks), None if missing."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None
