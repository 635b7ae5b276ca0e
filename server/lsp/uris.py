"""Document URIs as local paths, within the limits of the file system.

A client names documents by URI. A ``file:`` URI's path is untrusted input like any other: a
part of a path over :data:`NAME_MAX_BYTES` or a path of :data:`PATH_MAX_BYTES` or more is
refused by the system (``ENAMETOOLONG``) at the first ``stat``, and a NUL byte by Python
(``ValueError``). :func:`local_path` is the one place that applies those limits: such a URI
names no file, as an ``untitled:`` one, so no budget file or workspace folder is looked for.
The stdio front (``front.py``) and the full server (``budget_watch.path_of``) both call it;
it imports neither pygls nor lsprotocol.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["NAME_MAX_BYTES", "PATH_MAX_BYTES", "local_path", "path_too_long"]

#: the longest name of one file or folder, in bytes (``NAME_MAX`` of Linux's file systems,
#: of APFS and of NTFS in UTF-16 units)
NAME_MAX_BYTES = 255
#: a path this long in bytes, or longer, is refused by Linux (``PATH_MAX`` counts the NUL)
PATH_MAX_BYTES = 4096


def path_too_long(path: str) -> str | None:
    """Why no file can have the path ``path``, or None: a NUL byte, a part longer than
    :data:`NAME_MAX_BYTES` bytes, or :data:`PATH_MAX_BYTES` bytes in all.

    >>> path_too_long("/w/a.txt") is None
    True
    >>> path_too_long("/w/" + "a" * 256)
    'a part of the path is 256 bytes long, over the limit of 255'
    >>> path_too_long("/" + "/".join(["b" * 200] * 21))[:40]
    'the path is 4221 bytes long, over the li'

    Runtime complexity: ``O(len(path))``.
    """
    if "\0" in path:
        return "the path holds a NUL byte"
    try:
        raw = os.fsencode(path)
    except UnicodeError:  # a lone surrogate the file system encoding cannot write
        return "the path is not valid in the file system's encoding"
    if len(raw) >= PATH_MAX_BYTES:
        return f"the path is {len(raw)} bytes long, over the limit of {PATH_MAX_BYTES - 1}"
    longest = max(map(len, raw.split(b"/")))
    if longest > NAME_MAX_BYTES:
        return f"a part of the path is {longest} bytes long, over the limit of {NAME_MAX_BYTES}"
    return None


def local_path(uri: str) -> Path | None:
    """The local path of a ``file:`` URI, else None (another scheme, or a path no file can
    have: :func:`path_too_long`).

    >>> local_path("file:///w/a%20b.txt"), local_path("untitled:Untitled-1")
    (PosixPath('/w/a b.txt'), None)
    >>> local_path("file:///" + "a" * 300 + "/x.txt") is None
    True

    Runtime complexity: ``O(len(uri))``.
    """
    u = urlparse(uri)
    if u.scheme != "file":
        return None
    path = unquote(u.path)
    return None if path_too_long(path) is not None else Path(path)
