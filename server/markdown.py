"""Markdown sections: the span each ATX heading (``# Title``) governs, for per-section counts.

A section runs from its heading to the next heading of the same or a higher level (so a
chapter's count includes its subsections), or to the end of the document. Lines inside
fenced code blocks (```` ``` ```` or ``~~~``) are not headings. Setext headings
(underlined with ``===``) are not recognised.

Finding headings reads the whole text: whether a ``#`` line is a heading depends on every
fence above it. The server therefore computes sections only when a client asks for code
lenses of a Markdown document, once per document version.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Section", "sections"]

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


class Section(NamedTuple):
    """A heading's section in code points: ``[start_cp, end_cp)`` starts at the heading."""

    level: int
    title: str
    start_cp: int
    end_cp: int


def sections(text: str) -> list[Section]:
    """The sections of a Markdown text, in document order.

    >>> [(s.level, s.title, s.start_cp, s.end_cp) for s in sections("# A\\nx\\n## B\\ny\\n# C\\n")]
    [(1, 'A', 0, 13), (2, 'B', 6, 13), (1, 'C', 13, 17)]
    >>> sections("```\\n# not a heading\\n```\\n")
    []

    Runtime complexity: ``O(len(text))``.
    """
    found: list[tuple[int, str, int]] = []  # (level, title, start)
    fence: str | None = None
    pos = 0
    n = len(text)
    while pos < n:
        m = _LINE.match(text, pos)
        assert m is not None and m.end() > pos
        line = m.group().rstrip("\r\n")
        f = _FENCE.match(line)
        if fence is not None:
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) \
                    and not line[f.end():].strip():
                fence = None
        elif f and not (f.group(1)[0] == "`" and "`" in line[f.end():]):
            fence = f.group(1)
        else:
            h = _HEADING.match(line)
            if h:
                found.append((len(h.group(1)), (h.group(2) or "").strip(), pos))
        pos = m.end()
    out: list[Section] = []
    for i, (level, title, start) in enumerate(found):
        end = n
        for level2, _, start2 in found[i + 1 :]:
            if level2 <= level:
                end = start2
                break
        out.append(Section(level, title, start, end))
    return out
