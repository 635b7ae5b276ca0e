"""``.gitignore``-style globs matched without backtracking, and many of them without trying
each one.

A ``.gitignore`` and a budget file's ``files``, ``include`` and ``exclude`` come with a
repository (``docs/security.md``), so matching them must not blow up: ``pathspec`` compiles
each glob to a backtracking regex, where ``*a*a*a*a*a*a*a*a*b`` against a 200-character name
runs for minutes, and tries every glob against every path (a ``.gitignore`` of 150,000 lines:
60 ms a path). :class:`GlobRules` gives the answers ``pathspec.GitIgnoreSpec.check_file``
gives (its pattern normalization, its last-match-wins order with a directory match weaker
than a file match, even its regexes' quirks with a newline in a name), computed this way:

- a path segment's glob (``*``, ``?``, ``[...]``, literal characters) is cut at its stars
  into fixed-length pieces; the first piece must match at the start of the path component,
  the last at its end, and each one between is found leftmost (the classic greedy wildcard
  match, Kirk J. Krauss, "Matching Wildcards: An Algorithm", Dr. Dobb's 2008): a component
  of ``n`` characters costs ``O(n × piece length)`` at worst, never an exponential search;
- ``**`` moves between components only, and the search over where each ``**`` ends is
  memoized on (glob part, component): ``O(parts × components²)`` for a path, in the order a
  backtracking regex tries them, so that the match found (a directory or a file match) is
  the one ``pathspec`` reports;
- the globs are indexed by a literal part each must find in some component (a whole
  segment, its start or its end: ``node_modules``, ``build*``, ``*.pyc``), so a path tries
  only the globs whose part it holds, plus the few that hold no literal at all (``*``,
  ``*x*``), of which a file keeps at most :func:`unindexed_limit`; identical lines count
  once (the last one).

One difference, on purpose: a bracket expression never matches ``/`` (git's rule in
``wildmatch``; ``pathspec``'s ``[!a]`` could match a slash and so join two components).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Final, Iterable, Literal, Sequence

from livetok.incremental.env_limits import size_limit

__all__ = ["UNINDEXED_ENV", "GlobError", "GlobRules", "unindexed_limit"]

#: globs of one file that hold no literal part (tried against every path): at most this many
UNINDEXED_ENV = "LIVETOK_MAX_WILD_GLOBS"
_UNINDEXED = 256

_Result = Literal[0, 1, 2]  # no match, a match as a folder (weaker), a match as a file
_NO: Final = 0
_DIR: Final = 1
_FILE: Final = 2


class GlobError(ValueError):
    """A glob ``pathspec`` could not compile either (a trailing backslash, a bad range such
    as ``[z-a]``, a bare ``!``); the message says which part."""


def unindexed_limit() -> int:
    """The most globs without a literal part one file may hold (``$LIVETOK_MAX_WILD_GLOBS``,
    default 256); the rest are passed over with a warning.

    Runtime complexity: ``O(1)``.
    """
    return size_limit(UNINDEXED_ENV, _UNINDEXED, "globs")


# -- one path segment's glob ------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class _Piece:
    """A run of a segment glob between stars: fixed length, each character literal, ``?`` or
    a bracket expression."""

    regex: re.Pattern[str] | None  # None: ``literal`` says it all
    literal: str
    length: int

    def at(self, s: str, pos: int) -> bool:
        if self.regex is None:
            return s.startswith(self.literal, pos)
        return self.regex.match(s, pos) is not None

    def find(self, s: str, pos: int, end: int) -> int:
        """The end of the leftmost occurrence in ``s[pos:end]``, or -1."""
        if self.regex is None:
            i = s.find(self.literal, pos, end)
            return -1 if i < 0 else i + self.length
        m = self.regex.search(s, pos, end)
        return -1 if m is None else m.end()


@dataclass(slots=True, eq=False)
class _Segment:
    """A path segment's glob: pieces between stars (``starred``: at least one star)."""

    pieces: tuple[_Piece, ...]
    starred: bool
    nonempty: bool = False  # the segment ``*`` alone: one character at least, as pathspec
    #: a bracket expression that could match ``/`` (where this matcher differs, on purpose)
    slash_class: bool = False

    @property
    def literal(self) -> str | None:
        """The segment's text when it has no wildcard at all."""
        if self.starred or self.pieces[0].regex is not None:
            return None
        return self.pieces[0].literal

    def key(self) -> tuple[str, str] | None:
        """A literal part every component it matches holds: ("=", whole), ("<", start) or
        (">", end), or None."""
        if self.literal is not None:
            return ("=", self.literal)
        if not self.starred:
            return None
        head, tail = self.pieces[0], self.pieces[-1]
        if tail.regex is None and tail.length >= max(1, head.length if head.regex is None
                                                     else 0):
            return (">", tail.literal)
        if head.regex is None and head.length >= 1:
            return ("<", head.literal)
        return None

    def matches(self, s: str) -> bool:
        """Whether the component ``s`` (no ``/``) matches.

        Runtime complexity: ``O(len(s) × longest piece)``.
        """
        pieces, n = self.pieces, len(s)
        if not self.starred:
            p = pieces[0]
            return n == p.length and p.at(s, 0)
        if self.nonempty and n == 0:
            return False
        head, tail = pieces[0], pieces[-1]
        end = n - tail.length
        if end < head.length or not head.at(s, 0) or not tail.at(s, end):
            return False
        pos = head.length
        for piece in pieces[1:-1]:  # each one leftmost: a later one can only gain room
            pos = piece.find(s, pos, end)
            if pos < 0:
                return False
        return True


def _bracket(glob: str, i: int) -> tuple[str, int] | None:
    """The regex of the bracket expression opening at ``glob[i - 1]`` and the index past it,
    as pathspec writes it; None: no closing bracket (pathspec then drops the glob)."""
    end = len(glob)
    j = i
    if j < end and glob[j] in "!^":
        j += 1
    if j < end and glob[j] == "]":
        j += 1
    while j < end and glob[j] != "]":
        j += 1
    if j >= end:
        return None
    j += 1
    expr = "["
    if glob[i] in "!^":
        expr += "^"
        i += 1
    return expr + glob[i:j].replace("\\", "\\\\"), j


def _compile(regex: str, errors: list[str]) -> re.Pattern[str] | None:
    """``regex`` compiled (None, and why in ``errors``, when it cannot be: pathspec raises
    only once every segment is read, so the caller raises then)."""
    try:
        with warnings.catch_warnings():  # "possible nested set": pathspec compiles it too
            warnings.simplefilter("ignore")
            return re.compile(regex)
    except re.error as exc:
        errors.append(f"a bad bracket expression ({exc})")
        return None


#: a segment glob's tokens: a run of plain characters, an escaped one, a wildcard
_WILD = re.compile(r"[\\*?\[]")
_TOKEN = re.compile(r"[^\\*?\[]+|\\.?|[*?\[]", re.S)


def _segment(glob: str, errors: list[str]) -> _Segment | None:
    """The segment glob ``glob`` (None: a bracket left open, which pathspec ignores); a
    bracket expression that does not compile is noted in ``errors``."""
    if glob == "*":
        return _Segment((_Piece(None, "", 0), _Piece(None, "", 0)), True, nonempty=True)
    if _WILD.search(glob) is None:  # (most lines: a name)
        return _Segment((_Piece(None, glob, len(glob)),), False)
    pieces: list[_Piece] = []
    parts: list[str] = []  # this piece's regex
    lit: list[str] = []  # and its characters, while it has no wildcard
    length = 0
    plain = True
    slash_class = False
    i, end = 0, len(glob)
    while i < end:
        tok = _TOKEN.match(glob, i)
        assert tok is not None  # (every character starts a token)
        t = tok.group()
        i = tok.end()
        if t == "*":
            pieces.append(_Piece(None if plain else _compile("".join(parts), errors),
                                 "".join(lit), length))
            parts, lit, length, plain = [], [], 0, True
        elif t == "?":
            parts.append("[^/]")
            length += 1
            plain = False
        elif t == "[":
            got = _bracket(glob, i)
            if got is None:
                return None
            expr, i = got
            one = _compile(expr, errors)
            slash_class = slash_class or (one is not None and one.fullmatch("/") is not None)
            parts.append(expr)
            length += 1
            plain = False
        else:  # plain characters, or one escaped
            if t[0] == "\\":
                if len(t) == 1:
                    raise GlobError("a backslash at the end, with nothing to escape")
                t = t[1]
            parts.append(re.escape(t))
            lit.append(t)
            length += len(t)
    pieces.append(_Piece(None if plain else _compile("".join(parts), errors), "".join(lit),
                         length))
    return _Segment(tuple(pieces), len(pieces) > 1, slash_class=slash_class)


# -- one glob line --------------------------------------------------------------------------


_LEAD, _MID, _TRAIL, _SEG = "lead", "mid", "trail", "seg"


@dataclass(slots=True, eq=False)
class _Rule:
    """One glob line: whether a match ignores (``include``) or un-ignores, and either a whole
    path test (``special``) or its parts."""

    include: bool
    special: str | None  # "any": a non-empty path; "slash" / "dirslash": a path with a "/"
    parts: tuple[tuple[str, _Segment | None, bool], ...]  # (kind, segment, needs a "/")
    dir_pattern: bool
    slash_class: bool

    def key(self) -> tuple[str, str] | None:
        for kind, seg, _slash in self.parts:
            if kind == _SEG and seg is not None and (k := seg.key()) is not None:
                return k
        return None

    def match(self, path: str) -> _Result:
        """How ``path`` matches (see :data:`_Result`), as pathspec's regex would say."""
        if self.special is not None:
            if self.special == "any":  # the regex "." : any character but a newline
                return _FILE if path.strip("\n") else _NO
            if "/" not in path:
                return _NO
            return _DIR if self.special == "dirslash" else _FILE
        memo: dict[tuple[int, int], _Result] = {}
        return self._from(0, 0, path, memo)

    def _from(self, k: int, pos: int, path: str, memo: dict[tuple[int, int], _Result]
              ) -> _Result:
        """The first match, in a backtracking regex's order, of parts ``k``... at ``pos``."""
        key = (k, pos)
        got = memo.get(key)
        if got is None:
            got = memo[key] = self._step(k, pos, path, memo)
        return got

    def _step(self, k: int, pos: int, path: str, memo: dict[tuple[int, int], _Result]
              ) -> _Result:
        kind, seg, slash = self.parts[k]
        n = len(path)
        if kind == _LEAD:  # "^(?:.+/)?": the longest prefix ending in "/" first
            nl = path.find("\n")
            r = path.rfind("/", 0, n if nl < 0 else nl)
            while r >= 1:
                if got := self._from(k + 1, r + 1, path, memo):
                    return got
                r = path.rfind("/", 0, r)
            return self._from(k + 1, 0, path, memo)
        if kind == _MID:  # "(?:/.+)?" before a "/": the longest first, then none
            if pos < n and path[pos] == "/":
                nl = path.find("\n", pos)
                r = path.rfind("/", pos + 2, n if nl < 0 else nl + 1)
                while r >= pos + 2:
                    if got := self._from(k + 1, r, path, memo):
                        return got
                    r = path.rfind("/", pos + 2, r)
            return self._from(k + 1, pos, path, memo)
        if kind == _TRAIL:  # "/" (with the folder mark for "name/")
            if pos < n and path[pos] == "/":
                return _DIR if self.dir_pattern else _FILE
            return _NO
        assert seg is not None
        if slash:
            if pos >= n or path[pos] != "/":
                return _NO
            pos += 1
        r = path.find("/", pos)
        last = k == len(self.parts) - 1
        if r < 0:
            r = n
            # "$" also matches before a newline that ends the path
            if not seg.matches(path[pos:]) and not (
                    last and path.endswith("\n") and seg.matches(path[pos:-1])):
                return _NO
        elif not seg.matches(path[pos:r]):
            return _NO
        if last:
            return _DIR if r < n else _FILE
        return self._from(k + 1, r, path, memo)


def _rule(line: str) -> _Rule | None:
    """The rule of one ``.gitignore`` line, None for a line that says nothing (blank, a
    comment, ``/``, an unclosed bracket); :class:`GlobError` when pathspec cannot compile it."""
    text = line if line.endswith("\\ ") else line.rstrip()
    if not text or text.startswith("#") or text == "/":
        return None
    include = not text.startswith("!")
    if not include:
        text = text[1:]
    segs = text.split("/")
    dir_pattern = not segs[-1]
    if not segs[0]:
        del segs[0]
    elif len(segs) == 1 or (len(segs) == 2 and not segs[1]):
        if segs[0] != "**":
            segs.insert(0, "**")
    if not segs:
        raise GlobError("nothing to match")
    if not segs[-1]:
        segs[-1] = "**"
    segs = [s for i, s in enumerate(segs) if not (i and s == "**" and segs[i - 1] == "**")]
    special = None
    if segs == ["**"]:
        special = "dirslash" if dir_pattern else "any"
    elif segs == ["**", "*"]:
        special = "any"
    elif segs == ["**", "*", "**"]:
        special = "dirslash" if dir_pattern else "slash"
    if special is not None:
        return _Rule(include, special, (), dir_pattern, False)
    parts: list[tuple[str, _Segment | None, bool]] = []
    errors: list[str] = []
    need_slash = False
    last = len(segs) - 1
    for i, s in enumerate(segs):
        if s == "**":
            parts.append((_LEAD if i == 0 else _MID if i < last else _TRAIL, None, False))
            need_slash = need_slash or 0 < i < last
            continue
        seg = _segment(s, errors)
        if seg is None:
            return None
        parts.append((_SEG, seg, need_slash))
        need_slash = True
    if errors:
        raise GlobError(errors[0])
    return _Rule(include, None, tuple(parts), dir_pattern,
                 any(seg is not None and seg.slash_class for _k, seg, _s in parts))


# -- many lines -----------------------------------------------------------------------------


#: a line that is a name or "*" and a name: its text and its index key, compiled on use
_Plain = tuple[str, tuple[str, str]]
_PLAIN_LINE = re.compile(r"(\*?)([^\\*?\[/!#][^\\*?\[/]*)")


class GlobRules:
    """The globs of one ``.gitignore`` (or a budget file's list), compiled once.

    >>> rules, problems = GlobRules.from_lines(["*.pyc", "build/", "!keep.pyc"])
    >>> rules.check("a/b.pyc"), rules.check("build/x"), rules.check("keep.pyc"), rules.check("a")
    (True, True, False, None)
    >>> GlobRules.from_lines(["*a*a*a*a*a*a*a*a*b"])[0].check("a" * 200) is None
    True
    """

    def __init__(self, rules: Sequence[_Rule | _Plain | None], *, limit: int | None = None
                 ) -> None:
        self._rules = list(rules)
        self._exact: dict[str, list[int]] = {}
        self._ends: dict[str, list[int]] = {}
        self._starts: dict[str, list[int]] = {}
        self._end_lengths: list[int] = []
        self._start_lengths: list[int] = []
        self._wild: list[int] = []
        #: 1-based lines passed over because more than ``limit`` globs have no literal part
        self.passed_over: list[int] = []
        limit = unindexed_limit() if limit is None else limit
        #: the most globs without a literal part kept (:func:`unindexed_limit`)
        self.limit = limit
        for i, rule in enumerate(rules):
            if rule is None:
                continue
            key = rule[1] if isinstance(rule, tuple) else rule.key()
            if key is None:
                if len(self._wild) >= limit:
                    self.passed_over.append(i + 1)
                    continue
                self._wild.append(i)
            else:
                table = {"=": self._exact, ">": self._ends, "<": self._starts}[key[0]]
                table.setdefault(key[1], []).append(i)
        self._end_lengths = sorted({len(s) for s in self._ends})
        self._start_lengths = sorted({len(s) for s in self._starts})

    @classmethod
    def from_lines(cls, lines: Iterable[str], *, limit: int | None = None
                   ) -> tuple[GlobRules, list[tuple[int, str]]]:
        """The rules of ``lines`` and the lines that could not be compiled (1-based number,
        why); ``limit``: the most globs without a literal part (:func:`unindexed_limit`).

        Runtime complexity: ``O(total length)``.
        """
        rules: list[_Rule | _Plain | None] = []
        problems: list[tuple[int, str]] = []
        last: dict[str, int] = {}
        for n, line in enumerate(lines, 1):
            text = line if line.endswith("\\ ") else line.rstrip()
            plain = _PLAIN_LINE.fullmatch(text)
            if plain is not None:  # "name" or "*.ext": compiled when a path holds its part
                rules.append((text, (">" if plain[1] else "=", plain[2])))
            else:
                try:
                    rules.append(_rule(text))
                except GlobError as exc:
                    rules.append(None)
                    problems.append((n, str(exc)))
                    continue
            if rules[-1] is not None:  # the same line twice: only the last one counts
                if (before := last.get(text)) is not None:
                    rules[before] = None
                last[text] = n - 1
        return cls(rules, limit=limit), problems

    @property
    def slash_classes(self) -> bool:
        """Whether a bracket expression of these globs could match ``/`` (where this matcher
        and ``pathspec`` differ: here it never does)."""
        return any(isinstance(r, _Rule) and r.slash_class for r in self._rules)

    def _candidates(self, path: str) -> list[int]:
        """The rules whose literal part ``path`` holds, and those without one."""
        found = set(self._wild)
        comps = path.split("/")
        if path.endswith("\n"):  # a last component matched up to its newline ("$")
            comps.append(comps[-1][:-1])
        for c in comps:
            if hit := self._exact.get(c):
                found.update(hit)
            for size in self._end_lengths:
                if size > len(c):
                    break
                if hit := self._ends.get(c[len(c) - size:]):
                    found.update(hit)
            for size in self._start_lengths:
                if size > len(c):
                    break
                if hit := self._starts.get(c[:size]):
                    found.update(hit)
        return sorted(found, reverse=True)

    def check(self, path: str) -> bool | None:
        """What ``pathspec.GitIgnoreSpec.check_file(path).include`` says: True when the last
        glob that matches ``path`` as a file (else the last that matches a folder above it)
        ignores it, False when it is a ``!`` glob, None when no glob matches. ``path`` is
        relative, with ``/`` (a trailing one for a folder).

        Runtime complexity: ``O(components × distinct literal lengths)`` lookups, plus
        ``O(parts × components²)`` for each glob whose literal part the path holds.
        """
        if path.startswith("/"):
            path = path[1:]
        elif path.startswith("./"):
            path = path[2:]
        folder: bool | None = None
        for i in self._candidates(path):
            rule = self._rules[i]
            if isinstance(rule, tuple):
                rule = self._rules[i] = _rule(rule[0])
            assert rule is not None
            got = rule.match(path)
            if got == _FILE:
                return rule.include
            if got == _DIR and folder is None:
                folder = rule.include
        return folder

    def without(self, path: str) -> GlobRules:
        """These rules less every one that matches ``path`` (a folder the user named, which
        a ``.gitignore`` above it ignores: its other rules still apply inside it).

        >>> rules, _ = GlobRules.from_lines(["/sub", "*.log"])
        >>> rest = rules.without("sub/")
        >>> rest.check("sub/x.txt"), rest.check("sub/y.log")
        (None, True)

        Runtime complexity: as :meth:`check`, plus ``O(globs)`` to copy.
        """
        rules = list(self._rules)
        for i in self._candidates(path):
            rule = rules[i]
            if isinstance(rule, tuple):
                rule = rules[i] = _rule(rule[0])
            if rule is not None and rule.match(path):
                rules[i] = None
        return GlobRules(rules, limit=self.limit)

    def match(self, path: str) -> bool:
        """Whether the globs select ``path`` (``pathspec``'s ``match_file``).

        Runtime complexity: as :meth:`check`.
        """
        return bool(self.check(path))

    def __bool__(self) -> bool:
        return any(r is not None for r in self._rules)
