"""Markdown sections: the span each ATX heading (``# Title``) governs, for per-section counts.

A section runs from its heading to the next heading of the same or a higher level (so a
chapter's count includes its subsections), or to the end of the document. Lines inside
fenced code blocks (```` ``` ```` or ``~~~``) are not headings. Setext headings
(underlined with ``===``) are not recognised.

Finding headings reads the whole text: whether a ``#`` line is a heading depends on every
fence above it. The server therefore computes sections only when a client asks for code
lenses of a Markdown document, once per document version.

Both steps are linear (issue 15): each line is read by a plain scan with ``str`` methods
(no regular expression over the line, whose backtracking made a heading of ``# a``, 32,000
spaces and ``b`` take 3 s), and the section ends come from one pass with a stack of the
headings still open (was a search of the later headings per heading: 6.4 s for 80,000).
"""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple

__all__ = ["Section", "sections"]

#: one line terminator, as LSP and ``LineIndex`` count them (not ``str.splitlines``'s set)
_BREAK = re.compile(r"\r\n|\r|\n")
#: the first character of a line that can open or close a fence or start a heading
_MARKERS = frozenset("#`~ ")


class Section(NamedTuple):
    """A heading's section in code points: ``[start_cp, end_cp)`` starts at the heading,
    which is on the 0-based ``line``."""

    level: int
    title: str
    start_cp: int
    end_cp: int
    line: int


def sections(text: str) -> list[Section]:
    """The sections of a Markdown text, in document order.

    >>> [(s.level, s.title, s.start_cp, s.end_cp) for s in sections("# A\\nx\\n## B\\ny\\n# C\\n")]
    [(1, 'A', 0, 13), (2, 'B', 6, 13), (1, 'C', 13, 17)]
    >>> sections("```\\n# not a heading\\n```\\n")
    []

    Runtime complexity: ``O(len(text))``.
    """
    headings = list(_headings(text))
    return _with_ends(headings, len(text))


def _lines(text: str) -> Iterator[tuple[int, int, str]]:
    """``(line_number, start_cp, content)`` of every line holding a character.

    Runtime complexity: ``O(len(text))``.
    """
    start = 0
    number = 0
    for m in _BREAK.finditer(text):
        yield number, start, text[start : m.start()]
        start = m.end()
        number += 1
    if start < len(text):
        yield number, start, text[start:]


def _headings(text: str) -> Iterator[tuple[int, str, int, int]]:
    """``(level, title, start_cp, line)`` of each ATX heading outside fenced code blocks.

    Runtime complexity: ``O(len(text))``: each line is read a constant number of times.
    """
    fence = ""  # the opening fence's run (```` ``` ````, ``~~~~``...) while inside a block
    for number, start, line in _lines(text):
        if not line or line[0] not in _MARKERS:
            continue  # most lines: neither a fence nor a heading
        indent = _indent(line)
        if indent > 3:
            continue  # indented code: never a fence or a heading
        run_end = _fence_run(line, indent)
        if fence:
            run = line[indent:run_end]
            if run and run[0] == fence[0] and len(run) >= len(fence) \
                    and not line[run_end:].strip():
                fence = ""
        elif run_end > indent and not (line[indent] == "`" and "`" in line[run_end:]):
            fence = line[indent:run_end]  # a backtick fence's info string has no backtick
        else:
            heading = _atx(line, indent)
            if heading is not None:
                yield heading[0], heading[1], start, number


def _indent(line: str) -> int:
    """Leading spaces of ``line``, counted up to 4 (4 or more make indented code).

    Runtime complexity: ``O(1)``.
    """
    n = 0
    while n < 4 and n < len(line) and line[n] == " ":
        n += 1
    return n


def _run_end(line: str, i: int, ch: str) -> int:
    """The index after the run of ``ch`` that starts at ``line[i]``.

    Runtime complexity: ``O(len(line))`` in C.
    """
    rest = line[i:]
    return len(line) - len(rest.lstrip(ch))


def _fence_run(line: str, indent: int) -> int:
    """End of the fence run (3+ backticks or 3+ tildes) at ``indent``, or ``indent`` if none.

    Runtime complexity: ``O(len(line))``.
    """
    if indent >= len(line) or line[indent] not in "`~":
        return indent
    end = _run_end(line, indent, line[indent])
    return end if end - indent >= 3 else indent


def _atx(line: str, indent: int) -> tuple[int, str] | None:
    """``(level, title)`` if ``line`` is an ATX heading whose ``#`` run starts at ``indent``.

    The rules of the regular expression this replaces, ``" {0,3}(#{1,6})(?:[ \\t]+(.*?))?
    [ \\t#]*$"``: 1-6 ``#`` followed by the end of the line or a space or tab, and the title
    is the rest without its closing ``#``s and whitespace; 7 or more ``#`` make a level-6
    heading with no title when only ``#``, spaces and tabs follow the sixth.

    >>> _atx("## Title ##", 0), _atx("#5 bolts", 0), _atx("#######", 0)
    ((2, 'Title'), None, (6, ''))

    Runtime complexity: ``O(len(line))``.
    """
    if indent >= len(line) or line[indent] != "#":
        return None
    end = _run_end(line, indent, "#")
    level = end - indent
    if level > 6:
        # subtle: the regex matched 6 of the hashes and let its closing-hash class eat the
        # rest, so "#######" was a heading but "####### x" not
        return (6, "") if not line[indent + 6 :].strip(" \t#") else None
    if end == len(line):
        return level, ""
    if line[end] not in " \t":
        return None
    return level, line[end:].lstrip(" \t").rstrip(" \t#").strip()


def _with_ends(headings: list[tuple[int, str, int, int]], n: int) -> list[Section]:
    """Sections of ``headings``: each ends at the next heading of its level or higher, else at
    ``n``. One pass; ``open_`` holds the headings not yet ended, levels increasing upwards.

    Runtime complexity: ``O(len(headings))``: each heading is pushed and popped once.
    """
    ends = [n] * len(headings)
    open_: list[int] = []  # indices into headings
    for i, (level, _title, start, _line) in enumerate(headings):
        while open_ and headings[open_[-1]][0] >= level:
            ends[open_.pop()] = start
        open_.append(i)
    return [Section(level, title, start, ends[i], line)
            for i, (level, title, start, line) in enumerate(headings)]
