"""The chunk index of :mod:`livetok.incremental.tokenseq` against plain sums."""

from __future__ import annotations

import bisect
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental.blocksums import BlockSums
from livetok.incremental.tokenseq import (
    CLEAN,
    PIECE_START,
    PLACEHOLDER,
    POS_SHIFT,
    SeqView,
    TokenSeq,
    _POS_MASK,
)

from ..conftest import SLOW


def naive_find(sizes: list[int], x: int) -> tuple[int, int]:
    total = 0
    for i, s in enumerate(sizes):
        if total + s > x:
            return i, total
        total += s
    return len(sizes), total


ops = st.lists(st.tuples(st.sampled_from(["add", "splice"]), st.integers(0, 10**6),
                         st.integers(-50, 50), st.lists(st.integers(0, 9), max_size=150)),
               max_size=30)


class _SmallSums(BlockSums):
    """Tiny blocks and superblocks, so that short lists cross every level's edges."""

    __slots__ = ()
    BLOCK = 4
    SUPER = 3


@pytest.mark.parametrize("cls", [BlockSums, _SmallSums])
@given(sizes=st.lists(st.integers(0, 9), max_size=300), ops=ops,
       queries=st.lists(st.integers(0, 3000), max_size=20))
def test_prefix_and_find_match_plain_sums(cls, sizes, ops, queries) -> None:
    """Zero sizes (empty chunks), block and superblock edges, splices that change the number
    of chunks, and offsets past the end."""
    p = cls(sizes)
    ref = list(sizes)
    for op, i, delta, new in ops:
        if op == "add" and ref:
            i %= len(ref)
            delta = max(delta, -ref[i])
            ref[i] += delta
            p.add(i, delta)
        elif op == "splice":
            a = i % (len(ref) + 1)
            b = min(len(ref), a + delta % 5)
            ref[a:b] = new
            p.splice(a, b, new)
        assert list(p.sizes) == ref
        for k in range(len(ref) + 1):
            assert p.prefix(k) == sum(ref[:k])
        for x in queries:
            assert p.find(x) == naive_find(ref, x), (x, ref)


@pytest.mark.parametrize("cls", [BlockSums, _SmallSums])
@given(pairs=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 600)), max_size=300),
       ops=st.lists(st.tuples(st.integers(0, 10**6), st.integers(-9, 9), st.integers(-600, 600)),
                    max_size=20),
       queries=st.lists(st.integers(0, 3000), max_size=20))
def test_packed_index_finds_code_points_and_tokens(cls, pairs, ops, queries) -> None:
    """TokenSeq's chunk index packs ``cp << POS_SHIFT | tokens`` per chunk; a search by code
    point must give the chunk, its code points and its tokens before it, also after packed
    deltas with negative token parts (zero-size chunks, chunks of 0 code points included)."""
    p = cls([c << POS_SHIFT | t for c, t in pairs])
    ref = [list(x) for x in pairs]
    for i, dcp, dlen in ops:
        if ref:
            i %= len(ref)
            dcp, dlen = max(dcp, -ref[i][0]), max(dlen, -ref[i][1])
            ref[i][0] += dcp
            ref[i][1] += dlen
            p.add(i, (dcp << POS_SHIFT) + dlen)
        for x in queries:
            i, v = p.find(x << POS_SHIFT | _POS_MASK)
            want_i, want_cp = naive_find([c for c, _ in ref], x)
            assert i == want_i
            assert v >> POS_SHIFT == want_cp
            assert v & _POS_MASK == sum(t for _, t in ref[:i])


def _random_seq(rng: random.Random, n: int, load: int) -> TokenSeq:
    """Tokens of 0-4 code points (a 0 is the tail of a split character), piece starts,
    placeholders (whole pieces), as :class:`~livetok.incremental.document.Document` makes
    them; then a few replacements so that chunks differ in size."""
    seq = TokenSeq(load=load)

    def tokens(k: int) -> tuple[list[int], list[int], bytearray, str]:
        ids, cps, flags = [], [], bytearray()
        for i in range(k):
            r = rng.random()
            if r < 0.05:
                ids.append(0), cps.append(rng.randint(1, 3)), flags.append(PIECE_START | CLEAN | PLACEHOLDER)
            elif r < 0.4:
                ids.append(i), cps.append(rng.randint(1, 4)), flags.append(PIECE_START | CLEAN)
            elif r < 0.5 and i:
                ids.append(i), cps.append(0), flags.append(0)
            else:
                ids.append(i), cps.append(rng.randint(1, 4)), flags.append(CLEAN)
        if flags and not flags[0] & PIECE_START:
            flags[0] = PIECE_START | CLEAN
            cps[0] = cps[0] or 1
        text = "".join(chr(97 + (i % 26)) * w for i, w in enumerate(cps))
        return ids, cps, flags, text

    seq.replace(0, 0, *tokens(n))
    for _ in range(20):
        t0 = rng.randrange(seq.total_tokens + 1)
        t1 = min(seq.total_tokens, t0 + rng.randint(0, 30))
        # keep whole pieces: move both ends to piece starts
        t0 = seq.prev_piece_start(t0) if t0 < seq.total_tokens else t0
        t1 = seq.prev_piece_start(t1) if t1 < seq.total_tokens else t1
        if t1 < t0:
            continue
        c0, c1 = seq.token_start_cp(t0), seq.token_start_cp(t1)
        seq.replace(t0, t1, *tokens(rng.randint(0, 40)))
        assert seq.total_cp >= 0 and c0 <= c1
    seq._check()
    return seq


@pytest.mark.parametrize("half", [None, 3])
@pytest.mark.parametrize("seed", range(6))
def test_seqview_answers_like_the_sequence(seed, half, monkeypatch) -> None:
    """Every SeqView query, near its chunk and far from it, equals the TokenSeq answer; with
    big chunks the view covers a window of the chunk (``HALF``), which must not show."""
    if half is not None:
        monkeypatch.setattr(SeqView, "HALF", half)
    rng = random.Random(seed)
    seq = _random_seq(rng, rng.choice([50, 600, 3000]), rng.choice([16, 64, 256]))
    n_cp, n_tok = seq.total_cp, seq.total_tokens
    for _ in range(60 if SLOW else 20):  # views at 20 random places (60 under slow)
        cp = rng.randrange(n_cp + 1)
        v = SeqView(seq, cp)
        t = seq.locate(min(cp, n_cp - 1))[0]
        cps_near = [max(0, min(n_cp, cp + d)) for d in (-300, -40, -7, -1, 0, 1, 2, 9, 50, 400)]
        toks_near = [max(0, min(n_tok, t + d)) for d in (-200, -30, -5, -1, 0, 1, 3, 20, 90, 300)]
        for x in cps_near:
            if x < n_cp:
                assert v.locate(x) == seq.locate(x)
                p = seq.prev_piece_start(seq.locate(x)[0])
                assert v.piece_holding(x) == (p, seq.token_start_cp(p))
            assert v.piece_start_at(x) == seq.piece_start_at(x)
            for y in cps_near:
                if x <= y:
                    assert v.slice_text(x, y) == seq.slice_text(x, y)
                    ta = seq.piece_start_at(x)
                    want = None
                    if ta is not None:
                        tb = seq.next_piece_start(ta)
                        if seq.token_start_cp(tb) == y or (tb == n_tok and y == n_cp):
                            want = (ta, tb)
                    assert v.old_piece(x, y) == want
        # a sweep left to right and back, as an edit's re-split asks (the far chunk is kept)
        sweep = list(range(0, n_cp + 1, max(1, n_cp // 400)))
        for x in sweep + sweep[::-1]:
            assert v.piece_start_at(x) == seq.piece_start_at(x), x
        a, b = sorted(rng.sample(range(n_cp + 1), 2))
        assert seq.piece_starts(a, b) == {x for x in range(a, b + 1)
                                          if seq.piece_start_at(x) is not None}
        for i in toks_near:
            assert v.token_start_cp(i) == seq.token_start_cp(i)
            assert v.counted_before(i) == seq.counted_before(i)
            if i < n_tok:
                assert v.token_global(i) == seq.token_global(i)
                assert v.prev_piece_start(i) == seq.prev_piece_start(i)
                p = seq.prev_piece_start(i)
                assert v.piece_start_of(i) == (p, seq.token_start_cp(p))
                assert v.next_piece_start(i) == seq.next_piece_start(i)
            for k in toks_near:
                if i <= k:
                    assert v.counted_between(i, k) == seq.counted_before(k) - seq.counted_before(i)


@pytest.mark.parametrize("seed", range(4))
def test_replace_through_a_view_keeps_the_index_and_hint_right(seed) -> None:
    """Replacements anywhere (in the last view's chunk, before it, after it, across chunks),
    with and without the view: every invariant, including the remembered chunk place."""
    rng = random.Random(seed)
    seq = _random_seq(rng, 800, 16)
    for _ in range(150):
        cp = rng.randrange(seq.total_cp + 1)
        v = SeqView(seq, cp)
        if rng.random() < 0.5:
            t0 = seq.prev_piece_start(v.locate(min(cp, seq.total_cp - 1))[0])
        else:
            t0 = seq.prev_piece_start(rng.randrange(seq.total_tokens))
        t1 = t0 if rng.random() < 0.5 else seq.next_piece_start(t0)
        c0, c1 = seq.token_start_cp(t0), seq.token_start_cp(t1)
        k = rng.randint(1, 3)
        ids, cps = list(range(k)), [rng.randint(1, 3) for _ in range(k)]
        flags = bytearray([PIECE_START | CLEAN] + [CLEAN] * (k - 1))
        text = "".join("q" * w for w in cps)
        seq.replace(t0, t1, ids, cps, flags, text, v if rng.random() < 0.7 else None)
        seq._check()
        assert seq.slice_text(c0, c0 + len(text)) == text and seq.total_cp >= c1 - c0


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 1023, 1024, 1025, 40_000])
def test_prefix_tree_against_sums(n):
    """``BlockSums`` (a tree of sums, fan-out 32) against plain sums, through adds and splices
    that grow and shrink it across level counts (40,000 chunks: 3 levels)."""
    from itertools import accumulate

    rng = random.Random(n)
    sizes = [rng.randrange(0, 5) for _ in range(n)]
    p = BlockSums(sizes)

    def check() -> None:
        assert p.sizes == sizes
        top = p.levels[-1]
        assert 1 <= len(top) <= BlockSums.BLOCK and sum(top) == sum(sizes)
        pre = [0, *accumulate(sizes)]
        for i in {0, len(sizes), *(rng.randrange(len(sizes) + 1) for _ in range(30))}:
            assert p.prefix(i) == pre[i]
        for x in {0, pre[-1], pre[-1] + 1, *(rng.randrange(pre[-1] + 1) for _ in range(30))}:
            i, before = p.find(x)
            # the first k with pre[k + 1] > x (else len(sizes)): pre never decreases
            want = bisect.bisect_right(pre, x) - 1
            assert (i, before) == (want, pre[want]), x

    check()
    for step in range(40):
        if sizes and step % 3:
            i = rng.randrange(len(sizes))
            d = rng.randrange(-sizes[i], 5)
            sizes[i] += d
            p.add(i, d)
        else:
            a = rng.randrange(len(sizes) + 1)
            b = min(len(sizes), a + rng.randrange(0, 2000))
            vals = [rng.randrange(0, 5) for _ in range(rng.randrange(0, 3000))]
            sizes[a:b] = vals
            p.splice(a, b, vals)
        check()


@pytest.mark.parametrize("with_view", [False, True])
def test_replace_across_one_chunk_boundary_rewrites_both_chunks_in_place(with_view) -> None:
    """A range that ends at the first token of the next chunk (a re-tokenized window that ends
    on a chunk boundary) or a few tokens into it: the tail of the first chunk and the head of
    the next are rewritten in place (no re-chunking, no O(C) rebuild of the block sums: ~0.7 ms
    per edit in a 10 MB document before), and the tokens and text equal a plain-list model."""
    load = 16
    n = 40 * load
    ids = list(range(n))
    cps = [1 + i % 3 for i in range(n)]
    flags = bytearray([PIECE_START | CLEAN] * n)
    text = "".join(chr(97 + i % 26) * w for i, w in enumerate(cps))
    seq = TokenSeq(load=load)
    seq.replace(0, 0, ids, cps, flags, text)
    rng = random.Random(7)
    for step in range(200):
        chunks = list(seq.chunks)
        ci = rng.randrange(len(chunks) - 1)
        start = sum(len(c) for c in chunks[: ci + 1])  # first token of chunk ci + 1
        t0 = start - rng.randint(1, 3)
        t1 = start + rng.choice([0, 0, 1, 2])
        k = rng.randint(0, 4)
        new_ids = [10_000 + step] * k
        new_cps = [2] * k
        new_text = "Z" * (2 * k)
        c0, c1 = seq.token_start_cp(t0), seq.token_start_cp(t1)
        view = SeqView(seq, c0) if with_view else None
        seq.replace(t0, t1, new_ids, new_cps, bytearray([PIECE_START | CLEAN] * k), new_text,
                    view)
        ids[t0:t1] = new_ids
        text = text[:c0] + new_text + text[c1:]
        seq._check()
        assert seq.ids() == ids and seq.text() == text
        head_left = len(chunks[ci]) - (start - t0) + k
        if head_left >= load // 4 and len(chunks[ci + 1]) - (t1 - start) >= load // 4:
            # the in-place path: the same chunk objects, the same number of chunks
            assert seq.chunks == chunks and all(a is b for a, b in zip(seq.chunks, chunks))


@pytest.mark.parametrize("seed", range(6))
def test_piece_starts_are_found_across_long_pieces(seed: int) -> None:
    """``next_piece_start`` and ``prev_piece_start`` equal a scan of every flag when pieces
    span many chunks (the per-chunk sums skip them), through replacements that add and remove
    piece starts and chunks (the sums follow: ``_check``)."""
    rng = random.Random(seed)
    seq = TokenSeq(load=rng.choice([4, 8, 32]))

    def tokens(k: int, p_start: float) -> tuple[list[int], list[int], bytearray, str]:
        cps = [rng.randint(1, 3) for _ in range(k)]
        flags = bytearray(PIECE_START | CLEAN if rng.random() < p_start else CLEAN
                          for _ in range(k))
        return list(range(k)), cps, flags, "".join("x" * w for w in cps)

    ids, cps, flags, text = tokens(rng.randint(200, 900), 0.01)
    if flags:
        flags[0] = PIECE_START | CLEAN
    seq.replace(0, 0, ids, cps, flags, text)
    for _ in range(40):
        all_flags = bytearray(b"".join(bytes(c.flags) for c in seq.chunks))
        starts = [i for i, f in enumerate(all_flags) if f & PIECE_START]
        n = seq.total_tokens
        for i in sorted({0, n - 1, *rng.sample(range(n), min(n, 25))}):
            nxt = next((s for s in starts if s > i), n)
            prv = max((s for s in starts if s <= i), default=0)
            assert seq.next_piece_start(i) == nxt, (i, starts[:10])
            assert seq.prev_piece_start(i) == prv, (i, starts[:10])
        # replace a run of whole pieces (piece start to piece start) by new tokens
        t0 = seq.prev_piece_start(rng.randrange(n))
        t1 = seq.next_piece_start(t0) if rng.random() < 0.7 else n
        ids, cps, flags, text = tokens(rng.randint(1, 120), rng.choice([0.0, 0.02, 0.3]))
        flags[0] = PIECE_START | CLEAN
        seq.replace(t0, t1, ids, cps, flags, text)
        seq._check()
