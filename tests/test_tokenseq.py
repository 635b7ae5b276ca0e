"""The chunk index of :mod:`livetok.incremental.tokenseq` against plain sums."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental.tokenseq import _Prefix


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


@given(sizes=st.lists(st.integers(0, 9), max_size=300), ops=ops,
       queries=st.lists(st.integers(0, 3000), max_size=20))
def test_prefix_and_find_match_plain_sums(sizes, ops, queries) -> None:
    """Zero sizes (empty chunks), block edges (multiples of BLOCK), splices that change the
    number of chunks, and offsets past the end."""
    p = _Prefix(sizes)
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
            p.sizes[a:b] = new
            p.reblock()
        assert p.sizes == ref
        for k in range(len(ref) + 1):
            assert p.prefix(k) == sum(ref[:k])
        for x in queries:
            assert p.find(x) == naive_find(ref, x), (x, ref)
