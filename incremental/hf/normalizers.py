"""The normalizers of a ``tokenizer.json``, exact to HuggingFace ``tokenizers``, with alignment
and sound cut rules.

Each class reproduces one ``tokenizers.normalizers`` type (``normalize`` equals HF's
``normalize_str``) and tells the incremental document where text may be cut into pieces that
normalize independently (:meth:`Normalizer.cut_ok`). The issue's edit-window rule ("widen to a
normalization boundary; for NFC back to the previous starter") is this cut rule read from the
other side: a piece boundary is only ever placed where normalizing the two sides apart gives
the same string as normalizing the whole.

Two notions carry the argument:

* ``cut_ok(text, i)``: ``N(text[:i], s) + N(text[i:], False) == N(text, s)`` for every text
  equal to ``text`` on ``[i - context, i + context)`` (positions outside the text are unknown).
  ``start=False`` says ``text[0]`` is not taken as a segment start (the window begins inside
  a segment); only :class:`Sequence` reads it (for ``Prepend``, which acts only there).
* ``keeps(text, p)``: ``text[p]`` is an *isolated fixed point*: for every text equal on
  ``[p - keep_context, p + 1 + keep_context)``, ``N(t) == N(t[:p]) + t[p] + N(t[p+1:])``,
  ``N(t[:p+1]) == N(t[:p]) + t[p]`` and ``N(t[p:]) == t[p] + N(t[p+1:])``.
  :class:`Sequence` uses it: when every earlier step keeps each character of a window around
  the cut, the later step sees that window verbatim and can judge the cut on the original
  text (argument in :meth:`Sequence.cut_ok`).

HF's Unicode tables are older than Python's ``unicodedata`` (14.0): code points whose
decomposition or combining class differ (``_HF_INERT``) are *inert starters* for HF (no
decomposition, class 0, no composition), so the NF* normalizers cut the text around them and
let ``unicodedata`` normalize the rest; ``StripAccents`` uses HF's older mark table
(``_NOT_HF_MARKS`` are marks only for Python; U+1CF2/U+1CF3 only for HF). ``Lowercase`` and
``Strip`` use the HF tables measured for BERT (``wordpiece/bert_normalize``).

>>> n = build_normalizer({"type": "Sequence", "normalizers": [{"type": "NFKC"},
...     {"type": "Lowercase"}]}, source="t.json")
>>> n.normalize("\\ufb01 \\uff21")
'fi a'
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from typing import Any, Callable, Iterable, Literal, Protocol, Sequence as Seq, cast

import regex

from ..env_limits import size_limit
from ..regex import (BoundedRegex, PatternError, UnsafePattern, alphabet, check, compile_bounded,
                     min_width, translate)
from ..wordpiece import bert_normalize
from .errors import UnboundedComponent, UnsupportedComponent
from .precompiled import Charsmap, certain_break, char_class, charsmap_from_base64

__all__ = [
    "Normalizer",
    "build_normalizer",
    "growth_bound",
    "check_growth",
    "replace_growth",
    "UnicodeNormalizer",
    "NfcTables",
    "nfc_tables",
    "Lowercase",
    "Strip",
    "StripAccents",
    "Replace",
    "Prepend",
    "BertNormalizer",
    "Precompiled",
    "Sequence",
]

Align = list[int] | None
Form = Literal["NFC", "NFD", "NFKC", "NFKD"]


class Normalizer(Protocol):
    """What the reader needs from a normalizer (DESIGN of issue 17)."""

    context: int  #: characters each side cut_ok reads (>= 1)
    keep_context: int  #: characters each side keeps reads
    changes_text: bool  #: False only for the identity (empty Sequence)

    def normalize(self, text: str, *, segment_start: bool = True) -> str: ...

    def normalize_aligned(self, text: str, *, segment_start: bool = True) -> tuple[str, Align]:
        """(out, align): align None when position-wise, else len(out) + 1 source offsets,
        non-decreasing, ending with len(text)."""
        ...

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool: ...

    def keeps(self, text: str, p: int) -> bool: ...


def _inside(text: str, lo: int, hi: int) -> bool:
    """The window [lo, hi) lies in the text (outside it nothing is known)."""
    return lo >= 0 and hi <= len(text)


def _aligned_from_sources(out_parts: list[str], sources: list[int], n: int) -> list[int]:
    align: list[int] = []
    for part, src in zip(out_parts, sources):
        align.extend([src] * len(part))
    align.append(n)
    return align


# -- NFC, NFD, NFKC, NFKD -------------------------------------------------------------------------

#: code points whose NF* data differ between HF (``unicode-normalization-alignments``) and
#: Python's ``unicodedata``: inert starters for HF (measured over every code point; the test
#: suite measures again)
_HF_INERT: tuple[tuple[int, int], ...] = (
    (0x07FD, 0x07FD), (0x0898, 0x089F), (0x08CA, 0x08D3), (0x09FE, 0x09FE), (0x0C3C, 0x0C3C),
    (0x0D3B, 0x0D3C), (0x0EBA, 0x0EBA), (0x1715, 0x1715), (0x1ABF, 0x1ACE), (0x1DF6, 0x1DFA),
    (0x32FF, 0x32FF), (0xA7F2, 0xA7F4), (0xA82C, 0xA82C), (0xAB69, 0xAB69), (0x10781, 0x10785),
    (0x10787, 0x107B0), (0x107B2, 0x107BA), (0x10D24, 0x10D27), (0x10EAB, 0x10EAC),
    (0x10F46, 0x10F50), (0x10F82, 0x10F85), (0x11070, 0x11070), (0x1133B, 0x1133B),
    (0x1145E, 0x1145E), (0x11839, 0x1183A), (0x11930, 0x11930), (0x11935, 0x11935),
    (0x11938, 0x11938), (0x1193D, 0x1193E), (0x11943, 0x11943), (0x119E0, 0x119E0),
    (0x11A34, 0x11A34), (0x11A47, 0x11A47), (0x11A99, 0x11A99), (0x11D42, 0x11D42),
    (0x11D44, 0x11D45), (0x11D97, 0x11D97), (0x16FF0, 0x16FF1), (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF), (0x1F16C, 0x1F16C), (0x1FBF0, 0x1FBF9),
)

_HF_INERT_SET = frozenset(c for a, b in _HF_INERT for c in range(a, b + 1))
_HF_INERT_RE = re.compile(char_class(_HF_INERT_SET))


@functools.lru_cache(maxsize=1)
def _second_elements() -> frozenset[str]:
    """Characters that combine with a preceding starter (second element of a primary
    composite, Hangul V and T jamo included)."""
    out = {chr(c) for c in range(0x1161, 0x1176)} | {chr(c) for c in range(0x11A8, 0x11C3)}
    for cp in range(0x110000):
        d = unicodedata.decomposition(chr(cp))
        if d and not d.startswith("<"):
            parts = d.split()
            if len(parts) == 2:
                pair = chr(int(parts[0], 16)) + chr(int(parts[1], 16))
                if unicodedata.normalize("NFC", pair) == chr(cp):
                    out.add(pair[1])
    return frozenset(out)


@functools.lru_cache(maxsize=4)
def _unsafe_before(form: Form) -> frozenset[int]:
    """Code points before which a cut is not sound for ``form``: the first character of the
    decomposition is a non-starter (canonical reordering may move marks across it) or, for
    the composing forms, may combine with the starter before it."""
    dform: Form = "NFKD" if "K" in form else "NFD"
    compose = form in ("NFC", "NFKC")
    second = _second_elements() if compose else frozenset()
    out = set()
    for cp in range(0x110000):
        if cp in _HF_INERT_SET:
            continue
        ch = chr(cp)
        if not unicodedata.combining(ch) and not unicodedata.decomposition(ch):
            if ch in second:
                out.add(cp)
            continue
        d = unicodedata.normalize(dform, ch) if not 0xD800 <= cp <= 0xDFFF else ch
        if unicodedata.combining(ch) or (d and unicodedata.combining(d[0])):
            out.add(cp)
        elif compose and (ch in second or (d and d[0] in second)):
            out.add(cp)
    return frozenset(out)


@functools.lru_cache(maxsize=4)
def _unsafe_char(form: Form) -> re.Pattern[str]:
    """One character before which no cut may be placed (``_unsafe_before``)."""
    return re.compile(char_class(_unsafe_before(form)))


@functools.lru_cache(maxsize=4)
def _unsafe_re(form: Form) -> re.Pattern[str]:
    # a cut unit: any one character, then the characters no cut may precede
    return re.compile("(?s)." + char_class(_unsafe_before(form)) + "*")


class NfcTables:
    """What HF's NFC may change, for ``hf/bytelevel_nfc.py``: a *unit* is a character that is
    not unsafe before (:func:`_unsafe_before`) with the unsafe characters after it, and NFC
    is the concatenation of the units' normal forms.

    * ``hard``: a character that may change its unit other than alone (unsafe before, or not
      its own normal form and not a singleton below). A text without one is the image of the
      character map ``singles`` (NFC changes it character for character), and so is every
      slice of it;
    * ``singles``: ``str.translate`` table of the characters that NFC maps to one other
      character and that start their unit (U+212B, the CJK compatibility ideographs, ...);
    * ``single``: one of them; ``unsafe_run``: a run of characters unsafe before; ``unsafe``:
      their set.

    Runtime complexity: one pass over the code points (~1 s with the unsafe set), once
    (:func:`nfc_tables`).
    """

    def __init__(self) -> None:
        self.unsafe = _unsafe_before("NFC")
        moved = {cp for cp in range(0x80, 0x110000) if not 0xD800 <= cp < 0xE000
                 and not unicodedata.is_normalized("NFC", chr(cp))} - _HF_INERT_SET - self.unsafe
        nfc = UnicodeNormalizer("NFC").normalize
        self.singles = {cp: nfc(chr(cp)) for cp in moved if len(nfc(chr(cp))) == 1}
        hard = (moved - set(self.singles)) | self.unsafe
        self.hard = re.compile(char_class(hard))
        # the scan: the hard characters of the BMP exactly (``re`` tests them by a table)
        # and the astral ones as a few wide ranges (each range costs a test per character:
        # the exact class is ~8x slower on a CJK or emoji line); :meth:`find_hard` checks
        coarse: list[list[int]] = []
        for cp in sorted(c for c in hard if c > 0xFFFF):
            if coarse and cp - coarse[-1][1] < 4096:
                coarse[-1][1] = cp
            else:
                coarse.append([cp, cp])
        wide = (cp for a, b in coarse for cp in range(a, b + 1))
        self._scan = re.compile(char_class([*(c for c in hard if c <= 0xFFFF), *wide]))
        # a singleton, found by a scan of the BMP ones and one range over the astral ones (the
        # CJK compatibility supplement): :func:`..bytelevel_nfc._image` checks the table
        astral = [cp for cp in self.singles if cp > 0xFFFF]
        self.single = re.compile(char_class([*(c for c in self.singles if c <= 0xFFFF),
                                             *range(min(astral), max(astral) + 1)]))
        self.unsafe_run = re.compile(char_class(self.unsafe) + "*")

    def find_hard(self, text: str, i: int, b: int) -> int:
        """The first hard character of ``text[i:b]``, or -1.

        Runtime complexity: ``O(b - i)``, a C scan (plus a check per astral character of
        the few wide ranges that hold the hard ones).
        """
        scan, hard = self._scan, self.hard
        while True:
            m = scan.search(text, i, b)
            if m is None:
                return -1
            p = m.start()
            if hard.match(text, p) is not None:
                return p
            i = p + 1


_NFC_TABLES: list[NfcTables] = []
_NFC_TABLES_LOCK = threading.Lock()


def nfc_tables() -> NfcTables:
    """The :class:`NfcTables`, made once (a second thread asking meanwhile waits for them:
    ``hf/bytelevel_nfc.py`` starts making them when an NFC file loads)."""
    if not _NFC_TABLES:
        with _NFC_TABLES_LOCK:
            if not _NFC_TABLES:
                _NFC_TABLES.append(NfcTables())
    return _NFC_TABLES[0]


class UnicodeNormalizer:
    """HF ``NFC`` / ``NFD`` / ``NFKC`` / ``NFKD``.

    Cut rule: before ``text[i]`` when its decomposition starts with a starter that nothing
    before it can compose with (canonical reordering stops at a starter; composition of the
    starter needs a second element), or when it is one of HF's inert code points.

    >>> UnicodeNormalizer("NFC").normalize("e\\u0301")
    '\\xe9'
    >>> UnicodeNormalizer("NFC").cut_ok("e\\u0301", 1), UnicodeNormalizer("NFC").cut_ok("ab", 1)
    (False, True)

    Runtime complexity: ``normalize`` ``O(n)``; ``cut_ok`` ``O(1)`` (tables built once).
    """

    context = 1
    keep_context = 1
    changes_text = True

    def __init__(self, form: str) -> None:
        if form not in ("NFC", "NFD", "NFKC", "NFKD"):
            raise ValueError(f"unknown Unicode normalization form {form!r}")
        self.form: Form = cast(Form, form)

    def __repr__(self) -> str:
        return f"{self.form}()"

    @property
    def _unsafe(self) -> frozenset[int]:
        return _unsafe_before(self.form)

    def normalize(self, text: str, *, segment_start: bool = True) -> str:
        if text.isascii():
            return text
        if _HF_INERT_RE.search(text) is None:
            return unicodedata.normalize(self.form, text)
        parts = _HF_INERT_RE.split(text)
        inert = _HF_INERT_RE.findall(text)
        out = [unicodedata.normalize(self.form, parts[0])]
        for x, part in zip(inert, parts[1:]):
            out.append(x)
            out.append(unicodedata.normalize(self.form, part))
        return "".join(out)

    def normalize_aligned(self, text: str, *, segment_start: bool = True) -> tuple[str, Align]:
        if text.isascii() or (
            _HF_INERT_RE.search(text) is None and unicodedata.is_normalized(self.form, text)
        ):
            return text, None
        out: list[str] = []
        align: list[int] = []
        for m in _unsafe_re(self.form).finditer(text):
            unit = m.group()
            norm = self.normalize(unit)
            out.append(norm)
            if norm == unit:
                align.extend(range(m.start(), m.end()))
            else:
                align.extend([m.start()] * len(norm))
        align.append(len(text))
        return "".join(out), align

    def _safe_before(self, ch: str) -> bool:
        return ord(ch) not in self._unsafe

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool:
        return 0 < i < len(text) and ord(text[i]) not in self._unsafe

    def transparent(self, text: str, a: int, b: int) -> bool:
        """Whether ``text[a:b]`` is left as it is and may be cut anywhere: every character is
        its own normal form and none is unsafe before (so ``cut_ok`` holds at each position of
        ``(a, b)`` whatever surrounds the span, and the normalization of any text holding the
        span is the span on ``[a, b - 1)``: only ``text[b - 1]`` may compose with what follows).
        False is always sound. (Perf: :class:`~.encoding.TokenizerJsonEncoding` horizons skip
        the aligned normalization on such spans.)

        Runtime complexity: ``O(b - a)`` (``O(1)`` calls on ASCII text).
        """
        w = text[a:b]
        if w.isascii():
            return True
        if _unsafe_char(self.form).search(w) is not None or _HF_INERT_RE.search(w) is not None:
            return False
        # with every cut allowed, N(w) is the concatenation of N(c); each is non-empty, so
        # N(w) == w exactly when every character is its own normal form
        return unicodedata.is_normalized(self.form, w)

    def keeps(self, text: str, p: int) -> bool:
        if not _inside(text, p, p + 2):
            return False
        ch = text[p]
        unsafe = self._unsafe
        return (
            ord(ch) not in unsafe
            and ord(text[p + 1]) not in unsafe
            and (ord(ch) in _HF_INERT_SET or unicodedata.normalize(self.form, ch) == ch)
        )


# -- Lowercase, Strip, StripAccents -------------------------------------------------------------


class Lowercase:
    """HF ``Lowercase``: Rust ``char::to_lowercase`` per character (HF's table; no final-sigma
    rule). Cut rule: always (one character in, its lowercase out).

    >>> Lowercase().normalize("ÀΣ İ")
    'àσ i̇'

    Runtime complexity: ``O(n)``.
    """

    context = 1
    keep_context = 0
    changes_text = True

    def __init__(self) -> None:
        self._table: dict[int, str] = bert_normalize.bert_tables().lower_map
        #: the most characters one character becomes (the growth bound)
        self.longest = max(map(len, self._table.values()), default=1)
        self._multi = re.compile(char_class(c for c, v in self._table.items() if len(v) != 1))

    def __repr__(self) -> str:
        return "Lowercase()"

    def normalize(self, text: str, *, segment_start: bool = True) -> str:
        return text.lower() if text.isascii() else text.translate(self._table)

    def normalize_aligned(self, text: str, *, segment_start: bool = True) -> tuple[str, Align]:
        out = self.normalize(text)
        if text.isascii() or self._multi.search(text) is None:
            return out, None
        parts = [self._table.get(ord(ch), ch) for ch in text]
        return out, _aligned_from_sources(parts, list(range(len(text))), len(text))

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool:
        return 0 < i < len(text)

    def keeps(self, text: str, p: int) -> bool:
        return 0 <= p < len(text) and self._table.get(ord(text[p]), text[p]) == text[p]


def _whitespace() -> str:
    return "".join(sorted(bert_normalize.bert_tables().space_chars))


class Strip:
    """HF ``Strip``: drop Rust-``char::is_whitespace`` characters at the start and/or end.

    Cut rule: neither ``text[i-1]`` nor ``text[i]`` is whitespace (then neither side's strip
    reaches the cut, and each side's outer end is the whole text's).

    >>> Strip(left=True, right=False).normalize("  a b  ")
    'a b  '

    Runtime complexity: ``O(n)``.
    """

    context = 1
    keep_context = 1
    changes_text = True

    def __init__(self, *, left: bool, right: bool) -> None:
        self.left, self.right = bool(left), bool(right)
        self._ws = _whitespace()
        self.changes_text = self.left or self.right

    def __repr__(self) -> str:
        return f"Strip(left={self.left}, right={self.right})"

    def normalize(self, text: str, *, segment_start: bool = True) -> str:
        if self.left:
            text = text.lstrip(self._ws)
        if self.right:
            text = text.rstrip(self._ws)
        return text

    def normalize_aligned(self, text: str, *, segment_start: bool = True) -> tuple[str, Align]:
        out = self.normalize(text)
        if len(out) == len(text):
            return out, None
        k = len(text) - len(text.lstrip(self._ws)) if self.left else 0
        return out, list(range(k, k + len(out))) + [len(text)]

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool:
        return 0 < i < len(text) and text[i - 1] not in self._ws and text[i] not in self._ws

    def keeps(self, text: str, p: int) -> bool:
        return _inside(text, p - 1, p + 2) and not any(c in self._ws for c in text[p - 1 : p + 2])


#: Python marks (category M*) that HF's older table does not have
_NOT_HF_MARKS: tuple[tuple[int, int], ...] = (
    (0x07FD, 0x07FD), (0x0898, 0x089F), (0x08CA, 0x08D3), (0x09FE, 0x09FE), (0x0AFA, 0x0AFF),
    (0x0B55, 0x0B55), (0x0C04, 0x0C04), (0x0C3C, 0x0C3C), (0x0D00, 0x0D00), (0x0D3B, 0x0D3C),
    (0x0D81, 0x0D81), (0x0EBA, 0x0EBA), (0x1715, 0x1715), (0x180F, 0x180F), (0x1ABF, 0x1ACE),
    (0x1CF7, 0x1CF7), (0x1DF6, 0x1DFA), (0xA82C, 0xA82C), (0xA8FF, 0xA8FF), (0x10D24, 0x10D27),
    (0x10EAB, 0x10EAC), (0x10F46, 0x10F50), (0x10F82, 0x10F85), (0x11070, 0x11070),
    (0x11073, 0x11074), (0x110C2, 0x110C2), (0x11145, 0x11146), (0x111C9, 0x111C9),
    (0x111CE, 0x111CF), (0x1133B, 0x1133B), (0x1145E, 0x1145E), (0x1182C, 0x1183A),
    (0x11930, 0x11935), (0x11937, 0x11938), (0x1193B, 0x1193E), (0x11940, 0x11940),
    (0x11942, 0x11943), (0x119D1, 0x119D7), (0x119DA, 0x119E0), (0x119E4, 0x119E4),
    (0x11A01, 0x11A0A), (0x11A33, 0x11A39), (0x11A3B, 0x11A3E), (0x11A47, 0x11A47),
    (0x11A51, 0x11A5B), (0x11A8A, 0x11A99), (0x11D31, 0x11D36), (0x11D3A, 0x11D3A),
    (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45), (0x11D47, 0x11D47), (0x11D8A, 0x11D8E),
    (0x11D90, 0x11D91), (0x11D93, 0x11D97), (0x11EF3, 0x11EF6), (0x16F4F, 0x16F4F),
    (0x16F7F, 0x16F87), (0x16FE4, 0x16FE4), (0x16FF0, 0x16FF1), (0x1CF00, 0x1CF2D),
    (0x1CF30, 0x1CF46), (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF),
)
#: HF marks that are letters for Python 3.11 (Vedic signs, Mc before Unicode 14)
_HF_ONLY_MARKS = (0x1CF2, 0x1CF3)


@functools.lru_cache(maxsize=1)
def _hf_marks() -> dict[int, None]:
    not_hf = {c for a, b in _NOT_HF_MARKS for c in range(a, b + 1)}
    marks = {
        c: None
        for c in range(0x300, 0x110000)
        if c not in not_hf and unicodedata.category(chr(c))[0] == "M"
    }
    marks.update({c: None for c in _HF_ONLY_MARKS})
    return marks


class StripAccents:
    """HF ``StripAccents``: delete every combining mark (HF's ``is_combining_mark``: category
    M*, by its Unicode tables). It does not decompose: put NFD/NFKD before it.

    Cut rule: always (a per-character filter).

    >>> StripAccents().normalize("e\\u0301\\u00e9")
    'e\\xe9'

    Runtime complexity: ``O(n)``.
    """

    context = 1
    keep_context = 0
    changes_text = True

    def __repr__(self) -> str:
        return "StripAccents()"

    def normalize(self, text: str, *, segment_start: bool = True) -> str:
        return text if text.isascii() else text.translate(_hf_marks())

    def normalize_aligned(self, text: str, *, segment_start: bool = True) -> tuple[str, Align]:
        out = self.normalize(text)
        if len(out) == len(text):
            return out, None
        marks = _hf_marks()
        keep = [k for k, ch in enumerate(text) if ord(ch) not in marks]
        return out, keep + [len(text)]

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool:
        return 0 < i < len(text)

    def keeps(self, text: str, p: int) -> bool:
        return 0 <= p < len(text) and ord(text[p]) not in _hf_marks()


# -- Replace, Prepend ---------------------------------------------------------------------------


def _regex_alphabet(pattern: str) -> Callable[[str], bool] | None:
    """A test that holds for every character any match of ``pattern`` (Oniguruma's syntax, as
    :class:`Replace` runs it) can contain, or None when the pattern may match the empty
    string, has anchors, look-arounds, back-references or case folding (then no cut rule is
    derived: cut_ok is always False). The characters are read off the pattern's syntax tree
    (:func:`..regex.alphabet`), the one :class:`Replace` scans with.

    >>> sp = _regex_alphabet(" {2,}")
    >>> sp is not None and (sp(" "), sp("a"))
    (True, False)
    >>> _regex_alphabet("a*") is None, _regex_alphabet("\\\\ba") is None
    (True, True)
    """
    try:
        matcher = alphabet(pattern)
    except ValueError:
        return None
    if matcher is None:
        return None
    one = regex.compile(matcher).fullmatch
    known: dict[str, bool] = {}  # character -> in the alphabet (filled on use)

    def test(ch: str) -> bool:
        got = known.get(ch)
        if got is None:
            got = known[ch] = one(ch) is not None
        return got

    return test


# -- the growth bound ---------------------------------------------------------------------------

#: a normalizer makes a text of ``n`` characters at most ``G * n + G`` characters long, ``G``
#: this (``LIVETOK_MAX_NORMALIZER_GROWTH``): NFKC makes one character 18 (U+FDFA), the real
#: files' chains far less; 24 chained ``Replace "a" -> "aa"`` steps made 24 kB 400 MB (1-3.7
#: GB of memory). One step that could grow more by itself is refused when the file is read
#: (:func:`check_growth`); a chain of steps is stopped when its text passes the bound
#: (:meth:`Sequence.normalize`, :meth:`Replace.normalize`: before the text is built)
MAX_GROWTH = 64
_GROWTH_ENV = "LIVETOK_MAX_NORMALIZER_GROWTH"


def growth_bound() -> int:
    """``G`` of the growth bound: ``$LIVETOK_MAX_NORMALIZER_GROWTH`` or :data:`MAX_GROWTH`.

    >>> growth_bound()
    64

    Runtime complexity: ``O(1)``.
    """
    return size_limit(_GROWTH_ENV, MAX_GROWTH, unit="times the input")


def _shortest_match(pattern: str) -> int:
    """The fewest characters a match of the regex ``pattern`` consumes (0 when not known)."""
    try:
        return min_width(pattern)
    except ValueError:
        return 0


class _TooLong(Exception):
    """A ``Replace`` in a :class:`Sequence` would pass the sequence's bound (``size``: the
    characters it would make, or more); the sequence reports it."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def _too_long(source: str, what: str, n: int, size: int, growth: int) -> UnboundedComponent:
    return UnboundedComponent(
        f"{source}: normalizer {what} makes the normalized text longer than {growth} times "
        f"its input and {growth} ({n:,} characters would become {size:,} or more): livetok "
        f"does not run a file that multiplies the text; fix the normalizer, or set "
        f"{_GROWTH_ENV} to allow more")


def _growth(step: Normalizer) -> tuple[int, int]:
    """``(a, b)``: ``step`` makes a text of ``n`` characters at most ``a * n + b`` long (the
    Unicode forms: UAX #15's largest expansions, NFD's bounding NFC's)."""
    if isinstance(step, UnicodeNormalizer):
        return (18 if "K" in step.form else 4), 0
    if isinstance(step, Lowercase):
        return step.longest, 0
    if isinstance(step, (Strip, StripAccents)):
        return 1, 0
    if isinstance(step, BertNormalizer):
        return 36, 0  # spaces around CJK (3), then NFD (4), then lowercase (3)
    if isinstance(step, Precompiled):
        return max(1, step.charsmap.longest), 0
    if isinstance(step, Prepend):
        return 1, len(step.prepend)
    if isinstance(step, (Replace, Sequence)):
        return step.worst
    return growth_bound() + 1, 0  # not known: checked


class Replace:
    """HF ``Replace``: every non-overlapping match (left to right) of a literal
    (``{"String": s}``) or a regular expression (``{"Regex": r}``) becomes ``content``.

    Cut rules. Literal of length L: no occurrence of the literal (positions outside the text
    count as wildcards) covers both ``text[i-1]`` and ``text[i]``; then the left-to-right scan
    finds the same matches in each half (context L). Regex: the pattern cannot match the
    empty string, has no anchors or look-arounds, and ``text[i-1]`` or ``text[i]`` is a
    character no match can contain, so no match spans the cut and the scan cannot depend on the
    other side (context 1). Patterns outside that analysis never cut.

    The text it makes is at most ``G * n + G`` characters (:func:`growth_bound`; ``limit``
    of :meth:`normalize`, the bound of the :class:`Sequence` it is in): past it,
    :class:`.errors.UnboundedComponent` naming ``source``, before the text is built. ``budget``
    (:func:`..regex.check`'s verdict): the regex scans under a time budget.

    >>> Replace(" ", "\\u2581").normalize("a b")
    'a\\u2581b'
    >>> r = Replace(" {2,}", " ", regex_=True)
    >>> r.normalize("a   b"), r.cut_ok("a  b", 2), r.cut_ok("a  b", 1)
    ('a b', False, True)

    Runtime complexity: ``O(n)`` per call.
    """

    keep_context = 0
    changes_text = True

    def __init__(self, pattern: str, content: str, *, regex_: bool = False,
                 source: str = "tokenizer.json", budget: str | None = None) -> None:
        self.pattern, self.content, self.is_regex = pattern, content, regex_
        self.source = source
        self.growth = growth_bound()
        self._alphabet: Callable[[str], bool] | None
        if regex_:
            # HF compiles the pattern with Oniguruma: it runs as translated to the ``regex``
            # package's syntax (``\h`` is a hex digit, ``&&`` an intersection, ``(?m)`` dot-all)
            self._re: BoundedRegex | None = compile_bounded(
                translate(pattern), budget, what=f"{source}: normalizer {self!r}",
                error=UnboundedComponent)
            self._alphabet = _regex_alphabet(pattern)
            self.context = 1
            shortest = _shortest_match(pattern) if content else 0
        else:
            self._re = None
            chars = frozenset(pattern)
            self._alphabet = (lambda ch: ch in chars) if pattern else None
            self.context = max(1, len(pattern))
            shortest = len(pattern)
        #: ``(a, b)``: it makes ``n`` characters at most ``a * n + b`` (:func:`replace_growth`)
        self.worst = replace_growth(shortest, len(content))
        #: whether the text can get longer than the growth bound: only then is the output's
        #: length counted before it is built (a file's step that can is refused at load, so
        #: only a :class:`Sequence`'s ``limit`` makes it count)
        self._grows = len(content) > shortest
        self._alone_ok = max(self.worst) <= self.growth

    def __repr__(self) -> str:
        kind = "Regex" if self.is_regex else "String"
        return f"Replace({kind} {self.pattern!r} -> {self.content!r})"

    def normalize(self, text: str, *, segment_start: bool = True, limit: int | None = None
                  ) -> str:
        """``text`` with the matches replaced; ``limit``: the most characters the result may
        have (default ``G * len(text) + G``)."""
        if limit is None and self._alone_ok or not self._grows:
            if self._re is None:
                return text.replace(self.pattern, self.content)
            content = self.content
            return self._re.sub(lambda _m: content, text)
        return self._bounded(text, limit)

    def _bounded(self, text: str, limit: int | None) -> str:
        """:meth:`normalize` counting the output's length before it is built."""
        content = self.content
        bound = self.growth * (len(text) + 1) if limit is None else limit
        try:
            if self._re is None:
                count = text.count(self.pattern) if self.pattern else len(text) + 1
                size = len(text) + count * (len(content) - len(self.pattern))
                if size > bound:
                    raise _TooLong(size)
                return text.replace(self.pattern, content)
            room = [bound - len(text)]  # what the replacements may still add

            def replace(m: regex.Match[str]) -> str:
                room[0] -= len(content) - (m.end() - m.start())
                if room[0] < 0:
                    raise _TooLong(bound + 1)
                return content

            return self._re.sub(replace, text)
        except _TooLong as e:
            if limit is not None:
                raise  # the Sequence this step is in reports it
            raise _too_long(self.source, repr(self), len(text), e.size, self.growth) from None

    def _spans(self, text: str) -> list[tuple[int, int]]:
        if self._re is not None:
            return [m.span() for m in self._re.finditer(text)]
        spans = []
        if not self.pattern:
            return [(k, k) for k in range(len(text) + 1)]
        k = text.find(self.pattern)
        while k >= 0:
            spans.append((k, k + len(self.pattern)))
            k = text.find(self.pattern, k + len(self.pattern))
        return spans

    def normalize_aligned(self, text: str, *, segment_start: bool = True,
                          limit: int | None = None) -> tuple[str, Align]:
        out = self.normalize(text, limit=limit)
        if not self.is_regex and len(self.pattern) == len(self.content) == 1:
            return out, None
        spans = self._spans(text)
        if not spans:
            return out, None
        align: list[int] = []
        pos = 0
        for s, e in spans:
            align.extend(range(pos, s))
            align.extend([s if s < len(text) else len(text)] * len(self.content))
            pos = e
        align.extend(range(pos, len(text)))
        align.append(len(text))
        return out, align

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool:
        test = self._alphabet
        if test is None or not 0 < i < len(text):
            return False
        if not (test(text[i - 1]) and test(text[i])):
            return True
        if self.is_regex:
            return False
        s, n = self.pattern, len(self.pattern)
        for p in range(i - n + 1, i):
            if all(not 0 <= p + k < len(text) or text[p + k] == s[k] for k in range(n)):
                return False
        return True

    def keeps(self, text: str, p: int) -> bool:
        test = self._alphabet
        return test is not None and 0 <= p < len(text) and not test(text[p])


class Prepend:
    """HF ``Prepend``: put ``prepend`` before a non-empty text at a segment start.

    Cut rule: always inside the text (only the segment start gets the prefix, and the left
    side of a cut is never empty). Context 1: in a :class:`Sequence` the character before the
    cut must reach this step, so the left side stays non-empty after earlier steps.

    >>> Prepend("\\u2581").normalize("a"), Prepend("\\u2581").normalize("a", segment_start=False)
    ('\\u2581a', 'a')
    """

    context = 1
    keep_context = 1
    changes_text = True

    def __init__(self, prepend: str) -> None:
        self.prepend = prepend
        self.changes_text = bool(prepend)

    def __repr__(self) -> str:
        return f"Prepend({self.prepend!r})"

    def normalize(self, text: str, *, segment_start: bool = True) -> str:
        return self.prepend + text if segment_start and text else text

    def normalize_aligned(self, text: str, *, segment_start: bool = True) -> tuple[str, Align]:
        if not (segment_start and text and self.prepend):
            return text, None
        return self.prepend + text, [0] * len(self.prepend) + list(range(len(text) + 1))

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool:
        return 0 < i < len(text)

    #: ``keeps(text, p)`` is ``keeps_from <= p < len(text)`` (:meth:`Sequence.cut_ok` asks the
    #: bounds instead of each position)
    keeps_from = 1

    def keeps(self, text: str, p: int) -> bool:
        return 1 <= p < len(text)


# -- BertNormalizer, Precompiled ----------------------------------------------------------------


class BertNormalizer:
    """HF ``BertNormalizer`` (``wordpiece.bert_normalize.BertNormalizer``, measured against HF).

    Cut rule: always without ``strip_accents`` (every step is per character); with it, before a
    character that survives cleaning and decomposes to a starter (canonical reordering of the
    marks cannot cross it), the flag ``CUT_BEFORE_OK`` of ``char_flags``.

    >>> BertNormalizer().normalize("Héllo 中")
    'hello  中 '
    """

    context = 1
    keep_context = 1
    changes_text = True

    def __init__(self, impl: bert_normalize.BertNormalizer | None = None) -> None:
        #: the measured implementation (its options: clean_text, handle_chinese_chars, ...)
        self.impl = impl if impl is not None else bert_normalize.BertNormalizer()
        self._kept: dict[str, bool] = {}

    def __repr__(self) -> str:
        return repr(self.impl)

    def normalize(self, text: str, *, segment_start: bool = True) -> str:
        return self.impl.normalize(text)

    def normalize_aligned(self, text: str, *, segment_start: bool = True) -> tuple[str, Align]:
        out, src = self.impl.normalize_aligned(text)
        if out == text:
            return out, None
        align = src + [len(text)]
        for j in range(len(align) - 2, -1, -1):  # reordered marks: keep it non-decreasing
            if align[j] > align[j + 1]:
                align[j] = align[j + 1]
        return out, align

    def _before_ok(self, ch: str) -> bool:
        if not self.impl.strip_accents:
            return True
        return bool(self.impl.char_flags(ch) & bert_normalize.CUT_BEFORE_OK)

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool:
        return 0 < i < len(text) and self._before_ok(text[i])

    def keeps(self, text: str, p: int) -> bool:
        if not _inside(text, p, p + 2):
            return False
        ch = text[p]
        same = self._kept.get(ch)
        if same is None:
            same = self._kept[ch] = self.impl.normalize(ch) == ch
        return same and self._before_ok(ch) and self._before_ok(text[p + 1])


class Precompiled:
    """HF ``Precompiled`` (SentencePiece's compiled rules, see :mod:`.precompiled`).

    Cut rule: a grapheme-cluster boundary certain from ``text[i-1]`` and ``text[i]`` alone
    (:func:`.precompiled.certain_break`): the normalizer replaces clusters, and clusters on
    each side of a certain break do not depend on the other side.

    Runtime complexity: ``O(n)``.
    """

    context = 1
    keep_context = 1
    changes_text = True

    def __init__(self, charsmap: Charsmap) -> None:
        self.charsmap = charsmap

    def __repr__(self) -> str:
        return f"Precompiled({len(self.charsmap.table)} characters)"

    def normalize(self, text: str, *, segment_start: bool = True) -> str:
        return self.charsmap.normalize(text)

    def normalize_aligned(self, text: str, *, segment_start: bool = True) -> tuple[str, Align]:
        out, align = self.charsmap.normalize_aligned(text)
        return (out, None) if out == text else (out, align)

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool:
        return certain_break(text, i)

    def keeps(self, text: str, p: int) -> bool:
        return self.charsmap.keeps(text, p)


# -- Sequence -----------------------------------------------------------------------------------


def _compose(first: Align, second: Align) -> Align:
    """Alignment of ``second`` applied after ``first`` (offsets through both)."""
    if second is None:
        return first
    if first is None:
        return second
    return [first[k] for k in second]


class Sequence:
    """HF ``Sequence``: the steps one after another.

    Cut rule (:meth:`cut_ok`): with ``R_{n-1} = context(last)`` and
    ``R_{k-1} = R_k + keep_context(step k)``, every position of ``[i - R_k, i + R_k)`` must
    be kept by step ``k`` (for ``k < n``) and the last step must accept the cut. Kept
    positions pass through a step verbatim and the step splits around them, so each later
    step sees the window unchanged and judges it as on the original text.

    >>> s = Sequence([Replace(" ", "_"), Lowercase()])
    >>> s.normalize("AB C"), s.cut_ok("AB C", 1), s.cut_ok("AB C", 2)
    ('ab_c', True, False)

    The text after any step is at most ``G * n + G`` characters (:func:`growth_bound`): past
    it, :class:`.errors.UnboundedComponent` naming ``source`` and the step.

    Runtime complexity: ``normalize`` the sum of the steps; ``cut_ok`` ``O(context)``.
    """

    def __init__(self, steps: Seq[Normalizer], *, source: str = "tokenizer.json") -> None:
        self.steps: list[Normalizer] = [s for s in steps if s.changes_text]
        #: the file (in errors) and ``G`` of the growth bound (:func:`growth_bound`)
        self.source = source
        self.growth = growth_bound()
        a, b = 1, 0
        for step in self.steps:
            sa, sb = _growth(step)
            a, b = sa * a, sa * b + sb
        #: ``(a, b)``: the steps make ``n`` characters at most ``a * n + b``
        self.worst = (a, b)
        #: whether the text can pass the growth bound: only then is it checked after each step
        #: (the real files' chains cannot: Llama 2's makes at most ``n + 1``, XLM-R's ``18 n``)
        self._checked = a > self.growth or b > self.growth
        self.changes_text = bool(self.steps)
        # windows each earlier step must keep, last step first
        radii: list[int] = []
        r = self.steps[-1].context if self.steps else 1
        for step in reversed(self.steps[:-1]):
            radii.append(r)
            r += step.keep_context
        self._radii = list(reversed(radii))  # radius for steps[k], k < n - 1
        self.context = max(1, r)
        kr: list[int] = []
        k = 0
        for step in reversed(self.steps):
            kr.append(k)
            k += step.keep_context
        self._keep_radii = list(reversed(kr))
        self.keep_context = k

    def __repr__(self) -> str:
        return f"Sequence({self.steps!r})"

    def normalize(self, text: str, *, segment_start: bool = True, limit: int | None = None
                  ) -> str:
        """The steps one after another; past ``limit`` characters (default the growth bound
        of ``text``: ``G * len(text) + G``) after any step, :class:`.errors.UnboundedComponent`
        (a :class:`Replace` stops before it builds a longer text)."""
        if not self._checked and limit is None:
            for step in self.steps:
                text = step.normalize(text, segment_start=segment_start)
            return text
        n = len(text)
        bound = self.growth * (n + 1) if limit is None else limit
        for k, step in enumerate(self.steps):
            try:
                if isinstance(step, (Replace, Sequence)):
                    text = step.normalize(text, segment_start=segment_start, limit=bound)
                else:
                    text = step.normalize(text, segment_start=segment_start)
            except _TooLong as e:
                raise self._too_long(k, step, n, e.size) from None
            if len(text) > bound:
                raise self._too_long(k, step, n, len(text))
        return text

    def _too_long(self, k: int, step: Normalizer, n: int, size: int) -> UnboundedComponent:
        return _too_long(self.source, f"Sequence step {k + 1} ({step!r})", n, size, self.growth)

    def normalize_aligned(self, text: str, *, segment_start: bool = True,
                          limit: int | None = None) -> tuple[str, Align]:
        """:meth:`normalize` and the alignment through every step."""
        align: Align = None
        if not self._checked and limit is None:
            for step in self.steps:
                text, a = step.normalize_aligned(text, segment_start=segment_start)
                align = _compose(align, a)
            return text, align
        n = len(text)
        bound = self.growth * (n + 1) if limit is None else limit
        for k, step in enumerate(self.steps):
            try:
                if isinstance(step, (Replace, Sequence)):
                    text, a = step.normalize_aligned(text, segment_start=segment_start,
                                                     limit=bound)
                else:
                    text, a = step.normalize_aligned(text, segment_start=segment_start)
            except _TooLong as e:
                raise self._too_long(k, step, n, e.size) from None
            if len(text) > bound:
                raise self._too_long(k, step, n, len(text))
            align = _compose(align, a)
        return text, align

    def cut_ok(self, text: str, i: int, *, start: bool = True) -> bool:
        """See the class docstring. ``start`` False: ``text[0]`` is not taken as a segment
        start. A step that acts only there (``Prepend``: ``keeps_from``) then keeps every
        position of the window when the steps after it have context 1 (its radius ``r``):
        inside a segment it is the identity; at the text's start (which a memoryless scan
        does not mark) its prefix and ``text[0]`` stay left of any cut ``i >= 1``, and steps
        that each decide one character at a time cannot join them across the cut."""
        if not 0 < i < len(text):
            return False
        if not self.steps:
            return True
        for step, r in zip(self.steps, self._radii):
            if i - r < 0 or i + r > len(text):
                return False
            kf: int | None = getattr(step, "keeps_from", None)
            if kf is not None:
                if (start or r > 1) and i - r < kf:  # (every position from kf on is kept)
                    return False
                continue
            for q in range(i - r, i + r):
                if not step.keeps(text, q):
                    return False
        return self.steps[-1].cut_ok(text, i, start=start)

    def keeps(self, text: str, p: int) -> bool:
        for step, r in zip(self.steps, self._keep_radii):
            if not _inside(text, p - r, p + r + 1):
                return False
            if not all(step.keeps(text, q) for q in range(p - r, p + r + 1)):
                return False
        return 0 <= p < len(text)


# -- building from tokenizer.json ---------------------------------------------------------------


def _unsupported(source: str, what: str, why: str) -> UnsupportedComponent:
    return UnsupportedComponent(
        f"{source}: normalizer {what}: not implemented; {why} (livetok reads NFC, NFD, NFKC, "
        "NFKD, Lowercase, Strip, StripAccents, Replace, Prepend, BertNormalizer, Precompiled "
        "and Sequence; remove or convert the component, or use HF tokenizers for this file)"
    )


def _flag(spec: dict[str, Any], key: str, default: bool, source: str) -> bool:
    v = spec.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise _unsupported(source, f"{spec.get('type')} {key}={v!r}", "expected true or false")
    return v


def build_normalizer(spec: dict[str, Any] | None, *, source: str) -> Normalizer | None:
    """The normalizer a ``tokenizer.json`` ``"normalizer"`` entry describes (None for none).

    >>> build_normalizer({"type": "NFC"}, source="f.json")
    NFC()
    >>> build_normalizer({"type": "Nmt"}, source="f.json")
    Traceback (most recent call last):
    ...
    livetok.incremental.hf.errors.UnsupportedComponent: f.json: normalizer Nmt: not implemented; ...

    Runtime complexity: ``O(size of the spec)`` (a Precompiled charsmap is parsed once).
    """
    if spec is None:
        return None
    kind = spec.get("type")
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        return UnicodeNormalizer(str(kind))
    if kind == "Lowercase":
        return Lowercase()
    if kind == "StripAccents":
        return StripAccents()
    if kind == "Strip":
        return Strip(
            left=_flag(spec, "strip_left", True, source),
            right=_flag(spec, "strip_right", True, source),
        )
    if kind == "Prepend":
        prepend = spec.get("prepend")
        if not isinstance(prepend, str):
            raise _unsupported(source, f"Prepend prepend={prepend!r}", "expected a string")
        check_growth(source, f"Prepend {_shown(prepend)}", 1, len(prepend))
        return Prepend(prepend)
    if kind == "Replace":
        return _build_replace(spec, source)
    if kind == "BertNormalizer":
        strip = spec.get("strip_accents")
        if strip is not None and not isinstance(strip, bool):
            raise _unsupported(source, f"BertNormalizer strip_accents={strip!r}", "expected a bool")
        impl = bert_normalize.BertNormalizer(
            clean_text=_flag(spec, "clean_text", True, source),
            handle_chinese_chars=_flag(spec, "handle_chinese_chars", True, source),
            strip_accents=strip,
            lowercase=_flag(spec, "lowercase", True, source),
        )
        return BertNormalizer(impl)
    if kind == "Precompiled":
        b64 = spec.get("precompiled_charsmap")
        if not isinstance(b64, str) or not b64:
            raise _unsupported(source, "Precompiled without a precompiled_charsmap", "empty map")
        try:
            charsmap = charsmap_from_base64(b64)
        except ValueError as e:
            raise _unsupported(source, "Precompiled", f"its charsmap cannot be read ({e})") from e
        check_growth(source, "Precompiled", charsmap.longest, 0)
        return Precompiled(charsmap)
    if kind == "Sequence":
        steps = spec.get("normalizers")
        if not isinstance(steps, list):
            raise _unsupported(source, "Sequence without a normalizers list", "malformed")
        built = [build_normalizer(s, source=source) for s in steps]
        return Sequence([b for b in built if b is not None], source=source)
    raise _unsupported(source, str(kind), "unknown type")


def _build_replace(spec: dict[str, Any], source: str) -> Replace:
    pattern = spec.get("pattern")
    content = spec.get("content")
    if not isinstance(content, str) or not isinstance(pattern, dict) or len(pattern) != 1:
        raise _unsupported(source, f"Replace {pattern!r} -> {content!r}", "malformed")
    ((kind, value),) = pattern.items()
    if not isinstance(value, str):
        raise _unsupported(source, f"Replace pattern {pattern!r}", "expected a string")
    if kind == "String":
        what = f"Replace String {_shown(value)} -> {_shown(content)}"
        check_growth(source, what, *replace_growth(len(value), len(content)))
        return Replace(value, content, source=source)
    if kind == "Regex":
        what = f"Replace Regex {_shown(value)}"
        try:
            budget = check(value, "oniguruma")  # its size and shape, before it is compiled
            shortest = min_width(value)
        except UnsafePattern as e:
            raise UnboundedComponent(
                f"{source}: normalizer {what}: refused: {e} (livetok runs a tokenizer.json's "
                "regexes only when their work is bounded)") from None
        except ValueError as e:
            raise _unsupported(source, what, f"livetok cannot check its work ({e})") from None
        check_growth(source, f"{what} -> {_shown(content)}",
                      *replace_growth(shortest, len(content)))
        try:
            return Replace(value, content, regex_=True, source=source, budget=budget)
        except (regex.error, PatternError) as e:
            raise _unsupported(source, what, f"cannot compile: {e}") from e
    raise _unsupported(source, f"Replace pattern kind {kind!r}", "expected String or Regex")


def _shown(value: str) -> str:
    """A file's string in a message: quoted, at most 60 characters."""
    return repr(value if len(value) <= 60 else value[:57] + "...")


def replace_growth(shortest: int, content: int) -> tuple[int, int]:
    """(characters per input character, characters added per call), rounded up, that a
    ``Replace`` of matches of at least ``shortest`` characters by ``content`` characters
    may make: a match of ``w`` characters becomes ``content``; a pattern that can match the
    empty string inserts ``content`` at every position (and after a match: twice).

    >>> replace_growth(1, 2), replace_growth(0, 1000)
    ((2, 0), (2001, 1000))

    Runtime complexity: ``O(1)``.
    """
    if shortest == 0:
        return 1 + 2 * content, content
    return max(1, -(-content // shortest)), 0


def check_growth(source: str, what: str, per_char: int, per_call: int, *,
                 part: str = "normalizer") -> None:
    """Refuse (:class:`.errors.UnboundedComponent`) a step that by itself may make ``n``
    characters ``per_char * n + per_call`` when either is past ``G`` (:func:`growth_bound`):
    no real normalizer or decoder grows so. ``part`` and ``what`` name it in the message.

    >>> check_growth("f.json", "Replace String '' -> 'xx'", *replace_growth(0, 2))
    >>> check_growth("f.json", "Prepend 'x...'", 1, 1000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    livetok.incremental.hf.errors.UnboundedComponent: f.json: normalizer Prepend 'x...': refused: ...

    Runtime complexity: ``O(1)``.
    """
    growth = growth_bound()
    if per_char > growth or per_call > growth:
        raise UnboundedComponent(
            f"{source}: {part} {what}: refused: it can make the text {per_char} times "
            f"longer{f' and add {per_call:,} characters' if per_call else ''}, more than the "
            f"{growth} times (and {growth} characters) livetok allows; fix the {part}, or set "
            f"{_GROWTH_ENV} to allow more")
