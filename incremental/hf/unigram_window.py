"""A long Unigram pre-token re-encoded around an edit, exactly (issue 35): Viterbi over a window
between two *forced cuts*, the old tokens kept on both sides, where a float64 error bound
proves that HuggingFace's ``Unigram::encode`` (``encode_optimized``) picks the same path.

**Forced cuts.** HuggingFace's Viterbi (:mod:`.unigram`) computes ``best[e] = max over the
pieces (s, e) of fl(score + best[s])``, keeping the first candidate on ties. A position ``c``
of a pre-token ``t`` is a *forced cut* when no vocabulary piece of two or more characters
that ``t`` holds starts before ``c`` and ends after it, and the characters on its two sides
do not both lack a one-character piece (else two unknown pieces could meet there and be
fused into one token). Every path then passes through ``c``, and no token spans it:

* the tokens left of a forced cut depend on the text left of it only (``best`` and the
  choices up to ``c`` read nothing after ``c``);
* the tokens right of it depend on the text left of it only through the one float
  ``best[c]``.

**The certificate.** Between two consecutive forced cuts ``c < d`` (a *segment*), run the
Viterbi locally from ``best[c] = 0``. For each choice on the segment's path at ``e`` (the
backtrack from ``d``), let ``m`` be the computed margin (winner minus the best other
candidate) and ``k = e - c``. In exact arithmetic the values from any start ``x`` are ``x``
plus the local ones, so the winners do not depend on ``x``. In float64 every addition errs
by at most ``u |result|`` (``u = 2**-53``), so with ``|best| <= M`` over the whole pre-token
(``M = (n + 2) max|score|``, the unknown score included) a value at ``e`` errs by at most
``k u M`` from the exact continuation of the computed ``best[c]``, a margin by twice that.
If ``m > 4 k u M`` for every choice on the path, HuggingFace's choices from *any* start
value are the local ones: the segment's tokens are the same whatever precedes it. This module
asks ``m > 16 k u M`` (a factor 4 of slack) and keeps as *weak* every segment whose smallest
``m / k`` is below :data:`WEAK_RATIO`, which is above ``16 u M`` for every pre-token it
windows (longer ones are not windowed). Exact ties (runs of one letter, where ``aa a`` and
``a aa`` score the same) have ``m = 0``: weak.

**An edit.** Old pre-token ``t``, new ``t'``, equal but for ``t[p : n - q]``. Let ``c1 <= p``
be a forced cut of both texts, and ``c2 >= n - q`` one of both (``c2 + delta`` in ``t'``).
Then, by the two bullets, ``T(t') = T(t)[: c1] + W + T(t)[c2 :]`` where ``W`` is the
segments' local tokens of ``t'[c1 : c2 + delta]``, provided that no segment of ``W`` and
no segment of ``t`` right of ``c2`` is weak (the suffix's values all changed by the edit;
only a certificate keeps its path).

**Weak segments are replayed** (:meth:`UnigramWindow._replay`). HuggingFace's value at a
point of its path is the path's scores added one by one from 0 (``best[e] = fl(score +
best[s])`` for the chosen piece ``(s, e)``), so summing the new token list's scores in that
order (:meth:`UnigramWindow._fold`, C-speed) gives the exact value at a weak segment's
start; its Viterbi from that value is HuggingFace's own computation there, bit for bit, and
its tokens replace the old ones; the certified segments between keep theirs. Refused (the
whole encode runs) where a token's score is not its piece's for certain: byte fallback, the
unknown piece's own string in the text, a piece that a run of unknown characters could
spell.

**What is kept** (:class:`WindowState`): the pre-token, its tokens, the weak segments and
``known``: segments at or after it have been certified (or listed weak). The first edit of a
pre-token certifies everything right of its window (``O(n)`` Python, once); later edits only
what lies between their window and ``known``.

**Not windowed** (the whole re-encode runs): runs with no forced cut within
:data:`SCAN_MAX` characters of an edit (one letter, digits, DNA letters: XLM-R has pieces
that cover every position), windows longer than :data:`WINDOW_MAX` or half the pre-token
(Rust's whole Viterbi is then faster), pre-tokens too long for
:data:`WEAK_RATIO`, an unknown token on each side of a window's edge, and the replays
refused above.

Runtime complexity: an edit ``O(w L)`` Python for a window of ``w`` characters, plus ``O(n)``
C work (the diff of the two texts, the token index, the lists' copies, a replay's sums); an
edit left of ``known`` also ``O((known - c2) L)`` Python for the certificates (the first
edit of a pre-token: everything right of it).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from functools import reduce
from operator import add
from typing import Callable, Mapping, Sequence

from .precompiled import common_ends

__all__ = ["WindowState", "UnigramWindow", "Scan", "WEAK_RATIO", "SCAN_MAX", "WINDOW_MAX"]

#: a segment whose smallest margin per step is below this is weak (never certified)
WEAK_RATIO = 2.0 ** -16
#: the unit roundoff of float64
_U = 2.0 ** -53
#: the certificate's slack: a margin must exceed ``_SLACK * k * u * M`` (4 is the bound)
_SLACK = 16.0
#: characters searched for a forced cut on each side of an edit
SCAN_MAX = 512
#: the longest window re-encoded here (and at most half the pre-token); longer ones take the
#: whole re-encode
WINDOW_MAX = 8192

#: ``(ids, character counts)`` of a pre-token
Tokens = tuple[list[int], list[int]]
#: the same as the whole encode or a window gives them (lists are changed in place later)
Answer = tuple[Sequence[int], Sequence[int]]
#: the whole re-encode of a pre-token: ``(ids, character counts)``
Whole = Callable[[str], tuple[Sequence[int], Sequence[int]]]


@dataclass(slots=True)
class WindowState:
    """What is kept of the last long pre-token: its text and tokens, and its certificates."""

    text: str
    #: a whole encode's (kept as it came) or a window's (a list, changed in place)
    ids: Sequence[int]
    lens: Sequence[int]
    #: the weak segments ``(start, end)``, sorted, all at or after ``known``
    weak: list[tuple[int, int]] = field(default_factory=list)
    #: the segments at or after this forced cut have been certified or listed in ``weak``
    known: int = -1

    def __post_init__(self) -> None:
        if self.known < 0:
            self.known = len(self.text)


@dataclass(slots=True)
class Scan:
    """The segments of ``text[a:b]`` (:meth:`UnigramWindow.scan`): its pieces (the local
    Viterbi's, unknowns fused) and the weak segments."""

    pieces: list[str]
    weak: list[tuple[int, int]]
    #: the piece strings that are fused unknown runs (their score was per character)
    unknown: list[bool]


def token_index(lens: Sequence[int], c: int, n: int) -> int:
    """The number of tokens (of character counts ``lens``, ``n`` characters in all) that end
    at or before ``c`` when a token boundary is at ``c`` (tokens of 0 characters, a byte
    fallback's continuation bytes, go with the character before), else -1. Walks blocks of
    :data:`_BLOCK` counts summed in C from the nearer end.

    >>> token_index([2, 1, 0, 3], 3, 6), token_index([2, 1, 0, 3], 4, 6)
    (3, -1)

    Runtime complexity: ``O(tokens / B)`` Python steps and ``O(tokens)`` C additions.
    """
    size = len(lens)
    if 2 * c <= n:
        i, pos = 0, 0
        while i < size:
            step = sum(lens[i : i + _BLOCK])
            if pos + step > c:
                break
            i, pos = i + _BLOCK, pos + step
        while i < size and pos + lens[i] <= c:
            pos += lens[i]
            i += 1
        return i if pos == c else -1
    i, pos = size, n  # pos: where token i starts
    while i > 0:
        step = sum(lens[max(0, i - _BLOCK) : i])
        if pos - step < c:
            break
        i, pos = max(0, i - _BLOCK), pos - step
    while i > 0 and pos - lens[i - 1] >= c:
        pos -= lens[i - 1]
        i -= 1
    if pos != c:
        return -1
    while i < size and lens[i] == 0:  # zero-width tokens belong to the character before
        i += 1
    return i


#: counts summed per step by :func:`token_index`
_BLOCK = 4096


class UnigramWindow:
    """The window re-encode of one model's long pre-tokens (module docstring).

    ``pieces_to_tokens`` turns a list of piece strings (unknown runs fused) into ``(ids,
    character counts)`` as :meth:`.unigram.UnigramModel._encode` does.

    Runtime complexity: construction ``O(V)`` for the longest piece.
    """

    def __init__(self, token_to_id: Mapping[str, int], scores: Sequence[float],
                 longest: Mapping[str, int], unk_id: int | None, unk_score: float,
                 unk_piece: str | None, byte_fallback: bool,
                 pieces_to_tokens: Callable[[list[str]], Tokens]) -> None:
        self._get = token_to_id.get
        self._pieces = token_to_id.keys()
        self._items = token_to_id.items()
        self._amb: frozenset[int] | None = None
        self._byte_fallback = byte_fallback
        self._lim2: dict[str, int] | None = None
        self._scores = scores
        self._longest = longest.get
        self._lmax = max(longest.values(), default=1)
        self._unk_id = unk_id
        self._unk_score = unk_score
        self._to_tokens = pieces_to_tokens
        #: a bound on |score| of any edge (the unknown piece's included)
        self._max_abs = max(abs(unk_score), max(map(abs, scores), default=0.0))
        #: the unknown piece's own string (a text may hold it: its id fuses too)
        self._unk_piece = unk_piece
        self.state: WindowState | None = None
        #: what the last :meth:`edit` did: "window", or why the whole re-encode ran
        self.last = ""

    # -- the public steps ------------------------------------------------------------------

    def remember(self, text: str, ids: Sequence[int], lens: Sequence[int]) -> None:
        """Keep ``text``'s tokens (from a whole encode) with nothing certified yet.

        Runtime complexity: ``O(tokens)`` copies.
        """
        self.state = WindowState(text, ids, lens)

    def edit(self, new: str, whole: Whole) -> Answer:
        """The tokens of ``new``, by a window from the kept pre-token when the certificates
        allow it, else by ``whole(new)``; the state then holds ``new``.

        Runtime complexity: module docstring.
        """
        st = self.state
        if st is None:
            return self._restart(new, whole, "no kept pre-token")
        old = st.text
        n, n2 = len(old), len(new)
        if _SLACK * _U * (max(n, n2) + 2) * self._max_abs >= WEAK_RATIO:
            return self._restart(new, whole, "too long for the certificate")
        p, q = common_ends(old, new)
        delta = n2 - n
        c1 = self._cut_left(old, new, p)
        c2 = None if c1 is None else self._cut_right(old, new, n - q, delta)
        if c1 is None or c2 is None:
            return self._restart(new, whole, "no forced cut near the edit")
        if c2 + delta - c1 > min(WINDOW_MAX, n2 // 2):  # (Rust's whole encode is faster)
            return self._restart(new, whole, "window too long")
        try:
            if st.known > c2:
                self._certify(st, c2)
            scan = self.scan(new, c1, c2 + delta)
        except KeyError:  # an unknown character and no unk_id: the whole encode raises
            return self._restart(new, whole, "unknown character")
        i1, i2 = token_index(st.lens, c1, n), token_index(st.lens, c2, n)
        j = bisect_left(st.weak, (c2, -1))
        #: the weak segments from c1 on, in the new text
        weak = scan.weak + [(a + delta, b + delta) for a, b in st.weak[j:]]
        why = ""
        answer: Answer | None = None
        if i1 < 0 or i2 < 0:
            why = "an old token spans a cut (fused unknowns)"
        elif self._fuses(old, c1, c2, scan.unknown):
            why = "unknown tokens meet at the window's edge"
        elif weak:
            w_ids, w_lens = self._to_tokens(scan.pieces)
            answer = self._replay(new, [*st.ids[:i1], *w_ids, *st.ids[i2:]],
                                  [*st.lens[:i1], *w_lens, *st.lens[i2:]], weak)
            why = "weak segment" if answer is None else ""
        else:
            w_ids, w_lens = self._to_tokens(scan.pieces)
            ids = st.ids if isinstance(st.ids, list) else list(st.ids)
            lens = st.lens if isinstance(st.lens, list) else list(st.lens)
            ids[i1:i2] = w_ids
            lens[i1:i2] = w_lens
            answer = ids, lens
        if answer is None:
            answer = whole(new)  # (kept as it came)
        # the certificates: left of c1 kept, the window's, right of c2 shifted
        k = bisect_left(st.weak, (c1, -1))
        st.weak = st.weak[:k] + weak
        st.known = min(st.known, c1)  # (st.known <= c2 after _certify)
        st.text, (st.ids, st.lens) = new, answer
        self.last = why or ("window, weak segments replayed" if weak else "window")
        return answer

    # -- weak segments ---------------------------------------------------------------------

    def _replay(self, t: str, ids: list[int], lens: list[int], weak: list[tuple[int, int]]
                ) -> Tokens | None:
        """``(ids, lens)`` of ``t`` with each weak segment (sorted, from the window on)
        re-encoded from the exact value HuggingFace reaches its start with: the path's
        scores summed from the start as Rust sums them (:meth:`_fold`), the segments between
        being certified. None (the whole re-encode runs) when a token's score is not its
        piece's for certain (byte fallback, the unknown piece's own string in ``t``, a piece
        that a run of unknowns could spell).

        Runtime complexity: ``O(tokens)`` C work, ``O(w L)`` Python for ``w`` weak characters.
        """
        if self._byte_fallback or (self._unk_piece and self._unk_piece in t):
            return None
        n = len(t)
        v: float | None = 0.0
        i = 0  # the token v is the value before
        for a, b in weak:
            ia, ib = token_index(lens, a, n), token_index(lens, b, n)
            if ia < 0 or ib < 0:
                return None
            v = self._fold(ids, lens, i, ia, v)
            if v is None:
                return None
            sc = self.scan(t, a, b, x=v)
            if sc.unknown and (sc.unknown[0] or sc.unknown[-1]):
                return None  # (it could fuse with a neighbour)
            s_ids, s_lens = self._to_tokens(sc.pieces)
            ids[ia:ib] = s_ids
            lens[ia:ib] = s_lens
            i = ia
        return ids, lens

    def _fold(self, ids: list[int], lens: list[int], i: int, j: int, v: float | None
              ) -> float | None:
        """HuggingFace's value after tokens ``i..j-1`` from ``v`` before them: each piece's
        score added to it in turn (``best[e] = fl(score + best[s])`` along the path), an
        unknown run's score once per character; None when a token's score is not certain.

        Runtime complexity: ``O(j - i)`` C work (and a loop per unknown token).
        """
        if v is None:
            return None
        amb = self._ambiguous()
        if amb and not amb.isdisjoint(ids[i:j]):
            return None
        scores, unk, unk_score = self._scores, self._unk_id, self._unk_score
        k = i
        while k < j:
            try:
                u = j if unk is None else ids.index(unk, k, j)
            except ValueError:
                u = j
            if u > k:
                v = reduce(add, map(scores.__getitem__, ids[k:u]), v)
            if u < j:
                for _ in range(lens[u]):
                    v = unk_score + v
            k = u + 1
        return v

    def _ambiguous(self) -> frozenset[int]:
        """The ids of pieces of 2+ characters none of which has a one-character piece: a
        fused run of unknowns with the same string takes that id with another score (built on
        first use; the unknown piece's own id is :meth:`_replay`'s check of the text)."""
        if self._amb is None:
            get = self._get
            self._amb = frozenset(
                i for p, i in self._items
                if len(p) >= 2 and i != self._unk_id and all(get(ch) is None for ch in p))
        return self._amb

    def _longest2(self) -> dict[str, int]:
        """For each two-character start of a piece, the longest piece with it (built on first
        use: a start's look-ups stop there, most starts have none)."""
        table = self._lim2
        if table is None:
            table = {}
            for piece in self._pieces:
                if len(piece) >= 2 and len(piece) > table.get(piece[:2], 0):
                    table[piece[:2]] = len(piece)
            self._lim2 = table
        return table

    # -- forced cuts -----------------------------------------------------------------------

    def is_cut(self, t: str, c: int) -> bool:
        """Whether ``c`` is a forced cut of ``t`` (module docstring); the ends of ``t`` are.

        Runtime complexity: ``O(L^2)`` look-ups for pieces of at most ``L`` characters.
        """
        n = len(t)
        if c <= 0 or c >= n:
            return True
        get, lim2 = self._get, self._longest2().get
        for s in range(c - 1, max(0, c - self._lmax + 1) - 1, -1):
            top = min(lim2(t[s : s + 2], 0), n - s)
            for k in range(c - s + 1, top + 1):
                if get(t[s : s + k]) is not None:
                    return False
        return not (get(t[c - 1]) is None and get(t[c]) is None)

    def _cut_left(self, old: str, new: str, p: int) -> int | None:
        """The last forced cut of both texts at or before ``p`` (they agree before it),
        within :data:`SCAN_MAX` characters."""
        for c in range(p, max(0, p - SCAN_MAX) - 1, -1):
            if self.is_cut(new, c) and self.is_cut(old, c):
                return c
        return None

    def _cut_right(self, old: str, new: str, r: int, delta: int) -> int | None:
        """The first forced cut ``c >= r`` of ``old`` that is one of ``new`` at ``c +
        delta`` (the texts agree from ``r`` on), within :data:`SCAN_MAX` characters."""
        for c in range(r, min(len(old), r + SCAN_MAX) + 1):
            if self.is_cut(old, c) and self.is_cut(new, c + delta):
                return c
        return None

    def _fuses(self, old: str, c1: int, c2: int, unknown: list[bool]) -> bool:
        """Whether the window's first (last) piece is an unknown one and the old path's piece
        that ends at ``c1`` (starts at ``c2``) may be one too: HuggingFace would fuse them
        (the cuts' rule leaves only the unknown piece's own string, when a text holds it)."""
        if self._unk_id is None or not unknown:
            return False
        get, u = self._get, self._unk_piece or ""
        left = c1 > 0 and (get(old[c1 - 1]) is None or u != "" and old.endswith(u, 0, c1))
        right = c2 < len(old) and (get(old[c2]) is None or u != "" and old.startswith(u, c2))
        return (unknown[0] and left) or (unknown[-1] and right)

    # -- the local Viterbi -----------------------------------------------------------------

    def _certify(self, st: WindowState, c: int) -> None:
        """List the weak segments of ``st.text`` in ``[c, st.known)`` (``c`` a forced cut)."""
        scan = self.scan(st.text, c, st.known, pieces=False)
        k = bisect_left(st.weak, (c, -1))
        st.weak[k:k] = scan.weak
        st.known = c

    def scan(self, t: str, a: int, b: int, *, pieces: bool = True, x: float = 0.0) -> Scan:
        """HuggingFace's Viterbi over ``t[a:b]`` (``a`` and ``b`` forced cuts of ``t``),
        restarted from 0 at every forced cut inside, with each segment's certificate: its
        pieces (when ``pieces``) and its weak segments.

        Runtime complexity: ``O((b - a) L)`` Python.
        """
        get, scores = self._get, self._scores
        lim2 = self._longest2().get
        unk_id, unk_score = self._unk_id, self._unk_score
        w = b - a
        neg = float("-inf")
        # subtle: best starts at -inf, so "no path ends here yet" is "cand > best[e]" too
        best = [neg] * (w + 1)
        best[0] = x  # (x != 0 only for one segment: no cut inside resets it)
        second = [neg] * (w + 1)
        start = [0] * (w + 1)
        ids = [0] * (w + 1)
        reach = 0  # the furthest end of a piece of 2+ characters that started so far
        cuts = [0]
        single = True  # whether the previous character has a one-character piece
        i = -1
        for ch in t[a:b]:
            i += 1
            tid = get(ch)
            if reach <= i and i and (single or tid is not None):
                cuts.append(i)
                till = 0.0
            else:
                till = best[i]
            # one candidate per end from each start: the order of a start's candidates
            # does not matter (HuggingFace's is the shortest first, the unknown last)
            e = i + 1
            if tid is not None:
                single = True
                cand = scores[tid] + till
            else:
                single = False
                if unk_id is None:
                    raise KeyError(ch)  # (the caller's whole encode says why)
                tid, cand = unk_id, unk_score + till
            if cand > best[e]:
                second[e] = best[e]
                best[e], start[e], ids[e] = cand, i, tid
            elif cand > second[e]:
                second[e] = cand
            s = a + i
            top = lim2(t[s : s + 2])
            if top:
                if top > w - i:
                    top = w - i
                for k in range(2, top + 1):
                    tid = get(t[s : s + k])
                    if tid is None:
                        continue
                    e = i + k
                    cand = scores[tid] + till
                    if cand > best[e]:
                        second[e] = best[e]
                        best[e], start[e], ids[e] = cand, i, tid
                    elif cand > second[e]:
                        second[e] = cand
                    if e > reach:
                        reach = e
        cuts.append(w)
        weak: list[tuple[int, int]] = []
        out: list[str] = []
        unknown: list[bool] = []
        for j in range(len(cuts) - 1, 0, -1):  # each segment, right to left
            c, d = cuts[j - 1], cuts[j]
            ratio = float("inf")
            e = d
            while e > c:
                m = best[e] - second[e]
                r = m / (e - c)
                if r < ratio:
                    ratio = r
                e = start[e]
            if ratio < WEAK_RATIO:
                weak.append((a + c, a + d))
        weak.reverse()
        if pieces:
            fused: list[str] = []
            e = w
            while e > 0:
                f = start[e]
                if unk_id is not None and ids[e] == unk_id:
                    fused.append(t[a + f : a + e])
                else:
                    if fused:
                        out.append("".join(reversed(fused)))
                        unknown.append(True)
                        fused = []
                    out.append(t[a + f : a + e])
                    unknown.append(False)
                e = f
            if fused:
                out.append("".join(reversed(fused)))
                unknown.append(True)
            out.reverse()
            unknown.reverse()
        return Scan(out, weak, unknown)

    def _restart(self, new: str, whole: Whole, why: str) -> Answer:
        ids, lens = whole(new)
        self.remember(new, ids, lens)
        self.last = why
        return ids, lens
