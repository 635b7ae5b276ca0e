"""Explicit merge-rule dictionaries and their semantics, after *Formalizing BPE Tokenization*.

Berglund & van der Merwe (``shared/papers/004``) define a byte pair *dictionary* as a sequence
of rules ``u ⋄ v`` in priority order (Definition 1) and three ways to tokenize a string ``w``
with it, all starting from the tokenization of ``w`` into single symbols:

* :func:`base_tokenizations` — Definition 2: apply rules in any order until none applies (a set);
* :func:`tokenize_sp` — Definition 3, the SentencePiece ("correct") semantics: always apply the
  highest-priority rule that applies anywhere, at its leftmost position;
* :func:`tokenize_hf` — Definition 4, the HuggingFace semantics: take the highest-priority
  applicable rule and apply it left to right everywhere before looking at the next rule.

and the analysis this module offers:

* :func:`proper_violations` / :func:`is_proper` — Definition 5 (a rule's left and right tokens
  must be produced by higher-priority rules), decided as in Remark 2;
* :func:`useful_rules` — Corollary 1: a rule is useful iff it is applied when tokenizing the
  string ``uv`` it produces (:func:`applied_rules_brute_force` is the definition, for tests);
* :func:`find_semantics_difference` — Lemma 1 says proper dictionaries give the same SP and HF
  tokenizations; for an improper one we look for a string where they differ;
* :func:`independent`, :func:`chain_length_bound`, :func:`sufficient_lookahead`,
  :func:`lookahead_bound` — Definition 7 and Remark 5: the lookahead of left-to-right
  tokenization (Theorem 2) is at most ``c(D) · max |uv|``, where the chain length ``c(D)`` is at
  most the longest chain of pairwise *dependent* rules (neighbouring rules that are independent
  in Remark 5's sense can be swapped without changing any tokenization).

Tokens are Python strings; the alphabet is whatever characters the rules and inputs use.
These are reference implementations for small dictionaries (analysis and tests), not the fast
path: SentencePiece encodings use :mod:`livetok.incremental.sentencepiece.bpe`, tiktoken-style
ones :mod:`livetok.incremental.bytelevel.bpe`. :func:`analyze_vocabulary` applies Definition 5
and Corollary 1 to a whole vocabulary (``livetok analyze``).

One concept: the paper's byte pair dictionaries and what it shows about them. The module
follows the paper definition by definition, and each analysis (down to
:func:`analyze_vocabulary`, Definition 5 and Corollary 1 on a whole vocabulary) is written in
terms of the semantics above it: apart, a definition and the analyses that use it would sit in
different files.

Their cost is a high power of the rule lengths (``O(|uv|^2)`` per derivation, ``O(|D|^2)`` for
the chain bound) and 16 rules ``a ⋄ a``, ``aa ⋄ aa``, ... already make ``|uv| = 65,536``: the
analyses take a :class:`StepBudget` that stops them with :class:`AnalysisStopped`, which says
what they were doing and what they had shown by then.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence, TypeVar

__all__ = [
    "Dictionary",
    "DictionaryFormatError",
    "StepBudget",
    "AnalysisStopped",
    "Violation",
    "base_tokenizations",
    "derivation_sp",
    "derivation_hf",
    "tokenize_sp",
    "tokenize_hf",
    "is_proper",
    "proper_violations",
    "useful_rules",
    "applied_on_own_string",
    "applied_rules_brute_force",
    "find_semantics_difference",
    "independent",
    "chain_length_bound",
    "sufficient_lookahead",
    "lookahead_bound",
    "show",
    "VocabularyAnalysis",
    "analyze_vocabulary",
]

Semantics = Literal["sp", "hf"]
Tokenization = tuple[str, ...]
#: a vocabulary piece: text (SentencePiece) or bytes (tiktoken)
P = TypeVar("P", str, bytes)


class DictionaryFormatError(ValueError):
    """A dictionary file or rule list is malformed."""


class AnalysisStopped(ValueError):
    """An analysis used up its :class:`StepBudget`; the message says where it stopped and what
    it had shown by then."""

    def __init__(self, max_steps: int, where: str) -> None:
        self.max_steps = max_steps
        self.where = where
        super().__init__(f"stopped after {max_steps:,} steps while {where}")


class StepBudget:
    """A bound on the work of an analysis: :meth:`spend` counts elementary steps (a rule
    looked up at one position, a character compared) and raises :class:`AnalysisStopped`
    past ``max_steps`` (``None``: no bound).

    >>> b = StepBudget(10)
    >>> b.spend(4, "checking rule 1"); b.used
    4
    >>> b.spend(7, lambda: "checking rule 2")
    Traceback (most recent call last):
    ...
    livetok.incremental.analysis.merge_rules.AnalysisStopped: stopped after 10 steps while checking rule 2

    Runtime complexity: ``O(1)`` per :meth:`spend` (``where`` is called only when it stops).
    """

    __slots__ = ("max_steps", "used")

    def __init__(self, max_steps: int | None = None) -> None:
        self.max_steps = max_steps
        self.used = 0

    def spend(self, n: int, where: str | Callable[[], str]) -> None:
        """Count ``n`` steps; past the bound, raise :class:`AnalysisStopped` saying ``where``
        (a string, or a function that makes it)."""
        self.used += n
        if self.max_steps is not None and self.used > self.max_steps:
            raise AnalysisStopped(self.max_steps, where() if callable(where) else where)


@dataclass(frozen=True)
class Dictionary:
    """A byte pair dictionary (Definition 1): rules ``u ⋄ v``, highest priority first.

    >>> D = Dictionary.parse("a b\\nab c")
    >>> D.rules, len(D), D.max_rule_len
    ((('a', 'b'), ('ab', 'c')), 2, 3)
    """

    rules: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        for i, r in enumerate(self.rules):
            if len(r) != 2 or not all(isinstance(x, str) and x for x in r):
                raise DictionaryFormatError(
                    f"rule {i + 1} is {r!r}: each rule must be a pair of non-empty strings (u, v)"
                )

    @classmethod
    def of(cls, rules: Iterable[Sequence[str]]) -> "Dictionary":
        """Build from pairs, e.g. ``Dictionary.of([("a", "b"), ("ab", "c")])``.

        Runtime complexity: ``O(|D|)``.
        """
        return cls(tuple((str(u), str(v)) for u, v in rules))

    @classmethod
    def parse(cls, text: str) -> "Dictionary":
        """Parse the text format: one rule ``u v`` per line, in priority order.

        Blank lines and lines starting with ``#`` are ignored; ``\\s`` in a token stands for a
        space. Runtime complexity: ``O(len(text))``.
        """
        rules = []
        for lineno, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            parts = s.split()
            if len(parts) != 2:
                raise DictionaryFormatError(
                    f"line {lineno}: {line!r}: write one rule per line as two tokens "
                    "separated by a space, e.g. 'ab c'"
                )
            rules.append(tuple(p.replace("\\s", " ") for p in parts))
        return cls.of(rules)

    def __len__(self) -> int:
        return len(self.rules)

    @property
    def max_rule_len(self) -> int:
        """``max |uv|`` over the rules (0 for the empty dictionary)."""
        return max((len(u) + len(v) for u, v in self.rules), default=0)

    @property
    def alphabet(self) -> str:
        """The symbols the rules use, sorted."""
        return "".join(sorted({c for u, v in self.rules for c in u + v}))

    def priority(self) -> dict[tuple[str, str], int]:
        """Rule -> index of its first (highest-priority) occurrence (a new dict).

        Runtime complexity: ``O(|D|)``.
        """
        return dict(self._priority)

    @cached_property
    def _priority(self) -> dict[tuple[str, str], int]:
        """:meth:`priority`, built once (every derivation reads it)."""
        out: dict[tuple[str, str], int] = {}
        for i, r in enumerate(self.rules):
            out.setdefault(r, i)
        return out


def show(tokens: Sequence[str]) -> str:
    """Render a tokenization the way the paper writes it.

    >>> show(("ab", "c"))
    'ab ⋄ c'
    """
    return " ⋄ ".join(tokens)


# --- the three semantics -----------------------------------------------------------------------


def base_tokenizations(D: Dictionary, w: str) -> set[Tokenization]:
    """All base tokenizations of ``w`` (Definition 2), by exhaustive search.

    >>> sorted(base_tokenizations(Dictionary.of([("a", "b"), ("b", "c")]), "abc"))
    [('a', 'bc'), ('ab', 'c')]

    Runtime complexity: exponential in ``len(w)``; for small examples only.
    """
    rules = set(D.rules)
    seen: set[Tokenization] = set()
    finals: set[Tokenization] = set()
    stack = [tuple(w)]
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        moved = False
        for i in range(len(t) - 1):
            if (t[i], t[i + 1]) in rules:
                moved = True
                stack.append(t[:i] + (t[i] + t[i + 1],) + t[i + 2 :])
        if not moved:
            finals.add(t)
    return finals


def _sp_steps(D: Dictionary, w: str, steps: StepBudget | None = None,
              where: str | Callable[[], str] = "") -> Iterator[tuple[list[str], int]]:
    """The steps of Definition 3 as they happen: ``(tokens, rule)`` after each merge, the list
    itself (callers copy it if they keep it). One scan of the tokens per step."""
    prio = D._priority
    t = list(w)
    while True:
        if steps is not None:
            steps.spend(len(t), where)
        best = None  # (rule index, position): highest priority, then leftmost
        for i in range(len(t) - 1):
            r = prio.get((t[i], t[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return
        r, i = best
        t[i : i + 2] = [t[i] + t[i + 1]]
        yield t, r


def derivation_sp(D: Dictionary, w: str) -> list[tuple[Tokenization, int]]:
    """The SentencePiece derivation of ``w`` (Definition 3) as ``(tokenization, rule)`` steps.

    Step ``k`` is the tokenization *after* applying rule index ``rule``; the last entry's
    tokenization is :func:`tokenize_sp`.

    >>> [show(t) for t, _ in derivation_sp(Dictionary.of([("a", "b"), ("ab", "c")]), "abc")]
    ['ab ⋄ c', 'abc']

    Runtime complexity: ``O(n^2)`` dictionary lookups for ``n = len(w)``.
    """
    return [(tuple(t), r) for t, r in _sp_steps(D, w)]


def tokenize_sp(D: Dictionary, w: str, *, steps: StepBudget | None = None) -> Tokenization:
    """The SentencePiece ("correct") tokenization ``T^D(w)`` of Definition 3.

    >>> show(tokenize_sp(Dictionary.of([("ab", "a"), ("a", "b")]), "abababab"))  # Example 3
    'aba ⋄ b ⋄ aba ⋄ b'

    Runtime complexity: ``O(n^2)``.
    """
    return _last(_sp_steps(D, w, steps, lambda: f"tokenizing {_short(w)} (SentencePiece)"), w)


def _hf_steps(D: Dictionary, w: str, steps: StepBudget | None = None,
              where: str | Callable[[], str] = "") -> Iterator[tuple[list[str], int]]:
    """The ``⇒+`` blocks of Definition 4 as they happen, like :func:`_sp_steps`."""
    prio = D._priority
    t = list(w)
    while True:
        if steps is not None:
            steps.spend(len(t), where)
        best = None
        for i in range(len(t) - 1):
            r = prio.get((t[i], t[i + 1]))
            if r is not None and (best is None or r < best):
                best = r
        if best is None:
            return
        u, v = D.rules[best]
        # apply u ⋄ v left to right; a merge never creates a new u ⋄ v occurrence (|uv| > |u|,
        # |uv| > |v|), so one pass is the same as "until it is no longer applicable"
        out: list[str] = []
        i = 0
        while i < len(t):
            if i + 1 < len(t) and t[i] == u and t[i + 1] == v:
                out.append(u + v)
                i += 2
            else:
                out.append(t[i])
                i += 1
        t = out
        yield t, best


def derivation_hf(D: Dictionary, w: str) -> list[tuple[Tokenization, int]]:
    """The HuggingFace derivation of ``w`` (Definition 4), one entry per ``⇒+`` block.

    Each entry is the tokenization after applying rule ``rule`` left to right wherever it
    applies. Runtime complexity: ``O(n · |D|)``.
    """
    return [(tuple(t), r) for t, r in _hf_steps(D, w)]


def tokenize_hf(D: Dictionary, w: str, *, steps: StepBudget | None = None) -> Tokenization:
    """The HuggingFace tokenization ``T_hf^D(w)`` of Definition 4.

    >>> show(tokenize_hf(Dictionary.of([("ab", "a"), ("a", "b")]), "abababab"))  # Example 3
    'ab ⋄ ab ⋄ ab ⋄ ab'

    Runtime complexity: ``O(n · |D|)``.
    """
    return _last(_hf_steps(D, w, steps, lambda: f"tokenizing {_short(w)} (HuggingFace)"), w)


def _last(derivation: Iterator[tuple[list[str], int]], w: str) -> Tokenization:
    t: list[str] | str = w
    for t, _ in derivation:
        pass
    return tuple(t)


def _short(w: str, n: int = 24) -> str:
    """``w`` for a message: quoted, cut to about ``n`` characters with its length."""
    return repr(w) if len(w) <= n else f"{w[:n]!r}... ({len(w):,} symbols)"


def _derive(D: Dictionary, w: str, semantics: Semantics, steps: StepBudget | None = None,
            where: str | Callable[[], str] = "") -> Iterator[tuple[list[str], int]]:
    if semantics == "sp":
        return _sp_steps(D, w, steps, where)
    if semantics == "hf":
        return _hf_steps(D, w, steps, where)
    raise ValueError(f"semantics must be 'sp' or 'hf', not {semantics!r}")


# --- proper dictionaries (Definition 5, Remark 2) -----------------------------------------------


@dataclass(frozen=True)
class Violation:
    """Rule ``rule`` (0-based) uses token ``token`` (its ``side``) that no earlier rule makes."""

    rule: int
    side: Literal["left", "right"]
    token: str
    #: index of the first rule producing ``token`` (lower priority), or None if none does
    produced_by: int | None

    def __str__(self) -> str:
        where = (
            f"only rule {self.produced_by + 1} (lower priority) produces it"
            if self.produced_by is not None
            else "no rule produces it"
        )
        return f"rule {self.rule + 1}: {self.side} token {self.token!r}: {where}"


def proper_violations(D: Dictionary) -> list[Violation]:
    """Why ``D`` is not proper (Definition 5); empty when it is.

    A rule ``u_j ⋄ v_j`` needs, for ``|u_j| > 1``, an earlier rule ``u_i ⋄ v_i`` with
    ``u_i v_i = u_j`` (and likewise for ``v_j``). Remark 2 decides this in ``O(||D||^2)``; with
    a hash map from each produced string to its first producer it is ``O(||D||)``.

    >>> [str(v) for v in proper_violations(Dictionary.of([("ab", "a"), ("a", "b")]))]
    ["rule 1: left token 'ab': only rule 2 (lower priority) produces it"]

    Runtime complexity: ``O(||D||)`` where ``||D|| = Σ |uv|``.
    """
    first: dict[str, int] = {}
    for i, (u, v) in enumerate(D.rules):
        first.setdefault(u + v, i)
    out = []
    for j, (u, v) in enumerate(D.rules):
        sides: tuple[tuple[Literal["left", "right"], str], ...] = (("left", u), ("right", v))
        for side, tok in sides:
            if len(tok) > 1:
                made_by = first.get(tok)
                if made_by is None or made_by >= j:
                    out.append(Violation(j, side, tok, made_by))
    return out


def is_proper(D: Dictionary) -> bool:
    """Whether ``D`` is proper (Definition 5).

    >>> is_proper(Dictionary.of([("a", "b"), ("ab", "c")]))
    True

    Runtime complexity: ``O(||D||)``.
    """
    return not proper_violations(D)


# --- usefulness (Corollary 1) ------------------------------------------------------------------


def useful_rules(D: Dictionary, semantics: Semantics = "sp", *,
                 steps: StepBudget | None = None) -> list[bool]:
    """For each rule, whether it is ever applied (Corollary 1: iff applied on its own ``uv``).

    >>> useful_rules(Dictionary.of([("a", "b"), ("a", "bc"), ("b", "c"), ("ab", "c")]))  # Ex. 1
    [True, False, True, True]

    ``steps``: stop with :class:`AnalysisStopped` (naming the rule, and the never-useful rules
    found before it) when it runs out.

    Runtime complexity: ``O(Σ |uv|^2)``.
    """
    out: list[bool] = []
    label = {"sp": "SentencePiece", "hf": "HuggingFace"}.get(semantics, semantics)

    def where() -> str:
        i = len(out)
        u, v = D.rules[i]
        useless = [str(k + 1) for k, ok in enumerate(out) if not ok]
        return (f"checking rule {i + 1} of {len(D)} ({_short(u, 12)} ⋄ {_short(v, 12)}) for "
                f"Corollary 1 ({label}); rules 1-{i} are checked and never useful among them: "
                f"{', '.join(useless) or 'none'}" if i else
                f"checking rule 1 ({_short(u, 12)} ⋄ {_short(v, 12)}) for Corollary 1 ({label})")

    for i in range(len(D)):
        out.append(applied_on_own_string(D, i, semantics, steps=steps, where=where))
    return out


def applied_on_own_string(D: Dictionary, i: int, semantics: Semantics = "sp", *,
                          steps: StepBudget | None = None,
                          where: str | Callable[[], str] = "") -> bool:
    """Whether rule ``i`` (0-based) ``u ⋄ v`` is applied when tokenizing ``uv``: by Corollary 1,
    whether it is useful at all (for either semantics, proper or not).

    >>> D = Dictionary.of([("a", "b"), ("a", "bc"), ("b", "c"), ("ab", "c")])  # Example 1
    >>> applied_on_own_string(D, 1), applied_on_own_string(D, 3, "hf")
    (False, True)

    ``steps``/``where`` as for :func:`useful_rules`. Runtime complexity: ``O(|uv|^2)``.
    """
    u, v = D.rules[i]
    return any(r == i for _, r in _derive(D, u + v, semantics, steps, where or (
        lambda: f"checking rule {i + 1} ({_short(u, 12)} ⋄ {_short(v, 12)}) for Corollary 1")))


def applied_rules_brute_force(
    D: Dictionary, max_len: int, semantics: Semantics = "sp", alphabet: str | None = None
) -> set[int]:
    """Indices of rules applied when tokenizing *some* string of length ``<= max_len``.

    The definition of "useful" made finite: the reference :func:`useful_rules` is tested
    against. Runtime complexity: ``O(|Σ|^max_len · max_len^2)``.
    """
    sigma = alphabet if alphabet is not None else D.alphabet
    applied: set[int] = set()
    for n in range(2, max_len + 1):
        for w in itertools.product(sigma, repeat=n):
            applied.update(r for _, r in _derive(D, "".join(w), semantics))
    return applied


# --- Lemma 1: when SP and HF differ ---------------------------------------------------------------


def _candidate_strings(D: Dictionary, max_len: int, budget: int) -> Iterator[str]:
    """All strings over the alphabet by length while affordable, then concatenations of rules."""
    sigma = D.alphabet
    count = 0
    for n in range(1, max_len + 1):
        if count + len(sigma) ** n > budget:
            break
        for w in itertools.product(sigma, repeat=n):
            yield "".join(w)
        count += len(sigma) ** n
    # beyond exhaustive search: words made of the rules' own strings, two to four of them
    words = sorted({u + v for u, v in D.rules} | {u for u, _ in D.rules} | {v for _, v in D.rules})
    for k in (2, 3, 4):
        for combo in itertools.product(words, repeat=k):
            count += 1
            if count > 4 * budget:
                return
            yield "".join(combo)


def find_semantics_difference(
    D: Dictionary, *, max_len: int = 10, budget: int = 20_000, steps: StepBudget | None = None
) -> str | None:
    """A shortest-found string whose SP and HF tokenizations differ, or None.

    By Lemma 1 there is none when ``D`` is proper, and this returns None without searching.
    Otherwise it tries every string up to ``max_len`` (as far as ``budget`` allows, shortest
    first) and then concatenations of the rules' strings.

    >>> find_semantics_difference(Dictionary.of([("ab", "a"), ("a", "b")]))  # Example 3
    'abab'

    ``steps`` bounds the work of the tokenizations (:class:`StepBudget`).

    Runtime complexity: ``O(budget · max_len · |D|)``.
    """
    if is_proper(D):
        return None
    tried = 0

    def where() -> str:
        return (f"searching for a string where SentencePiece and HuggingFace differ (Lemma 1): "
                f"none among the first {tried:,} candidates")

    for w in _candidate_strings(D, max_len, budget):
        if _last(_sp_steps(D, w, steps, where), w) != _last(_hf_steps(D, w, steps, where), w):
            return w
        tried += 1
    return None


# --- Remark 5: chain length and lookahead ---------------------------------------------------------


def _overlaps(x: str, y: str) -> bool:
    """A non-empty suffix of ``x`` is a prefix of ``y``."""
    return any(y.startswith(x[k:]) for k in range(len(x)))


def independent(r: tuple[str, str], s: tuple[str, str]) -> bool:
    """Remark 5's sufficient condition for swapping neighbouring rules ``r`` and ``s``.

    With ``x = uv`` and ``y = u'v'``: no non-empty suffix of one is a prefix of the other, and
    neither is a substring of the other.

    >>> independent(("a", "b"), ("c", "d")), independent(("a", "b"), ("ab", "cd"))
    (True, False)

    Runtime complexity: ``O(|x| · |y|)``.
    """
    x, y = r[0] + r[1], s[0] + s[1]
    return not (_overlaps(x, y) or _overlaps(y, x) or x in y or y in x)


def chain_length_bound(D: Dictionary, *, steps: StepBudget | None = None) -> int:
    """Upper bound on the chain length ``c(D)`` of Remark 5.

    Independent neighbours can be swapped, so every order of the rules that keeps each
    *dependent* pair in its original order gives an equivalent dictionary (the linear
    extensions of a partial order are connected by such swaps). A sequence of rules that
    decreases in priority in *all* equivalent dictionaries is therefore a chain of that order,
    and ``c(D)`` is at most the longest path in the DAG of dependent pairs ``i < j``.

    >>> chain_length_bound(Dictionary.of([("a", "b"), ("c", "d"), ("ab", "cd")]))  # Remark 5
    2

    ``steps`` is charged ``|x| + |y|`` per pair of rules compared.

    Runtime complexity: ``O(|D|^2 · max|uv|^2)``.
    """
    n = len(D)
    longest = [1] * n
    lens = [len(u) + len(v) for u, v in D.rules]
    before = list(itertools.accumulate(lens, initial=0))  # before[j]: Σ lens[:j]
    for j in range(n):
        if steps is not None:
            steps.spend(j * lens[j] + before[j], lambda: (
                f"computing the chain bound of Remark 5: at rule {j + 1} of {n}, c(D) >= "
                f"{max(longest[:j], default=0)} so far"))
        for i in range(j):
            if longest[i] + 1 > longest[j] and not independent(D.rules[i], D.rules[j]):
                longest[j] = longest[i] + 1
    return max(longest, default=0)


def sufficient_lookahead(D: Dictionary) -> int:
    """Definition 7: ``|D| · max |uv|``, a bound on the lookahead constant ``l(D)``.

    >>> sufficient_lookahead(Dictionary.of([("a", "b"), ("c", "d"), ("ab", "cd")]))
    12

    Runtime complexity: ``O(|D|)``.
    """
    return len(D) * D.max_rule_len


def lookahead_bound(D: Dictionary) -> int:
    """Remark 5's sharper bound ``l(D) <= c(D) · max |uv|`` with :func:`chain_length_bound`.

    >>> lookahead_bound(Dictionary.of([("a", "b"), ("c", "d"), ("ab", "cd")]))
    8

    Runtime complexity: as :func:`chain_length_bound`.
    """
    return chain_length_bound(D) * D.max_rule_len


# --- whole vocabularies: every split of every piece is a rule ---------------------------------


@dataclass
class VocabularyAnalysis:
    """Definition 5 and Corollary 1 for a vocabulary read as a dictionary (see
    :func:`analyze_vocabulary`)."""

    n_pieces: int
    n_rules: int
    max_rule_len: int
    #: rules whose left or right token is made only by rules of lower priority (or none)
    violations: list[str]
    #: of those, how many only fail because the producing piece has the *same* priority
    tie_violations: int
    #: pieces that tokenizing the piece itself does not produce: never a token (Lemma 2 (ii))
    unreachable: list[str] | list[bytes]
    #: rules never applied anywhere (Corollary 1)
    useless_rules: int
    #: useful rules whose token is made only by useful rules of lower or equal priority: the
    #: situation of Lemma 1's proof (a lower-priority merge enables a higher-priority one)
    useful_violations: list[str] = None  # type: ignore[assignment]
    #: of those, how many only involve equal priorities
    useful_tie_violations: int = 0
    n_useful_violations: int = 0

    @property
    def proper(self) -> bool:
        return not self.violations


def _bpe_trace(p: P, prio: Mapping[P, float], steps: StepBudget | None = None,
               where: str | Callable[[], str] = "") -> tuple[list[P], list[tuple[P, P]]]:
    """Naive BPE of ``p`` (str or bytes), lowest key first, leftmost on ties.

    Returns the final parts and the list of merges ``(left, right)`` performed; ``steps`` is
    charged ``len(p)`` per scan (the characters its pairs join).
    """
    parts = [p[i : i + 1] for i in range(len(p))]
    merges: list[tuple[P, P]] = []
    while len(parts) > 1:
        if steps is not None:
            steps.spend(len(p), where)
        best: tuple[float, int] | None = None
        for i in range(len(parts) - 1):
            k = prio.get(parts[i] + parts[i + 1])
            if k is not None and (best is None or k < best[0]):
                best = (k, i)
        if best is None:
            break
        i = best[1]
        merges.append((parts[i], parts[i + 1]))
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts, merges


def analyze_vocabulary(prio: Mapping[Any, float], *, max_examples: int = 5,
                       steps: StepBudget | None = None) -> VocabularyAnalysis:
    """Analyse a BPE vocabulary ``{piece: key}`` (lower key merges first) as a dictionary.

    The dictionary of a SentencePiece or tiktoken vocabulary has a rule ``u ⋄ v`` for every
    split of every piece ``uv`` into two tokens (pieces or single symbols), all with the
    priority of ``uv``: this is how Definition 3 describes those libraries (pieces with equal
    keys, e.g. SentencePiece's whitespace pieces, share a priority and are ordered by position).
    Properness (Definition 5) then asks that each multi-symbol token of a rule be a piece with
    a strictly smaller key; usefulness (Corollary 1) is read off the derivation of each piece.

    >>> a = analyze_vocabulary({"a": 0, "b": 0, "ab": 1, "ba": 2, "aba": 3})
    >>> a.proper, a.n_rules, a.unreachable, a.useless_rules
    (True, 4, [], 1)

    ``steps`` is charged ``|p|^2`` per piece for its splits and ``|p|`` per scan of its BPE;
    :class:`AnalysisStopped` says how many pieces were done and what they showed.

    Runtime complexity: ``O(Σ |p|^2)`` dictionary lookups over the pieces ``p``, and
    ``O(Σ |p|^3)`` characters hashed (each of a piece's merges rescans it).
    """
    n_rules = 0
    max_len = 0
    violations: list[str] = []
    n_viol = 0
    ties = 0
    unreachable: list[Any] = []  # pieces: str (SentencePiece) or bytes (tiktoken)
    useful: set[tuple[Any, Any]] = set()
    producible = {p for p in prio if len(p) > 1}
    done = 0
    p: Any  # the piece being analysed (for where())

    def where() -> str:
        return (f"analysing piece {done + 1:,} of {len(prio):,} ({_short(str(p))}): by then "
                f"{n_viol:,} rule tokens broke Definition 5 and {len(unreachable):,} pieces "
                "were unreachable")

    for done, (p, key) in enumerate(prio.items()):
        if len(p) < 2:
            continue
        if steps is not None:
            steps.spend(len(p) * len(p), where)
        max_len = max(max_len, len(p))
        for k in range(1, len(p)):
            u, v = p[:k], p[k:]
            if not ((len(u) == 1 or u in prio) and (len(v) == 1 or v in prio)):
                continue
            n_rules += 1
            for side, tok in (("left", u), ("right", v)):
                if len(tok) > 1 and (tok not in producible or prio[tok] >= key):
                    n_viol += 1
                    if prio.get(tok) == key:
                        ties += 1
                    if len(violations) < max_examples:
                        violations.append(
                            f"{u!r} ⋄ {v!r} (key {key}): {side} token {tok!r} has key "
                            f"{prio.get(tok)}"
                        )
        parts, merges = _bpe_trace(p, prio, steps, where)
        if len(parts) != 1:
            unreachable.append(p)
        useful.update(merges)
    if n_viol > len(violations):
        violations.append(f"... {n_viol - len(violations)} more")
    # Dropping never-applied rules changes no SentencePiece tokenization (a rule that is never
    # applied is never the highest-priority applicable one), so what matters for Lemma 1 is
    # whether the *useful* rules form a proper dictionary.
    uviol: list[str] = []
    n_uviol = 0
    uties = 0
    for u, v in sorted(useful, key=lambda r: prio[r[0] + r[1]]):
        key = prio[u + v]
        for side, tok in (("left", u), ("right", v)):
            if len(tok) > 1 and prio[tok] >= key:
                n_uviol += 1
                uties += prio[tok] == key
                if len(uviol) < max_examples:
                    uviol.append(f"{u!r} ⋄ {v!r} (key {key}): {side} token {tok!r} has key "
                                 f"{prio[tok]}")
    return VocabularyAnalysis(
        n_pieces=len(prio),
        n_rules=n_rules,
        max_rule_len=max_len,
        violations=violations,
        tie_violations=ties,
        unreachable=unreachable,
        useless_rules=n_rules - len(useful),
        useful_violations=uviol,
        useful_tie_violations=uties,
        n_useful_violations=n_uviol,
    )
