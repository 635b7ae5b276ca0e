"""The BPE engine over a pair-rule table: the merge loops every merge-rule family shares.

A *pair-rule table* maps two adjacent symbols (token ids ``a``, ``b``) to the rule that joins
them: ``rules[a * M + b] = priority * M + new_id`` (``M`` above every id), so the lowest value
among the adjacent pairs is the rule to apply and its token is ``value % M``. HuggingFace
merges compile to it with priority = the merge's index (a token reachable by several rules
keeps each rule's own priority: gpt-oss lists 446,189 merges for 200,000 tokens;
``hf/bpe.py``, :func:`~livetok.incremental.hf.bpe.bpe_tables`). The semantics is Definition 3
of *Formalizing BPE Tokenization* (Berglund & van der Merwe, ``../shared/papers/004``): the
rule of lowest priority among adjacent pairs, once, at its leftmost position, then look again.

One function, :func:`merge`, chooses among four loops with the same result:

* :func:`merge_scan` — a list of pair values scanned for its minimum in C (``min``,
  ``list.index``), patched around each merge: ``O(n^2)`` with a C inner loop, the fastest on
  short pieces (nearly all of real text);
* :func:`merge_runs` — the scan, merging a *run* of equal symbols in one step when nothing
  the run's pairs would create ranks before them (a line of ``=``, 100,000 ``a``, a run of
  spaces): ``O(log n)`` C passes for a run of ``n`` symbols;
* :func:`merge_glued` — a long piece cut in chunks, each merged alone, the neighbours glued at
  each seam by Algorithm 1 (:mod:`.glue`, the edit being empty), giving up (``None``) when a
  seam does not agree within a cap;
* :func:`merge_heap` — HuggingFace's ``Word::merge_all``: a priority queue over a linked list
  (*Byte Pair Encoding and Data Structures*, ``../shared/papers/003``), ``O(n log n)``, any
  length; the fallback of the other two.

``scan`` and ``runs`` equal the heap when no stale heap entry could pass HuggingFace's
staleness test (a symbol's token spells the text it covers: ``BPEModel.scan_exact``), which
the callers check; ``glued`` needs Algorithm 1 to hold for the table (Theorem 1 of the paper:
any merge-rule dictionary). ``tests/unit/test_pairmerge.py`` compares them with each other and
with the obvious loop on random tables, runs and long pieces.

The byte-level family's tiktoken ranks use the same loops keyed by byte strings
(:mod:`.bytelevel.bpe`, a rank is the priority of every split of a token). Compiling those
ranks to this module's pair table gives the same ids, in 0.78-0.85x the time on real text's
pieces but 1.2x on CJK and 20x on a long run, and costs a table of ~446,000 rules (1.3 s of
CPU, 52 MB for o200k_base) before an encoding's first count: :mod:`.bytelevel.bpe`'s
docstring and ``docs/algorithms.md`` have the measurement (``benchmarks/bench_pair_engine.py``).
"""

from __future__ import annotations

import sys
from heapq import heapify, heappop, heappush
from itertools import accumulate, repeat
from operator import add, ne
from typing import Mapping

from .glue import glue_chunks, glue_seam
from .symbols import symbol_spans, unit_symbols

__all__ = ["merge", "merge_scan", "merge_runs", "merge_glued", "merge_heap", "merge_repeat",
           "NO_RULE",
           "SCAN_MAX"]

#: the value of a pair that is no rule: above every ``priority * M + id``
NO_RULE = _NO_RULE = sys.maxsize
#: pieces up to this many symbols are merged by :func:`merge_scan`
SCAN_MAX = 48
#: longer pieces take :func:`merge_runs` when one symbol fills 3/4 of them: up to this many
#: symbols without a bound, longer ones for ``2 log2 n + 8`` steps, then the other loops
RUN_SCAN_MAX = 256
#: :func:`merge_runs`' step bound grows with the runs of a long piece, up to this many
RUNS_MAX = 8
#: pieces from this many symbols on are merged by chunks of ``GLUE_CHUNK`` glued at their
#: seams (:func:`merge_glued`), a side taking at most ``GLUE_CAP`` tokens before giving up
GLUE_FROM = 8192
GLUE_CHUNK = 256
GLUE_CAP = 64
#: a run of one symbol of at least ``RUN_REPEAT_FROM`` inside a piece is merged by repetition
#: of its period of ``RUN_PERIOD`` symbols (:func:`merge_repeat`)
RUN_REPEAT_FROM = 1 << 12
RUN_PERIOD = 1 << 10
#: :func:`merge_repeat` gives up on a piece whose other symbols number more than this, or
#: take more than ``_OTHER_KINDS`` values (each value is found by a C scan of the piece)
_OTHER_MAX = 4096
_OTHER_KINDS = 16
#: per table (by identity, the object kept) and symbol: the period's ids (None: no period)
#: and the symbol counts of the tokens met making it
_PERIODS: dict[tuple[int, int, int], tuple[Mapping[int, int], list[int] | None,
                                           dict[int, int]]] = {}


def merge(ids: list[int], rules: Mapping[int, int], m: int, lens: list[int] | None = None
          ) -> None:
    """Apply the rules to the symbols ``ids`` in place, by the loop that suits them (module
    docstring); ``lens``, if given, is summed along (each symbol's length in characters). The
    caller guarantees the scan is exact for the table (``scan_exact``: equal symbols then
    have equal lengths).

    >>> ids = [0] * 10                          # a * 10; a a -> aa (1), aa aa -> aaaa (2)
    >>> merge(ids, {0 * 3 + 0: 0 * 3 + 1, 1 * 3 + 1: 1 * 3 + 2}, 3); ids
    [2, 2, 1]

    Runtime complexity: ``O(n log n)`` for ``n`` symbols (``O(n^2)`` C work up to
    ``SCAN_MAX``); ``O(n log n)`` C work for a run.
    """
    n = len(ids)
    if n <= SCAN_MAX:
        merge_scan(ids, lens, rules, m)
        return
    if n >= RUN_REPEAT_FROM and lens is None:
        repeated = merge_repeat(ids, rules, m)
        if repeated is not None:
            ids[:] = repeated
            return
    # (three samples: one other symbol in the middle of a run must not hide the run)
    if any(ids.count(c) * 4 >= 3 * n for c in {ids[n >> 2], ids[n >> 1], ids[3 * n >> 2]}):
        work = ids[:]
        work_lens = None if lens is None else lens[:]
        if merge_runs(work, rules, m, 0 if n <= RUN_SCAN_MAX else _run_steps(ids), work_lens):
            ids[:] = work
            if lens is not None and work_lens is not None:
                lens[:] = work_lens
            return
    if n >= GLUE_FROM:
        out = merge_glued(ids, rules, m)
        if out is not None:
            if lens is not None:
                at = list(accumulate(lens, initial=0))
                lens[:] = [at[e] - at[s] for s, e, _ in out]
            ids[:] = [t for _, _, t in out]
            return
    merge_heap(ids, lens, rules, m)


def _merged(ids: list[int], rules: Mapping[int, int], m: int, tl: dict[int, int]) -> list[int]:
    """:func:`merge` of a copy of ``ids`` (never by repetition), each token's symbol count
    recorded in ``tl``."""
    sym, lens = ids[:], [1] * len(ids)
    merge(sym, rules, m, lens)
    tl.update(zip(sym, lens))
    return sym


def _period(s: int, rules: Mapping[int, int], m: int, tl: dict[int, int]) -> list[int] | None:
    """``T(s * RUN_PERIOD)`` for the symbol ``s`` when its last token and its first token side
    by side are their own tokenization (then ``T(s * kP)`` is it repeated ``k`` times, by
    Algorithm 1, as :func:`.bytelevel.bpe._run_period`); else None. Memoized per table.

    Runtime complexity: ``O(P log P)`` once per table and symbol, then ``O(1)``.
    """
    key = (id(rules), m, s)
    got = _PERIODS.get(key)
    if got is not None and got[0] is rules:
        tl.update(got[2])
        return got[1]
    mine: dict[int, int] = {}
    base = _merged([s] * RUN_PERIOD, rules, m, mine)
    seam = [s] * (mine[base[-1]] + mine[base[0]])
    period = base if _merged(seam, rules, m, mine) == [base[-1], base[0]] else None
    _PERIODS[key] = (rules, period, mine)
    tl.update(mine)
    return period


def merge_repeat(ids: list[int], rules: Mapping[int, int], m: int) -> list[int] | None:
    """The merged symbols of a piece holding runs of one symbol of ``RUN_REPEAT_FROM`` or
    more (a line of one letter being typed into: Llama 3's tokenizer.json), the pair-table
    form of :func:`.bytelevel.bpe._run_repeat`: each run is the period ``T(s * RUN_PERIOD)``
    repeated (:func:`_period`) and a tail of ``P`` to ``2 P`` symbols, the parts between runs
    merged alone, each part glued to the tokens so far by Algorithm 1 (exact for any cut).
    None when there is no such run, the symbol has no period, or a seam does not agree
    within ``GLUE_CAP`` tokens (the caller takes the other loops).

    Runtime complexity: ``O(n)`` C work (list repetition and copies) plus ``O(P log P)`` per
    run and the merges of the parts between runs.
    """
    n = len(ids)
    s = ids[n >> 1]
    c = ids.count(s)
    if c < RUN_REPEAT_FROM:
        return None
    others = _other_places(ids, s, n - c)
    if others is None:
        return None
    runs = [(a + 1, b) for a, b in zip(others, others[1:]) if b - a - 1 >= RUN_REPEAT_FROM]
    if not runs:
        return None
    tl: dict[int, int] = {}
    period = _period(s, rules, m, tl)
    if period is None:
        return None
    out: list[int] = []
    x = 0

    def add(seg: list[int], y: int) -> bool:
        nonlocal out, x
        got = seg if x == 0 else glue_seam(
            lambda ws, we: _merged(ids[ws:we], rules, m, tl), tl.__getitem__, out, x, seg, y,
            GLUE_CAP)
        if got is None:
            return False
        out, x = got, y
        return True

    for a, b in runs:
        if a > x and not add(_merged(ids[x:a], rules, m, tl), a):
            return None
        k = (b - a) // RUN_PERIOD - 1
        tail = a + k * RUN_PERIOD
        if not add(period * k, tail) or not add(_merged([s] * (b - tail), rules, m, tl), b):
            return None
    if x < n and not add(_merged(ids[x:], rules, m, tl), n):
        return None
    return out


def _other_places(ids: list[int], s: int, k: int) -> list[int] | None:
    """``[-1, places of the k symbols other than s, len(ids)]`` in order, found by C scans
    (``set``, ``list.index``) rather than a Python step per symbol; None when those symbols
    take more than ``_OTHER_KINDS`` values or number more than ``_OTHER_MAX``.

    Runtime complexity: ``O(n)`` per other value (``list.index`` scans), at most
    ``_OTHER_KINDS`` of them.
    """
    n = len(ids)
    if k == 0:
        return [-1, n]
    if k > _OTHER_MAX:
        return None
    kinds = set(ids)
    kinds.discard(s)
    if len(kinds) > _OTHER_KINDS:
        return None
    places: list[int] = []
    for v in kinds:
        i = ids.index(v)
        while True:
            places.append(i)
            try:
                i = ids.index(v, i + 1)
            except ValueError:
                break
    places.sort()
    return [-1, *places, n]


def _run_steps(ids: list[int]) -> int:
    """The step bound of :func:`merge_runs` on a long piece: ``2 log2 n + 8`` per run of
    equal symbols, for up to :data:`RUNS_MAX` runs (a run with a few other symbols in it,
    as a line of ``a`` after a keystroke: each level of the halving takes one bulk step per
    run and a few single merges at its edges).

    Runtime complexity: ``O(n)`` C work.
    """
    runs: int = 1 + sum(map(ne, ids, ids[1:]))
    return (2 * len(ids).bit_length() + 8) * min(runs, RUNS_MAX)


def merge_scan(ids: list[int], lens: list[int] | None, rules: Mapping[int, int], m: int) -> None:
    """Apply the merge rules to the symbols ``ids`` in place (``lens``, if given, is summed
    along): the pair of lowest value first, leftmost on ties, by a C-speed minimum scan.

    >>> ids = [0, 1, 0, 1]                      # a b a b; rule 0: a b -> ab (id 2)
    >>> merge_scan(ids, None, {0 * 3 + 1: 0 * 3 + 2}, 3); ids
    [2, 2]

    Runtime complexity: ``O(n^2)`` for ``n`` symbols (``O(n)`` C work per merge).
    """
    get = rules.get
    vals = list(map(get, map(add, map(m.__mul__, ids), ids[1:]), repeat(NO_RULE)))
    while vals:
        best = min(vals)
        if best == NO_RULE:
            break
        k = vals.index(best)
        new = best % m
        ids[k] = new
        del ids[k + 1]
        if lens is not None:
            lens[k] += lens.pop(k + 1)
        del vals[k]
        if k < len(vals):
            vals[k] = get(new * m + ids[k + 1], NO_RULE)
        if k:
            vals[k - 1] = get(ids[k - 1] * m + new, NO_RULE)


def merge_heap(ids: list[int], lens: list[int] | None, rules: Mapping[int, int], m: int) -> None:
    """:func:`merge_scan` by ``Word::merge_all``'s priority queue over a linked list (any
    length), with its staleness test, in place.

    A heap entry ``(value, pos)`` is the rule ``value`` for the symbol at ``pos`` and its right
    neighbour when pushed. When popped it is applied if ``pos`` is still a symbol with a right
    neighbour and the rule of the pair there *now* makes the same token (HuggingFace compares
    the new id only, so this is what it does even where a token has several rules).

    >>> ids = [0, 1, 0]                         # a b a; rules: b a -> ba (3), a b -> ab (2)
    >>> merge_heap(ids, None, {1 * 4 + 0: 0 * 4 + 3, 0 * 4 + 1: 1 * 4 + 2}, 4); ids
    [0, 3]

    Runtime complexity: ``O(n log n)`` for ``n`` symbols.
    """
    n = len(ids)
    if n < 2:
        return
    get = rules.get
    # nexts[i]: index of the symbol after symbol i (n: none; -1 once i is absorbed)
    nexts, prevs = unit_symbols(n)
    heap = [(v, i) for i, v in enumerate(map(get, map(add, map(m.__mul__, ids), ids[1:])))
            if v is not None]
    heapify(heap)
    while heap:
        val, pos = heappop(heap)
        nxt = nexts[pos]
        if nxt < 0 or nxt >= n:
            continue  # absorbed, or the last symbol
        new = val % m
        cur = get(ids[pos] * m + ids[nxt])
        if cur is None or cur % m != new:
            continue  # stale (HuggingFace's test: the new id only)
        ids[pos] = new
        if lens is not None:
            lens[pos] += lens[nxt]
        after = nexts[nxt]
        nexts[pos] = after
        nexts[nxt] = -1
        if after < n:
            prevs[after] = pos
            v = get(new * m + ids[after])
            if v is not None:
                heappush(heap, (v, pos))
        p = prevs[pos]
        if p >= 0:
            v = get(ids[p] * m + new)
            if v is not None:
                heappush(heap, (v, p))
    spans = symbol_spans(nexts, n)
    ids[:] = [ids[s] for s, _ in spans]
    if lens is not None:
        lens[:] = [lens[s] for s, _ in spans]


def merge_runs(ids: list[int], rules: Mapping[int, int], m: int, max_steps: int = 0,
               lens: list[int] | None = None) -> bool:
    """:func:`merge_scan`, merging a run of equal symbols in one step; False (``ids`` left
    half-merged: pass a copy) when not done after ``max_steps`` steps (0: no bound).

    When the lowest pair joins two equal symbols ``p`` that start a run of ``c >= 4``, the
    scan would merge them pairwise from the left, ``(p, p)`` after ``(p, p)``, as long as the
    pairs it creates on the way (the left neighbour with ``pp``, ``pp`` with ``p``, ``pp`` with
    ``pp``) come later (another pair never ties: priorities belong to distinct rules, and the
    same rule twice is leftmost first either way): the run becomes ``c // 2`` symbols ``pp``
    (and one ``p`` if ``c`` is odd) in one slice assignment. Otherwise one merge is made the
    usual way. The same steps as the scan, in bulk.

    >>> ids = [0] * 9
    >>> merge_runs(ids, {0 * 3 + 0: 0 * 3 + 1, 1 * 3 + 1: 1 * 3 + 2}, 3), ids
    (True, [2, 2, 0])

    Runtime complexity: ``O(n^2)`` for ``n`` symbols; ``O(n log n)`` for a run;
    ``O(max_steps * n)`` with a bound.
    """
    get = rules.get
    n = len(ids)
    pair = list(map(get, map(add, map(m.__mul__, ids), ids[1:]), repeat(NO_RULE)))
    for _ in range(max_steps or n):
        if not pair:
            break
        best = min(pair)
        if best == NO_RULE:
            break
        k = pair.index(best)
        part = ids[k]
        new = best % m
        if part == ids[k + 1]:
            c = ids.count(part)
            if ids[k:k + c] != [part] * c:
                c = 2
                while k + c < n and ids[k + c] == part:
                    c += 1
            if c >= 4:
                r3 = get(new * m + part, NO_RULE)
                r4 = get(new * m + new, NO_RULE)
                left = get(ids[k - 1] * m + new, NO_RULE) if k else NO_RULE
                if r3 > best and r4 > best and left > best:
                    half = c >> 1
                    end = k + c  # the symbol after the run, if end < n
                    if lens is not None:
                        w = lens[k]  # (equal symbols spell equal text)
                        lens[k:end] = [w + w] * half + [w] * (c & 1)
                    if c & 1:
                        ids[k:end] = [new] * half + [part]
                        pair[k:end - 1] = [r4] * (half - 1) + [r3]
                    else:
                        ids[k:end] = [new] * half
                        if end < n:
                            pair[k:end] = [r4] * (half - 1) + [get(new * m + ids[k + half],
                                                                   NO_RULE)]
                        else:
                            pair[k:end - 1] = [r4] * (half - 1)
                    if k:
                        pair[k - 1] = left
                    n -= half
                    continue
        ids[k] = new
        del ids[k + 1]
        if lens is not None:
            lens[k] += lens.pop(k + 1)
        n -= 1
        del pair[k]
        if k < n - 1:
            pair[k] = get(new * m + ids[k + 1], NO_RULE)
        if k:
            pair[k - 1] = get(ids[k - 1] * m + new, NO_RULE)
    else:
        if pair and min(pair) != NO_RULE:
            return False
    return True


def merge_glued(ids: list[int], rules: Mapping[int, int], m: int, size: int = GLUE_CHUNK,
                cap: int = GLUE_CAP) -> list[tuple[int, int, int]] | None:
    """The merged symbols of a long piece ``ids`` (not changed) as ``(start, end, id)``, the
    span of ``ids`` each token merged, chunk by chunk: each chunk
    of ``size`` symbols merged alone, neighbours glued at each seam by
    :func:`~livetok.incremental.glue.glue` (Algorithm 1, the edit being empty; tokens compared
    as ``(start, end, id)``). None when a side would take more than ``cap`` tokens or pass
    its chunk's end (a run whose tokens shift to its end): the caller merges the whole piece.

    Runtime complexity: ``O(n log size)`` when each seam glues within a few tokens;
    ``O(n * cap)`` more at most before giving up.
    """
    n = len(ids)

    def encode(ws: int, we: int) -> list[tuple[int, int, int]]:
        sym = ids[ws:we]
        lens = [1] * len(sym)
        if len(sym) <= SCAN_MAX:
            merge_scan(sym, lens, rules, m)
        else:
            merge_heap(sym, lens, rules, m)
        ends = list(accumulate(lens, initial=ws))
        return list(zip(ends, ends[1:], sym))

    return glue_chunks(encode, n, size, cap)
