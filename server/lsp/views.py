"""What the user sees, computed from an :class:`~.documents.OpenDocument` and the settings.

Each function takes code point offsets or LSP line/columns already decoded, asks the core
for counts and tokens, and returns plain data; ``requests.py`` wraps the results in lsprotocol
types. Nothing here tokenizes: counts come from ``Document.token_count``,
``Document.count_range`` and ``Document.iter_tokens``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from livetok.incremental import TokenInfo

from livetok.server.lsp.settings import Settings
from livetok.server.lsp.compare_records import ComparedCount
from livetok.server.lsp.documents import OpenDocument
from livetok.server.budgets.markdown import Section, sections
from livetok.server.lsp.positions import LineCol, units_len

__all__ = [
    "ComparedInfo",
    "CountInfo",
    "Lens",
    "HoverInfo",
    "BudgetOverflow",
    "MARKDOWN_IDS",
    "token_count",
    "code_lenses",
    "hover",
    "paragraph_span",
    "semantic_tokens",
    "budget_overflow",
    "hover_json",
    "lenses_json",
]

#: the language ids whose code lenses include one per Markdown section
MARKDOWN_IDS = frozenset({"markdown", "md", "mdx"})
#: how far hover looks up and down for a paragraph's edges
_PARAGRAPH_MAX_LINES = 10_000
#: code points hover first reads beyond its line for the paragraph's edges (doubled per read)
_WINDOW_CPS = 1024
#: one line terminator, as ``LineIndex`` counts them
_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class ComparedInfo:
    """A document's count under one encoding of ``livetok.compare``: an item of the
    ``compare`` list of ``livetok/tokenCount`` and ``livetok/didChangeTokenCount``."""

    #: the name as ``livetok.compare`` lists it
    encoding: str
    #: the encoding counted with (a model's tokenizer, an ≈ model's stand-in)
    counted_with: str
    tokens: int
    #: the count equals the reference library's for this model; False: only ≈ (``note``)
    exact: bool
    note: str | None = None
    range_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"encoding": self.encoding, "countedWith": self.counted_with,
                               "tokens": self.tokens, "exact": self.exact}
        if self.note is not None:
            out["note"] = self.note
        if self.range_tokens is not None:
            out["rangeTokens"] = self.range_tokens
        return out


@dataclass(frozen=True)
class CountInfo:
    """The fields of ``livetok/tokenCount`` and ``livetok/didChangeTokenCount``."""

    uri: str
    version: int
    encoding: str
    tokens: int
    characters: int
    range_tokens: int | None = None
    #: the counts under ``livetok.compare``'s encodings (none: the key is left out)
    compare: tuple[ComparedInfo, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "uri": self.uri,
            "version": self.version,
            "encoding": self.encoding,
            "tokens": self.tokens,
            "characters": self.characters,
        }
        if self.range_tokens is not None:
            out["rangeTokens"] = self.range_tokens
        if self.compare:
            out["compare"] = [c.to_json() for c in self.compare]
        return out


def token_count(od: OpenDocument, cp_range: tuple[int, int] | None = None) -> CountInfo:
    """The document's count and, with ``cp_range``, the exact count of that text alone; with
    ``livetok.compare``, the same under each compared encoding.

    Runtime complexity: ``O(1)``, plus ``Document.count_range`` for a range; per compared
    encoding as much again.
    """
    # od.ready() raises DocumentUnavailable saying why; a document in sync skips the call
    doc = od.doc if od.doc is not None and od.out_of_sync is None else od.ready()
    rng = doc.count_range(*cp_range) if cp_range is not None else None
    return CountInfo(od.uri, od.version, od.encoding_name, od.token_count, od.lines.length, rng,
                     compared_counts(od, cp_range, rng) if od.compared else ())


def compared_counts(od: OpenDocument, cp_range: tuple[int, int] | None = None,
                    range_tokens: int | None = None) -> tuple[ComparedInfo, ...]:
    """``od``'s counts under ``livetok.compare``'s encodings (with ``cp_range``, the range's
    too; ``range_tokens``: the range's count under the document's own encoding, shared by a
    compared name for that encoding).

    Runtime complexity: ``O(compared)``, plus ``Document.count_range`` each for a range.
    """
    return tuple(_compared_info(od, cc, cp_range, range_tokens) for cc in od.compared)


def _compared_info(od: OpenDocument, cc: ComparedCount, cp_range: tuple[int, int] | None,
                   range_tokens: int | None) -> ComparedInfo:
    c = cc.compared
    if cc.doc is None:  # the document's own encoding
        tokens, rng = od.token_count, range_tokens
    else:
        tokens = cc.tokens
        rng = cc.doc.count_range(*cp_range) if cp_range is not None else None
    return ComparedInfo(c.name, c.encoding.name, tokens, c.exact, c.note, rng)


@dataclass(frozen=True)
class Lens:
    """A code lens title at the start of ``line``."""

    line: int
    title: str


def _share(tokens: int, window: int) -> str:
    """The share of a context window, as every client shows it (the VS Code status bar, the
    Neovim and Emacs mode lines): tenths of a percent rounded half up, in integers so that
    every language rounds alike; ``<0.1%`` below 0.05 %, one decimal below 10 %, whole
    percents from there.

    >>> [_share(t, 128000) for t in (0, 1, 64, 12700, 12749, 1500000)]
    ['0.0%', '<0.1%', '0.1%', '9.9%', '10%', '1,172%']
    """
    tenths = (2000 * tokens + window) // (2 * window)
    if tokens > 0 and tenths == 0:
        return "<0.1%"
    if tenths < 100:
        return f"{tenths // 10}.{tenths % 10}%"
    return f"{(200 * tokens + window) // (2 * window):,}%"


def code_lenses(od: OpenDocument, settings: Settings,
                markdown_sections: Sequence[Section] | None = None) -> list[Lens]:
    """The document lens on line 0, then one per Markdown section (if ``markdown_sections``).

    Runtime complexity: ``O(1)`` for the first lens; per section one ``Document.count_range``
    (``O(log n)`` plus the section's length: ``O(6 n)`` for all, as sections nest at most 6
    deep). The line comes with the section: no line lookup per section.
    """
    doc = od.ready()
    n = doc.token_count
    window = settings.context_window
    title = f"{n:,} tokens · {doc.encoding.name}"
    if window:
        title += f" · {_share(n, window)} of {window:,}-token context"
    lenses = [Lens(0, title)]
    for sec in markdown_sections or ():
        count = doc.count_range(sec.start_cp, sec.end_cp)
        lenses.append(Lens(sec.line, f"{count:,} tokens in this section"))
    return lenses


def markdown_sections(od: OpenDocument) -> list[Section]:
    """Sections of a Markdown document (reads the whole text: once per version, cached).

    Runtime complexity: ``O(n)`` on the first call for a version, ``O(1)`` after.
    """
    cached = od.sections_cache
    if cached is not None and cached[0] == od.version:
        return cached[1]
    secs = sections(od.text())
    od.sections_cache = (od.version, secs)
    return secs


@dataclass(frozen=True)
class HoverInfo:
    """What hover shows: the token(s) under the cursor and the paragraph's count."""

    markdown: str
    start_cp: int
    end_cp: int


def _show_bytes(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"bytes `{data.hex(' ')}` (part of a character)"
    return f"`{text!r}`"


def paragraph_span(od: OpenDocument, line: int) -> tuple[int, int] | None:
    """Code point span of the paragraph (run of non-blank lines) around ``line``.

    None on a blank line.

    Runtime complexity: ``O(log n + B)`` for the line, plus ``O(P + log n log P)`` for the
    ``P`` code points of the paragraph and the lines around it, read in doubling windows (was
    a line lookup and a read per line); at most 10,000 lines each way.
    """
    span = od.lines.line_span(line)
    if not od.read(span.start_cp, span.content_end_cp).strip():
        return None
    start_cp = span.start_cp
    for k, (cp, _end_cp, content) in enumerate(_lines_before(od, span.start_cp)):
        if k >= _PARAGRAPH_MAX_LINES or not content.strip():
            break
        start_cp = cp
    end_cp = span.content_end_cp
    if span.end_cp > span.content_end_cp:  # a terminator: another line follows
        for k, (_cp, cp, content) in enumerate(_lines_after(od, span.end_cp)):
            if k >= _PARAGRAPH_MAX_LINES or not content.strip():
                break
            end_cp = cp
    return start_cp, end_cp


def _lines_after(od: OpenDocument, cp: int) -> Iterator[tuple[int, int, str]]:
    """``(start_cp, content_end_cp, content)`` of the line starting at ``cp`` and those after.

    Runtime complexity: ``O(log n)`` per window read plus the text read, which is at most
    about twice the text of the lines taken (windows double).
    """
    n = od.length
    w = _WINDOW_CPS
    while True:
        hi = min(n, cp + w)
        buf = od.read(cp, hi)
        pos = 0
        for m in _BREAK.finditer(buf):
            if m.end() == len(buf) and hi < n and m.group() == "\r":
                break  # subtle: maybe the first half of "\r\n": read it again, whole
            yield cp + pos, cp + m.start(), buf[pos : m.start()]
            pos = m.end()
        else:
            if hi == n:
                yield cp + pos, n, buf[pos:]  # the last line (empty after a final break)
                return
        cp += pos  # the line cut by the window's end starts the next, longer window
        w *= 2


def _lines_before(od: OpenDocument, cp: int) -> Iterator[tuple[int, int, str]]:
    """``(start_cp, content_end_cp, content)`` of the lines before the line starting at
    ``cp``, nearest first.

    Runtime complexity: as :func:`_lines_after`.
    """
    w = _WINDOW_CPS
    while cp > 0:
        lo = max(0, cp - w)
        buf = od.read(lo, cp)  # ends with the terminator of the line before cp
        breaks = list(_BREAK.finditer(buf))
        # the text before the first break belongs to a line that may start before `lo`
        # (subtle: when `lo` cuts a "\r\n", that break is its "\n" alone: still a line end)
        for prev, m in zip(reversed(breaks[:-1]), reversed(breaks[1:])):
            yield lo + prev.end(), lo + m.start(), buf[prev.end() : m.start()]
        if lo == 0:
            yield 0, breaks[0].start(), buf[: breaks[0].start()]
            return
        cp = lo + breaks[0].end()
        w *= 2


def hover(od: OpenDocument, cp_offset: int, line: int) -> HoverInfo | None:
    """Hover at ``cp_offset`` (on ``line``): token id, text or bytes, index; paragraph count.

    Runtime complexity: ``O(log n)`` for the token plus :func:`paragraph_span` and
    ``Document.count_range`` over the paragraph.
    """
    doc = od.ready()
    if doc.length == 0:
        return None
    at = min(cp_offset, doc.length - 1)
    tok = doc.token_at(at)
    if tok is None:
        return None
    # a character split over several byte-level tokens: the first holds it, the others
    # follow with zero width at its end; show them together
    toks = [tok]
    for tid, s, e in doc.iter_tokens(tok.start, min(tok.end + 1, doc.length)):
        if s == e == tok.end:
            toks.append(tok._replace(index=toks[-1].index + 1, id=tid,
                                     bytes=doc.encoding.token_bytes(tid), start=s, end=e))
        elif s > tok.end:
            break
    parts = [
        f"**token {t.index + 1:,} of {doc.token_count:,}** · id `{t.id}` · {_show_bytes(t.bytes)}"
        for t in toks
    ]
    para = paragraph_span(od, line)
    n: int | None = None
    if para is not None:
        n = doc.count_range(*para)
        first = od.lines.line_of(para[0]) + 1
        last = od.lines.line_of(para[1]) + 1
        where = f"line {first}" if first == last else f"lines {first}–{last}"
        parts.append(f"paragraph ({where}): **{n:,} tokens**")
    parts.append(f"_{doc.encoding.name}_")
    if od.compared:
        parts.append(_hover_compared(od, para, n))
    return HoverInfo("\n\n".join(parts), tok.start, tok.end)


def _hover_compared(od: OpenDocument, para: tuple[int, int] | None,
                    para_tokens: int | None) -> str:
    """Hover's line for ``livetok.compare``: the paragraph's count (the document's, on a
    blank line) under each compared encoding, an ≈ one marked so.

    >>> from livetok.incremental import get_encoding
    >>> from livetok.server.lsp.compare_records import Compared
    >>> od = OpenDocument("file:///a", "plaintext", 1, "hello world", get_encoding("o200k_base"),
    ...                   compare=[Compared("cl100k_base", get_encoding("cl100k_base")),
    ...                            Compared("claude", get_encoding("cl100k_base"), False, "≈")])
    >>> _hover_compared(od, (0, 11), 2)
    'paragraph under livetok.compare: cl100k_base **2** · claude **≈ 2** (stand-in cl100k_base)'

    Runtime complexity: one ``Document.count_range`` per compared encoding.
    """
    items = []
    for info in compared_counts(od, para, para_tokens):
        n = info.tokens if para is None else info.range_tokens
        if info.exact:
            items.append(f"{info.encoding} **{n:,}**")
        else:
            items.append(f"{info.encoding} **≈ {n:,}** (stand-in {info.counted_with})")
    return f"{'paragraph' if para is not None else 'document'} under livetok.compare: " + (
        " · ".join(items))


def _position_json(pos: LineCol) -> dict[str, int]:
    return {"line": pos[0], "character": pos[1]}


def hover_json(od: OpenDocument, line: int, character: int) -> dict[str, Any] | None:
    """The LSP ``Hover`` result at ``line``/``character`` (the client's units), as JSON: what
    ``textDocument/hover`` answers, from the full server or from the stdio front.

    Runtime complexity: :func:`hover`'s, plus two position conversions.
    """
    info = hover(od, od.to_cp(line, character), line)
    if info is None:
        return None
    return {"contents": {"kind": "markdown", "value": info.markdown},
            "range": {"start": _position_json(od.to_position(info.start_cp)),
                      "end": _position_json(od.to_position(info.end_cp))}}


def lenses_json(lenses: Sequence[Lens]) -> list[dict[str, Any]]:
    """The LSP ``CodeLens`` results of ``lenses``, as JSON (each at the start of its line,
    with a title-only command). Runtime complexity: ``O(lenses)``."""
    out = []
    for lens in lenses:
        p = {"line": lens.line, "character": 0}
        out.append({"range": {"start": p, "end": p}, "command": {"title": lens.title,
                                                                  "command": ""}})
    return out


def semantic_tokens(od: OpenDocument, start_cp: int, end_cp: int) -> list[int]:
    """LSP semantic token data for the tokens overlapping ``[start_cp, end_cp)``.

    Token ``i`` of the document gets type ``i % 2``; a token spanning lines is cut at each
    line break (terminators are not coloured); zero-width tokens are skipped but keep their
    index, so the alternation follows the real sequence.

    Runtime complexity: ``O(log n + B + k + L)`` for ``k`` tokens and the ``L`` code points
    from the first token's line start to the last token's end, read once (was a line lookup
    and a read per line, ``O(log n + B)`` each).
    """
    doc = od.ready()
    unit = od.codec.unit
    data: list[int] = []
    if start_cp >= end_cp or doc.length == 0:
        return data
    toks = list(doc.iter_tokens(start_cp, end_cp))
    index = -1  # sequence index of the current token, known from the first whole one on
    line = -1
    prev_line, prev_col = 0, 0
    for _tid, s, e in toks:
        if index >= 0:
            index += 1
        elif s < e:
            # subtle: placeholders (WordPiece whitespace) are not yielded and not counted, so
            # ask the core for the index of the first token that holds a character
            first = doc.token_at(s)
            index = first.index if first is not None else 0
        if s == e:
            continue
        if line < 0:
            # subtle: the first token may start on a line above start_cp ("\n\n" tokens).
            # One read covers every line touched; offsets below are into `buf`. It reaches
            # one past the last token so that a "\r\n" there is read whole.
            line = od.lines.line_of(s)
            base = od.lines.line_start(line)
            buf = od.read(base, min(doc.length, toks[-1][2] + 1))
            line_start, (content_end, line_end) = 0, _line_ends(buf, 0)
            ascii_line = buf[:content_end].isascii()
            cur, cur_units = 0, 0  # units from the line start to buf[cur]
        ttype = index % 2
        pos, tok_end = s - base, e - base
        while pos < tok_end:
            while pos >= line_end:
                line += 1
                line_start, (content_end, line_end) = line_end, _line_ends(buf, line_end)
                ascii_line = buf[line_start:content_end].isascii()
                cur, cur_units = line_start, 0
            if pos >= content_end:  # inside the terminator
                pos = line_end
                continue
            seg_end = min(tok_end, content_end)
            if ascii_line:
                col, length = pos - line_start, seg_end - pos
            else:
                cur_units += units_len(buf[cur:pos], unit)
                col = cur_units
                length = units_len(buf[pos:seg_end], unit)
                cur, cur_units = seg_end, col + length
            delta_line = line - prev_line
            delta_col = col - prev_col if delta_line == 0 else col
            data += (delta_line, delta_col, length, ttype, 0)
            prev_line, prev_col = line, col
            pos = seg_end
    return data


def _line_ends(buf: str, start: int) -> tuple[int, int]:
    """``(content_end, end)`` of the line of ``buf`` starting at ``start``; a line without
    a terminator in ``buf`` runs to its end (``buf`` covers every token it is asked about).

    Runtime complexity: ``O(length of the line)``.
    """
    m = _BREAK.search(buf, start)
    return (m.start(), m.end()) if m is not None else (len(buf), len(buf))


@dataclass(frozen=True)
class BudgetOverflow:
    """Where the document goes over its budget: tokens from ``start_cp`` on are over."""

    start_cp: int
    tokens: int
    budget: int

    @property
    def message(self) -> str:
        over = self.tokens - self.budget
        return (f"{self.tokens:,} tokens: {over:,} over the budget of {self.budget:,} "
                "(setting livetok.budget)")


def budget_overflow(od: OpenDocument, budget: int | None) -> BudgetOverflow | None:
    """Where the first token past ``budget`` starts, or None when within budget.

    Runtime complexity: ``O(log^2 n)``: a binary search over offsets with ``token_at`` (plus
    a walk over placeholders for encodings that have them).
    """
    if budget is None:
        return None
    doc = od.ready()
    n = doc.token_count
    if n <= budget:
        return None
    def next_token(cp: int) -> TokenInfo | None:
        # the token holding cp or, on an uncounted placeholder (WordPiece whitespace), the
        # first token after it: keeps the search predicate monotone
        tok = doc.token_at(cp)
        if tok is None:
            for _tid, s, e in doc.iter_tokens(cp, doc.length):
                if s < e:
                    return doc.token_at(s)
        return tok

    lo, hi = 0, doc.length - 1  # find the first offset whose token index is >= budget
    while lo < hi:
        mid = (lo + hi) // 2
        tok = next_token(mid)
        if tok is None or tok.index >= budget:
            hi = mid
        else:
            lo = mid + 1
    tok = next_token(lo)
    return BudgetOverflow(tok.start if tok is not None else lo, n, budget)


def end_position(od: OpenDocument) -> LineCol:
    """LSP position of the end of the document."""
    return od.to_position(od.length)
