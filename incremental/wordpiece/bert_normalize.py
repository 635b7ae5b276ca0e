"""BERT normalization and pre-tokenization, exactly as HuggingFace ``tokenizers`` does them.

This is the text side of WordPiece (Song et al., *Fast WordPiece Tokenization*, Section 4 calls
it "pre-tokenization": splitting text into words on whitespace and punctuation). We reproduce
the two components of a ``bert-base-uncased`` ``tokenizer.json``:

``BertNormalizer`` (``clean_text``, ``handle_chinese_chars``, ``strip_accents``, ``lowercase``)
    1. *clean text*: delete U+0000, U+FFFD and every "other" character (Cc, Cf, Co, Cs by HF's
       table; ``\\t \\n \\r`` excepted) **first**, then map whitespace to U+0020. So VT, FF and NEL
       (U+000B, U+000C, U+0085: control characters that are also whitespace) are *deleted*,
       not turned into spaces;
    2. *Chinese characters*: a space on each side of every character in HF's CJK ranges, which
       start the Extension-E range at U+2B920 instead of U+2B820, so U+2B820..U+2B91F are not
       padded (kept here on purpose: ids must match);
    3. *strip accents* (default: same as ``lowercase``): canonical decomposition (NFD), then
       delete every nonspacing mark (Mn);
    4. *lowercase*: each character through Rust's ``char::to_lowercase`` (``Σ`` always becomes
       ``σ``: there is no final-sigma rule, unlike Python's ``str.lower``; ``ß`` stays ``ß``).

``BertPreTokenizer``
    words are maximal runs of characters that are neither whitespace nor punctuation; each
    punctuation character (ASCII punctuation, or Unicode category P*) is a word by itself.

HF's Unicode tables are not Python's: its "other", Mn and punctuation tables are older than
Python's ``unicodedata`` (e.g. U+0898..U+089F are Mn in Unicode 14 but kept by HF; U+1734 is
deleted by HF but Mc in Unicode 14), its NFD does not decompose U+11938 and treats 98
combining marks as starters, while its lowercase table is *newer* (U+1C89 -> U+1C8A). So this
module does not consult ``unicodedata`` at all: it reads ``data/bert_unicode.json``, tables
measured by running every code point through HF (:func:`measure_hf_tables`; the test suite
checks every code point again).

>>> norm = BertNormalizer()
>>> norm.normalize("Héllo\\u000bWORLD\\tΣ ß 中文")
'helloworld σ ß  中  文 '
>>> pre_tokenize("hello, world!")
[(0, 5), (5, 6), (7, 12), (12, 13)]
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from importlib import resources
from typing import Any, Callable, Iterable, Sequence

__all__ = [
    "BertNormalizer",
    "BertTables",
    "bert_tables",
    "is_bert_punctuation",
    "is_bert_whitespace",
    "is_chinese_char",
    "pre_tokenize",
    "measure_hf_tables",
]

_DATA_FILE = "bert_unicode.json"

#: HF ``is_chinese_char`` ranges, copied with its off-by-one: Extension E starts at U+2B920 here
#: (Unicode says U+2B820), so U+2B820..U+2B91F get no spaces around them.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),  # subtle: HF's range start; the real block starts at 0x2B820
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# Hangul syllables decompose algorithmically (Unicode 3.12); the table leaves them out.
_S_BASE, _L_BASE, _V_BASE, _T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
_V_COUNT, _T_COUNT, _S_COUNT = 21, 28, 11172


def _hangul_nfd(cp: int) -> str:
    s = cp - _S_BASE
    n = _V_COUNT * _T_COUNT
    out = chr(_L_BASE + s // n) + chr(_V_BASE + (s % n) // _T_COUNT)
    t = s % _T_COUNT
    return out + chr(_T_BASE + t) if t else out


def _ranges(cps: Iterable[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def _char_class(ranges: Iterable[Sequence[int]]) -> str:
    parts = []
    for lo, hi in ranges:
        parts.append(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}")
    return "[" + "".join(parts) + "]"


class _RangeSet:
    """Membership in sorted disjoint ``[lo, hi]`` ranges by bisection (for the slow path)."""

    __slots__ = ("_lo", "_hi")

    def __init__(self, ranges: Sequence[Sequence[int]]) -> None:
        self._lo = [r[0] for r in ranges]
        self._hi = [r[1] for r in ranges]

    def __contains__(self, cp: int) -> bool:
        k = bisect.bisect_right(self._lo, cp) - 1
        return k >= 0 and cp <= self._hi[k]


class BertTables:
    """HF's Unicode tables for BERT normalization, loaded from ``data/bert_unicode.json``.

    Attributes ending in ``_re`` are compiled character classes for the fast path;
    ``*_set`` are code-point sets for the per-character path.

    >>> t = bert_tables()
    >>> ord(" ") in t.pretok_space_set, ord("!") in t.punct_set, 0x0898 in t.mn_set
    (True, True, False)
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self.meta: dict[str, Any] = data["meta"]
        self.delete_set = _RangeSet(data["delete"])
        self.space_map: dict[int, str] = {c: " " for c in _expand(data["space"])}
        self.nfd_map: dict[int, str] = {int(k, 16): v for k, v in data["nfd"].items()}
        self.nfd_map.update({c: _hangul_nfd(c) for c in range(_S_BASE, _S_BASE + _S_COUNT)})
        self.ccc: dict[str, int] = {chr(int(k, 16)): v for k, v in data["ccc"].items()}
        self.mn_set = _RangeSet(data["mn"])
        self.lower_map: dict[int, str] = {int(k, 16): v for k, v in data["lower"].items()}
        self.punct_set: frozenset[int] = frozenset(_expand(data["punct"]))
        self.pretok_space_set: frozenset[int] = frozenset(_expand(data["pretok_space"]))
        # fast-path regular expressions
        self.delete_re = re.compile(_char_class(data["delete"]))
        self.cjk_re = re.compile(_char_class(CJK_RANGES))
        self.mn_re = re.compile(_char_class(data["mn"]))
        nonstarters = _ranges(ord(c) for c in self.ccc)
        self.reorder_re = re.compile(_char_class(nonstarters) + "{2,}")
        #: the punctuation and whitespace characters as ``str`` (for the WordPiece automata)
        self.punct_chars: frozenset[str] = frozenset(chr(c) for c in self.punct_set)
        self.space_chars: frozenset[str] = frozenset(chr(c) for c in self.pretok_space_set)


def _expand(ranges: Iterable[Sequence[int]]) -> Iterable[int]:
    for lo, hi in ranges:
        yield from range(lo, hi + 1)


@functools.lru_cache(maxsize=1)
def bert_tables() -> BertTables:
    """The shipped tables (parsed once).

    Runtime complexity: ``O(table size)`` the first time, ``O(1)`` after.
    """
    raw = resources.files("livetok.incremental").joinpath("data", _DATA_FILE).read_text("utf-8")
    return BertTables(json.loads(raw))


def is_chinese_char(cp: int) -> bool:
    """True for code points HF's BertNormalizer pads with spaces (its ranges, off-by-one kept).

    >>> is_chinese_char(ord("中")), is_chinese_char(0x2B820), is_chinese_char(0x2B920)
    (True, False, True)

    Runtime complexity: ``O(1)``.
    """
    if cp < 0x3400:
        return False
    for lo, hi in CJK_RANGES:
        if lo <= cp <= hi:
            return True
    return False


def is_bert_punctuation(ch: str) -> bool:
    """BertPreTokenizer's punctuation test (ASCII punctuation or HF's category P* table).

    >>> is_bert_punctuation("$"), is_bert_punctuation("\\u00bf"), is_bert_punctuation("a")
    (True, True, False)

    Runtime complexity: ``O(1)``.
    """
    return ord(ch) in bert_tables().punct_set


def is_bert_whitespace(ch: str) -> bool:
    """BertPreTokenizer's whitespace test (Rust ``char::is_whitespace``).

    >>> is_bert_whitespace("\\u3000"), is_bert_whitespace("\\u200b")
    (True, False)

    Runtime complexity: ``O(1)``.
    """
    return ord(ch) in bert_tables().pretok_space_set


def pre_tokenize(normalized: str) -> list[tuple[int, int]]:
    """Word spans of already-normalized text, as BertPreTokenizer cuts them (reference version).

    Whitespace separates words and is dropped; every punctuation character is a word.

    >>> pre_tokenize("don't  stop")
    [(0, 3), (3, 4), (4, 5), (7, 11)]

    Runtime complexity: ``O(len(normalized))``.
    """
    t = bert_tables()
    spans: list[tuple[int, int]] = []
    start = -1
    for i, ch in enumerate(normalized):
        cp = ord(ch)
        if cp in t.pretok_space_set or cp in t.punct_set:
            if start >= 0:
                spans.append((start, i))
                start = -1
            if cp in t.punct_set:
                spans.append((i, i + 1))
        elif start < 0:
            start = i
    if start >= 0:
        spans.append((start, len(normalized)))
    return spans


# flags of one character, for cutting original text into independent pieces (see char_flags)
CUT_BEFORE_OK = 1  #: survives cleaning and is a starter: nothing reorders across it
HEAD_BREAK = 2  #: its normalization starts with whitespace or punctuation
TAIL_BREAK = 4  #: its normalization ends with whitespace or punctuation (and it is a starter)
SPACE_ONLY = 8  #: normalizes to exactly one space (whitespace runs stay in one piece)


class BertNormalizer:
    """HF ``BertNormalizer``: clean text, pad CJK, strip accents, lowercase (module docstring).

    >>> BertNormalizer(lowercase=False).normalize("Ça\\u00a0va?")
    'Ça va?'
    >>> BertNormalizer().normalize("Ça\\u00a0va?")
    'ca va?'
    """

    def __init__(
        self,
        *,
        clean_text: bool = True,
        handle_chinese_chars: bool = True,
        strip_accents: bool | None = None,
        lowercase: bool = True,
        tables: BertTables | None = None,
    ) -> None:
        self.clean_text = bool(clean_text)
        self.handle_chinese_chars = bool(handle_chinese_chars)
        self.strip_accents = bool(lowercase if strip_accents is None else strip_accents)
        self.lowercase = bool(lowercase)
        self._t = tables if tables is not None else bert_tables()
        self._flags: dict[str, int] = {}

    def __repr__(self) -> str:
        return (
            f"BertNormalizer(clean_text={self.clean_text}, handle_chinese_chars="
            f"{self.handle_chinese_chars}, strip_accents={self.strip_accents}, "
            f"lowercase={self.lowercase})"
        )

    def config(self) -> dict[str, Any]:
        """The ``tokenizer.json`` form of this normalizer.

        >>> BertNormalizer().config()["type"]
        'BertNormalizer'

        Runtime complexity: ``O(1)``.
        """
        return {
            "type": "BertNormalizer",
            "clean_text": self.clean_text,
            "handle_chinese_chars": self.handle_chinese_chars,
            "strip_accents": self.strip_accents,
            "lowercase": self.lowercase,
        }

    # -- fast path ------------------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        """Normalized text, computed with C-level ``re``/``str.translate`` passes.

        >>> BertNormalizer().normalize("A\\u0301\\u0000B")
        'ab'

        Runtime complexity: ``O(len(text))``.
        """
        t = self._t
        ascii_ = text.isascii()
        if self.clean_text:
            if ascii_:
                text = _ASCII_CONTROL.sub("", text).translate(_ASCII_SPACE)
            else:
                text = t.delete_re.sub("", text).translate(t.space_map)
        if ascii_:
            return text.lower() if self.lowercase else text
        if self.handle_chinese_chars:
            text = t.cjk_re.sub(_pad, text)
        if self.strip_accents:
            text = text.translate(t.nfd_map)
            text = t.reorder_re.sub(self._reorder, text)
            text = t.mn_re.sub("", text)
        if self.lowercase:
            text = text.translate(t.lower_map)
        return text

    def _reorder(self, m: re.Match[str]) -> str:
        # canonical ordering: a stable sort of each run of non-starters by combining class
        return "".join(sorted(m.group(), key=self._t.ccc.__getitem__))

    # -- per-character path, with alignment -----------------------------------------------------

    def normalize_aligned(self, text: str) -> tuple[str, list[int]]:
        """Normalized text and, for each of its characters, the index of its source character.

        The slow, obviously-correct twin of :meth:`normalize` (same result, checked by tests).

        >>> BertNormalizer().normalize_aligned("É!")
        ('e!', [0, 1])

        Runtime complexity: ``O(len(text) log len(text))`` (sorting runs of combining marks).
        """
        t = self._t
        if text.isascii():  # one character in, at most one out: no NFD, CJK or multi-char case
            keep = [
                i for i, ch in enumerate(text) if not (self.clean_text and ord(ch) in t.delete_set)
            ]
            return self.normalize(text), keep
        return self._aligned_general(text)

    def _aligned_general(self, text: str) -> tuple[str, list[int]]:
        t = self._t
        chars: list[str] = []
        src: list[int] = []
        for i, ch in enumerate(text):
            cp = ord(ch)
            if self.clean_text:
                if cp in t.delete_set:
                    continue
                if cp in t.space_map:
                    ch = " "
            seq = f" {ch} " if self.handle_chinese_chars and is_chinese_char(ord(ch)) else ch
            for x in seq:
                if self.strip_accents:
                    for d in t.nfd_map.get(ord(x), x):
                        chars.append(d)
                        src.append(i)
                else:
                    chars.append(x)
                    src.append(i)
        if self.strip_accents:
            chars, src = self._reorder_aligned(chars, src)
            keep = [k for k, d in enumerate(chars) if ord(d) not in t.mn_set]
            chars = [chars[k] for k in keep]
            src = [src[k] for k in keep]
        if self.lowercase:
            low: list[str] = []
            low_src: list[int] = []
            for d, s in zip(chars, src):
                for x in t.lower_map.get(ord(d), d):
                    low.append(x)
                    low_src.append(s)
            chars, src = low, low_src
        return "".join(chars), src

    def _reorder_aligned(self, chars: list[str], src: list[int]) -> tuple[list[str], list[int]]:
        ccc = self._t.ccc
        i, n = 0, len(chars)
        while i < n:
            if chars[i] not in ccc:
                i += 1
                continue
            j = i
            while j < n and chars[j] in ccc:
                j += 1
            if j - i > 1:
                run = sorted(zip(chars[i:j], src[i:j]), key=lambda p: ccc[p[0]])
                chars[i:j] = [p[0] for p in run]
                src[i:j] = [p[1] for p in run]
            i = j
        return chars, src

    def char_flags(self, ch: str) -> int:
        """How one source character affects cutting text into independent pieces.

        A bit set of :data:`CUT_BEFORE_OK`, :data:`HEAD_BREAK`, :data:`TAIL_BREAK`,
        :data:`SPACE_ONLY` (see ``wordpiece_encoding.WordPieceEncoding.split``).

        >>> n = BertNormalizer()
        >>> n.char_flags(",") == CUT_BEFORE_OK | HEAD_BREAK | TAIL_BREAK
        True
        >>> n.char_flags("\\u0301"), n.char_flags("\\x00")
        (0, 0)

        Runtime complexity: ``O(1)`` (cached per character).
        """
        f = self._flags.get(ch)
        if f is None:
            f = self._flags[ch] = self._compute_flags(ch)
        return f

    def _compute_flags(self, ch: str) -> int:
        t = self._t
        cp = ord(ch)
        if 0xD800 <= cp <= 0xDFFF:
            ch, cp = "\ufffd", 0xFFFD  # livetok's sanitize() turns surrogates into U+FFFD
        if self.clean_text and cp in t.delete_set:
            return 0  # vanishes: its neighbours meet, so no cut may rely on it
        first = " " if self.clean_text and cp in t.space_map else ch
        if self.strip_accents:
            first = t.nfd_map.get(ord(first), first)[0]
        if first in t.ccc:
            return 0  # a non-starter: canonical reordering may move it across a cut
        flags = CUT_BEFORE_OK
        norm = self.normalize(ch)
        brk = t.pretok_space_set | t.punct_set
        if norm and ord(norm[0]) in brk:
            flags |= HEAD_BREAK
        if norm and ord(norm[-1]) in brk:
            flags |= TAIL_BREAK
        if norm == " " and cp not in t.punct_set:
            flags |= SPACE_ONLY
        return flags


_ASCII_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_SPACE = str.maketrans("\t\n\r", "   ")


def _pad(m: re.Match[str]) -> str:
    return f" {m.group()} "


# -- measuring HF's tables (development only) ----------------------------------------------------


def measure_hf_tables(progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every code point through HF ``tokenizers`` and return the tables this module ships.

    Development only (needs ``tokenizers``; takes about a minute): regenerate the data file with
    ``python -m livetok.incremental.wordpiece.bert_normalize > incremental/data/bert_unicode.json``.

    What is measured, per code point ``c`` (surrogates excluded: HF cannot receive them):
    ``delete``/``space`` from a clean-text-only BertNormalizer, ``nfd`` from ``NFD()``, ``mn``
    from a strip-accents-only BertNormalizer (``c`` undecomposed and removed), ``lower`` from a
    lowercase-only BertNormalizer, ``punct``/``pretok_space`` from BertPreTokenizer on
    ``"a" + c + "b"``. Combining classes cannot be read from HF directly: they are Python's
    ``unicodedata.combining`` minus the marks HF treats as starters, and every pair of
    non-starters is checked against HF's NFD (an exception is raised on any disagreement).

    Runtime complexity: ``O(0x110000)`` HF calls plus ``O(k^2)`` for ``k`` non-starters.
    """
    import sys
    import unicodedata

    import tokenizers
    from tokenizers import normalizers, pre_tokenizers

    say = progress or (lambda s: None)
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    clean = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False
    )
    strip = normalizers.BertNormalizer(
        clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False
    )
    lower = normalizers.BertNormalizer(
        clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True
    )
    nfd = normalizers.NFD()
    pre = pre_tokenizers.BertPreTokenizer()
    delete, space, mn, punct, pretok_space = [], [], [], [], []
    nfd_map: dict[str, str] = {}
    lower_map: dict[str, str] = {}
    for c in cps:
        ch = chr(c)
        out = clean.normalize_str(ch)
        if out == "":
            delete.append(c)
        elif out == " " and ch != " ":
            space.append(c)
        elif out != ch:
            raise AssertionError(f"clean_text maps U+{c:04X} to {out!r}")
        d = nfd.normalize_str(ch)
        if d != ch and not _S_BASE <= c < _S_BASE + _S_COUNT:
            nfd_map[f"{c:x}"] = d
        if d == ch and strip.normalize_str(ch) == "":
            mn.append(c)
        lo = lower.normalize_str(ch)
        if lo != ch:
            lower_map[f"{c:x}"] = lo
        words = [w for w, _ in pre.pre_tokenize_str("a" + ch + "b")]
        if words == ["a", ch, "b"]:
            punct.append(c)
        elif words == ["a", "b"]:
            pretok_space.append(c)
        elif words != ["a" + ch + "b"]:
            raise AssertionError(f"BertPreTokenizer splits U+{c:04X} as {words!r}")
        if c % 0x10000 == 0:
            say(f"measured up to U+{c:04X}")
    # combining classes: Python's, minus marks HF treats as starters (probed against two marks
    # of the lowest and highest classes), then every pair checked against HF's NFD
    marks = [chr(c) for c in cps if unicodedata.combining(chr(c))]

    def hf_nonstarter(x: str) -> bool:
        return (
            nfd.normalize_str("a" + x + "\u0334") != "a" + x + "\u0334"
            or nfd.normalize_str("a\u0345" + x) != "a\u0345" + x
        )

    ccc = {
        x: unicodedata.combining(x)
        for x in marks
        if unicodedata.combining(x) in (1, 240) or hf_nonstarter(x)
    }
    tables = {"delete": _ranges(delete), "space": _ranges(space), "nfd": nfd_map,
              "ccc": {f"{ord(x):x}": v for x, v in ccc.items()}, "mn": _ranges(mn),
              "lower": lower_map, "punct": _ranges(punct), "pretok_space": _ranges(pretok_space)}
    check = BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                           lowercase=False, tables=BertTables({"meta": {}, **tables}))
    decomposable = [chr(int(k, 16)) for k in nfd_map]
    probe = marks + [x for x in decomposable if check._t.nfd_map[ord(x)][0] in ccc]
    for x in probe:
        for y in probe:
            s = "a" + x + y
            want, got = strip.normalize_str(s), check.normalize(s)
            want_nfd = nfd.normalize_str(s)
            got_nfd = check._t.reorder_re.sub(check._reorder, s.translate(check._t.nfd_map))
            if want != got or want_nfd != got_nfd:
                raise AssertionError(f"NFD differs for {s!r}: HF {want_nfd!r}, ours {got_nfd!r}")
    say("combining classes checked")
    meta = {
        "source": "measured from HuggingFace tokenizers by bert_normalize.measure_hf_tables()",
        "tokenizers_version": tokenizers.__version__,
        "python_unicodedata_version_for_ccc": unicodedata.unidata_version,
        "python": sys.version.split()[0],
    }
    return {"meta": meta, **tables}


if __name__ == "__main__":  # pragma: no cover - development tool
    import sys

    data = measure_hf_tables(lambda s: print(s, file=sys.stderr))
    json.dump(data, sys.stdout, ensure_ascii=False, separators=(",", ":"))
    sys.stdout.write("\n")
