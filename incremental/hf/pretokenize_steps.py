"""The steps of a ``tokenizer.json`` pre-tokenizer: HF's splits and prepends, on one piece.

HF runs a pre-tokenizer as a list of steps, each applied to every piece the previous step left
(``PreTokenizedString.split``): a regex or character split with one of HF's five behaviours
(:class:`RegexSplit`: ``Split``, ``WhitespaceSplit``, ``Whitespace``, ``Digits``,
``Punctuation``, ``BertPreTokenizer``, ByteLevel's ``use_regex``), and ByteLevel's prefix space
or Metaspace's replace-and-prepend (:class:`Prepend`). A step maps a :class:`Piece` (its string
at that step, and where it comes from in the text) to the pieces it leaves and, when cuts are
wanted, marks in the analysis' :class:`Context` the positions where it does not restart. When
a step restarts, and how :class:`~.pretokenizers.PreTokenizer` composes the steps into cuts and
horizons, is argued in :mod:`.pretokenizers` (*Cuts*, *Horizon*). Regex patterns are
translated and bounded by :mod:`livetok.incremental.regex`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import regex

from ..regex import (BoundedRegex, Derivation, Flavour, SplitHorizon, UnsafePattern,
                      compile_bounded, derive)
from .errors import UnboundedComponent, UnsupportedComponent

__all__ = ["Behavior", "Piece", "Context", "Step", "RegexSplit", "Prepend", "split_step",
           "char_step", "shown_pattern"]

Behavior = Literal["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]


@dataclass(frozen=True)
class Piece:
    """A piece at some step: ``x`` is its string there (prepends applied, replacements made);
    ``x[plen:]`` comes from ``s[start:start + len(x) - plen]``."""

    x: str
    start: int
    plen: int
    frag: bool  # starts strictly inside a piece of the text's split: no prepends

    def s_pos(self, i: int) -> int:
        return self.start + max(0, i - self.plen)

    def sub(self, a: int, b: int) -> Piece:
        return Piece(self.x[a:b], self.s_pos(a), max(0, min(b, self.plen) - a),
                      self.frag and a == 0)

    @property
    def end(self) -> int:
        return self.s_pos(len(self.x))

    def offsets(self) -> tuple[int, int]:
        """HF's offsets: a prepended character has those of the character it precedes."""
        end = self.end
        return self.start, end if end > self.start or not self.x else end + 1


class Context:
    """One analysis: the text start flag and, when cuts are wanted, the bad positions."""

    def __init__(self, lo: int, hi: int, text_start: bool, want_bad: bool) -> None:
        self.lo = lo
        self.text_start = text_start
        self.bad = bytearray(hi - lo + 1) if want_bad else None
        #: positions ``c`` whose ``c - 1`` is in a regex step's gap: whether ``c`` is a
        #: boundary there depends on the match attempt *at* ``c``
        self.after_gap = bytearray(hi - lo + 1) if want_bad else None

    def mark_after_gap(self, a: int, b: int) -> None:
        if self.after_gap is not None and b > a:
            self.after_gap[a - self.lo: b - self.lo] = b"\x01" * (b - a)

    def mark(self, a: int, b: int) -> None:
        """Positions ``a .. b-1`` (text offsets) are not cuts."""
        if self.bad is not None and b > a:
            self.bad[a - self.lo: b - self.lo] = b"\x01" * (b - a)


class Step:
    #: the step is a regex split whose reach matters for horizons
    horizon: SplitHorizon | None = None
    #: Metaspace replaced spaces before this step (its reach runs on the replaced text)
    replaced: str | None = None

    def apply(self, p: Piece, ctx: Context) -> list[Piece]:
        raise NotImplementedError


class RegexSplit(Step):
    """HF ``NormalizedString::split`` with a pattern: matches and the gaps between them,
    grouped by the behaviour, the matches kept or removed (``invert`` swaps the roles)."""

    def __init__(self, form: str, derivation: Derivation | None, behavior: Behavior,
                 invert: bool, char_split: bool, what: str = "") -> None:
        # a pattern whose shape needs it scans under a time budget (regex.check);
        # ``what`` names the file and the step in the error past it
        self.regex: BoundedRegex = compile_bounded(
            form, derivation.budget if derivation is not None else None,
            what=what or f"pre-tokenizer pattern {form!r}", error=UnboundedComponent)
        self.behavior = behavior
        self.invert = invert
        #: a split on single characters (matches never span two): no context, no horizon
        self.char_split = char_split
        self.horizon = None if char_split or derivation is None else SplitHorizon(derivation)
        #: empty matches are possible: Oniguruma's iteration rule must be followed
        self.nullable = derivation is None or derivation.min_width == 0

    def matches(self, x: str) -> list[tuple[int, int]]:
        """Match spans as Oniguruma's ``find_iter`` gives them (an empty match right where
        the previous match ended is skipped)."""
        if not self.nullable:
            return [m.span() for m in self.regex.finditer(x)]
        out: list[tuple[int, int]] = []
        at, last = 0, -1
        while at <= len(x):
            m = self.regex.search(x, at)
            if m is None:
                break
            s, e = m.span()
            if s == e and last == e:
                at += 1
                continue
            out.append((s, e))
            at = last = e
        return out

    def spans(self, x: str) -> list[tuple[int, int, bool]]:
        """(start, end, is_match) of the matches and gaps of ``x`` (HF ``find_matches``,
        with ``invert``)."""
        if not x:
            return [(0, 0, False)]
        out: list[tuple[int, int, bool]] = []
        prev = 0
        for s, e in self.matches(x):
            if prev != s:
                out.append((prev, s, self.invert))
            out.append((s, e, not self.invert))
            prev = e
        if prev != len(x):
            out.append((prev, len(x), self.invert))
        return out

    def group(self, spans: list[tuple[int, int, bool]]) -> list[tuple[int, int, bool]]:
        """(start, end, removed) after the behaviour (HF ``NormalizedString::split``)."""
        b = self.behavior
        if b == "isolated":
            return [(s, e, False) for s, e, _ in spans]
        if b == "removed":
            return spans
        out: list[list[Any]] = []
        prev_match = False
        if b == "merged_with_next":
            for s, e, m in reversed(spans):
                if m and not prev_match and out:
                    out[-1][0] = s
                else:
                    out.append([s, e, False])
                prev_match = m
            out.reverse()
        else:
            for s, e, m in spans:
                merge = (m and not prev_match) if b == "merged_with_previous" else (m == prev_match)
                if merge and out:
                    out[-1][1] = e
                else:
                    out.append([s, e, False])
                prev_match = m
        return [(s, e, r) for s, e, r in out]

    def apply(self, p: Piece, ctx: Context) -> list[Piece]:
        spans = self.spans(p.x)
        if ctx.bad is not None:
            self.mark(p, spans, ctx)
        return [p.sub(s, e) for s, e, removed in self.group(spans) if not removed and e > s]

    def mark(self, p: Piece, spans: list[tuple[int, int, bool]], ctx: Context) -> None:
        """Mark the positions of ``p`` where the split does not restart (:mod:`.pretokenizers`,
        *Cuts*)."""
        if self.horizon is not None and self.horizon.fallback is not None:
            ctx.mark(p.start + 1, p.end)  # no restart inside the piece at all
            return
        x = p.x
        for s, e, is_match in spans:
            if is_match != self.invert:
                ctx.mark(p.s_pos(s) + 1, p.s_pos(e))
            elif self.horizon is not None:
                ctx.mark_after_gap(p.s_pos(s) + 1, p.s_pos(e) + 1)
        h = self.horizon
        if h is None or not h.has_eot:
            return
        for s, e, is_match in spans:
            if is_match != self.invert:
                if e < len(x) and h.eot_reach(x, s, len(x)) > e:
                    ctx.mark(p.s_pos(e), p.s_pos(e) + 1)
            else:
                for c in range(max(s + 1, p.plen + 1), min(e + 1, len(x))):
                    if h.eot_reach(x, c - 1, len(x)) > c:
                        ctx.mark(p.s_pos(c), p.s_pos(c) + 1)


    def spans_in(self, s: str, a: int, b: int) -> list[tuple[int, int, bool]]:
        """:meth:`spans` of ``s[a:b]``, offsets into ``s``: ``finditer`` with pos/endpos where
        the pattern reads nothing left of a match, a slice otherwise."""
        if self.nullable or (self.horizon is not None and self.horizon.fallback is not None):
            return [(x + a, y + a, m) for x, y, m in self.spans(s[a:b])]
        inv = self.invert
        out: list[tuple[int, int, bool]] = []
        prev = a
        for m in self.regex.finditer(s, a, b):
            x, y = m.span()
            if prev != x:
                out.append((prev, x, inv))
            out.append((x, y, not inv))
            prev = y
        if prev != b:
            out.append((prev, b, inv))
        return out

    def mark_in(self, s: str, a: int, b: int, spans: list[tuple[int, int, bool]],
                ctx: Context) -> None:
        """:meth:`mark` for the piece ``s[a:b]`` (no prepended characters)."""
        if self.horizon is not None and self.horizon.fallback is not None:
            ctx.mark(a + 1, b)
            return
        for x, y, is_match in spans:
            if is_match != self.invert:
                ctx.mark(x + 1, y)
            elif self.horizon is not None:
                ctx.mark_after_gap(x + 1, y + 1)
        h = self.horizon
        if h is None or not h.has_eot:
            return
        for x, y, is_match in spans:
            if is_match != self.invert:
                if y < b and h.eot_reach(s, x, b) > y:
                    ctx.mark(y, y + 1)
            else:
                for c in range(x + 1, min(y + 1, b)):
                    if h.eot_reach(s, c - 1, b) > c:
                        ctx.mark(c, c + 1)


class Prepend(Step):
    """ByteLevel's prefix space or Metaspace's replacement and prepend."""

    def __init__(self, char: str, scheme: Literal["always", "first", "never"],
                 replace_spaces: bool) -> None:
        self.char = char
        self.scheme = scheme
        self.replace_spaces = replace_spaces

    def apply(self, p: Piece, ctx: Context) -> list[Piece]:
        x = p.x.replace(" ", self.char) if self.replace_spaces else p.x
        wants = self.scheme == "always" or (
            self.scheme == "first" and ctx.text_start and p.s_pos(0) == 0)
        if not wants or x.startswith(self.char):
            return [Piece(x, p.start, p.plen, p.frag)]
        if p.frag:
            return [Piece(x, p.start, p.plen, p.frag)]  # a fragment of a piece: no prepend
        if p.s_pos(0) > ctx.lo:
            # a piece an earlier step started here gets the prepend; the fragment s[c:] would not
            ctx.mark(p.s_pos(0), p.s_pos(0) + 1)
        return [Piece(self.char + x, p.start, p.plen + 1, p.frag)]


def split_step(pattern: str, flavour: Flavour, behavior: Behavior, invert: bool,
               source: str, shown: str = "") -> RegexSplit:
    """The step of a ``Split`` on ``pattern`` (a regex of ``flavour``), whose work is bounded
    (``UnboundedComponent`` else); ``shown`` names the pattern in messages."""
    what = f"{source}: pre-tokenizer Split pattern {shown or shown_pattern(pattern)}"
    try:
        d = derive(pattern, flavour)
    except UnsafePattern as e:
        raise UnboundedComponent(
            f"{what}: refused: {e} (livetok runs a tokenizer.json's regexes only when their "
            "work is bounded)") from None
    except (regex.error, ValueError) as e:
        raise UnsupportedComponent(
            f"{what}: not understood ({e}); livetok cannot split with it exactly"
        ) from None
    return RegexSplit(d.regex_form, d, behavior, invert, char_split=False, what=what)


def shown_pattern(pattern: str) -> str:
    """A file's pattern in a message: quoted, at most 80 characters (it can be 10,000)."""
    return repr(pattern if len(pattern) <= 80 else pattern[:77] + "...")


def char_step(form: str, behavior: Behavior, invert: bool = False) -> RegexSplit:
    """The step of a split on single characters of the class ``form`` (no context, no
    horizon)."""
    return RegexSplit(form, None, behavior, invert, char_split=True)
