"""Markdown sections and the per-document features in linear time (issue 15, part 4).

``sections`` is compared with its old regular-expression implementations, kept below as the
reference: the ATX headings of ``server/budgets/markdown.py`` before issue 15 (it backtracked:
quadratic on a long heading line, and its section ends were a quadratic search) and the
setext headings ``server/budgets/rules.py`` found on its own before issue 16 (one sectioniser
now serves the editor and ``livetok check``); ``paragraph_span`` and ``semantic_tokens``
with slow references that read the whole text. Operation counts check the fast paths stay
fast without timing them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from livetok.incremental import get_encoding
from livetok.server.lsp import views as features
from livetok.server.lsp.settings import Settings
from livetok.server.lsp.documents import OpenDocument
from livetok.server.lsp.views import code_lenses, markdown_sections, paragraph_span, semantic_tokens
from livetok.server.lsp.lineindex import LineIndex, naive_lines
from livetok.server.budgets.markdown import FRONT_MATTER, Section, sections
from livetok.server.lsp.positions import PositionCodec

from .._lsp import naive_position, units_of
from .._refs import tiktoken_ref
from ..conftest import SLOW
from ..property.test_server_documents import decode_semantic

ROOT = Path(__file__).resolve().parents[2]
ENC = "o200k_base"

# -- the reference: ATX headings as before issue 15, setext ones as budgets.py found them -------

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*$")
#: lines that end a paragraph (and cannot start one): ATX heading, quote, list item, rule
_INTERRUPTS = re.compile(
    r" {0,3}(?:#{1,6}(?:[ \t]|$)|>|[-+*](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)"
    r"|(?:[-*_][ \t]*){3,}$)")


def _reference_lines(text: str):
    """``(start_cp, content)`` of each line, and whether it opens, closes or is in a fence."""
    fence: str | None = None
    pos = 0
    while pos < len(text):
        m = _LINE.match(text, pos)
        assert m is not None and m.end() > pos
        line = m.group().rstrip("\r\n")
        f = _FENCE.match(line)
        if fence is not None:
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) \
                    and not line[f.end():].strip():
                fence = None
            yield pos, line, True
        elif f and not (f.group(1)[0] == "`" and "`" in line[f.end():]):
            fence = f.group(1)
            yield pos, line, True
        else:
            yield pos, line, False
        pos = m.end()


def reference_atx(text: str) -> list[tuple[int, str, int]]:
    """``(level, title, start_cp)`` of the ATX headings, by the regex of before issue 15."""
    found = []
    for pos, line, fenced in _reference_lines(text):
        h = None if fenced else _HEADING.match(line)
        if h:
            found.append((len(h.group(1)), (h.group(2) or "").strip(), pos))
    return found


def reference_setext(text: str) -> list[tuple[int, str, int]]:
    """``(level, title, start_cp)`` of the setext headings, as budgets.py found them."""
    found = []
    para: int | None = None  # start of the open paragraph
    for pos, line, fenced in _reference_lines(text):
        if fenced:
            para = None
        elif para is not None and _SETEXT_UNDERLINE.match(line):
            title = " ".join(t.strip() for t in text[para:pos].splitlines())
            found.append((1 if line.strip()[0] == "=" else 2, title, para))
            para = None
        elif not line.strip() or _INTERRUPTS.match(line):
            para = None
        elif para is None and not line.startswith("    ") and not line.startswith("\t"):
            para = pos
    return found


def reference_sections(text: str, body_cp: int | None = None) -> list[tuple[int, str, int, int]]:
    """``(level, title, start_cp, end_cp)`` per heading of ``text[body_cp:]`` (default: after
    the front matter), each section ended by a search of the later headings."""
    if body_cp is None:
        m = FRONT_MATTER.match(text)
        body_cp = m.end() if m else 0
    body = text[body_cp:]
    found = sorted(reference_atx(body) + reference_setext(body), key=lambda h: h[2])
    out = []
    for i, (level, title, start) in enumerate(found):
        end = len(body)
        for level2, _, start2 in found[i + 1 :]:
            if level2 <= level:
                end = start2
                break
        out.append((level, title, start + body_cp, end + body_cp))
    return out


def check_sections(text: str, body_cp: int | None = None) -> list[Section]:
    """``sections(text, body_cp)``, checked against the reference and each heading's line."""
    secs = sections(text, body_cp)
    assert [(s.level, s.title, s.start_cp, s.end_cp) for s in secs] == reference_sections(
        text, body_cp)
    for s in secs:
        assert s.line == naive_position(text, s.start_cp, "utf-32").line
    return secs


# -- sections -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(ROOT.glob("docs/*.md")) + [ROOT / "README.md"],
                         ids=lambda p: p.name)
def test_same_sections_as_before_on_real_documents(path):
    text = path.read_text(encoding="utf-8")
    assert check_sections(text), f"{path.name} has headings: the comparison must see some"
    assert check_sections(text.replace("\n", "\r\n"))


@given(st.lists(st.sampled_from(["#", "##", "#######", " ", "   ", "\t", "```", "`", "~~~", "~",
                                 "a", "b c", "\xa0", "\n", "\n", "\r\n", "\r", "\u2028"]),
                max_size=40).map("".join))
def test_same_sections_as_before_on_random_lines(text):
    check_sections(text)


#: pieces of lines that make and break setext headings: underlines, paragraph interrupters
#: (quotes, list items, thematic breaks, Unicode digits), front matter fences, code indents
_SETEXT_PIECES = ["=", "===", "-", "---", "- ", "*", "_", " * * *", "> ", "1.", "1) ",
                  "1234567890.", "\u0663.", "\u00b2.", "#", "#######", "```", "~~~", "    ",
                  "\t", " ", "a", "b c", "...", "\ufeff", "\n", "\n", "\n", "\r\n", "\r", "\x0b"]


@given(st.lists(st.sampled_from(_SETEXT_PIECES), max_size=50).map("".join),
       st.sampled_from(["", "---\n", "---\r\nk: v\r\n", "\ufeff---\nk: v\n"]),
       st.sampled_from([None, 0]))
def test_same_sections_as_before_with_setext_headings(text, front, body_cp):
    check_sections(front + text, body_cp)


def heads(text: str) -> list[tuple[int, str]]:
    return [(s.level, s.title) for s in check_sections(text)]


def test_atx_headings_and_closing_hashes():
    assert heads("# A\n## B ##\n### C #\n#### D#\n##### E \\#\n###### F\n") == [
        (1, "A"), (2, "B"), (3, "C"), (4, "D"), (5, "E \\"), (6, "F")]
    assert heads("#\n## \n# #\n#######\n") == [(1, ""), (2, ""), (1, ""), (6, "")]
    # not headings: 7 hashes and text, no space after the hashes, 4 spaces of indent
    assert heads("####### x\n#5 bolts\n#hashtag\n    # code\n") == []
    assert heads("   # three spaces\n\t# tab\n") == [(1, "three spaces")]


def test_setext_headings():
    assert heads("Title\n=====\n\nPart\none\n----\n") == [(1, "Title"), (2, "Part one")]
    # not headings: an underline after a blank line, a list item, a quote or a fence; an
    # indented line continues a paragraph but cannot start one
    assert heads("a\n\n---\n- item\n---\n> q\n===\n```\nx\n```\n---\n    code\n===\n") == []
    assert heads("a\n    b\n===\n") == [(1, "a b")]
    # an ordered list item interrupts: its number is Unicode decimal digits, not superscripts
    assert heads("a\n\u0663.\n---\n") == [] and heads("a\n\u00b2.\n---\n") == [(2, "a \u00b2.")]
    # a line of 7 hashes is a heading but does not end the paragraph it is in
    assert heads("#######\n===\n") == [(6, ""), (1, "#######")]
    assert [s.start_cp for s in check_sections("x\n#######\n===\n")] == [0, 2]


def test_front_matter_is_not_markdown():
    text = "---\n# a YAML comment\ntitle: x\n---\nText\n---\n"
    assert heads(text) == [(2, "Text")]  # not "title: x", nor the comment
    assert [s.title for s in check_sections(text, 0)] == ["a YAML comment", "title: x", "Text"]


def test_headings_in_fenced_code_are_not_headings():
    text = ("# In\n```python\n# no\n~~~\n# no\n```\n## Out\n"
            "~~~~\n# no\n~~~\n# no\n~~~~~ \n# Yes\n"
            "``` a`b\n# yes: a backtick in the info string is no fence\n"
            "````\n# no\n```\n# no (the closing fence is too short)\n")
    assert heads(text) == [(1, "In"), (2, "Out"), (1, "Yes"),
                           (1, "yes: a backtick in the info string is no fence")]


def test_section_ends_and_lines_with_every_line_break():
    text = "# A\r\nx\r## B\ny\r\n### C\n## D\n# E"
    secs = check_sections(text)
    assert [(s.title, s.end_cp, s.line) for s in secs] == [
        ("A", text.index("# E"), 0), ("B", text.index("## D"), 2), ("C", text.index("## D"), 4),
        ("D", text.index("# E"), 5), ("E", len(text), 6)]


def test_heading_of_32000_spaces():
    # the old regex took 3 s here (x4 per doubling); the result is one heading, title kept.
    # The reference (that regex: 9 s here) is compared under slow only; the result is the same
    # written-out section either way
    text = "# a" + " " * 32_000 + "b\n"
    got = check_sections(text) if SLOW else sections(text)
    assert got == [Section(1, "a" + " " * 32_000 + "b", 0, len(text), 0)]
    text = "# a" + " " * 32_000 + "b" + " #" * 1000
    assert sections(text) == [Section(1, "a" + " " * 32_000 + "b", 0, len(text), 0)]
    text = "#" + " \t" * 16_000 + "#"
    assert sections(text) == [Section(1, "", 0, len(text), 0)]


def test_80000_headings():
    # the old search for each section's end took 6.4 s here
    n = 80_000
    text = "# top\n" + "## h\n" * n + "# end\n"
    secs = sections(text)
    assert len(secs) == n + 2
    assert secs[0] == Section(1, "top", 0, len(text) - 6, 0)
    assert secs[-1] == Section(1, "end", len(text) - 6, len(text), n + 1)
    assert all(s == Section(2, "h", 6 + 5 * i, 11 + 5 * i, i + 1)
               for i, s in enumerate(secs[1:-1]))


# -- code lenses --------------------------------------------------------------------------------


def test_code_lenses_count_each_section_once_without_line_lookups(monkeypatch):
    text = "".join(f"{'#' * (1 + i % 3)} part {i}\nsome words {i}\n" for i in range(300))
    od = OpenDocument("file:///m.md", "markdown", 1, text, get_encoding(ENC))
    secs = markdown_sections(od)
    ranges: list[tuple[int, int]] = []
    count_range = type(od.doc).count_range
    monkeypatch.setattr(type(od.doc), "count_range",
                        lambda self, s, e: ranges.append((s, e)) or count_range(self, s, e))
    line_lookups = []
    line_of = LineIndex.line_of
    monkeypatch.setattr(LineIndex, "line_of",
                        lambda self, cp: line_lookups.append(cp) or line_of(self, cp))
    lenses = code_lenses(od, Settings(), secs)
    assert ranges == [(s.start_cp, s.end_cp) for s in secs]
    assert line_lookups == []  # the old code looked up every section's line
    enc = tiktoken_ref(ENC)
    for lens, sec in zip(lenses[1:], secs):
        assert lens.line == text[: sec.start_cp].count("\n")
        assert lens.title == f"{len(enc.encode_ordinary(text[sec.start_cp:sec.end_cp])):,} tokens in this section"


def test_code_lens_of_the_32000_space_heading():
    text = "# a" + " " * 32_000 + "b\n\nbody\n"
    od = OpenDocument("file:///s.md", "markdown", 1, text, get_encoding(ENC))
    lenses = code_lenses(od, Settings(), markdown_sections(od))
    n = len(tiktoken_ref(ENC).encode_ordinary(text))
    assert [(lens.line, lens.title) for lens in lenses[1:]] == [(0, f"{n:,} tokens in this section")]


# -- paragraphs ---------------------------------------------------------------------------------


def reference_paragraph(text: str, line: int, max_lines: int) -> tuple[int, int] | None:
    """The paragraph around ``line`` from the whole text's lines (the slow, obvious way)."""
    spans = []
    start = 0
    for length, term in naive_lines(text):
        spans.append((start, start + length - term))
        start += length
    blank = [not text[s:e].strip() for s, e in spans]
    if blank[line]:
        return None
    first = last = line
    while first > 0 and line - first < max_lines and not blank[first - 1]:
        first -= 1
    while last + 1 < len(spans) and last - line < max_lines and not blank[last + 1]:
        last += 1
    return spans[first][0], spans[last][1]


@given(text=st.lists(st.sampled_from(["ab", " ", "\t", "\n", "\n", "\r\n", "\r", "\xa0", "😀",
                                      "\u2028", "x y z"]), max_size=40).map("".join))
def test_paragraph_span_matches_the_reference(text):
    od = OpenDocument("file:///p", "plaintext", 1, text, get_encoding(ENC))
    expected = [reference_paragraph(text, line, 3) for line in range(od.lines.line_count)]
    # tiny windows cut lines and "\r\n" at every place; 3 lines at most each way
    for window in (1, 2, 3, 7, 1024):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(features, "_WINDOW_CPS", window)
            mp.setattr(features, "_PARAGRAPH_MAX_LINES", 3)
            got = [paragraph_span(od, line) for line in range(od.lines.line_count)]
        assert got == expected, (window, text)


def test_paragraph_span_reads_a_long_paragraph_in_few_reads(monkeypatch):
    text = "intro\n\n" + "a line of the paragraph\n" * 5_000 + "\nafter\n"
    od = OpenDocument("file:///p", "plaintext", 1, text, get_encoding(ENC))
    reads = []
    read = OpenDocument.read
    monkeypatch.setattr(OpenDocument, "read",
                        lambda self, s, e: reads.append((s, e)) or read(self, s, e))
    assert paragraph_span(od, 2_500) == reference_paragraph(text, 2_500, 10_000)
    assert len(reads) <= 20  # doubling windows; the old code read each of the 5,000 lines
    assert sum(e - s for s, e in reads) <= 4 * len(text)


# -- semantic tokens ----------------------------------------------------------------------------


def reference_semantic(od: OpenDocument, start: int, end: int, unit: str) -> list[tuple]:
    """(line, col, length, type) per line segment of each token overlapping ``[start, end)``,
    positions measured on the whole text."""
    text = od.text()
    out = []
    for _tid, s, e in od.doc.iter_tokens(start, end):
        if s == e:
            continue
        ttype = od.doc.token_at(s).index % 2
        for m in re.finditer(r"[^\r\n]+", text[s:e]):
            p = naive_position(text, s + m.start(), unit)
            out.append((p.line, p.character, units_of(m.group(), unit), ttype))
    return out


@pytest.mark.parametrize("unit", ["utf-16", "utf-8", "utf-32"])
@given(text=st.lists(st.sampled_from(["ab", " cd", "\n", "\r\n", "\r", "\n\n", "é", "中文字",
                                      "😀", "  ", "\t"]), min_size=1, max_size=30).map("".join),
       cut=st.tuples(st.floats(0, 1), st.floats(0, 1)))
def test_semantic_token_ranges_match_the_reference(unit, text, cut):
    od = OpenDocument("file:///t", "plaintext", 1, text, get_encoding(ENC),
                      PositionCodec(unit))  # type: ignore[arg-type]
    start, end = sorted(round(c * len(text)) for c in cut)
    got = decode_semantic(semantic_tokens(od, start, end))
    assert got == reference_semantic(od, start, end, unit)


def test_semantic_tokens_read_the_text_once(monkeypatch):
    text = "word é\n" * 3_000 + "\r\n\r\n" + "end"
    od = OpenDocument("file:///t", "plaintext", 1, text, get_encoding(ENC))
    calls = []
    for cls, name in ((OpenDocument, "read"), (LineIndex, "line_span"), (LineIndex, "line_of")):
        orig = getattr(cls, name)
        monkeypatch.setattr(cls, name, lambda self, *a, _o=orig, _n=name: calls.append(_n)
                            or _o(self, *a))
    data = semantic_tokens(od, 0, od.length)
    assert sorted(calls) == ["line_of", "line_span", "read"]  # was one of each per line
    monkeypatch.undo()
    assert decode_semantic(data) == reference_semantic(od, 0, od.length, "utf-16")
