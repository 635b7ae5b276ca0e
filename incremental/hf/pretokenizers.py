"""The pre-tokenizers of ``tokenizer.json`` files, as splitters with restartable cuts and
horizons.

Every HF pre-tokenizer here is a list of *steps*, each applied to every piece the previous
step left (HF's ``PreTokenizedString.split``; a ``Sequence`` is its steps in order, nested
sequences flattened): a regex or character split with one of HF's five behaviours
(``Split``, ``WhitespaceSplit``, ``Whitespace``, ``Digits``, ``Punctuation``,
``BertPreTokenizer``, ByteLevel's ``use_regex``), Metaspace's replace-and-prepend, and
ByteLevel's prefix space (the steps: :mod:`.pretokenize_steps`). Regex patterns are
translated and bounded by :mod:`livetok.incremental.regex`. This module composes the steps
(:class:`PreTokenizer`: HF's ``pre_tokenize_str``, the cuts and horizons argued below) and
builds them from a file's ``pre_tokenizer`` section (:func:`build_pre_tokenizer`).

**Cuts.** A position ``c`` is a cut when pre-tokenizing ``s[:c]`` and ``s[c:]`` (the latter as
a fragment, ``first=False``) gives the pre-tokens of ``s``. Walking the steps, ``c`` is either
still strictly inside a piece of the current step's input, or it became a piece boundary at
an earlier step. A step keeps ``c`` restartable when:

- regex split: ``c`` is not strictly inside a match (restarting there finds another match)
  and no end-of-text-sensitive read of the attempts left of ``c`` reaches ``c`` (look-ahead
  would see the end of the left part: ``regex.horizon``'s ``eot_reach``). Then the search
  restarted at ``c`` finds the same next match (matches read nothing left of their start), and
  the piece holding ``c`` is cut in two; every behaviour's grouping gives exactly its two halves
  (checked case by case: a merge only joins a match to its neighbour, and the first or last
  piece of a part has no neighbour there);
- character splits and Metaspace's replacement: always (they read one character);
- a prepend (ByteLevel ``add_prefix_space``, Metaspace ``always``): when ``c`` became a piece
  boundary at an earlier step, HF prepends to the piece starting at ``c`` and the fragment
  ``s[c:]`` gets none, unless it already starts with the prepended character.

Finally ``c`` must not be strictly inside a kept pre-token. This is the ``Sequence`` rule: a
cut strictly inside a piece of an earlier step that a later step split is restartable only if
every step up to the one that split there restarts at ``c``.

**Horizon** of the cut-piece ending at ``c``: every decision that makes ``c`` the next cut (the
match or gap that ends at ``c``, the rejected positions before it, the end-of-text checks) is
a match attempt at some position ``< c`` of some regex step, whose reads stop before
``H_step(c - 1)`` (the steps' reach ``H`` is non-decreasing), or reads ``s[c]`` (character
splits, prepends); except where ``c - 1`` lies in a gap of some regex step: there ``c`` ends
the gap only if a match starts at ``c``, and the attempt at ``c`` counts (``H_step(c)``). So
``max(c + 1, H_step(c - 1 or c))`` over the regex steps bounds it, and being a
non-decreasing function of ``c`` it is dominated by later pieces.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator, Literal, overload

import regex

from ..regex import BoundedRegex, derive
from .errors import UnsupportedComponent
from .pretokenize_steps import (Behavior, Context, Piece, Prepend, RegexSplit, Step, char_step,
                                shown_pattern, split_step)

__all__ = ["PreTokenizer", "build_pre_tokenizer", "GPT2_PATTERN"]

#: ``bytearray.translate`` table: a place's bad flag (0 good, 1 bad) to a 1 where it is good
_GOOD = bytes([1] + [0] * 255)

#: ByteLevel's ``use_regex`` pattern (HF ``pre_tokenizers/byte_level.rs``, Oniguruma syntax)
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# Rust's char::is_ascii_punctuation or Unicode P* (HF's is_punc / is_bert_punc)
_PUNCT = r"[!-/:-@\[-`{-~\p{P}]"

_BEHAVIORS: dict[str, Behavior] = {
    "removed": "removed", "isolated": "isolated", "mergedwithprevious": "merged_with_previous",
    "mergedwithnext": "merged_with_next", "contiguous": "contiguous",
}

#: the first window (characters) that :meth:`PreTokenizer.cuts` analyses; it grows by 4x
#: while no cut in it is certain
_WINDOW = 4096
#: the first window :meth:`PreTokenizer.horizon` analyses (it needs one cut)
_HORIZON_WINDOW = 48


class PreTokenizer:
    """A ``tokenizer.json`` pre-tokenizer: HF's ``pre_tokenize_str`` (without the byte
    mapping), restartable cuts and horizons.

    >>> p = build_pre_tokenizer({"type": "Whitespace"}, source="example")
    >>> [t for t, _ in p.pre_tokenize("Hi, you!", first=True, text_start=True)]
    ['Hi', ',', 'you', '!']
    >>> list(p.cuts("Hi, you!"))
    [2, 3, 4, 7, 8]
    """

    def __init__(self, steps: list[Step], *, byte_level: bool, description: str) -> None:
        self._steps = steps
        self.byte_level = byte_level
        self.description = description
        self._regex_steps = [s for s in steps if s.horizon is not None]
        # Metaspace's replacement seen by each regex step
        replaced: str | None = None
        for s in steps:
            if isinstance(s, Prepend) and s.replace_spaces:
                replaced = s.char
            if s.horizon is not None:
                s.replaced = replaced
        self.fallback = next(
            (s.horizon.fallback for s in self._regex_steps
             if s.horizon is not None and s.horizon.fallback is not None), None)
        self._fast = self._fast_split(steps)
        #: only splits: the general path on spans of the text (:meth:`_run_plain`)
        self._plain = all(isinstance(st, RegexSplit) for st in steps)
        #: a prepend step (ByteLevel add_prefix_space, Metaspace): pieces and horizons depend
        #: on ``first`` / ``text_start``
        self.has_prepend = not self._plain
        #: the last split when it decides the usual piece alone, lazy (Isolated or Removed,
        #: never empty) and derived: the whole pre-tokenizer (Llama 3, Qwen, gpt-oss, GPT-4o,
        #: Tekken), or the last of a splits-only sequence whose earlier steps qualify for
        #: :meth:`_plain_shortcut` (DeepSeek V3: :attr:`_solo_before`), which it decides in
        #: the regions those steps leave. :meth:`horizon` answers the usual case in one frame.
        self._solo: RegexSplit | None = None
        #: the earlier steps of the sequence (:meth:`_plain_shortcut`)
        self._solo_before: list[RegexSplit] = []
        #: the solo split's regex when its matches are the pre-tokens (Isolated, or Removed
        #: with ``invert``): a text it matches whole is one pre-token (:meth:`one_pretoken`)
        self._whole_re: BoundedRegex | None = None
        last = steps[-1] if steps else None
        if self._plain and isinstance(last, RegexSplit) and not last.nullable \
                and last.behavior in ("isolated", "removed") and last.horizon is not None \
                and last.horizon.fallback is None:
            before = [st for st in steps[:-1] if isinstance(st, RegexSplit)]
            if len(before) == len(steps) - 1 and all(
                    not st.nullable and st.behavior == "isolated" and not st.invert
                    and st.horizon is not None and st.horizon.fallback is None
                    and not st.horizon.has_eot for st in before):
                self._solo, self._solo_before = last, before
                if (last.behavior == "isolated") != last.invert:
                    self._whole_re = last.regex

    @staticmethod
    def _fast_split(steps: list[Step]) -> RegexSplit | None:
        """The one split, on the original text, of a pre-tokenizer made of prepends and then
        one split (Llama 3, Qwen, gpt-oss, Tekken, Gemma, Metaspace, ByteLevel): its pieces are
        the split's except for a prepend at a segment start (handled by the general path)."""
        if not steps or not isinstance(steps[-1], RegexSplit):
            return None
        split, before = steps[-1], steps[:-1]
        if not all(isinstance(b, Prepend) for b in before):
            return None
        if split.horizon is not None and split.horizon.fallback is not None:
            return None
        replaced = [b.char for b in before if isinstance(b, Prepend) and b.replace_spaces]
        if not replaced:
            return split
        if not split.char_split or split.regex.pattern != regex.escape(replaced[-1]):
            return None  # a regex over Metaspace's replaced text: the general path
        # Metaspace's split on its replacement, which every space has become
        return char_step(f"[ {regex.escape(replaced[-1])}]", split.behavior, split.invert)

    def _prepends_at_start(self, s: str, first: bool, text_start: bool) -> bool:
        """Whether a prepend applies to ``s`` itself (then the general path splits it)."""
        for st in self._steps:
            if isinstance(st, Prepend) and first and s:
                c = s[0].replace(" ", st.char) if st.replace_spaces else s[0]
                if c != st.char and (st.scheme == "always" or st.scheme == "first" and text_start):
                    return True
        return False

    def _fast_spans(self, s: str, lo: int, hi: int) -> list[tuple[int, int, bool]]:
        """(start, end, is_match) of ``s[lo:hi]`` by the fast split (offsets into ``s``)."""
        assert self._fast is not None
        return self._fast.spans_in(s, lo, hi)

    def _fast_analyze(self, s: str, lo: int, hi: int, want: int) -> list[tuple[int, int]]:
        """:meth:`_analyze` for the fast split: the boundaries of its grouped pieces (and the
        inside of removed gaps), less those an end-of-text-sensitive read reaches."""
        split = self._fast
        assert split is not None
        if self._lazy_fast():
            return self._fast_analyze_lazy(s, lo, hi, want)
        spans = self._fast_spans(s, lo, hi)
        h = split.horizon if split.horizon is not None and split.horizon.has_eot else None
        inv = split.invert
        # the span holding each position c - 1: (start, is a real match)
        ends = {e for _, e, _ in split.group(spans)}
        out: list[tuple[int, int]] = []
        for a, b, is_match in spans:
            real = is_match != inv
            if not real and split.behavior == "removed" and inv:
                inner = range(a + 1, b + 1)  # a removed gap: any position inside
            elif b in ends:
                inner = range(b, b + 1)
            else:
                continue
            for c in inner:
                if c <= lo or c > hi:
                    continue
                if h is not None and c < hi:
                    at = a if real else c - 1
                    if h.eot_reach(s, at, hi) > c:
                        continue
                out.append((c, c - 1 if real else c))
                if len(out) >= want:
                    return out
        return out

    def _fast_analyze_lazy(self, s: str, lo: int, hi: int, want: int) -> list[tuple[int, int]]:
        """:meth:`_fast_analyze` for the behaviours whose pieces are the spans themselves
        (Isolated, Removed): the matches are read lazily and the scan stops at ``want`` cuts
        (a horizon wants one). The same cuts, in the same order (a test compares them)."""
        return list(itertools.islice(self._fast_cuts_iter(s, lo, hi), want))

    def _lazy_fast(self) -> bool:
        split = self._fast
        return (split is not None and split.behavior in ("isolated", "removed")
                and not split.nullable)

    def _plain_shortcut(self, s: str, lo: int, hi: int) -> Iterator[tuple[int, int]] | None:
        """The cuts of ``s[lo:hi]`` for a splits-only sequence whose steps before the last are
        Isolated, not inverted, never empty and read nothing past their match (DeepSeek's
        digits and CJK runs before its main pattern: :attr:`_solo_before`), lazily; else None.

        Such steps leave the window as their first matches' *regions*: from a boundary
        ``pos``, the first match of any of them (``d``: each step searched up to the previous
        one's match, as it runs on the pieces the previous one left) is a piece boundary, so

        * ``[pos, d)`` is one gap for each of them: it marks no position there and every
          position follows its gap, so the cuts are the last step's on ``[pos, d)`` read as a
          text of its own (:meth:`_fast_cuts_iter`), ending with ``d``, each decided at ``c``;
        * the match ``[d, e)`` is one piece (its step marks the inside), so ``e`` is the one
          cut, taken as decided at ``e`` (the general analysis says ``e`` or ``e - 1``: the
          larger is sound, the reach growing with the position);

        and the analysis restarts at ``e`` (no step reads left of a match). The cuts are the
        general analysis's (:meth:`_run_plain`; a test compares them)."""
        last = self._solo
        before = self._solo_before
        if last is None or not before:
            return None
        return self._plain_cuts_iter(s, lo, hi, last, before)

    def _plain_cuts_iter(self, s: str, lo: int, hi: int, last: RegexSplit,
                         before: list[RegexSplit]) -> Iterator[tuple[int, int]]:
        pos = lo
        while pos < hi:
            d = e = hi
            for st in before:
                m = st.regex.search(s, pos, d)
                if m is not None:
                    d, e = m.span()
            if d > pos:
                for c, _ in self._fast_cuts_iter(s, pos, d, last):
                    yield c, c
                pos = d
            else:
                yield e, e
                pos = e

    def _fast_cuts_iter(self, s: str, lo: int, hi: int, split: RegexSplit | None = None
                        ) -> Iterator[tuple[int, int]]:
        """The cuts of :meth:`_fast_analyze_lazy` (of ``split``, default the fast split), one
        at a time."""
        split = split or self._fast
        assert split is not None
        h = split.horizon if split.horizon is not None and split.horizon.has_eot else None
        eot = h.eot_reach if h is not None else None
        gaps_inside = split.behavior == "removed" and split.invert
        prev = lo
        for m in split.regex.finditer(s, lo, hi):
            x, y = m.span()
            if prev != x:
                # a gap [prev, x): its end, or (removed) any position inside it
                for c in (range(prev + 1, x + 1) if gaps_inside else (x,)):
                    if c > lo and (eot is None or c >= hi or eot(s, c - 1, hi) <= c):
                        yield c, c
            if y > lo and (eot is None or y >= hi or eot(s, x, hi) <= y):
                yield y, y - 1
            prev = y
        if prev != hi:
            for c in (range(prev + 1, hi + 1) if gaps_inside else (hi,)):
                if c > lo and (eot is None or c >= hi or eot(s, c - 1, hi) <= c):
                    yield c, c

    def _run(self, s: str, lo: int, hi: int, *, first: bool, text_start: bool,
             want_bad: bool) -> tuple[list[Piece], Context]:
        ctx = Context(lo, hi, text_start and lo == 0, want_bad)
        pieces = [Piece(s[lo:hi], lo, 0, frag=not first)] if hi > lo else []
        for step in self._steps:
            nxt: list[Piece] = []
            for p in pieces:
                nxt.extend(step.apply(p, ctx))
            pieces = nxt
        for p in pieces:
            ctx.mark(p.start + 1, p.end)
        return pieces, ctx

    def _run_plain(self, s: str, lo: int, hi: int, want_bad: bool
                   ) -> tuple[list[tuple[int, int]], Context]:
        """:meth:`_run` for splits only (no prepend, no replacement): pieces are spans of
        ``s``, each step runs on the text itself with pos/endpos (DeepSeek's three Splits,
        BERT)."""
        ctx = Context(lo, hi, False, want_bad)
        pieces = [(lo, hi)] if hi > lo else []
        for step in self._steps:
            assert isinstance(step, RegexSplit)
            nxt: list[tuple[int, int]] = []
            for a, b in pieces:
                spans = step.spans_in(s, a, b)
                if want_bad:
                    step.mark_in(s, a, b, spans, ctx)
                nxt.extend((x, y) for x, y, removed in step.group(spans) if not removed and y > x)
            pieces = nxt
        if want_bad:
            for a, b in pieces:
                ctx.mark(a + 1, b)
        return pieces, ctx

    def pre_tokenize(self, s: str, *, first: bool, text_start: bool
                     ) -> list[tuple[str, tuple[int, int]]]:
        """HF's ``pre_tokenize_str`` of ``s`` (no byte mapping; offsets into ``s``).

        Runtime complexity: ``O(len(s))`` per step.
        """
        split = self._fast
        if split is not None and self._prepends_at_start(s, first, text_start):
            # the prepend changes only the pieces before the first cut (restartability)
            c = next(self.cuts(s, 0, first=first, text_start=text_start), len(s))
            if c < len(s):
                head, _ = self._run(s, 0, c, first=first, text_start=text_start,
                                    want_bad=False)
                tail = self.pre_tokenize(s[c:], first=False, text_start=False)
                return [(p.x, p.offsets()) for p in head] + [
                    (x, (a + c, b + c)) for x, (a, b) in tail]
        elif split is not None:
            rep = next((st.char for st in self._steps
                        if isinstance(st, Prepend) and st.replace_spaces), None)
            kept = [(a, b) for a, b, removed in split.group(self._fast_spans(s, 0, len(s)))
                    if not removed and b > a]
            if rep is None:
                return [(s[a:b], (a, b)) for a, b in kept]
            return [(s[a:b].replace(" ", rep), (a, b)) for a, b in kept]
        if self._plain:
            spans, _ = self._run_plain(s, 0, len(s), want_bad=False)
            return [(s[a:b], (a, b)) for a, b in spans]
        pieces, _ = self._run(s, 0, len(s), first=first, text_start=text_start, want_bad=False)
        return [(p.x, p.offsets()) for p in pieces]

    def _window_cuts(self, s: str, lo: int, hi: int, first: bool = False,
                     text_start: bool = False) -> list[int]:
        return [c for c, _ in self._analyze(s, lo, hi, first, text_start)]

    @overload
    def _analyze(self, s: str, lo: int, hi: int, first: bool = ..., text_start: bool = ...,
                 want: int = ..., lazy: Literal[False] = ...) -> list[tuple[int, int]]: ...

    @overload
    def _analyze(self, s: str, lo: int, hi: int, first: bool, text_start: bool, want: int,
                 lazy: Literal[True]) -> Iterable[tuple[int, int]]: ...

    def _analyze(self, s: str, lo: int, hi: int, first: bool = False,
                 text_start: bool = False, want: int = 1 << 62, lazy: bool = False
                 ) -> Iterable[tuple[int, int]]:
        """The cuts of ``s[lo:hi]`` analysed alone, each with the position whose reach bounds
        what decides it (``c - 1``, or ``c`` after a regex gap: module docstring). ``first``:
        ``s[lo:]`` starts a segment (``lo == 0``). ``lazy``: an iterator where the fast split
        can give one (:meth:`_fast_cuts_iter`), else the list."""
        first = first and lo == 0
        if self._fast is not None and not self._prepends_at_start(s[lo:lo + 1], first,
                                                                   text_start):
            if lazy and self._lazy_fast():
                return self._fast_cuts_iter(s, lo, hi)
            return self._fast_analyze(s, lo, hi, want)
        if self._plain:
            sc = self._plain_shortcut(s, lo, hi)
            if sc is not None:
                return sc if lazy else list(itertools.islice(sc, want))
            _, ctx = self._run_plain(s, lo, hi, want_bad=True)
        else:
            _, ctx = self._run(s, lo, hi, first=first, text_start=text_start, want_bad=True)
        assert ctx.bad is not None and ctx.after_gap is not None
        bad, after_gap = ctx.bad, ctx.after_gap
        # the good places by one C pass (a long line with no cut has no Python step each)
        good = itertools.compress(range(lo + 1, hi + 1), bad[1:].translate(_GOOD))
        return [(c, c if after_gap[c - lo] else c - 1) for c in good]

    def cuts(self, s: str, pos: int = 0, *, first: bool = True,
             text_start: bool = False) -> Iterator[int]:
        """Restartable boundaries of ``s`` after ``pos`` (a cut, or 0), ascending, ending with
        ``len(s)`` (module docstring). ``first``/``text_start`` say what ``s`` is, as for
        :meth:`pre_tokenize` (they matter only for a prepend at position 0). Lazy: windows of
        ``_WINDOW`` characters, grown 4x while none of their cuts is certain (its horizon
        inside the window).

        Runtime complexity: ``O(len(s) - pos)`` for the whole iteration on usual text.
        """
        for c, _ in self._cuts_with_reach(s, pos, first, text_start, _WINDOW):
            yield c

    def _cuts_with_reach(self, s: str, pos: int, first: bool, text_start: bool,
                         size0: int, want: int = 1 << 62) -> Iterator[tuple[int, int]]:
        """The cuts after ``pos``, each with where its reach is taken (see :meth:`_analyze`);
        ``want``: how many each window needs to find at least (fewer E-checks)."""
        n = len(s)
        start = pos
        size = size0
        while start < n:
            hi = min(n, start + size)
            if hi == n:
                # the last window: its cuts are all certain, read as they are wanted (the
                # document's re-split stops after a few)
                yield from self._analyze(s, start, hi, first, text_start, want, True)
                return
            found = self._analyze(s, start, hi, first, text_start, want)
            if hi < n:  # certain: decided inside the window; the reach grows with c, so the
                # certain cuts are a prefix of the window's, found by bisection
                ok, bad = 0, len(found)
                while ok < bad:
                    mid = (ok + bad) // 2
                    if self._reach(s, found[mid][1], hi) <= hi:
                        ok = mid + 1
                    else:
                        bad = mid
                found = found[:ok]
            if not found:
                size *= 4
                continue
            yield from found
            start = found[-1][0]
            size = size0

    def _reach(self, s: str, c: int, limit: int) -> int:
        """``max(c + 2, H(c))`` over the regex steps (``c`` is the cut or the one before it;
        module docstring)."""
        best = c + 2
        end = min(limit, len(s))
        for step in self._regex_steps:
            h = step.horizon
            assert h is not None
            if step.replaced is not None:
                window = s[c:end].replace(" ", step.replaced)
                r = h.reach(window, 0, len(window)) + c
                if end < len(s) and r >= end:
                    r = max(r, limit)
            else:
                r = h.reach(s, c, end)
            if r > best:
                best = r
            if best >= limit:
                return best
        return best

    def horizon(self, s: str, start: int, limit: int, *, first: bool = True,
                text_start: bool = False) -> int:
        """Upper bound on what deciding the cut-piece at ``start`` reads (``PieceEncoding.
        horizon``: ``>= limit`` when it reaches ``limit``).

        Runtime complexity: ``O(piece + horizon)`` characters.
        """
        solo = self._solo
        if solo is not None:
            # the usual cases of the loop below, inline. The window's first certain cut: the
            # earlier steps of a sequence (which read nothing past their match) leave
            # [start, d) to the last one as a text of its own, ``d`` their first match in the
            # window (a cut, decided at d); in it, consecutive matches from ``start`` (no gap)
            # until one's cut is certain (_fast_cuts_iter's first: (y, y - 1), or (y, y)
            # after the gaps of earlier steps). Then its reach, all inside the first window;
            # anything else (a gap, the window's end, a match at ``start``) takes the loop,
            # which finds the same cut (a test compares them)
            n = len(s)
            hi = min(n, start + _HORIZON_WINDOW)
            before = self._solo_before
            d = hi
            for st in before:
                if (m := st.regex.search(s, start, d)) is not None:
                    d = m.start()
            h = solo.horizon
            assert h is not None
            match = solo.regex.match
            x = start
            while x < d and (m := match(s, x, d)) is not None:
                y = m.end()
                if y >= hi:
                    if y == n:
                        return n + 1  # the first cut is the text's end: reads to the end
                    break
                if y == d or not h.has_eot or h.eot_reach(s, x, d) <= y:
                    r = self._reach(s, y if before else y - 1, max(limit, hi))
                    if r <= hi or hi == n:
                        return r if r <= n else n + 1
                    break
                x = y
        return self._horizon_loop(s, start, limit, first, text_start)

    def one_pretoken(self, s: str) -> bool:
        """Whether ``s`` is certainly one pre-token of itself: the solo split matches it
        whole (False: not known; ``pre_tokenize`` tells). ``O(len(s))``, one C call."""
        w = self._whole_re
        if w is None:
            return False
        m = w.match(s)
        return m is not None and m.end() == len(s) and not any(
            st.regex.search(s) for st in self._solo_before)

    def _horizon_loop(self, s: str, start: int, limit: int, first: bool, text_start: bool
                      ) -> int:
        """:meth:`horizon` by windows grown 4x (the general way)."""
        beyond = len(s) + 1  # reads to the end of the text (any larger bound means the same)
        if self.fallback is not None:
            return beyond
        n = len(s)
        size = _HORIZON_WINDOW
        while True:
            hi = min(n, start + size)
            found = self._analyze(s, start, hi, first, text_start, want=1)
            if found and found[0][0] < n:
                c, at = found[0]
                # certain when decided inside the window; if not, no cut before it is, and
                # the horizon is past the window (the reach grows with the cut)
                # (one reach for both questions: with the larger bound it is the same value
                # when it is below ``hi``, and past ``hi`` either way otherwise)
                r = self._reach(s, at, max(limit, hi))
                if hi == n or r <= hi:
                    return min(r, beyond)
            if hi == n:
                return beyond
            if hi >= limit:
                return hi + 1  # past the window, which reaches the limit: enough to know
            size *= 4


# --- building from the JSON ---------------------------------------------------------------


def _behavior(value: Any, source: str, what: str) -> Behavior:
    key = str(value).replace("_", "").lower()
    if key not in _BEHAVIORS:
        raise UnsupportedComponent(
            f"{source}: pre-tokenizer {what} behavior {value!r}: not implemented; known: "
            "Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous")
    return _BEHAVIORS[key]


def _steps(spec: dict[str, Any], source: str) -> tuple[list[Step], bool, list[str]]:
    """(steps, has ByteLevel, description parts) of one pre-tokenizer spec."""
    kind = spec.get("type")
    if kind == "Sequence":
        steps: list[Step] = []
        bl = False
        desc: list[str] = []
        for sub in spec.get("pretokenizers") or []:
            s2, b2, d2 = _steps(sub, source)
            steps += s2
            bl = bl or b2
            desc += d2
        return steps, bl, desc
    if kind == "Split":
        pat = spec.get("pattern") or {}
        behavior = _behavior(spec.get("behavior"), source, "Split")
        invert = bool(spec.get("invert", False))
        if "String" in pat:
            lit = "".join(regex.escape(c, literal_spaces=True) for c in pat["String"])
            if pat["String"] == "":
                raise UnsupportedComponent(f"{source}: pre-tokenizer Split with an empty "
                                           "String pattern: not implemented")
            step = split_step(lit, "fancy", behavior, invert, source,
                               shown=f"String {shown_pattern(pat['String'])}")
            return [step], False, [f"Split(String {pat['String']!r}, {behavior})"]
        if "Regex" in pat:
            return ([split_step(pat["Regex"], "oniguruma", behavior, invert, source)], False,
                    [f"Split(Regex, {behavior}{', invert' if invert else ''})"])
        raise UnsupportedComponent(f"{source}: pre-tokenizer Split pattern {pat!r}: not "
                                   "implemented (String or Regex expected)")
    if kind == "ByteLevel":
        steps = []
        if spec.get("add_prefix_space", True):
            steps.append(Prepend(" ", "always", replace_spaces=False))
        if spec.get("use_regex", True):
            steps.append(split_step(GPT2_PATTERN, "oniguruma", "isolated", False, source))
        return steps, True, ["ByteLevel"]
    if kind == "Metaspace":
        rep = spec.get("replacement", "\u2581")
        if not isinstance(rep, str) or len(rep) != 1:
            raise UnsupportedComponent(f"{source}: pre-tokenizer Metaspace replacement "
                                       f"{rep!r}: one character expected")
        raw = spec.get("prepend_scheme")
        if raw is None:  # the legacy field
            raw = "always" if spec.get("add_prefix_space", True) else "never"
        schemes: dict[str, Literal["always", "first", "never"]] = {
            "always": "always", "first": "first", "never": "never"}
        if raw not in schemes:
            raise UnsupportedComponent(f"{source}: pre-tokenizer Metaspace prepend_scheme "
                                       f"{raw!r}: not implemented (always, first, never)")
        scheme = schemes[raw]
        steps = [Prepend(rep, scheme, replace_spaces=True)]
        if spec.get("split", True) is not False:
            steps.append(char_step(regex.escape(rep), "merged_with_next"))
        return steps, False, [f"Metaspace({scheme})"]
    if kind == "WhitespaceSplit":
        return [char_step(r"\s", "removed")], False, ["WhitespaceSplit"]
    if kind == "Whitespace":
        d = derive(r"\w+|[^\w\s]+", "fancy")
        return [RegexSplit(d.regex_form, d, "removed", True, char_split=False)], False, ["Whitespace"]
    if kind == "Digits":
        behavior = "isolated" if spec.get("individual_digits", False) else "contiguous"
        return [char_step(r"\p{N}", behavior)], False, ["Digits"]
    if kind == "Punctuation":
        behavior = _behavior(spec.get("behavior", "Isolated"), source, "Punctuation")
        return [char_step(_PUNCT, behavior)], False, ["Punctuation"]
    if kind == "BertPreTokenizer":
        return ([char_step(r"\s", "removed"), char_step(_PUNCT, "isolated")], False,
                ["BertPreTokenizer"])
    raise UnsupportedComponent(
        f"{source}: pre-tokenizer {kind}: not implemented; livetok reads Split, ByteLevel, "
        "Metaspace, WhitespaceSplit, Whitespace, Digits, Punctuation, BertPreTokenizer and "
        "Sequence")


def build_pre_tokenizer(spec: dict[str, Any] | None, *, source: str) -> PreTokenizer:
    """The pre-tokenizer of a ``tokenizer.json`` ``pre_tokenizer`` section (None: none).

    Raises :class:`UnsupportedComponent` for a type or option not implemented.
    """
    if spec is None:
        return PreTokenizer([], byte_level=False, description="none")
    steps, bl, desc = _steps(spec, source)
    return PreTokenizer(steps, byte_level=bl, description=" + ".join(desc))

