"""Cuts inside grapheme clusters proved by normalizing (``hf/precompiled.py``,
``VerifiedCut``; issue 35): XLM-R's Precompiled maps an emoji sequence's ZWJ to a space, where
its pre-tokenizer cuts, but the certain-break rule refused every cut inside the cluster, so an
emoji line was one piece re-split and re-encoded whole on every edit.

* on text full of clusters that join across places (ZWJ sequences, skin tones, variation
  selectors, combining marks, Hangul jamo, flags, CR LF, runs of spaces), XLM-R's pieces
  encode to HuggingFace's ids, the split restarts at every piece, and every horizon is sound
  and dominated (``test_hf_horizon.check``);
* typing in an emoji line equals HuggingFace after every key;
* an emoji line now has pieces, and a cut that would change the normalization is refused.
"""

from __future__ import annotations

import random

import pytest

from livetok.incremental import Document
from livetok.incremental.hf.precompiled import Charsmap, VerifiedCut

from .._edits import type_in_span
from .._hf_encodings import encoding, hf_ids
from ..conftest import EXAMPLES
from .test_hf_horizon import check

pytest.importorskip("tokenizers")

ZWJ = ["\U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
       "\U0001F468\u200d\U0001F4BB", "\U0001F3F3\ufe0f\u200d\U0001F308",
       "\U0001F469\U0001F3FD\u200d\U0001F680", "\U0001F1EB\U0001F1F7", "\u2764\ufe0f"]
ATOMS = ZWJ + ["\u200d", "\ufe0f", "\U0001F3FD", "e\u0301", "\u0301", "\u1100\u1161\u11a8",
               "\u1100", "\r\n", "\r", " ", "  ", "   ", "a", "ab", "\u2581", "中文", "Ａ",
               "\ufb01", "<mask>", "<s>", "\u0915\u094d\u0937", "\u3000", "\t"]


def _text(rng: random.Random, k: int = 18) -> str:
    return "".join(rng.choice(ATOMS) for _ in range(rng.randint(0, k)))


def test_pieces_horizons_and_ids_on_cluster_text() -> None:
    enc = encoding("xlmr")
    assert enc._verify is not None
    rng = random.Random(35)
    for _ in range(max(30, EXAMPLES * 2)):
        text = _text(rng)
        pieces = list(enc.split(text))
        ids = [i for s, e in pieces for i in enc.encode_piece(text[s:e], at_text_start=s == 0)]
        assert ids == hf_ids("xlmr", text), text
        for k, (s, _) in enumerate(pieces):
            assert list(enc.split(text, s)) == pieces[k:], ("restart", text, s)
        check(enc, text, rng, tries=2)


def test_an_emoji_line_has_pieces() -> None:
    enc = encoding("xlmr")
    rng = random.Random(7)
    line = "".join(rng.choice(ZWJ[:4]) for _ in range(300))
    pieces = list(enc.split(line))
    assert len(pieces) > 200, len(pieces)  # (one piece before VerifiedCut)
    ids = [i for s, e in pieces for i in enc.encode_piece(line[s:e], at_text_start=s == 0)]
    assert ids == hf_ids("xlmr", line)


@pytest.mark.parametrize("seed", range(2))
def test_typing_in_an_emoji_line_equals_huggingface(seed: int) -> None:
    enc = encoding("xlmr")
    rng = random.Random(seed)
    line = "".join(rng.choice(ZWJ) for _ in range(400))
    text = "Some text.\n" + line + "\nmore text\n"
    lo = text.index(line)
    doc = Document(text, enc)
    type_in_span(rng, doc, text, lo, len(line), alphabet="".join(set("".join(ZWJ))),
                 other="a \u200d\u0301", n=40, reference=lambda t: hf_ids("xlmr", t))


def test_a_cut_that_changes_the_normalization_is_refused() -> None:
    # "e" + U+0301 is one cluster of 3 bytes, replaced whole by "é": cut apart, each half
    # normalizes alone to "e" and U+0301, not "é"
    cm = Charsmap.from_rules({"e\u0301": "\u00e9", "\u200d": " "})
    v = VerifiedCut(cm, None)
    assert not v.ok("xe\u0301y", 2)
    # a 7-byte ZWJ cluster is mapped character by character: the cut before the ZWJ is exact
    w = "x\U0001F468\u200d\U0001F4BBy"
    assert cm.normalize(w[:2]) + cm.normalize(w[2:]) == cm.normalize(w)
    assert v.ok(w, 2)
    # no certain break within reach on the left; none inside the window on the right
    assert not v.ok("a" + "\u0301" * 40 + "\u200d" + "a", 41)
    assert not v.ok(w[:4], 2)
