"""Algorithm 1 of *Formalizing BPE Tokenization* (Berglund & van der Merwe,
``../shared/papers/004_8caaffdf311fc054.txt``, Section 3): glue a re-encoded window to the
old tokens on both sides of it.

**The statement.** Let ``tau = u_1 … u_n`` be the tokenization of a text ``w`` and ``tau' =
u'_1 … u'_m`` that of ``w'``. Algorithm 1 computes the tokenization of ``ww'`` as follows:

1. start with ``i = n`` and ``j = 1``;
2. tokenize the window ``u_i … u_n u'_1 … u'_j`` from scratch, giving ``v_1 … v_k``;
3. if (``v_1 = u_i`` or ``i = 1``) and (``v_k = u'_j`` or ``j = m``), the answer is
   ``u_1 … u_{i-1} v_1 … v_k u'_{j+1} … u'_m``: halt;
4. if ``v_1 != u_i`` and ``i > 1``, widen left (``i <- i - 1``);
5. if ``v_k != u'_j`` and ``j < m``, widen right (``j <- j + 1``); go to step 2.

An edit is the same thing with the edited text in the middle of the window (the recipe after
Theorem 1): ``tau1`` = old tokens wholly left of the edit, ``tau2`` = old tokens wholly right
of it, each a correct tokenization of its own text (Lemma 2 (ii) / Remark 3: a prefix or a
suffix of a tokenization is the tokenization of its text).

**Why it is exact** (Theorem 1, via Corollary 2). If ``T(v) = tau_1 u tau_2`` and ``T(w) =
phi_1 u phi_2`` share a token ``u``, then ``T(tau_1 u phi_2) = tau_1 u phi_2``: the merges of
the two sides can be interleaved, and the shared token keeps one side from disturbing the
other. At the halt, ``u_1 … u_i`` is correct (Remark 3) and so is ``v_1 … v_k`` (it was just
computed); ``u_i = v_1`` glues them (or ``i = 1``: nothing is left of the window), and the
same argument glues the right side at ``v_k = u'_j``. The proof uses *only the halting state*,
so any widening order is correct: :func:`glue` doubles the number of old tokens a failing
side takes (``O(log n)`` re-encodes instead of ``O(n)``), and :func:`glue_one_step` is the
paper's one-token step, kept as the reference for tests and the widening measurement
(:mod:`.analysis.widening`).

The paper proves this for merge-rule dictionaries (SentencePiece semantics, Definition 3; the
HuggingFace semantics too). A tiktoken vocabulary is one: every split ``u ⋄ v`` of a token
``uv`` is a rule of priority ``rank(uv)``, ties resolved leftmost. It does not hold for
WordPiece (``supports_glue`` is False there).

**Its users**, each over its own data (``docs/algorithms.md`` section 3):

* ``Document._glue_piece`` — an edit inside one long piece (old tokens of the sequence);
* ``count_range`` (:mod:`.range_count`) — a range that cuts a long piece, one side per cut;
* ``bpe._glued_split`` — a long piece split chunk by chunk, glued at each seam (an empty edit,
  with a cap and a give-up result);
* :func:`.analysis.widening.glue_edit` — the widening measurement, by :func:`glue_one_step`.

Tokens are compared as the caller gives them (an id, or a ``(start, end)`` span): a window
token equal to an old one that starts (ends) at the same place is the same token.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Callable, Generic, Iterator, List, Optional, Sequence, Tuple, TypeVar

__all__ = ["Glued", "glue", "glue_one_step", "glue_chunks", "glue_seam", "GLUE_MIN_CP"]

#: pieces of at least this many code points are updated by :func:`glue` in a document (and
#: counted by it in a range); shorter ones are encoded whole
GLUE_MIN_CP = 48

#: a token as the caller compares it (a token id, or a ``(start, end)`` span)
T = TypeVar("T")

#: an old token where a window may start (left side) or end (right side):
#: ``(key, position, token)``; ``key`` is the caller's (a token index), ``position`` the
#: window's edge there (the token's start on the left, its end on the right)
Candidate = Tuple[int, int, T]

#: ``encode(ws, we)``: the tokens of the window ``[ws, we)``, computed from scratch
Encode = Callable[[int, int], Sequence[T]]


@dataclass(slots=True)
class Glued(Generic[T]):
    """The halting state of Algorithm 1: the result is the old tokens before ``left``, then
    ``tokens``, then the old tokens after ``right``."""

    left: Optional[int]  #: key of ``u_i``, the window's first old token (None: it starts at ``lo``)
    start: int  #: where the window starts
    tokens: Sequence[T]  #: ``v_1 … v_k``, the window's tokens
    right: Optional[int]  #: key of ``u'_j``, the window's last old token (None: it ends at ``hi``)
    end: int  #: where the window ends
    widenings: int  #: failed windows before this one (steps 4-5 taken)


def _fill(lst: List[Candidate[T]], it: Iterator[Candidate[T]], k: int) -> bool:
    """Pull from ``it`` until ``lst`` has ``k`` items; False if it ran out first (one C
    call: a side that widens over thousands of old tokens pulls them in bulk)."""
    if len(lst) < k:
        lst.extend(islice(it, k - len(lst)))
    return len(lst) >= k


def _double(lst: List[Candidate[T]], it: Iterator[Candidate[T]], n: int) -> int:
    """Steps 4-5 by doubling: twice the candidates used; all that are left when fewer than
    that remain; 0 once none are left (the window reaches the boundary: ``i = 1`` / ``j = m``)."""
    if _fill(lst, it, 2 * n):
        return 2 * n
    return len(lst) if len(lst) > n else 0


def _one_more(lst: List[Candidate[T]], it: Iterator[Candidate[T]], n: int) -> int:
    """Steps 4-5 as the paper writes them: one more candidate; 0 once none is left."""
    return n + 1 if _fill(lst, it, n + 1) else 0


def _run(
    encode: Encode[T],
    left: Iterator[Candidate[T]],
    right: Iterator[Candidate[T]],
    lo: int,
    hi: int,
    hi_final: bool,
    cap: int | None,
    widen: Callable[[List[Candidate[T]], Iterator[Candidate[T]], int], int],
) -> Glued[T] | None:
    """Algorithm 1 with the widening rule ``widen(candidates, rest, used) -> used``."""
    lc: List[Candidate[T]] = []
    rc: List[Candidate[T]] = []
    nl = 1 if _fill(lc, left, 1) else 0
    nr = 1 if _fill(rc, right, 1) else 0
    widenings = 0
    while True:
        lkey, ws, ltok = lc[nl - 1] if nl else (None, lo, None)
        rkey, we, rtok = rc[nr - 1] if nr else (None, hi, None)
        v = encode(ws, we)  # step 2
        # step 3: each edge agrees, or is the text's own edge
        left_ok = ws == lo or (nl > 0 and len(v) > 0 and v[0] == ltok)
        right_ok = (we == hi and hi_final) or (nr > 0 and len(v) > 0 and v[-1] == rtok)
        if left_ok and right_ok:
            return Glued(lkey, ws, v, rkey, we, widenings)
        if cap is not None and (nl > cap or nr > cap):
            return None
        widenings += 1
        if not left_ok:  # step 4
            nl = widen(lc, left, nl)
        if not right_ok:  # step 5
            nr = widen(rc, right, nr)
            if nr == 0 and not hi_final:
                return None


def glue(
    encode: Encode[T],
    left: Iterator[Candidate[T]],
    right: Iterator[Candidate[T]],
    lo: int,
    hi: int,
    *,
    hi_final: bool = True,
    cap: int | None = None,
) -> Glued[T] | None:
    """Algorithm 1, widening by doubling: re-encode windows until both edges agree.

    ``left`` yields the old tokens of ``tau1`` nearest the edit first, ``(key, start, token)``;
    ``right`` those of ``tau2``, ``(key, end, token)``, in the window's coordinates (callers
    yield only tokens that may bound a window, e.g. on a character boundary). When a side runs
    out, its window edge is ``lo`` (``hi``), the start (end) of the text being tokenized,
    where the edge always agrees (the paper's ``i = 1`` / ``j = m``). With ``hi_final=False``
    ``hi`` is not the text's end (a chunk seam): reaching it without agreement gives up.
    ``cap``: give up once a side of a failed window took more than ``cap`` old tokens. Giving
    up returns None (the caller encodes the whole text instead).

    >>> ranks = {b"a": 0, b"b": 1, b"ab": 2, b"ba": 3}
    >>> from livetok.incremental.bytelevel._reference import bpe_encode_naive
    >>> text = b"abab" + b"a"          # old text "abab" = ab|ab, then "a" appended
    >>> old = [(0, 0, 2), (1, 2, 2)]  # (index, start, id) of the old tokens, in text order
    >>> g = glue(lambda s, e: bpe_encode_naive(text[s:e], ranks), iter(old[::-1]), iter(()), 0, 5)
    >>> g.left, list(g.tokens), g.widenings
    (1, [2, 0], 0)

    Runtime complexity: ``O(log k)`` re-encodes of windows up to twice the ``k`` old tokens
    the agreeing window needs on each side.
    """
    return _run(encode, left, right, lo, hi, hi_final, cap, _double)


def glue_one_step(
    encode: Encode[T],
    left: Sequence[Candidate[T]],
    right: Sequence[Candidate[T]],
    lo: int,
    hi: int,
) -> Glued[T]:
    """Algorithm 1 exactly as the paper writes it: a failing side takes one more old token.

    The reference form of :func:`glue` (same arguments, as sequences; no cap): tests compare
    the two, and :mod:`.analysis.widening` counts its steps.

    >>> ranks = {b"a": 0, b"b": 1, b"ab": 2, b"ba": 3}
    >>> from livetok.incremental.bytelevel._reference import bpe_encode_naive
    >>> text = b"b" + b"abab"          # "b" prepended to ab|ab: b|ab|ab
    >>> right = [(0, 3, 2), (1, 5, 2)]  # (index, end, id), nearest the edit first
    >>> g = glue_one_step(lambda s, e: bpe_encode_naive(text[s:e], ranks), [], right, 0, 5)
    >>> g.right, list(g.tokens), g.widenings
    (0, [1, 2], 0)

    Runtime complexity: ``O(k)`` re-encodes for ``k`` old tokens taken on the wider side.
    """
    g = _run(encode, iter(left), iter(right), lo, hi, True, None, _one_more)
    assert g is not None  # (no cap, final edges: a side that runs out agrees)
    return g


#: a token of :func:`glue_chunks`: its ``[0]`` is its start, its ``[1]`` its end
S = TypeVar("S", bound=Tuple[int, ...])


def glue_chunks(encode: Callable[[int, int], List[S]], n: int, size: int, cap: int
                ) -> Optional[List[S]]:
    """The tokens of a long piece ``[0, n)``, chunk by chunk: ``encode(ws, we)`` tokenizes
    ``[ws, we)`` alone (tokens are tuples ``(start, end, ...)`` in piece positions, compared
    as they are), every ``size`` positions, and neighbouring chunks are glued at each seam by
    :func:`glue` (Algorithm 1, the edit being empty): the tokens so far (correct up to the
    seam, by induction) are ``tau1``, the next chunk's ``tau2``. The seam's window may reach
    the piece's start but not pass the chunk's end unless that is the piece's end.

    None when a side needs more than ``cap`` tokens or would pass the chunk's end (seams that
    never agree, as in a run whose tokens shift to its end): the caller encodes the whole
    piece instead. The users: the byte-level family's long pieces (``bytelevel/bpe.py``) and
    the pair-rule engine's (:mod:`.pairmerge`).

    Runtime complexity: ``O(n log size)`` encode work when each seam glues within a few
    tokens; ``O(n * cap)`` more at most before giving up.
    """
    out = encode(0, min(size, n))
    pos = min(size, n)
    while pos < n:
        end = min(n, pos + size)
        right = encode(pos, end)
        g = glue(encode,
                 ((k, out[k][0], out[k]) for k in range(len(out) - 1, -1, -1)),
                 ((k, t[1], t) for k, t in enumerate(right)),
                 0, end, hi_final=end == n, cap=cap)
        if g is None:
            return None
        del out[g.left or 0:]
        out += g.tokens
        if g.right is not None:
            out += right[g.right + 1:]
        pos = end
    return out


def glue_seam(encode: Encode[int], length: Callable[[int], int], out: List[int], x: int,
              seg: List[int], y: int, cap: int) -> Optional[List[int]]:
    """``T(text[:y])`` from ``out = T(text[:x])`` and ``seg = T(text[x:y])`` by Algorithm 1
    (:func:`glue`, the edit being empty at ``x``; ``encode(ws, we)`` tokenizes
    ``text[ws:we]``, ``length(id)`` is a token's length in the text's units); None when a side
    needs more than ``cap`` tokens. What the run repetitions glue their parts with
    (``bytelevel/bpe._run_repeat``, ``pairmerge.merge_repeat``).

    Runtime complexity: ``O(len(out) + len(seg))`` list copies plus the seam's windows.
    """

    def left() -> Iterator[Candidate[int]]:
        pos = x
        for k in range(len(out) - 1, -1, -1):
            pos -= length(out[k])
            yield k, pos, out[k]

    def right() -> Iterator[Candidate[int]]:
        pos = x
        for k, t in enumerate(seg):
            pos += length(t)
            yield k, pos, t

    g = glue(encode, left(), right(), 0, y, cap=cap)
    if g is None:
        return None
    got = out[: g.left] if g.left is not None else []
    got += g.tokens
    if g.right is not None:
        got += seg[g.right + 1 :]
    return got
