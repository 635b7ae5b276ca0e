"""Checks shared by the pre-tokenizer tests (issue 17): HF equality, restartable cuts, horizon
soundness; and the texts they run on."""

from __future__ import annotations

import random
import unicodedata
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

from livetok.incremental.hf.pretokenizers import PreTokenizer

from .conftest import ROOT

# characters the patterns tell apart: letters of several scripts and cases, contraction
# letters, digits of several kinds, apostrophes, white space of every kind, punctuation and
# symbols, CJK, combining marks, emoji, controls, the Metaspace mark
ALPHABET = (
    "aAbzZsSdDtTlLvVrReEmMwWhHxX09١٣²①Ⅻ'’`\"  \t\n\r\x0b\x0c\x85\xa0\u2028\u3000"
    ".,!?-_/:;@#$%&*()[]{}<>|~+=\\…—«»“”中文字かなカナ한국ไทยéÉßİıǅʰΩωЖж\u0301\u0308😀👍🏽▁\x00\x1f"
)

#: code points whose class differs between HF's Oniguruma and the regex package for a reason
#: other than a newer Unicode version (docs/split-patterns.md, "Unicode")
VERSION_DIFFERENT = {"\u0295"}


def _stable(c: str) -> bool:
    """Assigned in this Python's Unicode (older than both engines'), not a surrogate."""
    return unicodedata.category(c) not in ("Cn", "Cs") and c not in VERSION_DIFFERENT


#: any character both engines classify alike
ANY_CHAR = st.characters(blacklist_categories=("Cs", "Cn")).filter(_stable)
TEXT = st.text(st.one_of(st.sampled_from(ALPHABET), ANY_CHAR), max_size=40)
TEXT_RUNS = st.lists(
    st.one_of(
        st.sampled_from(ALPHABET),
        st.sampled_from(["'s", "'LL", "'Re", "’t", "  ", "\t\t", "\n\n", " \n ", "123", "12345",
                         "中文字", "Hello", "WORLD", "ǅungla", "İSTANBUL", "straße", "https://x.y/z"]),
        ANY_CHAR,
    ),
    max_size=16,
).map("".join)

MULTILINGUAL = (
    "The quick brown fox can't jump; it's 12,345.67 km away!\n"
    "Ça coûte 3 €, n'est-ce pas ? Aujourd’hui IL FAIT BEAU.\n"
    "Съешь же ещё этих мягких французских булок, да выпей чаю.\n"
    "我们今天去公园散步，天气很好。日本語のテキストとカタカナ。한국어 텍스트입니다.\n"
    "مرحبا بالعالم ١٢٣ שלום עולם नमस्ते दुनिया ไทยภาษา\n"
    "    def f(x):\n\t\treturn x**2  # square\r\n\n\n   trailing   \n"
    "emoji 😀👍🏽 mixed: a1b2c3 ŁÓDŹ İstanbul ǅ 'LL 'S\u00a0\u3000end"
)


@lru_cache(maxsize=1)
def real_text() -> str:
    """Real prose, code and several scripts (this repository's docs and sources)."""
    parts = [MULTILINGUAL]
    for rel in ("README.md", "docs/algorithms.md", "incremental/document.py"):
        p = Path(ROOT) / rel
        if p.is_file():
            parts.append(p.read_text(encoding="utf-8")[:20000])
    return "\n".join(parts)


def real_snippets(n: int, size: int = 120, seed: int = 0) -> list[str]:
    text = real_text()
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = rng.randrange(0, max(1, len(text) - size))
        out.append(text[a: a + rng.randint(1, size)])
    return out


#: texts whose first pre-tokens change when a prefix space or ▁ is prepended
PREPEND_SENSITIVE = ["'sa b", "'s", "'ll x", "1a", "▁x", " 's", "ab'sx"]


def random_texts(n: int, seed: int, size: int = 24) -> list[str]:
    rng = random.Random(seed)
    return PREPEND_SENSITIVE + [
        "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, size))) for _ in range(n)]


def shifted(pieces: list[tuple[str, tuple[int, int]]], by: int) -> list[tuple[str, tuple[int, int]]]:
    return [(x, (a + by, b + by)) for x, (a, b) in pieces]


def check_cuts(pre: PreTokenizer, s: str) -> list[int]:
    """Every cut restarts (module doc of ``hf/pretokenizers.py``); returns the cuts."""
    full = pre.pre_tokenize(s, first=True, text_start=True)
    cs = list(pre.cuts(s, first=True, text_start=True))
    assert cs == sorted(set(cs)) and all(0 < c <= len(s) for c in cs), cs
    if s:
        assert cs[-1] == len(s), cs
    for k, c in enumerate(cs):
        left = pre.pre_tokenize(s[:c], first=True, text_start=True)
        right = shifted(pre.pre_tokenize(s[c:], first=False, text_start=False), c)
        assert left + right == full, (s, c, left, right, full)
        assert list(pre.cuts(s, c)) == cs[k + 1:], (s, c)
    # each cut-piece alone (as the encoding pre-tokenizes it) gives its part of the whole
    bounds = [0] + cs
    got: list[tuple[str, tuple[int, int]]] = []
    for a, b in zip(bounds, bounds[1:]):
        got += shifted(pre.pre_tokenize(s[a:b], first=a == 0, text_start=a == 0), a)
    assert got == full, (s, cs, got, full)
    return cs


#: one character of each kind the patterns tell apart, written at the horizon
_PROBES = [" ", "\n", "a", "A", "1", ".", "'", "s", "\u2581", "中", "\u0301"]


def check_horizons(pre: PreTokenizer, s: str, rng: random.Random, tries: int = 4) -> None:
    """Changing the text at or after a cut-piece's horizon leaves that piece alone; horizons
    of later pieces dominate earlier ones."""
    cs = list(pre.cuts(s))
    starts = [0] + cs[:-1]
    hs = [pre.horizon(s, p, len(s)) for p in starts]
    for k in range(len(starts)):
        assert hs[k] > starts[k]
        for i in range(k + 1, len(starts)):
            assert hs[k] <= max(hs[i], starts[i] + 4), (s, starts[k], starts[i])
    for p, h, c in zip(starts, hs, cs):
        if h >= len(s):
            continue
        for _ in range(tries):
            tail = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6)))
            variants = [s[:h] + tail, s[:h] + tail + s[h:], s[:h] + s[h + 1:] + tail]
            for _ in range(4):  # one character at or a little after the horizon
                j = rng.randrange(h, min(len(s), h + 4))
                variants.append(s[:j] + rng.choice(_PROBES) + s[j + 1:])
            for s2 in variants:
                got = next(pre.cuts(s2, p))
                assert got == c, (s, p, h, c, s2, got)
