"""Long Unigram pre-tokens (XLM-R; issue 35, item 2): encoded by HuggingFace's own model when
``tokenizers`` is installed (``hf/unigram.py``, ``UnigramModel._long``).

* the reference's ids and character counts equal this module's Viterbi on tie-prone text
  (runs of one character, where ``aa a`` and ``a aa`` score the same; repeated patterns;
  unknown characters fused; byte fallback), on synthetic models whose ties are exact and on
  XLM-R's vocabulary;
* a document edited inside a long run equals HuggingFace's encode of the whole text after
  every edit, and the Python Viterbi never runs over the long pre-token.
"""

from __future__ import annotations

import random

import pytest

from livetok.incremental import Document
from livetok.incremental.hf.unigram import UnigramModel, _reference_encode, reference_unigram

from .._edits import type_in_span
from .._hf_encodings import encoding, hf_ids

pytest.importorskip("tokenizers")


def _tie_model(byte_fallback: bool) -> UnigramModel:
    # "a" -1, "aa" -2, "aaa" -3: every segmentation of a run of a scores the same (exact
    # ties in float64 only while the sums stay exact); "b", "ab", "ba" likewise
    vocab = [["<unk>", 0.0], ["a", -1.0], ["aa", -2.0], ["aaa", -3.0], ["b", -1.0],
             ["ab", -2.0], ["ba", -2.0], ["\u2581", -0.5], ["\u2581a", -1.5], ["c", -0.1],
             ["cc", -0.2], ["ccc", -0.30000000000000004]]
    if byte_fallback:
        vocab += [[f"<0x{b:02X}>", -5.0] for b in range(256)]
    return UnigramModel({"type": "Unigram", "unk_id": 0, "vocab": vocab,
                         "byte_fallback": byte_fallback}, source="ties.json")


def _tie_prone(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.randrange(5)
        if kind == 0:
            parts.append(rng.choice("abc") * rng.randint(1, 400))
        elif kind == 1:
            parts.append(rng.choice(["ab", "aab", "ba", "abc", "cca"]) * rng.randint(1, 100))
        elif kind == 2:
            parts.append("".join(rng.choice("abc\u2581xé") for _ in range(rng.randint(1, 50))))
        elif kind == 3:
            parts.append(rng.choice(["x", "é", "😀", "中"]) * rng.randint(1, 20))
        else:
            parts.append("\u2581" + "a" * rng.randint(0, 30))
    return "".join(parts)


@pytest.mark.parametrize("byte_fallback", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_the_reference_equals_the_viterbi_on_tie_prone_text(byte_fallback: bool, seed: int
                                                            ) -> None:
    model = _tie_model(byte_fallback)
    ref = reference_unigram(model)
    rng = random.Random(seed)
    for _ in range(40):
        s = _tie_prone(rng)
        assert _reference_encode(ref, s) == model._encode(s), s[:80]


@pytest.mark.parametrize("seed", range(3))
def test_the_reference_equals_the_viterbi_with_xlmr(seed: int) -> None:
    model = encoding("xlmr").model
    ref = model._reference()
    assert ref is not None
    rng = random.Random(seed)
    texts = ["\u2581" + "a" * 3000, "\u2581" + "中文" * 400 + "字" * 300, "\u2581" + "ACGT" * 500,
             "\u2581" + "😀" * 200 + "\U0001F468\u200d\U0001F469" * 50,
             "\u2581" + "".join(rng.choice("aab") for _ in range(2000)),
             "\u2581" + "12" * 700 + "1" * 301]
    for s in texts:
        assert _reference_encode(ref, s) == model._encode(s), s[:40]


@pytest.mark.parametrize("line,alphabet", [("a" * 2000, "a"), ("中" * 800 + "文" * 700, "中文"),
                                           ("ab" * 900, "ab")])
def test_edits_in_a_long_unigram_piece_equal_huggingface(line: str, alphabet: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    enc = encoding("xlmr")
    viterbi = UnigramModel.pieces

    def short_only(self: UnigramModel, s: str) -> list[str]:
        assert len(s) <= 256, "the Python Viterbi ran over a long pre-token"
        return viterbi(self, s)

    monkeypatch.setattr(UnigramModel, "pieces", short_only)
    rng = random.Random(len(line))
    text = "Some text.\n" + line + "\nmore text\n"
    lo, length = text.index(line), len(line)
    doc = Document(text, enc)
    type_in_span(rng, doc, text, lo, length, alphabet=alphabet, other="abX ", n=25,
                 reference=lambda t: hf_ids("xlmr", t))


def test_an_edit_on_an_emoji_line_reads_it_a_bounded_number_of_times(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # XLM-R's Precompiled maps an emoji sequence's ZWJ to a space, so its normalizer may cut
    # nowhere in an emoji line: the horizon's scan found the line's end once per candidate
    # piece end (quadratic; at 100,000 characters one edit ran for minutes). Counted in
    # normalizer cut tests, not time: a linear scan makes a few per character.
    from livetok.incremental.hf import normalizers

    enc = encoding("xlmr")
    zwj = ("\U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
           "\U0001F468\u200d\U0001F4BB", "\U0001F3F3\ufe0f\u200d\U0001F308",
           "\U0001F469\U0001F3FD\u200d\U0001F680")
    rng = random.Random(35)
    line = "".join(rng.choice(zwj) for _ in range(300))
    text = "a\n" + line + "\n" + "word " * 200
    doc = Document(text, enc)
    calls = 0
    cut_ok = normalizers.Sequence.cut_ok

    def counted(self: normalizers.Sequence, *args: object, **kw: object) -> bool:
        nonlocal calls
        calls += 1
        return cut_ok(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(normalizers.Sequence, "cut_ok", counted)
    lo = 2
    for k in range(6):
        calls = 0
        p = lo + rng.randrange(len(line))
        if k % 2:
            doc.edit(p, p + 1, "")
            text = text[:p] + text[p + 1:]
            line = line[:p - lo] + line[p - lo + 1:]
        else:
            ch = rng.choice(["\u200d", "x", " ", "\U0001F469"])
            doc.edit(p, p, ch)
            text = text[:p] + ch + text[p:]
            line = line[:p - lo] + ch + line[p - lo:]
        assert calls <= 10 * len(line), (k, calls, len(line))
        assert doc.token_ids() == hf_ids("xlmr", text)
