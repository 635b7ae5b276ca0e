"""The ``tokenizer.json`` models (``incremental/hf/model_section.py``, ``bpe.py``, ``unigram.py``)
against HuggingFace ``tokenizers``' own models, one pre-token at a time.

The reference is the real file's model alone: ``Tokenizer.from_file(p).model.tokenize(s)``
(no normalizer, pre-tokenizer, added tokens or post-processor). Byte-level models get the
byte-mapped string on both sides, as the pipeline gives it. Each real file is loaded once per
test process (``_loaded``, cached; HF's ``Tokenizer`` is ``tests/_hf_encodings.reference``,
shared with the other modules), however pytest-xdist spreads the tests. gpt-oss and Mistral
Nemo (``SLOW_NAMES``: byte-level BPE with ``ignore_merges``, as Llama 3's) run under
``LIVETOK_SLOW=1`` only, their loading being most of their time. Synthetic
models built with hypothesis cover what the real files do not use (continuing-subword prefix,
end-of-word suffix, unknowns without byte fallback, missing byte tokens, dropped unknowns,
repeated merges, score ties).
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any, Iterator

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from livetok.incremental.hf.bpe import BPEModel
from livetok.incremental.pairmerge import merge_heap, merge_scan
from livetok.incremental.hf.errors import UnsupportedComponent
from livetok.incremental.hf.model_section import Model, WordLevelModel, WordPieceModel, build_model, byte_level_map, bytes_to_unicode
from livetok.incremental.hf.unigram import UnigramModel

from .._hf_encodings import params, reference, tokenizer_json
from .._refs import real_text
from .._tokenizer_files import tokenizer_file
from ..conftest import EXAMPLES

NAMES = ["llama3", "qwen3", "deepseek_v3", "gptoss", "gpt4o", "mistral_nemo", "gemma3",
         "llama2", "xlmr", "bert"]

SAMPLE = (
    "Hello world! It's 2024 and WE'LL see — naïve café, Straße, ΟΔΥΣΣΕΥΣ.\n"
    "東京タワーは高さ333メートルです。北京欢迎你。 한국어 텍스트. مرحبا بالعالم\n"
    "emoji 😀👍🏽 and flags 🇫🇷, e\u0301 combining, digits 1234567890 ॐ नमस्ते ไทย\n"
    "def f(x):\n\treturn x ** 2  # two spaces\n\n\n    indented    runs\t\ttabs\n"
    "==========\n------------------------------\n\U0001d4d7\U0001d4ee\U0001d4f5 \ufffd \x00\x7f"
)


class Loaded:
    """One real file: our model, HuggingFace's, and how its pipeline feeds the model."""

    def __init__(self, name: str) -> None:
        path = str(tokenizer_file(name))
        data = tokenizer_json(name)
        self.name = name
        self.byte_level = "ByteLevel" in json.dumps(data.get("pre_tokenizer"))
        self.model: Model = build_model(data["model"], source=path, byte_level=self.byte_level)
        self.hf = reference(name)  # Tokenizer.from_file(path), padding and truncation off
        self.hf_model = self.hf.model

    def feed(self, text: str) -> str:
        """What the model sees for the pre-token ``text``."""
        return byte_level_map(text) if self.byte_level else text

    def want(self, pretoken: str) -> list[int]:
        return [t.id for t in self.hf_model.tokenize(pretoken)]

    def real_pretokens(self, text: str) -> list[str]:
        """The distinct pre-tokens HF's own normalizer and pre-tokenizer make of ``text``
        (pipelines without a splitting pre-tokenizer: each normalized line)."""
        hf = self.hf
        norm = hf.normalizer.normalize_str(text) if hf.normalizer else text
        if hf.pre_tokenizer is not None:
            pieces = [s for s, _ in hf.pre_tokenizer.pre_tokenize_str(norm)]
        else:
            pieces = []
        if len(pieces) <= 1 + text.count("\n") // 4:  # Gemma, Llama 2: one piece per line
            pieces = norm.splitlines(keepends=True)
        return list(dict.fromkeys(p for p in pieces if p))


@functools.lru_cache(maxsize=None)
def _loaded(name: str) -> Loaded:
    """``Loaded(name)``, built once per process (a test that changes the model puts it back)."""
    return Loaded(name)


@pytest.fixture(scope="module", params=params(NAMES))
def loaded(request: pytest.FixtureRequest) -> Iterator[Loaded]:
    yield _loaded(request.param)


# -- the real files ---------------------------------------------------------------------------


def test_real_pretokens_equal_hf(loaded: Loaded) -> None:
    text = real_text(40_000) + SAMPLE * 3
    pres = loaded.real_pretokens(text)
    assert len(pres) > 20
    bad = []
    for s in pres:
        got = loaded.model.tokenize(s)
        if got != loaded.want(s):
            bad.append(s)
            continue
        lens = loaded.model.token_lengths(s, got)
        assert len(lens) == len(got) and all(n >= 0 for n in lens)
        assert sum(lens) == len(s) or not got, (s, lens)
    assert not bad, f"{loaded.name}: {len(bad)} of {len(pres)} pre-tokens differ, e.g. {bad[:3]!r}"
    # the cache gives the same ids
    for s in pres[:200]:
        assert loaded.model.tokenize(s) == loaded.want(s)
    _check(loaded.model)


@pytest.mark.slow
def test_a_megabyte_of_real_pretokens_equal_hf(loaded: Loaded) -> None:
    """LIVETOK_SLOW=1: every distinct pre-token of 1 MB of real text (the standard library's
    text and code, the multilingual sample) against HF's model."""
    text = real_text(1_000_000) + SAMPLE * 50
    pres = loaded.real_pretokens(text)
    bad = [s for s in pres if loaded.model.tokenize(s) != loaded.want(s)]
    assert not bad, f"{loaded.name}: {len(bad)} of {len(pres)} differ, e.g. {bad[:3]!r}"


def _check(model: Model) -> None:
    check = getattr(model, "_check", None)
    if check is not None:
        check()


#: pre-tokens: words of many scripts, runs, CJK, emoji, random code points, real words
_SCRIPTS = st.sampled_from([
    (0x41, 0x7A), (0xC0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
    (0x900, 0x97F), (0xE00, 0xE7F), (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
    (0x1F300, 0x1FAFF), (0x20, 0x40), (0x2000, 0x2BFF), (0x10000, 0x2FFFF), (0xE000, 0xF8FF),
])


@st.composite
def _script_word(draw: st.DrawFn) -> str:
    lo, hi = draw(_SCRIPTS)
    return draw(st.text(st.characters(min_codepoint=lo, max_codepoint=hi,
                                      blacklist_categories=["Cs"]), min_size=1, max_size=12))


_WORDS = ["the", "Hello", "naïve", "Straße", "tokenization", "東京タワー", "北京欢迎你",
          "한국어", "مرحبا", "नमस्ते", "ไทย", "😀👍🏽", "🇫🇷", "e\u0301", "1234567890", "'s",
          "'LL", "ΟΔΥΣΣΕΥΣ", "\t\t", "\n\n", "    ", "==", "->", "::", "<think>", "</s>",
          "<unk>", "<0x41>", "##ing", "\u2581the", "\u2581\u2581\u2581"]

_PRETOKEN = st.one_of(
    st.lists(st.one_of(_script_word(), st.sampled_from(_WORDS)), min_size=1, max_size=4)
    .map("".join),
    st.builds(lambda c, n: c * n, st.sampled_from(list(" \t\n=-_*#.ab\u2581中😀")),
              st.integers(1, 80)),
    st.text(min_size=1, max_size=30).filter(lambda s: all(not 0xD800 <= ord(c) < 0xE000 for c in s)),
)


@given(data=st.data())
@settings(max_examples=min(EXAMPLES, 40))
def test_hypothesis_pretokens_equal_hf(loaded: Loaded, data: st.DataObject) -> None:
    text = data.draw(_PRETOKEN)
    s = loaded.feed(text)
    got = loaded.model.tokenize(s)
    assert got == loaded.want(s), (text, got)
    lens = loaded.model.token_lengths(s, got)
    assert sum(lens) == len(s) or not got


def test_long_pretokens_equal_hf(loaded: Loaded) -> None:
    """Long pre-tokens take the heap (and, for BPE, the cuts inside): a CJK run, a run of one
    character, a line of random code points, a long real line with spaces as the model sees
    them."""
    rnd = random.Random(7)
    cjk = "".join(chr(rnd.randrange(0x4E00, 0x9FFF)) for _ in range(600))
    noise = "".join(chr(rnd.choice([rnd.randrange(0x20, 0x3000), rnd.randrange(0x1F300, 0x1FAFF)]))
                    for _ in range(600))
    line = real_text(4000).replace("\n", " ")
    for text in (cjk, "=" * 700, " " * 300, noise, line, line.replace(" ", "\u2581")):
        s = loaded.feed(text)
        got = loaded.model.tokenize(s)
        assert got == loaded.want(s), (loaded.name, text[:40])
        assert sum(loaded.model.token_lengths(s, got)) == len(s) or not got


@given(data=st.data())
@settings(max_examples=min(EXAMPLES, 30))
def test_cuts_are_sound(loaded: Loaded, data: st.DataObject) -> None:
    """At every cut, tokenize(whole) == tokenize(left) + tokenize(right), HF's ids on each
    side (and the pieces between all cuts concatenate too)."""
    parts = data.draw(st.lists(_PRETOKEN, min_size=1, max_size=4))
    s = loaded.feed("".join(parts))
    cuts = loaded.model.cuts(s)
    if cuts is None:
        assert not isinstance(loaded.model, BPEModel)
        return
    assert cuts == sorted(set(cuts)) and all(0 < c < len(s) for c in cuts)
    whole = loaded.want(s)
    for c in cuts:
        assert loaded.want(s[:c]) + loaded.want(s[c:]) == whole, (s, c)
    bounds = [0, *cuts, len(s)]
    assert [i for a, b in zip(bounds, bounds[1:]) for i in loaded.want(s[a:b])] == whole


def test_cuts_on_real_lines(loaded: Loaded) -> None:
    if not isinstance(loaded.model, BPEModel):
        pytest.skip("cuts are BPE's")
    lines = loaded.real_pretokens(real_text(20_000) + SAMPLE)
    lines = sorted(lines, key=len)[-40:]
    n_cuts = 0
    for s in lines:
        cuts = loaded.model.cuts(s)
        assert cuts is not None
        n_cuts += len(cuts)
        whole = loaded.want(s)
        bounds = [0, *cuts, len(s)]
        assert [i for a, b in zip(bounds, bounds[1:]) for i in loaded.want(s[a:b])] == whole
    if loaded.name in ("gemma3", "llama2"):
        assert n_cuts > 100  # whole lines are pieces: the model's cuts are what splits them


def test_a_mutated_cut_rule_fails(loaded: Loaded) -> None:
    """Cutting between every two characters (no joinable pairs) breaks the tokenization of
    real text: the pair test is what makes the cuts sound."""
    model = loaded.model
    if not isinstance(model, BPEModel):
        pytest.skip("cuts are BPE's")
    model.joinable_pairs()
    saved = model._pairs
    model._pairs = frozenset()
    try:
        s = loaded.feed("tokenization of real text")
        cuts = model.cuts(s)
        assert cuts is not None
        bounds = [0, *cuts, len(s)]
        assert [i for a, b in zip(bounds, bounds[1:]) for i in loaded.want(s[a:b])] != loaded.want(s)
    finally:
        model._pairs = saved


def test_vocabulary_tables(loaded: Loaded) -> None:
    model = loaded.model
    for tok, i in list(model.token_to_id.items())[:5000]:
        assert model.id_to_token[i] == tok
        assert loaded.hf_model.id_to_token(i) == tok
        assert loaded.hf_model.token_to_id(tok) == i


# -- synthetic models: what the real files do not exercise -------------------------------------


def _hf_model_from(model_spec: dict[str, Any]) -> Any:
    data = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": None, "pre_tokenizer": None, "post_processor": None,
            "decoder": None, "model": model_spec}
    return Tokenizer.from_str(json.dumps(data)).model


def _both(spec: dict[str, Any], cls: type) -> tuple[Any, Any]:
    """HuggingFace's model and ours, built from the same ``model`` section."""
    model = build_model(spec, source="synthetic.json")
    assert isinstance(model, cls)
    return _hf_model_from(spec), model


def _hf_ids(hf_model: Any, s: str) -> list[int] | str:
    try:
        return [t.id for t in hf_model.tokenize(s)]
    except Exception as exc:  # HF's own errors (a missing unk token): compare as "error"
        return f"error: {type(exc).__name__}"


def _our_ids(model: Model, s: str) -> list[int] | str:
    try:
        return model.tokenize(s)
    except UnsupportedComponent as exc:
        return f"error: {type(exc).__name__}"


@st.composite
def _bpe_spec(draw: st.DrawFn) -> dict[str, Any]:
    """A random BPE over the alphabet "abcé" (x, y and 中 unknown): random merges, some
    building one token twice, a prefix or suffix, unknown handling of every kind."""
    prefix = draw(st.sampled_from([None, "", "##"]))
    suffix = draw(st.sampled_from([None, "", "</w>"]))
    vocab: dict[str, int] = {}

    def add(tok: str) -> None:
        vocab.setdefault(tok, len(vocab))

    alphabet = ["a", "b", "c", "é"]
    for ch in alphabet:
        add(ch)
        if prefix:
            add(prefix + ch)
        if suffix:
            add(ch + suffix)
            if prefix:
                add(prefix + ch + suffix)
    unk = draw(st.sampled_from([None, "<unk>"]))
    if unk:
        add(unk)
    byte_fallback = draw(st.booleans())
    if byte_fallback:
        present = draw(st.sampled_from(["all", "some"]))
        for b in range(256):
            if present == "all" or b % 3:
                add(f"<0x{b:02X}>")
    merges: list[list[str]] = []
    for _ in range(draw(st.integers(0, 25))):
        a = draw(st.sampled_from(sorted(vocab)))
        b = draw(st.sampled_from(sorted(vocab)))
        if a.startswith("<") or b.startswith("<"):
            continue
        plen = len(prefix or "")
        if prefix and not b.startswith(prefix):
            continue
        new = a + b[plen:]
        add(new)
        merges.append([a, b])
    if draw(st.booleans()) and merges:
        merges.append(merges[draw(st.integers(0, len(merges) - 1))])  # a repeated pair
    as_strings = draw(st.booleans())
    return {
        "type": "BPE", "dropout": None, "unk_token": unk,
        "continuing_subword_prefix": prefix, "end_of_word_suffix": suffix,
        "fuse_unk": draw(st.booleans()), "byte_fallback": byte_fallback,
        "ignore_merges": draw(st.booleans()), "vocab": vocab,
        "merges": [" ".join(m) for m in merges] if as_strings else merges,
    }


_SYNTH_TEXT = st.lists(st.sampled_from(list("abcéxy中") + ["</w>", "##", "<unk>"]),
                       max_size=12).map("".join)


@given(spec=_bpe_spec(), texts=st.lists(_SYNTH_TEXT, min_size=1, max_size=6))
@settings(max_examples=max(EXAMPLES, 100))
def test_random_bpe_models_equal_hf(spec: dict[str, Any], texts: list[str]) -> None:
    hf, model = _both(spec, BPEModel)
    for s in texts:
        want = _hf_ids(hf, s)
        got = _our_ids(model, s)
        assert got == want, (s, got, want)
        if isinstance(got, list):
            lens = model.token_lengths(s, got)
            assert len(lens) == len(got) and (sum(lens) == len(s) or not got)
            cuts = model.cuts(s)
            if cuts is not None:
                bounds = [0, *cuts, len(s)]
                assert [i for a, b in zip(bounds, bounds[1:])
                        for i in model.tokenize(s[a:b])] == got, (s, cuts)
    model._check()


@given(spec=_bpe_spec(), s=_SYNTH_TEXT)
@settings(max_examples=min(EXAMPLES, 60))
def test_scan_and_heap_agree_when_exact(spec: dict[str, Any], s: str) -> None:
    model = build_model(spec, source="synthetic.json")
    assert isinstance(model, BPEModel)
    assume(model.scan_exact)
    try:
        ids = model._initial(s, None)
    except UnsupportedComponent:
        return
    a, b = list(ids), list(ids)
    la, lb = [1] * len(ids), [1] * len(ids)
    merge_scan(a, la, model.rules, model.m)
    merge_heap(b, lb, model.rules, model.m)
    assert (a, la) == (b, lb)


def test_unknown_fusing_and_dropping() -> None:
    vocab = {"<unk>": 0, "a": 1, "b": 2, "ab": 3}
    base = {"type": "BPE", "vocab": vocab, "merges": ["a b"], "unk_token": "<unk>"}
    fused = build_model({**base, "fuse_unk": True}, source="t.json")
    plain = build_model(base, source="t.json")
    dropped = build_model({**base, "unk_token": None}, source="t.json")
    for m, spec in ((fused, {**base, "fuse_unk": True}), (plain, base),
                    (dropped, {**base, "unk_token": None})):
        hf = _hf_model_from({**spec, "dropout": None})
        for s in ("axxb", "xx", "axb", "x", "abxab", "xaxbx"):
            assert m.tokenize(s) == _hf_ids(hf, s), (spec, s)
    assert fused.tokenize("axxb") == [1, 0, 2]
    assert fused.token_lengths("axxb", [1, 0, 2]) == [1, 2, 1]
    assert dropped.tokenize("axb") == [3]  # x is dropped, so a and b merge
    assert dropped.token_lengths("axb", [3]) == [3]
    # cuts: fused unknowns join each other, dropped ones join anything
    assert fused.cuts("axxb") == [1, 3]
    assert plain.cuts("axxb") == [1, 2, 3]
    assert dropped.cuts("axxb") == []


def test_a_mutated_unknown_rule_fails() -> None:
    """Cutting between two unknowns that fuse (the "never" rule on a fuse_unk model) breaks
    the tokenization: the unknown rule of cuts() is needed."""
    spec = {"type": "BPE", "vocab": {"<unk>": 0, "a": 1}, "merges": [], "unk_token": "<unk>",
            "fuse_unk": True}
    model = build_model(spec, source="t.json")
    assert isinstance(model, BPEModel)
    model._unknown_joins = "never"
    cuts = model.cuts("xx")
    assert cuts == [1]
    assert model.tokenize("x") + model.tokenize("x") != model.tokenize("xx")


def test_ignore_merges_drops_cuts_beside_unreachable_tokens() -> None:
    """With ignore_merges, a piece that is a token the merges do not build would become that
    token alone: cuts() does not cut it out."""
    vocab = {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5}
    spec = {"type": "BPE", "vocab": vocab, "merges": ["b c", "a b"], "ignore_merges": True}
    model = build_model(spec, source="t.json")
    hf = _hf_model_from({**spec, "dropout": None, "unk_token": None})
    s = "abcca"  # pairs: ab bc cc ca -> "cc" and "ca" are in no token
    assert model.tokenize("abc") == [5]  # the short cut
    assert model._whole("abc", None) == [0, 4]  # what the merges make of it
    cuts = model.cuts(s)
    assert cuts == [4]  # the cut at 3 would make "abc" one token
    assert model.tokenize(s) == _hf_ids(hf, s) == [0, 4, 2, 0]


def test_unsupported_components_are_named() -> None:
    with pytest.raises(UnsupportedComponent, match=r"x\.json: model WordLevel: unk_token '<unk>'"):
        build_model({"type": "WordLevel", "vocab": {"a": 0}}, source="x.json")
    with pytest.raises(UnsupportedComponent, match=r"x\.json: model Nope: not implemented"):
        build_model({"type": "Nope", "vocab": {"a": 0}}, source="x.json")
    with pytest.raises(UnsupportedComponent, match="dropout"):
        build_model({"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1},
                    source="x.json")
    with pytest.raises(UnsupportedComponent, match="not two tokens"):
        build_model({"type": "BPE", "vocab": {"a": 0}, "merges": ["a a a"]}, source="x.json")
    with pytest.raises(UnsupportedComponent, match="not in the vocabulary"):
        build_model({"type": "BPE", "vocab": {"a": 0}, "merges": ["a a"]}, source="x.json")
    with pytest.raises(UnsupportedComponent, match="unk_token"):
        build_model({"type": "WordPiece", "vocab": {"a": 0}}, source="x.json")
    with pytest.raises(UnsupportedComponent, match="unk_id"):
        build_model({"type": "Unigram", "unk_id": 5, "vocab": [["a", -1.0]]}, source="x.json")
    # dropout 0 is no dropout
    assert build_model({"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.0},
                       source="x.json").tokenize("aa") == [0, 0]
    # an unk_token missing from the vocabulary fails where HF fails: on an unknown character
    m = build_model({"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"},
                    source="x.json")
    assert m.tokenize("a") == [0]
    with pytest.raises(UnsupportedComponent, match="x.json.*unk_token"):
        m.tokenize("b")


@st.composite
def _unigram_spec(draw: st.DrawFn) -> dict[str, Any]:
    """A random Unigram over "abc中" with scores from a small set (ties are common)."""
    pieces = draw(st.lists(st.text(st.sampled_from(list("abc中")), min_size=1, max_size=4),
                           min_size=1, max_size=20, unique=True))
    scores = st.sampled_from([-1.0, -2.0, -2.5, -3.0, -0.5, 0.0, -10.0, 2.0])
    vocab = [["<unk>", 0.0]] + [[p, draw(scores)] for p in pieces]
    byte_fallback = draw(st.booleans())
    if byte_fallback:
        vocab += [[f"<0x{b:02X}>", -1.0] for b in range(256) if draw(st.booleans()) or b < 200]
    return {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": byte_fallback}


@given(spec=_unigram_spec(),
       texts=st.lists(st.text(st.sampled_from(list("abc中xé")), max_size=14), min_size=1,
                      max_size=6))
@settings(max_examples=max(EXAMPLES, 100))
def test_random_unigram_models_equal_hf(spec: dict[str, Any], texts: list[str]) -> None:
    hf, model = _both(spec, UnigramModel)
    for s in texts:
        got = model.tokenize(s)
        assert got == _hf_ids(hf, s), (s, got)
        lens = model.token_lengths(s, got)
        assert sum(lens) == len(s) and len(lens) == len(got)
    model._check()


def test_wordpiece_options() -> None:
    spec = {"type": "WordPiece", "unk_token": "<?>", "continuing_subword_prefix": "@@",
            "max_input_chars_per_word": 6,
            "vocab": {"<?>": 0, "un": 1, "@@aff": 2, "@@able": 3, "u": 4, "@@n": 5}}
    hf, model = _both(spec, WordPieceModel)
    for s in ("unaff", "unaffable", "un", "u", "x", "", "unn", "unaffx"):
        assert model.tokenize(s) == _hf_ids(hf, s), s
        got = model.tokenize(s)
        if got:
            assert sum(model.token_lengths(s, got)) == len(s)


def test_bytes_to_unicode_and_map() -> None:
    table = bytes_to_unicode()
    assert len(table) == 256 and len(set(table.values())) == 256
    assert table[0x20] == "\u0120" and table[ord("!")] == "!"
    from tokenizers.pre_tokenizers import ByteLevel

    bl = ByteLevel(add_prefix_space=False, use_regex=False)
    for text in (SAMPLE, "a\x00b", "😀 é\n\t", ""):
        want = "".join(s for s, _ in bl.pre_tokenize_str(text))
        assert byte_level_map(text) == want


def test_unigram_duplicate_pieces_take_the_last_id() -> None:
    """A piece listed twice: HuggingFace's map keeps the last id (and its score)."""
    spec = {"type": "Unigram", "unk_id": 0, "vocab": [
        ["<unk>", 0.0], ["a", -1.0], ["ab", -3.0], ["b", -1.5], ["a", -5.0], ["ab", -0.5]]}
    hf, model = _both(spec, UnigramModel)
    for s in ("ab", "aab", "abab", "ba", "xab"):
        assert model.tokenize(s) == _hf_ids(hf, s), s
    assert model.tokenize("aab") == [4, 5]


def test_models_implement_the_protocol() -> None:
    specs = [
        {"type": "BPE", "vocab": {"a": 0}, "merges": []},
        {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]},
        {"type": "WordPiece", "vocab": {"[UNK]": 0}},
    ]
    for spec in specs:
        model = build_model(spec, source="t.json")
        assert isinstance(model, Model)
        assert model.supports_glue == (spec["type"] == "BPE")


def test_sections_without_a_type_are_read_as_huggingface_reads_them() -> None:
    for spec, kind in (
        ({"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}, BPEModel),
        ({"unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]}, UnigramModel),
        ({"vocab": {"[UNK]": 0, "a": 1}, "unk_token": "[UNK]", "continuing_subword_prefix": "##",
          "max_input_chars_per_word": 100}, WordPieceModel),
        ({"vocab": {"[UNK]": 0, "ab": 1}, "unk_token": "[UNK]"}, WordLevelModel),
        ({"vocab": {"[UNK]": 0, "b": 1}, "unk_token": "[UNK]", "continuing_subword_prefix": "##"},
         WordLevelModel),
    ):
        hf, model = _both(spec, kind)
        assert type(hf).__name__ == kind.__name__.replace("Model", "")
        assert model.tokenize("ab") == _hf_ids(hf, "ab")
    with pytest.raises(UnsupportedComponent, match="not the fields of one"):
        build_model({"vocab": {"[UNK]": 0}}, source="t.json")


def test_tokenizers_merges_by_definition_3_not_4() -> None:
    """With rules [ab a, a b] (an improper dictionary), "abab" is "aba b" in tokenizers: after
    each merge the highest rule applies next (Definition 3 of Formalizing BPE Tokenization),
    not the rule just used, left to right (its Definition 4 would give "ab ab")."""
    spec = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "vocab": {"a": 0, "b": 1, "ab": 2, "aba": 3}, "merges": ["ab a", "a b"]}
    hf, model = _both(spec, BPEModel)
    assert _hf_ids(hf, "abab") == model.tokenize("abab") == [3, 1]
