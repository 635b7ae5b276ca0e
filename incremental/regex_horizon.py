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
from typing import Literal, Union

import regex

__all__ = ["Derivation", "PatternError", "SplitHorizon", "derive", "translate"]

Flavour = Literal["oniguruma", "fancy"]


class PatternError(ValueError):
    """A pattern this module cannot read (its syntax, not its horizon)."""


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


class _Parser:
    """Recursive descent over Oniguruma (Ruby syntax, as HF ``tokenizers`` compiles it) or
    fancy-regex (tiktoken) patterns. The two differ in ``{n,m}+`` (Ruby: a second quantifier
    ``(?:x{n,m})+``; fancy: possessive), ``{n}?`` (Ruby: optional), ``$`` and ``\\Z``."""

    def __init__(self, pattern: str, flavour: Flavour) -> None:
        self.p = pattern
        self.i = 0
        self.flavour = flavour

    def error(self, what: str) -> PatternError:
        return PatternError(f"{what} at position {self.i} of {self.p!r}")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def parse(self) -> Node:
        node = self.alt(ci=False, dotall=False)
        if self.i != len(self.p):
            raise self.error("unbalanced ')'")
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
                rest = self.alt(ci2, dotall2)
                items.append(Group(rest, self.flag_opener(ci2, dotall2)))
                break
            atom = self.atom(ci, dotall)
            items.append(self.quantifiers(atom))
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def inline_flags(self) -> str | None:
        m = regex.compile(r"\(\?([imx]*(?:-[imx]*)?)\)").match(self.p, self.i)
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
        while True:
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
                m = regex.compile(r"\{(\d*)(,?)(\d*)\}").match(self.p, self.i)
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
                    return Seq(())
                else:
                    m = regex.compile(r"\?(?:P?<([A-Za-z_]\w*)>|([imx]*(?:-[imx]*)?):)").match(
                        self.p, self.i)
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
            m = regex.compile(r"\{(\^?)([\w ]+)\}").match(self.p, self.i)
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
            m = regex.compile(r"\{([0-9A-Fa-f]{1,8})\}|([0-9A-Fa-f]{1,2})").match(self.p, self.i)
            if m is None:
                raise self.error("bad \\x escape")
            self.i = m.end()
            return chr(int(m.group(1) or m.group(2), 16))
        if c == "u":
            m = regex.compile(r"[0-9A-Fa-f]{4}").match(self.p, self.i)
            if m is None:
                raise self.error("bad \\u escape")
            self.i = m.end()
            return chr(int(m.group(0), 16))
        if c == "0":
            m = regex.compile(r"[0-7]{0,2}").match(self.p, self.i)
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
            m = regex.compile(r"\\(\d+)").match(self.p, self.i)
            assert m is not None
            self.i = m.end()
            return Backref(m.group(0))
        if c == "k":
            m = regex.compile(r"\\k<(\w+)>").match(self.p, self.i)
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
                m = regex.compile(r"\[:(\^?)(\w+):\]").match(self.p, self.i)
                if m is not None:
                    self.i = m.end()
                    name = m.group(2)
                    if name not in _POSIX:
                        raise self.error(f"unsupported POSIX class {name!r}")
                    parts.append(("neg" if m.group(1) else "set", _POSIX[name]))
                    continue
                self.i += 1
                parts.append(self.class_body())
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

    Raises :class:`PatternError` when the syntax itself is not understood.
    Runtime complexity: ``O(len(pattern))`` (at most 32 sequences per alternation product).
    """
    tree = parse(pattern, flavour)
    form = _form(tree, flavour)
    regex.compile(form)
    min_width = _width(tree)[0]
    try:
        if min_width == 0:
            raise _Fallback("the pattern can match the empty string")
        progs = _Deriver().expand(tree, 0)
    except _Fallback as why:
        return Derivation(pattern, flavour, form, (), 0, -1, str(why), min_width)
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
    return Derivation(pattern, flavour, form, tuple(readers), base, eot_base, None, min_width)


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
