"""Edits inside quiet runs that make new boundaries near themselves (``Document._local``): an
ASCII letter, a digit or a space typed into a line of emoji, of punctuation or of CJK letters
(any tiktoken pattern; o200k's letter pieces, with their two cased runs, included) re-split
only a window around the edit (issue 35). Exact against tiktoken after every edit, in lines made of the pieces
that stress the window's argument: marks that make an emoji a letter piece (``U+FE0F``),
ZWJ, tails of newlines and slashes, contractions, and what earlier edits left in the line.

``LIVETOK_LOCAL_EDITS`` edits per (encoding, line) (default 300; the slow run 3,000).
"""

from __future__ import annotations

import os
import random

import pytest

from livetok.incremental import Document, get_encoding

from .._refs import BPE_NAMES, tiktoken_ref
from ..conftest import SLOW

EDITS = int(os.environ.get("LIVETOK_LOCAL_EDITS", "3000" if SLOW else "300"))

EMOJI = ["\U0001F469\u200d\U0001F469\u200d\U0001F467", "\U0001F468\u200d\U0001F4BB",
         "\U0001F3F3\ufe0f\u200d\U0001F308", "\U0001F469\U0001F3FD\u200d\U0001F680", "\U0001F600",
         "\u2764\ufe0f", "\U0001F44D\U0001F3FB"]
PUNCT = ["=", "-", "*", "#", "!", "?", "\u00b7", "\u2014", "\u3002", "\u300c"]
CJK = ["中", "文", "字", "日", "本", "語", "の", "한", "국", "ー"]
#: what is typed into the lines: ASCII letters (both cases), digits, spaces, and what makes
#: the window's pieces unusual
TYPED = [*"aAzZqQ09 ", "  ", "ab", "Ab", "'s", "'", "/", "\n", "\r\n", "\t", "\u0301", "\ufe0f",
         "\u200d", "é", "x1", " a", "!a", "a!"]


#: what a "mixed" CJK line holds besides CJK letters, one character in fifty: letters of one
#: of o200k's cased runs only (upper, title, lower, a lower one without an upper form), a
#: modifier letter, a mark, a digit, a space, punctuation
RARE = ["A", "b", "\u01c5", "\u0138", "\u02b0", "\u0301", "1", " ", ".", "Z", "q"]


def _line(rng: random.Random, kind: str, n: int) -> str:
    if kind == "mixed":
        return "".join(rng.choice(RARE) if rng.random() < 0.02 else rng.choice(CJK)
                       for _ in range(n))
    if kind == "emoji":
        return "".join(rng.choice(EMOJI) for _ in range(n // 3))[:n]
    if kind == "punct":
        return "".join(rng.choice(PUNCT) for _ in range(n))
    return "".join(rng.choice(CJK) for _ in range(n))


def _own(rng: random.Random, kind: str) -> str:
    return rng.choice({"emoji": EMOJI, "punct": PUNCT, "cjk": CJK, "mixed": CJK}[kind])


@pytest.mark.parametrize("name", BPE_NAMES)
@pytest.mark.parametrize("kind", ["emoji", "punct", "cjk", "mixed"])
def test_edits_inside_quiet_runs_equal_tiktoken(name, kind, monkeypatch):
    """Random inserts (typed characters, the line's own, short runs of both) and deletes in
    one long line between ordinary text, with ``LOCAL_MIN_CP`` lowered so that lines of a few
    thousand characters take the window; ids checked after every edit, the document's
    invariants every 25 edits, and the window taken on most edits that could take it."""
    import livetok.incremental.document as document_module

    monkeypatch.setattr(document_module, "LOCAL_MIN_CP", 64)
    rng = random.Random(f"{name}/{kind}")
    ref = tiktoken_ref(name)
    # rounds of 300 edits, each in a new line: typing fills a line with short pieces, where
    # no window is quiet any more
    for _ in range(max(1, EDITS // 300)):
        line = _line(rng, kind, 3_000)
        text = "Some text before.\n" * 5 + line + "\nand after it.\n" * 5
        lo = text.index(line)
        hi = lo + len(line)
        doc = Document(text, encoding=get_encoding(name), load=16)
        for k in range(min(EDITS, 300)):
            p = rng.randrange(lo, hi)
            if rng.random() < 0.4 and hi - lo > 100:
                e = min(hi, p + rng.choice([1, 1, 1, 2, 5]))
                ins = ""
            else:
                e = p + (rng.random() < 0.1)
                ins = (rng.choice(TYPED) if rng.random() < 0.7
                       else _own(rng, kind) * rng.randint(1, 3))
            doc.edit(p, e, ins)
            text = text[:p] + ins + text[e:]
            hi += len(ins) - (e - p)
            assert doc.token_ids() == ref.encode_ordinary(text), (k, p, e, ins, text[p - 9: p + 9])
            if k % 25 == 0:
                doc._check()
        doc._check()
        assert doc.stats.local > (10 if kind == "mixed" else 30), doc.stats


@pytest.mark.parametrize("kind", ["emoji", "cjk"])
def test_a_letter_typed_into_a_long_line_resplits_only_a_window(kind, monkeypatch):
    """The bench's case (issue 35): o200k, ASCII letters of both cases, a digit and a space
    typed deep inside a line of emoji ZWJ sequences or of CJK letters, and deleted again,
    between real text: every edit takes the window (no re-split of the rest of the line: the
    split is never asked for more than a window's characters), and the ids equal
    tiktoken's."""
    from livetok.incremental.bytelevel.pretokenize import Pretokenizer

    enc = get_encoding("o200k_base")
    ref = tiktoken_ref("o200k_base")
    rng = random.Random(35)
    line = _line(rng, kind, 60_000)
    text = "Hello.\n" * 50 + line + "\nBye.\n" * 50
    doc = Document(text, encoding=enc)
    longest = []
    split = Pretokenizer.split
    monkeypatch.setattr(Pretokenizer, "split",
                        lambda self, t, pos=0: (longest.append(len(t) - pos), split(self, t, pos))[1])
    lo = text.index(line)
    for ins in ["a", " ", "Z", "7", "a b"]:
        p = lo + rng.randrange(5_000, 55_000)
        doc.edit(p, p, ins)
        text = text[:p] + ins + text[p:]
        assert doc.token_ids() == ref.encode_ordinary(text)
        doc.edit(p, p + len(ins), "")
        text = text[:p] + text[p + len(ins):]
        assert doc.token_ids() == ref.encode_ordinary(text)
    assert doc.stats.local == 10, doc.stats
    assert max(longest) < 400, max(longest)


def test_a_lower_case_letter_left_of_an_upper_case_one_cuts_far_from_itself():
    """o200k, a CJK line with an upper-case ``R`` typed into it (still one piece: its upper-case
    run goes through ``R``): a lower-case ``a`` typed 20,000 characters to the left starts the
    lower-case run there, which stops at ``R``, so the line is cut at ``R``, far from the
    edit. The window decides it (``Pretokenizer.run_break`` finds ``R``); the 20,000 tokens
    between stay where they are; the ids equal tiktoken's after each edit."""
    enc = get_encoding("o200k_base")
    ref = tiktoken_ref("o200k_base")
    line = _line(random.Random(7), "cjk", 60_000)
    text = "Hello.\n" * 50 + line + "\nBye.\n" * 50
    doc = Document(text, encoding=enc)
    lo = text.index(line)
    for p, ins in [(lo + 40_000, "R"), (lo + 20_000, "a"), (lo + 30_000, "b"), (lo + 20_000, "")]:
        e = p + 1 if not ins else p
        doc.edit(p, e, ins)
        text = text[:p] + ins + text[e:]
        assert doc.token_ids() == ref.encode_ordinary(text), (p, ins)
    assert doc.stats.local >= 3, doc.stats
    doc._check()
