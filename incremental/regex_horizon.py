"""Horizons of any pre-tokenizer regex, derived from its syntax.

A regex pre-tokenizer cuts text into *pieces*; the document re-splits a few pieces around an
edit and must know how far right of a piece's start the matcher may have *read* to decide it
(``PieceEncoding.horizon``; ``docs/algorithms.md`` section 2). For tiktoken's three patterns
the answer was written by hand as *readers* (``bytelevel/pretokenize.py``): possessive run
patterns whose match ends where the regex may stop reading, plus a little slack. This module
derives the readers from any pattern's syntax, HuggingFace's Oniguruma syntax
(``tokenizer.json`` ``Split`` patterns) or tiktoken's fancy-regex one, and translates the
pattern into the ``regex`` package's syntax (``regex_form``), so one mechanism serves every
pattern.

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
from typing import Callable, Iterator, Literal, Union

import regex

from .load import VocabularyError, size_limit

__all__ = ["Derivation", "PatternError", "UnsafePattern", "SplitHorizon", "BudgetedPattern",
           "BoundedRegex", "check", "compile_bounded", "derive", "match_budget", "min_width",
           "translate"]

Flavour = Literal["oniguruma", "fancy"]


class PatternError(ValueError):
    """A pattern this module cannot read (its syntax, not its horizon)."""


class UnsafePattern(PatternError):
    """A pattern whose matching work livetok cannot bound: longer or larger than its limits,
    nested too deep, or of a shape that backtracks catastrophically (:func:`check`)."""


# --- syntax tree --------------------------------------------------------------------------


@dataclass(frozen=True)
class Chars:
    """One character from a set: ``matcher`` is a ``regex`` single-character pattern."""

    matcher: str
    ci: bool = False
    #: the explicit characters, when few and known (literals, small ranges)
    chars: frozenset[str] | None = None


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    node: Node
    lo: int
    hi: int | None
    mode: Literal["greedy", "lazy", "possessive"]


@dataclass(frozen=True)
class Group:
    node: Node
    #: "(": capturing, "(?:", "(?>": atomic, "(?i:" etc: flags, "(?P<name>"
    opener: str


@dataclass(frozen=True)
class Look:
    node: Node
    ahead: bool
    negative: bool


@dataclass(frozen=True)
class Anchor:
    kind: str  # "^", "$", "A", "z", "Z", "b", "B", "G"


@dataclass(frozen=True)
class Backref:
    text: str


Node = Union[Chars, Seq, Alt, Repeat, Group, Look, Anchor, Backref]


# --- character sets -----------------------------------------------------------------------

# Oniguruma's \w (Unicode Word): the ``regex`` \w minus the joiners U+200C/U+200D, plus the
# Latin-1 superscripts and fractions (HF's onig; ``tests/unit/test_regex_horizon.py`` checks
# every code point)
# (outside a class only: inside one, \w has not these six: HF's onig matches so)
_WORD_IN_CLASS = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}"
_WORD = _WORD_IN_CLASS + r"\xb2\xb3\xb9\xbc-\xbe"
_HEX = r"0-9A-Fa-f"

#: escape -> (class content, negated)
_SHORTHAND = {
    "d": (r"\d", False), "D": (r"\d", True),
    "s": (r"\s", False), "S": (r"\s", True),
    "w": (_WORD, False), "W": (_WORD, True),
    "h": (_HEX, False), "H": (_HEX, True),
}
_POSIX = {
    "alpha": r"\p{Alphabetic}", "digit": r"\d", "space": r"\s", "alnum": r"\p{Alphabetic}\d",
    "upper": r"\p{Uppercase}", "lower": r"\p{Lowercase}", "xdigit": _HEX, "word": _WORD_IN_CLASS,
    "blank": r"\p{Zs}\t", "cntrl": r"\p{Cc}",
}
_PROPERTY_ALIASES = {"word": _WORD, "alnum": r"\p{Alphabetic}\d", "xdigit": _HEX}

# A set as ("set", content) (a union of class content), ("neg", content) (its complement) or
# ("expr", matcher) (any single-character pattern).
CSet = tuple[str, str]

_ESCAPE_IN_CLASS = set("\\]^-[&|~")
_ESCAPE_OUT = set("\\.^$|?*+()[]{}")
_NAMED_CONTROLS = {"\n": r"\n", "\r": r"\r", "\t": r"\t", "\x0b": r"\x0b", "\x0c": r"\x0c"}


def _class_char(c: str) -> str:
    if c in _NAMED_CONTROLS:
        return _NAMED_CONTROLS[c]
    if c in _ESCAPE_IN_CLASS:
        return "\\" + c
    if ord(c) < 32 or ord(c) == 127:
        return f"\\x{ord(c):02x}"
    return c


def _literal(c: str) -> str:
    if c in _NAMED_CONTROLS:
        return _NAMED_CONTROLS[c]
    if c in _ESCAPE_OUT:
        return "\\" + c
    if ord(c) < 32 or ord(c) == 127:
        return f"\\x{ord(c):02x}"
    return c


_BARE = regex.compile(r"\\[dsp](?:\{\w+\})?")


def _set_matcher(s: CSet) -> str:
    kind, body = s
    if kind == "set":
        if _BARE.fullmatch(body):
            return body  # \s, \p{L}: no brackets needed
        return f"[{body}]"
    if kind == "neg":
        return f"[^{body}]"
    return body


def _union(parts: list[CSet]) -> CSet:
    pos = "".join(b for k, b in parts if k == "set")
    others = [p for p in parts if p[0] != "set"]
    if not others:
        return ("set", pos)
    if not pos and len(others) == 1:
        return others[0]
    alts = ([f"[{pos}]"] if pos else []) + [_set_matcher(p) for p in others]
    return ("expr", "(?:" + "|".join(alts) + ")")


def _negate(s: CSet) -> CSet:
    kind, body = s
    if kind == "set":
        return ("neg", body)
    if kind == "neg":
        return ("set", body)
    return ("expr", f"(?:(?!{body})[\\s\\S])")


def _intersect(a: CSet, b: CSet) -> CSet:
    return ("expr", f"(?:(?={_set_matcher(a)}){_set_matcher(b)})")


# --- parser -------------------------------------------------------------------------------

# the parser's lexical pieces, compiled once (compiling them on every character made a
# 200,000-word alternation take over a minute to parse)
_INLINE_FLAGS = regex.compile(r"\(\?([imx]*(?:-[imx]*)?)\)")
_INTERVAL = regex.compile(r"\{(\d*)(,?)(\d*)\}")
_GROUP_OPENER = regex.compile(r"\?(?:P?<([A-Za-z_]\w*)>|([imx]*(?:-[imx]*)?):)")
_PROPERTY = regex.compile(r"\{(\^?)([\w ]+)\}")
_HEX_ESCAPE = regex.compile(r"\{([0-9A-Fa-f]{1,8})\}|([0-9A-Fa-f]{1,2})")
_U_ESCAPE = regex.compile(r"[0-9A-Fa-f]{4}")
_OCTAL = regex.compile(r"[0-7]{0,2}")
_BACKREF = regex.compile(r"\\(\d+)")
_NAMED_BACKREF = regex.compile(r"\\k<(\w+)>")
_POSIX_CLASS = regex.compile(r"\[:(\^?)(\w+):\]")

#: groups, classes, inline flag groups and stacked quantifiers nest at most this deep: the
#: parser and every walk of the tree recurse once per level (real patterns nest 3 or 4 deep)
MAX_NESTING = 64


class _Parser:
    """Recursive descent over Oniguruma (Ruby syntax, as HF ``tokenizers`` compiles it) or
    fancy-regex (tiktoken) patterns. The two differ in ``{n,m}+`` (Ruby: a second quantifier
    ``(?:x{n,m})+``; fancy: possessive), ``{n}?`` (Ruby: optional), ``$`` and ``\\Z``."""

    def __init__(self, pattern: str, flavour: Flavour) -> None:
        self.p = pattern
        self.i = 0
        self.flavour = flavour
        #: how deep the parse is nested now (groups, classes, inline flags)
        self.depth = 0

    def error(self, what: str) -> PatternError:
        return PatternError(f"{what} at position {self.i} of {self.p!r}")

    def enter(self) -> None:
        """One level deeper (a group, a class, an inline flag group); refused past
        :data:`MAX_NESTING`, before the recursion that reads it."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise UnsafePattern(f"groups, classes and flag groups nest more than {MAX_NESTING} "
                                f"deep at position {self.i}: livetok reads patterns nested at "
                                "most that deep")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def parse(self) -> Node:
        node = self.alt(ci=False, dotall=False)
        if self.i != len(self.p):
            raise self.error("unbalanced ')'")
        if _depth(node) > 4 * MAX_NESTING:
            raise UnsafePattern(f"its syntax tree is more than {4 * MAX_NESTING} levels deep "
                                "(quantifiers stacked inside nested groups): livetok reads "
                                "patterns at most that deep")
        return node

    def alt(self, ci: bool, dotall: bool) -> Node:
        options = [self.seq(ci, dotall)]
        while self.peek() == "|":
            self.i += 1
            options.append(self.seq(ci, dotall))
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def seq(self, ci: bool, dotall: bool) -> Node:
        items: list[Node] = []
        while self.i < len(self.p) and self.peek() not in "|)":
            flags = self.inline_flags()
            if flags is not None:
                # subtle: Oniguruma's (?i) applies to the rest of the enclosing group,
                # alternatives included; the regex package would apply it to all the pattern
                ci2, dotall2 = self.apply_flags(flags, ci, dotall)
                self.enter()
                rest = self.alt(ci2, dotall2)
                self.depth -= 1
                items.append(Group(rest, self.flag_opener(ci2, dotall2)))
                break
            atom = self.atom(ci, dotall)
            items.append(self.quantifiers(atom))
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def inline_flags(self) -> str | None:
        m = _INLINE_FLAGS.match(self.p, self.i)
        if m is None or m.group(1) == "":
            return None
        self.i = m.end()
        return m.group(1)

    def apply_flags(self, flags: str, ci: bool, dotall: bool) -> tuple[bool, bool]:
        on, _, off = flags.partition("-")
        if "x" in on:
            raise self.error("extended mode (?x) is not supported")
        if "i" in on:
            ci = True
        if "i" in off:
            ci = False
        m_flag = "m" if self.flavour == "oniguruma" else "s"  # Ruby's (?m) is dot-all
        if m_flag in on or "s" in on:
            dotall = True
        if m_flag in off:
            dotall = False
        return ci, dotall

    @staticmethod
    def flag_opener(ci: bool, dotall: bool) -> str:
        return "(?" + ("i" if ci else "-i") + ("s" if dotall else "") + ":"

    def quantifiers(self, atom: Node) -> Node:
        node = atom
        first = True
        stacked = 0
        while True:
            stacked += 1
            if self.depth + stacked > MAX_NESTING:
                raise UnsafePattern(f"more than {MAX_NESTING} quantifiers follow one another at "
                                    f"position {self.i}: livetok reads at most that many")
            c = self.peek()
            if c in ("*", "+", "?"):
                if not first and self.flavour == "fancy":
                    raise self.error("a quantifier follows a quantifier")
                self.i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                mode: Literal["greedy", "lazy", "possessive"] = "greedy"
                if self.peek() == "?":
                    self.i += 1
                    mode = "lazy"
                elif self.peek() == "+":
                    self.i += 1
                    mode = "possessive"
                node = Repeat(node, lo, hi, mode)
            elif c == "{":
                m = _INTERVAL.match(self.p, self.i)
                if m is None or (m.group(1) == "" and (m.group(2) == "" or m.group(3) == "")):
                    return node  # a literal '{' (Oniguruma reads an invalid interval so)
                self.i = m.end()
                lo = int(m.group(1) or 0)
                hi2 = int(m.group(3)) if m.group(3) else (None if m.group(2) else lo)
                mode = "greedy"
                if self.peek() == "?":
                    if self.flavour == "oniguruma" and not m.group(2):
                        # Ruby: {n}? is (?:x{n})? (an optional repetition), not lazy
                        self.i += 1
                        node = Repeat(Repeat(node, lo, hi2, "greedy"), 0, 1, "greedy")
                        first = False
                        continue
                    self.i += 1
                    mode = "lazy"
                elif self.peek() == "+" and self.flavour == "fancy":
                    self.i += 1
                    mode = "possessive"
                node = Repeat(node, lo, hi2, mode)
            else:
                return node
            first = False

    def atom(self, ci: bool, dotall: bool) -> Node:
        c = self.peek()
        if c == "(":
            return self.group(ci, dotall)
        if c == "[":
            self.i += 1
            return self.chars(self.class_body(), ci)
        if c == "\\":
            return self.escape(ci)
        if c == ".":
            self.i += 1
            return Chars(r"[\s\S]" if dotall else r"[^\n]")
        if c == "^":
            self.i += 1
            return Anchor("^")
        if c == "$":
            self.i += 1
            return Anchor("$" if self.flavour == "oniguruma" else "z")
        if c in "*+?":
            raise self.error(f"nothing to repeat before {c!r}")
        self.i += 1
        return self.literal(c, ci)

    @staticmethod
    def literal(c: str, ci: bool) -> Chars:
        return Chars(_literal(c), ci, frozenset(c) if not ci else None)

    @staticmethod
    def chars(s: CSet, ci: bool) -> Chars:
        return Chars(_set_matcher(s), ci)

    def group(self, ci: bool, dotall: bool) -> Node:
        self.i += 1
        self.enter()
        rest = self.p[self.i:]
        opener = "("
        look: tuple[bool, bool] | None = None
        inner_ci, inner_dotall = ci, dotall
        if rest.startswith("?"):
            for prefix, lk in (("?=", (True, False)), ("?!", (True, True)),
                               ("?<=", (False, False)), ("?<!", (False, True))):
                if rest.startswith(prefix):
                    self.i += len(prefix)
                    look = lk
                    break
            else:
                if rest.startswith("?:"):
                    self.i += 2
                    opener = "(?:"
                elif rest.startswith("?>"):
                    self.i += 2
                    opener = "(?>"
                elif rest.startswith("?#"):
                    end = self.p.find(")", self.i)
                    if end < 0:
                        raise self.error("unterminated comment")
                    self.i = end + 1
                    self.depth -= 1
                    return Seq(())
                else:
                    m = _GROUP_OPENER.match(self.p, self.i)
                    if m is None:
                        raise self.error("unknown group syntax")
                    self.i = m.end()
                    if m.group(1) is not None:
                        opener = f"(?P<{m.group(1)}>"
                    else:
                        inner_ci, inner_dotall = self.apply_flags(m.group(2), ci, dotall)
                        opener = self.flag_opener(inner_ci, inner_dotall)
        inner = self.alt(inner_ci, inner_dotall)
        if self.peek() != ")":
            raise self.error("missing ')'")
        self.i += 1
        self.depth -= 1
        if look is not None:
            return Look(inner, ahead=look[0], negative=look[1])
        return Group(inner, opener)

    # escapes shared by classes and the rest: a character, or a set
    def escape_char(self, in_class: bool) -> str | CSet:
        assert self.peek() == "\\"
        self.i += 1
        c = self.peek()
        if c == "":
            raise self.error("trailing backslash")
        self.i += 1
        simple = {"n": "\n", "r": "\r", "t": "\t", "f": "\x0c", "v": "\x0b", "a": "\x07",
                  "e": "\x1b"}
        if c in simple:
            return simple[c]
        if c in _SHORTHAND:
            body, neg = _SHORTHAND[c]
            if self.flavour == "fancy" and c in "wW":
                body = r"\w"  # Rust regex's \w: the regex package's
            if in_class and body == _WORD:
                body = _WORD_IN_CLASS
            return ("neg", body) if neg else ("set", body)
        if c in "pP":
            m = _PROPERTY.match(self.p, self.i)
            if m is None:
                raise self.error(f"bad \\{c}{{...}}")
            self.i = m.end()
            name = m.group(2)
            body = _PROPERTY_ALIASES.get(name.lower(), f"\\p{{{name}}}")
            if in_class and body == _WORD:
                body = _WORD_IN_CLASS
            try:
                regex.compile(f"[{body}]")
            except regex.error:
                raise self.error(f"unknown property {name!r}") from None
            neg = (c == "P") != (m.group(1) == "^")
            return ("neg", body) if neg else ("set", body)
        if c == "x":
            m = _HEX_ESCAPE.match(self.p, self.i)
            if m is None:
                raise self.error("bad \\x escape")
            self.i = m.end()
            return chr(int(m.group(1) or m.group(2), 16))
        if c == "u":
            m = _U_ESCAPE.match(self.p, self.i)
            if m is None:
                raise self.error("bad \\u escape")
            self.i = m.end()
            return chr(int(m.group(0), 16))
        if c == "0":
            m = _OCTAL.match(self.p, self.i)
            assert m is not None
            self.i = m.end()
            return chr(int("0" + m.group(0), 8))
        if c.isalnum() and c.isascii():
            self.i -= 2
            raise self.error(f"unsupported escape \\{c}")
        return c

    def escape(self, ci: bool) -> Node:
        c = self.peek(1)
        anchors = {"A": "A", "z": "z", "Z": "Z", "b": "b", "B": "B", "G": "G"}
        if c in anchors:
            self.i += 2
            kind = anchors[c]
            if self.flavour == "fancy" and kind == "Z":
                kind = "z"  # fancy-regex: \Z is the end of the text
            return Anchor(kind)
        if c.isdigit() and c != "0":
            m = _BACKREF.match(self.p, self.i)
            assert m is not None
            self.i = m.end()
            return Backref(m.group(0))
        if c == "k":
            m = _NAMED_BACKREF.match(self.p, self.i)
            if m is None:
                raise self.error("bad \\k")
            self.i = m.end()
            return Backref(f"(?P={m.group(1)})")
        got = self.escape_char(in_class=False)
        if isinstance(got, str):
            return self.literal(got, ci)
        return self.chars(got, ci)

    def class_body(self) -> CSet:
        """After '[': the set up to its ']' (nested sets, ``&&``, POSIX brackets)."""
        neg = False
        if self.peek() == "^":
            neg = True
            self.i += 1
        operands: list[CSet] = []  # the && operands
        parts: list[CSet] = []
        first = True
        while True:
            c = self.peek()
            if c == "":
                raise self.error("unterminated character class")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if self.p.startswith("&&", self.i):
                self.i += 2
                operands.append(_union(parts))
                parts = []
                continue
            if c == "[":
                m = _POSIX_CLASS.match(self.p, self.i)
                if m is not None:
                    self.i = m.end()
                    name = m.group(2)
                    if name not in _POSIX:
                        raise self.error(f"unsupported POSIX class {name!r}")
                    parts.append(("neg" if m.group(1) else "set", _POSIX[name]))
                    continue
                self.i += 1
                self.enter()
                parts.append(self.class_body())
                self.depth -= 1
                continue
            lo = self.class_atom()
            if isinstance(lo, str) and self.peek() == "-" and self.peek(1) not in ("]", ""):
                save = self.i
                self.i += 1
                hi = self.class_atom()
                if isinstance(hi, str):
                    if ord(hi) < ord(lo):
                        raise self.error("empty range")
                    parts.append(("set", f"{_class_char(lo)}-{_class_char(hi)}"))
                    continue
                self.i = save  # '-' before a set: a literal '-'
            if isinstance(lo, str):
                parts.append(("set", _class_char(lo)))
            else:
                parts.append(lo)
        result = _union(parts)
        for op in reversed(operands):
            result = _intersect(op, result)
        return _negate(result) if neg else result

    def class_atom(self) -> str | CSet:
        c = self.peek()
        if c == "\\":
            return self.escape_char(in_class=True)
        self.i += 1
        return c


# --- rendering in the regex package's syntax ----------------------------------------------

_ANCHORS = {
    "^": r"(?m:^)",  # Oniguruma's ^ and $ are always line anchors (\n only)
    "$": r"(?m:$)",
    "A": r"\A",
    "z": r"\Z",  # regex's \Z is the very end, Oniguruma's \z
    "Z": r"(?=\n?\Z)",
    "b": f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))",
    "B": f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))",
    "G": r"\G",
}


def _render(node: Node) -> str:
    if isinstance(node, Chars):
        return node.matcher
    if isinstance(node, Seq):
        return "".join(_render(n) for n in node.items)
    if isinstance(node, Alt):
        return "|".join(_render(n) for n in node.options)
    if isinstance(node, Repeat):
        inner = _render(node.node)
        if not isinstance(node.node, (Chars, Group)):
            inner = f"(?:{inner})"
        if (node.lo, node.hi) == (0, None):
            q = "*"
        elif (node.lo, node.hi) == (1, None):
            q = "+"
        elif (node.lo, node.hi) == (0, 1):
            q = "?"
        elif node.hi is None:
            q = f"{{{node.lo},}}"
        elif node.hi == node.lo:
            q = f"{{{node.lo}}}"
        else:
            q = f"{{{node.lo},{node.hi}}}"
        q += {"greedy": "", "lazy": "?", "possessive": "+"}[node.mode]
        return inner + q
    if isinstance(node, Group):
        return f"{node.opener}{_render(node.node)})"
    if isinstance(node, Look):
        op = ("(?" if node.ahead else "(?<") + ("!" if node.negative else "=")
        return f"{op}{_render(node.node)})"
    if isinstance(node, Anchor):
        return _ANCHORS[node.kind]
    return node.text


@functools.lru_cache(maxsize=256)
def parse(pattern: str, flavour: Flavour = "oniguruma") -> Node:
    """The syntax tree of ``pattern``.

    >>> parse("a|b+")
    Alt(options=(Chars(matcher='a', ci=False, chars=frozenset({'a'})), Repeat(node=Chars(matcher='b', ci=False, chars=frozenset({'b'})), lo=1, hi=None, mode='greedy')))
    """
    return _Parser(pattern, flavour).parse()


def min_width(pattern: str, flavour: Flavour = "oniguruma") -> int:
    """The fewest characters a match of ``pattern`` consumes (0: it can match the empty
    string).

    >>> min_width(" {2,}"), min_width("a|b*")
    (2, 0)

    Runtime complexity: ``O(len(pattern))``.
    """
    return _width(parse(pattern, flavour))[0]


def translate(pattern: str, flavour: Flavour = "oniguruma") -> str:
    """``pattern`` in the ``regex`` package's syntax, matching exactly as HF's Oniguruma
    (``flavour="oniguruma"``) or tiktoken's fancy-regex does.

    >>> translate(r"\\s+$|\\h")
    '\\\\s+(?m:$)|[0-9A-Fa-f]'

    Runtime complexity: ``O(len(pattern))``.
    """
    return _form(parse(pattern, flavour), flavour)


def _form(tree: Node, flavour: Flavour) -> str:
    """The ``regex`` form of a parsed pattern. Oniguruma, as HF runs it, folds case *fully*
    under ``(?i)`` (``ss`` matches ``ß``), the Rust crates of tiktoken simply: an Oniguruma
    pattern with case-insensitive parts gets the ``regex`` package's ``FULLCASE`` flag
    (``(?f)``, which acts only where ``(?i)`` does). A case-insensitive character of the
    pattern that folds to several (``ß``, ``ﬁ``) is refused: the ``regex`` package does not
    match it as Oniguruma does (``(?fi:ß)`` misses ``ß`` itself), and it would widen a match
    past what the derivation reads."""
    form = _render(tree)
    if flavour != "oniguruma":
        return form
    ci = [n for n in _walk(tree) if isinstance(n, Chars) and n.ci]
    if not ci:
        return form
    multi = sorted({c for n in ci for c in _spelled(n.matcher) if len(c.casefold()) > 1})
    if multi:
        raise PatternError(
            f"case-insensitive {''.join(multi)!r}: Oniguruma folds it to several characters "
            "(full case folding), which the regex package does not reproduce")
    return "(?f)" + form


_ESCAPED = regex.compile(r"\\(?:x\{([0-9A-Fa-f]+)\}|x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4}))")


def _spelled(matcher: str) -> set[str]:
    """The characters a single-character matcher names itself (literally or by a hex
    escape), not those of its properties (``\\p{L}`` matches ``ß`` as one character)."""
    out = set(_ESCAPED.sub("", matcher))
    out.update(chr(int(next(g for g in m.groups() if g), 16)) for m in _ESCAPED.finditer(matcher))
    return out


# --- widths -------------------------------------------------------------------------------


def _width(node: Node) -> tuple[int, int | None]:
    """(fewest, most) characters ``node`` consumes (None: unbounded)."""
    if isinstance(node, Chars):
        return 1, 1
    if isinstance(node, Seq):
        lo = 0
        hi: int | None = 0
        for n in node.items:
            a, b = _width(n)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return lo, hi
    if isinstance(node, Alt):
        ws = [_width(n) for n in node.options]
        his = [b for _, b in ws]
        return min(a for a, _ in ws), None if None in his else max(b for b in his if b is not None)
    if isinstance(node, Repeat):
        a, b = _width(node.node)
        if b == 0:
            return 0, 0
        return a * node.lo, None if node.hi is None or b is None else b * node.hi
    if isinstance(node, Group):
        return _width(node.node)
    if isinstance(node, Backref):
        return 0, None
    return 0, 0  # look-around, anchors


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


def _matcher(c: Chars) -> str:
    return f"(?i:{c.matcher})" if c.ci else c.matcher


def _left_reach(node: Node) -> int:
    """How far left of its position ``node`` may read (look-behind width, ``^``, ``\\b``)."""
    if isinstance(node, Anchor):
        return {"^": 1, "b": 1, "B": 1}.get(node.kind, 0)
    if isinstance(node, Look) and not node.ahead:
        hi = _width(node.node)[1]
        if hi is None:
            raise _Fallback("an unbounded look-behind")
        return hi
    return 0


class _Deriver:
    def expand(self, node: Node, before: int) -> list[_Prog]:
        """The step sequences of ``node`` entered after at least ``before`` characters of the
        piece."""
        if isinstance(node, Chars):
            return [((_Step("run", _matcher(node), 1),), False)]
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
            return [((_Step("run", _matcher(node.node), node.hi),), False)]
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
                b += _width(item)[0]
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
        for sub in _walk(node):
            if isinstance(sub, Anchor) and sub.kind in ("A", "G"):
                return True
            if _left_reach(sub) > before:
                return True
        return False

    @staticmethod
    def eot_sensitive(node: Node) -> bool:
        for sub in _walk(node):
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
        for sub in _walk(node, into_looks=False):
            if isinstance(sub, Chars):
                m = _matcher(sub)
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


def _walk(node: Node, into_looks: bool = True) -> list[Node]:
    out: list[Node] = [node]
    if isinstance(node, Seq):
        kids: tuple[Node, ...] = node.items
    elif isinstance(node, Alt):
        kids = node.options
    elif isinstance(node, (Repeat, Group)):
        kids = (node.node,)
    elif isinstance(node, Look):
        kids = (node.node,) if into_looks else ()
    else:
        kids = ()
    for k in kids:
        out.extend(_walk(k, into_looks))
    return out


# --- bounded work: what a pattern from a file may cost --------------------------------------
#
# A tokenizer.json is untrusted input (a cloned repository can name one), and the ``regex``
# package is a backtracking matcher. The work of a file's pattern is bounded three ways
# (limits, environment variables and measurements: docs/tokenizer-json.md, "Limits"):
#
# * its size, checked before anything is compiled: its length (``LIVETOK_MAX_REGEX_CHARS``),
#   what its counted repetitions unroll to (``LIVETOK_MAX_REGEX_SIZE``: the ``regex`` package
#   expands nested counts when it compiles), its nesting (:data:`MAX_NESTING`);
# * its shape (:func:`check`): the shapes whose backtracking is exponential in the ``regex``
#   package are refused. Measured: an unbounded repetition over overlapping alternatives
#   (``(a|aa)+$`` on 48 characters: forever), a counted repetition of a sub-pattern that can
#   split a text several ways (``(a{1,3}){1,50}$``), and (refused though the package's guards
#   keep it cubic) a repetition of a repetition (``(a+)+``, ``(a*)*``);
# * a time budget (:func:`match_budget`) for the shapes the package's guards keep polynomial
#   but not linear: an unbounded repetition of a sub-pattern that can split a text several
#   ways (``([^/]+\.?)+``, a real Hub pattern: quadratic), a look-around that scans an unbounded
#   repetition, back-references, two overlapping runs followed by a step that can fail
#   (``\d+\.?\d*[eE]``). Only those patterns pay for it: a budget costs the ``regex`` package a
#   clock read per match (~1.4 us, +120% on llama3's pattern), so the patterns that need none
#   (every pattern of the real files the tests read) run without.

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
    livetok.incremental.regex_horizon.UnsafePattern: the alternatives 'a' and 'aa' of '(a|aa)+' can match the same text...

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


def _depth(tree: Node) -> int:
    """The depth of ``tree`` (iterative: it is what bounds the recursive walks)."""
    deepest = 0
    stack: list[tuple[Node, int]] = [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((kid, d + 1) for kid in _kids(node, into_looks=True))
    return deepest


def _kids(node: Node, into_looks: bool) -> tuple[Node, ...]:
    if isinstance(node, Seq):
        return node.items
    if isinstance(node, Alt):
        return node.options
    if isinstance(node, (Repeat, Group)):
        return (node.node,)
    if isinstance(node, Look) and into_looks:
        return (node.node,)
    return ()


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
    for node in _walk(tree):
        why: str | None = None
        if isinstance(node, Repeat):
            why = _repeat_hazard(node)
        elif isinstance(node, Look) and any(isinstance(n, Repeat) and n.hi is None
                                            for n in _walk(node.node)):
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
        for kid in _kids(node, into_looks=True):
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
    reps = [n for n in _walk(tree) if isinstance(n, Repeat)]
    return max(reps, key=lambda n: _unrolled(n, 1 << 62), default=tree)


def _show(node: Node) -> str:
    """A sub-pattern for a message: its ``regex`` form, quoted, at most 60 characters."""
    text = _render(node)
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
        stack.extend(_kids(n, into_looks=False))
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
            if _is_run(y) and not _first(Seq(items[j + 1:]))[1] and _overlap(
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
    return [_matcher(n) for n in _walk(node, into_looks=False) if isinstance(n, Chars)]


#: any character (what a back-reference may start with)
_ANY = r"[\s\S]"


def _first(node: Node) -> tuple[list[str], bool]:
    """(the matchers of the characters a match of ``node`` can start with, whether ``node``
    can match the empty string)."""
    if isinstance(node, Chars):
        return [_matcher(node)], False
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
        return [_ANY], True
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
        return [_ANY]
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
            if _overlap(_tails(node.node), first):
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
            if i + 1 < len(items) and _overlap(_tails(item), _first(Seq(items[i + 1:]))[0]):
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
        return [[_matcher(node)]], True
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
        if si is None or sj is None or all(_overlap(x, y) for x, y in zip(si, sj)):
            return options[i], options[j]
    return None


def _literal_text(node: Node) -> str | None:
    """The text ``node`` matches when it is a plain literal (one way, no class), else None."""
    part, closed = _prefix(node)
    if not closed or not part:
        return None
    out: list[str] = []
    for pos in part:
        chars = _explicit(pos[0]) if len(pos) == 1 else None
        if chars is None or len(chars) != 1:
            return None
        out.append(next(iter(chars)))
    return "".join(out)


def _overlap(a: list[str], b: list[str]) -> bool:
    """Whether some character matches one of the matchers ``a`` and one of ``b``
    (conservative: True unless shown otherwise)."""
    return any(_pair_overlap(x, y) for x in a for y in b)


@functools.lru_cache(maxsize=4096)
def _pair_overlap(a: str, b: str) -> bool:
    """Whether some character matches both single-character matchers (True unless shown
    otherwise: explicit characters, or general categories and a few literals)."""
    if a == b or _ANY in (a, b):
        return True
    sa, sb = _explicit(a), _explicit(b)
    if sa is not None and sb is not None:
        return bool(sa & sb)
    if sa is not None:
        return any(_matches(b, c) for c in sa)
    if sb is not None:
        return any(_matches(a, c) for c in sb)
    ca, cb = _categories(a), _categories(b)
    if ca is None or cb is None:
        return True
    (na, cats_a, lits_a), (nb, cats_b, lits_b) = ca, cb
    if na and nb:
        return True
    if not na and not nb:
        return bool(cats_a & cats_b) or any(_matches(b, c) for c in lits_a) or any(
            _matches(a, c) for c in lits_b)
    if na:  # b inside the complement of a's set?
        (cats_a, lits_a, a), (cats_b, lits_b, b) = (cats_b, lits_b, b), (cats_a, lits_a, a)
    # a positive, b negated: disjoint when b excludes all of a
    return not cats_a <= cats_b or any(_matches(b, c) for c in lits_a)


@functools.lru_cache(maxsize=1024)
def _matches(matcher: str, ch: str) -> bool:
    return regex.fullmatch(matcher, ch) is not None


#: a single-character matcher's pieces: an escaped or plain character, or a property
_CLASS_PIECE = regex.compile(
    r"\\x([0-9A-Fa-f]{2})|\\([nrtfv])|\\p\{(\w+)\}|\\([^\w\s])|([^\\\[\]])")
_NAMED_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\x0c", "v": "\x0b"}
#: general categories by their one-letter group
_CATEGORIES = {
    "L": ("Lu", "Ll", "Lt", "Lm", "Lo"), "M": ("Mn", "Mc", "Me"), "N": ("Nd", "Nl", "No"),
    "P": ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"), "S": ("Sm", "Sc", "Sk", "So"),
    "Z": ("Zs", "Zl", "Zp"), "C": ("Cc", "Cf", "Cs", "Co", "Cn"),
}
_SUBCATEGORIES = {c for group in _CATEGORIES.values() for c in group}


def _pieces(matcher: str) -> tuple[bool, list[tuple[str, str]]] | None:
    """(negated, the pieces: ("char", c), ("range", lo + hi) or ("cat", name)) of a plain
    single-character matcher (a literal, ``\\p{..}``, or a class of those and ranges), or
    None for any other."""
    bracket = matcher.startswith("[") and matcher.endswith("]")
    neg = bracket and matcher.startswith("[^")
    body = matcher[2:-1] if neg else matcher[1:-1] if bracket else matcher
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(body):
        m = _CLASS_PIECE.match(body, pos)
        if m is None:
            return None
        pos = m.end()
        if m.group(3) is not None:
            out.append(("cat", m.group(3)))
        elif m.group(5) == "-" and bracket:
            out.append(("dash", "-"))  # a range, if a character follows
        else:
            ch = (chr(int(m.group(1), 16)) if m.group(1) else _NAMED_ESCAPES[m.group(2)]
                  if m.group(2) else m.group(4) or m.group(5))
            if len(out) >= 2 and out[-1][0] == "dash" and out[-2][0] == "char":
                lo = out[-2][1]
                del out[-2:]
                out.append(("range", lo + ch))
            else:
                out.append(("char", ch))
    return neg, [("char", "-") if kind == "dash" else (kind, v) for kind, v in out]


@functools.lru_cache(maxsize=1024)
def _explicit(matcher: str) -> frozenset[str] | None:
    """The characters a single-character matcher matches, when it names them all (literals
    and ranges, at most 4,096, not negated), else None."""
    got = _pieces(matcher)
    if got is None or got[0] or len(matcher) > 1 and not matcher.startswith(("[", "\\")):
        return None
    out: set[str] = set()
    for kind, value in got[1]:
        if kind == "cat":
            return None
        if kind == "range":
            lo, hi = ord(value[0]), ord(value[1])
            if hi - lo > 4096:
                return None
            out.update(map(chr, range(lo, hi + 1)))
        else:
            out.add(value)
        if len(out) > 4096:
            return None
    return frozenset(out)


@functools.lru_cache(maxsize=1024)
def _categories(matcher: str) -> tuple[bool, frozenset[str], frozenset[str]] | None:
    """(negated, general categories, literal characters) of a matcher made of ``\\p{..}``
    categories and literals (``[^\\r\\n\\p{L}\\p{N}]``), else None."""
    got = _pieces(matcher)
    if got is None:
        return None
    cats: set[str] = set()
    lits: set[str] = set()
    for kind, value in got[1]:
        if kind == "cat":
            if value in _CATEGORIES:
                cats.update(_CATEGORIES[value])
            elif value in _SUBCATEGORIES:
                cats.add(value)
            else:
                return None
        elif kind == "char":
            lits.add(value)
        else:
            return None
    return got[0], frozenset(cats), frozenset(lits)


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
    #: why the pattern's scans need a time budget (:func:`check`), or None
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
    (:func:`check`, before anything is compiled).
    Runtime complexity: ``O(len(pattern))`` (at most 32 sequences per alternation product).
    """
    budget = check(pattern, flavour)
    tree = parse(pattern, flavour)
    form = _form(tree, flavour)
    regex.compile(form)
    min_width = _width(tree)[0]
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
