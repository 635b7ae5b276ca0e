"""The window re-encode of long Unigram pre-tokens (``hf/unigram_window.py``; issue 35):

* its parts against obviously correct references: the common prefix and suffix, the token
  index of a place, the forced cuts (no piece of two or more characters spans them), the
  local Viterbi (equal to ``UnigramModel.pieces``);
* the certificate's claim itself: a segment that is not weak keeps its path whatever value
  HuggingFace reaches its start with (prefixes of unknown characters push that value to
  -10^5 and beyond, where float64 sums round differently);
* edits (random, and at and next to forced cuts) of tie-prone text equal HuggingFace's
  ``tokenizers`` and the Python Viterbi after every edit, on synthetic models with exact and
  rounding ties, with and without byte fallback, and on XLM-R; the window path is taken;
* a certificate switched off (every segment certified) is caught on a rounding tie.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from itertools import accumulate
from typing import Any

import pytest

from livetok.incremental.hf import unigram_window as uw
from livetok.incremental.hf.unigram import UnigramModel, _reference_encode, reference_unigram
from livetok.incremental.hf.precompiled import common_ends
from livetok.incremental.hf.unigram_window import UnigramWindow, token_index

from .._hf_encodings import encoding

pytest.importorskip("tokenizers")

#: "c" + "cc" sums to -0.30000000000000004 from 0, as "ccc" scores: a tie that a start value
#: far from 0 rounds either way
_VOCAB = [["<unk>", 0.0], ["a", -1.0], ["aa", -2.0], ["aaa", -3.0], ["b", -1.0], ["ab", -2.0],
          ["ba", -2.0], ["\u2581", -0.5], ["\u2581a", -1.5], ["c", -0.1], ["cc", -0.2],
          ["ccc", -0.30000000000000004], ["x", -1.0], ["中", -3.0], ["中文", -4.5], ["文", -3.2],
          ["文中", -6.1], ["d", -2.5], ["de", -4.0], ["e", -2.0], ["ed", -3.9]]


def _model(byte_fallback: bool) -> UnigramModel:
    vocab = list(_VOCAB)
    if byte_fallback:
        vocab += [[f"<0x{b:02X}>", -5.0] for b in range(256)]
    return UnigramModel({"type": "Unigram", "unk_id": 0, "vocab": vocab,
                         "byte_fallback": byte_fallback}, source="window.json")


def _tie_prone(rng: random.Random, size: int) -> str:
    """Text of runs that tie (one letter, "ccc"), repeated CJK, near ties, unknowns, cuts."""
    parts: list[str] = []
    while sum(map(len, parts)) < size:
        kind = rng.randrange(7)
        if kind == 0:
            parts.append(rng.choice("ac") * rng.randint(1, 12))
        elif kind == 1:
            parts.append(rng.choice(["中文", "文中", "中", "ab", "de", "ed"]) * rng.randint(1, 30))
        elif kind == 2:
            parts.append("".join(rng.choice("abcdex中文") for _ in range(rng.randint(1, 40))))
        elif kind == 3:
            parts.append(rng.choice(["y", "é", "😀", "字"]) * rng.randint(1, 6))
        elif kind == 4:
            parts.append("x" * rng.randint(1, 5))
        elif kind == 5:
            parts.append("\u2581" + "a" * rng.randint(0, 6))
        else:
            parts.append("ccc" * rng.randint(1, 4) + "x")
    return "".join(parts)


def _edit(rng: random.Random, s: str, cuts: list[int]) -> str:
    """One random edit of ``s``: at or next to a forced cut half the time."""
    if cuts and rng.random() < 0.5:
        p = min(len(s), max(0, rng.choice(cuts) + rng.randint(-2, 2)))
    else:
        p = rng.randint(0, len(s))
    kind = rng.randrange(3)
    if kind == 0 and p < len(s):
        return s[:p] + s[p + rng.randint(1, 3):]
    ins = rng.choice(["a", "c", "x", "中", "文", "d", "e", "y", "😀", "ccc", "中文中", "\u2581",
                      "aaaaaaaaaa"])
    if kind == 1 and p < len(s):
        return s[:p] + ins + s[p + 1:]
    return s[:p] + ins + s[p:]


def test_common_ends_equal_a_brute_force() -> None:
    rng = random.Random(1)
    for _ in range(500):
        a = "".join(rng.choice("ab中") for _ in range(rng.randint(0, 30)))
        b = "".join(rng.choice("ab中") for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.5:
            b = a[: rng.randint(0, len(a))] + b[:3] + a[rng.randint(0, len(a)):]
        p = 0
        while p < min(len(a), len(b)) and a[p] == b[p]:
            p += 1
        q = 0
        while q < min(len(a), len(b)) - p and a[len(a) - 1 - q] == b[len(b) - 1 - q]:
            q += 1
        assert common_ends(a, b) == (p, q), (a, b)


def test_token_index_equals_bisect() -> None:
    rng = random.Random(2)
    for size in [0, 1, 5, 30, 5000, 20000]:
        lens = [rng.choice([1, 1, 2, 3, 0]) for _ in range(size)]
        if lens and lens[0] == 0:
            lens[0] = 1
        n = sum(lens)
        ends = list(accumulate(lens))
        for c in {0, n, *(rng.randint(0, n) for _ in range(50))}:
            i = bisect_right(ends, c)
            want = i if c == 0 or (i and ends[i - 1] == c) else -1
            assert token_index(lens, c, n) == want, (size, c)


@pytest.mark.parametrize("byte_fallback", [False, True])
def test_cuts_and_the_local_viterbi_equal_their_definitions(byte_fallback: bool) -> None:
    model = _model(byte_fallback)
    win = model._windows()
    assert win is not None
    get = model.token_to_id.get
    rng = random.Random(3)
    for _ in range(60):
        t = _tie_prone(rng, rng.randint(1, 300))
        spanned = set()
        for s in range(len(t)):
            for e in range(s + 2, len(t) + 1):
                if get(t[s:e]) is not None:
                    spanned.update(range(s + 1, e))
        for c in range(len(t) + 1):
            fuses = 0 < c < len(t) and get(t[c - 1]) is None and get(t[c]) is None
            assert win.is_cut(t, c) == (c not in spanned and not fuses), (t, c)
        # the local Viterbi restarts from 0 at each cut: each segment's own Viterbi
        cuts = [c for c in range(len(t) + 1) if win.is_cut(t, c)]
        scan = win.scan(t, 0, len(t))
        assert scan.pieces == [p for c, d in zip(cuts, cuts[1:]) for p in model.pieces(t[c:d])]
        if not scan.weak:  # and, certified, the whole text's Viterbi
            ids, lens = model._tokens_of(scan.pieces)
            assert (tuple(ids), tuple(lens)) == model._encode(t), t


def test_a_segment_that_is_not_weak_keeps_its_path_after_any_prefix() -> None:
    # the certificate's claim: prefixes of unknown characters (scored min - 10 each) move the
    # value HuggingFace starts a segment with to -10^5 and beyond, where float64 sums of the
    # segment round differently; a segment that is not weak keeps the tokens it has from 0
    model = _model(False)
    win = model._windows()
    assert win is not None
    ref = reference_unigram(model)
    rng = random.Random(4)
    weak = kept = 0
    for _ in range(40):
        seg = _tie_prone(rng, rng.randint(1, 40))
        t = "x" + seg + "x"  # "x" has no piece of 2+ characters: a forced cut on each side
        scan = win.scan(t, 0, len(t))
        local = _reference_encode(ref, t)[0][1:-1]
        for n_unknown in [0, 1, 7, 1000, 12345, 99999]:
            got = _reference_encode(ref, "\u0378" * n_unknown + t)[0]
            tail = got[len(got) - len(local) - 1 : -1]
            if scan.weak:
                weak += tail != local
            else:
                assert tail == local, (seg, n_unknown)
                kept += 1
    assert kept and weak, (kept, weak)  # both kinds were met, and a weak one did move


def _run_edits(model: UnigramModel, texts: list[str], rounds: int, seed: int) -> dict[str, int]:
    """Edit each text ``rounds`` times through the model's long path; every result equals
    HuggingFace and the Python Viterbi. Returns how often each way (window or why not) ran."""
    ref = reference_unigram(model)
    win = model._windows()
    assert win is not None
    rng = random.Random(seed)
    ways: dict[str, int] = {}
    for s in texts:
        model._long(s)
        for r in range(rounds):
            cuts = [c for c in range(0, len(s) + 1, 3) if win.is_cut(s, c)]
            s = _edit(rng, s, cuts)
            if len(s) <= 256:
                s += "中文" * 200
            got = model._long(s)
            ways[win.last] = ways.get(win.last, 0) + 1
            assert got == _reference_encode(ref, s), (win.last, s[:80])
            if r % 4 == 0 or len(s) < 2500:  # (the Python Viterbi is slow)
                assert got == model._encode(s), (win.last, s[:80])
    return ways


@pytest.mark.parametrize("byte_fallback", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_edits_of_tie_prone_text_equal_huggingface(byte_fallback: bool, seed: int) -> None:
    model = _model(byte_fallback)
    rng = random.Random(seed)
    texts = [_tie_prone(rng, rng.choice([300, 2000, 6000])) for _ in range(4)]
    texts.append("中文de" * 1500)  # cuts between the units, no ties: windows
    texts.append("x".join(["ccc" * 3] * 400))
    ways = _run_edits(model, texts, 30, seed)
    assert ways.get("window", 0) > 5, ways
    if not byte_fallback:  # (with it, a replay refuses: the whole encode runs)
        assert ways.get("window, weak segments replayed", 0) > 5, ways


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_edits_with_xlmr_equal_huggingface(seed: int) -> None:
    model = encoding("xlmr").model
    rng = random.Random(seed)
    cjk = "".join(rng.choice("中文字符测试的一是不了人我在有他这为之大来以个") for _ in range(3000))
    texts = ["\u2581" + cjk, "\u2581" + "中文" * 1500, "\u2581" + "😀" * 300 + "\u0378中" * 300,
             "\u2581" + "".join(rng.choice("ABCDEFabcdef0123456789+/") for _ in range(4000)),
             "\u2581" + '{"id":12,"name":"alpha","ok":true},' * 100,
             "\u2581" + "a" * 2000, "\u2581" + "1234567890" * 300]
    ways = _run_edits(model, texts, 30, seed)
    assert ways.get("window", 0) > 40, ways


def test_a_certificate_switched_off_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # "ccc" between cuts ties with "c" + "cc" from 0 (weak); after eleven "x" HuggingFace's
    # sums round so that "c" + "cc" wins. The honest window replays the weak segment from the
    # path's value; certifying it anyway (no weak segments), or replaying it from 0 instead
    # of that value, keeps the old path and is wrong, as the comparison shows
    ref = reference_unigram(_model(False))
    new = "x" + "ccc" + "x" * 300
    old = "x" * 11 + "ccc" + "x" * 300
    assert _reference_encode(ref, old)[0][-302:] != _reference_encode(ref, new)[0][-302:]

    def run() -> tuple[tuple[tuple[int, ...], tuple[int, ...]], str]:
        model = _model(False)
        model._long(new)
        got = model._long(old)
        win = model._windows()
        assert win is not None
        return got, win.last

    assert run() == (_reference_encode(ref, old), "window, weak segments replayed")
    with monkeypatch.context() as m:
        scan = UnigramWindow.scan

        def no_certificate(self: UnigramWindow, *args: Any, **kw: Any) -> uw.Scan:
            got = scan(self, *args, **kw)
            return uw.Scan(got.pieces, [], got.unknown)

        m.setattr(UnigramWindow, "scan", no_certificate)
        got, way = run()
        assert way == "window" and got != _reference_encode(ref, old)
    with monkeypatch.context() as m:
        m.setattr(UnigramWindow, "_fold", lambda self, *args: 0.0)
        got, way = run()
        assert way == "window, weak segments replayed" and got != _reference_encode(ref, old)


def test_weak_segments_are_replayed_or_the_whole_encode_runs() -> None:
    # the replay sums the path's scores from the start; where a token's score is not its
    # piece's for certain (byte fallback: an unknown run's bytes) the whole encode runs
    ref = reference_unigram(_model(True))
    model = _model(True)
    new = "x" + "ccc" + "x" * 300
    old = "x" * 11 + "ccc" + "x" * 300
    model._long(new)
    assert model._long(old) == _reference_encode(ref, old)
    win = model._windows()
    assert win is not None and win.last == "weak segment"
