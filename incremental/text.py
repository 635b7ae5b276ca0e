"""Text checks every encoding shares: the ``str`` check and the two ways to drop surrogates.

A Python ``str`` can hold code points U+D800..U+DFFF (JSON ``"\\ud800"`` escapes, for
instance), which have no UTF-8 encoding. livetok treats them in two ways:

* the methods that return ids only (``encode``, ``count``, ``encode_batch``, ``encode_stream``,
  ``split_blocks``) do what tiktoken does (:func:`join_surrogates`): a high+low surrogate
  *pair* stored as two code points becomes the one character it stands for
  (``"\\ud83d\\udc4d"`` is 👍) and every other surrogate becomes U+FFFD;
* the methods that return code point offsets (``pieces``, ``encode_by_piece``) and the
  :class:`~livetok.incremental.Document` replace *each* surrogate by U+FFFD (:func:`sanitize`),
  one for one, so that offsets never move: for them a pair is two U+FFFD.

The two agree on every text without a pair, and pairs do not arise from JSON (``json.loads``
joins escaped pairs), files or editors; a text that holds one can be passed through
:func:`join_surrogates` first.
"""

from __future__ import annotations

import regex

__all__ = ["require_str", "sanitize", "join_surrogates"]

_SURROGATE = regex.compile(r"[\ud800-\udfff]")


def require_str(text: object, method: str) -> None:
    """Raise the ``TypeError`` every encoding's ``encode``, ``count`` and ``pieces`` give for a
    text that is not a ``str`` (bytes, ``None``), naming the method and the type.

    >>> require_str(b"hi", "encode")
    Traceback (most recent call last):
    ...
    TypeError: encode() takes str, not bytes

    Runtime complexity: ``O(1)``.
    """
    if not isinstance(text, str):
        raise TypeError(f"{method}() takes str, not {type(text).__name__}")


def sanitize(text: str) -> str:
    """Replace every surrogate code point by U+FFFD (one for one; see module docstring).

    >>> sanitize("a\\ud800b") == "a\\ufffdb"
    True

    Runtime complexity: ``O(len(text))``; no copy when there is nothing to replace.
    """
    if text.isascii():  # O(1): CPython records it in the string
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def join_surrogates(text: str) -> str:
    """The text tiktoken encodes for ``text``: each surrogate pair joined into the character it
    stands for, every other surrogate replaced by U+FFFD (see module docstring). This is
    tiktoken's own fallback, ``text.encode("utf-16", "surrogatepass").decode("utf-16",
    "replace")``, so the ids stay tiktoken's; unlike :func:`sanitize` it shortens a text that
    holds a pair.

    >>> join_surrogates("a\\ud83d\\udc4d\\ud800") == "a\\U0001f44d\\ufffd"
    True

    Runtime complexity: ``O(len(text))``; no copy when there is no surrogate.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text
