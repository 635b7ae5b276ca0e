"""The BPE engine over a pair-rule table (``incremental/pairmerge.py``): its four loops give
the obvious loop's result (Definition 3: the lowest rule among adjacent pairs, leftmost, once,
then look again) on random tables whose tokens spell their text (the engine's condition),
including several rules making one token (gpt-oss's shape), long runs of one symbol and long
pieces glued by chunks."""

from __future__ import annotations

import random

import pytest

from livetok.incremental.pairmerge import (NO_RULE, merge, merge_glued, merge_heap, merge_runs,
                                           merge_scan)

from ..conftest import EXAMPLES


def _table(rng: random.Random, alphabet: str, n_rules: int) -> tuple[dict[int, int], int,
                                                                     dict[str, int]]:
    """Random rules over ``alphabet``: pairs of existing tokens whose concatenation becomes a
    token (made by one or more rules), priorities shuffled."""
    ids = {c: i for i, c in enumerate(alphabet)}
    pairs: list[tuple[str, str]] = []
    for _ in range(n_rules * 4):
        if len(pairs) >= n_rules:
            break
        toks = list(ids)
        a, b = rng.choice(toks), rng.choice(toks)
        if len(a + b) > 8 or (a, b) in pairs:
            continue
        ids.setdefault(a + b, len(ids))
        pairs.append((a, b))
    for c in alphabet:  # runs: c c, cc cc, cccc cccc in every table
        for k in (1, 2, 4):
            a = c * k
            if a in ids and (a, a) not in pairs:
                ids.setdefault(a + a, len(ids))
                pairs.append((a, a))
    rng.shuffle(pairs)
    m = len(ids)
    rules = {ids[a] * m + ids[b]: prio * m + ids[a + b] for prio, (a, b) in enumerate(pairs)}
    return rules, m, ids


def _naive(sym: list[int], rules: dict[int, int], m: int) -> list[int]:
    sym = list(sym)
    while len(sym) > 1:
        vals = [rules.get(a * m + b, NO_RULE) for a, b in zip(sym, sym[1:])]
        best = min(vals)
        if best == NO_RULE:
            break
        k = vals.index(best)
        sym[k:k + 2] = [best % m]
    return sym


def _text(rng: random.Random, alphabet: str, n: int) -> str:
    out = []
    while sum(map(len, out)) < n:
        c = rng.choice(alphabet)
        out.append(c * rng.choice([1, 1, 2, 3, 7, 20, 64]))
    return "".join(out)[:n]


@pytest.mark.parametrize("seed", range(8))
def test_loops_equal_the_obvious_loop(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = "abcd"[: 2 + seed % 3]
    rules, m, ids = _table(rng, alphabet, 12 + seed * 4)
    glued_done = 0
    for _ in range(max(30, EXAMPLES)):
        text = _text(rng, alphabet, rng.randint(0, 300))
        sym = [ids[c] for c in text]
        want = _naive(sym, rules, m)
        for loop in (merge_scan, merge_heap):
            got = list(sym)
            loop(got, None, rules, m)
            assert got == want, (loop.__name__, text)
        got = list(sym)
        assert merge_runs(got, rules, m)
        assert got == want, ("runs", text)
        got = list(sym)
        merge(got, rules, m)
        assert got == want, ("merge", text)
        glued = merge_glued(sym, rules, m, size=16, cap=8)
        assert glued is None or [t for _, _, t in glued] == want, ("glued", text)
        glued_done += glued is not None
    assert glued_done > 0  # the seams agreed on some texts: the glued loop was compared


def test_lengths_follow_the_merges() -> None:
    rng = random.Random(3)
    rules, m, ids = _table(rng, "abc", 30)
    names = {i: s for s, i in ids.items()}
    for _ in range(50):
        text = _text(rng, "abc", rng.randint(1, 120))
        for loop in ("scan", "heap", "merge", "runs"):
            sym = [ids[c] for c in text]
            lens = [1] * len(sym)
            if loop == "runs":
                assert merge_runs(sym, rules, m, 0, lens)
            elif loop == "merge":
                merge(sym, rules, m, lens)
            else:
                (merge_scan if loop == "scan" else merge_heap)(sym, lens, rules, m)
            assert [len(names[i]) for i in sym] == lens, loop
            assert "".join(names[i] for i in sym) == text


@pytest.mark.parametrize("n", [5_000, 20_000])
def test_long_runs_and_pieces(n: int) -> None:
    """A run of one symbol (bulk steps), one with a few other symbols in it, and a long mixed
    piece (glued by chunks): the heap's result."""
    rng = random.Random(n)
    rules, m, ids = _table(rng, "ab", 40)
    run = [ids["a"]] * n
    mixed = list(run)
    for _ in range(5):
        mixed[rng.randrange(n)] = ids["b"]
    piece = [ids[c] for c in _text(rng, "ab", n)]
    names = {i: s for s, i in ids.items()}
    for sym in (run, mixed, piece):
        want = list(sym)
        merge_heap(want, None, rules, m)
        got = list(sym)
        lens = [1] * n
        merge(got, rules, m, lens)
        assert got == want
        assert lens == [len(names[i]) for i in got]
        glued = merge_glued(sym, rules, m)
        assert glued is None or [t for _, _, t in glued] == want
    # a bound too small to finish says so (the caller then takes another loop): two bulk
    # steps leave aaaa aaaa pairs, which every table joins
    assert merge_runs(list(run), rules, m, max_steps=2) is False
