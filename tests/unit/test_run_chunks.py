"""Runs that grow from the left into inert chunks (``incremental/run_chunks.py``, issue 35):
the statement against Definition 3's obvious loop on random tables (a chain of ``a`` with
random other rules, ``a``'s shorter run tokens in rules with other letters too), the chain's
three conditions each needed, Gemma 3's runs of spaces against HuggingFace ``tokenizers``, and
an edit inside a long line of spaces merging a bounded number of symbols."""

from __future__ import annotations

import random

import pytest

from livetok.incremental import Document
from livetok.incremental.run_chunks import RunChunks

from ..conftest import EXAMPLES
from .._hf_encodings import encoding, hf_ids
from .test_pairmerge import _naive

_SEEDS = range(max(8, EXAMPLES))


def _chain_table(rng: random.Random, length: int, extra: int
                 ) -> tuple[dict[int, int], int, dict[str, int]]:
    """Rules over ``a``, ``b``, ``c``: ``a a`` at the lowest priority of the chain, ``a^j a``
    (``2 <= j < length``) each before it, plus ``extra`` random rules between existing tokens
    (``a``'s run tokens below ``length`` among them), priorities shuffled."""
    ids = {ch: i for i, ch in enumerate("abc")}
    pairs = [("a" * j, "a") for j in range(1, length)]
    for _ in range(extra * 4):
        if len(pairs) >= length - 1 + extra:
            break
        toks = [t for t in ids if t != "a" * length]
        x, y = rng.choice(toks), rng.choice(toks)
        if len(x + y) > 6 or (x, y) in pairs or set(x + y) == {"a"}:
            continue
        pairs.append((x, y))
    for x, y in pairs:
        ids.setdefault(x + y, len(ids))
    chain, other = pairs[:length - 1], pairs[length - 1:]
    prio = list(range(len(pairs)))
    rng.shuffle(prio)
    # (b): the chain's priorities ascend from a^(L-1) a to a a, other rules anywhere
    chain_prio = sorted(prio[:length - 1], reverse=True)
    m = len(ids)
    rules = {ids[x] * m + ids[y]: p * m + ids[x + y]
             for p, (x, y) in zip(chain_prio + prio[length - 1:], chain + other)}
    return rules, m, ids


def _text_of(rng: random.Random, r: int) -> str:
    return "a" * r + "".join(rng.choice("abc") for _ in range(rng.randrange(12)))


@pytest.mark.parametrize("seed", _SEEDS)
def test_the_statement_on_random_tables(seed: int) -> None:
    rng = random.Random(seed)
    length = rng.randrange(2, 9)
    rules, m, ids = _chain_table(rng, length, rng.randrange(4, 30))
    rc = RunChunks(rules, m, ids.get)
    got = rc.chain(ids["a"])
    tl = ids["a" * length]
    if any(k // m == tl for k in rules):  # (c) fails: a random rule joins T_L
        assert got is None
        return
    assert got == (length, tl)
    for r in [1, length, length + 1, 2 * length + 1, 64, 65, 100 + rng.randrange(40)]:
        s = _text_of(rng, r)
        whole = _naive([ids[ch] for ch in s], rules, m)
        r = len(s) - len(s.lstrip("a"))  # (the random rest may open with a)
        k = (r - 1) // length
        rest = _naive([ids[ch] for ch in s[k * length:]], rules, m)
        assert whole == [tl] * k + rest, (s, whole, rest)
        peel = rc.peel(s)
        if peel is not None:
            assert peel == (k, length, tl)


def test_each_condition_is_needed() -> None:
    # (b) fails: "a a" before "aa a": pairs first, then a run of "aa"
    ids = {"a": 0, "aa": 1, "aaa": 2}
    rules = {0 * 3 + 0: 0 * 3 + 1, 1 * 3 + 0: 1 * 3 + 2}
    assert RunChunks(rules, 3, ids.get).chain(0) is None
    assert _naive([0] * 7, rules, 3) == [1, 1, 2] != [2, 2, 0]
    # (c) fails: T_L = aa joins the b after it
    ids = {"a": 0, "b": 1, "aa": 2, "aab": 3}
    rules = {0 * 4 + 0: 1 * 4 + 2, 2 * 4 + 1: 0 * 4 + 3}
    assert RunChunks(rules, 4, ids.get).chain(0) is None
    assert _naive([0, 0, 0, 0, 0, 1], rules, 4) == [2, 2, 0, 1]
    assert _naive([0, 0, 0, 0, 1], rules, 4) == [2, 3]  # not aa followed by a a b's [2, 2, 1]
    # (a) fails: no a a
    assert RunChunks({}, 1, {"a": 0}.get).chain(0) is None


def test_gemma3_spaces_chain() -> None:
    model = encoding("gemma3").model
    v = model.token_to_id
    assert model._runs is not None and model._runs.chain(v["▁"]) == (31, v["▁" * 31])


@pytest.mark.parametrize("seed", range(4))
def test_gemma3_runs_of_spaces_equal_huggingface(seed: int) -> None:
    rng = random.Random(seed)
    enc = encoding("gemma3")
    for _ in range(12):
        r = rng.choice([62, 63, 64, 93, 94, 95, 31 * rng.randrange(3, 40) + rng.randrange(-2, 3),
                        rng.randrange(60, 3000)])
        before = rng.choice(["", "x", "a.", "\n", ">", "<", "é"])
        after = rng.choice(["", "x", "the", "\n", "</", "a b", " \t", "中文"])
        text = before + " " * r + after + rng.choice(["", " y " * 3])
        assert Document(text, enc).token_ids() == hf_ids("gemma3", text), (before, r, after)


def test_an_edit_in_a_long_line_of_spaces_merges_few_symbols(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """The work of an edit, counted in symbols given to the merge loop (no clock): without the
    chunks, each edit merged the line from the edit to its end (thousands of symbols)."""
    import livetok.incremental.hf.bpe as bpe

    enc = encoding("gemma3")
    line = " " * 20000
    text = "def f():\n    return 1\n" + line + "\nmore text\n"
    lo = text.index(line)
    doc = Document(text, enc)
    merged: list[int] = []
    real = bpe.merge

    def counting(ids: list[int], *args: object, **kw: object) -> None:
        merged.append(len(ids))
        real(ids, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(bpe, "merge", counting)
    rng = random.Random(5)
    for _ in range(6):
        merged.clear()
        p = lo + rng.randrange(1000, 19000)
        doc.edit(p, p + 1, "")
        assert sum(merged) < 2000, (sum(merged), len(merged))
        text = text[:p] + text[p + 1:]
    assert doc.token_ids() == hf_ids("gemma3", text)


def test_gemma3_cuts_skip_runs_of_spaces_exactly() -> None:
    from livetok.incremental.hf.cut_pairs import pair_cuts

    model = encoding("gemma3").model
    pairs = model.joinable_pairs()
    rng = random.Random(9)
    s = "".join(rng.choice(["▁" * rng.randrange(1, 200), "x", ">", "</", "a▁b", "中", "\n"])
                for _ in range(300))
    assert model._solid_classes()[1]["▁"].pattern == "[▁]+"
    assert model._run_cuts(s, pairs) == pair_cuts(s, 1, len(s), pairs)
