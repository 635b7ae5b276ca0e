"""What the user sees, computed from an :class:`~.documents.OpenDocument` and the settings.

Each function takes code point offsets or LSP line/columns already decoded, asks the core
for counts and tokens, and returns plain data; ``app.py`` wraps the results in lsprotocol
types. Nothing here tokenizes: counts come from ``Document.token_count``,
``Document.count_range`` and ``Document.iter_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import Settings
from .documents import OpenDocument
from .markdown import sections
from .positions import LineCol, units_len

__all__ = [
    "CountInfo",
    "Lens",
    "HoverInfo",
    "BudgetOverflow",
    "SEMANTIC_TOKEN_TYPES",
    "token_count",
    "code_lenses",
    "hover",
    "paragraph_span",
    "semantic_tokens",
    "budget_overflow",
]

#: two standard types so that every theme colours them differently; tokens alternate
SEMANTIC_TOKEN_TYPES = ["keyword", "string"]
#: how far hover looks up and down for a paragraph's edges
_PARAGRAPH_MAX_LINES = 10_000


@dataclass(frozen=True)
class CountInfo:
    """The fields of ``livetok/tokenCount`` and ``livetok/didChangeTokenCount``."""

    uri: str
    version: int
    encoding: str
    tokens: int
    characters: int
    range_tokens: int | None = None

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
        return out


def token_count(od: OpenDocument, cp_range: tuple[int, int] | None = None) -> CountInfo:
    """The document's count and, with ``cp_range``, the exact count of that text alone.

    Runtime complexity: ``O(1)``, plus ``Document.count_range`` for a range.
    """
    doc = od.ready()
    rng = doc.count_range(*cp_range) if cp_range is not None else None
    return CountInfo(od.uri, od.version, doc.encoding.name, doc.token_count, doc.length, rng)


@dataclass(frozen=True)
class Lens:
    """A code lens title at the start of ``line``."""

    line: int
    title: str


def _share(tokens: int, window: int) -> str:
    pct = 100.0 * tokens / window
    return f"{pct:.1f}%" if pct < 1000 else f"{pct:,.0f}%"


def code_lenses(od: OpenDocument, settings: Settings, markdown_sections: list | None = None) -> list[Lens]:
    """The document lens on line 0, then one per Markdown section (if ``markdown_sections``).

    Runtime complexity: ``O(1)`` for the first lens; per section ``O(log n)`` to find its
    line plus ``Document.count_range``.
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
        lenses.append(Lens(od.lines.line_of(sec.start_cp), f"{count:,} tokens in this section"))
    return lenses


def markdown_sections(od: OpenDocument) -> list:
    """Sections of a Markdown document (reads the whole text: once per version, cached)."""
    cached = getattr(od, "_sections_cache", None)
    if cached is not None and cached[0] == od.version:
        return cached[1]
    secs = sections(od.text())
    od._sections_cache = (od.version, secs)  # type: ignore[attr-defined]
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

    Runtime complexity: ``O(log n + B)`` per line of the paragraph plus its length; at most
    10,000 lines each way.
    """
    def blank(k: int) -> bool:
        span = od.lines.line_span(k)
        return not od.read(span.start_cp, span.content_end_cp).strip()

    if blank(line):
        return None
    first = line
    while first > 0 and line - first < _PARAGRAPH_MAX_LINES and not blank(first - 1):
        first -= 1
    last = line
    while (last + 1 < od.lines.line_count and last - line < _PARAGRAPH_MAX_LINES
           and not blank(last + 1)):
        last += 1
    return od.lines.line_start(first), od.lines.line_span(last).content_end_cp


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
    if para is not None:
        n = doc.count_range(*para)
        first = od.lines.line_of(para[0]) + 1
        last = od.lines.line_of(para[1]) + 1
        where = f"line {first}" if first == last else f"lines {first}–{last}"
        parts.append(f"paragraph ({where}): **{n:,} tokens**")
    parts.append(f"_{doc.encoding.name}_")
    return HoverInfo("\n\n".join(parts), tok.start, tok.end)


def semantic_tokens(od: OpenDocument, start_cp: int, end_cp: int) -> list[int]:
    """LSP semantic token data for the tokens overlapping ``[start_cp, end_cp)``.

    Token ``i`` of the document gets type ``i % 2``; a token spanning lines is cut at each
    line break (terminators are not coloured); zero-width tokens are skipped but keep their
    index, so the alternation follows the real sequence.

    Runtime complexity: ``O(log n + k + L)`` for ``k`` tokens on lines of total length ``L``.
    """
    doc = od.ready()
    unit = od.codec.unit
    lines = od.lines
    data: list[int] = []
    if start_cp >= end_cp or doc.length == 0:
        return data
    index = -1  # sequence index of the current token, known from the first whole one on
    line = -1
    prev_line, prev_col = 0, 0
    for _tid, s, e in doc.iter_tokens(start_cp, end_cp):
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
            # subtle: the first token may start on a line above start_cp ("\n\n" tokens)
            line = lines.line_of(s)
            span = lines.line_span(line)
            text = od.read(span.start_cp, span.content_end_cp)
            ascii_line = text.isascii()
            cur_cp, cur_units = span.start_cp, 0  # units from the line start to cur_cp
        ttype = index % 2
        pos = s
        while pos < e:
            while pos >= span.end_cp and line + 1 < lines.line_count:
                line += 1
                span = lines.line_span(line)
                text = od.read(span.start_cp, span.content_end_cp)
                ascii_line = text.isascii()
                cur_cp, cur_units = span.start_cp, 0
            if pos >= span.content_end_cp:  # inside the terminator
                pos = span.end_cp
                continue
            seg_end = min(e, span.content_end_cp)
            base = span.start_cp
            if ascii_line:
                col, length = pos - base, seg_end - pos
            else:
                cur_units += units_len(text[cur_cp - base : pos - base], unit)
                col = cur_units
                length = units_len(text[pos - base : seg_end - base], unit)
                cur_cp, cur_units = seg_end, col + length
            delta_line = line - prev_line
            delta_col = col - prev_col if delta_line == 0 else col
            data += (delta_line, delta_col, length, ttype, 0)
            prev_line, prev_col = line, col
            pos = seg_end
    return data


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
    def next_token(cp: int) -> Any:
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
