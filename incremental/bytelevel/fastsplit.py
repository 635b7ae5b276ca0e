"""A fast, equivalent form of the pre-tokenizer regexes: class codes + the stdlib ``re``.

The ``regex`` package is the reference (``Pretokenizer.regex``), but it is the slowest step of
encoding. The patterns only ever ask which *class* a character is in (letter? upper-case-ish
letter? digit? white space? ``\\r``/``\\n``? apostrophe? a contraction letter?), so we map each
character to one code character for its class signature with ``str.translate`` (C speed), and
run an equivalent pattern written over the codes with ``re`` (C, and several times faster than
``regex`` on these patterns: docs/algorithms.md, "Encoder choices"; Python 3.11+ supports the
possessive quantifiers).

The class signature of a character is computed *by the reference regexes themselves* (each
feature is a one-character ``regex`` match), so both forms agree by construction; the tests
also compare them on generated and real text. Idea shared with ``puretiktoken``; this is an
independent implementation.
"""

from __future__ import annotations

import functools
import re
import sys
from itertools import accumulate
from typing import Callable, Iterator, Union

import regex

__all__ = ["FastSplitter", "available"]

#: contraction letters; r50k matches them case-sensitively, cl100k/o200k case-insensitively
_CONTRACTION = "sdmtlvre"

_FEATURES = [
    ("L", regex.compile(r"\p{L}")),
    ("N", regex.compile(r"\p{N}")),
    ("WS", regex.compile(r"\s")),
    ("M", regex.compile(r"\p{M}")),
    ("UP", regex.compile(r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]")),
    ("LO", regex.compile(r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]")),
]
_CI = {c: regex.compile(f"(?i:{c})") for c in _CONTRACTION}

#: Python 3.11 added possessive quantifiers to ``re``
available = sys.version_info >= (3, 11)

#: a character class that matches nothing (``[]`` is not valid syntax)
_NOTHING = "[^\\x00-\\U0010ffff]"

#: candidate cut points for :meth:`FastSplitter.blocks`: a ``\\n`` before an ASCII letter; the
#: cut (after the ``\\n``) is safe when the character before it is printable, non-space ASCII
#: (``X`` in the proof there). Searching for the ``\\n`` first lets ``re`` skip to it at C
#: speed instead of trying a match at every position (docs/algorithms.md, "Encoder choices").
_NL_BEFORE_LETTER = re.compile(r"\n(?=[A-Za-z])")
#: non-ASCII text is split in blocks of about this size (see :meth:`FastSplitter.pieces`)
_SUB_BLOCK_CHARS = 2048
#: the "wide" pattern covers the code points below this: Latin, Greek, Cyrillic, Armenian,
#: Hebrew, Arabic, Syriac, Thaana, N'Ko and the combining marks (U+0000..U+07FF)
_WIDE_END = 0x800
_BEYOND_WIDE = re.compile("[^\\x00-\\u07ff]")

#: a character's class signature: six Unicode classes, four exact characters, the contraction
#: letter it is (exact and case-insensitive; empty when none)
Signature = tuple[Union[bool, str], ...]
#: a test on signatures, and a function that writes the class of the signatures it accepts
SigPredicate = Callable[[Signature], object]
ClassWriter = Callable[[SigPredicate], str]


def _signature(ch: str) -> Signature:
    feats = tuple(bool(rx.fullmatch(ch)) for _, rx in _FEATURES)
    exact = ch if ch in _CONTRACTION else ""
    ci = next((c for c, rx in _CI.items() if rx.fullmatch(ch)), "")
    return feats + (ch in "\r\n", ch == " ", ch == "'", ch == "/", exact, ci)


@functools.lru_cache(maxsize=None)
def _signatures_below(end: int) -> list[Signature]:
    """The signature of every code point below ``end`` (computed once)."""
    return [_signature(chr(o)) for o in range(end)]


# indices into a signature
_L, _N, _WS, _M, _UP, _LO, _CRLF, _SPACE, _APOS, _SLASH, _EXACT, _CIL = range(12)


class _Codes(dict[int, int]):
    """``ord(char) -> ord(code)``, filled on first sight of each character."""

    def __init__(self, owner: "FastSplitter") -> None:
        super().__init__()
        self.owner = owner

    def __missing__(self, o: int) -> int:
        code = self.owner._code_for(chr(o))
        self[o] = code
        return code


class FastSplitter:
    """Split text exactly like ``Pretokenizer(name).regex.finditer``, several times faster.

    >>> FastSplitter("o200k_base").spans("Hello world's 12345")
    [(0, 5), (5, 13), (13, 14), (14, 17), (17, 19)]
    """

    def __init__(self, name: str) -> None:
        if name not in ("r50k_base", "cl100k_base", "o200k_base"):
            raise ValueError(f"no fast splitter for {name!r}")
        self.name = name
        self._sigs: dict[Signature, str] = {}
        self._table = _Codes(self)
        self._compiled: re.Pattern[str] | None = None
        # pre-seed the ASCII range, so the pattern is compiled once for ordinary text
        for o in range(128):
            self._table[o] = self._code_for(chr(o))
        # the same pattern over the characters themselves, for ASCII text: each class is the
        # set of ASCII characters whose code is in the class, so it matches exactly where the
        # code pattern matches the codes, and ``findall`` returns the pieces themselves
        assert not any(s[_UP] and s[_LO] for s in _signatures_below(128))
        self._ascii = re.compile(
            self._source(lambda p: self._range_set(p, 128), ascii_only=True))
        # the same for text below U+0800, with the plain form (classes overlap there)
        self._wide: re.Pattern[str] | None = None

    def _code_for(self, ch: str) -> int:
        sig = _signature(ch)
        code = self._sigs.get(sig)
        if code is None:
            # ASCII code characters keep the code string 1 byte per character (the fastest
            # string kind for ``re``); the pattern is rebuilt whenever a new signature appears
            # (a few dozen exist in all of Unicode)
            k = len(self._sigs)
            code = chr(0x21 + k) if k < 94 else chr(0x100 + k)
            self._sigs[sig] = code
            self._compiled = None
        return ord(code)

    def _set(self, pred: SigPredicate) -> str:
        codes = [c for s, c in self._sigs.items() if pred(s)]
        # an empty class must match nothing: a code no signature uses
        return "[" + "".join(re.escape(c) for c in codes) + "]" if codes else "[\x00]"

    def _range_set(self, pred: SigPredicate, end: int) -> str:
        # the code points below ``end`` whose signature satisfies ``pred``, as ranges
        sigs = _signatures_below(end)
        out = []
        o = 0
        while o < end:
            if pred(sigs[o]):
                first = o
                while o + 1 < end and pred(sigs[o + 1]):
                    o += 1
                out.append(f"\\u{first:04x}" if first == o else f"\\u{first:04x}-\\u{o:04x}")
            o += 1
        return "[" + "".join(out) + "]" if out else _NOTHING

    def _wide_pattern(self) -> re.Pattern[str]:
        # built on first use: non-ASCII text is rarer, and the signatures take a while
        pat = self._wide
        if pat is None:
            pat = self._wide = re.compile(self._source(lambda p: self._range_set(p, _WIDE_END)))
        return pat

    def _pattern(self) -> re.Pattern[str]:
        pat = self._compiled
        if pat is None:
            pat = self._compiled = re.compile(self._source(self._set))
        return pat

    def _source(self, S: ClassWriter, ascii_only: bool = False) -> str:
        """The pattern with each class written by ``S(predicate on signatures)``.

        ``ascii_only``: a form for ASCII text only, with less backtracking. Equivalent there
        because in ASCII the upper- and lower-case classes are disjoint (no ``\\p{Lm}``,
        ``\\p{Lo}``, ``\\p{M}``) and the prefix class holds no letter:

        * ``P?U*L+C?|P?U+L*C?`` (o200k) is ``P?+(?:U*+L++|U++)C?``: when a lower-case run
          follows the upper-case run the first alternative takes both, else the second takes
          the upper-case run; giving back a character never helps, as no class overlaps the
          next one;
        * ``\\s*[\\r\\n]+`` (o200k) ends at the last ``\\r`` or ``\\n`` of the white-space run,
          which ``(?:[\\s--\\r\\n]*+[\\r\\n]++)++`` reaches without backtracking over the run;
        * `` ?X+`` with ``X`` not holding the space is `` ?+X+`` (this one holds in Unicode too).

        Measured gain: docs/algorithms.md, "Encoder choices".
        """

        def _notset(pred: SigPredicate) -> str:
            return S(lambda s: not pred(s))

        sp = S(lambda s: s[_SPACE])
        ws = S(lambda s: s[_WS])
        nws = _notset(lambda s: s[_WS])
        crlf = S(lambda s: s[_CRLF])
        num = S(lambda s: s[_N])
        apos = S(lambda s: s[_APOS])
        letter = S(lambda s: s[_L])
        punct = S(lambda s: not (s[_WS] or s[_L] or s[_N]))
        prefix = S(lambda s: not (s[_CRLF] or s[_L] or s[_N]))
        opt_sp = f"{sp}?+" if ascii_only else f"{sp}?"

        def letter_is(index: int, c: str) -> str:
            return S(lambda s: s[index] == c)

        def ci(word: str) -> str:
            return "".join(letter_is(_CIL, c) for c in word)

        def exact(word: str) -> str:
            return "".join(letter_is(_EXACT, c) for c in word)

        if self.name == "r50k_base":
            contr = "|".join(exact(w) for w in ("s", "d", "m", "t", "ll", "ve", "re"))
            src = (f"{apos}(?:{contr})|{opt_sp}{letter}++|{opt_sp}{num}++|{opt_sp}{punct}++"
                   f"|{ws}++\\Z|{ws}+(?!{nws})|{ws}")
        elif self.name == "cl100k_base":
            contr = "|".join(ci(w) for w in ("s", "d", "m", "t", "ll", "ve", "re"))
            src = (f"{apos}(?:{contr})|{prefix}?+{letter}++|{num}{{1,3}}+|{opt_sp}{punct}++{crlf}*+"
                   f"|{ws}++\\Z|{ws}*{crlf}|{ws}+(?!{nws})|{ws}")
        else:
            up = S(lambda s: s[_UP])
            lo = S(lambda s: s[_LO])
            crlf_slash = S(lambda s: s[_CRLF] or s[_SLASH])
            contr = "|".join(apos + ci(w) for w in ("s", "t", "re", "ve", "m", "ll", "d"))
            if ascii_only:
                ws_nl = S(lambda s: s[_WS] and not s[_CRLF])  # white space but not \r, \n
                words = f"{prefix}?+(?:{up}*+{lo}++|{up}++)(?:{contr})?"
                rest = f"|{num}{{1,3}}|{opt_sp}{punct}++{crlf_slash}*+|(?:{ws_nl}*+{crlf}++)++"
            else:
                words = f"{prefix}?{up}*{lo}+(?:{contr})?|{prefix}?{up}+{lo}*(?:{contr})?"
                rest = f"|{num}{{1,3}}|{sp}?{punct}+{crlf_slash}*|{ws}*{crlf}+"
            src = f"{words}{rest}|{ws}+(?!{nws})|{ws}+"
        return src

    def codes(self, text: str) -> str:
        """``text`` with every character replaced by its class code (same length)."""
        return text.translate(self._table)

    def finditer(self, text: str, pos: int = 0) -> Iterator[re.Match[str]]:
        """Matches over the class codes of ``text`` (spans are those of ``text``)."""
        codes = text.translate(self._table)  # before _pattern(): see findall
        return self._pattern().finditer(codes, pos)

    def findall(self, text: str) -> list[str]:
        """The pieces of ``text`` as strings of class codes (same lengths as the pieces)."""
        # subtle: translate first; it may meet new signatures and invalidate the pattern
        codes = text.translate(self._table)
        return self._pattern().findall(codes)

    def pieces(self, text: str) -> list[str]:
        """The pieces of ``text``, as strings.

        Three equivalent patterns, fastest first: over the characters themselves for ASCII
        text (``ascii_only`` form of :meth:`_source`) and for text below U+0800 (classes
        listed as code point ranges), else over the class codes, then sliced out of ``text``
        (docs/algorithms.md, "Encoder choices", says by how much).

        >>> FastSplitter("cl100k_base").pieces("Hi  there!\\n")
        ['Hi', ' ', ' there', '!\\n']

        Runtime complexity: ``O(len(text))``.
        """
        if text.isascii():  # O(1): CPython records it in the string
            # one C call: no code string, no span arithmetic, no slicing
            return self._ascii.findall(text)
        wide_findall = self._wide_pattern().findall
        if _BEYOND_WIDE.search(text) is None:
            return wide_findall(text)
        if len(text) <= _SUB_BLOCK_CHARS:
            return self._code_pieces(text)
        # text with a few characters from U+0800 up (real text often is): only the small
        # blocks that hold them take the slower code path
        out: list[str] = []
        ascii_findall = self._ascii.findall
        for sub in self.blocks(text, _SUB_BLOCK_CHARS):
            if sub.isascii():
                out += ascii_findall(sub)
            elif _BEYOND_WIDE.search(sub) is None:
                out += wide_findall(sub)
            else:
                out += self._code_pieces(sub)
        return out

    def _code_pieces(self, text: str) -> list[str]:
        # pieces as class codes, then the same spans sliced out of the text
        parts = self.findall(text)
        ends = list(accumulate(map(len, parts)))
        return list(map(text.__getitem__, map(slice, [0, *ends], ends)))

    def blocks(self, text: str, size: int) -> Iterator[str]:
        """Consecutive slices of ``text``, each about ``size`` characters or more, whose splits
        concatenate to the split of ``text``; one slice when ``text`` has no cut point.

        >>> [len(b) for b in FastSplitter("o200k_base").blocks("x = 1\\ny = 2\\n  z\\n", 3)]
        [6, 10]

        Cuts are made only right after ``X\\n`` (``X`` printable non-space ASCII) before an
        ASCII letter ``L``. For each of the three patterns no piece spans such a cut, and the
        pieces left of it are the same when the text ends there (so splitting each slice
        alone is exact; pieces read nothing to the left of their start):

        * no alternative that could reach the cut matches ``\\n`` before a letter: letter,
          number and contraction runs stop at ``\\n``; punctuation runs (`` ?[^\\s\\p{L}\\p{N}]+``
          with their trailing ``[\\r\\n]*`` / ``[\\r\\n/]*``) and white-space runs stop at ``L``
          or at the end alike;
        * the end-sensitive alternatives choose the same span either way: a white-space run
          that reaches the cut is ``\\n`` alone (``X`` is not white space); cl100k/r50k's
          ``\\s++$`` takes it at the end of the slice, where in the whole text ``\\s*[\\r\\n]``
          (cl100k) or ``\\s`` (r50k; ``\\s+(?!\\S)`` fails before ``L``) takes the same
          ``\\n``; o200k's ``\\s*[\\r\\n]+`` comes before its look-ahead and takes it in both.

        Runtime complexity: ``O(len(text))`` in all, lazily.
        """
        n = len(text)
        pos = 0
        search = _NL_BEFORE_LETTER.search
        while n - pos > size:
            # the first cut X\n (X at or after pos + size) before a letter
            m = search(text, pos + size + 1)
            while m is not None and not "!" <= text[m.start() - 1] <= "~":
                m = search(text, m.end())
            if m is None:
                break
            end = m.end()
            yield text[pos:end]
            pos = end
        yield text[pos:] if pos else text

    def spans(self, text: str, pos: int = 0) -> list[tuple[int, int]]:
        """All piece spans of ``text[pos:]``."""
        return [m.span() for m in self.finditer(text, pos)]
