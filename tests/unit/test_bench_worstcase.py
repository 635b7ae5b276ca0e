"""The hostile lines of ``benchmarks/bench_worstcase.py``: lengths, alphabets, placement and
the edits' positions (what the benchmark measures on, not how fast: no timing here)."""

from __future__ import annotations

import base64
import binascii
import doctest
import importlib
import json
import string
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def W() -> ModuleType:
    """The benchmark script as a module (its folder on ``sys.path``, as when it runs)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("bench_worstcase")


ALPHABETS = {"letter": "a", "dna": "ACGT", "spaces": " ", "digits": string.digits,
             "base64": string.ascii_letters + string.digits + "+/"}


@pytest.mark.parametrize("n", [1_000, 10_000, 100_000])
def test_lengths_follow_the_issue(W: ModuleType, n: int) -> None:
    want = {"letter": n, "dna": n, "cjk": n, "spaces": n // 4, "digits": n // 2, "base64": n}
    for shape, length in want.items():
        assert len(W.hostile_stretch(shape, n)) == length, shape
    # whole ZWJ sequences / whole JSON records: up to one of them short of n
    assert n - 7 < len(W.hostile_stretch("emoji", n)) <= n
    assert n - 200 < len(W.hostile_stretch("json", n)) <= n


@pytest.mark.parametrize("shape", sorted(ALPHABETS))
def test_alphabets(W: ModuleType, shape: str) -> None:
    s = W.hostile_stretch(shape, 10_000)
    assert set(s) <= set(ALPHABETS[shape])
    assert W.stretch_alphabet(s) == "".join(sorted(set(s)))
    if shape in ("dna", "digits", "base64"):  # random: every letter shows up
        assert set(s) == set(ALPHABETS[shape])


def test_cjk_is_letters_only(W: ModuleType) -> None:
    import unicodedata

    s = W.hostile_stretch("cjk", 10_000)
    assert all(ord(c) >= 0x3000 and unicodedata.category(c) == "Lo" for c in s)


def test_emoji_is_zwj_sequences(W: ModuleType) -> None:
    s = W.hostile_stretch("emoji", 10_000)
    assert "\u200d" in s and not any(c.isascii() for c in s)
    rest = s
    while rest:  # it parses as a concatenation of the sequences
        seq = next(q for q in W.ZWJ_SEQUENCES if rest.startswith(q))
        rest = rest[len(seq):]


def test_json_and_base64_are_what_they_say(W: ModuleType) -> None:
    j = W.hostile_stretch("json", 10_000)
    assert isinstance(json.loads(j), list) and not any(c.isspace() for c in j)
    b = W.hostile_stretch("base64", 10_000)
    try:
        base64.b64decode(b[: len(b) // 4 * 4], validate=True)
    except binascii.Error as exc:  # pragma: no cover - the assertion's message
        pytest.fail(f"not base64: {exc}")


def test_seeded(W: ModuleType) -> None:
    for shape in W.SHAPES:
        assert W.hostile_stretch(shape, 5_000, seed=7) == W.hostile_stretch(shape, 5_000, seed=7)
    assert W.hostile_stretch("dna", 5_000, seed=7) != W.hostile_stretch("dna", 5_000, seed=8)


def test_one_line_inside_real_text(W: ModuleType) -> None:
    around = "first line\nsecond line\nthird line\nfourth\n"
    stretch = W.hostile_stretch("dna", 100)
    text, lo = W.document_text(stretch, around)
    assert text[lo:lo + len(stretch) + 1] == stretch + "\n"
    assert lo > 0 and text[lo - 1] == "\n"
    assert text[:lo] + text[lo + len(stretch) + 1:] == around


def test_edits_stay_inside_the_line(W: ModuleType) -> None:
    lo, length = 50, 30
    alphabet = "ACGT"
    edits = W.hostile_edits(lo, length, 500, alphabet, seed=3)
    inserts = [ins for _, _, ins in edits if ins]
    assert 150 < len(inserts) < 350  # about half
    assert any(c in alphabet for c in inserts) and any(c in W.ASCII_INSERTS for c in inserts)
    for s, e, ins in edits:
        assert lo <= s <= e <= lo + length and len(ins) + (e - s) == 1
        length += len(ins) - (e - s)


def _spans(W: ModuleType, toks: list[tuple[int, int, int]]) -> object:
    from array import array

    return W.Spans(array("l", [t[0] for t in toks]), array("l", [t[1] for t in toks]),
                   array("l", [t[2] for t in toks]))


def _by_position(old: list[tuple[int, int, int]], new: list[tuple[int, int, int]], start: int,
                 end: int, inserted: int) -> int:
    """Issue 35's definition, by brute force over sets: new tokens (id, start, end) that no old
    token mapped into the new text's coordinates equals (or the old ones without an equal)."""
    d = inserted - (end - start)
    mapped = {(i, a, b) if b <= start else (i, a + d, b + d) for i, a, b in old
              if b <= start or a >= end}
    news = set(new)
    return max(len(news - mapped), len(old) - len(mapped & news))


def test_changed_tokens_by_position(W: ModuleType) -> None:
    same = [(1, 0, 2), (2, 2, 4), (3, 4, 6)]
    assert W.changed_tokens(_spans(W, same), _spans(W, same), 4, 4, 0) == 0
    assert W.changed_tokens(_spans(W, []), _spans(W, [(5, 0, 1)]), 0, 0, 1) == 1
    # a run of one token repeated, one more character: the ids are the same list but one,
    # yet every token after the edit moved (issue 35, decision 1: not stored implicitly)
    run = [(7, 2 * k, 2 * k + 2) for k in range(10_000)]
    longer = [(7, 2 * k, 2 * k + 2) for k in range(10_000)] + [(8, 20_000, 20_001)]
    assert W.changed_tokens(_spans(W, run), _spans(W, longer), 9_001, 9_001, 1) == \
        _by_position(run, longer, 9_001, 9_001, 1) == 5_501


def test_changed_tokens_match_the_definition_on_documents(W: ModuleType) -> None:
    import random

    from livetok.incremental import Document, get_encoding

    rng = random.Random(35)
    doc = Document("word " * 50 + "a" * 300 + " 1234567890" * 30 + " 日本語の文章" * 20,
                   get_encoding("cl100k_base"))
    for _ in range(150):
        old = list(doc.iter_tokens())
        s = rng.randrange(doc.length + 1)
        e = min(doc.length, s + rng.choice((0, 0, 1, 3)))
        ins = rng.choice(("", "a", "7", " ", "日", "xyz"))
        before = W.token_spans(doc)
        doc.edit(s, e, ins)
        new = list(doc.iter_tokens())
        want = _by_position([(i, a, b) for i, a, b in old], [(i, a, b) for i, a, b in new],
                            s, e, len(ins))
        assert W.changed_tokens(before, W.token_spans(doc), s, e, len(ins)) == want


def test_doctests(W: ModuleType) -> None:
    assert doctest.testmod(W).failed == 0
