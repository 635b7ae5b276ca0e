"""The parser: a pattern's text to its syntax tree (:mod:`.syntax`), and what is asked of a
pattern's text.

Recursive descent over the two syntaxes livetok reads: Oniguruma's (Ruby syntax, as HF
``tokenizers`` compiles a ``tokenizer.json``'s ``Split`` patterns and ``Replace`` regexes) and
fancy-regex's (tiktoken's patterns). A bracketed class becomes one matcher (:mod:`.charsets`);
nesting is refused past :data:`MAX_NESTING`, before the recursion that would read it. Of a
pattern's text: :func:`parse`, :func:`translate` (its ``regex`` form), :func:`min_width` and
:func:`alphabet` (the characters a match can contain).
"""

from __future__ import annotations

import functools
from typing import Literal

import regex

from .charsets import (POSIX, PROPERTY_ALIASES, SHORTHAND, WORD, WORD_IN_CLASS, CSet, class_char,
                       intersect, literal_char, negate, set_matcher, union)
from .syntax import (Alt, Anchor, Backref, Chars, Flavour, Group, Look, Node, PatternError, Repeat,
                     Seq, UnsafePattern, depth, regex_form, walk, width)

__all__ = ["MAX_NESTING", "parse", "translate", "min_width", "alphabet"]

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
        if depth(node) > 4 * MAX_NESTING:
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
        return Chars(literal_char(c), ci, frozenset(c) if not ci else None)

    @staticmethod
    def chars(s: CSet, ci: bool) -> Chars:
        return Chars(set_matcher(s), ci)

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
        if c in SHORTHAND:
            body, neg = SHORTHAND[c]
            if self.flavour == "fancy" and c in "wW":
                body = r"\w"  # Rust regex's \w: the regex package's
            if in_class and body == WORD:
                body = WORD_IN_CLASS
            return ("neg", body) if neg else ("set", body)
        if c in "pP":
            m = _PROPERTY.match(self.p, self.i)
            if m is None:
                raise self.error(f"bad \\{c}{{...}}")
            self.i = m.end()
            name = m.group(2)
            body = PROPERTY_ALIASES.get(name.lower(), f"\\p{{{name}}}")
            if in_class and body == WORD:
                body = WORD_IN_CLASS
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
                operands.append(union(parts))
                parts = []
                continue
            if c == "[":
                m = _POSIX_CLASS.match(self.p, self.i)
                if m is not None:
                    self.i = m.end()
                    name = m.group(2)
                    if name not in POSIX:
                        raise self.error(f"unsupported POSIX class {name!r}")
                    parts.append(("neg" if m.group(1) else "set", POSIX[name]))
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
                    parts.append(("set", f"{class_char(lo)}-{class_char(hi)}"))
                    continue
                self.i = save  # '-' before a set: a literal '-'
            if isinstance(lo, str):
                parts.append(("set", class_char(lo)))
            else:
                parts.append(lo)
        result = union(parts)
        for op in reversed(operands):
            result = intersect(op, result)
        return negate(result) if neg else result

    def class_atom(self) -> str | CSet:
        c = self.peek()
        if c == "\\":
            return self.escape_char(in_class=True)
        self.i += 1
        return c


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
    return width(parse(pattern, flavour))[0]


def translate(pattern: str, flavour: Flavour = "oniguruma") -> str:
    """``pattern`` in the ``regex`` package's syntax, matching exactly as HF's Oniguruma
    (``flavour="oniguruma"``) or tiktoken's fancy-regex does.

    >>> translate(r"\\s+$|\\h")
    '\\\\s+(?m:$)|[0-9A-Fa-f]'

    Runtime complexity: ``O(len(pattern))``.
    """
    return regex_form(parse(pattern, flavour), flavour)


def alphabet(pattern: str, flavour: Flavour = "oniguruma") -> str | None:
    """A single-character pattern (``regex`` syntax) matching every character a match of
    ``pattern`` (read as :func:`translate` reads it) can contain; None when ``pattern`` can
    match the empty string or has what one character's test cannot describe: anchors,
    look-around, back-references, case-insensitive parts (full case folding matches ``ß`` by
    ``ss``).

    >>> alphabet(" {2,}"), alphabet(r"[ab]|\\d+"), alphabet("a*"), alphabet(r"\\ba")
    (' ', '(?:[ab]|\\\\d)', None, None)

    Raises :class:`PatternError` when the syntax itself is not understood.
    Runtime complexity: ``O(len(pattern))``.
    """
    tree = parse(pattern, flavour)
    if width(tree)[0] == 0:
        return None
    matchers: list[str] = []
    for node in walk(tree):
        if isinstance(node, (Anchor, Look, Backref)) or isinstance(node, Chars) and node.ci:
            return None
        if isinstance(node, Chars) and node.matcher not in matchers:
            matchers.append(node.matcher)
    return matchers[0] if len(matchers) == 1 else "(?:" + "|".join(matchers) + ")"
