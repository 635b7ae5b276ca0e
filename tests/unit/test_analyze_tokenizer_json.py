"""``livetok analyze`` for tokenizer.json: the merges read as the paper's dictionary, and which
semantics HuggingFace ``tokenizers`` really has.

*Formalizing BPE Tokenization* names Definition 4 the "HuggingFace" semantics; the library that
runs tokenizer.json files merges the highest-priority pair first, leftmost on ties, which is
Definition 3. The tests check that claim on the paper's examples and on random dictionaries
(hypothesis), check each verdict of :func:`analyze_merges` on small files built here, and on real
files: Gemma 3's 32 newlines, where the two definitions differ and the file follows Definition 3.
"""

from __future__ import annotations

import doctest
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental.analysis import hf_merges, merge_rules as mr
from livetok.incremental.analysis.hf_merges import analyze_merges, read_model

from .._hf_encodings import reference
from .._tokenizer_files import tokenizer_file

tokenizers = pytest.importorskip("tokenizers")

EX1 = [("a", "b"), ("a", "bc"), ("b", "c"), ("ab", "c")]  # improper, but rule 2 never useful
EX2 = [("c", "ab"), ("ab", "c"), ("a", "b")]
EX3 = [("ab", "a"), ("a", "b")]


def tokenizer_json(rules: list[tuple[str, str]], *, as_pairs: bool = False,
                   extra_vocab: str = "", **model: object) -> dict[str, object]:
    """A minimal tokenizer.json with a BPE model whose merges are ``rules``."""
    toks = dict.fromkeys([*extra_vocab, *(c for u, v in rules for c in u + v),
                          *(t for u, v in rules for t in (u, v, u + v))])
    return {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None,
            "post_processor": None, "decoder": None,
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "vocab": {t: i for i, t in enumerate(toks)},
                      "merges": [list(r) if as_pairs else " ".join(r) for r in rules], **model}}


def hf_model(rules: list[tuple[str, str]]) -> object:
    data = tokenizer_json(rules)
    return tokenizers.Tokenizer.from_str(json.dumps(data)).model


def hf_tokens(model: object, w: str) -> tuple[str, ...]:
    return tuple(t.value for t in model.tokenize(w))  # type: ignore[attr-defined]


def test_doctests() -> None:
    assert doctest.testmod(hf_merges).failed == 0


@pytest.mark.parametrize("rules, w", [(EX3, "abab"), (EX2, "abcab")])
def test_hf_tokenizers_follows_definition_3_on_the_papers_examples(rules, w) -> None:
    D = mr.Dictionary.of(rules)
    assert mr.tokenize_sp(D, w) != mr.tokenize_hf(D, w)
    assert hf_tokens(hf_model(rules), w) == mr.tokenize_sp(D, w)


@st.composite
def shuffled_dictionaries(draw: st.DrawFn) -> list[tuple[str, str]]:
    """A proper dictionary over ``abc`` built merge by merge, then put in a random order: about
    one in ten has strings where Definitions 3 and 4 differ."""
    pool = ["a", "b", "c"]
    rules = []
    for _ in range(draw(st.integers(2, 8))):
        u, v = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        rules.append((u, v))
        if u + v not in pool:
            pool.append(u + v)
    return list(draw(st.permutations(rules)))


@settings(max_examples=100, deadline=None)
@given(shuffled_dictionaries(), st.lists(st.text("abc", min_size=1, max_size=12), max_size=5))
def test_hf_tokenizers_is_definition_3_on_random_dictionaries(rules, words) -> None:
    """Any dictionary, proper or not, duplicates included: HF == SentencePiece semantics over
    the merges as :func:`read_model` reads them (a duplicate keeps its last rank)."""
    data = tokenizer_json(rules, extra_vocab="abc")
    D = read_model(data, source="t").rules
    assert D is not None
    model = tokenizers.Tokenizer.from_str(json.dumps(data)).model
    # where the definitions can differ: strings built from the rules that break properness
    near = list(itertools.islice(hf_merges.witness_candidates(D, mr.proper_violations(D)), 40))
    for w in words + near:
        assert hf_tokens(model, w) == mr.tokenize_sp(D, w), (D.rules, w)


def test_read_model_strings_pairs_and_duplicates() -> None:
    m = read_model(tokenizer_json(EX3, as_pairs=True), source="t")
    assert m.rules == mr.Dictionary.of(EX3) and m.n_merges == 2 and not m.duplicates
    # a pair listed twice keeps its last rank, as in HF (and so ab is not made before bc)
    dup = [("b", "c"), ("a", "b"), ("b", "c"), ("ab", "c")]
    m = read_model(tokenizer_json(dup), source="t")
    assert m.duplicates == 1 and m.rules is not None
    assert m.rules.rules == (("a", "b"), ("b", "c"), ("ab", "c"))
    assert hf_tokens(hf_model(dup), "abc") == ("abc",) == mr.tokenize_sp(m.rules, "abc")


@pytest.mark.parametrize("change, message", [
    (lambda d: d["model"]["merges"].append("a x"), "'x' is not in model.vocab"),
    (lambda d: d["model"]["merges"].append("a b c"), "model.merges[2] is 'a b c'"),
    (lambda d: d["model"].update(continuing_subword_prefix="##"), "continuing_subword_prefix"),
    (lambda d: d.pop("model"), "no \"model\" object"),
])
def test_read_model_errors_name_the_problem(change, message) -> None:
    data = tokenizer_json(EX3)
    change(data)
    with pytest.raises(ValueError, match="^t.json: .*" + message.replace("[", r"\[")
                       .replace("]", r"\]")):
        read_model(data, source="t.json")


def test_non_bpe_models_have_no_rules() -> None:
    m = read_model({"model": {"type": "Unigram", "vocab": [["a", -1.0]]}}, source="t")
    assert (m.model_type, m.rules, m.n_vocab) == ("Unigram", None, 1)


@pytest.mark.parametrize("rules, verdict", [
    ([("a", "b"), ("ab", "c")], "proper"),
    (EX1, "useful proper"),
    (EX2, "witness"),
    (EX3, "witness"),
    ([("ab", "c"), ("a", "b")], "not found"),  # as Llama 3's: improper, useful, never differs
])
def test_verdicts(rules, verdict) -> None:
    D = mr.Dictionary.of(rules)
    a = analyze_merges(D)
    assert a.verdict == verdict
    if verdict in ("useful proper", "not found"):
        # the proof's premise, checked by brute force: no string up to 7 symbols differs
        assert mr.find_semantics_difference(D, max_len=7, budget=10_000) is None
    if verdict == "witness":
        assert a.witness is not None and a.sp == mr.tokenize_sp(D, a.witness)
        assert a.hf == mr.tokenize_hf(D, a.witness) != a.sp
        assert hf_tokens(hf_model(rules), a.witness) == a.sp


def test_byte_level_strings_have_bytes() -> None:
    assert hf_merges.bytes_of("ĠaĊ") == b" a\n"
    assert hf_merges.bytes_of("▁a") is None


# slow: reading Gemma 3's 514,906 merges as a dictionary takes 8 s; the default run has HF
# follow Definition 3 on random dictionaries (above) and SP and HF differ on example 2
# (tests/e2e/test_analyze.py)
@pytest.mark.slow
def test_real_gemma3_32_newlines_differ_and_the_file_follows_definition_3() -> None:
    path = tokenizer_file("gemma3")
    m = hf_merges.load_model(path)
    assert m.rules is not None and m.n_merges == 514_906 and not m.byte_level
    D = m.rules
    w = "\n" * 32
    sp, hf = mr.tokenize_sp(D, w), mr.tokenize_hf(D, w)
    assert [len(t) for t in sp] == [31, 1] and [len(t) for t in hf] == [16, 16]
    tok = reference("gemma3")  # Tokenizer.from_file(path), loaded once per process
    assert hf_tokens(tok.model, w) == sp
    assert tok.encode(w, add_special_tokens=False).tokens == list(sp)
