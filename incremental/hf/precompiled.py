"""SentencePiece's ``precompiled_charsmap``, read and applied exactly as HuggingFace does.

A ``Precompiled`` normalizer (T5, XLM-R, mBART, ...) carries SentencePiece's compiled
normalization rules: ``[u32 trie_size][trie: trie_size/4 little-endian u32 units][blob]``. The
trie is a darts-clone double array over UTF-8 bytes (the Rust crate ``spm_precompiled``
emulates SentencePiece's ``Darts::DoubleArray``); a key's value is a byte offset into the blob,
whose NUL-terminated string is the replacement.

``tokenizers``' ``Precompiled`` normalizer walks the text's extended grapheme clusters
(``unicode-segmentation``; here ``regex``'s ``\\X``): a cluster shorter than 6 UTF-8 bytes is
replaced *whole* by the value of the **shortest** key that is a prefix of it (the crate's
``common_prefix_search(...)[0]``; so ``"Ａ\\u0301"`` becomes ``"A"``); otherwise, or when no
prefix is a key, each character is looked up alone.

Fast path: most text is single-character clusters, and those go through one ``str.translate``.
Only *regions* where a cluster boundary is not certain from the two characters around it (a
mark, ZWJ, a Hangul jamo sequence, CR LF, a regional-indicator pair, an Indic conjunct, ...)
are segmented with ``\\X``. :func:`certain_break` is the rule; it is also the normalizer's cut
rule.

>>> import base64
>>> cm = Charsmap.from_rules({"\\uff21": "A", "e\\u0301": "\\u00e9"})
>>> cm.normalize("\\uff21\\u0301 e\\u0301 \\uff21") == "A \\u00e9 A"
True
"""

from __future__ import annotations

import base64
import bisect
import functools
import re
import struct
from typing import Callable, Iterable, Iterator

import regex

__all__ = ["Charsmap", "certain_break", "char_class", "charsmap_from_base64", "common_ends",
           "VerifiedCut", "VERIFY_REACH", "verified_cut"]

# Grapheme clusters (UAX #29). A boundary between a and b is a break unless some rule joins
# them, and every joining rule needs b in one of the classes below (GB9 Extend/ZWJ, GB9a
# SpacingMark, GB6-8 Hangul jamo and syllables, GB9c InCB consonants, GB11 ExtPict, GB12/13
# RI) or a in Prepend (GB9b) or a == CR (GB3).
_J = (
    r"\p{GCB=Extend}\p{GCB=ZWJ}\p{GCB=SpacingMark}\p{GCB=L}\p{GCB=V}\p{GCB=T}\p{GCB=LV}"
    r"\p{GCB=LVT}\p{InCB=Consonant}\p{ExtPict}\p{GCB=RI}"
)
_PCR = r"\p{GCB=Prepend}\r"
#: a maximal run whose inner boundaries are not all certain by the coarse test (b in _J, or a
#: in _PCR); a match starts and ends where that test proves a break (_J and _PCR are disjoint)
_RUNS = regex.compile(rf"([{_J}]+)|[{_PCR}]+")


def _regions(text: str) -> Iterator[tuple[int, int]]:
    """Spans, in order, that hold every uncertain cluster boundary, each starting and ending
    at a certain one: a run of _J characters with the character before it, or a run of _PCR
    characters with the character after it; overlapping spans merge.

    >>> list(_regions("ab\\u0301c\\r\\nd"))
    [(1, 3), (4, 6)]
    """
    start = end = -1
    n = len(text)
    for m in _RUNS.finditer(text):
        s, e = m.span()
        if m.lastindex is None:  # a Prepend/CR run: joins the character after it
            a, b = s, min(e + 1, n)
        else:
            a, b = max(s - 1, 0), e
        if a < end:
            end = max(end, b)
            continue
        if end > start:
            yield start, end
        start, end = a, b
    if end > start:
        yield start, end

_GRAPHEME = regex.compile(r"\X")

# the precise pairwise test, per character class bits (cached per character)
_EXT, _L, _V, _T, _LV, _LVT, _CONS, _ZWJ, _PICT, _RI, _PREP = (1 << k for k in range(11))
_CLASS_TESTS = (
    (_EXT, regex.compile(r"[\p{GCB=Extend}\p{GCB=ZWJ}\p{GCB=SpacingMark}]")),
    (_L, regex.compile(r"\p{GCB=L}")),
    (_V, regex.compile(r"\p{GCB=V}")),
    (_T, regex.compile(r"\p{GCB=T}")),
    (_LV, regex.compile(r"\p{GCB=LV}")),
    (_LVT, regex.compile(r"\p{GCB=LVT}")),
    (_CONS, regex.compile(r"\p{InCB=Consonant}")),
    (_ZWJ, regex.compile(r"\p{GCB=ZWJ}")),
    (_PICT, regex.compile(r"\p{ExtPict}")),
    (_RI, regex.compile(r"\p{GCB=RI}")),
    (_PREP, regex.compile(r"[\p{GCB=Prepend}\r]")),
)
_classes: dict[str, int] = {}


def _cls(ch: str) -> int:
    bits = _classes.get(ch)
    if bits is None:
        bits = 0
        for bit, test in _CLASS_TESTS:
            if test.match(ch):
                bits |= bit
        _classes[ch] = bits
    return bits


def _joinable(a: int, b: int) -> bool:
    """Some UAX #29 rule may join classes ``a`` and ``b`` (a superset of the real joins)."""
    return bool(
        b & _EXT
        or a & _PREP
        or (a & _L and b & (_L | _V | _LV | _LVT))
        or (a & (_LV | _V) and b & (_V | _T))
        or (a & (_LVT | _T) and b & _T)
        or (a & _EXT and b & _CONS)
        or (a & _ZWJ and b & _PICT)
        or (a & _RI and b & _RI)
    )


def certain_break(text: str, i: int) -> bool:
    """True when ``text[i-1]`` and ``text[i]`` alone prove a grapheme-cluster boundary at ``i``.

    Then clusters on each side do not depend on the other side (every joining rule's
    look-back chain consists of characters that join), so normalizing the halves apart is
    exact.

    >>> certain_break("ab", 1), certain_break("e\\u0301", 1), certain_break("\\r\\n", 1)
    (True, False, False)
    >>> certain_break("\\ud55c\\uad6d", 1), certain_break("\\u1100\\u1161", 1)
    (True, False)

    Runtime complexity: ``O(1)`` (classes cached per character).
    """
    if i <= 0 or i >= len(text):
        return False
    a, b = text[i - 1], text[i]
    if b < "\x80" and a != "\r" and a < "\u0600":  # ASCII joins nothing; no Prepend below
        return True
    return not _joinable(_cls(a), _cls(b))


class _DoubleArray:
    """Darts-clone units, with ``spm_precompiled``'s accessors."""

    __slots__ = ("units",)

    def __init__(self, units: list[int]) -> None:
        self.units = units

    @staticmethod
    def offset(u: int) -> int:
        return (u >> 10) << ((u & (1 << 9)) >> 6)

    @staticmethod
    def label(u: int) -> int:
        return u & ((1 << 31) | 0xFF)

    @staticmethod
    def has_leaf(u: int) -> bool:
        return (u >> 8) & 1 == 1

    @staticmethod
    def value(u: int) -> int:
        return u & ((1 << 31) - 1)

    def common_prefix_search(self, key: bytes) -> list[int]:
        """The values of the keys that are prefixes of ``key``, shortest first (reference).

        Runtime complexity: ``O(len(key))``.
        """
        a = self.units
        pos = self.offset(a[0])
        out: list[int] = []
        for c in key:
            if c == 0:
                break
            pos ^= c
            if pos >= len(a):
                break
            u = a[pos]
            if self.label(u) != c:
                break
            pos ^= self.offset(u)
            if self.has_leaf(u):
                out.append(self.value(a[pos]))
        return out

    def single_chars(self) -> Iterator[tuple[bytes, int]]:
        """Every key that is one whole UTF-8 character, and its value; ``(character, -1)``
        for each character that longer keys start with.

        A unit at ``p`` with label ``c`` is reached from base ``p ^ c``, so one pass over the
        units gives each base's children; a walk from the root, stopping below each complete
        character, yields exactly the one-character keys :meth:`common_prefix_search` reaches.
        A key ending inside a character raises ``ValueError`` (no real charsmap has one).

        Runtime complexity: ``O(units)``.
        """
        a = self.units
        children: dict[int, list[tuple[int, int]]] = {}
        for p in range(1, len(a)):
            c = a[p] & 0xFF
            if c and not a[p] & (1 << 31):
                children.setdefault(p ^ c, []).append((c, p))
        stack: list[tuple[int, bytes]] = [(self.offset(a[0]), b"")]
        while stack:
            base, prefix = stack.pop()
            for c, p in children.get(base, ()):
                child = p ^ self.offset(a[p])
                key = prefix + bytes((c,))
                whole = _utf8_len(key[0]) == len(key)
                if self.has_leaf(a[p]) and child < len(a):
                    if not whole:
                        raise ValueError("precompiled_charsmap has a key ending inside a character")
                    yield key, self.value(a[child])
                if whole:
                    if any(self.label(a[q]) == c2 for c2, q in children.get(child, ())):
                        yield key, -1  # the first character of a longer key
                elif len(key) < 4:
                    stack.append((child, key))


def _utf8_len(lead: int) -> int:
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


class Charsmap:
    """A parsed ``precompiled_charsmap`` and the normalization ``tokenizers`` does with it.

    Runtime complexity: building is ``O(charsmap size)``; :meth:`normalize` is ``O(n)``.
    """

    def __init__(
        self,
        table: dict[int, str],
        lookup: Callable[[bytes], str | None],
        starts_longer: Iterable[int],
    ) -> None:
        #: one character -> its replacement, for every character that is a key
        self.table = table
        #: the characters the table maps, as one class (built on first use)
        self._mapped: re.Pattern[str] | None = None
        #: the last few long texts :meth:`normalize_aligned` was asked, with their results,
        #: most recent first (a new text that shares most of one is spliced from it)
        self._recent: list[tuple[str, str, tuple[int, ...]]] = []
        #: the longest replacement (characters): what one character may become (the
        #: normalizer's growth bound; :meth:`from_bytes` reads it from every replacement)
        self.longest = max(map(len, table.values()), default=0)
        self._lookup = lookup  # Precompiled::transform on a cluster's bytes
        # characters a key can start with: a cluster without one is left as it is
        hot = sorted(set(table) | set(starts_longer))
        self._hot = regex.compile(char_class(hot))

    @classmethod
    def from_bytes(cls, blob: bytes) -> Charsmap:
        """Parse ``[u32 trie_size][units][normalized strings]`` as ``spm_precompiled`` does.

        Runtime complexity: ``O(len(blob))``.
        """
        if len(blob) < 4:
            raise ValueError("precompiled_charsmap is shorter than its 4-byte header")
        (size,) = struct.unpack_from("<I", blob, 0)
        n = size // 4
        if 4 + 4 * n > len(blob):
            raise ValueError("precompiled_charsmap's trie runs past its end")
        trie = _DoubleArray(list(struct.unpack_from(f"<{n}I", blob, 4)))
        normalized = blob[4 + 4 * n :]
        normalized.decode("utf-8")  # the crate refuses a blob that is not UTF-8

        def at(value: int) -> str:
            end = normalized.find(b"\0", value)
            return normalized[value : end if end >= 0 else len(normalized)].decode("utf-8")

        def lookup(key: bytes) -> str | None:
            found = trie.common_prefix_search(key)
            return at(found[0]) if found else None  # subtle: the *shortest* prefix key

        table: dict[int, str] = {}
        longer: list[int] = []
        for k, v in trie.single_chars():
            if v >= 0:
                table[ord(k.decode("utf-8"))] = at(v)
            else:
                longer.append(ord(k.decode("utf-8")))
        charsmap = cls(table, lookup, longer)
        charsmap.longest = max(map(len, normalized.decode("utf-8").split("\0")), default=0)
        return charsmap

    @classmethod
    def from_rules(cls, rules: dict[str, str]) -> Charsmap:
        """A charsmap from plain ``{source: replacement}`` rules (tests, doctests).

        Runtime complexity: ``O(len(rules))``.
        """
        keys = {k.encode(): v for k, v in rules.items()}

        def lookup(key: bytes) -> str | None:
            for k in range(1, len(key) + 1):
                if key[k - 1] == 0:
                    return None
                if key[:k] in keys:
                    return keys[key[:k]]
            return None

        table = {ord(k): v for k, v in rules.items() if len(k) == 1}
        charsmap = cls(table, lookup, [ord(k[0]) for k in rules])
        charsmap.longest = max(map(len, rules.values()), default=0)
        return charsmap

    def _transform(self, key: bytes) -> str | None:
        return self._lookup(key)

    def normalize(self, text: str) -> str:
        """``tokenizers``' ``Precompiled`` normalization of ``text``.

        >>> Charsmap.from_rules({"\\u2160": "I"}).normalize("\\u2160 x")
        'I x'

        Runtime complexity: ``O(len(text))``.
        """
        return "".join(self._pieces(text))

    def _pieces(self, text: str) -> Iterator[str]:
        table = self.table
        hot = self._hot
        pos = 0
        for s, e in _regions(text):
            if hot.search(text, s, e) is None:
                continue  # no key starts in it: the plain path below gives the same
            if s > pos:
                yield text[pos:s].translate(table)
            for g in _GRAPHEME.findall(text, s, e):
                yield self._grapheme(g)
            pos = e
        if pos < len(text):
            yield text[pos:].translate(table)

    def _grapheme(self, g: str) -> str:
        if len(g) > 1:
            b = g.encode("utf-8")
            if len(b) < 6:
                v = self._transform(b)
                if v is not None:
                    return v
        return g.translate(self.table)

    def normalize_aligned(self, text: str) -> tuple[str, list[int]]:
        """Normalized text and, per output character, the offset of its source's start
        (a replaced cluster's characters all point at the cluster), plus ``len(text)``.

        >>> Charsmap.from_rules({"e\\u0301": "\\u00e9", "\\ufb01": "fi"}).normalize_aligned(
        ...     "e\\u0301\\ufb01") == ("\\u00e9fi", [0, 2, 2, 3])
        True

        A long text (``_KEEP_FROM`` code points or more) that shares most of a recent one
        (the same text, or one edit away: a document's re-split, the horizons' regions and
        the encode of the long piece of one edit all ask about the same line) is *spliced*
        from it (:meth:`_spliced`): only the part between the shared ends is normalized.

        Runtime complexity: ``O(len(text))``; ``O(edit + distance to a certain break)``
        Python steps plus ``O(len(text))`` C work (slices, a shift of the alignment) when
        spliced.
        """
        recent = self._recent
        for k, (t0, out0, al0) in enumerate(recent):
            if t0 == text:
                if k:
                    recent.insert(0, recent.pop(k))
                return out0, list(al0)
        got = self._spliced(text) if len(text) >= _KEEP_FROM and recent else None
        if got is None:
            got = self._aligned(text)
        joined, align = got
        if len(text) >= _KEEP_FROM:
            recent.insert(0, (text, joined, tuple(align)))
            del recent[_RECENT:]
        return joined, align

    def _aligned(self, text: str) -> tuple[str, list[int]]:
        """:meth:`normalize_aligned` computed on the whole of ``text``."""
        out: list[str] = []
        align: list[int] = []
        pos = 0
        for s, e in _regions(text):
            self._plain_aligned(text, pos, s, out, align)
            g_start = s
            for g in _GRAPHEME.findall(text, s, e):
                v = self._grapheme_whole(g)
                if v is not None:
                    out.append(v)
                    align.extend([g_start] * len(v))
                else:
                    self._plain_aligned(text, g_start, g_start + len(g), out, align)
                g_start += len(g)
            pos = e
        self._plain_aligned(text, pos, len(text), out, align)
        align.append(len(text))
        return "".join(out), align

    def _spliced(self, text: str) -> tuple[str, list[int]] | None:
        """:meth:`normalize_aligned` of ``text`` from the recent text sharing the most with it
        (a common prefix ``p`` and suffix ``s``), or None when none shares half of it.

        Exact: ``a < p`` and ``b > len(text) - s`` are certain cluster breaks
        (:func:`certain_break`, which reads the two characters around them, both shared) in
        both texts, so each text's normalization is that of its three parts joined (clusters
        on each side of a certain break do not depend on the other side, and the
        normalization is per cluster); the outer parts are the old text's, whose normalized
        spans the old alignment gives (it is non-decreasing: bisection), shifted by the
        length change on the right.

        Runtime complexity: ``O(b - a)`` Python steps (the walks to a certain break are cut
        at ``_WALK_MAX``), ``O(len(text))`` C work.
        """
        n = len(text)
        best = None
        for t0, out0, al0 in self._recent:
            p, s = common_ends(t0, text)
            if best is None or p + s > best[0] + best[1]:
                best = (p, s, t0, out0, al0)
        assert best is not None
        p, s, t0, out0, al0 = best
        if 2 * (p + s) < n:
            return None
        a = max(0, p - 1)
        stop = max(0, a - _WALK_MAX)
        while a > 0 and not (a < n and certain_break(text, a)):
            a -= 1
            if a < stop:
                return None
        b = n - s + 1 if s else n
        stop = min(n, b + _WALK_MAX)
        while b < n and not (b > a and certain_break(text, b)):
            b += 1
            if b > stop:
                return None
        n0 = len(t0)
        b0 = b + n0 - n
        lo = bisect.bisect_left(al0, a)
        hi = bisect.bisect_left(al0, b0)
        mid, mid_al = self._aligned(text[a:b])
        align = list(al0[:lo])
        align.extend([x + a for x in mid_al[:-1]])
        shift = n - n0
        align.extend(map(shift.__add__, al0[hi:]) if shift else al0[hi:])
        return out0[:lo] + mid + out0[hi:], align

    def _grapheme_whole(self, g: str) -> str | None:
        if len(g) > 1:
            b = g.encode("utf-8")
            if len(b) < 6:
                return self._transform(b)
        return None

    def _plain_aligned(self, text: str, a: int, b: int, out: list[str], align: list[int]) -> None:
        """``text[a:b]`` character by character through the table: the stretches between
        mapped characters (found by one C search, :attr:`_mapped`) are copied whole, so a
        long line the map leaves alone costs no Python step per character."""
        table = self.table
        mapped = self._mapped
        if mapped is None:
            mapped = self._mapped = re.compile(char_class(table))
        k = a
        for m in mapped.finditer(text, a, b):
            j = m.start()
            if j > k:
                out.append(text[k:j])
                align.extend(range(k, j))
            v = table[ord(text[j])]
            out.append(v)
            align.extend([j] * len(v))
            k = j + 1
        if b > k:
            out.append(text[k:b])
            align.extend(range(k, b))

    def keeps(self, text: str, p: int) -> bool:
        """``text[p]`` is a cluster of its own (certain breaks on both sides) that stays as it
        is; needs ``text[p-1 : p+2]`` (out of range: unknown, so False).

        Runtime complexity: ``O(1)``.
        """
        if p < 1 or p + 1 >= len(text):
            return False
        return (
            ord(text[p]) not in self.table
            and certain_break(text, p)
            and certain_break(text, p + 1)
        )


#: how far (code points) a verified cut looks for a certain cluster break on each side
VERIFY_REACH = 16


class VerifiedCut:
    """A cut of a ``Precompiled`` normalizer (alone, or followed by one step whose cut rule
    reads one character each side: XLM-R's ``Replace(" {2,}", " ")``) *inside* a grapheme
    cluster, proved by normalizing: where :func:`certain_break` refuses (an emoji ZWJ
    sequence is one cluster, and XLM-R maps its ZWJ to a space, so its pre-tokenizer cuts
    there; an emoji line had no cut at all, issue 35).

    ``ok(w, i)`` on a window ``w`` of the text around the cut ``i``: with ``0 < l < i``
    the nearest certain break left of ``i`` and ``r > i`` the nearest right of it, both
    inside ``w`` and within :data:`VERIFY_REACH`, the cut is accepted when
    ``P(w[l:i]) + P(w[i:r]) == P(w[l:r])`` (``P`` the charsmap's normalization), both sides
    are non-empty, and the step after accepts a cut between the last character of the left
    side and the first of the right one.

    *Sound*: ``l`` and ``r`` are certain breaks of the text and of each half (they read the
    two characters around them, on the same side of ``i``), so ``P(text) = P(text[:l]) +
    P(text[l:r]) + P(text[r:])``, ``P(text[:i]) = P(text[:l]) + P(w[l:i])`` and
    ``P(text[i:]) = P(w[i:r]) + P(text[r:])``; the equality then gives ``P(text) =
    P(text[:i]) + P(text[i:])``, and the step after, whose rule reads the two characters
    at the junction, cuts that concatenation there. It reads ``w`` only (its ``context`` is
    ``VERIFY_REACH + 2`` each side); decisions are kept per window (a pure function).

    Runtime complexity: ``O(VERIFY_REACH)`` per new window, a dictionary hit per known one.
    """

    context = VERIFY_REACH + 2

    def __init__(self, charsmap: Charsmap, after: Callable[[str, int], bool] | None) -> None:
        self.charsmap = charsmap
        self._after = after
        self._memo: dict[tuple[str, int], bool] = {}

    def ok(self, w: str, i: int) -> bool:
        """Whether the cut at ``i`` of the window ``w`` is proved (class docstring)."""
        key = (w, i)
        got = self._memo.get(key)
        if got is None:
            got = self._decide(w, i)
            if len(self._memo) >= _MEMO_MAX:
                self._memo.clear()
            self._memo[key] = got
        return got

    def _decide(self, w: str, i: int) -> bool:
        if not 0 < i < len(w):
            return False
        l = i - 1
        stop = max(1, i - VERIFY_REACH)
        while l > stop and not certain_break(w, l):
            l -= 1
        if l < 1 or not certain_break(w, l):
            return False
        r = i + 1
        stop = min(len(w) - 1, i + VERIFY_REACH)
        while r <= stop and not certain_break(w, r):
            r += 1
        if r > stop:
            return False
        norm = self.charsmap.normalize
        left, right = norm(w[l:i]), norm(w[i:r])
        if not left or not right or left + right != norm(w[l:r]):
            return False
        return self._after is None or self._after(left[-1] + right[0], 1)


def verified_cut(normalizer: object) -> VerifiedCut | None:
    """The :class:`VerifiedCut` of a ``Precompiled`` normalizer (an object with a
    :class:`Charsmap` as ``charsmap``), alone or first of a two-step ``Sequence`` whose second
    step's ``cut_ok`` reads one character each side (``context`` 1, no segment-start step:
    XLM-R's ``Replace``), else None.

    Runtime complexity: ``O(1)``.
    """
    steps = getattr(normalizer, "steps", None)
    steps = [normalizer] if steps is None else list(steps)
    cm = getattr(steps[0], "charsmap", None) if steps else None
    if not isinstance(cm, Charsmap) or len(steps) > 2:
        return None
    if len(steps) == 1:
        return VerifiedCut(cm, None)
    after = steps[1]
    if getattr(after, "context", 0) != 1 or hasattr(after, "keeps_from"):
        return None
    after_cut: Callable[..., bool] = after.cut_ok
    return VerifiedCut(cm, lambda t, i: after_cut(t, i, start=False))


#: window decisions a :class:`VerifiedCut` keeps before it starts again
_MEMO_MAX = 1 << 16


#: :meth:`Charsmap.normalize_aligned` keeps its result for texts of at least this length
_KEEP_FROM = 4096
#: long texts kept (a document's edit asks about its window, the horizons' regions, the piece)
_RECENT = 4
#: characters walked from a shared end to a certain cluster break before a splice gives up
_WALK_MAX = 256


def common_ends(old: str, new: str) -> tuple[int, int]:
    """``(p, s)``: the longest common prefix of ``old`` and ``new``, and the longest common
    suffix of what is left of both after it (``p + s <= min(len(old), len(new))``).

    >>> common_ends("abcXdef", "abcdef"), common_ends("aaaa", "aaa")
    ((3, 3), (3, 0))

    Runtime complexity: ``O(n)`` C work (a bisection over ``startswith`` and ``endswith``,
    each slice half the previous one), ``O(log n)`` Python steps.
    """
    m = min(len(old), len(new))
    lo, hi = 0, m
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old.startswith(new[lo:mid], lo):
            lo = mid
        else:
            hi = mid - 1
    p = lo
    no, nn = len(old), len(new)
    lo, hi = 0, m - p
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old.endswith(new[nn - mid:nn - lo], 0, no - lo):
            lo = mid
        else:
            hi = mid - 1
    return p, lo


def char_class(cps: Iterable[int]) -> str:
    """A regular-expression class of the code points, as ranges (``[^\\s\\S]`` when none).

    >>> import re
    >>> [c for c in "abcdx" if re.match(char_class([97, 98, 99, 120]), c)]
    ['a', 'b', 'c', 'x']

    Runtime complexity: ``O(k log k)`` for ``k`` code points.
    """
    parts: list[list[int]] = []
    for c in sorted(set(cps)):
        if parts and parts[-1][1] == c - 1:
            parts[-1][1] = c
        else:
            parts.append([c, c])
    body = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in parts)
    return f"[{body}]" if body else r"[^\s\S]"


@functools.lru_cache(maxsize=8)
def charsmap_from_base64(b64: str) -> Charsmap:
    """The parsed charsmap of a ``precompiled_charsmap`` field (cached: files share them).

    Runtime complexity: ``O(len(b64))`` the first time.
    """
    return Charsmap.from_bytes(base64.b64decode(b64))
