r"""Bounded work: what matching a pattern from a file may cost, and the compiled pattern that
keeps to it.

A tokenizer.json is untrusted input (a cloned repository can name one), and the ``regex``
package is a backtracking matcher. The work of a file's pattern is bounded three ways
(limits, environment variables and measurements: docs/tokenizer-json.md, "Limits"):

* its size, checked before anything is compiled: its length (``LIVETOK_MAX_REGEX_CHARS``),
  what its counted repetitions unroll to (``LIVETOK_MAX_REGEX_SIZE``: the ``regex`` package
  expands nested counts when it compiles), its nesting (:data:`.parser.MAX_NESTING`);
* its shape (:func:`check`): the shapes whose backtracking is exponential in the ``regex``
  package are refused. Measured: an unbounded repetition over overlapping alternatives
  (``(a|aa)+$`` on 48 characters: forever), a counted repetition of a sub-pattern that can
  split a text several ways (``(a{1,3}){1,50}$``), and (refused though the package's guards
  keep it cubic) a repetition of a repetition (``(a+)+``, ``(a*)*``);
* a time budget (:func:`match_budget`) for the shapes the package's guards keep polynomial
  but not linear: an unbounded repetition of a sub-pattern that can split a text several
  ways (``([^/]+\.?)+``, a real Hub pattern: quadratic), a look-around that scans an unbounded
  repetition, back-references, two overlapping runs followed by a step that can fail
  (``\d+\.?\d*[eE]``). Only those patterns pay for it: a budget costs the ``regex`` package a
  clock read per match (~1.4 us, +120% on llama3's pattern), so the patterns that need none
  (every pattern of the real files the tests read) run without.
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterator, Union

import regex

from ..vocab.readers import VocabularyError
from ..env_limits import size_limit
from .charsets import ANY_CHAR, explicit, overlap
from .parser import parse
from .syntax import (Alt, Backref, Chars, Flavour, Group, Look, Node, Repeat, Seq, UnsafePattern,
                     char_pattern, kids, render, walk)

__all__ = ["MAX_PATTERN_CHARS", "MAX_PATTERN_SIZE", "MATCH_BUDGET_MS", "BUDGET_CHARS", "check",
           "match_budget", "BudgetedPattern", "BoundedRegex", "compile_bounded"]

#: the longest pattern livetok reads from a file, in characters (``LIVETOK_MAX_REGEX_CHARS``):
#: the longest of the Hub's 141 Split patterns has 274; a 200,000-word alternation took 94 s
#: to load (a 10,000-character one loads in about half a second)
MAX_PATTERN_CHARS = 10_000
#: the most characters a pattern's repetitions may unroll to (``LIVETOK_MAX_REGEX_SIZE``):
#: ``x{n}`` counts ``n`` times ``x``; ``a{300}{300}{300}`` (27,000,000) asked the ``regex``
#: package for 3.8 GB; the Hub's largest is 1,533 (``\p{Nd}{1,510}...``)
MAX_PATTERN_SIZE = 100_000
#: the time budget of one scan by a pattern that needs one (``LIVETOK_MAX_REGEX_MS``, in
#: milliseconds), and as much again per :data:`BUDGET_CHARS` characters scanned
MATCH_BUDGET_MS = 1_000
BUDGET_CHARS = 10_000
#: alternatives of one alternation inside a repetition that :func:`check` compares pairwise
#: (past it, only plain literal alternatives are checked: sorted, in ``O(k log k)``)
_MAX_REPEATED_OPTIONS = 64
#: the longest fixed start of an alternative that :func:`check` compares
_MAX_PREFIX = 16

_CHARS_ENV = "LIVETOK_MAX_REGEX_CHARS"
_SIZE_ENV = "LIVETOK_MAX_REGEX_SIZE"
_BUDGET_ENV = "LIVETOK_MAX_REGEX_MS"


def check(pattern: str, flavour: Flavour = "oniguruma") -> str | None:
    """Raise :class:`UnsafePattern` when the work of matching ``pattern`` cannot be bounded
    (too long, too large unrolled, nested too deep, or a shape that backtracks exponentially,
    the message says which part and what to do); else the reason its scans need a time budget
    (:class:`BudgetedPattern`), or None when they need none.

    >>> check(r"\\s+(?!\\S)|\\p{L}+") is None
    True
    >>> print(check(r"([^/]+\\.?)+/"))
    '([^/]+\\\\.?)+' repeats a sub-pattern that can split the same text several ways
    >>> check("(a|aa)+$")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    livetok.incremental.regex.syntax.UnsafePattern: the alternatives 'a' and 'aa' of '(a|aa)+' can match the same text...

    Raises :class:`PatternError` when the syntax itself is not understood.
    Runtime complexity: ``O(len(pattern))``, and ``O(k^2)`` for an alternation of ``k``
    options (at most 64, or plain literals) inside a repetition.
    """
    limit = size_limit(_CHARS_ENV, MAX_PATTERN_CHARS, unit="characters")
    if len(pattern) > limit:
        raise UnsafePattern(
            f"the pattern has {len(pattern):,} characters, more than the {limit:,} livetok "
            f"reads from a file; shorten it, or set {_CHARS_ENV} to allow more")
    return _check_tree(parse(pattern, flavour))


def match_budget(n_chars: int) -> float:
    """The seconds one scan of ``n_chars`` characters by a pattern that needs a time budget may
    take: ``LIVETOK_MAX_REGEX_MS`` (default 1,000) milliseconds, and as much again per 10,000
    characters (a linear scan takes under a microsecond a character: the budget is a hundred
    times more).

    >>> match_budget(0), match_budget(20_000)
    (1.0, 3.0)

    Runtime complexity: ``O(1)``.
    """
    ms = size_limit(_BUDGET_ENV, MATCH_BUDGET_MS, unit="milliseconds")
    return ms / 1000 * (1 + n_chars / BUDGET_CHARS)


class BudgetedPattern:
    """A compiled pattern of a file whose scans run under :func:`match_budget`: a scan past it
    raises ``error`` with a one-line message naming ``what`` (the file and the step), the
    budget and the variable that moves it. It has the methods of ``regex.Pattern`` livetok
    uses (``finditer``, ``search``, ``match``, ``sub``, ``pattern``).

    >>> p = BudgetedPattern(r"(?:a+b?)+$", what="f.json: Split", reason="nested")
    >>> [m.span() for m in p.finditer("aab a")]
    [(4, 5)]

    Runtime complexity: the pattern's, stopped after ``match_budget(n)`` seconds.
    """

    def __init__(self, form: str, *, what: str, reason: str,
                 error: type[ValueError] = VocabularyError) -> None:
        self.compiled = regex.compile(form)
        #: the pattern (``regex`` syntax), as ``regex.Pattern.pattern``
        self.pattern = form
        self.what, self.reason, self.error = what, reason, error

    def finditer(self, string: str, pos: int = 0, endpos: int | None = None
                 ) -> Iterator[regex.Match[str]]:
        """The matches of ``string[pos:endpos]``, as ``regex.Pattern.finditer``."""
        end = len(string) if endpos is None else endpos
        budget = match_budget(end - pos)
        try:
            yield from self.compiled.finditer(string, pos, end, timeout=budget)
        except TimeoutError:
            raise self._late(end - pos, budget) from None

    def search(self, string: str, pos: int = 0, endpos: int | None = None
               ) -> regex.Match[str] | None:
        """The first match in ``string[pos:endpos]``, as ``regex.Pattern.search``."""
        return self._one(self.compiled.search, string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int | None = None
              ) -> regex.Match[str] | None:
        """The match at ``pos`` in ``string[:endpos]``, as ``regex.Pattern.match``."""
        return self._one(self.compiled.match, string, pos, endpos)

    def _one(self, scan: Callable[..., regex.Match[str] | None], string: str, pos: int,
             endpos: int | None) -> regex.Match[str] | None:
        """``scan(string, pos, endpos)`` under the budget."""
        end = len(string) if endpos is None else endpos
        budget = match_budget(end - pos)
        try:
            return scan(string, pos, end, timeout=budget)
        except TimeoutError:
            raise self._late(end - pos, budget) from None

    def sub(self, repl: Callable[[regex.Match[str]], str], string: str) -> str:
        """``string`` with every match replaced by ``repl(match)``, as ``regex.Pattern.sub``."""
        budget = match_budget(len(string))
        try:
            return self.compiled.sub(repl, string, timeout=budget)
        except TimeoutError:
            raise self._late(len(string), budget) from None

    def _late(self, n: int, budget: float) -> ValueError:
        per = budget / (1 + n / BUDGET_CHARS) * 1000
        return self.error(
            f"{self.what}: matching {n:,} characters took more than its time budget of "
            f"{budget:.1f} s ({self.reason}, so its work can grow faster than the text); fix "
            f"the pattern, or set {_BUDGET_ENV} (now {per:.0f} ms per scan and as much per "
            f"{BUDGET_CHARS:,} characters) to allow more")


#: a pattern of a file, compiled: plain, or under a time budget (:func:`compile_bounded`)
BoundedRegex = Union["regex.Pattern[str]", BudgetedPattern]


def compile_bounded(form: str, budget: str | None, *, what: str,
                    error: type[ValueError] = VocabularyError) -> BoundedRegex:
    """``form`` compiled: a plain ``regex`` pattern when ``budget`` (:func:`check`'s verdict)
    is None, else a :class:`BudgetedPattern` (``what`` and ``error`` say how it reports a scan
    past its budget).

    >>> type(compile_bounded("a+", None, what="f")).__name__
    'Pattern'

    Runtime complexity: the ``regex`` package's compile.
    """
    if budget is None:
        return regex.compile(form)
    return BudgetedPattern(form, what=what, reason=budget, error=error)


def _check_tree(tree: Node) -> str | None:
    """:func:`check` of a parsed pattern."""
    limit = size_limit(_SIZE_ENV, MAX_PATTERN_SIZE, unit="characters")
    size = _unrolled(tree, limit)
    if size > limit:
        raise UnsafePattern(
            f"its repetitions unroll to more than {limit:,} characters (counted repetitions "
            f"inside counted repetitions: {_show(_largest_repeat(tree))}), more than livetok "
            f"compiles; make the counts smaller, or set {_SIZE_ENV} to allow more")
    budget: str | None = None
    for node in walk(tree):
        why: str | None = None
        if isinstance(node, Repeat):
            why = _repeat_hazard(node)
        elif isinstance(node, Look) and any(isinstance(n, Repeat) and n.hi is None
                                            for n in walk(node.node)):
            why = f"the look-around {_show(node)} scans an unbounded repetition at each try"
        elif isinstance(node, Backref):
            why = "a back-reference"
        elif isinstance(node, Seq):
            why = _chain_hazard(node)
        budget = budget or why
    return budget


def _unrolled(node: Node, cap: int) -> int:
    """The characters ``node`` unrolls to (``x{n}``: ``n`` times ``x``), or a number past
    ``cap`` (the walk stops growing there)."""
    if isinstance(node, (Seq, Alt)):
        total = 0
        for kid in kids(node, into_looks=True):
            total += _unrolled(kid, cap)
            if total > cap:
                return total
        return max(total, 1)
    if isinstance(node, Repeat):
        times = node.hi if node.hi is not None else node.lo
        return _unrolled(node.node, cap) * max(times, 1)
    if isinstance(node, (Group, Look)):
        return _unrolled(node.node, cap)
    return 1


def _largest_repeat(tree: Node) -> Node:
    """The repetition of ``tree`` that unrolls to the most (for the message)."""
    reps = [n for n in walk(tree) if isinstance(n, Repeat)]
    return max(reps, key=lambda n: _unrolled(n, 1 << 62), default=tree)


def _show(node: Node) -> str:
    """A sub-pattern for a message: its ``regex`` form, quoted, at most 60 characters."""
    text = render(node)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _unwrap(node: Node) -> Node | None:
    """``node`` through the groups around it; None for an atomic group (no backtracking
    goes into it)."""
    while isinstance(node, Group):
        if node.opener == "(?>":
            return None
        node = node.node
    return node


def _repeat_hazard(node: Repeat) -> str | None:
    """Raise :class:`UnsafePattern` for a repetition whose backtracking is exponential;
    else the reason it needs a time budget, or None."""
    if node.mode == "possessive" or (node.hi is not None and node.hi <= 1):
        return None  # no backtracking into it, or no repetition at all
    body = _unwrap(node.node)
    if body is None or isinstance(body, Chars):
        return None  # a run of one character set: one way to match
    if (node.hi is None and isinstance(body, Repeat) and body.hi is None
            and body.mode != "possessive"):
        raise UnsafePattern(
            f"{_show(node)} repeats a repetition without bound (like (a+)+): when a match "
            "fails, a backtracking matcher tries every way of cutting the text between the "
            "two, exponentially many; write it as one repetition (a+)")
    for alt in _backtracking_alts(node.node):
        pair = _conflict(alt)
        if pair is not None:
            raise UnsafePattern(
                f"the alternatives {_show(pair[0])} and {_show(pair[1])} of {_show(node)} can "
                "match the same text, so a failing match retries exponentially many ways (like "
                "(a|aa)+); make the alternatives exclusive, or the repetition possessive (++) or "
                "atomic ((?>...)+)")
    if _ambiguous(node) is None:
        return None
    if node.hi is not None:
        raise UnsafePattern(
            f"the counted repetition {_show(node)} repeats a sub-pattern that can split the same "
            "text several ways (like (a{1,3}){1,50}), so a failing match retries exponentially "
            "many ways; make the sub-pattern match one way, or the repetition possessive")
    return f"{_show(node)} repeats a sub-pattern that can split the same text several ways"


def _backtracking_alts(node: Node) -> list[Alt]:
    """The alternations in ``node`` that backtracking can go back into (not inside a
    possessive repetition, an atomic group or a look-around)."""
    out: list[Alt] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Alt):
            out.append(n)
        if (isinstance(n, Repeat) and n.mode == "possessive" or isinstance(n, Look)
                or isinstance(n, Group) and n.opener == "(?>"):
            continue
        stack.extend(kids(n, into_looks=False))
    return out


def _chain_hazard(seq: Seq) -> str | None:
    """The reason a sequence needs a time budget: two unbounded runs that can share characters
    (only optional steps between them) followed by a step that can fail, so a failing try
    re-splits the two runs every way (``\\d+\\.?\\d*[eE]``: quadratic a try); else None."""
    items = seq.items
    for i, x in enumerate(items):
        if not _is_run(x):
            continue
        for j in range(i + 1, len(items)):
            y = items[j]
            if _is_run(y) and not _first(Seq(items[j + 1:]))[1] and overlap(
                    _consumed(x), _first(y)[0]):
                return (f"the repetitions {_show(x)} and {_show(y)} can share characters and "
                        "what follows them can fail")
            if not _first(y)[1]:
                break
    return None


def _is_run(node: Node) -> bool:
    node_ = _unwrap(node)
    return isinstance(node_, Repeat) and node_.hi is None and node_.mode != "possessive"


def _consumed(node: Node) -> list[str]:
    """The single-character matchers of everything ``node`` can consume."""
    return [char_pattern(n) for n in walk(node, into_looks=False) if isinstance(n, Chars)]


def _first(node: Node) -> tuple[list[str], bool]:
    """(the matchers of the characters a match of ``node`` can start with, whether ``node``
    can match the empty string)."""
    if isinstance(node, Chars):
        return [char_pattern(node)], False
    if isinstance(node, Seq):
        out: list[str] = []
        for item in node.items:
            first, empty = _first(item)
            out += first
            if not empty:
                return out, False
        return out, True
    if isinstance(node, Alt):
        out = []
        empty = False
        for opt in node.options:
            first, e = _first(opt)
            out += first
            empty = empty or e
        return out, empty
    if isinstance(node, Repeat):
        if node.hi == 0:
            return [], True
        first, empty = _first(node.node)
        return first, empty or node.lo == 0
    if isinstance(node, Group):
        return _first(node.node)
    if isinstance(node, Backref):
        return [ANY_CHAR], True
    return [], True  # look-around, anchor


def _tails(node: Node) -> list[str]:
    """The matchers of the characters ``node`` may consume after a point where its match
    could already have ended (where a backtracking matcher can choose to stop)."""
    if isinstance(node, Seq):
        out: list[str] = []
        items = node.items
        for i, item in enumerate(items):
            rest = Seq(items[i + 1:])
            first, empty = _first(rest)
            if empty:
                out += _tails(item) + first
        return out
    if isinstance(node, Alt):
        return [m for opt in node.options for m in _tails(opt)]
    if isinstance(node, Repeat):
        if node.mode == "possessive" or node.hi == 0:
            return []
        out = _tails(node.node)
        if node.hi is None or node.hi > node.lo:
            out += _first(node.node)[0]  # one more iteration, or stop
        return out
    if isinstance(node, Group):
        return [] if node.opener == "(?>" else _tails(node.node)
    if isinstance(node, Backref):
        return [ANY_CHAR]
    return []


def _ambiguous(node: Node) -> Node | None:
    """A part of ``node`` that can match some text in more than one way (conservative: None
    means one way at most), or None."""
    if isinstance(node, Repeat):
        if node.mode == "possessive" or node.hi == 0:
            return None
        inner = _ambiguous(node.node)
        if inner is not None:
            return inner
        if node.hi is None or node.hi > 1:
            first, empty = _first(node.node)
            if empty and first:
                return node  # an empty iteration or a full one
            if overlap(_tails(node.node), first):
                return node  # where one iteration ends and the next begins
        return None
    if isinstance(node, Group):
        return None if node.opener == "(?>" else _ambiguous(node.node)
    if isinstance(node, Seq):
        items = node.items
        for i, item in enumerate(items):
            inner = _ambiguous(item)
            if inner is not None:
                return inner
            if i + 1 < len(items) and overlap(_tails(item), _first(Seq(items[i + 1:]))[0]):
                return node  # where one step ends and the next begins
        return None
    if isinstance(node, Alt):
        if _conflict(node) is not None:
            return node
        for opt in node.options:
            inner = _ambiguous(opt)
            if inner is not None:
                return inner
        return None
    return None  # one character, a look-around (tried once), an anchor, a back-reference


def _prefix(node: Node) -> tuple[list[list[str]], bool]:
    """(the matchers of the characters at each position of the fixed start of ``node``,
    whether ``node`` is exactly that start)."""
    if isinstance(node, Chars):
        return [[char_pattern(node)]], True
    if isinstance(node, Group) and node.opener != "(?>":
        return _prefix(node.node)
    if isinstance(node, Seq):
        out: list[list[str]] = []
        for item in node.items:
            part, closed = _prefix(item)
            out += part
            if not closed or len(out) > _MAX_PREFIX:
                return out, False
        return out, True
    if isinstance(node, Repeat) and node.lo == node.hi and node.mode != "possessive":
        part, closed = _prefix(node.node)
        if closed and len(part) * node.lo <= _MAX_PREFIX:
            return part * node.lo, True
        return part, False
    return [], False


def _conflict(alt: Alt) -> tuple[Node, Node] | None:
    """Two options of ``alt`` that may match the same text, or one a start of the other's
    (conservative: None means no two can), or None. Raises :class:`UnsafePattern` for more
    than :data:`_MAX_REPEATED_OPTIONS` options that are not all plain literals."""
    options = alt.options
    if len(options) > _MAX_REPEATED_OPTIONS:
        words = [_literal_text(o) for o in options]
        if any(w is None for w in words):
            raise UnsafePattern(
                f"{_show(alt)} has {len(options):,} alternatives inside a repetition: livetok "
                f"checks at most {_MAX_REPEATED_OPTIONS} that are not plain literals for overlap; "
                "write fewer, or make the repetition possessive (++)")
        ranked = sorted((w or "", k) for k, w in enumerate(words))
        for (a, i), (b, j) in zip(ranked, ranked[1:]):
            if b.startswith(a):  # a word and a longer word it starts (sorted: neighbours)
                return options[i], options[j]
        return None
    starts: list[list[list[str]] | None] = []
    for opt in options:
        first, empty = _first(opt)
        part = _prefix(opt)[0]
        starts.append(None if empty else (part or [first]))
    for i, j in itertools.combinations(range(len(options)), 2):
        si, sj = starts[i], starts[j]
        if si is None or sj is None or all(overlap(x, y) for x, y in zip(si, sj)):
            return options[i], options[j]
    return None


def _literal_text(node: Node) -> str | None:
    """The text ``node`` matches when it is a plain literal (one way, no class), else None."""
    part, closed = _prefix(node)
    if not closed or not part:
        return None
    out: list[str] = []
    for pos in part:
        chars = explicit(pos[0]) if len(pos) == 1 else None
        if chars is None or len(chars) != 1:
            return None
        out.append(next(iter(chars)))
    return "".join(out)
