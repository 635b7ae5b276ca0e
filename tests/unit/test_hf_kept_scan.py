"""The horizon of a split's long first piece, found by one scan of the text from it
(``hf/encoding.py``, ``_KEEP_SCAN``; issue 35: an edit of a 1,000,000-character XLM-R line
asked the horizon of its one long piece, whose 4x regions grew to the whole line): split
unchanged, sound horizons, and documents equal to HuggingFace under edits. ``_KEEP_SCAN`` is
set to 0 so that every split's first piece takes that way."""

from __future__ import annotations

import random

import pytest

from livetok.incremental import Document
from livetok.incremental.hf import encoding as hf_encoding

from .._edits import random_edit
from .._hf_encodings import encoding, hf_ids
from .test_hf_horizon import check

pytest.importorskip("tokenizers")

#: XLM-R's hard cases: tie-prone runs, CJK, emoji ZWJ (verified cuts), unknown characters,
#: added tokens, spaces it maps
ATOMS = ["a", "aa", "ab", "中文", "字符测试", "\u0378", "\U0001F469\u200d\U0001F4BB", "\u200d",
         "e\u0301", "\u3000", " ", "  ", "\n", "<mask>", "<s>", "1", "x\u200dy", "The ", "."]


def _text(rng: random.Random, k: int = 20) -> str:
    return "".join(rng.choice(ATOMS) for _ in range(rng.randint(1, k)))


def test_split_notes_its_first_piece_and_keeps_its_pieces(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(hf_encoding, "_KEEP_SCAN", 0)
    enc = encoding("xlmr")
    rng = random.Random(3501)
    for _ in range(150):
        t = _text(rng)
        pos = 0
        want = [e for e, _ in enc._scan(t, False)]
        assert [e for _, e in enc.split(t, pos)] == want, t
        assert enc._long_first is not None and enc._long_first[0] is t


def test_horizons_from_the_kept_scan_are_sound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf_encoding, "_KEEP_SCAN", 0)
    enc = encoding("xlmr")
    rng = random.Random(3502)
    for _ in range(60):
        check(enc, _text(rng), rng)


def test_documents_with_kept_scans_equal_hf_under_edits(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(hf_encoding, "_KEEP_SCAN", 0)
    enc = encoding("xlmr")
    rng = random.Random(3503)
    text = "Intro line.\n" + "中文字符测试" * 80 + "\n" + "a" * 400 + "\nwords after it.\n"
    doc = Document(text, encoding=enc)
    for k in range(120):
        text = random_edit(rng, doc, text, rng.choice(ATOMS), most=3)
        if k % 10 == 0:
            assert doc.token_ids() == hf_ids("xlmr", text), text
    assert doc.token_ids() == hf_ids("xlmr", text)
    doc._check()
