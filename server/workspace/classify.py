"""One file of the workspace map: read bounded, and text or not.

A file is read through :func:`livetok.server.trust.read_bytes` (a regular file that resolves
inside the mapped folder, opened without following a final link or blocking, at most the
per-file limit). It is **binary** when its first :data:`SNIFF_BYTES` bytes hold a NUL byte,
git's own test (``buffer_is_binary``): such a file is left out of the map, with the reason.
The rest is text, decoded as ``livetok count`` decodes it (UTF-8, undecodable bytes as
U+FFFD), so a file's count in the map is the count ``livetok count FILE`` prints.
"""

from __future__ import annotations

import os
from pathlib import Path

from livetok.server import trust

__all__ = ["SNIFF_BYTES", "is_binary", "read_file"]

#: how much of a file is looked at for a NUL byte (git reads the same 8,000)
SNIFF_BYTES = 8000


def is_binary(data: bytes) -> bool:
    """Whether ``data`` looks binary: a NUL byte in its first :data:`SNIFF_BYTES` bytes.

    >>> is_binary(b"\\x89PNG\\r\\n\\x1a\\n\\0\\0\\0\\rIHDR"), is_binary("héllo".encode())
    (True, False)

    Runtime complexity: ``O(SNIFF_BYTES)``.
    """
    return b"\0" in data[:SNIFF_BYTES]


def read_file(path: Path, root: Path, limit: int, env: str) -> bytes:
    """The bytes of the file ``path`` of the map of ``root`` (found by its walk: through
    folders that are not links), at most ``limit`` (``env`` is the variable that raises it);
    :class:`~livetok.server.trust.UntrustedFile` saying why not. A link is resolved and must
    lead inside ``root``.

    Runtime complexity: ``O(min(file size, limit))``.
    """
    return trust.read_bytes(path, root=root, limit=limit, what="file to count", env=env,
                            walked=not os.path.islink(path))
