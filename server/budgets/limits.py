"""The bounds livetok puts on what a repository's budget files make it do: values quoted in
messages cut short (:func:`shown`) and escaped (:func:`printable`: names and text written to
a terminal or a log), ``**`` segments per glob and globs per budget file, and
the bytes of a file counted for a budget.

A budget file comes with a repository, so it is untrusted input (``docs/security.md``): no
message quotes more than a few dozen characters of a value, globs hold at most
``$LIVETOK_MAX_GLOB_STARS`` ``**`` segments, a budget file at most
``$LIVETOK_MAX_BUDGET_GLOBS`` globs, and ``livetok check`` and the server's totals refuse a
file over ``$LIVETOK_MAX_CHECK_BYTES`` unread. :mod:`livetok.server.walk` holds the
``.gitignore`` globs it reads to the same ``**`` bound.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from livetok.incremental.env_limits import size_limit

__all__ = [
    "GLOBS_ENV",
    "GLOB_STARS_ENV",
    "MAX_CHECK_BYTES_ENV",
    "MAX_PROBLEMS",
    "check_bytes_limit",
    "glob_problem",
    "glob_stars_limit",
    "globs_limit",
    "printable",
    "shown",
]

#: problems listed per budget file; the rest are counted in one more line
MAX_PROBLEMS = 50
#: ``**`` segments a glob may hold: each one more multiplies what a match may try by the path's
#: depth (six of them against an 80-deep path: 36 s; two: 0.3 ms)
GLOB_STARS_ENV = "LIVETOK_MAX_GLOB_STARS"
_GLOB_STARS = 2
#: globs in one budget file (each is compiled to a regex: ~0.6 ms, so 8,000 rules took 5 s)
GLOBS_ENV = "LIVETOK_MAX_BUDGET_GLOBS"
_GLOBS = 1000
#: the largest file counted for a budget (a 200 MB Markdown file took 3.3 GB to check)
MAX_CHECK_BYTES_ENV = "LIVETOK_MAX_CHECK_BYTES"
_MAX_CHECK_BYTES = 64 << 20


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for messages: a value from a file
    never makes a message long (a YAML alias bomb's value has a repr of hundreds of MB).

    >>> shown("x" * 100, 10)
    "'xxxxxxxx… (102 characters)"

    Runtime complexity: ``O(limit)`` for strings and numbers; a container's repr is built from
    at most ``limit`` of its items.
    """
    if isinstance(value, (dict, list, tuple, set)):
        head = f"{type(value).__name__} of {len(value):,} items"
        return head
    if isinstance(value, Decimal):  # a TOML float, read exactly: shown as written
        text = str(value)
        return text if len(text) <= limit else f"{text[:limit - 1]}… ({len(text):,} characters)"
    text = repr(value) if not isinstance(value, str) or len(value) <= 4 * limit else repr(
        value[:4 * limit])
    if len(text) <= limit:
        return text
    size = len(value) + 2 if isinstance(value, str) else len(text)
    return f"{text[:limit - 1]}… ({size:,} characters)"


def printable(text: str) -> str:
    r"""``text`` with every character that is not printable escaped as ``repr`` escapes it
    (``\x1b``, ``\n``, ``\u202e``): a file name or a repository's text written to a terminal
    or a log cannot clear the screen, move the cursor, or start a line of its own.

    >>> print(printable("a\x1b[2Jb\nc.md"), printable("naïve.md"))
    a\x1b[2Jb\nc.md naïve.md

    Runtime complexity: ``O(len(text))``.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def glob_stars_limit() -> int:
    """The most ``**`` segments a glob may hold (``$LIVETOK_MAX_GLOB_STARS``, default 2).

    Runtime complexity: ``O(1)``.
    """
    return size_limit(GLOB_STARS_ENV, _GLOB_STARS, "segments")



def globs_limit() -> int:
    """The most globs one budget file may hold (``$LIVETOK_MAX_BUDGET_GLOBS``, default 1,000).

    Runtime complexity: ``O(1)``.
    """
    return size_limit(GLOBS_ENV, _GLOBS, "globs")


def glob_problem(glob: str, limit: int) -> str | None:
    """Why ``glob`` is refused (too many ``**`` segments, or too long), or None.

    >>> glob_problem("docs/**/*.md", 2) is None, glob_problem("**/a/**/b/**/c", 2) is not None
    (True, True)

    Runtime complexity: ``O(len(glob))``.
    """
    if len(glob) > 1024:
        return f"a glob of {len(glob):,} characters (at most 1,024)"
    stars = len(re.findall(r"\*\*", glob))
    if stars > limit:
        return (f"{shown(glob, 24)} has {stars} '**' segments, more than the {limit} livetok "
                f"matches (each one more multiplies the work by the path's depth); write "
                f"fewer, or set {GLOB_STARS_ENV}")
    return None


def check_bytes_limit() -> int:
    """The largest file counted for a budget, in bytes (``$LIVETOK_MAX_CHECK_BYTES``, default
    64 MiB): ``livetok check`` and the server's totals refuse a larger one unread.

    Runtime complexity: ``O(1)``.
    """
    return size_limit(MAX_CHECK_BYTES_ENV, _MAX_CHECK_BYTES)
