"""The tokenizer.json normalizers (``incremental/hf/normalizers.py``, ``precompiled.py``):
equal to HuggingFace ``tokenizers`` on generated and real text, alignments well formed, and
every ``cut_ok`` sound (checked on random texts and on texts changed outside the window; a
deliberately broken rule is caught)."""

from __future__ import annotations

import json
import random
import time
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental.hf import normalizers as hn
from livetok.incremental.hf.errors import UnsupportedComponent
from livetok.incremental.hf.normalizers import build_normalizer
from livetok.incremental.hf.precompiled import Charsmap, certain_break
from tests._hf_encodings import reference, tokenizer_json
from tests._tokenizer_files import tokenizer_file
from tests.conftest import EXAMPLES

tokenizers = pytest.importorskip("tokenizers")
N = tokenizers.normalizers

#: characters that exercise every rule: combining marks (e + U+0301, reordering), Hangul jamo,
#: CJK, emoji with modifiers/ZWJ/flags, an Indic conjunct, Prepend, controls, NBSP and other
#: spaces, fullwidth and ligatures, HF-inert code points, case oddities
ALPHABET = list(
    "abcAB01 \t\n\r"
) + [
    "\x00", "\x01", "\x7f", "\u00a0", "\u3000", "\u2003", "\u200b", "\u00ad", "\ufeff", "\u0085",
    "\u2028", "e", "\u00e9", "\u0301", "\u0316", "\u0327", "\u0308", "\u0345", "\u212b",
    "\u00c5", "\ufb01", "\uff21", "\uff76", "\uff9e", "\u4e2d", "\u6587", "\ud55c", "\u1100",
    "\u1161", "\u11a8", "\U0001f44d", "\U0001f3fd", "\u200d", "\U0001f1eb", "\U0001f1f7",
    "\u0915", "\u094d", "\u0937", "\u0600", "\u03a3", "\u0130", "\u00df", "\u0f73", "\u0344",
    "\u0b47", "\u0b3e", "\U00011935", "\U00011930", "\u0898", "\u32ff", "\u1cf2", "\u2160",
    "\u2126", "\u1e9b", "\u0323", "\u0e01", "\u0e33", "\u0627", "\u0644",
]
TEXT = st.text(alphabet=st.sampled_from(ALPHABET), max_size=40)

#: (our spec, HF normalizer) for every type and option
SPECS: list[tuple[dict[str, Any], Any]] = [
    ({"type": "NFC"}, N.NFC()),
    ({"type": "NFD"}, N.NFD()),
    ({"type": "NFKC"}, N.NFKC()),
    ({"type": "NFKD"}, N.NFKD()),
    ({"type": "Lowercase"}, N.Lowercase()),
    ({"type": "StripAccents"}, N.StripAccents()),
    ({"type": "Strip", "strip_left": True, "strip_right": True}, N.Strip()),
    ({"type": "Strip", "strip_left": False, "strip_right": True}, N.Strip(left=False)),
    ({"type": "Strip", "strip_left": True, "strip_right": False}, N.Strip(right=False)),
    ({"type": "Prepend", "prepend": "\u2581"}, N.Prepend("\u2581")),
    ({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
     N.Replace(" ", "\u2581")),
    ({"type": "Replace", "pattern": {"String": "ab"}, "content": "X"}, N.Replace("ab", "X")),
    ({"type": "Replace", "pattern": {"String": "aa"}, "content": ""}, N.Replace("aa", "")),
    ({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
     N.Replace(tokenizers.Regex(" {2,}"), " ")),
    ({"type": "Replace", "pattern": {"Regex": "[\\s]+"}, "content": "_"},
     N.Replace(tokenizers.Regex("[\\s]+"), "_")),
    # Oniguruma's syntax, which the regex package reads otherwise: \h is a hex digit (not a
    # horizontal space), && an intersection, \w has not the joiners U+200C/U+200D
    ({"type": "Replace", "pattern": {"Regex": "\\h+"}, "content": "#"},
     N.Replace(tokenizers.Regex("\\h+"), "#")),
    ({"type": "Replace", "pattern": {"Regex": "[a-z&&[^aeiou]]+"}, "content": "_"},
     N.Replace(tokenizers.Regex("[a-z&&[^aeiou]]+"), "_")),
    ({"type": "Replace", "pattern": {"Regex": "\\w+"}, "content": ""},
     N.Replace(tokenizers.Regex("\\w+"), "")),
    ({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
      "strip_accents": None, "lowercase": True}, N.BertNormalizer()),
    ({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": False,
      "strip_accents": True, "lowercase": False},
     N.BertNormalizer(handle_chinese_chars=False, strip_accents=True, lowercase=False)),
    ({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"},
                                          {"type": "Lowercase"}]},
     N.Sequence([N.NFD(), N.StripAccents(), N.Lowercase()])),
    ({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                          {"type": "Replace", "pattern": {"String": " "},
                                           "content": "\u2581"}]},
     N.Sequence([N.Prepend("\u2581"), N.Replace(" ", "\u2581")])),
    ({"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Strip"},
                                          {"type": "Replace", "pattern": {"Regex": " {2,}"},
                                           "content": " "}]},
     N.Sequence([N.NFKC(), N.Strip(), N.Replace(tokenizers.Regex(" {2,}"), " ")])),
    ({"type": "Sequence", "normalizers": []}, N.Sequence([])),
]
IDS = [json.dumps(s)[:60] for s, _ in SPECS]


def _ours(spec: dict[str, Any]) -> hn.Normalizer:
    n = build_normalizer(spec, source="test.json")
    assert n is not None
    return n


@pytest.fixture(scope="module")
def xlmr() -> tuple[hn.Normalizer, Any]:
    path = str(tokenizer_file("xlmr"))
    # the file's JSON and HF's Tokenizer.from_file(path), loaded once per process
    ours = build_normalizer(tokenizer_json("xlmr")["normalizer"], source=path)
    assert ours is not None
    return ours, reference("xlmr").normalizer


def _check_align(text: str, out: str, align: list[int] | None) -> None:
    if align is None:
        assert len(out) == len(text)
        return
    assert len(align) == len(out) + 1 and align[-1] == len(text)
    assert all(0 <= a <= b for a, b in zip(align, align[1:])), align


def first_unsound(norm: hn.Normalizer, text: str, rnd: random.Random) -> str | None:
    """A counterexample to ``norm.cut_ok`` on ``text`` (and on copies of it changed outside
    each accepted cut's window), or None."""
    whole = norm.normalize(text)
    for i in range(1, len(text)):
        if not norm.cut_ok(text, i):
            continue
        if norm.normalize(text[:i]) + norm.normalize(text[i:], segment_start=False) != whole:
            return f"cut at {i} of {text!r}"
        c = norm.context
        other = list(text)
        for k in range(len(text)):
            if not i - c <= k < i + c:
                other[k] = rnd.choice(ALPHABET)
        t2 = "".join(other)
        assert norm.cut_ok(t2, i), "cut_ok read outside its context"
        if norm.normalize(t2[:i]) + norm.normalize(t2[i:], segment_start=False) != norm.normalize(
            t2
        ):
            return f"cut at {i} of {t2!r} (changed outside the window)"
    return None


@pytest.mark.parametrize(("spec", "hf"), SPECS, ids=IDS)
@settings(max_examples=min(EXAMPLES, 40))
@given(text=TEXT)
def test_normalize_equals_hf_and_cuts_are_sound(spec: dict[str, Any], hf: Any, text: str) -> None:
    ours = _ours(spec)
    assert ours.normalize(text) == hf.normalize_str(text)
    out, align = ours.normalize_aligned(text)
    assert out == ours.normalize(text)
    _check_align(text, out, align)
    assert first_unsound(ours, text, random.Random(len(text))) is None


@settings(max_examples=min(EXAMPLES, 60))
@given(text=TEXT)
def test_xlmr_normalizer_equals_hf(xlmr: tuple[hn.Normalizer, Any], text: str) -> None:
    ours, hf = xlmr
    assert ours.normalize(text) == hf.normalize_str(text)
    out, align = ours.normalize_aligned(text)
    assert out == hf.normalize_str(text)
    _check_align(text, out, align)
    assert first_unsound(ours, text, random.Random(7)) is None


#: a few real sentences (scripts XLM-R serves), code with runs of spaces, emoji sequences
REAL = (
    "Der schnelle braune Fuchs springt über den faulen Hund. Größe, Übermaß, Straße.\n"
    "Le cœur a ses raisons que la raison ne connaît point. Être ou ne pas être.\n"
    "Съешь же ещё этих мягких французских булок, да выпей чаю.\n"
    "我能吞下玻璃而不伤身体。自然语言处理是人工智能的一个分支。\n"
    "いろはにほへと ちりぬるを。カタカナ、ｶﾀｶﾅ、ﾃｽﾄ。다람쥐 헌 쳇바퀴에 타고파.\n"
    "العربية لغة جميلة، وهي من أكثر اللغات انتشاراً في العالم. यह एक हिंदी वाक्य है। क्षत्रिय\n"
    "Emoji: 👍🏽 🇫🇷 👨‍👩‍👧 ❤️ and ﬁ ligatures, Ａｌｐｈａ, café vs cafe\u0301.\n"
    "def f(x):\n\treturn x  +  1   # code with  double  spaces\r\n"
    "Tiếng Việt có dấu: học, học nữa, học mãi. ภาษาไทยเป็นภาษาที่มีวรรณยุกต์\n"
    "\u00a0NBSP\u00a0and\u2003em space\u200bzero width\u00ad soft hyphen\n"
)


def test_xlmr_on_real_text_equal_sound_and_cuts_often(xlmr: tuple[hn.Normalizer, Any]) -> None:
    ours, hf = xlmr
    text = REAL * 3
    assert ours.normalize(text) == hf.normalize_str(text)
    assert first_unsound(ours, REAL, random.Random(1)) is None
    rate = sum(ours.cut_ok(text, i) for i in range(1, len(text))) / (len(text) - 1)
    assert rate > 0.7, rate
    nfc = _ours({"type": "NFC"})
    assert sum(nfc.cut_ok(text, i) for i in range(1, len(text))) / (len(text) - 1) > 0.95


def test_a_broken_cut_rule_is_caught() -> None:
    class AlwaysCut(hn.UnicodeNormalizer):
        def cut_ok(self, text: str, i: int) -> bool:
            return 0 < i < len(text)

    rnd = random.Random(0)
    assert first_unsound(AlwaysCut("NFC"), "cafe\u0301", rnd) is not None
    assert first_unsound(hn.UnicodeNormalizer("NFC"), "cafe\u0301", rnd) is None

    class GreedyReplace(hn.Replace):
        def cut_ok(self, text: str, i: int) -> bool:
            return 0 < i < len(text)

    assert first_unsound(GreedyReplace(" {2,}", " ", regex_=True), "a   b", rnd) is not None


def test_replace_regex_reads_oniguruma_syntax() -> None:
    """A ``Replace`` regex is Oniguruma's (HF compiles it so): it runs translated to the
    ``regex`` package's syntax, where ``\\h``, ``&&``, ``\\w`` and ``(?m)`` mean other things,
    and its cut rule reads the same syntax tree (``livetok.incremental.regex.alphabet``)."""
    rnd = random.Random(0)
    for pattern, text in ((r"\h+", "a 1f\tz\u00a0"), (r"[a-z&&[^aeiou]]+", "hello&world"),
                          (r"\w+", "a\u200db\u00b2 c"), (r"(?m).", "a\nb")):
        ours = _ours({"type": "Replace", "pattern": {"Regex": pattern}, "content": "_"})
        want = N.Replace(tokenizers.Regex(pattern), "_").normalize_str(text)
        assert ours.normalize(text) == want, pattern
        assert first_unsound(ours, text, rnd) is None, pattern
    hex_digits = _ours({"type": "Replace", "pattern": {"Regex": r"\h+"}, "content": "_"})
    assert hex_digits.cut_ok("1 2", 1) and not hex_digits.cut_ok("12", 1)


def test_hf_inert_code_points_match_hf() -> None:
    """Python's Unicode tables are newer than HF's: the listed code points are inert for HF,
    and normalizing text with them around marks still equals HF."""
    inert = [c for a, b in hn._HF_INERT for c in range(a, b + 1)]
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        ours, hf = _ours({"type": form}), getattr(N, form)()
        for c in inert:
            for s in (chr(c), "a\u0301" + chr(c) + "\u0316\u0301", "\U00011935" + chr(c)):
                assert ours.normalize(s) == hf.normalize_str(s), (form, hex(c))
    sa = _ours({"type": "StripAccents"})
    marks = [c for c in range(0x300, 0x20000) if unicodedata.category(chr(c))[0] == "M"]
    for c in marks + [0x1CF2, 0x1CF3]:
        assert sa.normalize("a" + chr(c)) == N.StripAccents().normalize_str("a" + chr(c)), hex(c)


def test_precompiled_graphemes_and_shortest_prefix() -> None:
    cm = Charsmap.from_rules({"\uff21": "A", "e\u0301": "\u00e9", "\u1100\u1161": "\uac00"})
    # a whole cluster (< 6 bytes) takes the shortest key prefix's value, dropping the mark
    assert cm.normalize("\uff21\u0301") == "A"
    assert cm.normalize("e\u0301e") == "\u00e9e"
    # ... but a cluster of 6 bytes or more goes character by character (HF's `len() < 6`)
    assert cm.normalize("\u1100\u1161") == "\u1100\u1161"
    assert certain_break("a b", 1) and not certain_break("\u1100\u1161", 1)


def test_unsupported_components_name_the_file() -> None:
    for spec in (
        {"type": "Nmt"},
        {"type": "Replace", "pattern": {"Other": "x"}, "content": ""},
        {"type": "Strip", "strip_left": "yes", "strip_right": True},
        {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "ByteLevel"}]},
    ):
        with pytest.raises(UnsupportedComponent, match="my/tokenizer.json: normalizer"):
            build_normalizer(spec, source="my/tokenizer.json")
    assert build_normalizer(None, source="x") is None
    empty = _ours({"type": "Sequence", "normalizers": []})
    assert not empty.changes_text and empty.cut_ok("ab", 1)


def test_module_examples() -> None:
    import doctest

    from livetok.incremental.hf import precompiled

    for mod in (hn, precompiled):
        assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0


@pytest.mark.slow
def test_xlmr_megabyte_speed(xlmr: tuple[hn.Normalizer, Any]) -> None:
    ours, hf = xlmr
    text = (REAL * (1_000_000 // len(REAL) + 1))[:1_000_000]
    t = time.process_time()  # CPU time: a busy machine does not lengthen it
    got = ours.normalize(text)
    took = time.process_time() - t
    assert got == hf.normalize_str(text)
    assert took < 3.0, took


@pytest.mark.slow
def test_inert_tables_over_every_code_point() -> None:
    """The shipped difference tables, measured again over all code points (about a minute)."""
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        ours, hf = _ours({"type": form}), getattr(N, form)()
        for c in range(0x110000):
            if not 0xD800 <= c <= 0xDFFF:
                assert ours.normalize(chr(c)) == hf.normalize_str(chr(c)), (form, hex(c))
