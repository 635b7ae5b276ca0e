"""Local boundaries (``QuietEncoding``) of the byte-level ``tokenizer.json`` files whose split
pattern has a tiktoken twin (``hf/bytelevel_file.QUIET_TWINS``: Llama 3, Qwen 3 through its
NFC wrapper, gpt-oss, GPT-4o, Mistral Nemo), so that an edit deep inside a long letter or
punctuation piece (a CJK line, an emoji line, a run of one letter) stretches the piece
instead of re-splitting the line to its end (issue 35).

* the capability's conditions on each file's text (long quiet runs between other characters,
  added tokens, for Qwen 3 characters NFC changes): no boundary ``M`` or more inside a quiet
  window, every piece's horizon at most its end plus ``M``;
* documents of long lines under random edits inside them, their ids equal HuggingFace's after
  every edit, with most edits stretched; for Qwen 3, a long piece holding a character NFC may
  change (somewhere far from the edit) is never stretched (its head is refused), and a
  stretch next to such a piece is exact.

Seeded, small by default; ``LIVETOK_SLOW=1`` runs longer lines and more edits.
"""

from __future__ import annotations

import functools
import os
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental import Document
from livetok.incremental.glue import GLUE_MIN_CP

from .._hf_encodings import encoding, hf_ids
from ..conftest import EXAMPLES

pytest.importorskip("tokenizers")

SLOW = os.environ.get("LIVETOK_SLOW") == "1"
#: the files with a quiet twin, and one without
TWINNED = ["llama3", "qwen3", "gptoss", "gpt4o", "mistral_nemo"]
CJK = "中文字符测试漢字日本語の文章한국어"
ZWJ = ["👩\u200d👩\u200d👧", "👨\u200d💻", "🏳\ufe0f\u200d🌈", "👩🏽\u200d🚀"]
#: runs and what separates them: spaces, digits, apostrophes, newlines, added-token text,
#: letters of both cases, and characters NFC changes (a decomposed e, jamo, a singleton)
SEPARATORS = [" ", "1", "'s", "\n", "<|", "<think>", "Ab", "aB", "é", "e\u0301",
              "\u1100\u1161", "\u212b", "\uf900", "==", "\t", "x"]


def _run(rng: random.Random, kind: str, k: int) -> str:
    if kind == "cjk":
        return "".join(rng.choice(CJK) for _ in range(k))
    if kind == "emoji":
        return "".join(rng.choice(ZWJ) for _ in range(k // 4 + 1))
    if kind == "punct":
        return "".join(rng.choice("=-*#~") for _ in range(k))
    return "a" * k


@pytest.mark.parametrize("name", TWINNED)
def test_the_twinned_files_offer_local_boundaries(name: str) -> None:
    enc = encoding(name)
    assert enc.quiet_margin > 0
    assert enc.quiet(CJK * 4) and enc.quiet("".join(ZWJ) * 4)
    assert not enc.quiet(CJK + " " + CJK) and not enc.quiet(CJK + "<" + CJK)


def test_a_file_without_a_twin_offers_none() -> None:
    assert getattr(encoding("deepseek_v3"), "quiet_margin", 0) == 0


@pytest.mark.parametrize("name", TWINNED)
@settings(max_examples=EXAMPLES, deadline=None)
@given(runs=st.lists(st.tuples(st.integers(0, 300), st.sampled_from(["cjk", "emoji", "punct",
                                                                     "letter"]),
                               st.sampled_from(SEPARATORS)), min_size=1, max_size=6),
       seed=st.integers(0, 2**16), data=st.data())
def test_an_edit_quiet_around_it_deep_inside_a_piece_only_stretches_it(
        name: str, runs: list[tuple[int, str, str]], seed: int, data: st.DataObject) -> None:
    """What ``Document._stretch`` assumes (the capability's conditions, in the form it uses
    them): an edit ``2 M`` inside a piece, the new text ``2 M`` around it quiet (and the old
    text there when it replaced some), leaves every other piece where it was, shifted, and
    the piece stretched; and a quiet window holds no boundary ``M`` or more inside it."""
    enc = encoding(name)
    m = enc.quiet_margin
    rng = random.Random(seed)
    text = "".join(_run(rng, kind, k) + sep for k, kind, sep in runs)
    spans = list(enc.split(text))
    bounds = {e for _, e in spans}
    for _ in range(10):
        x = data.draw(st.integers(0, len(text)))
        y = data.draw(st.integers(x, min(len(text), x + 6 * m)))
        if enc.quiet(text[x:y]):
            assert not any(x + m <= c <= y - m for c in bounds), (text, x, y)
    deep = [(a, b) for a, b in spans if b - a >= 4 * m + 2]
    for _ in range(10 if deep else 0):
        a, b = data.draw(st.sampled_from(deep))
        p = data.draw(st.integers(a + 2 * m, b - 2 * m - 1))
        q = data.draw(st.integers(p, min(p + 2, b - 2 * m)))
        ins = "".join(data.draw(st.lists(st.sampled_from(text[a:b] + "a中=👩"), max_size=2)))
        new = text[:p] + ins + text[q:]
        delta = len(ins) - (q - p)
        if not enc.quiet(new[p - 2 * m:p + len(ins) + 2 * m]) or (
                q > p and not enc.quiet(text[p - 2 * m:q + 2 * m])):
            continue
        want = [(s, e) if e <= a else (a, b + delta) if s == a else (s + delta, e + delta)
                for s, e in spans]
        assert list(enc.split(new)) == want, (text, p, q, ins)


@functools.lru_cache(maxsize=None)
def _own_encoding(name: str) -> Any:
    """An encoding of ``name`` that only the documents of this module's line tests use.

    subtle: Qwen 3's wrapper keeps the heads of the long pieces holding a character NFC may
    change that it has split, for every document of the encoding object, for good
    (``NfcByteLevelFile._hard_heads``): the shared ``encoding(name)`` had split ``"a" * 48 +
    "e\u0301"`` in another test of the same worker (a fresh clone's run), and the one-letter
    line's stretches were refused (stretched 0 of 30)."""
    return encoding.__wrapped__(name)


def _edit_line(name: str, line: str, alphabet: list[str], rng: random.Random, n: int) -> Document:
    """``n`` random edits inside ``line`` (in a small document), ids equal HF's after each."""
    enc = _own_encoding(name)
    head = "Some words first, <think> 12.\n"
    text = head + line + "\nthen more words.\n"
    doc = Document(text, encoding=enc)
    lo, length = len(head), len(line)
    for _ in range(n):
        if rng.random() < 0.5:
            p = lo + rng.randrange(length + 1)
            ins = rng.choice(alphabet)
            doc.edit(p, p, ins)
            text = text[:p] + ins + text[p:]
            length += len(ins)
        else:
            p = lo + rng.randrange(length)
            q = min(lo + length, p + rng.randint(1, 2))
            doc.edit(p, q, "")
            text = text[:p] + text[q:]
            length -= q - p
        assert doc.token_ids() == hf_ids(name, text), (p, text[p - 8:p + 8])
    doc._check()
    return doc


#: (line, what is typed into it: mostly its own characters, sometimes a breaking one)
LINES = {
    "cjk": (CJK * 60, list(CJK) * 6 + [" ", "a", "<", "1", "'", "\u0301"]),
    "emoji": ("".join(ZWJ) * 60,
              ["👩", "\u200d", "💻", "🌈"] * 6 + ["a", " ", "<|", "\ufe0f"]),
    "letter": ("a" * 900, ["a"] * 20 + ["b", "Q", " ", "é", "1"]),
    "punct": ("=" * 900, ["=", "-"] * 10 + ["a", " ", "<"]),
}


@pytest.mark.parametrize("shape", list(LINES))
@pytest.mark.parametrize("name", TWINNED)
def test_edits_inside_a_long_line_stretch_it_exactly(name: str, shape: str) -> None:
    line, alphabet = LINES[shape]
    rng = random.Random(len(name) * 31 + len(shape))
    n = 120 if SLOW else 30
    doc = _edit_line(name, line * (4 if SLOW else 1), alphabet, rng, n)
    if shape == "letter" and name in ("gptoss", "gpt4o", "mistral_nemo"):
        # o200k's quiet letters are those in both cased classes (CJK), not "a": re-split
        assert doc.stats.stretched == 0, doc.stats
    else:
        assert doc.stats.stretched >= n // 4, doc.stats


@pytest.mark.parametrize("hard", ["e\u0301", "\u1100\u1161", "a\u0323"])
def test_a_long_qwen_piece_holding_a_character_nfc_may_change_is_never_stretched(
        hard: str) -> None:
    """Qwen 3: a CJK line with one unit NFC may change in its middle is one piece holding a
    hard character; edits far from it must not glue it by its image (the head is refused),
    and a line next to it stretches exactly."""
    enc = _own_encoding("qwen3")
    line = CJK * 30 + hard + CJK * 30
    rng = random.Random(91)
    doc = _edit_line("qwen3", line, list(CJK), rng, 12)
    assert doc.stats.stretched == 0, doc.stats
    head = doc.text[30:30 + GLUE_MIN_CP]
    assert not enc.glue_ok(head)
    # (the second line starts otherwise: a piece whose head equals a refused one is refused)
    other = "\n".join([CJK * 30 + hard + CJK * 30, CJK[::-1] * 60])
    doc = _edit_line("qwen3", other, list(CJK), random.Random(92), 16)
    assert doc.stats.stretched > 0, doc.stats
