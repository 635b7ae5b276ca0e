"""``decode`` of a tokenizer.json encoding equals HuggingFace's ``Tokenizer.decode(ids,
skip_special_tokens=False)``: each decoder of :mod:`livetok.incremental.hf.decoders` against
``tokenizers``' own on generated token lists and sections (hypothesis, seeded, example count
from ``LIVETOK_EXAMPLES``: tests/conftest.py), and every real file's ``decode`` against its
HF reference on real multilingual text and code and on edge cases.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from livetok.incremental.hf import decoders as D
from livetok.incremental.hf import reader
from livetok.incremental.hf.errors import UnsupportedComponent
from livetok.incremental.hf.reader import load_tokenizer_json, tokenizer_from_dict

from .._hf_encodings import (NAMES, code_text, encoding, multilingual_text, params, reference,
                             tokenizer_json, trace_texts)

tokenizers = pytest.importorskip("tokenizers")
hf = tokenizers.decoders


# -- each decoder against tokenizers.decoders ------------------------------------------------

#: pieces a token is made of: every decoder's special strings and their near misses
_ATOMS = ["a", "b", "é", "叫", " ", "  ", "▁", "_", "<0xE5>", "<0x8F>", "<0xAB>", "<0x41>",
          "<0x+a>", "<0x a>", "<0xG1>", "<0x4>", "##", "#", "</w>", "<pad>", "|", ".", "?", "'",
          " n't", " do not", " 's", "Ġ", "Ċ", "Ã", "©", "<s>", ""]
#: tokens: one atom (a whole ``<0xE5>``) or a few joined
tokens_st = st.lists(st.one_of(st.sampled_from(_ATOMS),
                               st.lists(st.sampled_from(_ATOMS), max_size=3).map("".join)),
                     max_size=8)
#: GPT-2's byte stand-ins, and some characters that are none
_BYTE_CHARS = list(D._byte_of_char())
byte_tokens_st = st.lists(
    st.lists(st.sampled_from(_BYTE_CHARS + ["é", " ", "叫", "<"]), max_size=4).map("".join),
    max_size=8)


def _same(ours: D.Decoder, theirs: Any, tokens: list[str]) -> None:
    try:
        want = theirs.decode(tokens)
    except BaseException as exc:  # pyo3's PanicException is no Exception
        # tokenizers 0.23's Strip panics when its trailing cut would pass the leading one (a
        # token of ``content`` only, shorter than start + stop): livetok stops it there
        # instead (test_strip_where_hf_panics)
        assert type(exc).__name__ == "PanicException", exc
        assume(False)
    assert D.decode_tokens(ours, tokens) == want, (ours, tokens)


@given(byte_tokens_st)
def test_byte_level(tokens):
    _same(D.ByteLevel(), hf.ByteLevel(), tokens)


@given(tokens_st, st.sampled_from(["always", "first", "never"]), st.sampled_from("▁_a"))
@example(["▁▁a▁b", "▁"], "always", "▁")  # every ▁ of the first token goes, not only the first
@example(["a▁", "▁b"], "first", "▁")
def test_metaspace(tokens, scheme, rep):
    _same(D.Metaspace(rep, scheme), hf.Metaspace(replacement=rep, prepend_scheme=scheme), tokens)


@given(tokens_st, st.sampled_from(["▁", "aa", "<0x", " ", ""]), st.sampled_from([" ", "", "xy"]))
def test_replace_string(tokens, pattern, content):
    _same(D.Replace(pattern, content), hf.Replace(pattern, content), tokens)


@given(tokens_st, st.sampled_from(["▁+", "a|b", "<0x[0-9A-F]{2}>", r"\s+", "(?i:A)b?"]),
       st.sampled_from([" ", "", "-"]))
def test_replace_regex(tokens, pattern, content):
    spec = {"type": "Replace", "pattern": {"Regex": pattern}, "content": content}
    ours = D.build_decoder(spec, source="x.json")
    assert ours is not None
    _same(ours, hf.Replace(tokenizers.Regex(pattern), content), tokens)


@given(tokens_st)
@example(["<0xE5>", "<0x8F>", "a", "<0xE5>", "<0x8F>", "<0xAB>", "<0x+a>"])
def test_byte_fallback(tokens):
    _same(D.ByteFallback(), hf.ByteFallback(), tokens)


@given(tokens_st)
def test_fuse(tokens):
    _same(D.Fuse(), hf.Fuse(), tokens)


@given(tokens_st, st.sampled_from(" a▁<"), st.integers(0, 3), st.integers(0, 3))
def test_strip(tokens, content, start, stop):
    _same(D.Strip(content, start, stop), hf.Strip(content=content, left=start, right=stop), tokens)


def test_strip_where_hf_panics():
    assert D.Strip("a", 1, 3).decode_chain(["aa", "", "aaab"]) == ["", "", "aab"]


@given(tokens_st, st.sampled_from(["##", "#", "", "▁"]), st.booleans())
def test_wordpiece(tokens, prefix, cleanup):
    _same(D.WordPiece(prefix, cleanup), hf.WordPiece(prefix=prefix, cleanup=cleanup), tokens)


@given(tokens_st, st.sampled_from(["</w>", "a", "▁"]))
def test_bpe_decoder(tokens, suffix):
    _same(D.BPEDecoder(suffix), hf.BPEDecoder(suffix=suffix), tokens)


@given(tokens_st, st.sampled_from(["<pad>", "a"]), st.sampled_from(["|", "▁"]), st.booleans())
def test_ctc(tokens, pad, delim, cleanup):
    _same(D.CTC(pad, delim, cleanup),
          hf.CTC(pad_token=pad, word_delimiter_token=delim, cleanup=cleanup), tokens)


#: decoder sections as real files write them, and their variants
_SECTIONS: list[dict[str, Any]] = [
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
    {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
    {"type": "Metaspace", "replacement": "_", "add_prefix_space": True, "prepend_scheme": "never"},
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    {"type": "ByteFallback"},
    {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0},
    {"type": "Strip", "content": "a", "start": 0, "stop": 2},
    {"type": "WordPiece", "prefix": "##", "cleanup": True},
    {"type": "BPEDecoder", "suffix": "</w>"},
    {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": True},
]
sections_st = st.one_of(
    st.sampled_from(_SECTIONS),
    st.lists(st.sampled_from(_SECTIONS), max_size=4).map(
        lambda ds: {"type": "Sequence", "decoders": ds}))


def _hf_decoder(section: dict[str, Any] | None) -> Any:
    """HF's decoder of a ``decoder`` section, read by ``Tokenizer.from_str`` as from a file."""
    data = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": None, "pre_tokenizer": None, "post_processor": None,
            "decoder": section, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}
    return tokenizers.Tokenizer.from_str(json.dumps(data)).decoder


@given(sections_st, tokens_st)
def test_sections_as_files_write_them(section, tokens):
    ours = D.build_decoder(section, source="x.json")
    assert ours is not None
    _same(ours, _hf_decoder(section), tokens)


def test_llama2_sequence_by_hand():
    spec = tokenizer_json("llama2")["decoder"]
    dec = D.build_decoder(spec, source="llama2")
    assert D.decode_tokens(dec, ["▁", "▁Hello", "<0xE5>", "<0x8F>", "<0xAB>", "▁"]) == " Hello叫 "
    assert D.decode_tokens(dec, ["<s>", "▁Hello"]) == "<s> Hello"  # Strip: the fused string
    assert D.decode_tokens(dec, []) == ""


@pytest.mark.parametrize("section, match", [
    ({"type": "Nope"}, r"x\.json: decoder 'Nope': not implemented"),
    ({"decoders": []}, r"x\.json: decoder \(no type\)"),
    ({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Nope"}]}, "'Nope'"),
    ({"type": "Replace", "pattern": {"Regex": "a*"}, "content": ""}, "empty string"),
    ({"type": "Strip", "content": "ab", "start": 1, "stop": 0}, "one character"),
    ({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"}, "prepend_scheme"),
])
def test_unsupported_sections_are_named(section, match):
    with pytest.raises(UnsupportedComponent, match=match):
        D.build_decoder(section, source="x.json")


# -- the encoding's decode: loading, the cache, an unsupported decoder ---------------------

#: a file as HF reads it (the fields it requires; ids contiguous: HF numbers an added token
#: that is not in the model's vocabulary after it, whatever its ``id`` says)
_TOY = {"version": "1.0", "truncation": None, "padding": None, "normalizer": None,
        "pre_tokenizer": None, "post_processor": None,
        "model": {"type": "BPE", "vocab": {"▁a": 0, "▁b": 1, "c": 2, "▁": 3, "a": 4, "b": 5},
                  "merges": ["▁ a", "▁ b"]},
        "added_tokens": [{"id": 6, "content": "<s>", "special": True, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False}]}


def _toy(decoder: Any) -> dict[str, Any]:
    return {**_TOY, "decoder": decoder}


def test_no_decoder_joins_with_spaces_as_hf():
    data = _toy(None)
    enc = tokenizer_from_dict(data, name="toy", source="toy.json")
    ref = tokenizers.Tokenizer.from_str(json.dumps(data))
    for ids in ([], [0], [0, 1, 6, 2], [6, 6], [3, 4]):
        assert enc.decode(ids) == ref.decode(ids, skip_special_tokens=False)


def test_an_unsupported_decoder_loads_counts_and_refuses_to_decode(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_toy({"type": "Nope", "x": 1})), encoding="utf-8")
    enc = load_tokenizer_json(path)
    assert enc.encode("▁a<s>c") == [0, 6, 2]
    assert enc.count("▁a▁b") == 2
    with pytest.raises(UnsupportedComponent, match=rf"{path}.*decoder 'Nope': not implemented"):
        enc.decode([0, 1])


def test_the_decoder_survives_the_vocabulary_cache(tmp_path, monkeypatch):
    from livetok.incremental.vocab import parse_store as vocab_cache

    monkeypatch.setenv(vocab_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_toy({"type": "Metaspace", "replacement": "▁",
                                     "prepend_scheme": "always"})), encoding="utf-8")
    first = load_tokenizer_json(path).decode([0, 6, 1, 2])

    def fail(*_a: Any) -> Any:
        raise AssertionError("prepared again: the cache was not used")

    monkeypatch.setattr(reader, "_prepare", fail)
    second = load_tokenizer_json(path)
    assert first == second.decode([0, 6, 1, 2]) == "a<s> bc"


def test_ids_outside_the_vocabulary_are_skipped_as_hf_skips_them():
    data = _toy({"type": "Metaspace", "replacement": "▁"})
    enc = tokenizer_from_dict(data, name="toy", source="toy.json")
    ref = tokenizers.Tokenizer.from_str(json.dumps(data))
    assert enc.decode([7, 0, 10**6, 1]) == ref.decode([7, 0, 10**6, 1]) == "a b"
    with pytest.raises(ValueError, match="outside"):
        enc.decode([-1])
    with pytest.raises(TypeError, match="ints"):
        enc.decode(["a"])  # type: ignore[list-item]


def test_a_bert_file_with_another_decoder_decodes_as_hf():
    # (the WordPiece family reads only the WordPiece decoder: this one takes the general path)
    data = {**tokenizer_json("bert"), "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "##"}, "content": ""}, {"type": "Fuse"}]}}
    enc = tokenizer_from_dict(data, name="bert-seq", source="bert-seq.json")
    ref = tokenizers.Tokenizer.from_str(json.dumps(data))
    ref.no_padding()
    ref.no_truncation()
    text = "Tokenizers decode: unbelievably [SEP] well!"
    ids = ref.encode(text, add_special_tokens=False).ids
    assert enc.encode(text) == ids
    assert enc.decode(ids) == ref.decode(ids, skip_special_tokens=False)


# -- every real file against its HF reference ------------------------------------------------


def _decode(name: str, ids: list[int]) -> str:
    """livetok's decode keeping special tokens (the WordPiece family, which BERT files go to,
    drops them unless told: its own default, as HF's)."""
    enc = encoding(name)
    if name == "bert":
        return str(enc.decode(ids, skip_special_tokens=False))
    return str(enc.decode(ids))


def _hf_decode(name: str, ids: list[int]) -> str:
    return str(reference(name).decode(ids, skip_special_tokens=False))


def _hf_ids(name: str, text: str) -> list[int]:
    return list(reference(name).encode(text, add_special_tokens=False).ids)


@pytest.mark.parametrize("name", params())
def test_real_text(name):
    texts = [multilingual_text(20_000), code_text(20_000), *[t[:20_000] for t in trace_texts()]]
    for text in texts:
        ids = _hf_ids(name, text)
        assert _decode(name, ids) == _hf_decode(name, ids)
        # in chunks too: a chunk starts on any token (a ▁ word's, a byte run's middle)
        for k in range(0, min(len(ids), 3000), 97):
            chunk = ids[k:k + 13]
            assert _decode(name, chunk) == _hf_decode(name, chunk), (k, chunk)


@pytest.mark.parametrize("name", params())
def test_one_token_each(name):
    ids = _hf_ids(name, multilingual_text(3000) + code_text(1000))
    for i in dict.fromkeys(ids):
        assert _decode(name, [i]) == _hf_decode(name, [i]), i


@pytest.mark.parametrize("name", params())
@pytest.mark.parametrize("text", ["", " ", "   leading spaces", "\u2581Hello \u2581world\u2581",
                                  "\u2581\u2581", "  \n\t x  ", "a  b", "叫", "😀 emoji",
                                  "don't do not , ."])
def test_edge_texts(name, text):
    ids = _hf_ids(name, text)
    assert _decode(name, ids) == _hf_decode(name, ids)


@pytest.mark.parametrize("name", params())
def test_added_tokens_in_the_middle_and_at_the_start(name):
    added = tokenizer_json(name)["added_tokens"]
    specials = [t["id"] for t in added if t.get("special")][:4]
    plain = [t["id"] for t in added if not t.get("special")][:4]
    ids = _hf_ids(name, " Hello world, \u2581again")
    for extra in (specials, plain, specials + plain):
        for at in (0, 1, len(ids) // 2, len(ids)):
            mixed = ids[:at] + extra + ids[at:]
            assert _decode(name, mixed) == _hf_decode(name, mixed), (at, extra)


@pytest.mark.parametrize("name", params())
def test_byte_tokens_of_a_partial_character(name):
    enc = encoding(name)
    ref = reference(name)
    # the first byte of 叫 alone: a byte-fallback token, or a byte-level one
    candidates = ["<0xE5>", "<0x8F>", "Ã¥", "å"]
    ids = [i for i in map(ref.token_to_id, candidates) if i is not None]
    ids += _hf_ids(name, "叫")[:1]
    for i in ids:
        assert _decode(name, [i]) == _hf_decode(name, [i])
        assert _decode(name, [i, i]) == _hf_decode(name, [i, i])
        word = _hf_ids(name, " word")
        assert _decode(name, word + [i] + word) == _hf_decode(name, word + [i] + word)
    assert _decode(name, []) == _hf_decode(name, []) == ""
    assert enc is not None


@pytest.mark.parametrize("name", params())
def test_any_ids(name):
    n = len(reference(name).get_vocab(with_added_tokens=True))

    @given(st.lists(st.integers(0, n + 5), max_size=12))
    def check(ids):
        assert _decode(name, ids) == _hf_decode(name, ids), ids

    check()


def test_names_are_covered():
    assert {"llama2", "gemma3", "xlmr", "bert", "llama3"} <= set(NAMES)
