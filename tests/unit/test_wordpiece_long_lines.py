"""Long WordPiece lines that are one piece (issue 35, item 2: BERT's emoji line, 684 ms an edit
at 100,000 characters, and its line of spaces): an edit inside reads the line by C calls (the
quiet and only-space runs of ``WordPieceEncoding._next_cut``, ``_long_quiet``), never
character by character nor through the aligned normalizer; ids equal HF's after each edit.
Counted as work (calls), not time."""

from __future__ import annotations

import random
from typing import Any

import pytest

from livetok.incremental import Document, get_encoding

from .test_wordpiece_bert import hf_bert, hf_ids

ZWJ = ("\U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
       "\U0001F468\u200d\U0001F4BB", "\U0001F3F3\ufe0f\u200d\U0001F308")


def _count_calls(monkeypatch: pytest.MonkeyPatch, enc: Any) -> dict[str, int]:
    calls = {"flags": 0, "aligned": 0}
    flags = enc._flags
    norm = enc.normalizer

    def counted_flags(ch: str) -> int:
        calls["flags"] += 1
        return flags(ch)

    monkeypatch.setattr(enc, "_flags", counted_flags)
    if norm is not None:
        aligned = norm.normalize_aligned

        def counted_aligned(text: str) -> Any:
            calls["aligned"] += 1
            return aligned(text)

        monkeypatch.setattr(norm, "normalize_aligned", counted_aligned)
    return calls


@pytest.mark.parametrize("shape", ["emoji", "spaces"])
def test_an_edit_in_a_long_one_piece_line_reads_it_in_c(monkeypatch: pytest.MonkeyPatch,
                                                         shape: str) -> None:
    enc = get_encoding("bert-base-uncased")
    tok = hf_bert()
    rng = random.Random(35)
    line = ("".join(rng.choice(ZWJ) for _ in range(4_000)) if shape == "emoji"
            else " " * 20_000)
    text = "Some words before.\n" + line + "\nAnd after.\n"
    doc = Document(text, encoding=enc)
    doc.edit(30, 31, "")  # a first edit inside the line teaches the quiet characters
    text = text[:30] + text[31:]
    calls = _count_calls(monkeypatch, enc)
    for _ in range(5):
        at = rng.randrange(25, 25 + len(line) - 100)
        ins = rng.choice(ZWJ) if shape == "emoji" else " "
        doc.edit(at, at, ins)
        text = text[:at] + ins + text[at:]
    assert calls["flags"] < 200 and calls["aligned"] == 0, calls
    assert doc.token_ids() == hf_ids(tok, text)


def test_quiet_runs_under_random_edits_equal_hf() -> None:
    """Edits that mix quiet characters (emoji, ZWJ, letters, a combining accent) with breaks
    (spaces, punctuation, CJK) around the 100-character word limit: ids equal HF's."""
    from .._edits import random_edit

    enc = get_encoding("bert-base-uncased")
    tok = hf_bert()
    rng = random.Random(36)
    text = "Start " + "".join(rng.choice(ZWJ) for _ in range(40)) + " mid " + " " * 150 + "end."
    doc = Document(text, encoding=enc)
    keys = ["\U0001F469", "\u200d", "a", "é", "\u0301", " ", "\t", ",", "中", "[SEP]",
            "\U0001F308", "\ufe0f", "x" * 30]
    for _ in range(300):
        text = random_edit(rng, doc, text, rng.choice(keys))
        assert doc.token_ids() == hf_ids(tok, text), text
    doc._check()
