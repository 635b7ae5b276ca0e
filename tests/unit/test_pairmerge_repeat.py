"""Runs of one symbol merged by repetition of their period (``pairmerge.merge_repeat``, issue
35: a line of one letter being typed into under Llama 3's tokenizer.json) give the heap's
result, on random pair tables and pieces holding long runs with other symbols in and around
them, at lengths around the thresholds; and typing into a long one-letter line of a Llama 3
document equals HuggingFace after every key."""

from __future__ import annotations

import random
from typing import Mapping

import pytest

from livetok.incremental import Document, pairmerge
from livetok.incremental.pairmerge import (RUN_PERIOD, RUN_REPEAT_FROM, merge, merge_heap,
                                           merge_repeat)

from .._edits import type_in_span
from .._hf_encodings import encoding, hf_ids, params
from ..conftest import EXAMPLES
from .test_pairmerge import _table


def _run_piece(rng: random.Random, ids: dict[str, int], alphabet: str) -> list[int]:
    """One or two long runs of a symbol, with a few other symbols inside and around."""
    parts: list[int] = []
    for _ in range(rng.choice([1, 1, 2])):
        c = rng.choice(alphabet)
        n = rng.choice([RUN_REPEAT_FROM - 1, RUN_REPEAT_FROM, RUN_REPEAT_FROM + 1,
                        4 * RUN_PERIOD + 7, rng.randrange(RUN_REPEAT_FROM, 30_000)])
        run = [ids[c]] * n
        for _ in range(rng.randrange(4)):
            p = rng.randrange(len(run) + 1)
            run[p:p] = [ids[rng.choice(alphabet)]] * rng.choice([1, 1, 2, 3, 17])
        parts += run
        if rng.random() < 0.5:
            parts += [ids[rng.choice(alphabet)] for _ in range(rng.randrange(1, 60))]
    if rng.random() < 0.3:
        parts[:0] = [ids[rng.choice(alphabet)] for _ in range(rng.randrange(1, 40))]
    return parts


@pytest.mark.parametrize("seed", range(6))
def test_repetition_equals_the_heap(seed: int) -> None:
    rng = random.Random(f"repeat-{seed}")
    alphabet = "abc"[: 2 + seed % 2]
    rules, m, ids = _table(rng, alphabet, 20 + 6 * seed)
    repeated = 0
    for _ in range(max(8, EXAMPLES // 2)):
        sym = _run_piece(rng, ids, alphabet)
        want = list(sym)
        merge_heap(want, None, rules, m)
        got = merge_repeat(sym, rules, m)
        assert got is None or got == want
        repeated += got is not None
        via = list(sym)
        merge(via, rules, m)
        assert via == want
    assert repeated > 0, "the repetition was never taken"


@pytest.mark.parametrize("name", params(["llama3"]))
def test_typing_in_a_one_letter_line_equals_hf(name: str, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    """Keys (the line's letter, another letter, a space, a delete) in a 12,000-letter line of
    a Llama 3 document: the ids equal HuggingFace's after each, and a window of the line was
    merged by repetition."""
    enc = encoding(name)
    rng = random.Random(35)
    head, tail = "A line of one letter:\n", "\nand after it.\n"
    n = 12_000
    text = head + "a" * n + tail
    doc = Document(text, enc)
    calls: list[bool] = []

    def spy(ids: list[int], rules: Mapping[int, int], m: int) -> list[int] | None:
        got = merge_repeat(ids, rules, m)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(pairmerge, "merge_repeat", spy)
    type_in_span(rng, doc, text, len(head), n, alphabet="a", other="bQ ",
                 n=max(10, EXAMPLES), reference=lambda t: hf_ids(name, t))
    doc._check()
    assert any(calls), "no window was merged by repetition"
