"""Byte-level BPE with tiktoken's rank semantics.

Two implementations of the same function ``T(piece)``: repeatedly merge the adjacent pair of
parts whose concatenation has the lowest rank in the vocabulary (leftmost on ties) until no
adjacent pair forms a token; the ids are the ranks of the final parts.

* :func:`bpe_encode` — the priority queue + linked list of *Byte Pair Encoding and Data
  Structures* (``../shared/papers/003``, section "A faster implementation"): symbols live in
  arrays indexed by their start byte (``ends[i]`` is the end of the symbol starting at ``i``,
  ``prevs[i]`` its left neighbour), candidate pairs sit in a binary heap keyed by
  ``(rank, start)``; stale heap entries are detected lazily by re-reading the pair's current
  rank. ``O(n log n)`` per piece instead of ``O(n^2)``.

  Pieces of at most ``SCAN_MAX`` bytes (nearly all pieces of real text: 2-12 bytes) skip the
  heap: a list of pair ranks is scanned for its minimum by ``min`` and ``list.index`` (both in
  C) and patched around each merge, as tiktoken's own ``_byte_pair_merge`` does. That is
  ``O(n^2)`` but with a C inner loop, faster than the heap on short pieces. A constant-factor
  choice only: ``n`` is capped, so the bound stays ``O(n log n)`` and long pieces always take
  the heap. (The measured constants of this module: ``docs/algorithms.md`` section 3.)
  :func:`scan_ids` is the form the encoder's cache misses use: it keeps the parts as ``bytes``
  (a pair's key is one concatenation) and returns the ids, for a piece known not to be a token;
  its loop (:func:`_scan_ids_runs`) also merges a run of equal parts (``"=" * 60``) in one
  step, and pieces that are mostly one byte (ruler lines, runs of spaces) take it instead of
  the heap: up to 256 bytes freely, longer ones for ``O(log n)`` steps, after which the heap
  takes over, so the ``O(n log n)`` bound holds for any vocabulary.
* :func:`_glued_split` — pieces of ``GLUE_FROM`` bytes or more (a line of CJK letters, a
  long random-looking token string) are cut in chunks of ``GLUE_CHUNK`` bytes, each chunk is
  split alone and neighbouring chunks are glued at their seam by Algorithm 1
  (:mod:`livetok.incremental.glue`): the heap slows down per byte on a piece of a megabyte,
  the chunks do not (``docs/algorithms.md``, section 1).

* :func:`_run_repeat` — a run of one byte of ``RUN_REPEAT_FROM`` bytes or more (a line of
  one letter being typed into) is its period ``T(p * RUN_PERIOD)`` repeated, glued to the rest
  by Algorithm 1: ``O(n)`` C work (list repetition) instead of ``O(n log n)``.

**Why not the pair engine** (:mod:`..pairmerge`, which the ``tokenizer.json`` byte-level
files use; issue 36): the ranks compile to its pair-rule table (every split of a token is a
rule of the token's rank) and the two give the same ids, but the table costs each byte-level
vocabulary a build before its first count: 446,189 rules for o200k_base in 1.30 s of CPU,
holding 52 MB. Speed does not pay for it: the table merged the distinct cache-missing pieces
of real text 0.78-0.85x the time of this module's loops, but a 64 KB CJK piece 1.17-1.24x,
and a 100,000-byte run 20x (no repetition there). Measured by
``benchmarks/bench_pair_engine.py``; the table and the conditions: ``docs/algorithms.md``,
section 3.

The obviously correct ``O(n^2)`` loop is kept apart as the reference for tests
(:func:`._reference.bpe_encode_naive`, as in tiktoken's ``_educational.py`` and minbpe).

These are also the SentencePiece ("correct") semantics of Definition 3 of *Formalizing BPE
Tokenization* (Berglund & van der Merwe) for the dictionary whose rules are all splits
``u ⋄ v`` of vocabulary tokens ``uv``, prioritised by ``rank(uv)``.
"""

from __future__ import annotations

import re
import sys
from heapq import heapify, heappop, heappush
from itertools import repeat
from operator import add
from typing import Callable, Iterator, Mapping

from ..glue import glue_chunks, glue_seam
from ..pairmerge import GLUE_CAP, GLUE_CHUNK, GLUE_FROM, RUN_PERIOD, RUN_REPEAT_FROM, RUN_SCAN_MAX
from ..pairmerge import SCAN_MAX
from ..symbols import symbol_spans, unit_symbols

__all__ = ["bpe_encode", "bpe_split", "scan_ids", "SCAN_MAX"]

#: pieces up to ``SCAN_MAX`` bytes (the engine's, :mod:`..pairmerge`: 48) use the C-speed
#: scan (:func:`scan_ids`), longer ones the heap (measured: ``docs/algorithms.md`` section 3)
# the thresholds of the run-aware scan (``RUN_SCAN_MAX``) and of the glued chunks (``GLUE_*``)
# are the engine's (:mod:`..pairmerge`; measured: ``docs/algorithms.md`` section 3)
#: the rank of a pair that is not a token: larger than every rank
_NO_RANK = sys.maxsize


def _scan_bounds(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """Part boundaries ``[0, ..., len(piece)]`` of the BPE of a short piece, by rank scans.

    ``pair[k]`` is the rank of parts ``k`` and ``k + 1`` together (``_NO_RANK`` if not a
    token). Each step merges the pair of lowest rank, the *leftmost* on ties as
    ``list.index`` returns the first minimum (tiktoken's tie rule; equal ranks mean equal
    bytes, as in ``"aaaa"``), then re-reads the two pairs that now involve the merged part.

    Runtime complexity: ``O(n^2)`` for ``n = len(piece)`` (``O(n)`` C work per merge).
    """
    rget = ranks.get
    bounds = list(range(len(piece) + 1))
    pair = [rget(piece[k : k + 2], _NO_RANK) for k in range(len(piece) - 1)]
    while pair:
        best = min(pair)
        if best == _NO_RANK:
            break
        k = pair.index(best)
        # parts k and k+1 become one: drop their shared boundary and their pair
        del bounds[k + 1]
        del pair[k]
        if k < len(pair):
            pair[k] = rget(piece[bounds[k] : bounds[k + 2]], _NO_RANK)
        if k:
            pair[k - 1] = rget(piece[bounds[k - 1] : bounds[k + 1]], _NO_RANK)
    return bounds


#: ``_BYTES[b]`` is the one-byte string ``bytes([b])`` (the initial parts of a piece)
_BYTES = [bytes([b]) for b in range(256)]


def scan_ids(
    piece: bytes,
    rget: Callable[[bytes, int], int],
    rank_of: Callable[[bytes], int],
) -> tuple[int, ...]:
    """Token ids of a piece of at least 2 bytes that is *not* itself a token (the caller has
    looked it up), by the same rank scan as :func:`_scan_bounds`; ``rget`` is the vocabulary's
    ``get`` and ``rank_of`` its ``__getitem__``.

    The parts are kept as ``bytes`` (the key of a pair is one concatenation, no slicing by
    boundaries), and the scan stops when two parts are left: their pair is the whole piece,
    which is not a token. A 2-byte piece is its two bytes; a 3-byte piece is decided by its
    two pairs; longer pieces take the loop of :func:`_scan_ids_runs`. Same merges as
    :func:`_scan_bounds`, so the same ids (tested against the reference
    :func:`._reference.bpe_encode_naive`), in less time (``docs/algorithms.md`` section 3).

    Runtime complexity: ``O(n^2)`` for ``n = len(piece)`` (``O(n)`` C work per merge).
    """
    parts = list(map(_BYTES.__getitem__, piece))
    n = len(parts)
    if n == 3:
        left = rget(piece[:2], _NO_RANK)
        right = rget(piece[1:], _NO_RANK)
        if left <= right:  # ties: equal pairs, the leftmost merges
            if left != _NO_RANK:
                return (left, rank_of(parts[2]))
        else:
            return (rank_of(parts[0]), right)
    if n < 4:
        return tuple(map(rank_of, parts))
    return _scan_ids_runs(parts, rget, rank_of)  # type: ignore[return-value]  # no bound


def _scan_ids_runs(
    parts: list[bytes],
    rget: Callable[[bytes, int], int],
    rank_of: Callable[[bytes], int],
    max_steps: int = 0,
) -> tuple[int, ...] | None:
    """:func:`scan_ids` for longer pieces (given as their one-byte ``parts``), which merges a
    *run* of equal parts in one step.

    Runs of one character are common in real text (``"=" * 60`` under a heading, ``"-" * 40``
    rulers) and cost one scan step per merge. When the lowest pair joins two equal parts ``p``
    that start a run of ``c >= 4`` equal parts, the scan would merge them pairwise from the
    left, ``(p, p)`` after ``(p, p)``, as long as the pairs it creates on the way (the left
    neighbour with ``pp``, ``pp`` with ``p``, ``pp`` with ``pp``) rank higher (a new pair is a
    longer string, so never ties): the run becomes ``c // 2`` parts ``pp`` (and one ``p`` if
    ``c`` is odd) in one slice assignment, with the pairs it would have left. When a created
    pair ranks lower, one merge is made the usual way. So the result is the scan's, and a run
    of ``m`` bytes takes ``O(log m)`` steps of ``O(m)`` C work instead of ``m`` steps.

    ``max_steps`` (a merge or a bulk step each) bounds the work for long pieces: ``None`` is
    returned when the piece is not done after that many, and the caller takes the heap.
    ``0`` (the default) means no bound: every step removes a part, so ``n`` steps always end.

    Runtime complexity: ``O(n^2)`` for ``n = len(parts)``; ``O(n log n)`` for a run;
    ``O(max_steps * n)`` with a bound.
    """
    n = len(parts)
    pair = list(map(rget, map(add, parts, parts[1:]), repeat(_NO_RANK)))
    for _ in range(max_steps or n):
        best = min(pair)
        if best == _NO_RANK:
            break
        k = pair.index(best)
        part = parts[k]
        if part == parts[k + 1]:
            # the run's length: all equal parts when they follow each other (C loops)
            c = parts.count(part)
            if parts[k : k + c] != [part] * c:
                c = 2
                while k + c < n and parts[k + c] == part:
                    c += 1
            if c >= 4:
                double = part + part
                r3 = rget(double + part, _NO_RANK)
                r4 = rget(double + double, _NO_RANK)
                left = rget(parts[k - 1] + double, _NO_RANK) if k else _NO_RANK
                if r3 > best and r4 > best and left > best:
                    half = c >> 1
                    end = k + c  # the part after the run, if end < n
                    if c & 1:
                        parts[k:end] = [double] * half + [part]
                        pair[k : end - 1] = [r4] * (half - 1) + [r3]
                    else:
                        parts[k:end] = [double] * half
                        if end < n:
                            after = rget(double + parts[k + half], _NO_RANK)
                            pair[k:end] = [r4] * (half - 1) + [after]
                        else:
                            pair[k : end - 1] = [r4] * (half - 1)
                    if k:
                        pair[k - 1] = left
                    n -= half
                    if n == 2:
                        break
                    continue
        merged = part + parts.pop(k + 1)
        parts[k] = merged
        n -= 1
        if n == 2:
            break  # the last pair is the whole piece: not a token
        del pair[k]
        if k < n - 1:
            pair[k] = rget(merged + parts[k + 1], _NO_RANK)
        if k:
            pair[k - 1] = rget(parts[k - 1] + merged, _NO_RANK)
    else:
        return None  # out of steps (never without a bound: each step removes a part)
    return tuple(map(rank_of, parts))


def bpe_split(piece: bytes, ranks: Mapping[bytes, int]) -> list[tuple[int, int]]:
    """Byte spans ``(start, end)`` of the BPE parts of ``piece`` (priority queue version).

    >>> bpe_split(b"aaa", {b"a": 0, b"aa": 1})
    [(0, 2), (2, 3)]

    Runtime complexity: ``O(n log n)`` for ``n = len(piece)``.
    """
    n = len(piece)
    if n <= SCAN_MAX:
        bounds = _scan_bounds(piece, ranks)
        return list(zip(bounds, bounds[1:]))
    return _heap_split(piece, ranks)


def _heap_split(piece: bytes, ranks: Mapping[bytes, int]) -> list[tuple[int, int]]:
    """:func:`bpe_split` by the priority queue + linked list of the paper (any length).

    Runtime complexity: ``O(n log n)`` for ``n = len(piece)``.
    """
    n = len(piece)
    if n <= 1:
        return [(0, n)] if n else []
    rget = ranks.get
    # ends[i]: end byte of the symbol that starts at i (-1 once absorbed by its left neighbour)
    ends, prevs = unit_symbols(n)
    heap = []
    for i in range(n - 1):
        r = rget(piece[i : i + 2])
        if r is not None:
            heap.append((r, i))
    heapify(heap)
    while heap:
        rank, i = heappop(heap)
        j = ends[i]
        if j < 0 or j >= n:
            continue  # symbol i was absorbed, or it is the last symbol now
        e = ends[j]
        # subtle: a heap entry is stale when either symbol changed since it was pushed; the
        # pair's bytes then differ, and distinct tokens have distinct ranks, so re-reading the
        # rank of the *current* pair detects staleness exactly.
        if rget(piece[i:e]) != rank:
            continue
        ends[i] = e
        ends[j] = -1
        if e < n:
            prevs[e] = i
            r = rget(piece[i : ends[e]])
            if r is not None:
                heappush(heap, (r, i))
        p = prevs[i]
        if p >= 0:
            r = rget(piece[p:e])
            if r is not None:
                heappush(heap, (r, p))
    return symbol_spans(ends, n)


def _glued_split(
    piece: bytes, ranks: Mapping[bytes, int], size: int = GLUE_CHUNK, cap: int = GLUE_CAP
) -> list[tuple[int, int]] | None:
    """:func:`bpe_split` of a long piece, chunk by chunk, glued at each seam by
    :func:`~livetok.incremental.glue.glue` (Algorithm 1, the edit being empty).

    ``piece`` is cut every ``size`` bytes and each chunk is split alone. At a seam the parts so
    far (a correct tokenization of the piece up to the seam, by induction) are ``tau1`` and
    the chunk's parts ``tau2``; parts are compared as byte spans. The seam's window may reach
    the piece's start but not pass the chunk's end unless that is the piece's end.

    Returns None when a side needs more than ``cap`` parts or would pass the chunk's end
    (seams that never agree, as in a run whose parts shift to its end): the caller splits the
    whole piece instead.

    Runtime complexity: ``O(n log size)`` for ``n`` bytes when each seam glues within a few
    parts (real text, CJK letters, random letters: measured); ``O(n * cap)`` more at most
    before giving up.
    """
    n = len(piece)

    def encode(ws: int, we: int) -> list[tuple[int, int]]:
        return [(a + ws, b + ws) for a, b in bpe_split(piece[ws:we], ranks)]

    return glue_chunks(encode, n, size, cap)


#: a run of one byte of at least ``RUN_REPEAT_FROM`` bytes inside a piece is encoded by
#: repetition (:func:`_run_repeat`): ``T(p * RUN_PERIOD)`` repeated, glued to the rest, a side
#: of a seam taking at most ``GLUE_CAP`` old tokens (the pair engine's thresholds, shared)
#: per vocabulary (by identity, the object kept): ``lens[id]``, the byte length of each token
_TOKEN_LENS: dict[int, tuple[Mapping[bytes, int], list[int]]] = {}
#: per vocabulary and byte: ``T(p * RUN_PERIOD)``'s ids, or None when its seam with itself
#: does not glue at once (then a run of that byte takes the general path)
_PERIODS: dict[tuple[int, int], tuple[Mapping[bytes, int], list[int] | None]] = {}
#: ``_NOT_BYTE[b]`` finds the first byte other than ``b`` (compiled on first use)
_NOT_BYTE: dict[int, "re.Pattern[bytes]"] = {}


def _token_lens(ranks: Mapping[bytes, int]) -> list[int]:
    """``lens[id]``: the byte length of token ``id`` of ``ranks`` (built once per vocabulary,
    ``O(vocabulary)``)."""
    got = _TOKEN_LENS.get(id(ranks))
    if got is not None and got[0] is ranks:
        return got[1]
    lens = [0] * (max(ranks.values(), default=-1) + 1)
    for tok, r in ranks.items():
        lens[r] = len(tok)
    _TOKEN_LENS[id(ranks)] = (ranks, lens)
    return lens


def _long_runs(piece: bytes, b: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the maximal runs of byte ``b`` in ``piece`` of at least
    ``RUN_REPEAT_FROM`` bytes, left to right.

    Runtime complexity: ``O(len(piece))``, in C (``bytes.find`` and one ``re`` search per run).
    """
    key = _BYTES[b] * RUN_REPEAT_FROM
    other = _NOT_BYTE.get(b)
    if other is None:
        other = _NOT_BYTE[b] = re.compile(b"[^" + re.escape(_BYTES[b]) + b"]")
    pos = 0
    while True:
        i = piece.find(key, pos)  # the leftmost: the run starts there (pos is past a non-b)
        if i < 0:
            return
        m = other.search(piece, i + RUN_REPEAT_FROM)
        j = m.start() if m is not None else len(piece)
        yield i, j
        pos = j


def _glue_ids(
    piece: bytes, ranks: Mapping[bytes, int], lens: list[int],
    out: list[int], x: int, seg: list[int], y: int,
) -> list[int] | None:
    """``T(piece[:y])`` from ``out = T(piece[:x])`` and ``seg = T(piece[x:y])`` by Algorithm 1
    (:func:`~livetok.incremental.glue.glue`, windows encoded by :func:`_bpe_plain`); None when
    a side needs more than ``GLUE_CAP`` tokens.

    Runtime complexity: ``O(len(out) + len(seg))`` list copies plus the seam's windows.
    """

    return glue_seam(lambda ws, we: _bpe_plain(piece[ws:we], ranks), lens.__getitem__,
                     out, x, seg, y, GLUE_CAP)


def _run_period(b: int, ranks: Mapping[bytes, int], lens: list[int]) -> list[int] | None:
    """``T(p * RUN_PERIOD)`` for the byte ``p = bytes([b])``, when its last token and its first
    token, side by side, are their own tokenization: then, by Algorithm 1 (the first window of
    the seam between ``T(p * kP)`` and ``T(p * P)`` is those two tokens, and agrees),
    ``T(p * kP)`` is the period repeated ``k`` times, for every ``k``. Else None. Memoized.

    Runtime complexity: ``O(P log P)`` once per vocabulary and byte, then ``O(1)``.
    """
    key = (id(ranks), b)
    got = _PERIODS.get(key)
    if got is not None and got[0] is ranks:
        return got[1]
    p = _BYTES[b]
    base = _bpe_plain(p * RUN_PERIOD, ranks)
    seam = p * (lens[base[-1]] + lens[base[0]])
    period = base if _bpe_plain(seam, ranks) == [base[-1], base[0]] else None
    _PERIODS[key] = (ranks, period)
    return period


def _run_repeat(piece: bytes, ranks: Mapping[bytes, int]) -> list[int] | None:
    """:func:`bpe_encode` of a piece holding runs of its middle byte of ``RUN_REPEAT_FROM``
    bytes or more (100,000 ``a``, a line of one letter being typed into): each run is the
    period ``T(p * RUN_PERIOD)`` repeated (:func:`_run_period`) glued to a tail of ``P`` to
    ``2 P`` bytes, and the parts between the runs are encoded alone; left to right, each part
    is glued to the tokens so far by Algorithm 1 (:func:`_glue_ids`), which is exact for any
    cut (``docs/algorithms.md`` section 3). None when the piece has no such run, the byte has
    no period, or a seam does not agree within ``GLUE_CAP`` tokens (the caller takes the
    general path).

    Runtime complexity: ``O(n)`` C work (``bytes.find``, list repetition and copies) plus
    ``O(P log P)`` per run and the encodes of the parts between runs.
    """
    b = piece[len(piece) >> 1]
    runs = list(_long_runs(piece, b))
    if not runs:
        return None
    lens = _token_lens(ranks)
    period = _run_period(b, ranks, lens)
    if period is None:
        return None
    p = _BYTES[b]
    out: list[int] = []
    x = 0

    def add(seg: list[int], y: int) -> bool:
        nonlocal out, x
        got = seg if x == 0 else _glue_ids(piece, ranks, lens, out, x, seg, y)
        if got is None:
            return False
        out, x = got, y
        return True

    for i, j in runs:
        if i > x and not add(bpe_encode(piece[x:i], ranks), i):
            return None
        k = (j - i) // RUN_PERIOD - 1
        tail = i + k * RUN_PERIOD
        if not add(period * k, tail) or not add(_bpe_plain(p * (j - tail), ranks), j):
            return None
    if x < len(piece) and not add(bpe_encode(piece[x:], ranks), len(piece)):
        return None
    return out


def bpe_encode(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """Token ids of one pre-token (priority queue + linked list, or a rank scan for short
    pieces; see module docstring).

    >>> ranks = {b"a": 0, b"b": 1, b"ab": 2, b"aba": 3}
    >>> bpe_encode(b"ababa", ranks)
    [2, 3]

    Runtime complexity: ``O(n log n)`` for ``n = len(piece)``; ``O(1)`` dictionary hit when the
    whole piece is a token.
    """
    r = ranks.get(piece)
    if r is not None:
        return [r]
    if len(piece) >= RUN_REPEAT_FROM:
        ids = _run_repeat(piece, ranks)
        if ids is not None:
            return ids
    return _bpe_plain(piece, ranks)


def _bpe_plain(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """:func:`bpe_encode` without the runs' repetition (:func:`_run_repeat`).

    Runtime complexity: ``O(n log n)`` for ``n = len(piece)``.
    """
    r = ranks.get(piece)
    if r is not None:
        return [r]
    n = len(piece)
    if n <= SCAN_MAX:
        return list(scan_ids(piece, ranks.get, ranks.__getitem__))
    if piece.count(piece[n >> 1]) * 4 >= 3 * n:
        # mostly one byte (a ruler line, a run of spaces): the run-aware scan merges its runs
        # in bulk. Up to RUN_SCAN_MAX bytes without a bound; longer pieces get
        # 2 * log2(n) + 8 steps (a run took at most 8 in every shipped vocabulary: section 1
        # of docs/algorithms.md), then the heap: a piece that runs out of steps has cost
        # O(log n) C passes over it, and the heap keeps the O(n log n) bound.
        parts = list(map(_BYTES.__getitem__, piece))
        bound = 0 if n <= RUN_SCAN_MAX else 2 * n.bit_length() + 8
        ids = _scan_ids_runs(parts, ranks.get, ranks.__getitem__, bound)
        if ids is not None:
            return list(ids)
    if n >= GLUE_FROM:
        spans = _glued_split(piece, ranks, GLUE_CHUNK, GLUE_CAP)
        if spans is not None:
            return [ranks[piece[s:e]] for s, e in spans]
    return [ranks[piece[s:e]] for s, e in _heap_split(piece, ranks)]
