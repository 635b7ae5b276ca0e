"""Long lines without spaces in the tokenizer.json pipelines whose pieces are the BPE model's
cuts (Gemma 3, Llama 2: ``BPEModel.cuts``, sped up inside *solid runs* by
``BPEModel._run_cuts``).

* the run-skipping cut finder equals the plain pair test, on a toy model and on the real files'
  models, for text made of solid runs, runs that alternate classes, ``▁`` and CJK letters;
* a :class:`Document` holding a long ``ACGT`` or CJK line is edited inside the line, at its
  edges, by typing a space into it and by deleting what joined it to its neighbours; after every
  edit its ids equal HuggingFace's encode of the whole text and ``Document._check()`` holds.

The real-file document tests keep the lines short enough for a fast default run (a Gemma 3
``ACGT`` line is one piece, encoded whole at build); ``LIVETOK_SLOW=1`` adds a longer line.
"""

from __future__ import annotations

import os
import random
from itertools import compress
from operator import add, not_

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental import Document
from livetok.incremental.hf import bpe as bpe_module
from livetok.incremental.hf.bpe import _RUN_MIN, _RUNS_FROM, BPEModel

from .._hf_encodings import encoding, hf_ids
from ..conftest import EXAMPLES

SLOW = os.environ.get("LIVETOK_SLOW") == "1"
CJK = "中文字符测试漢字日本語한국어"


def _plain_cuts(s: str, pairs: frozenset[str]) -> list[int]:
    """The pair test of ``BPEModel.cuts`` without runs skipped."""
    return list(compress(range(1, len(s)), map(not_, map(pairs.__contains__, map(add, s, s[1:])))))


def _toy() -> BPEModel:
    # "ACGT" pair with each other (one class); "xy" with themselves only; digits with nothing
    vocab = {c: i for i, c in enumerate("ACGTxy0123456789▁中")}
    merges = []
    for a in "ACGT":
        for b in "ACGT":
            vocab.setdefault(a + b, len(vocab))
            merges.append(f"{a} {b}")
    for a in "xy":
        vocab.setdefault(a + a, len(vocab))
        merges.append(f"{a} {a}")
    return BPEModel({"type": "BPE", "vocab": vocab, "merges": merges}, source="toy.json")


#: texts: long runs of one class, runs of alternating classes, separators, CJK
PART = st.sampled_from(["ACGT", "AC", "G", "x", "y", "xy", "0", "12", "▁", "中", "q", "-"])
RUN = st.tuples(st.sampled_from(["A", "C", "G", "T", "x", "y", "1", "a", "Z"]),
                st.integers(1, 3 * _RUN_MIN)).map(lambda t: t[0] * t[1])
ACGT_RUN = st.text("ACGT", min_size=_RUN_MIN - 2, max_size=4 * _RUN_MIN)
TEXT = st.lists(PART | RUN | ACGT_RUN, min_size=1, max_size=24).map("".join)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(s=TEXT)
def test_run_cuts_equal_the_plain_pair_test_on_a_toy_model(s: str) -> None:
    model = _toy()
    pairs = model.joinable_pairs()
    assert model._run_cuts(s, pairs) == _plain_cuts(s, pairs)
    if len(s) > _RUNS_FROM:
        # cuts() as a whole (its unknown-character rule on top: "q" is no token here)
        fast = model.cuts(s)
        bpe_module._RUNS_FROM = len(s)
        try:
            assert fast == model.cuts(s)
        finally:
            bpe_module._RUNS_FROM = _RUNS_FROM


@pytest.mark.parametrize("name", ["gemma3", "llama2"])
def test_run_cuts_equal_the_plain_pair_test_on_the_real_models(name: str) -> None:
    model = encoding(name).model
    pairs = model.joinable_pairs()
    rng = random.Random(20261128)
    alphabets = ["ACGT", "ACGTacgt", "ACGT▁", "abcdefghijklmnopqrstuvwxyz", "ABCDEFabc019-_.",
                 "".join(map(chr, range(33, 127))), "ACGT中文", "Aa1"]
    for k in range(400):
        a = alphabets[k % len(alphabets)]
        n = rng.randrange(_RUNS_FROM + 1, 1500)
        if k % 3 == 0:  # long runs of one letter or one alphabet
            s = "".join(rng.choice(a) * rng.randrange(1, 3 * _RUN_MIN) for _ in range(8))
        else:
            s = "".join(rng.choice(a) for _ in range(n))
        assert model._run_cuts(s, pairs) == _plain_cuts(s, pairs), (name, s)
    line = "".join(rng.choice("ACGT") for _ in range(20_000))
    text = "some words▁before" + line + "▁and▁after, with 42 digits" + line[:100]
    assert model._run_cuts(text, pairs) == _plain_cuts(text, pairs)


def _check_edits(name: str, text: str, edits: list[tuple[int, int, str]]) -> None:
    doc = Document(text, encoding=encoding(name))
    assert doc.token_ids() == hf_ids(name, text)
    for s, e, ins in edits:
        doc.edit(s, e, ins)
        text = text[:s] + ins + text[e:]
        assert doc.text == text
        assert doc.token_ids() == hf_ids(name, text), (name, s, e, ins)
        doc._check()


def _line_edits(rng: random.Random, lo: int, n: int, alphabet: str, k: int
                ) -> list[tuple[int, int, str]]:
    """``k`` edits in the line ``[lo, lo + n)``: inserts and deletes anywhere in it (its first
    and last characters included), a space typed into it and then deleted, a replace."""
    edits: list[tuple[int, int, str]] = []
    length = n
    for j in range(k):
        kind = j % 6
        if kind == 0:  # at the edges
            p = lo if j % 12 == 0 else lo + length
            edits.append((p, p, rng.choice(alphabet)))
            length += 1
        elif kind == 1:  # delete the first or last character
            p = lo if j % 12 == 1 else lo + length - 1
            edits.append((p, p + 1, ""))
            length -= 1
        elif kind == 2:  # type a space in the middle, then delete it
            p = lo + rng.randrange(1, length - 1)
            edits.append((p, p, " "))
            edits.append((p, p + 1, ""))
        elif kind == 3:
            p = lo + rng.randrange(length)
            edits.append((p, p, rng.choice(alphabet)))
            length += 1
        elif kind == 4:
            p = lo + rng.randrange(length - 1)
            edits.append((p, p + 1, ""))
            length -= 1
        else:  # replace two letters
            p = lo + rng.randrange(length - 2)
            edits.append((p, p + 2, rng.choice(alphabet) + rng.choice(alphabet)))
    return edits


@pytest.mark.parametrize("name", ["gemma3", "llama2"])
@pytest.mark.parametrize("kind", ["ACGT", "CJK"])
def test_edits_in_a_long_line_equal_hf(name: str, kind: str) -> None:
    rng = random.Random(hash((name, kind)) & 0xFFFF)
    n = 600 if kind == "ACGT" else 300
    alphabet = "ACGT" if kind == "ACGT" else CJK
    line = "".join(rng.choice(alphabet) for _ in range(n))
    before = "A paragraph before it, with words.\nAnd the line: "
    text = before + line + "\nand a last line after it.\n"
    _check_edits(name, text, _line_edits(rng, len(before), n, alphabet, 18))


@pytest.mark.parametrize("name", ["gemma3", "llama2"])
def test_edits_that_join_and_split_long_runs_equal_hf(name: str) -> None:
    """Two long runs joined by deleting what separates them (a space, a digit, a CJK letter),
    then split again; a run glued to a lower-case word (classes change inside one span)."""
    rng = random.Random(7)
    a = "".join(rng.choice("ACGT") for _ in range(300))
    b = "".join(rng.choice("ACGT") for _ in range(300))
    for sep in (" ", "7", "中", "x"):
        text = "word" + a + sep + b + "\n"
        p = 4 + len(a)
        _check_edits(name, text, [(p, p + 1, ""), (p, p, sep), (p - 10, p + 10, "acgt"),
                                  (0, 4, ""), (0, 0, "lower")])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemma3", "llama2"])
def test_edits_in_a_longer_line_equal_hf(name: str) -> None:
    rng = random.Random(11)
    n = 20_000
    line = "".join(rng.choice("ACGT") for _ in range(n))
    text = "before " + line + "\nafter\n"
    _check_edits(name, text, _line_edits(rng, 7, n, "ACGT", 24))


def test_spans_that_alternate_classes_are_tested_whole() -> None:
    """A span of class characters whose runs alternate (``x`` and ``y`` pair only with
    themselves in the toy) is left to the plain test after ``_SHORT_MAX`` short runs; a solid
    run after it in another span is still skipped, and one right after it in the same span is
    tested plainly (the same cuts either way)."""
    model = _toy()
    pairs = model.joinable_pairs()
    for s in ("xy" * 40 + "A" * 64, "xy" * 40 + "▁" + "ACGT" * 20 + "xy", "x" * 40 + "y" * 40,
              "A" * 100 + "xy" * 30 + "C" * 50):
        assert model._run_cuts(s, pairs) == _plain_cuts(s, pairs), s


@settings(max_examples=EXAMPLES)
@given(text=st.lists(st.sampled_from(["a", " ", "  ", "中", "\u2581", "b c", "é"]),
                     min_size=1, max_size=12).map("".join),
       seg_start=st.booleans())
def test_prepend_sequence_cuts_off_a_segment_start_are_sound(text: str, seg_start: bool) -> None:
    """Llama 2's normalizer (Prepend, then a one-character Replace): a cut that
    ``Sequence.cut_ok`` allows with ``start=False`` splits the normalization in two, both
    inside a segment and at the start of one (the text's start, which a scan does not mark);
    with ``start=True`` no cut is allowed at 1, and a longer Replace keeps the strict rule."""
    from livetok.incremental.hf.normalizers import Prepend, Replace, Sequence

    seq = Sequence([Prepend("\u2581"), Replace(" ", "\u2581")])
    for i in range(1, len(text)):
        if seq.cut_ok(text, i, start=False):
            whole = seq.normalize(text, segment_start=seg_start)
            parts = (seq.normalize(text[:i], segment_start=seg_start)
                     + seq.normalize(text[i:], segment_start=False))
            assert parts == whole, (text, i)
    if len(text) > 1:
        assert not seq.cut_ok(text, 1, start=True)
    wide = Sequence([Prepend("\u2581"), Replace("ab", "x")])
    assert all(wide.cut_ok(text, i, start=False) == wide.cut_ok(text, i)
               for i in range(1, min(3, len(text))))


def test_edits_deep_inside_a_quiet_piece_stretch_it_exactly() -> None:
    """Gemma 3 offers local boundaries (``QuietEncoding``): an edit ``2 M`` inside a long
    ``ACGT`` piece keeps every boundary and is glued without re-splitting the line
    (``Document._stretch``); ids equal HF's after each, also in a run of one letter, where
    Algorithm 1 widens to the whole run; an edit that is not quiet (a space, a ``<``) takes
    the general way."""
    enc = encoding("gemma3")
    m = enc.quiet_margin
    assert m > 0
    rng = random.Random(43)
    for line in ("".join(rng.choice("ACGT") for _ in range(1500)), "C" * 700):
        text = "Some words first.\n" + line + "\nthen more words.\n"
        lo, hi = 18 + 2 * m + 1, 18 + len(line) - 2 * m - 2
        edits = [(p, p + rng.randint(0, 2), rng.choice(["", "A", "GT", "C"]))
                 for p in (rng.randint(lo, hi) for _ in range(12))]
        edits += [(lo + 5, lo + 5, " "), (lo + 5, lo + 6, ""), (hi - 3, hi - 3, "<")]
        doc = Document(text, encoding=enc)
        for s, e, ins in edits:
            doc.edit(s, e, ins)
            text = text[:s] + ins + text[e:]
            assert doc.token_ids() == hf_ids("gemma3", text), (s, e, ins)
        doc._check()
        assert 10 <= doc.stats.stretched <= len(edits) - 2, doc.stats


@settings(max_examples=EXAMPLES, deadline=None)
@given(runs=st.lists(st.tuples(st.integers(0, 260), st.sampled_from(
    ["😀", "中文", "ß", "Ω", "é", "1", " ", "\n", "<", "\t", "ACGT", "▁"])), min_size=1,
    max_size=6), seed=st.integers(0, 2**16), data=st.data())
def test_quiet_windows_hold_no_boundary_and_horizons_stay_within_the_margin(
        runs: list[tuple[int, str]], seed: int, data: st.DataObject) -> None:
    """``quiet(w)`` for a window of a text (long ``ACGT`` runs between other characters):
    no piece boundary of the whole text lies ``M`` or more inside it; and every piece's
    horizon is at most its end plus ``M`` (conditions 3 and 1 of ``QuietEncoding``)."""
    enc = encoding("gemma3")
    m = enc.quiet_margin
    rng = random.Random(seed)
    text = "".join("".join(rng.choice("ACGT") for _ in range(k)) + sep for k, sep in runs)
    bounds = {e for _, e in enc.split(text)}
    for s, e in enc.split(text):
        assert enc.horizon(text, s, len(text) + 1) <= e + m, (text, s, e)
    for _ in range(20):
        x = data.draw(st.integers(0, len(text)))
        y = data.draw(st.integers(x, min(len(text), x + 6 * m)))
        if enc.quiet(text[x:y]):
            assert not any(x + m <= c <= y - m for c in bounds), (text, x, y)
