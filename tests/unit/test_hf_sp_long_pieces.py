"""Long pieces of the SentencePiece-style ``tokenizer.json`` files (Llama 2, Gemma 3) in a
document (issue 35, item 2): Algorithm 1 inside them, also where segment starts matter.

* Llama 2's digits: its ``<0x00>`` .. ``<0xFF>`` tokens hold every pair of digits, but no
  merge makes them, so a line of digits is cut at every digit (``formable_pairs``);
* Llama 2 (``Prepend("▁")``: segment starts matter) glues long pieces and stretches them
  (``QuietEncoding``), except a piece that opens with an added token: a window starting right
  after ``<s>`` would miss the segment start's ``▁`` (``glue_ok``);
* after every edit the ids equal HuggingFace's encode of the whole text.
"""

from __future__ import annotations

import random

import pytest

from livetok.incremental import Document

from .._edits import type_in_span
from .._hf_encodings import encoding, hf_ids


def _edits(name: str, text: str, lo: int, length: int, alphabet: str, n: int, seed: int
           ) -> Document:
    enc = encoding(name)
    rng = random.Random(seed)
    doc = Document(text, enc)
    type_in_span(rng, doc, text, lo, length, alphabet=alphabet, other="abXY ", n=n,
                 reference=lambda t: hf_ids(name, t))
    return doc


def test_llama2_cuts_a_line_of_digits_at_every_digit() -> None:
    enc = encoding("llama2")
    digits = "".join(random.Random(3).choices("0123456789", k=500))
    spans = list(enc.split("x\n" + digits + "\ny", 0))
    assert max(e - s for s, e in spans) <= 3, spans[:5]
    _edits("llama2", "x\n" + digits + "\ny", 2, len(digits), "0123456789", 30, seed=1)


@pytest.mark.parametrize("name,line,alphabet", [
    ("llama2", "a" * 600, "a"), ("llama2", " " * 400, " "), ("gemma3", "a" * 600, "a"),
    ("gemma3", " " * 400, " "),
])
def test_long_pieces_are_glued_and_stretched(name: str, line: str, alphabet: str) -> None:
    text = "def f():\n    return 1\n" + line + "\nmore text\n"
    doc = _edits(name, text, text.index(line), len(line), alphabet, 40, seed=len(line))
    assert doc.stats.glued_pieces >= 20 and doc.stats.stretched >= 3, doc.stats


@pytest.mark.parametrize("seed", range(3))
def test_llama2_a_piece_opening_with_an_added_token_is_not_glued(seed: int) -> None:
    enc = encoding("llama2")
    line = "a" * 200
    text = "x <s>" + line + " y"
    assert not enc.glue_ok("<s>" + line[:45]) and enc.glue_ok(line[:48])
    # edits right after the token, where a window could start
    doc = _edits("llama2", text, 5, 6, "a", 25, seed=seed)
    assert doc.token_ids() == hf_ids("llama2", doc.text)
