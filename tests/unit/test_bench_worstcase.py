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


def test_changed_tokens(W: ModuleType) -> None:
    assert W.changed_tokens([1, 2, 3], [1, 2, 3]) == 0
    assert W.changed_tokens([], [5]) == 1
    assert W.changed_tokens([7] * 10_000, [7] * 10_001) == 1  # the prefix and suffix overlap
    old = list(range(20_000))
    new = old[:9_000] + [-1, -2] + old[9_005:]
    assert W.changed_tokens(old, new) == 5


def test_doctests(W: ModuleType) -> None:
    assert doctest.testmod(W).failed == 0
