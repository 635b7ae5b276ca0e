"""A bounded memo for piece encodings: two generations of at most ``limit`` entries each.

Every encoding keeps the ids of the pieces it has seen, so that a text (or an edit window)
made of familiar words costs one dictionary lookup per piece. A live document meets new pieces
all day (each partly typed word is one), so the memo must be bounded, and it must keep what is
in use: a plain ``clear()`` when full drops the document's common words with the typos.

:class:`GenerationalCache` is a ``dict`` (the *young* generation, so a hit is one C-level
lookup, also through ``map(cache.__getitem__, pieces)``) plus an *old* generation. A new entry
goes into the young one; when the young one holds ``limit`` entries it becomes the old one and
a new young one starts; a key found only in the old generation is copied back into the young
one. So at most ``2 * limit`` entries are held, and a piece used at least once per ``limit``
new pieces is never dropped. This is the "generational" scheme of, for instance, CPython's
``re`` module cache, without its per-hit bookkeeping.

The default ``limit`` is :data:`DEFAULT_LIMIT`, or the environment variable
``LIVETOK_PIECE_CACHE`` (entries per generation) when it is set; hit rates measured on the
editing traces are in ``docs/algorithms.md`` ("Piece caches").
"""

from __future__ import annotations

from typing import Generic, TypeVar

from .env_limits import size_limit

__all__ = ["GenerationalCache", "DEFAULT_LIMIT", "default_limit"]

K = TypeVar("K")
V = TypeVar("V")

#: entries per generation unless ``LIVETOK_PIECE_CACHE`` says otherwise
DEFAULT_LIMIT = 1 << 14


def default_limit() -> int:
    """``LIVETOK_PIECE_CACHE`` as a number of entries per generation, else :data:`DEFAULT_LIMIT`.

    Raises ``ValueError`` naming the variable when it is not a positive integer.
    """
    return size_limit("LIVETOK_PIECE_CACHE", DEFAULT_LIMIT, unit="entries")


class GenerationalCache(dict[K, V], Generic[K, V]):
    """A ``dict`` bounded to two generations of at most ``limit`` entries.

    >>> c: GenerationalCache[str, int] = GenerationalCache(2)
    >>> for k in "abc":
    ...     c.put(k, ord(k))
    >>> sorted(c), c.size()
    (['c'], 3)
    >>> c.recall("a"), c.recall("z"), sorted(c)
    (97, None, ['a', 'c'])

    Runtime complexity: ``put`` and ``recall`` amortized ``O(1)`` (a generation turns over once
    per ``limit`` insertions, copying ``limit`` references).
    """

    __slots__ = ("limit", "_old")

    def __init__(self, limit: int | None = None) -> None:
        super().__init__()
        self.limit = default_limit() if limit is None else limit
        if self.limit < 1:
            raise ValueError(f"a cache limit must be at least 1, got {self.limit}")
        self._old: dict[K, V] = {}

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key`` in the young generation (turning it over when full)."""
        if len(self) >= self.limit:
            self._old = dict(self)
            super().clear()
        self[key] = value

    def recall(self, key: K) -> V | None:
        """The value of ``key`` from either generation (copied into the young one), or None."""
        value = self.get(key)
        if value is None:
            value = self._old.get(key)
            if value is not None:
                self.put(key, value)
        return value

    def forget(self, key: K) -> None:
        """Drop ``key`` from both generations."""
        self.pop(key, None)
        self._old.pop(key, None)

    def size(self) -> int:
        """Entries held in both generations (``len()`` counts the young one only)."""
        return len(self) + len(self._old)

    def clear(self) -> None:
        """Drop both generations."""
        super().clear()
        self._old.clear()

    def _check(self) -> None:
        """Invariants used by the tests: both generations within the limit."""
        assert len(self) <= self.limit and len(self._old) <= self.limit, (len(self), self.limit)
