"""XLM-R (Unigram) documents edited inside long lines equal a full HuggingFace encode after
every edit (issue 35): the paths of ``hf/precompiled.py`` (the spliced normalization, the
verified cuts inside emoji clusters), ``hf/unigram.py`` (a long pre-token's ids and counts
from ``tokenizers`` without offsets, unknown runs' widths) and ``hf/pipeline.py`` meet on
tie-prone text: runs of one letter (``aa a`` and ``a aa`` score the same), repeated CJK,
repeated patterns, emoji ZWJ lines, lines with unknown characters. Hypothesis draws the line
and the edits (seeded; ``LIVETOK_EXAMPLES`` sets the count)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental import Document
from livetok.incremental.hf.unigram import _reference_encode

from .._hf_encodings import encoding, hf_ids

pytest.importorskip("tokenizers")

UNITS = ["a", "ab", "aab", "中文", "中", "字符测试", "\u0378", "\u0378中", "\u0378\u0379a", "ACGT", "12",
         "\U0001F469\u200d\U0001F469\u200d\U0001F467", "\U0001F468\u200d\U0001F4BB",
         "e\u0301", "\u3000", "x\u200dy"]
INSERTS = ["a", "b", " ", "中", "文", "\u200d", "\U0001F469", "\u0378", "\u0301", "  ", "\n",
           "<mask>", "1"]


@st.composite
def _case(draw: st.DrawFn) -> tuple[str, list[tuple[float, int, str]]]:
    unit = "".join(draw(st.lists(st.sampled_from(UNITS), min_size=1, max_size=3)))
    line = unit * (300 // len(unit) + draw(st.integers(1, 600)) // len(unit) + 1)
    edits = draw(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 2),
                                    st.sampled_from(INSERTS)), min_size=1, max_size=8))
    return line, edits


@given(_case())
def test_edits_in_a_long_xlmr_line_equal_huggingface(
        case: tuple[str, list[tuple[float, int, str]]]) -> None:
    enc = encoding("xlmr")
    line, edits = case
    text = "Intro line.\n" + line + "\nand after it, words.\n"
    lo = text.index(line)
    doc = Document(text, enc)
    length = len(line)
    for where, kind, ins in edits:
        p = lo + min(length, int(where * length))
        if kind == 0 and length:  # delete one character
            p = min(p, lo + length - 1)
            doc.edit(p, p + 1, "")
            text = text[:p] + text[p + 1:]
            length -= 1
        elif kind == 1 and length:  # replace one character
            p = min(p, lo + length - 1)
            doc.edit(p, p + 1, ins)
            text = text[:p] + ins + text[p + 1:]
            length += len(ins) - 1
        else:
            doc.edit(p, p, ins)
            text = text[:p] + ins + text[p:]
            length += len(ins)
        assert doc.token_ids() == hf_ids("xlmr", text), (where, kind, ins)
    doc._check()
    # the counts of each long pre-token of the line (the reference's ids, widths from the
    # pieces and unknown runs) equal this module's Viterbi (ids equal to HF's do not show them)
    model = enc.model
    ref = model._reference()
    norm = enc.normalizer.normalize(text[lo:lo + length])
    for pt, _ in enc.pre_tokenizer.pre_tokenize(norm, first=False, text_start=False):
        if len(pt) > 256:
            assert _reference_encode(ref, pt, model) == model._encode(pt), pt[:40]
