"""A long seeded fuzz of every tokenizer family (slow set, issue 27): a document of real text
with a short stretch of each hostile shape (runs of one letter, DNA, CJK, spaces, emoji ZWJ
sequences, digits, base64, minified JSON) takes ``LIVETOK_FUZZ_EDITS`` random edits (default
100,000; one-character inserts drawn from the shapes' alphabets and ASCII and one-character
deletions, 50/50, at uniform positions), and its ids equal the family's reference library's full
encode every 2,000 edits and at the end. The families and references are the worst-case
benchmark's (``benchmarks/bench_worstcase.py``: tiktoken on livetok's ranks, HuggingFace
``tokenizers`` on the test files, ``sentencepiece``, HF's BertWordPiece); a family whose data or
reference is missing here skips and says why.

    LIVETOK_SLOW=1 LIVETOK_FUZZ_EDITS=100000 .venv/bin/pytest tests/property/test_family_fuzz.py
"""

from __future__ import annotations

import importlib
import os
import random
import sys
from types import ModuleType
from typing import Any

import pytest

from livetok.incremental import Document

from .._edits import random_edit
from ..conftest import ROOT

EDITS = int(os.environ.get("LIVETOK_FUZZ_EDITS", "100000"))
#: ids are compared with the reference's after this many edits
CHECK_EVERY = 2_000
#: characters of each hostile stretch (short: the long-line costs are the benchmark's)
STRETCH = 400


def _bench() -> ModuleType:
    bench = str(ROOT / "benchmarks")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    return importlib.import_module("bench_worstcase")


def _names() -> list[str]:
    return [f.name for f in _bench().FAMILIES]


@pytest.mark.slow
@pytest.mark.parametrize("name", _names())
def test_random_edits_equal_the_reference(name: str) -> None:
    bw = _bench()
    family = next(f for f in bw.FAMILIES if f.name == name)
    try:
        enc, ref = bw.load_family(family)
    except LookupError as exc:
        pytest.skip(str(exc))
    from livetok.incremental.samples.corpora import real_text

    rng = random.Random(27)
    parts = [real_text(4_000)]
    alphabet = set("abcXYZ \n.,'1")
    for shape in bw.SHAPES:
        stretch = bw.hostile_stretch(shape, STRETCH * 4)[:STRETCH]
        alphabet |= set(stretch)
        parts += [stretch, "\n", real_text(600)]
    keys = sorted(alphabet)
    text = "".join(parts)
    doc: Any = Document(text, enc)
    for k in range(1, EDITS + 1):
        text = random_edit(rng, doc, text, rng.choice(keys))
        if k % CHECK_EVERY == 0 or k == EDITS:
            assert doc.token_ids() == ref.ids(ref.run(text)), (name, k)
