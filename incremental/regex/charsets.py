"""Character classes: Oniguruma's classes in the ``regex`` package's syntax, and what a
single-character matcher matches.

Each single character of a pattern (a literal, ``.``, ``\\d``, ``[^\\s\\p{L}]``,
``[a-z&&[^aeiou]]``) becomes a *matcher*: a ``regex`` single-character pattern that matches
exactly what Oniguruma (HF ``tokenizers``) or fancy-regex (tiktoken) matches there. This module
holds

* the tables of Oniguruma's shorthand classes, POSIX brackets and property aliases
  (:data:`WORD`: its ``\\w``, which is not the ``regex`` package's);
* the algebra :mod:`.parser` builds a bracketed class with (:data:`CSet`, :func:`union`,
  :func:`negate`, :func:`intersect`, :func:`set_matcher`), and the escaping of a character
  inside a class and outside one (:func:`class_char`, :func:`literal_char`);
* what a matcher's text says it matches, conservatively: the characters it names
  (:func:`spelled`, :func:`explicit`) and whether two matchers can match one character
  (:func:`overlap`; :mod:`.bounds` asks it of the alternatives of a repetition).
"""

from __future__ import annotations

import functools

import regex

__all__ = ["WORD", "WORD_IN_CLASS", "SHORTHAND", "POSIX", "PROPERTY_ALIASES", "CSet", "ANY_CHAR",
           "class_char", "literal_char", "set_matcher", "union", "negate", "intersect",
           "spelled", "explicit", "overlap"]

# --- character sets -----------------------------------------------------------------------

# Oniguruma's \w (Unicode Word): the ``regex`` \w minus the joiners U+200C/U+200D, plus the
# Latin-1 superscripts and fractions (HF's onig; ``tests/unit/test_regex.py`` checks every
# code point)
# (outside a class only: inside one, \w has not these six: HF's onig matches so)
WORD_IN_CLASS = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}"
WORD = WORD_IN_CLASS + r"\xb2\xb3\xb9\xbc-\xbe"
_HEX = r"0-9A-Fa-f"

#: escape -> (class content, negated)
SHORTHAND = {
    "d": (r"\d", False), "D": (r"\d", True),
    "s": (r"\s", False), "S": (r"\s", True),
    "w": (WORD, False), "W": (WORD, True),
    "h": (_HEX, False), "H": (_HEX, True),
}
POSIX = {
    "alpha": r"\p{Alphabetic}", "digit": r"\d", "space": r"\s", "alnum": r"\p{Alphabetic}\d",
    "upper": r"\p{Uppercase}", "lower": r"\p{Lowercase}", "xdigit": _HEX, "word": WORD_IN_CLASS,
    "blank": r"\p{Zs}\t", "cntrl": r"\p{Cc}",
}
PROPERTY_ALIASES = {"word": WORD, "alnum": r"\p{Alphabetic}\d", "xdigit": _HEX}

# A set as ("set", content) (a union of class content), ("neg", content) (its complement) or
# ("expr", matcher) (any single-character pattern).
CSet = tuple[str, str]

_ESCAPE_IN_CLASS = set("\\]^-[&|~")
_ESCAPE_OUT = set("\\.^$|?*+()[]{}")
_NAMED_CONTROLS = {"\n": r"\n", "\r": r"\r", "\t": r"\t", "\x0b": r"\x0b", "\x0c": r"\x0c"}


def _written(c: str, special: set[str]) -> str:
    """``c`` written in a pattern: a named control, ``special`` escaped, other controls
    in hex."""
    if c in _NAMED_CONTROLS:
        return _NAMED_CONTROLS[c]
    if c in special:
        return "\\" + c
    if ord(c) < 32 or ord(c) == 127:
        return f"\\x{ord(c):02x}"
    return c


def class_char(c: str) -> str:
    """``c`` as it is written inside a bracketed class."""
    return _written(c, _ESCAPE_IN_CLASS)


def literal_char(c: str) -> str:
    """``c`` as it is written outside a class (a literal)."""
    return _written(c, _ESCAPE_OUT)


_BARE = regex.compile(r"\\[dsp](?:\{\w+\})?")


def set_matcher(s: CSet) -> str:
    """The single-character pattern of the set ``s``."""
    kind, body = s
    if kind == "set":
        if _BARE.fullmatch(body):
            return body  # \s, \p{L}: no brackets needed
        return f"[{body}]"
    if kind == "neg":
        return f"[^{body}]"
    return body


def union(parts: list[CSet]) -> CSet:
    """The set of the characters of any of ``parts``."""
    pos = "".join(b for k, b in parts if k == "set")
    others = [p for p in parts if p[0] != "set"]
    if not others:
        return ("set", pos)
    if not pos and len(others) == 1:
        return others[0]
    alts = ([f"[{pos}]"] if pos else []) + [set_matcher(p) for p in others]
    return ("expr", "(?:" + "|".join(alts) + ")")


def negate(s: CSet) -> CSet:
    """The complement of ``s``."""
    kind, body = s
    if kind == "set":
        return ("neg", body)
    if kind == "neg":
        return ("set", body)
    return ("expr", f"(?:(?!{body})[\\s\\S])")


def intersect(a: CSet, b: CSet) -> CSet:
    """The characters of both ``a`` and ``b`` (Oniguruma's ``&&``)."""
    return ("expr", f"(?:(?={set_matcher(a)}){set_matcher(b)})")


# --- what a matcher matches ---------------------------------------------------------------

#: any character (what a back-reference may start with)
ANY_CHAR = r"[\s\S]"


_ESCAPED = regex.compile(r"\\(?:x\{([0-9A-Fa-f]+)\}|x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4}))")


def spelled(matcher: str) -> set[str]:
    """The characters a single-character matcher names itself (literally or by a hex
    escape), not those of its properties (``\\p{L}`` matches ``ß`` as one character)."""
    out = set(_ESCAPED.sub("", matcher))
    out.update(chr(int(next(g for g in m.groups() if g), 16)) for m in _ESCAPED.finditer(matcher))
    return out


def overlap(a: list[str], b: list[str]) -> bool:
    """Whether some character matches one of the matchers ``a`` and one of ``b``
    (conservative: True unless shown otherwise)."""
    return any(_pair_overlap(x, y) for x in a for y in b)


@functools.lru_cache(maxsize=4096)
def _pair_overlap(a: str, b: str) -> bool:
    """Whether some character matches both single-character matchers (True unless shown
    otherwise: explicit characters, or general categories and a few literals)."""
    if a == b or ANY_CHAR in (a, b):
        return True
    sa, sb = explicit(a), explicit(b)
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
def explicit(matcher: str) -> frozenset[str] | None:
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
