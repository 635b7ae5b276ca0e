"""``glue`` (Algorithm 1 of *Formalizing BPE Tokenization*, widening by doubling) and
``glue_one_step`` (the paper's one-token widening) against the naive merge loop, used the way
each caller uses them: both sides of an edit (``Document._glue_piece``), one side per cut of a
range (``count_range``), a seam between chunks with a cap and a give-up (``bpe._glued_split``),
and the widening measurement (``analysis.widening``). Vocabularies over ``abc`` with ranks in
any order, so that windows must widen often."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental.bytelevel._reference import bpe_encode_naive
from livetok.incremental.glue import glue, glue_one_step

_EXAMPLES = 4 * settings().max_examples  # cheap examples


@st.composite
def _vocab(draw: st.DrawFn) -> dict[bytes, int]:
    tokens = {b"a", b"b", b"c"} | set(draw(st.lists(
        st.text("abc", min_size=2, max_size=5).map(str.encode), min_size=4, max_size=40)))
    order = draw(st.permutations(sorted(tokens)))
    return {t: r for r, t in enumerate(order)}


_text = st.text("abc", min_size=0, max_size=60).map(str.encode)
#: what an edit inserts: a few characters, as typing does (more windows must widen)
_typed = st.text("abc", min_size=0, max_size=3).map(str.encode)


def _spans(data: bytes, ranks: dict[bytes, int]) -> list[tuple[int, int, int]]:
    """``(start, end, id)`` of the naive merge loop's tokens of ``data``."""
    ids = bpe_encode_naive(data, ranks)
    inv = {r: t for t, r in ranks.items()}
    ends = list(itertools.accumulate(len(inv[i]) for i in ids))
    return [(e - len(inv[i]), e, i) for i, e in zip(ids, ends)]


def _ids(data: bytes, ranks: dict[bytes, int]):  # type: ignore[no-untyped-def]
    return lambda ws, we: bpe_encode_naive(data[ws:we], ranks)


def _keep(candidates: list, mask: list[bool]) -> list:  # type: ignore[type-arg]
    """Some candidates only, in order (the document offers only tokens on character
    boundaries)."""
    return [c for c, m in zip(candidates, itertools.cycle(mask or [True])) if m]


@settings(max_examples=_EXAMPLES)
@given(ranks=_vocab(), old=_text.filter(lambda t: len(t) >= 8), data=st.data(),
       mask=st.lists(st.booleans(), max_size=5))
def test_glue_an_edit_on_both_sides(ranks, old, data, mask):
    """Document's way: the old tokens left and right of an edit are glued to a window, and the
    result is the merge loop's tokenization of the new text; the paper's one-step form gives
    the same tokens."""
    start = data.draw(st.integers(0, len(old)))
    end = data.draw(st.integers(start, len(old)))
    new_text = data.draw(_typed)
    new = old[:start] + new_text + old[end:]
    delta = len(new_text) - (end - start)
    toks = _spans(old, ranks)
    left = [(k, s, i) for k, (s, e, i) in enumerate(toks) if e <= start][::-1]
    right = [(k, e + delta, i) for k, (s, e, i) in enumerate(toks) if s >= end]
    old_ids = [i for _, _, i in toks]
    want = bpe_encode_naive(new, ranks)
    encode = _ids(new, ranks)
    for g in (glue(encode, iter(_keep(left, mask)), iter(_keep(right, mask)), 0, len(new)),
              glue_one_step(encode, left, right, 0, len(new))):
        assert g is not None
        got = old_ids[: g.left or 0] + list(g.tokens)
        if g.right is not None:
            got += old_ids[g.right + 1 :]
        assert got == want, (old, start, end, new_text, g)
        assert g.left is None or toks[g.left][0] == g.start
        assert g.right is None or toks[g.right][1] + delta == g.end


@settings(max_examples=_EXAMPLES)
@given(ranks=_vocab(), text=_text, data=st.data())
def test_glue_one_side_per_cut_of_a_range(ranks, text, data):
    """count_range's way: a cut at ``e`` keeps the old tokens before the window (the right
    edge is the cut), a cut at ``s`` keeps those after it (the left edge is the cut)."""
    s = data.draw(st.integers(0, len(text)))
    e = data.draw(st.integers(s, len(text)))
    toks = _spans(text, ranks)
    ids = [i for _, _, i in toks]
    left = [(k, a, i) for k, (a, b, i) in enumerate(toks) if b <= e][::-1]
    g = glue(_ids(text, ranks), iter(left), iter(()), 0, e)
    assert g is not None and g.right is None and g.end == e
    assert ids[: g.left or 0] + list(g.tokens) == bpe_encode_naive(text[:e], ranks)
    right = [(k, b, i) for k, (a, b, i) in enumerate(toks) if a >= s]
    g = glue(_ids(text, ranks), iter(()), iter(right), s, len(text))
    assert g is not None and g.left is None and g.start == s
    got = list(g.tokens) + (ids[g.right + 1 :] if g.right is not None else [])
    assert got == bpe_encode_naive(text[s:], ranks)


@settings(max_examples=_EXAMPLES)
@given(ranks=_vocab(), head=_text, chunk=_text.filter(bool), final=st.booleans(),
       cap=st.sampled_from([1, 2, 4, None]))
def test_glue_a_seam_with_a_cap_may_give_up(ranks, head, chunk, final, cap):
    """bpe._glued_split's way: parts compared as spans; a window may not pass the chunk's end
    unless it is the text's end (``hi_final``), and a side may take at most ``cap`` parts. The
    result is the merge loop's or None, and None only where the cap or the seam said so."""
    text = head + chunk
    out = [(a, b) for a, b, _ in _spans(head, ranks)]
    right = [(a + len(head), b + len(head)) for a, b, _ in _spans(chunk, ranks)]

    def encode(ws: int, we: int) -> list[tuple[int, int]]:
        return [(a + ws, b + ws) for a, b, _ in _spans(text[ws:we], ranks)]

    g = glue(encode, ((k, out[k][0], out[k]) for k in range(len(out) - 1, -1, -1)),
             ((k, sp[1], sp) for k, sp in enumerate(right)), 0, len(text),
             hi_final=final, cap=cap)
    want = [(a, b) for a, b, _ in _spans(text, ranks)]
    if g is None:
        assert not final or cap is not None
        # the uncapped glue to the text's end always halts, with the merge loop's parts
        g = glue(encode, iter([(k, out[k][0], out[k]) for k in range(len(out) - 1, -1, -1)]),
                 iter([(k, sp[1], sp) for k, sp in enumerate(right)]), 0, len(text))
        assert g is not None
    got = out[: g.left or 0] + list(g.tokens)
    got += right[g.right + 1 :] if g.right is not None else []
    assert got == want


def test_glue_widens_by_doubling_and_one_step_by_one():
    """Where an edit shifts every part to the end (``"a"`` put before a run of ``"aa"``
    parts), the paper's form re-encodes one more old token per step and the doubling form
    reaches the end in ``log2`` as many windows; both give the merge loop's tokens."""
    ranks = {b"a": 0, b"aa": 1}
    old = b"a" * 32  # aa|aa|...|aa
    new = b"a" + old  # aa|aa|...|aa|a: every old part is cut differently
    toks = _spans(old, ranks)
    right = [(k, e + 1, i) for k, (s, e, i) in enumerate(toks)]
    g1 = glue_one_step(_ids(new, ranks), [], right, 0, len(new))
    g2 = glue(_ids(new, ranks), iter(()), iter(right), 0, len(new))
    assert g2 is not None
    for g in (g1, g2):
        # the window ends with the last old part, at the text's end (the paper's j = m)
        assert list(g.tokens) == bpe_encode_naive(new, ranks) and g.right == len(toks) - 1
    assert g1.widenings == len(toks) - 1 == 15 and g2.widenings == 4  # windows of 1, 2, 4, 8, 16
