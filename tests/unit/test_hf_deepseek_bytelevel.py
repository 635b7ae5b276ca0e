"""DeepSeek V3 on the byte-level path (issue 35, item 2): its ``Sequence`` of three ``Split``
steps (digits ``\\p{N}{1,3}``, CJK runs, the main regex) compiled into one pattern
(``hf/bytelevel_file.py``, ``_COMPILED_SEQUENCES``) whose matches are HF's pre-tokens, so the
file loads as a :class:`ByteLevelFile` (Algorithm 1 inside long pieces; a CJK line cost 12.6 s
an edit at 100,000 characters on the general pipeline).

Seeded fuzz against HuggingFace ``tokenizers``: the compiled pattern's pieces against the
file's own pre-tokenizer (``pre_tokenize_str``), encodes, and a document under random edits in
hostile alphabets; small by default, long with ``LIVETOK_SLOW=1``. Random code points are drawn
among those assigned in this Python's Unicode database: where the ``regex`` module and HF's
Oniguruma know different Unicode versions, an unassigned code point's class differs for every
file alike (not this route's question)."""

from __future__ import annotations

import random
import unicodedata

import pytest

from livetok.incremental import Document
from livetok.incremental.bytelevel.pretokenize import Pretokenizer
from livetok.incremental.hf import bytelevel_file as B
from livetok.incremental.hf.model_section import bytes_to_unicode
from livetok.incremental.regex import derive

from .._hf_encodings import encoding, hf_ids, reference

tokenizers = pytest.importorskip("tokenizers")

ALPHABET = (list("aZé 1234５６\t\n\r,.!?'\"日本語・゠ー゛゙\u3040\u3097\u3099ﾃｽト\x00\x01\u200d"
                 "\u0301-_<>|²Ⅻ\xa0\u2028")
            + ["  ", "\n\n", "、", "。", "🙂", "中文", "ab", "12345", "<｜begin▁of▁sentence｜>",
               "<think>", "</think>", "<｜end▁of▁sentence｜>", "ACGT" * 20, "日本" * 30])
#: (texts, document edits): the default run's, and the slow run's
SIZES = [(3_000, 1_500), pytest.param((30_000, 30_000), marks=pytest.mark.slow)]


def _text(rng: random.Random) -> str:
    if rng.random() < 0.3:
        cps = [rng.choice([rng.randrange(0x20, 0x3100), rng.randrange(0x3000, 0x3100),
                           rng.randrange(0x4E00, 0x4E80), rng.randrange(0x110000)])
               for _ in range(rng.randint(1, 12))]
        return "".join(c for c in map(chr, cps) if not 0xD800 <= ord(c) < 0xE000 and (
            unicodedata.category(c) != "Cn" or c in "\u3040\u3097\u3098")) or "x"
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 25)))


def test_the_file_takes_the_byte_level_route() -> None:
    assert type(encoding("deepseek_v3")) is B.ByteLevelFile


def test_the_compiled_pattern_tiles_and_derives() -> None:
    pattern = B.compiled_sequence(B._DEEPSEEK_STEPS)
    assert pattern is not None
    d = derive(pattern, "oniguruma")
    assert d.fallback is None and d.min_width == 1 and d.budget is None
    assert B.tiles(pattern)


@pytest.mark.parametrize("size", SIZES)
def test_compiled_pieces_equal_hf_pre_tokens(size: tuple[int, int]) -> None:
    pattern = B.compiled_sequence(B._DEEPSEEK_STEPS)
    assert pattern is not None
    split = Pretokenizer("deepseek-compiled", derivation=derive(pattern, "oniguruma"))
    pre = reference("deepseek_v3").pre_tokenizer
    show = bytes_to_unicode()
    rng = random.Random(35)
    for _ in range(size[0]):
        t = _text(rng)
        want = [p for p, _ in pre.pre_tokenize_str(t)]
        got = ["".join(show[x] for x in t[a:b].encode()) for a, b in split.split(t)]
        assert got == want, t


@pytest.mark.parametrize("size", SIZES)
def test_encode_equals_hf(size: tuple[int, int]) -> None:
    enc = encoding("deepseek_v3")
    rng = random.Random(36)
    for _ in range(size[0] // 3):
        t = "".join(_text(rng) for _ in range(3))
        assert enc.encode(t) == hf_ids("deepseek_v3", t), t


@pytest.mark.parametrize("size", SIZES)
def test_a_document_with_long_lines_equals_hf_under_edits(size: tuple[int, int]) -> None:
    enc = encoding("deepseek_v3")
    rng = random.Random(37)
    text = ("Intro 12345 text.\n" + "日本語の文章" * 60 + "\n" + "a" * 300 + "\n"
            + "7" * 200 + "\n" + "ACGT" * 80 + "\n" + " " * 120 + "end\n")
    doc = Document(text, encoding=enc)
    assert doc.token_ids() == hf_ids("deepseek_v3", text)
    keys = ALPHABET + ["日", "本", "a", "7", " "] * 4
    for k in range(size[1]):
        if text and rng.random() < 0.5:
            a = rng.randrange(len(text))
            b = min(len(text), a + rng.randint(1, 3))
            doc.edit(a, b, "")
            text = text[:a] + text[b:]
        else:
            a = rng.randint(0, len(text))
            ins = rng.choice(keys)
            doc.edit(a, a, ins)
            text = text[:a] + ins + text[a:]
        if k % 20 == 0:
            assert doc.token_ids() == hf_ids("deepseek_v3", text), text
    assert doc.token_ids() == hf_ids("deepseek_v3", text)
    doc._check()
