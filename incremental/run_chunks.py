"""A run of one character at the start of a piece, cut into chunks without merging it: the
pair engine's shortcut for runs that grow one symbol at a time (Gemma 3's spaces).

Under a pair-rule table (:mod:`.pairmerge`; Definition 3 of *Formalizing BPE Tokenization*,
Berglund & van der Merwe, ``../shared/papers/004``: the lowest rule among adjacent pairs, at
its leftmost place, then look again) a run of one symbol ``c`` can grow *from the left*: Gemma
3 merges ``▁ ▁`` last of all its 465 whitespace rules, and ``▁^j ▁`` (``j`` from 2 to 30)
each before it, so the first ``▁▁`` grows to ``▁^31`` one symbol at a time, that token takes
part in no rule, and the next ``▁▁`` starts after it. :func:`~.pairmerge.merge_runs` cannot
take such a run in bulk (each merge creates a pair that ranks before the next one), so before
this module a line of 25,000 spaces took the priority queue over 25,000 symbols on every
keystroke.

**The chain** of ``c`` (:meth:`RunChunks.chain`): ``T_1 = c``, ``T_(j+1)`` the token of the
rule ``(T_j, c)``, as long as there is one, up to ``T_L``. It *applies* when (a) the rule
``(c, c)`` exists, (b) every rule ``(T_j, c)`` for ``2 <= j < L`` ranks before ``(c, c)``
(a lower value), and (c) ``T_L`` is the left operand of no rule.

**Statement.** If the chain applies and a string is ``c^r w``, nothing before it, with
``r >= L + 1`` (``w`` any text), its tokenization is ``T_L`` followed by the tokenization of
``c^(r - L) w``. So ``c^r w`` is ``k = (r - 1) // L`` tokens ``T_L``, then the tokenization of
``c^(r - kL) w`` (``1 <= r - kL <= L``).

**Proof.** Call positions ``0 .. L - 1`` the head and the rest the tail. (1) Until the first
``(c, c)`` merge anywhere, no merge touches positions ``0 .. L``: a pair inside the run is
``(c, c)``, and only the run's last ``c`` (position ``r - 1 >= L``) has a neighbour that is no
single ``c``; there is none to the left. So the first ``(c, c)`` merge, the leftmost one, is
at position 0, at the first moment when no rule ranking before ``(c, c)`` applies anywhere:
then none applies in the tail. (2) From then on the head's first symbol is ``T_j`` followed
by single ``c`` (position ``j <= L - 1 < r - 1``); the rule ``(T_j, c)`` ranks before
``(c, c)`` by (b), so it is applied before any other ``(c, c)`` merge, and nothing applies in
the unchanged tail meanwhile (nothing ranking before ``(c, c)`` applied there at the start of
this phase); after ``L - 1`` merges the head is ``T_L``. (3) ``T_L`` is the left operand of
no rule (c) and has nothing to its left, so it takes part in no later merge, and the tail,
in the state of (1)'s end, goes on with the lowest rule among its own pairs at each step: the
same merges, in the same order, as the tokenization of the tail alone (which reaches the
same state at the same point, as it also merges no ``(c, c)`` before nothing else ranking
before it applies). By induction on ``r``, the ``k`` chunks.

The engine applies it where a piece is merged from scratch with Definition 3 (a
``tokenizer.json`` BPE whose scan is exact, :attr:`.hf.bpe.BPEModel.scan_exact`): Algorithm 1's
windows start at their own text's start, so a window inside a line of spaces is chunked too.
``tests/unit/test_run_chunks.py`` checks the statement against the merge loop on random
tables and against HuggingFace ``tokenizers`` on Gemma 3's runs.
"""

from __future__ import annotations

from typing import Callable, Mapping

__all__ = ["RunChunks", "CHAIN_MAX"]

#: the longest chain followed (a longer one is not used)
CHAIN_MAX = 4096
#: strings shorter than this are merged as they are (the shortcut saves nothing there)
PEEL_FROM = 64


class RunChunks:
    """The chains (module docstring) of a pair-rule table ``rules`` (keys ``a * m + b``,
    values ``priority * m + id``), found per symbol on first use; ``symbol`` maps a character
    to its initial symbol id (None: no symbol of its own).

    >>> # a a -> aa (value 2), aa a -> aaa (value 1); aaa is in no rule: chunks of 3
    >>> rc = RunChunks({0 * 4 + 0: 2 * 4 + 1, 1 * 4 + 0: 1 * 4 + 2}, 4, {"a": 0}.get)
    >>> rc.chain(0), rc.peel("a" * 70 + "b")   # 70 = 23 * 3 + 1
    ((3, 2), (23, 3, 2))
    """

    def __init__(self, rules: Mapping[int, int], m: int,
                 symbol: Callable[[str], int | None]) -> None:
        self._rules = rules
        self._m = m
        self._symbol = symbol
        #: symbol id -> (L, id of T_L), or None where the chain does not apply
        self._chains: dict[int, tuple[int, int] | None] = {}
        #: the left operands of every rule (built on the first chain that needs them)
        self._lefts: frozenset[int] | None = None

    def chain(self, c: int) -> tuple[int, int] | None:
        """``(L, id of T_L)`` of symbol ``c`` when its chain applies (module docstring), else
        None.

        Runtime complexity: ``O(L)`` the first time per symbol (``O(R)`` once for the left
        operands of the ``R`` rules), then a dictionary hit.
        """
        if c in self._chains:
            return self._chains[c]
        got = self._find(c)
        self._chains[c] = got
        return got

    def _find(self, c: int) -> tuple[int, int] | None:
        rules, m = self._rules, self._m
        first = rules.get(c * m + c)
        if first is None:
            return None
        t, length = first % m, 2
        while True:
            val = rules.get(t * m + c)
            if val is None:
                break
            if val >= first or length >= CHAIN_MAX:
                return None  # (b) fails, or too long to follow
            t, length = val % m, length + 1
        if self._lefts is None:
            self._lefts = frozenset(map(m.__rfloordiv__, rules))
        if t in self._lefts:
            return None  # (c) fails: T_L can still be joined
        return length, t

    def peel(self, s: str) -> tuple[int, int, int] | None:
        """``(k, L, id of T_L)``: the tokenization of ``s`` (nothing before it) is ``k``
        tokens ``T_L`` of ``L`` characters each, then that of ``s[k * L:]``; None when ``s``
        opens with no run to cut (shorter than :data:`PEEL_FROM`, or no chain applies).

        Runtime complexity: ``O(r)`` C work for the opening run of ``r`` characters.
        """
        if len(s) < PEEL_FROM or s[0] != s[1]:
            return None
        c = self._symbol(s[0])
        if c is None:
            return None
        got = self.chain(c)
        if got is None:
            return None
        length, tid = got
        r = len(s) - len(s.lstrip(s[0]))
        k = (r - 1) // length
        return (k, length, tid) if k > 0 else None
