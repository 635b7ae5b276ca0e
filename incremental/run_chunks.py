"""A long run of one character at the start of a piece, cut into the chunks its tokenization
repeats, without merging it: Algorithm 1 with a window of two chunks (Gemma 3's spaces, a
line of one letter under Gemma 3 or Llama 2).

A run that the merges build in many rounds costs the merge loop every round: Gemma 3 merges
``▁ ▁`` last of its 465 whitespace rules and ``▁^j ▁`` before it, so the first ``▁▁`` grows
to ``▁^31`` one symbol at a time (:func:`~.pairmerge.merge_runs` cannot take such a run in
bulk: each merge creates a pair ranking before the next), and a line of 25,000 spaces took
the priority queue over 25,000 symbols on every keystroke.

**Statement.** Let ``T`` be the tokenization (Definition 3 of *Formalizing BPE Tokenization*,
Berglund & van der Merwe, ``../shared/papers/004``) and ``c^L`` a run whose tokenization is
one token ``t`` while that of ``c^2L`` is ``t t``. Then for every text ``y`` whose
tokenization begins with ``t``, ``T(c^L y) = t T(y)``.

**Proof.** Algorithm 1 (the paper's Section 3, :mod:`.glue`) on ``w = c^L`` and ``w' = y``:
``T(w) = t`` is one token, so the window's left edge is the text's start (``i = 1``); the first
window is ``u_1 u'_1 = c^L c^L``, whose tokenization ``t t`` ends with ``u'_1 = t``; so it halts
there, and Theorem 1 gives ``T(w w') = t u'_2 ... u'_m = t T(y)``.

**Use.** For ``s = c^r w`` (``c`` not opening ``w``) the engine encodes the tail ``c^q w``,
``q = r - kL`` in ``[2L, 3L)``, and when its first token is ``t`` the statement, applied ``k``
times (each step's result begins with ``t`` again), gives ``T(s) = t^k T(c^q w)``. A run that
starts a few characters in (``s = p c^r w``: a window opening with a letter typed into a
line of ``a``, Llama 2's ``▁`` before a run) is glued to its head by Algorithm 1 once more:
the tokenization of ``p c^3L`` up to its last token ``t`` is that of its text ``h`` (a prefix
of a tokenization is the tokenization of its text, the paper's Remark 3), and the window
``t t`` tokenizes as ``t t``, so ``T(s) = T(h) t^k T(c^q w)`` for ``s = h c^(kL) c^q w``. When a check fails (a
tail the text after the run reached into, a head that joins the run), the caller merges
``s`` as a whole. The text after a run is cut the same way when another run starts near its
start (a letter typed into a line of one letter), each derived tokenization's first token
checked to be the chunk before it in the same way. ``t`` and ``L`` are the first token of ``T(c^256)`` and its length, kept when the two conditions
hold (checked by the merge loop itself, once per character). Theorem 1 holds for any
merge-rule dictionary, the condition of every glue in the engine; the caller applies this
where the merge loop is Definition 3 (:attr:`.hf.bpe.BPEModel.scan_exact`).
``tests/unit/test_run_chunks.py`` compares it with the obvious loop on random tables and with
HuggingFace ``tokenizers`` on Gemma 3's and Llama 2's runs.
"""

from __future__ import annotations

import re
from itertools import repeat
from typing import Callable

__all__ = ["RunChunks", "PEEL_FROM", "PROBE", "HEAD_MAX"]

#: strings shorter than this are merged as they are (the shortcut saves nothing there)
PEEL_FROM = 64
#: the run whose first token is taken as the chunk
PROBE = 256
#: a run may start this many characters into the string (after a letter, a ``▁``)
HEAD_MAX = 128
#: at most this many runs are cut in one string (the rest is merged as it is)
DEPTH_MAX = 256

#: ``merged(s, lens)``: the ids of ``s`` by the merge loop, the tokens' character counts
#: appended to ``lens`` when it is a list
Merged = Callable[[str, "list[int] | None"], "list[int]"]


class RunChunks:
    """The chunks (module docstring) of a merge loop ``merged``, found per character on first
    use.

    >>> from livetok.incremental.pairmerge import merge
    >>> ids = {"a": 0, "aa": 1, "aaaa": 2, "b": 3, "ab": 4}
    >>> rules = {0 * 5 + 0: 0 * 5 + 1, 1 * 5 + 1: 1 * 5 + 2, 0 * 5 + 3: 2 * 5 + 4}
    >>> def merged(s, lens):
    ...     sym, own = [ids[ch] for ch in s], [1] * len(s)
    ...     merge(sym, rules, 5, own)
    ...     if lens is not None:
    ...         lens += own
    ...     return sym
    >>> rc = RunChunks(merged)
    >>> rc.chunk("a"), rc.encode("a" * 67 + "b", None) == merged("a" * 67 + "b", None)
    ((4, 2), True)
    """

    def __init__(self, merged: Merged) -> None:
        self._merged = merged
        #: character -> (L, t), or None where its runs have no such chunk
        self._chunks: dict[str, tuple[int, int] | None] = {}
        #: tails whose first token was not the chunk (the caller merged the whole string)
        self.misses = 0
        #: character -> the regex of its runs (measured in C, no copy)
        self._runs: dict[str, re.Pattern[str]] = {}

    def chunk(self, ch: str) -> tuple[int, int] | None:
        """``(L, t)`` for runs of ``ch``: ``T(ch^L) = t`` and ``T(ch^2L) = t t``, ``t`` the
        first token of ``T(ch^256)``; None when that token is one character or the conditions
        fail.

        Runtime complexity: three merges of at most 256 characters the first time per
        character, then a dictionary hit.
        """
        got = self._chunks.get(ch, ())
        if got != ():
            return got  # type: ignore[return-value]
        lens: list[int] = []
        ids = self._merged(ch * PROBE, lens)
        found: tuple[int, int] | None = None
        if ids and 2 <= lens[0] <= PROBE // 2:
            size, t = lens[0], ids[0]
            if self._merged(ch * size, None) == [t] and self._merged(ch * 2 * size, None) == [t, t]:
                found = (size, t)
        self._chunks[ch] = found
        return found

    def _run_in_head(self, s: str) -> tuple[int, str, int, int, int] | None:
        """``(j, c, L, t, r)``: the first run of ``r`` characters ``c`` starting at ``j <
        HEAD_MAX`` whose chunk is ``(L, t)``, at least ``3L`` long at the start, ``6L`` after
        a head (shorter runs are skipped), or None.

        Runtime complexity: ``O(HEAD_MAX)`` plus ``O(r)`` C work per run measured.
        """
        limit = min(HEAD_MAX, len(s) - 2)
        i = 0
        while i < limit:
            ch = s[i]
            if s[i + 1] != ch or s[i + 2] != ch:
                i += 1
                continue
            rx = self._runs.get(ch)
            if rx is None:
                rx = self._runs[ch] = re.compile(re.escape(ch) + "+")
            r = rx.match(s, i).end() - i  # type: ignore[union-attr]
            got = self.chunk(ch)
            if got is not None and r >= (6 if i else 3) * got[0]:
                return i, ch, got[0], got[1], r
            i += r
        return None

    def encode(self, s: str, lens: list[int] | None) -> list[int] | None:
        """The ids of ``s`` (its tokens' character counts appended to ``lens`` when given) as
        a short head's merge, ``k`` chunks and the tail's merge (module docstring), or None
        when ``s`` has no run to cut in its first :data:`HEAD_MAX` characters (or is shorter
        than :data:`PEEL_FROM`, or the run has no chunk or is too short: three chunks at the
        start, six after a head) or a check fails (``lens`` then untouched).

        The text after the run is cut the same way when a run starts near its start (a letter
        typed into a line of one letter: runs one after the other), up to :data:`DEPTH_MAX`
        runs.

        Runtime complexity: ``O(n)`` C work per run cut (the run measured, the rest copied),
        plus the merges of each head (up to ``HEAD_MAX + 3L`` characters) and of the last
        tail (``3L`` characters and the text after the last run cut).
        """
        return self._encode(s, lens, 0)

    def _encode(self, s: str, lens: list[int] | None, depth: int) -> list[int] | None:
        if len(s) < PEEL_FROM or depth > DEPTH_MAX:
            return None
        found = self._run_in_head(s)
        if found is None:
            return None
        j, ch, size, t, r = found
        head: list[int] = []
        head_lens: list[int] = []
        m = 0  # the head is s[:m]
        if j:
            # the head's tokenization up to its last chunk t (a prefix of a tokenization is
            # that of its text, Remark 3); Algorithm 1 then halts at the window t t
            head = self._merged(s[:j + 3 * size], head_lens)
            if t not in head:
                self.misses += 1
                return None
            i = len(head) - 1 - head[::-1].index(t)
            del head[i + 1:], head_lens[i + 1:]
            m = sum(head_lens)
        k = (r - (m - j) - 2 * size) // size
        if k <= 0:
            return None
        own: list[int] | None = None if lens is None else []
        rest = s[m + k * size:]
        tail = self._encode(rest, own, depth + 1)  # (a run further on: a letter typed in)
        if tail is None:
            tail = self._merged(rest, own)
        if not tail or tail[0] != t:
            self.misses += 1
            return None
        if lens is not None and own is not None:
            lens += head_lens
            lens += repeat(size, k)
            lens += own
        return head + [t] * k + tail
