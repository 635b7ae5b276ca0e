"""The syntax tree of a pre-tokenizer pattern, its walks and widths, and its ``regex`` form.

:mod:`.parser` reads a pattern (Oniguruma's syntax, as HF ``tokenizers`` compiles a
``tokenizer.json``'s regexes, or fancy-regex's, tiktoken's) into a tree of the nodes here:
:class:`Chars` (one character of a set, as a matcher in the ``regex`` package's syntax),
:class:`Seq`, :class:`Alt`, :class:`Repeat`, :class:`Group`, :class:`Look`, :class:`Anchor` and
:class:`Backref`. This module holds the tree and what is read off it alone: its walks
(:func:`walk`, :func:`kids`, :func:`depth`), the widths of its matches (:func:`width`) and its
rendering in the ``regex`` package's syntax (:func:`render`, :func:`regex_form`: it matches
exactly as the pattern's own engine does); and the package's errors (:class:`PatternError`,
:class:`UnsafePattern`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from .charsets import WORD, spelled

__all__ = ["Flavour", "PatternError", "UnsafePattern", "Chars", "Seq", "Alt", "Repeat", "Group",
           "Look", "Anchor", "Backref", "Node", "walk", "kids", "depth", "width", "char_pattern",
           "render", "regex_form"]

Flavour = Literal["oniguruma", "fancy"]


class PatternError(ValueError):
    """A pattern this package cannot read (its syntax, not its horizon)."""


class UnsafePattern(PatternError):
    """A pattern whose matching work livetok cannot bound: longer or larger than its limits,
    nested too deep, or of a shape that backtracks catastrophically (:func:`.bounds.check`)."""


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


# --- walks --------------------------------------------------------------------------------


def kids(node: Node, into_looks: bool = True) -> tuple[Node, ...]:
    """The children of ``node`` (those of a look-around only when ``into_looks``)."""
    if isinstance(node, Seq):
        return node.items
    if isinstance(node, Alt):
        return node.options
    if isinstance(node, (Repeat, Group)):
        return (node.node,)
    if isinstance(node, Look) and into_looks:
        return (node.node,)
    return ()


def walk(node: Node, into_looks: bool = True) -> list[Node]:
    """``node`` and every node under it, in pre-order (inside look-arounds when
    ``into_looks``)."""
    out: list[Node] = [node]
    for kid in kids(node, into_looks):
        out.extend(walk(kid, into_looks))
    return out


def depth(tree: Node) -> int:
    """The depth of ``tree`` (iterative: it is what bounds the recursive walks)."""
    deepest = 0
    stack: list[tuple[Node, int]] = [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((kid, d + 1) for kid in kids(node, into_looks=True))
    return deepest


def char_pattern(c: Chars) -> str:
    """The single-character pattern of ``c``, case-insensitive when it is."""
    return f"(?i:{c.matcher})" if c.ci else c.matcher


# --- widths -------------------------------------------------------------------------------


def width(node: Node) -> tuple[int, int | None]:
    """(fewest, most) characters ``node`` consumes (None: unbounded)."""
    if isinstance(node, Chars):
        return 1, 1
    if isinstance(node, Seq):
        lo = 0
        hi: int | None = 0
        for n in node.items:
            a, b = width(n)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return lo, hi
    if isinstance(node, Alt):
        ws = [width(n) for n in node.options]
        his = [b for _, b in ws]
        return min(a for a, _ in ws), None if None in his else max(b for b in his if b is not None)
    if isinstance(node, Repeat):
        a, b = width(node.node)
        if b == 0:
            return 0, 0
        return a * node.lo, None if node.hi is None or b is None else b * node.hi
    if isinstance(node, Group):
        return width(node.node)
    if isinstance(node, Backref):
        return 0, None
    return 0, 0  # look-around, anchors


# --- rendering in the regex package's syntax ----------------------------------------------

_ANCHORS = {
    "^": r"(?m:^)",  # Oniguruma's ^ and $ are always line anchors (\n only)
    "$": r"(?m:$)",
    "A": r"\A",
    "z": r"\Z",  # regex's \Z is the very end, Oniguruma's \z
    "Z": r"(?=\n?\Z)",
    "b": f"(?:(?<=[{WORD}])(?![{WORD}])|(?<![{WORD}])(?=[{WORD}]))",
    "B": f"(?:(?<=[{WORD}])(?=[{WORD}])|(?<![{WORD}])(?![{WORD}]))",
    "G": r"\G",
}


def render(node: Node) -> str:
    """``node`` in the ``regex`` package's syntax (without the case-folding flag
    :func:`regex_form` puts before a whole pattern)."""
    if isinstance(node, Chars):
        return node.matcher
    if isinstance(node, Seq):
        return "".join(render(n) for n in node.items)
    if isinstance(node, Alt):
        return "|".join(render(n) for n in node.options)
    if isinstance(node, Repeat):
        inner = render(node.node)
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
        return f"{node.opener}{render(node.node)})"
    if isinstance(node, Look):
        op = ("(?" if node.ahead else "(?<") + ("!" if node.negative else "=")
        return f"{op}{render(node.node)})"
    if isinstance(node, Anchor):
        return _ANCHORS[node.kind]
    return node.text


def regex_form(tree: Node, flavour: Flavour) -> str:
    """The ``regex`` form of a parsed pattern. Oniguruma, as HF runs it, folds case *fully*
    under ``(?i)`` (``ss`` matches ``ß``), the Rust crates of tiktoken simply: an Oniguruma
    pattern with case-insensitive parts gets the ``regex`` package's ``FULLCASE`` flag
    (``(?f)``, which acts only where ``(?i)`` does). A case-insensitive character of the
    pattern that folds to several (``ß``, ``ﬁ``) is refused: the ``regex`` package does not
    match it as Oniguruma does (``(?fi:ß)`` misses ``ß`` itself), and it would widen a match
    past what the derivation reads."""
    form = render(tree)
    if flavour != "oniguruma":
        return form
    ci = [n for n in walk(tree) if isinstance(n, Chars) and n.ci]
    if not ci:
        return form
    multi = sorted({c for n in ci for c in spelled(n.matcher) if len(c.casefold()) > 1})
    if multi:
        raise PatternError(
            f"case-insensitive {''.join(multi)!r}: Oniguruma folds it to several characters "
            "(full case folding), which the regex package does not reproduce")
    return "(?f)" + form
