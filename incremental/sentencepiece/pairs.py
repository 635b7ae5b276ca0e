"""SentencePiece BPE compiled to the pair engine (:mod:`..pairmerge`): one merge loop for every
merge-rule family.

SentencePiece merges the adjacent pair whose concatenation is the formable piece of highest
score, leftmost on ties (``bpe::Model::Encode``; Definition 3 of *Formalizing BPE
Tokenization*, Berglund & van der Merwe, ``shared/papers/004``, with the priority of a rule
``u ⋄ v`` being the score of ``uv``). When the multi-character pieces have distinct scores this
is exactly the pair engine's order: every split ``u ⋄ v`` of a piece ``p`` (``u`` and ``v``
each a single character or a formable piece, the only symbols SentencePiece ever holds) is a
rule ``a * M + b -> rank(p) * M + id(p)``, ``rank`` the position of ``p`` in the order of
decreasing score; the splits of one piece share one value, so the engine takes the leftmost
of them, as SentencePiece does. Characters that are no formable piece get symbol ids above the
vocabulary (one per character some piece holds; one shared id for all others, which no rule
joins).

**Equal scores** (the tie rank). SentencePiece takes the leftmost pair among *all* pieces of
one score, which no strict order reproduces in general. One shape of tie is compiled exactly
(Mistral's 14 whitespace pieces ``▁▁`` ... ``▁¹⁶``, all scoring ``-1e9``): one group of tied
pieces that are all runs ``c^k`` of one character ``c``, scoring below every other
multi-character piece, where no other piece holds ``cc``. Then (i) no group piece forms before
every other rule is spent (lowest score), (ii) a group merge creates a run ``c^k`` (``k >= 2``)
that no other rule can join (no other piece holds ``cc``) and only uses up single ``c``s, so it
enables nothing, and (iii) the group rules act inside each maximal run of single ``c`` symbols
alone (the leftmost order restricted to one run is that run's own). So the encoding is the
pair engine over the other rules, followed by the group's own leftmost process on each run,
which depends on the run's length ``r`` only: :func:`_run_chunks` simulates it once per model
up to the point where its first symbol ``c^L`` is *inert* (``L + j`` is no group length for any
length ``j`` a run symbol can have: nothing will ever join it; Mistral: ``L = 16``) with only
single ``c`` to its right, having touched at most ``W - L - 2`` characters. The process up to
there is the same for every longer run (the leftmost applicable pair never lies beyond the
first two single ``c`` of the tail, as ``c c`` is a group piece: otherwise the simulation
fails), and after it the rest is the process on ``c^(r - L)`` (the inert symbol takes part in
no pair), so the chunks of ``r >= W`` are ``[L]`` and those of ``r - L``. Any other tie, or an
UNUSED piece (re-split by ``resegment``), leaves the model on the priority queue of
:func:`.bpe.sp_bpe`.

``tests/unit/test_sentencepiece_pairs.py`` compares :meth:`SentencePiecePairs.spans` with
:func:`.bpe.sp_bpe` and ``sentencepiece`` (Mistral's runs of spaces, random tied groups).
"""

from __future__ import annotations

import re
from itertools import accumulate, repeat
from typing import Mapping, Sequence

from ..pairmerge import merge
from ..run_chunks import RunChunks

__all__ = ["SentencePiecePairs"]

#: runs of symbols flagged 1 in a byte mask
_RUNS = re.compile(b"\x01+")
#: how far past the longest group piece the run simulation goes
_RUN_SIM = 4


def _inert(length: int, sizes: frozenset[int]) -> bool:
    """Whether a run symbol of ``length`` can never be joined with a symbol to its right
    (every run symbol's length is 1 or a group size)."""
    return not any(length + j in sizes for j in sizes | {1})


def _leftmost_run(r: int, sizes: frozenset[int]) -> tuple[list[int], int]:
    """The tied group's leftmost process on ``r`` single symbols (lengths), and the furthest
    character it touched before its first symbol became inert (:func:`_inert`) with only
    single symbols to its right (``r`` if that never happened).

    Runtime complexity: ``O(r^2)`` (``r`` is a few times the longest group piece).
    """
    syms = [1] * r
    touched = 0
    done_at = r
    while True:
        at = 0
        for i in range(len(syms) - 1):
            if syms[i] + syms[i + 1] in sizes:
                break
            at += syms[i]
        else:
            return syms, done_at
        syms[i] += syms.pop(i + 1)
        touched = max(touched, at + syms[i])
        if done_at == r and _inert(syms[0], sizes) and all(x == 1 for x in syms[1:]):
            done_at = touched


def _run_chunks(sizes: frozenset[int]) -> tuple[list[tuple[int, ...]], int, int] | None:
    """``(chunks of runs shorter than W, W, L)`` for the group's run lengths ``sizes``, ``L``
    the first chunk of every run of ``W`` or more (module docstring), or None when the
    simulation does not show the recurrence."""
    r = _RUN_SIM * max(sizes) + 4
    syms, touched = _leftmost_run(r, sizes)
    if touched + 2 > r:
        return None
    first = syms[0]
    w = touched + 2 + first
    table = [tuple(_leftmost_run(x, sizes)[0]) for x in range(w)]
    return table, w, first


class SentencePiecePairs:
    """A SentencePiece BPE vocabulary as a pair-rule table (module docstring); build it with
    :meth:`compile`.

    >>> ids = {"a": 0, "b": 1, "ab": 2, "ba": 3}
    >>> p = SentencePiecePairs.compile(ids, [0.0, 0.0, -2.0, -1.0], frozenset())
    >>> p.spans("aba")                           # "ab" scores 2, "ba" 1: "ab" first
    [(0, 2), (2, 3)]
    """

    def __init__(self, rules: dict[int, int], m: int, n_vocab: int, sym: dict[str, int],
                 other: int, run: tuple[int, int, list[tuple[int, ...]], int] | None,
                 run_ids: dict[int, int]) -> None:
        self.rules = rules
        self.m = m
        #: ids from this one on are characters that are no formable piece
        self.n_vocab = n_vocab
        self._sym = sym
        self._other = other
        #: the tied run group: (symbol id of c, L, chunks of runs shorter than W, W)
        self._run = run
        #: the id of the group piece c^k, by k
        self._run_ids = run_ids
        #: long runs of one character cut into the chunks they repeat (:mod:`..run_chunks`)
        self._runs = RunChunks(self._merged)

    @classmethod
    def compile(cls, piece_ids: Mapping[str, int], neg_scores: Sequence[float],
                unused: frozenset[int]) -> SentencePiecePairs | None:
        """The table of the formable pieces ``piece_ids`` (``neg_scores[id]`` is minus the
        score), or None when ties or UNUSED pieces keep the model on the priority queue.

        Runtime complexity: ``O(total length of the pieces)``.
        """
        if unused:
            return None
        multi = [(p, i) for p, i in piece_ids.items() if len(p) >= 2]
        by_score: dict[float, list[str]] = {}
        for p, i in multi:
            by_score.setdefault(neg_scores[i], []).append(p)
        tied = [(s, ps) for s, ps in by_score.items() if len(ps) > 1]
        group: set[str] = set()
        run_char = ""
        if tied:
            if len(tied) > 1:
                return None
            score, ps = tied[0]
            c = ps[0][0]
            if c + c not in ps or any(p != c * len(p) for p in ps) or score <= max(
                    (s for s in by_score if s != score), default=score - 1):
                return None  # (neg scores: the group must hold the largest, i.e. lowest score)
            group = set(ps)
            if any(c + c in p for p, _ in multi if p not in group):
                return None
            run_char = c
        ranked = sorted((neg_scores[i], p) for p, i in multi if p not in group)
        n_vocab = max(piece_ids.values(), default=-1) + 1
        sym: dict[str, int] = {}
        nxt = n_vocab
        for _, p in ranked:
            for ch in p:
                if ch not in sym:
                    got = piece_ids.get(ch)
                    if got is None:
                        got, nxt = nxt, nxt + 1
                    sym[ch] = got
        if run_char and run_char not in sym:
            got = piece_ids.get(run_char)
            if got is None:
                got, nxt = nxt, nxt + 1
            sym[run_char] = got
        for ch, i in piece_ids.items():
            if len(ch) == 1:
                sym.setdefault(ch, i)
        other = nxt
        m = other + 1
        rules: dict[int, int] = {}
        for rank, (_, p) in enumerate(ranked):
            val = rank * m + piece_ids[p]
            for k in range(1, len(p)):
                u, v = p[:k], p[k:]
                a = sym.get(u) if len(u) == 1 else piece_ids.get(u)
                b = sym.get(v) if len(v) == 1 else piece_ids.get(v)
                if a is not None and b is not None:
                    rules[a * m + b] = val
        run = None
        run_ids: dict[int, int] = {}
        if run_char:
            run_ids = {len(p): piece_ids[p] for p in group}
            run_ids[1] = sym[run_char]
            sizes = frozenset(len(p) for p in group) | {1}
            got_chunks = _run_chunks(frozenset(sizes))
            if got_chunks is None:
                return None
            table, w, first = got_chunks
            run = (sym[run_char], first, table, w)
        return cls(rules, m, n_vocab, sym, other, run, run_ids)

    def _chunks(self, r: int) -> tuple[int, ...]:
        """The group's chunks of a run of ``r`` single ``c`` (module docstring)."""
        assert self._run is not None
        _, k, table, w = self._run
        if r < w:
            return table[r]
        q = (r - w) // k + 1
        return (k,) * q + table[r - q * k]

    def symbols(self, s: str) -> tuple[list[int], list[int]]:
        """The final BPE symbols of ``s`` as ``(ids, lengths)``: a formable piece's id, or an
        id of :attr:`n_vocab` or above for a character that is no formable piece (unknown).
        A long opening run of one character is cut into chunks (:mod:`..run_chunks`).

        Runtime complexity: the pair engine's (:func:`..pairmerge.merge`: ``O(n log n)``,
        ``O(n log n)`` C work for a run), plus ``O(n)`` C work for the tied runs.
        """
        lens: list[int] = []
        got = self._runs.encode(s, lens)
        return (got, lens) if got is not None else self._symbols(s)

    def _merged(self, s: str, lens: list[int] | None) -> list[int]:
        ids, own = self._symbols(s)
        if lens is not None:
            lens += own
        return ids

    def _symbols(self, s: str) -> tuple[list[int], list[int]]:
        n = len(s)
        ids = list(map(self._sym.get, s, repeat(self._other)))
        lens = [1] * n
        if n > 1:
            merge(ids, self.rules, self.m, lens)
        if self._run is not None:
            cid = self._run[0]
            if cid in ids:
                # the runs of single c, found in C: a byte per symbol, 1 where it is c
                mask = bytes(map(cid.__eq__, ids))
                out_ids: list[int] = []
                out: list[int] = []
                at = 0
                run_ids = self._run_ids
                for m in _RUNS.finditer(mask):
                    a, b = m.span()
                    out_ids += ids[at:a]
                    out += lens[at:a]
                    if b - a == 1:
                        out_ids.append(cid)
                        out.append(1)
                    else:
                        chunks = self._chunks(b - a)
                        out_ids += map(run_ids.__getitem__, chunks)
                        out += chunks
                    at = b
                out_ids += ids[at:]
                out += lens[at:]
                ids, lens = out_ids, out
        return ids, lens

    def spans(self, s: str) -> list[tuple[int, int]]:
        """Code-point spans ``(start, end)`` of the final BPE symbols of ``s``: those of
        :func:`.bpe.sp_bpe`.

        Runtime complexity: as :meth:`symbols`.
        """
        ends = list(accumulate(self.symbols(s)[1], initial=0))
        return list(zip(ends, ends[1:]))
