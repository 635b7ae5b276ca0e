"""The tokenizer.json encodings equal HuggingFace ``tokenizers`` exactly (issue 17).

For each of the 11 real files (``tests/_tokenizer_files.py``): ``encode`` equals
``Tokenizer.encode(text, add_special_tokens=False).ids`` on hypothesis text (CJK runs, emoji,
runs of spaces and tabs, digits, ``'s``/``'LL`` contractions and Unicode case folding, the
file's added tokens and fragments of them, NFC-changing sequences) and on real text (Django's
translations in ~100 languages, the standard library's code, the shared traces' texts: a
sample by default, >= 1 MB per file under ``LIVETOK_SLOW=1``); the pieces of ``split``,
encoded one by one, give the same ids, and ``token_cp_lens`` covers each piece. Synthetic
files cover the added-token options no real file uses (``lstrip``, ``rstrip``,
``single_word``, ``normalized``) and the errors for what is not implemented.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental.hf.added import AddedMatcher, AddedToken
from livetok.incremental.hf.errors import UnsupportedComponent

from .._hf_encodings import NAMES, code_text, params, encoding, hf_ids, multilingual_text, trace_texts
from ..conftest import EXAMPLES

tokenizers = pytest.importorskip("tokenizers")

SLOW = os.environ.get("LIVETOK_SLOW") == "1"

ATOMS = ["a", "Z", "the", " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "0", "7", "42",
         "1234567", "'s", "'S", "'ll", "'LL", "'Re", "ſ", "İ", "ß", "K", ".", ",", "!?", "/",
         "中文", "日本語", "ひらがな", "カタカナ", "한국어", "😀", "🎉👍🏽", "e\u0301", "\u0301",
         "A\u030a", "\u212b", "\uac00\u11a8", "▁", "▁▁", "<", ">", "|", "｜", "<|", "|>", "\u00a0",
         "\u3000", "x" * 20, "é", "Ω"]


def _added_atoms(name: str) -> list[str]:
    """The file's added tokens (a sample) and fragments of them."""
    enc = encoding(name)
    contents = [t.content for t in getattr(enc, "added", [])]
    if not contents:
        contents = list(getattr(enc, "special_tokens", []) or [])
    sample = contents[:40] + contents[-10:]
    out = set(sample)
    for c in sample:
        if len(c) > 2:
            out.update((c[:-1], c[1:], c[: len(c) // 2], c[len(c) // 2:]))
    return sorted(out)


def _text(name: str) -> st.SearchStrategy[str]:
    atoms = st.sampled_from(ATOMS + _added_atoms(name))
    cjk = st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF), min_size=1,
                  max_size=20)
    anything = st.text(max_size=8).map(lambda s: s.encode("utf-8", "replace").decode("utf-8"))
    return st.lists(st.one_of(atoms, atoms, cjk, anything), max_size=24).map("".join)


def _pieces_ids(enc, text: str) -> list[int]:
    """The ids of ``text`` piece by piece (``split`` then ``encode_piece``), checking
    ``token_cp_lens`` along."""
    out: list[int] = []
    pos = 0
    for a, b in enc.split(text):
        assert a == pos and b > a, (a, b, pos)
        piece = text[a:b]
        ids = list(enc.encode_piece(piece, at_text_start=a == 0))
        cps = enc.token_cp_lens(piece, ids, at_text_start=a == 0)
        assert len(cps) == len(ids) and (sum(cps) == len(piece) or not ids), (piece, ids, cps)
        out.extend(ids)
        pos = b
    assert pos == len(text)
    return out


def _check_exact(name: str, text: str, *, pieces: bool = True) -> None:
    enc = encoding(name)
    want = hf_ids(name, text)
    got = enc.encode(text)
    if got != want:
        k = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))
        raise AssertionError(f"{name}: encode differs from HF at token {k}: got {got[k:k + 6]} "
                             f"want {want[k:k + 6]}; text {text!r:.300}")
    if pieces:
        assert _pieces_ids(enc, text) == want, f"{name}: pieces differ from HF on {text!r:.300}"


@pytest.mark.parametrize("name", params())
def test_hypothesis_text_is_exact(name: str) -> None:
    @settings(max_examples=min(EXAMPLES, 40))
    @given(text=_text(name))
    def check(text: str) -> None:
        _check_exact(name, text)

    check()


@pytest.mark.parametrize("name", params())
def test_real_text_is_exact(name: str) -> None:
    """A sample of real multilingual text, code and the traces' texts (>= 1 MB under slow)."""
    size = 700_000 if SLOW else 12_000
    texts = [multilingual_text(size), code_text(size // 2 if SLOW else size)]
    if SLOW:
        texts += trace_texts()
    for text in texts:
        _check_exact(name, text, pieces=True)


@pytest.mark.parametrize("name", params())
def test_added_tokens_are_matched_as_hf(name: str) -> None:
    enc = encoding(name)
    for c in _added_atoms(name)[:60]:
        for text in (c, f"x{c}y", f" {c} ", f"{c}{c}", f"\n{c}\n", f"{c[:-1]}{c}"):
            _check_exact(name, text)
    del enc


# --- added-token options and normalized tokens (no real file has them) ----------------------

def _toy(added: list[dict], normalizer=None, pre_tokenizer=None):
    """A small byte-free BPE tokenizer.json with ``added`` tokens, as HF saves it."""
    vocab = {c: i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz <>_ABCDEFGHIJKLMNOPQRSTUVWXYZ\t\n▁")}
    merges = ["a b", "c d", "ab cd", "t h", "th e"]
    for m in merges:
        vocab.setdefault(m.replace(" ", ""), len(vocab))
    model = tokenizers.models.BPE(vocab=vocab, merges=[tuple(m.split()) for m in merges],
                                  unk_token="_")
    tok = tokenizers.Tokenizer(model)
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre_tokenizer is not None:
        tok.pre_tokenizer = pre_tokenizer
    tok.add_tokens([tokenizers.AddedToken(**a) for a in added])
    return tok


_OPTION_TOKENS = [
    dict(content="<mask>", lstrip=True, rstrip=True, single_word=True, normalized=False),
    dict(content="ab", single_word=True, normalized=False),
    dict(content="the", lstrip=True, normalized=False),
    dict(content="end", rstrip=True, normalized=False),
    dict(content="cd", normalized=True),
]


@settings(max_examples=min(EXAMPLES, 80))
@given(text=st.lists(st.sampled_from(["<mask>", "ab", "the", "end", "cd", "a", "b", " ", "  ",
                                      "\t", "\n", "x", "<", ">", "mask", "\u2000", "é"]),
                     max_size=14).map("".join))
def test_added_token_options_are_exact(text: str) -> None:
    from livetok.incremental.hf.reader import tokenizer_from_dict

    for pre in (None, tokenizers.pre_tokenizers.Split(" ", "merged_with_previous")):
        tok = _toy(_OPTION_TOKENS, pre_tokenizer=pre)
        enc = tokenizer_from_dict(json.loads(tok.to_str()), name="toy", source="toy.json")
        want = tok.encode(text, add_special_tokens=False).ids
        assert enc.encode(text) == want, text
        assert _pieces_ids(enc, text) == want, text


def test_find_matches_examples_of_hf() -> None:
    """``added_vocabulary.rs``'s own tests of lstrip / rstrip / single_word."""
    m = AddedMatcher([AddedToken("<mask>", 0, lstrip=True, rstrip=True, single_word=True)])
    text = "Hi <mask> there\t<mask>\t<mask>\u2000"
    assert [text[x.start:x.end] for x in m.find(text)] == [" <mask> ", "\t<mask>\t",
                                                             "<mask>\u2000"]
    m = AddedMatcher([AddedToken("<mask>", 0, single_word=True)])
    text = "<mask> My name <mask> A<mask> <mask>ony <mask>"
    assert [(x.start, x.end) for x in m.find(text)] == [(0, 6), (15, 21), (40, 46)]


def test_normalized_added_token_the_normalizer_changes_is_refused() -> None:
    from livetok.incremental.hf.reader import tokenizer_from_dict

    tok = _toy([dict(content="ABC", normalized=True)],
               normalizer=tokenizers.normalizers.Lowercase())
    with pytest.raises(UnsupportedComponent, match="ABC"):
        tokenizer_from_dict(json.loads(tok.to_str()), name="toy", source="toy.json")


# --- errors -------------------------------------------------------------------------------------

def _minimal(**sections):
    data = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
            "added_tokens": []}
    data.update(sections)
    return data


@pytest.mark.parametrize("section, spec, word", [
    ("normalizer", {"type": "Nmt"}, "Nmt"),
    ("pre_tokenizer", {"type": "UnicodeScripts"}, "UnicodeScripts"),
    ("model", {"type": "WordLevel", "vocab": {"a": 0}}, "WordLevel"),  # no unknown token
])
def test_unknown_component_names_itself_and_the_file(section, spec, word) -> None:
    from livetok.incremental.hf.reader import tokenizer_from_dict

    with pytest.raises(UnsupportedComponent) as exc:
        tokenizer_from_dict(_minimal(**{section: spec}), name="x", source="some/tokenizer.json")
    assert word in str(exc.value) and "some/tokenizer.json" in str(exc.value)


def test_unknown_component_in_a_file(tmp_path) -> None:
    from livetok.incremental.hf import load_tokenizer_json

    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(_minimal(normalizer={"type": "Nmt"})), encoding="utf-8")
    with pytest.raises(UnsupportedComponent, match=f"{p}.*Nmt"):
        load_tokenizer_json(p)


def test_post_processor_padding_and_truncation_do_not_count() -> None:
    """BERT's file pads and truncates to 128 and adds [CLS]/[SEP]: counts ignore all three."""
    assert encoding("bert").count("hello world") == len(hf_ids("bert", "hello world")) == 2


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_timings(name: str) -> None:
    """Print encode speed against HF on 200 KB (no assertion: figures for the report)."""
    text = multilingual_text(100_000) + code_text(100_000)
    enc = encoding(name)
    t = time.perf_counter()
    enc.encode(text)
    ours = time.perf_counter() - t
    t = time.perf_counter()
    hf_ids(name, text)
    theirs = time.perf_counter() - t
    print(f"{name}: encode 200 KB {ours * 1e3:.0f} ms, HF {theirs * 1e3:.0f} ms")
