"""Limits on what livetok reads, each movable by an environment variable.

One small module with no livetok imports, so that every reader (:mod:`.vocab.readers`,
:mod:`.vocab.parse_store`, :mod:`.piece_memo`, the server's) can ask for its limit without an import
cycle.
"""

from __future__ import annotations

import os

__all__ = ["size_limit"]


def size_limit(env: str, default: int, unit: str = "bytes") -> int:
    """``default``, or the number (of bytes, or ``unit``) the environment variable ``env``
    gives; a ``ValueError`` naming the variable when it is not a positive integer.

    >>> size_limit("LIVETOK_NO_SUCH_VARIABLE", 1024)
    1024

    Runtime complexity: ``O(1)``.
    """
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    raise ValueError(f"${env} is {raw!r}: set it to a number of {unit} (1 or more), or unset it")
