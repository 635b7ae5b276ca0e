"""Typing into long lines of digits (issue 35): every key shifts each later three-digit group,
so the document re-splits the rest of the line (the windows' pieces kept from round to round)
and encodes the changed groups in bulk (``Document._bulk_segment``); the ids after every key
equal tiktoken's, for ASCII digits (one token a group) and for digits of other scripts mixed
in (several tokens a group: the per-piece flags)."""

from __future__ import annotations

import random

import pytest

from livetok.incremental import get_encoding
from livetok.incremental.document import Document

from .._edits import type_in_span
from .._refs import BPE_NAMES, tiktoken_ref
from ..conftest import EXAMPLES

#: digits of other scripts (Arabic-Indic, Devanagari, full-width): several tokens a group
_WIDE_DIGITS = "\u0663\u0667\u096a\uff13\uff18"


def _digit_line(rng: random.Random, n: int, wide: bool) -> str:
    digits = "0123456789" + (_WIDE_DIGITS if wide else "")
    line = rng.choices(digits, k=n)
    for _ in range(rng.randrange(3)):  # a few foreign characters inside
        line[rng.randrange(n)] = rng.choice("a ,.")
    return "".join(line)


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("name", BPE_NAMES)
def test_typing_in_a_digit_line_equals_tiktoken(name: str, wide: bool) -> None:
    """Random keys (digits of the line's kind, letters, spaces, punctuation, line breaks, or a
    delete) anywhere in a long digit line inside prose: ids equal tiktoken's after each key;
    under the patterns that cut digits in groups, the bulk path ran."""
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    rng = random.Random(f"digits-{name}-{wide}")
    doc = None
    bulk = 0
    for _ in range(3):
        n = rng.choice([300, 2_000, 9_000, 30_000])
        line = _digit_line(rng, n, wide)
        head, tail = "Totals for the year:\n", "\nend of the table.\n"
        text = head + line + tail
        doc = Document(text, enc)
        alphabet = "0123456789" + (_WIDE_DIGITS if wide else "")
        text = type_in_span(rng, doc, text, len(head), n, alphabet=alphabet, other="a ,\n",
                            n=EXAMPLES, reference=ref.encode_ordinary)
        doc._check()
        assert doc.text == text
        bulk += doc.stats.bulk_pieces
    if name != "r50k_base":  # r50k's digit run is one piece (glued, not re-split in groups)
        assert bulk > 0, "the bulk path was not taken"
