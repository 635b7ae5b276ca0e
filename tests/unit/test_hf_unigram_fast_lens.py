"""A long Unigram pre-token's character counts from its ids (``hf/unigram.py``,
``_reference_encode`` with ``UnigramModel._char_lens``; issue 35): HuggingFace's ids without
offsets (``encode_batch_fast``) and each piece's length equal the offsets' counts and this
module's Viterbi, also where unknown runs are fused and byte fallback splits characters (the
table's poison makes those take the offsets)."""

from __future__ import annotations

import random

import pytest

from livetok.incremental.hf.unigram import UnigramModel, _reference_encode, reference_unigram

from .._hf_encodings import encoding

pytest.importorskip("tokenizers")


def _model(byte_fallback: bool) -> UnigramModel:
    vocab = [["<unk>", 0.0], ["a", -1.0], ["aa", -2.0], ["aaa", -3.0], ["b", -1.0],
             ["ab", -2.0], ["\u2581", -0.5], ["\u2581a", -1.5], ["\u4e2d", -2.0]]
    if byte_fallback:
        vocab += [[f"<0x{b:02X}>", -5.0] for b in range(256)]
    return UnigramModel({"type": "Unigram", "unk_id": 0, "vocab": vocab,
                         "byte_fallback": byte_fallback}, source="t.json")


@pytest.mark.parametrize("byte_fallback", [False, True])
def test_counts_from_ids_equal_the_viterbi(byte_fallback: bool) -> None:
    model = _model(byte_fallback)
    ref = reference_unigram(model)
    rng = random.Random(35)
    for _ in range(60):
        s = "".join(rng.choice(["a", "ab", "b", "\u2581", "x", "\u00e9", "\U0001F600", "\u4e2d",
                                "aaaa", "xx", "x\u4e2d", "\u2581x"])
                    for _ in range(rng.randint(1, 300)))
        want = model._encode(s)
        assert _reference_encode(ref, s, model) == want, s[:60]
        assert _reference_encode(ref, s) == want


def test_counts_from_ids_with_xlmr() -> None:
    model = encoding("xlmr").model
    ref = model._reference()
    for s in ["\u2581" + "a" * 3000, "\u2581" + "\u4e2d\u6587" * 600, "\u2581" + "ACGT" * 500,
              "\u2581" + "\U0001F600" * 100 + "\u0378" * 5 + "b" * 300,
              "\u2581" + ("\u0378\u4e2d" * 7 + "a\u0379\u0378") * 50 + "\u0378"]:
        assert _reference_encode(ref, s, model) == model._encode(s), s[:40]
