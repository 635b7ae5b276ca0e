"""Markdown sections: the span each heading governs, for per-section counts (the editor's
code lenses and ``livetok check``'s section budgets read the same sections).

A section runs from its heading to the next heading of the same or a higher level (so a
chapter's count includes its subsections), or to the end of the document. Headings follow
CommonMark: ATX (``# Title``) and setext (a paragraph underlined with ``===`` for level 1
or ``---`` for level 2). Lines inside fenced code blocks (```` ``` ```` or ``~~~``) are not
headings, and YAML front matter at the top (``---`` ... ``---``) is not Markdown.

Finding headings reads the whole text: whether a ``#`` line is a heading depends on every
fence above it, whether a ``---`` line underlines one on the paragraph above it. The server
therefore computes sections only when a client asks for code lenses of a Markdown document,
once per document version.

A budget counts the same sections as :class:`BudgetSection` (:func:`budget_sections`: lines
from 1, headings with their ATX markers), the spans ``livetok check``'s section budgets and
the editor's diagnostics report.

Both steps are linear (issue 15): each line is read by a plain scan with ``str`` methods
(no regular expression over the line, whose backtracking made a heading of ``# a``, 32,000
spaces and ``b`` take 3 s), and the section ends come from one pass with a stack of the
headings still open (was a search of the later headings per heading: 6.4 s for 80,000).
"""

from __future__ import annotations

import re
from typing import Iterator, NamedTuple

__all__ = ["FRONT_MATTER", "BudgetSection", "Section", "budget_sections", "front_matter_end",
           "sections"]

#: one line terminator, as LSP and ``LineIndex`` count them (not ``str.splitlines``'s set)
_BREAK = re.compile(r"\r\n|\r|\n")
#: the first character of a line that can open or close a fence or start an ATX heading
_MARKERS = frozenset("#`~ ")
#: a line that could underline a setext heading: when no line matches, paragraphs need not
#: be followed (a text's first line underlines nothing, so a line break comes before)
_MAYBE_UNDERLINE = re.compile(r"[\r\n] {0,3}(?:=+|-+)[ \t]*(?:[\r\n]|$)")
#: YAML front matter: ``---`` on the first line (after a byte order mark) to ``---`` or
#: ``...``; the ``body`` group is the YAML (``frontmatter.front_matter`` reads budgets from it)
FRONT_MATTER = re.compile(
    r"\A\ufeff?---[ \t]*\r?\n(?P<body>(?:.*?\r?\n)??)(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)

#: a heading as found: ``(level, title, start_cp, line)``
_Heading = tuple[int, str, int, int]


class Section(NamedTuple):
    """A heading's section in code points: ``[start_cp, end_cp)`` starts at the heading,
    which is on the 0-based ``line``."""

    level: int
    title: str
    start_cp: int
    end_cp: int
    line: int


def front_matter_end(text: str) -> int:
    """Where the YAML front matter at the top of ``text`` ends (0 when there is none).

    >>> front_matter_end("---\\ntitle: x\\n---\\n# Hi\\n"), front_matter_end("# Hi\\n")
    (17, 0)

    Runtime complexity: ``O(size of the front matter)``, ``O(len(text))`` if it is not closed.
    """
    m = FRONT_MATTER.match(text)
    return m.end() if m else 0


def sections(text: str, body_cp: int | None = None) -> list[Section]:
    """The sections of the Markdown in ``text[body_cp:]``, in document order, with offsets
    and lines into ``text``; ``body_cp`` defaults to :func:`front_matter_end`.

    >>> [(s.level, s.title, s.start_cp, s.end_cp) for s in sections("# A\\nx\\n## B\\ny\\n# C\\n")]
    [(1, 'A', 0, 13), (2, 'B', 6, 13), (1, 'C', 13, 17)]
    >>> [(s.level, s.title, s.line) for s in sections("Top\\n===\\ntext\\nand more\\n---\\n")]
    [(1, 'Top', 0), (2, 'text and more', 2)]
    >>> sections("```\\n# not a heading\\n```\\n"), sections("---\\ntitle: x\\n---\\n")
    ([], [])

    Runtime complexity: ``O(len(text))``.
    """
    if body_cp is None:
        body_cp = front_matter_end(text)
    first_line = sum(1 for _ in _BREAK.finditer(text, 0, body_cp))
    return _with_ends(_headings(text, body_cp, first_line), len(text))


def _lines(text: str, start: int, number: int) -> Iterator[tuple[int, int, str]]:
    """``(line_number, start_cp, content)`` of every line from ``start`` (line ``number``)
    that holds a character.

    Runtime complexity: ``O(len(text) - start)``.
    """
    for m in _BREAK.finditer(text, start):
        yield number, start, text[start : m.start()]
        start = m.end()
        number += 1
    if start < len(text):
        yield number, start, text[start:]


def _headings(text: str, body_cp: int, first_line: int) -> list[_Heading]:
    """The ATX and setext headings of ``text[body_cp:]`` outside fenced code blocks, in
    document order.

    Runtime complexity: ``O(len(text))``: each line is read a constant number of times, a
    setext heading's paragraph once more for its title.
    """
    found: list[_Heading] = []
    setext = ("-" in text or "=" in text) and _MAYBE_UNDERLINE.search(text, body_cp) is not None
    fence = ""  # the opening fence's run (```` ``` ````, ``~~~~``...) while inside a block
    para: tuple[int, int] | None = None  # (start_cp, line) of the open paragraph
    unsorted = False
    for number, start, line in _lines(text, body_cp, first_line):
        if not setext:
            if not line or line[0] not in _MARKERS:
                continue  # most lines: neither a fence nor a heading
        elif not line:  # a blank line ends the paragraph, and nothing else
            para = None  # (inside a fence it is None already)
            continue
        elif line[:1].isalpha():  # prose: it opens or goes on with a paragraph, nothing else
            if not fence and para is None:
                para = start, number
            continue
        indent = _indent(line)
        run_end = _fence_run(line, indent) if indent <= 3 else indent
        if fence:
            run = line[indent:run_end]
            if run and run[0] == fence[0] and len(run) >= len(fence) \
                    and not line[run_end:].strip():
                fence = ""
            continue
        if run_end > indent and not (line[indent] == "`" and "`" in line[run_end:]):
            fence, para = line[indent:run_end], None  # a backtick fence's info has no backtick
            continue
        atx = _atx(line, indent) if indent <= 3 else None
        if atx is not None:
            found.append((atx[0], atx[1], start, number))
        elif para is not None and (level := _underline(line, indent)):
            title = " ".join(t.strip() for t in text[para[0] : start].splitlines())
            # subtle: found at its underline, a setext heading comes after an ATX heading
            # that its paragraph holds ("#######" interrupts no paragraph)
            unsorted = unsorted or bool(found) and found[-1][2] > para[0]
            found.append((level, title, para[0], para[1]))
            para = None
            continue
        if setext:
            para = _paragraph_after(para, line, indent, start, number)
    if unsorted:  # stable, and the list is nearly sorted: O(len(found))
        found.sort(key=lambda h: h[2])
    return found


def _paragraph_after(para: tuple[int, int] | None, line: str, indent: int, start: int,
                     number: int) -> tuple[int, int] | None:
    """The open paragraph after ``line`` (``para`` before it): a blank line or one that
    interrupts a paragraph closes it, a line not indented as code opens one.

    Runtime complexity: ``O(len(line))``.
    """
    if not line.strip() or _interrupts(line, indent):
        return None
    if para is None and not line.startswith(("    ", "\t")):
        return start, number
    return para


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


def _underline(line: str, indent: int) -> int | None:
    """The level a setext underline gives the paragraph above it: 1 for ``===``, 2 for
    ``---`` (one run of ``=`` or ``-`` after at most 3 spaces, then only spaces and tabs).

    >>> _underline("===", 0), _underline(" -- ", 1), _underline("-- -", 0)
    (1, 2, None)

    Runtime complexity: ``O(len(line))``.
    """
    if indent > 3 or indent >= len(line) or line[indent] not in "=-":
        return None
    if line[_run_end(line, indent, line[indent]) :].strip(" \t"):
        return None
    return 1 if line[indent] == "=" else 2


def _interrupts(line: str, indent: int) -> bool:
    """Whether ``line`` ends a paragraph instead of continuing it: an ATX heading of 1 to 6
    ``#``, a block quote, a list item (``-``, ``+``, ``*``, or up to 9 digits and ``.`` or
    ``)``, then a space, a tab or the end) or a thematic break (3 or more of ``-``, ``*``,
    ``_`` with only spaces and tabs between).

    >>> [_interrupts(x, 0) for x in ("## a", "#######", "> q", "-", "1) x", "12a", "* * *")]
    [True, False, True, True, True, False, True]

    Runtime complexity: ``O(len(line))``.
    """
    if indent > 3 or indent >= len(line):
        return False
    c = line[indent]
    if c == "#":
        end = _run_end(line, indent, "#")
        return end - indent <= 6 and line[end : end + 1] in ("", " ", "\t")
    if c == ">" or (c in "-+*" and line[indent + 1 : indent + 2] in ("", " ", "\t")):
        return True
    if c.isdecimal():  # any Unicode decimal digit, as ``\d`` in a regular expression
        end = indent
        while end < len(line) and end - indent < 10 and line[end].isdecimal():
            end += 1
        return (end - indent <= 9 and line[end : end + 1] in (".", ")")
                and line[end + 1 : end + 2] in ("", " ", "\t"))
    rest = line[indent:]
    return c in "-*_" and not rest.strip("-*_ \t") and sum(map(rest.count, "-*_")) >= 3


def _with_ends(headings: list[_Heading], n: int) -> list[Section]:
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


class BudgetSection(NamedTuple):
    """A heading's section: ``[start_cp, end_cp)`` from its heading (on 1-based ``line``) to
    the next heading of the same or a higher level."""

    level: int
    title: str
    start_cp: int
    end_cp: int
    line: int

    @property
    def heading(self) -> str:
        """The heading as ATX markers and title, whatever its style: ``"## Tools"``."""
        return "#" * self.level + " " + self.title


def budget_sections(text: str, body_cp: int = 0) -> list[BudgetSection]:
    """Sections of the Markdown in ``text[body_cp:]`` (after the front matter), with offsets
    into ``text``: :func:`sections` (ATX and setext headings), lines from 1.

    >>> [(s.level, s.title, s.line) for s in budget_sections("A\\n===\\n## B\\n```\\n# no\\n```\\n")]
    [(1, 'A', 1), (2, 'B', 3)]

    Runtime complexity: ``O(len(text))``.
    """
    return [BudgetSection(s.level, s.title, s.start_cp, s.end_cp, s.line + 1)
            for s in sections(text, body_cp)]
