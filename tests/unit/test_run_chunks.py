"""Long runs cut into chunks (``incremental/run_chunks.py``, issue 35): the result equals the
obvious loop (Definition 3) on random tables with runs and random text after them, the
statement's two conditions are checked (a table where they fail gets no chunk), Gemma 3's and
Llama 2's runs equal HuggingFace ``tokenizers``, and an edit inside a long line of spaces
merges a bounded number of symbols."""

from __future__ import annotations

import random

import pytest

from livetok.incremental import Document
from livetok.incremental.run_chunks import RunChunks

from ..conftest import EXAMPLES
from .._hf_encodings import encoding, hf_ids
from .test_pairmerge import _naive, _table

_SEEDS = range(max(8, EXAMPLES))


def _merged_by(rules: dict[int, int], m: int, ids: dict[str, int], toks: list[str]):  # type: ignore[no-untyped-def]
    def merged(s: str, lens: list[int] | None) -> list[int]:
        out = _naive([ids[ch] for ch in s], rules, m)
        if lens is not None:
            lens += [len(toks[i]) for i in out]
        return out
    return merged


def _growth_table(rng: random.Random, size: int) -> tuple[dict[int, int], int, dict[str, int]]:
    """Gemma 3's shape for ``a``: ``a a`` last, ``a^j a`` before it up to ``a^size``, plus
    random rules between ``a``'s shorter runs and ``b``, ``c``."""
    ids = {ch: i for i, ch in enumerate("abc")}
    pairs = [("a" * j, "a") for j in range(1, size)]
    for _ in range(40):
        x = rng.choice(["a" * j for j in range(1, size)] + ["b", "c", "bc", "ab"])
        y = rng.choice(["a", "b", "c", "ca"])
        if (x, y) not in pairs and set(x + y) != {"a"} and len(x + y) <= 8:
            pairs.append((x, y))
    for x, y in pairs:
        ids.setdefault(x, len(ids))
        ids.setdefault(y, len(ids))
        ids.setdefault(x + y, len(ids))
    chain, other = pairs[:size - 1], pairs[size - 1:]
    prio = list(range(len(pairs)))
    rng.shuffle(prio)
    m = len(ids)
    rules = {ids[x] * m + ids[y]: p * m + ids[x + y]
             for p, (x, y) in zip(sorted(prio[:size - 1], reverse=True) + prio[size - 1:],
                                  chain + other)}
    return rules, m, ids


@pytest.mark.parametrize("seed", _SEEDS)
def test_equals_the_obvious_loop_on_random_tables(seed: int) -> None:
    rng = random.Random(seed)
    if seed % 2:
        rules, m, ids = _growth_table(rng, rng.randrange(2, 12))
    else:
        rules, m, ids = _table(rng, "abcd"[: 2 + seed % 3], 12 + seed)
    toks = sorted(ids, key=ids.__getitem__)
    merged = _merged_by(rules, m, ids, toks)
    rc = RunChunks(merged)
    alphabet = "".join(t for t in toks if len(t) == 1)
    cut = 0
    for _ in range(20):
        ch = rng.choice(alphabet)
        r = rng.choice([64, 65, 100, rng.randrange(60, 400)])
        head = "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 0, 1, 2, 5])))
        s = head + ch * r + "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        if rng.random() < 0.5:  # more runs after it (letters typed into a line)
            for _ in range(rng.randrange(1, 4)):
                s += rng.choice(alphabet) * rng.randrange(1, 3) + rng.choice(alphabet) * rng.randrange(40, 200)
        lens: list[int] = []
        got = rc.encode(s, lens)
        if got is not None:
            cut += 1
            assert got == merged(s, None), s
            assert lens == [len(toks[i]) for i in got]
        size_t = rc.chunk(ch)
        if size_t is not None:
            size, t = size_t
            assert merged(ch * size, None) == [t] and merged(ch * 2 * size, None) == [t, t]
    assert cut or seed % 2 == 0  # (a growth table always has a's chunk)


def test_the_tail_holds_what_the_run_ends_in() -> None:
    # a a first, then aa a: a run is aa ... aa, and aaa where it is odd
    ids = {"a": 0, "aa": 1, "aaa": 2}
    rules = {0 * 3 + 0: 0 * 3 + 1, 1 * 3 + 0: 1 * 3 + 2}
    rc = RunChunks(_merged_by(rules, 3, ids, ["a", "aa", "aaa"]))
    assert rc.chunk("a") == (2, 1)
    lens: list[int] = []
    assert rc.encode("a" * 65, lens) == _naive([0] * 65, rules, 3) == [1] * 31 + [2]
    assert lens == [2] * 31 + [3] and rc.misses == 0
    # a run after a head: b a^66 = b aa ... aa (b joins nothing)
    ids["b"] = 3
    rules = {0 * 4 + 0: 0 * 4 + 1, 1 * 4 + 0: 1 * 4 + 2}
    rc = RunChunks(_merged_by(rules, 4, ids, ["a", "aa", "aaa", "b"]))
    lens = []
    assert rc.encode("b" + "a" * 66, lens) == [3] + [1] * 33 and lens == [1] + [2] * 33


@pytest.mark.parametrize("name,ch,size", [("gemma3", "▁", 31), ("gemma3", "a", 8),
                                          ("llama2", "a", 8)])
def test_real_chunks(name: str, ch: str, size: int) -> None:
    model = encoding(name).model
    assert model._runs is not None
    got = model._runs.chunk(ch)
    assert got == (size, model.token_to_id[ch * size]), got


@pytest.mark.parametrize("name", ["gemma3", "llama2"])
@pytest.mark.parametrize("seed", range(3))
def test_runs_equal_huggingface(name: str, seed: int) -> None:
    rng = random.Random(seed)
    enc = encoding(name)
    for _ in range(12):
        ch = rng.choice([" ", "a", "\n", "="])
        r = rng.choice([62, 63, 64, 93, 94, 95, 31 * rng.randrange(3, 40) + rng.randrange(-2, 3),
                        8 * rng.randrange(8, 40) + rng.randrange(-2, 3), rng.randrange(60, 3000)])
        before = rng.choice(["", "x", "a.", "\n", ">", "<", "é", " "])
        after = rng.choice(["", "x", "n", "the", "\n", "</", "a b", " \t", "中文", "aan", "s"])
        text = before + ch * r + after + rng.choice(["", " y " * 3])
        assert Document(text, enc).token_ids() == hf_ids(name, text), (before, ch, r, after)
        s = rng.choice(["N", "ab", "\u2581", "x\u2581"]) + ch * r + "y" + ch * rng.randrange(300)
        text = s.replace("\u2581", " ")
        assert Document(text, enc).token_ids() == hf_ids(name, text), (s[:5], r)
        got = enc.model._runs.encode(s, None)
        assert got is None or got == enc.model._merged(s, None), (s[:5], r)


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


@pytest.mark.parametrize("seed", range(3))
def test_mistral_runs_equal_sentencepiece(seed: int) -> None:
    spm = pytest.importorskip("sentencepiece")
    from livetok.incremental.sentencepiece.encoding import find_mistral_v1, load_mistral_v1

    if find_mistral_v1() is None:
        pytest.skip("pip install --no-deps mistral-common")
    enc = load_mistral_v1()
    sp = spm.SentencePieceProcessor(model_file=str(find_mistral_v1()))
    enc.encode_piece("x" * 100)  # a long string compiles the table
    table = enc._pair_table
    assert table is not None
    assert table._runs.chunk("\u2581") == (16, enc._piece_ids["\u2581" * 16])
    rng = random.Random(seed)
    for _ in range(12):
        ch = rng.choice([" ", "a", "=", "\n"])
        r = rng.choice([63, 64, 65, 16 * rng.randrange(4, 60) + rng.randrange(-2, 3),
                        rng.randrange(60, 3000)])
        text = rng.choice(["", "x", "\n", "é"]) + ch * r + rng.choice(["", "x", "n", "ab", "\t"])
        assert enc.encode(text) == sp.encode(text), (ch, r)


@pytest.mark.parametrize("seed", range(3))
def test_sentencepiece_pair_test_skips_runs_exactly(seed: int) -> None:
    """``_unpaired`` skipping the inside of long runs yields the plain pair test's cuts."""
    from livetok.incremental.sentencepiece.encoding import find_mistral_v1, load_mistral_v1

    if find_mistral_v1() is None:
        pytest.skip("pip install --no-deps mistral-common")
    enc = load_mistral_v1()
    rng = random.Random(seed)
    for _ in range(20):
        text = "".join(rng.choice("ab \u2581x中.") * rng.choice([1, 5, 63, 64, 65, 3000, 9000])
                       + "".join(rng.choice("ab c.\n") for _ in range(rng.randrange(5)))
                       for _ in range(rng.randrange(1, 8)))
        lo, hi = rng.randrange(3), len(text) - rng.randrange(3)
        if hi - lo >= 2:
            assert list(enc._unpaired(text, lo, hi)) == list(enc._pair_test(text, lo, hi))
