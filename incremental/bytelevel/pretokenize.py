"""Pre-tokenization of the OpenAI encodings: tiktoken's regular expressions, and their horizons.

The patterns below are tiktoken's (``tiktoken_ext/openai_public.py``), run by the ``regex``
package, whose ``\\s`` is Unicode ``White_Space`` exactly like Rust's ``regex`` crate. One
change keeps the semantics of Rust's ``fancy-regex``: ``$`` is written ``\\Z`` (Python's ``$``
would also match before a final newline).

Pieces tile the text: every alternative set below matches at every position, and ``finditer``
restarts at the end of the previous match. A match reads nothing left of its start (no
look-behind), so splitting ``text[pos:]`` from a piece boundary ``pos`` yields the tail of the
full split: that is what lets the document re-split from any boundary.

**Horizons.** :func:`horizon` bounds how far right the matcher may have *read* to decide the
piece that starts at ``p``: through failed alternatives, backtracking and look-ahead, not just
the match. Each alternative of each pattern reads a bounded prefix made of at most two greedy
*runs* of one character class (e.g. o200k's letters: an upper-case run then a lower-case run,
after an optional one-character prefix), then at most 3 more characters (a contraction such as
``'ll``, a lookahead, or the character that ends the run). The *readers* below match exactly
those runs with possessive quantifiers; they are derived from each pattern's syntax by
:mod:`livetok.incremental.regex.horizon` (the mechanism every ``tokenizer.json`` Split
pattern gets), and equal the runs listed in ``docs/algorithms.md``. So::

    horizon(p) = max(p + 4, max(reader.match(text, p).end()) + 4)

is sound. ``docs/algorithms.md`` gives the alternative-by-alternative argument and the
monotonicity lemma the document uses to pick its restart piece.

On ASCII text (``str.isascii`` is ``O(1)``) the readers and :meth:`Pretokenizer.split` run
stdlib ``re`` forms of the patterns, cheaper per call (no class codes to build, and ``re``
starts a match sooner than ``regex``): each character class is replaced by the explicit set
of the ASCII characters that the reference ``regex`` class itself matches
(:func:`_ascii_form`), so on ASCII text both forms match exactly the same spans and runs
(tests compare them).
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable, Iterator, List, Tuple

import regex

from ..regex import Derivation, derive
from .fastsplit import FastSplitter
from .fastsplit import available as fast_available

__all__ = ["PATTERNS", "Pretokenizer", "ascii_checked"]

_O200K_PARTS = [
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
]

#: tiktoken's ``pat_str`` of each encoding, verbatim (a test checks them against tiktoken's)
PATTERNS: dict[str, str] = {
    "r50k_base": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k_base": "|".join(_O200K_PARTS),
}

#: what any alternative may read past its runs: a contraction ('re: 3 characters) or a
#: one-character look-ahead / run terminator, plus one for the exclusive bound
_SLACK = 4


def _derived_readers(pat_str: str) -> list[str]:
    """The readers of ``pat_str``'s alternatives, derived from its syntax
    (:func:`livetok.incremental.regex.derive`, fancy-regex flavour as tiktoken runs
    it): for the three patterns they are the runs written in ``docs/algorithms.md``, section 2
    (a test keeps the hand-written list). One ``_SLACK`` covers what every alternative reads
    past its runs, and the bounded alternatives (contractions, ``\\p{N}{1,3}``)."""
    d = derive(pat_str, "fancy")
    assert d.fallback is None, (pat_str, d.fallback)
    assert d.base <= _SLACK and all(r.slack <= _SLACK for r in d.readers), pat_str
    return [r.pattern for r in d.readers]


# Readers: for each alternative, the runs it may read, as possessive patterns (see module doc).
# subtle: o200k's combining marks are both a possible prefix ([^\r\n\p{L}\p{N}]) and in
# both letter classes; taking one as the prefix reads the same runs as not taking it.
_READERS: dict[str, list[str]] = {name: _derived_readers(p) for name, p in PATTERNS.items()}

#: ``M`` of :meth:`Pretokenizer.quiet` (the readers' slack: what a piece reads past its runs)
_QUIET_MARGIN = _SLACK
#: what :meth:`Pretokenizer.quiet` accepts: characters of the patterns' punctuation class
#: ``[^\s\p{L}\p{N}]`` but the apostrophe (contractions) and ``/`` (o200k's run tail), with
#: no ``2 M - 1`` combining marks in a row (o200k's letter classes hold the marks: a letter
#: piece may be one punctuation character and marks, as ``U+1F3F3 U+FE0F``)
_QUIET = regex.compile(r"(?s)(?!.*\p{M}{%d})[^\s\p{L}\p{N}'/]++" % (2 * _QUIET_MARGIN - 1))
#: and quiet letter runs, per pattern: any letters where a letter piece is one run
#: (``\p{L}++`` after an optional prefix), for o200k only the letters in both of its cased
#: classes (``\p{Lm}``, ``\p{Lo}``: CJK, Thai, Arabic...), where its upper-then-lower runs
#: cannot change course (:meth:`Pretokenizer.quiet`)
_QUIET_LETTERS = {"r50k_base": regex.compile(r"\p{L}++"),
                  "cl100k_base": regex.compile(r"\p{L}++"),
                  "o200k_base": regex.compile(r"[\p{Lm}\p{Lo}]++")}

#: the letter alternatives of each pattern (the first ones, after cl100k's and r50k's
#: contractions): a piece they match at its start is a letter piece
#: (:meth:`Pretokenizer.inner_boundaries`)
_LETTER_ALTS = {"r50k_base": regex.compile(r" ?\p{L}++"),
                "cl100k_base": regex.compile(r"[^\r\n\p{L}\p{N}]?+\p{L}++"),
                "o200k_base": regex.compile("|".join(_O200K_PARTS[:2]))}

#: what :meth:`Pretokenizer.inner_boundaries` is told of the old text: the window's old text,
#: its boundaries strictly inside (relative), and, asked only for o200k's letter pieces, the
#: :meth:`Pretokenizer.run_classes` of the old text from the left piece's start to the window
#: and the first character from the window's end to the right piece's end, that end's
#: character included, that is not of both cased runs (:meth:`Pretokenizer.run_break`; ""
#: when there is none: the text ends), with its offset from the window's end when it lies
#: inside the old piece (-1 when it is the character at its end, or none)
InnerOld = Tuple[str, List[int], Callable[[], Tuple[int, str, int]]]

#: an o200k letter piece's optional first character and upper-case run: where it stops is
#: where the piece's lower-case run starts (:meth:`Pretokenizer.inner_boundaries`)
_UPPER_RUN = regex.compile(r"[^\r\n\p{L}\p{N}]?+[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*+")

#: a character in neither or only one of o200k's cased letter runs, and a lower-case-only
#: letter (:meth:`Pretokenizer.run_classes`)
_NOT_BOTH_RUNS = regex.compile(r"[^\p{Lm}\p{Lo}\p{M}]")
_LOWER_ONLY = regex.compile(r"\p{Ll}")
_UPPER_ONLY = regex.compile(r"[\p{Lu}\p{Lt}]")

#: :meth:`Pretokenizer.finditer` samples the pieces of the first ``_SAMPLE_CHARS`` characters of
#: a non-ASCII text of at least ``_SAMPLE_FROM`` characters; when they average at least
#: ``_LONG_PIECE`` characters it splits with ``regex`` instead of the class codes: ``regex``
#: costs more per piece, the codes more per non-ASCII character, and the break-even is near
#: 20 characters per piece (measurements: docs/algorithms.md, section 1).
_SAMPLE_FROM = 4096
_SAMPLE_CHARS = 1024
_LONG_PIECE = 32


#: a character class (no nested brackets occur in these patterns), ``\s``, ``\S`` or ``\p{..}``
_CLASS_ATOM = re.compile(r"\[(?:\\.|[^\]\\])+\]|\\[sS]|\\p\{\w+\}")


def _ascii_form(pattern: str) -> re.Pattern[str]:
    """The stdlib ``re`` form of ``pattern`` (a reader, or a split pattern already passed
    through :func:`_python_pattern`) for ASCII text.

    Every class atom becomes the set of ASCII characters that the reference ``regex`` atom
    matches (computed here, not written by hand); the rest of the syntax these patterns use
    (literals, alternation, greedy and possessive quantifiers, ``(?!...)``, ``\\Z`` and
    ``(?i:...)`` around ASCII literals and classes) means the same in both engines, so on
    ASCII text both forms match the same spans.

    >>> _ascii_form(r" ?+[^\\s\\p{L}\\p{N}]*+").match(" ;; x").end()
    3
    """

    def ascii_set(m: re.Match[str]) -> str:
        atom = regex.compile(m.group(0))
        chars = [c for c in map(chr, range(128)) if atom.fullmatch(c)]
        if not chars:
            return "[^\\x00-\\x7f]"  # matches nothing in ASCII text
        runs: list[str] = []
        for c in chars:  # consecutive code points as ranges
            if runs and ord(c) == ord(runs[-1][-1]) + 1:
                runs[-1] = runs[-1][0] + c
            else:
                runs.append(c)
        return "[" + "".join(
            f"\\x{ord(r[0]):02x}" + (f"-\\x{ord(r[-1]):02x}" if len(r) > 1 else "") for r in runs
        ) + "]"

    return re.compile(_CLASS_ATOM.sub(ascii_set, pattern))


_SPAN = re.Match.span


def _span_of(m: Any) -> tuple[int, int]:
    span: tuple[int, int] = m.span()  # a match of ``re`` or of ``regex``
    return span


#: ASCII texts on which :func:`ascii_checked` compares two forms of a pattern: every
#: character once, in pairs and in runs, and a seeded random text (a guard against syntax
#: :func:`_ascii_form` would rewrite wrongly; the forms are equal by construction)
_ASCII_PROBES = ["".join(map(chr, range(128))),
                 "".join(chr(a) * 2 + " " + chr(a) + "\n" for a in range(128)),
                 "".join(random.Random(27).choices(
                     [chr(a) for a in range(128)] + list("aaaa    ''\n\n11"), k=1500))]


def ascii_checked(patterns: list[str], reference: list[Any], *, match: bool
                   ) -> list[re.Pattern[str]] | None:
    """The ``re`` forms (:func:`_ascii_form`) of derived patterns, or None when one does not
    compile or differs from its ``regex`` reference on an ASCII probe: every reader's match at
    every position (``match``), else every split, of :data:`_ASCII_PROBES`. A derived pattern
    may use syntax the tiktoken patterns do not; then it keeps the ``regex`` form.

    Runtime complexity: ``O(probe characters)`` per pattern, once per encoding.
    """
    try:
        # ``(?f)``: ``regex``'s full case folding, which differs from simple folding only on
        # characters outside ASCII
        forms = [_ascii_form(p[4:] if p.startswith("(?f)") else p) for p in patterns]
    except (re.error, regex.error, ValueError):
        return None
    for form, ref in zip(forms, reference):
        for probe in _ASCII_PROBES:
            if match:
                for i in range(len(probe) + 1):
                    a, b = form.match(probe, i), ref.match(probe, i)
                    if (a and a.end()) != (b and b.end()):
                        return None
            elif [m.span() for m in form.finditer(probe)] != [
                    m.span() for m in ref.finditer(probe)]:
                return None
    return forms


def _python_pattern(pat: str) -> str:
    # fancy-regex's `$` is end of text only; Python's also matches before a final newline
    return pat.replace("$", r"\Z")


class Pretokenizer:
    """The regex split of one encoding plus its horizon readers.

    >>> p = Pretokenizer("cl100k_base")
    >>> [("hello world  x"[s:e]) for s, e in p.split("hello world  x")]
    ['hello', ' world', ' ', ' x']
    """

    def __init__(self, name: str, pat_str: str | None = None, *,
                 derivation: Derivation | None = None) -> None:
        if derivation is not None:
            self._init_derived(name, derivation)
            return
        if pat_str is None:
            try:
                pat_str = PATTERNS[name]
            except KeyError:
                raise ValueError(
                    f"no pre-tokenizer pattern for {name!r}; known: {sorted(PATTERNS)}"
                ) from None
        self.name = name
        self.pat_str = pat_str
        self.regex = regex.compile(_python_pattern(pat_str))
        # subtle: the readers bound what the *known* pattern reads; a custom ``pat_str`` given
        # under a known name (tiktoken allows it) gets none of the name's fast forms
        known = name in _READERS and pat_str == PATTERNS.get(name)
        #: the readers of the pattern's alternatives (module docstring), or for a pattern we
        #: do not know, the most conservative sound reader: every piece's horizon is the end
        #: of the text (correct, just not incremental)
        readers = _READERS[name] if known else [r"(?s).*+"]
        self._readers = [regex.compile(r) for r in readers]
        #: the same readers for ASCII text, or None (unknown pattern: ``(?s).*+``, one call)
        self._ascii_readers = [_ascii_form(r) for r in readers] if known else None
        #: the split pattern for ASCII text (module docstring), for the known patterns
        self._ascii_split = _ascii_form(_python_pattern(pat_str)) if known else None
        #: the class-code form of the split (:mod:`.fastsplit`), for the known patterns
        self.fast = FastSplitter(name) if known and fast_available else None
        #: a derived pattern's ``base`` and readers' slacks (:meth:`horizon`); None for the
        #: tiktoken patterns, whose readers share one slack, ``_SLACK``
        self._base = 0
        self._slacks: list[int] | None = None
        #: ``M`` of :meth:`quiet` (0: not offered, as for a pattern this module does not know)
        self.quiet_margin = _QUIET_MARGIN if known else 0
        self._quiet_letters = _QUIET_LETTERS.get(name) if known else None
        #: whether :meth:`inner_boundaries` is offered (its argument is made for the three
        #: tiktoken patterns only)
        self.inner_windows = known

    def _init_derived(self, name: str, d: Derivation) -> None:
        """A split pattern of a ``tokenizer.json`` file (any pattern :func:`derive` bounds):
        its Python ``regex`` form, its derived readers and their slacks, and ``re`` forms for
        ASCII text where they provably match the same (:func:`ascii_checked`)."""
        if d.fallback is not None or d.min_width == 0:
            raise ValueError(f"{name}: the pattern has no derived horizon ({d.fallback})")
        self.name = name
        self.pat_str = d.pattern
        self.regex = regex.compile(d.regex_form)
        self._readers = [regex.compile(r.pattern) for r in d.readers]
        self._base = d.base
        self._slacks = [r.slack for r in d.readers]
        self._ascii_readers = ascii_checked([r.pattern for r in d.readers], self._readers,
                                             match=True)
        split = ascii_checked([d.regex_form], [self.regex], match=False)
        self._ascii_split = split[0] if split is not None else None
        self.fast = None
        self.quiet_margin = 0  # (no argument made for derived patterns)
        self._quiet_letters = None
        self.inner_windows = False

    def finditer(self, text: str, pos: int = 0) -> Iterator[Any]:
        """Match objects whose spans are the pieces: the fast class-code form when available,
        except on long non-ASCII text whose first pieces are long (one line of CJK letters,
        see ``_LONG_PIECE``), where ``regex`` is faster and lazy.

        Runtime complexity: ``O(len(text) - pos)`` for the whole iteration.
        """
        if self.fast is not None and (
            len(text) - pos < _SAMPLE_FROM or text.isascii() or not self._long_pieces(text, pos)
        ):
            return self.fast.finditer(text, pos)
        return self.regex.finditer(text, pos)

    def _long_pieces(self, text: str, pos: int) -> bool:
        """Whether the pieces of ``text[pos : pos + _SAMPLE_CHARS]`` average ``_LONG_PIECE``
        characters or more (``text`` is not ASCII; ``O(_SAMPLE_CHARS)``)."""
        most = _SAMPLE_CHARS // _LONG_PIECE
        found = self.regex.finditer(text, pos, pos + _SAMPLE_CHARS)
        return sum(1 for _ in zip(range(most + 1), found)) <= most

    def split(self, text: str, pos: int = 0) -> Iterator[tuple[int, int]]:
        """Yield ``(start_cp, end_cp)`` of each piece of ``text[pos:]`` (``pos`` a boundary).

        Runtime complexity: ``O(len(text) - pos)`` for the whole iteration. Lazily for ASCII
        text; for other text the fast form first builds the class codes of all of ``text``
        (``O(len(text))`` on the first piece), so a caller that wants only a few pieces of a
        long text splits a window of it (as ``Document.count_range`` does).
        """
        if self._ascii_split is not None and text.isascii():
            # the same spans (module docstring); no class codes to build for a short text
            return map(_SPAN, self._ascii_split.finditer(text, pos))
        return map(_span_of, self.finditer(text, pos))

    def split_reference(self, text: str, pos: int = 0) -> list[tuple[int, int]]:
        """The same split by the ``regex`` package alone (the reference for tests)."""
        return [m.span() for m in self.regex.finditer(text, pos)]

    def quiet(self, text: str) -> bool:
        """Whether ``text`` is a run of *quiet* punctuation (``_QUIET``) or of quiet letters
        (``_QUIET_LETTERS``), for the three tiktoken patterns (False for a pattern this
        module does not know): the :class:`~livetok.incremental.piece_encoding.QuietEncoding`
        capability with ``M = quiet_margin``, in the form ``Document._stretch`` uses it: it
        asks it of the new text ``2 M`` around an edit that lies ``2 M`` inside an old piece,
        and of the old text there when the edit replaced some.

        *Punctuation.* The text's first ``2 M`` characters then hold a punctuation character
        other than a mark past the old piece's first character, which only a punctuation
        piece holds (a letter piece holds one non-letter, its first character, then letters
        and marks; number, white-space and contraction pieces hold none); the old characters
        right of the edit, also quiet and inside the piece, are in its run (its tail is
        ``[\r\n/]``), so the replaced text was run too. The run stays a run through the new
        text and ends where it ended; its piece starts where it started (the alternative
        chosen there reads its first two characters). No earlier piece reads past the run's
        start plus the readers' slack (a reader's runs stop at a punctuation character, but
        the punctuation run's, and a punctuation piece ends only where its run and tail
        stop).

        *Letters.* The old piece is a letter piece (no other holds two letters in a row but
        a contraction, too short). Under r50k and cl100k its letters are one possessive run,
        which goes on through the new letters and ends where it ended. Under o200k a letter
        piece is an upper-case run ``U*`` then a lower-case run ``L+`` (with backtracking);
        the quiet letters are in both classes, so wherever the old and the new text around
        the edit lie (in the ``U`` run, or in the ``L`` run after it), both runs end where
        they ended, and so does the backtracking's last ``L`` character; this needs the
        *replaced* text quiet too (deleting a lone lower-case ``a`` from a CJK line turns
        the rest of it from the ``L`` run into the ``U`` run, which can end elsewhere: hence
        the document's second question). An earlier piece that reads past its end (o200k's
        backtracking over upper-case letters) reads only ``U``-only characters, none quiet.

        So no boundary moves or appears, and no earlier piece reads the edit: what
        conditions 1-3 of the capability give the document. (They do not hold of every
        text: under o200k, flags ``U+1F3F3 U+FE0F`` in a row are letter pieces when one
        starts a piece, and a letter piece can read far past its end; the document's use
        above is what is claimed.) A line of CJK letters, emoji ZWJ sequences or ``=`` is one
        such piece, so an edit inside it is no longer re-split to the line's end.

        >>> p = Pretokenizer("o200k_base")
        >>> p.quiet("\U0001F469\u200d\U0001F680=="), p.quiet("=a=")
        (True, False)
        >>> p.quiet("中文字符"), p.quiet("中文a字符")
        (True, False)

        Runtime complexity: ``O(len(text))``.
        """
        if self.quiet_margin <= 0:
            return False
        letters = self._quiet_letters
        return _QUIET.fullmatch(text) is not None or (
            letters is not None and letters.fullmatch(text) is not None)

    def inner_boundaries(self, text: str, pad: int, old: InnerOld | None = None
                         ) -> list[int] | None:
        """The piece boundaries strictly inside ``text``, the new text of a window around an
        edit deep inside quiet runs, when they are decided by the window alone; None when
        they may not be.

        What the caller (``Document._local``) vouches for: ``text`` is the new text of
        ``[s0, e0)`` (old coordinates of the ends) after an edit; its first and last ``pad``
        characters are old text; the old piece holding the first ``pad`` characters starts at
        least 3 characters before ``s0``, the one holding the last ``pad`` ends at least 3
        after ``e0``; ``old`` is what :data:`InnerOld` says. Each ``pad`` must be
        :meth:`quiet` (checked here), so its old piece is a punctuation piece or a letter
        piece (no other alternative holds a punctuation character other than a mark, or
        three letters, past its first character); no earlier piece then reads the edit (one
        that reads past its end, o200k's letter piece backtracking over upper-case letters,
        reads no quiet character: :meth:`quiet`).

        *Why the window decides.* A punctuation piece, and a letter piece of r50k and cl100k,
        is one run: every character of its interior is of the run's class
        (``[^\\s\\p{L}\\p{N}]``, ``\\p{L}``), and the run ends where the class ends, plus the
        pattern's tail (``[\\r\\n/]*``). So the piece of the new text that starts where the
        old piece started runs through the unchanged text to the left ``pad`` exactly as a
        run started by two synthetic characters of the class (``!!``, ``aa``) runs through
        it; and the piece of the new text that holds the right ``pad`` (a run of that class)
        runs on through the rest of the old piece and ends where it ended, as it runs on
        through two synthetic characters at the window's end. The split of ``!!`` + ``text``
        + ``!!`` (or ``aa``) therefore has the new text's boundaries inside the window,
        provided every piece but the last is decided inside the real characters (its reach
        below the synthetic tail: :meth:`horizon`, or a letter piece's letter runs), the
        first piece covers the left ``pad`` but its last ``M`` characters, and the last piece
        the right one but its first ``M``.

        *o200k's letter pieces* are an upper-case run then a lower-case run (marks, ``Lm``
        and ``Lo`` letters in both), so where such a piece ends depends on which run it is
        in. On the left, the piece is in its upper-case run unless a lower-case-only letter
        came before the window (``old``'s first class bits): ``AA`` or ``aa`` starts the run
        in that state, and the window's split of the old text must be the old split. On the
        right no tail is added (the run is followed to the window's end): the new piece goes
        on past the window as the old one did when both are in the same run there; in the
        other run, both go over letters of both runs to the first other character (``old``'s
        break): a lower-case-only letter or a non-letter there treats both alike; an
        upper-case-only one inside the old piece, met by a new lower-case run where the old
        one was upper-case, cuts the new text there (a boundary past the window, returned
        too; the same upper-case run after it); met by a new upper-case run, None.

        >>> p = Pretokenizer("o200k_base")
        >>> e = "\U0001F468\u200d\U0001F4BB"
        >>> p.inner_boundaries(e * 5 + "a" + e * 5, 15)
        [15, 16]
        >>> p.inner_boundaries("\\u4e2d" * 15 + " " + "\\u4e2d" * 15, 15) is None
        True

        Runtime complexity: ``O(len(text))``.
        """
        if not self.inner_windows or len(text) < 2 * pad or pad < 3 * self.quiet_margin + 1:
            return None
        left, right = self._pad_kind(text[:pad]), self._pad_kind(text[-pad:])
        if left is None or right is None:
            return None
        if self.name == "o200k_base" and "aa" in (left, right):
            if old is None:
                return None
            old_text, old_cuts, far = old
            left_bits, brk, brk_at = far()
            # o200k's letter piece is in its upper-case run where the window starts ("AA")
            # unless a lower-case-only letter came before ("aa"); the window's split of the
            # old text must be the old split
            lead = left if left != "aa" else "aa" if left_bits & 1 else "AA"
            was = self._window_cuts(lead + old_text, lead, right, pad)
            if was is None or was[0] != old_cuts:
                return None
            now = self._window_cuts(lead + text, lead, right, pad)
            if now is None:
                return None
            # the run that goes on past the window ends where the old one ended when it is in
            # the same state; in the other one, both runs go over letters of both runs (and
            # marks) to the first other character (brk, at or before the old end): a
            # lower-case-only letter puts both in the lower-case run, a non-letter stops both
            # (the upper-case run backtracks to the letter before it); an upper-case-only one
            # inside the old piece (brk_at >= 0: its offset past the window) stops a new
            # lower-case run where the old upper-case run went on: a boundary there, after
            # which the new piece's upper-case run is the old one's (the old piece's end is
            # its end); an upper-case-only one stopping an old lower-case run is refused
            if right == "aa" and now[1] != was[1] and _UPPER_ONLY.match(brk) is not None:
                if not (was[1] and brk_at >= 0):
                    return None
                return now[0] + [len(text) + brk_at]
            return now[0]
        found = self._window_cuts(left + text + right, left, right, pad)
        return None if found is None else found[0]

    def run_classes(self, text: str) -> int:
        """What of ``text`` bears on an o200k letter piece's runs far from an edit (for
        :meth:`inner_boundaries`' ``old``): bit 1, a lower-case-only letter (``\\p{Ll}``: the
        piece's lower-case run has begun); bit 2, a character other than ``\\p{Lm}``,
        ``\\p{Lo}`` or a mark (one that can end a run or change its course).

        >>> p = Pretokenizer("o200k_base")
        >>> p.run_classes("中文"), p.run_classes("中a文"), p.run_classes("中A")
        (0, 3, 2)

        Runtime complexity: ``O(len(text))``.
        """
        if _NOT_BOTH_RUNS.search(text) is None:
            return 0
        return 2 | (_LOWER_ONLY.search(text) is not None)

    def run_break(self, text: str) -> int:
        """Where the first character of ``text`` that is not of both of o200k's cased runs is
        (not ``\\p{Lm}``, ``\\p{Lo}`` or a mark: bit 2 of :meth:`run_classes`), -1 when none
        is.

        >>> Pretokenizer("o200k_base").run_break("中文A字")
        2

        Runtime complexity: ``O(len(text))``.
        """
        m = _NOT_BOTH_RUNS.search(text)
        return -1 if m is None else m.start()

    def _pad_kind(self, part: str) -> str | None:
        """The two synthetic characters that start or continue the run of a quiet ``part``
        (``!!``: punctuation, ``aa``: letters), None when it is not quiet."""
        if _QUIET.fullmatch(part) is not None:
            return "!!"
        if self._quiet_letters is not None and self._quiet_letters.fullmatch(part) is not None:
            return "aa"
        return None

    def _window_cuts(self, window: str, lead: str, right: str, pad: int
                     ) -> tuple[list[int], bool] | None:
        """The inner boundaries of ``window`` (``lead`` + a text + a synthetic tail, none for
        o200k's letters, whose run is followed to the window's end), relative to the text,
        and whether the last piece is in an upper-case run at the end (o200k); None when a
        condition of :meth:`inner_boundaries` fails."""
        k = len(lead)
        tail = 0 if (right == "aa" and self.name == "o200k_base") else 2
        lim = len(window) - tail  # where the synthetic tail starts
        spans = list(self.split(window))
        m = self.quiet_margin
        if len(spans) < 1 or spans[0][1] < k + pad - m or spans[-1][0] > lim - pad + m:
            return None
        letters = _LETTER_ALTS.get(self.name)
        for ps, _ in spans[:-1]:
            if letters is not None and letters.match(window, ps) is not None:
                # a letter piece: the alternatives tried (a contraction, then the letters)
                # read the letter runs and a few characters; the punctuation run the horizon
                # also bounds (an emoji before a mark is a letter piece) is never tried
                reach = max(self._readers[0].match(window, ps).end(), ps + 4) + _SLACK  # type: ignore[union-attr]
            else:
                reach = self.horizon(window, ps, lim)
            if reach >= lim:
                return None
        upper = _UPPER_RUN.match(window, spans[-1][0]).end() == len(window)  # type: ignore[union-attr]
        return [ps - k for ps, _ in spans[1:]], upper

    def horizon(self, text: str, start: int, limit: int | None = None) -> int:
        """Sound upper bound (exclusive) on what deciding the piece at ``start`` reads.

        Returns ``limit`` or more when the bound reaches ``limit`` (scans stop there).

        >>> Pretokenizer("o200k_base").horizon("hello World", 0)
        9

        Runtime complexity: ``O(h - start)``, at most ``O(limit - start)``.
        """
        end = len(text) if limit is None else min(limit, len(text))
        readers: list[regex.Pattern[str]] | list[re.Pattern[str]] = self._readers
        if text.isascii() and self._ascii_readers is not None:
            readers = self._ascii_readers  # the same matches (module docstring)
        slacks = self._slacks
        if slacks is None:  # the tiktoken patterns: one slack for all
            best = start
            for r in readers:
                m = r.match(text, start, end)
                if m is not None and m.end() > best:
                    best = m.end()
            return best + _SLACK
        h = start + self._base
        rd: Any
        for rd, slack in zip(readers, slacks):
            m = rd.match(text, start, end)
            e = (m.end() if m is not None else start) + slack
            if e > h:
                h = e
        return h
