"""Horizons of any pre-tokenizer regex, derived from its syntax.

A regex pre-tokenizer cuts text into *pieces*; the document re-splits a few pieces around an
edit and must know how far right of a piece's start the matcher may have *read* to decide it
(``PieceEncoding.horizon``; ``docs/algorithms.md`` section 2). For tiktoken's three patterns
the answer was written by hand as *readers* (``bytelevel/pretokenize.py``): possessive run
patterns whose match ends where the regex may stop reading, plus a little slack. This module
derives the readers from any pattern's syntax tree (:mod:`.parser`: HuggingFace's Oniguruma
syntax of ``tokenizer.json`` ``Split`` patterns, or tiktoken's fancy-regex one), beside the
pattern's ``regex`` form (``Derivation.regex_form``, :func:`.syntax.regex_form`), so one
mechanism serves every pattern: :func:`derive` (the readers, or why there are none) and
:class:`SplitHorizon` (the bound at a position of a text).

**The derivation** (proofs in ``docs/split-patterns.md``). Each alternative is read as a
sequence of *steps* evaluated from a position bound ``R`` (every position the matcher can be
at is ``<= R``):

- a single-character matcher ``C`` repeated ``{m,n}`` (any of greedy, lazy, possessive) is a
  *run*: ``R := end of the C-run from R, capped at n`` (a C-run from any ``q <= R`` either stops
  before ``R`` or continues as the run from ``R``), reading one character more;
- a sub-pattern of bounded width ``w`` that reads at most ``r`` characters (literals,
  alternations of them, contractions, bounded look-ahead) is ``R := R + w`` and reads ``r - w``
  more;
- an unbounded repetition of a complex sub-pattern (``(?:\\p{L}\\p{M}*)+``) is a run of the
  union of the characters it can consume;
- an alternation inside a sequence multiplies the sequences (each path takes one option);
- a look-ahead is read as if it consumed (a larger ``R`` is still a bound).

Steps after the last unbounded run become *slack* (characters read past the reader's end).
The readers are those runs as possessive patterns (``C{0,n}+``, ``(?s:.{0,w}+)``), so::

    H(q) = max(q + base, max over readers (reader.match(text, q).end() + slack))

bounds every read of every match attempt at ``q``. Each reader's end is a non-decreasing
function of ``q`` (composition of ``min(q + n, run_end(q))`` maps), so ``H`` is too: the
*dominance* property the document relies on (``H(j) <= H(i)`` for ``j < i``).

Patterns that read left of the piece start (look-behind, ``^``, ``\\b`` or ``\\A`` before any
character is consumed, ``\\G``), use back-references, or can match the empty string, get no
derivation: ``Derivation.fallback`` says why and the caller treats the whole segment as one
piece (its horizon is the end of the text; exact, not incremental).

*EOT-sensitive* reads (look-around, anchors, atomic alternation) are tracked apart
(``eot_reach``): a piece ending at ``c`` is unchanged when the text is cut at ``c`` exactly when
no EOT-sensitive read reached ``c`` (a character that failed a class fails it as the end of
the text does). ``hf/pretokenizers.py`` uses it to choose restartable cuts.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Literal

import regex

from .bounds import check
from .parser import parse
from .syntax import (Alt, Anchor, Backref, Chars, Flavour, Group, Look, Node, Repeat, Seq,
                     char_pattern, regex_form, walk, width)

__all__ = ["Reader", "Derivation", "derive", "SplitHorizon"]


# --- widths read ahead --------------------------------------------------------------------


def _reads(node: Node) -> tuple[int, int] | None:
    """(most consumed, most read ahead) of a bounded ``node`` (look-ahead and anchors read
    without consuming); None when unbounded."""
    if isinstance(node, Chars):
        return 1, 1
    if isinstance(node, Seq):
        w = r = 0
        for n in node.items:
            got = _reads(n)
            if got is None:
                return None
            r = max(r, w + got[1])
            w += got[0]
        return w, r
    if isinstance(node, Alt):
        got_all = [_reads(n) for n in node.options]
        if any(g is None for g in got_all):
            return None
        return max(g[0] for g in got_all if g), max(g[1] for g in got_all if g)
    if isinstance(node, Repeat):
        got = _reads(node.node)
        if got is None or node.hi is None:
            return None if got is None or got[0] > 0 or node.hi is None else got
        if node.hi == 0:
            return 0, 0
        return got[0] * node.hi, got[0] * (node.hi - 1) + got[1]
    if isinstance(node, Group):
        return _reads(node.node)
    if isinstance(node, Look):
        if not node.ahead:
            return 0, 0
        got = _reads(node.node)
        return None if got is None else (0, got[1])
    if isinstance(node, Anchor):
        return 0, {"$": 1, "z": 1, "Z": 2, "b": 1, "B": 1}.get(node.kind, 0)
    return None


# --- derivation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    kind: Literal["run", "skip", "peek"]
    matcher: str = ""
    n: int | None = None  # run: most repetitions (None: unbounded); skip/peek: width


_Prog = tuple[tuple[_Step, ...], bool]  # (steps, EOT-sensitive)
_MAX_PROGS = 32


class _Fallback(Exception):
    """The pattern cannot be bounded; the message says why."""


def _left_reach(node: Node) -> int:
    """How far left of its position ``node`` may read (look-behind width, ``^``, ``\\b``)."""
    if isinstance(node, Anchor):
        return {"^": 1, "b": 1, "B": 1}.get(node.kind, 0)
    if isinstance(node, Look) and not node.ahead:
        hi = width(node.node)[1]
        if hi is None:
            raise _Fallback("an unbounded look-behind")
        return hi
    return 0


class _Deriver:
    def expand(self, node: Node, before: int) -> list[_Prog]:
        """The step sequences of ``node`` entered after at least ``before`` characters of the
        piece."""
        if isinstance(node, Chars):
            return [((_Step("run", char_pattern(node), 1),), False)]
        if isinstance(node, Backref):
            raise _Fallback("a back-reference")
        if isinstance(node, Anchor):
            return self.anchor(node, before)
        if isinstance(node, Look):
            if not node.ahead:
                if _left_reach(node) > before:
                    raise _Fallback("a look-behind that reads left of the piece start")
                return [((), True)]
            return [(steps, True) for steps, _ in self.expand(node.node, before)]  # as if consumed
        if isinstance(node, Group):
            inner = self.expand(node.node, before)
            if node.opener == "(?>" and not self.simple_run(node.node):
                return [(s, True) for s, _ in inner]  # an atomic choice can flip at the end
            return inner
        if isinstance(node, Repeat) and isinstance(node.node, Chars):
            return [((_Step("run", char_pattern(node.node), node.hi),), False)]
        reads = _reads(node)
        if reads is not None and not self.reads_left(node, before):
            w, r = reads
            eot = self.eot_sensitive(node)
            return [((_Step("skip", n=w), _Step("peek", n=r - w)), eot)]
        if isinstance(node, Seq):
            progs: list[_Prog] = [((), False)]
            b = before
            for item in node.items:
                ps = self.expand(item, b)
                if len(progs) * len(ps) > _MAX_PROGS:
                    ps = self.coarse(item, b)
                progs = [(s1 + s2, e1 or e2) for (s1, e1), (s2, e2) in itertools.product(progs, ps)]
                b += width(item)[0]
            return progs
        if isinstance(node, Alt):
            # the bounded options together read at most what the widest reads
            bounded = [(opt, _reads(opt)) for opt in node.options]
            small = [(o, r) for o, r in bounded if r is not None and not self.reads_left(o, before)]
            out = [p for opt, r in bounded if (opt, r) not in small
                   for p in self.expand(opt, before)]
            if small:
                w = max(r[0] for _, r in small if r is not None)
                rd = max(r[1] for _, r in small if r is not None)
                eot = any(self.eot_sensitive(o) for o, _ in small)
                out.append(((_Step("skip", n=w), _Step("peek", n=rd - w)), eot))
            return out if len(out) <= _MAX_PROGS else self.coarse(node, before)
        assert isinstance(node, Repeat)
        eot = node.mode == "possessive"
        if node.hi is not None and node.hi <= 3:
            unrolled = Seq((node.node,) * node.hi)
            return [(s, e or eot) for s, e in self.expand(unrolled, before)]
        return [(s, e or eot) for s, e in self.coarse(node, before)]

    @staticmethod
    def simple_run(node: Node) -> bool:
        return isinstance(node, Repeat) and isinstance(node.node, Chars)

    def reads_left(self, node: Node, before: int) -> bool:
        """Whether some left-reading part of ``node`` may sit at fewer than its reach
        characters into the piece (then the exact walk in ``expand`` decides)."""
        for sub in walk(node):
            if isinstance(sub, Anchor) and sub.kind in ("A", "G"):
                return True
            if _left_reach(sub) > before:
                return True
        return False

    @staticmethod
    def eot_sensitive(node: Node) -> bool:
        for sub in walk(node):
            if isinstance(sub, (Look, Anchor)):
                return True
            if isinstance(sub, Group) and sub.opener == "(?>":
                return True
            if isinstance(sub, Repeat) and sub.mode == "possessive" and not isinstance(sub.node, Chars):
                return True
        return False

    def anchor(self, node: Anchor, before: int) -> list[_Prog]:
        kind = node.kind
        if kind == "G":
            raise _Fallback("\\G (the end of the previous match) is left context")
        if kind == "A":
            if before == 0:
                raise _Fallback("\\A at a piece start depends on the text before the piece")
            return [((), False)]  # never true inside a piece
        if kind == "^":
            if before == 0:
                raise _Fallback("^ at a piece start reads the character before the piece")
            return [((), False)]  # reads left only, inside the piece
        if kind in ("b", "B") and before == 0:
            raise _Fallback(f"\\{kind} at a piece start reads the character before the piece")
        return [((_Step("peek", n={"Z": 2}.get(kind, 1)),), True)]

    def coarse(self, node: Node, before: int) -> list[_Prog]:
        """One run of every character ``node`` can consume, and the look-ahead it may do."""
        matchers: list[str] = []
        peek = 0
        eot = False
        for sub in walk(node, into_looks=False):
            if isinstance(sub, Chars):
                m = char_pattern(sub)
                if m not in matchers:
                    matchers.append(m)
            elif isinstance(sub, Backref):
                raise _Fallback("a back-reference")
            elif isinstance(sub, Look):
                eot = True
                if not sub.ahead:
                    if _left_reach(sub) > before:
                        raise _Fallback("a look-behind that reads left of the piece start")
                    continue
                got = _reads(sub.node)
                if got is None:
                    raise _Fallback("an unbounded look-ahead inside a repetition")
                peek = max(peek, got[1])
            elif isinstance(sub, Anchor):
                if sub.kind in ("A", "G") or _left_reach(sub) > before:
                    self.anchor(sub, 0)  # raises the reason
                eot = True
                peek = max(peek, {"Z": 2, "$": 1, "z": 1, "b": 1, "B": 1}.get(sub.kind, 0))
            elif isinstance(sub, Group) and sub.opener == "(?>":
                eot = True
        union = matchers[0] if len(matchers) == 1 else "(?:" + "|".join(matchers) + ")"
        steps = (_Step("run", union, None), _Step("peek", n=peek))
        return [(steps, eot or self.eot_sensitive(node))]


@dataclass(frozen=True)
class Reader:
    """One possessive reader and what is read past its end."""

    pattern: str
    slack: int
    eot: bool


@dataclass(frozen=True)
class Derivation:
    """What :func:`derive` found for one pattern.

    ``H(q) = max(q + base, max(reader.match(text, q).end() + reader.slack))`` bounds every
    read of a match attempt at ``q`` (``q + base`` covers the bounded alternatives);
    ``fallback`` is None, or the reason the pattern gets no derivation.
    """

    pattern: str
    flavour: Flavour
    regex_form: str
    readers: tuple[Reader, ...]
    base: int
    eot_base: int  # -1: no bounded alternative reads EOT-sensitively
    fallback: str | None
    #: fewest characters a match consumes (0: empty matches are possible)
    min_width: int = 1
    #: why the pattern's scans need a time budget (:func:`.bounds.check`), or None
    budget: str | None = None


def _finish(prog: _Prog) -> tuple[tuple[_Step, ...], int]:
    """Split ``prog`` into its reader steps (through the last unbounded run) and the slack
    read past them."""
    steps, _ = prog
    last = max((i for i, s in enumerate(steps) if s.kind == "run" and s.n is None), default=-1)
    prefix, suffix = steps[: last + 1], steps[last + 1:]
    w = r = 0
    for s in suffix:
        n = s.n or 0
        r = max(r, w + n)
        if s.kind != "peek":
            w += n
    if last < 0:
        return (), r
    slack = max([1, r] + [s.n or 0 for s in prefix if s.kind == "peek"])
    return tuple(s for s in prefix if s.kind != "peek"), slack


def _subset(small: str, big: str) -> bool:
    """Whether the single-character pattern ``small`` (a few literal characters) only matches
    characters that ``big`` matches."""
    m = regex.fullmatch(r"\[((?:\\[rnt]|[^\\\]\[^-])+)\]|(\\[rnt]|[^\\\[\]().*+?{}|^$])", small)
    if m is None:
        return False
    body = m.group(1) or m.group(2)
    chars = regex.sub(r"\\([rnt])", lambda x: {"r": "\r", "n": "\n", "t": "\t"}[x.group(1)], body)
    big_re = regex.compile(big)
    return all(big_re.fullmatch(c) for c in chars)


def _reader_pattern(steps: tuple[_Step, ...]) -> str:
    out: list[str] = []
    prev_unbounded: str | None = None
    for s in steps:
        if s.kind == "skip":
            out.append(f"(?s:.{{0,{s.n}}}+)")
            prev_unbounded = None
            continue
        if prev_unbounded is not None and _subset(s.matcher, prev_unbounded):
            continue  # never matches after a possessive run of a superset
        q = "*+" if s.n is None else ("?+" if s.n == 1 else f"{{0,{s.n}}}+")
        out.append(s.matcher + q)
        prev_unbounded = s.matcher if s.n is None else None
    return "".join(out)


@functools.lru_cache(maxsize=256)
def derive(pattern: str, flavour: Flavour = "oniguruma") -> Derivation:
    """Readers, slack and ``regex`` form of a split pattern, or the reason it falls back.

    >>> d = derive(r"'s|\\s+(?!\\S)|\\s+| ?\\p{L}+")
    >>> [(r.pattern, r.slack) for r in d.readers], d.base
    ([('\\\\s*+', 1), (' ?+\\\\p{L}*+', 1)], 2)

    Raises :class:`PatternError` when the syntax itself is not understood, and
    :class:`UnsafePattern` (one) when the work of matching it cannot be bounded
    (:func:`.bounds.check`, before anything is compiled).
    Runtime complexity: ``O(len(pattern))`` (at most 32 sequences per alternation product).
    """
    budget = check(pattern, flavour)
    tree = parse(pattern, flavour)
    form = regex_form(tree, flavour)
    regex.compile(form)
    min_width = width(tree)[0]
    try:
        if min_width == 0:
            raise _Fallback("the pattern can match the empty string")
        progs = _Deriver().expand(tree, 0)
    except _Fallback as why:
        return Derivation(pattern, flavour, form, (), 0, -1, str(why), min_width, budget)
    base = 0
    eot_base = -1
    found: dict[str, Reader] = {}
    for prog in progs:
        steps, slack = _finish(prog)
        eot = prog[1]
        if not steps:
            base = max(base, slack)
            if eot:
                eot_base = max(eot_base, slack)
            continue
        pat = _reader_pattern(steps)
        old = found.get(pat)
        if old is None or old.slack < slack or (eot and not old.eot):
            found[pat] = Reader(pat, max(slack, old.slack if old else 0), eot or bool(old and old.eot))
    readers = [
        r for r in found.values()
        if not any(o is not r and o.pattern.startswith(r.pattern) and o.slack >= r.slack
                   and (o.eot or not r.eot) for o in found.values())
    ]
    return Derivation(pattern, flavour, form, tuple(readers), base, eot_base, None, min_width,
                      budget)


class SplitHorizon:
    """A compiled :class:`Derivation`: ``reach`` (``H``) and ``eot_reach`` at a position.

    >>> h = SplitHorizon(derive(r" ?\\p{L}+|\\s+(?!\\S)|\\s+"))
    >>> h.reach("hello world", 0, 11), h.eot_reach("hello world", 0, 11)
    (6, 1)
    """

    def __init__(self, derivation: Derivation) -> None:
        self.derivation = derivation
        self.fallback = derivation.fallback
        self._readers = [(regex.compile(r.pattern), r.slack) for r in derivation.readers]
        self._eot = [(regex.compile(r.pattern), r.slack) for r in derivation.readers if r.eot]
        self._base = derivation.base
        self._eot_base = derivation.eot_base
        #: whether any read is end-of-text sensitive (else ``eot_reach(q) <= q``)
        self.has_eot = bool(self._eot) or self._eot_base >= 0 or self.fallback is not None
        #: ``eot_reach(q) - q`` where every EOT reader matches empty at ``q``
        self._eot_quiet_reach = max([max(self._eot_base, 0)] + [k for _, k in self._eot])
        #: character -> no EOT reader consumes it at the reader's start (filled on use). A
        #: reader is possessive optional steps (or a ``.{0,w}+`` skip), so it matches empty
        #: at ``q`` exactly when no step matches ``text[q]``: the one character decides
        self._eot_quiet: dict[str, bool] = {}
        #: the same for all the readers (:meth:`reach`), and ``reach(q) - q`` then
        self._quiet: dict[str, bool] = {}
        self._quiet_reach = max([max(self._base, 0)] + [k for _, k in self._readers])

    def reach(self, text: str, q: int, end: int) -> int:
        """Exclusive bound on what a match attempt at ``q`` reads (``>= end`` when it reaches
        ``end``: the scan stops there).

        Runtime complexity: ``O(H(q) - q)``, at most ``O(end - q)``; one lookup when no
        reader consumes ``text[q]`` (a digits step at a letter).
        """
        return self._quick(self._readers, self._base, self._quiet, self._quiet_reach,
                           text, q, end)

    def reach_slow(self, text: str, q: int, end: int) -> int:
        """:meth:`reach` without the one-character shortcut (the reference for tests)."""
        return self._bound(self._readers, self._base, text, q, end)

    def eot_reach(self, text: str, q: int, end: int) -> int:
        """Exclusive bound on the end-of-text-sensitive reads of an attempt at ``q`` (look-around,
        anchors, atomic choices); ``q`` or less when there are none."""
        return self._quick(self._eot, self._eot_base, self._eot_quiet, self._eot_quiet_reach,
                           text, q, end)

    def eot_reach_slow(self, text: str, q: int, end: int) -> int:
        """:meth:`eot_reach` without the one-character shortcut (the reference for tests)."""
        return self._bound(self._eot, self._eot_base, text, q, end)

    def _quick(self, readers: list[tuple[regex.Pattern[str], int]], base: int,
               quiet_chars: dict[str, bool], quiet_reach: int, text: str, q: int, end: int
               ) -> int:
        """:meth:`_bound`, from one lookup when no reader consumes ``text[q]`` (or ``q`` is at
        ``end``): each reader then matches empty at ``q`` (the ``_eot_quiet`` argument)."""
        if self.fallback is None:
            if q >= end:
                return q + quiet_reach
            ch = text[q]
            quiet = quiet_chars.get(ch)
            if quiet is None:
                quiet = quiet_chars[ch] = all(
                    r.match(ch).end() == 0 for r, _ in readers)  # type: ignore[union-attr]
            if quiet:
                return q + quiet_reach
        return self._bound(readers, base, text, q, end)

    def _bound(self, readers: list[tuple[regex.Pattern[str], int]], base: int, text: str,
               q: int, end: int) -> int:
        if self.fallback is not None:
            return max(end, len(text)) + 1
        best = q + max(base, 0)
        for r, slack in readers:
            m = r.match(text, q, end)  # possessive and optional: always matches
            e = (m.end() if m is not None else q) + slack
            if e > best:
                best = e
        return best
