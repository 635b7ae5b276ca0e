"""The semantics of *Formalizing BPE Tokenization* on the paper's own examples, plus properties.

Each example test states the paper's output verbatim (Examples 1-4, the remark after
Definition 5, Remark 5). Hypothesis checks Lemma 1 (proper dictionaries: SP == HF), Corollary
1 (usefulness on ``uv`` == usefulness on all short strings), Remark 5 (swapping independent
neighbours changes nothing) and that both semantics pick one of the base tokenizations.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from livetok.incremental.analysis import merge_rules
from livetok.incremental.analysis.merge_rules import (
    Dictionary,
    DictionaryFormatError,
    applied_rules_brute_force,
    base_tokenizations,
    chain_length_bound,
    derivation_sp,
    find_semantics_difference,
    independent,
    is_proper,
    lookahead_bound,
    proper_violations,
    show,
    sufficient_lookahead,
    tokenize_hf,
    tokenize_sp,
    useful_rules,
)

DICTS = Path(__file__).parents[1] / "data" / "dicts"


def load(name: str) -> Dictionary:
    return Dictionary.parse((DICTS / name).read_text("utf-8"))


def toks(s: str) -> tuple[str, ...]:
    """``"abc ⋄ bc"`` -> ``("abc", "bc")``."""
    return tuple(s.split(" ⋄ "))


# --- the paper's examples ------------------------------------------------------------------


def test_example_1() -> None:
    D = load("example1.txt")
    assert D.rules == (("a", "b"), ("a", "bc"), ("b", "c"), ("ab", "c"))
    steps = derivation_sp(D, "abcbcab")
    assert [show(t) for t, _ in steps] == [
        "ab ⋄ c ⋄ b ⋄ c ⋄ a ⋄ b",
        "ab ⋄ c ⋄ b ⋄ c ⋄ ab",
        "ab ⋄ c ⋄ bc ⋄ ab",
        "abc ⋄ bc ⋄ ab",
    ]
    assert [r for _, r in steps] == [0, 0, 2, 3]
    assert tokenize_sp(D, "abcbcab") == toks("abc ⋄ bc ⋄ ab")
    assert tokenize_hf(D, "abcbcab") == toks("abc ⋄ bc ⋄ ab")
    # "a ⋄ bc ... was never applied", yet the base tokenizer can apply it: without the
    # priorities, a⋄b⋄c => a⋄bc (b⋄c) => abc (a⋄bc) is a derivation of Definition 2
    assert base_tokenizations(Dictionary.of([("b", "c"), ("a", "bc")]), "abc") == {("abc",)}
    assert base_tokenizations(D, "abcbcab") == {toks("abc ⋄ bc ⋄ ab")}
    # Corollary 1: a ⋄ bc is not useful, tokenizing abc takes a⋄b⋄c => ab⋄c => abc
    assert [show(t) for t, _ in derivation_sp(D, "abc")] == ["ab ⋄ c", "abc"]
    assert useful_rules(D, "sp") == [True, False, True, True]
    assert useful_rules(D, "hf") == [True, False, True, True]


def test_example_2() -> None:
    D = load("example2.txt")
    assert tokenize_sp(D, "abcabcabcabc") == toks("abc ⋄ abc ⋄ abc ⋄ abc")
    # "After five steps, we have the tokenization abc ⋄ abc ⋄ ab ⋄ c ⋄ a ⋄ b ⋄ c"
    assert show(derivation_sp(D, "abcabcabcabc")[4][0]) == "abc ⋄ abc ⋄ ab ⋄ c ⋄ a ⋄ b ⋄ c"
    assert tokenize_sp(D, "bcabcabcabc") == toks("b ⋄ cab ⋄ cab ⋄ cab ⋄ c")
    assert tokenize_sp(D, "cabcabcabcabc") == toks("cab ⋄ cab ⋄ cab ⋄ cab ⋄ c")


def test_example_3() -> None:
    D = load("example3.txt")
    assert tokenize_sp(D, "abababab") == toks("aba ⋄ b ⋄ aba ⋄ b")
    assert tokenize_hf(D, "abababab") == toks("ab ⋄ ab ⋄ ab ⋄ ab")
    assert not is_proper(D)
    assert find_semantics_difference(D) == "abab"


def test_example_4() -> None:
    D = load("example4.txt")  # n = 4
    assert is_proper(D)
    assert tokenize_sp(D, "abcde") == toks("a ⋄ b ⋄ c ⋄ d ⋄ e")  # phi ⋄ tau, |tau| = 4
    assert tokenize_sp(D, "abcdef") == toks("a ⋄ bcdef")  # all of tau changed by psi = f
    assert chain_length_bound(D) == len(D) == 4
    assert sufficient_lookahead(D) == 4 * 5 and lookahead_bound(D) == 4 * 5


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_example_4_general_n(n: int) -> None:
    sym = [chr(0x61 + i) for i in range(n + 2)]  # a_0 .. a_{n+1}
    rules = [(sym[k], "".join(sym[k + 1 : n + 2])) for k in range(n, 0, -1)]
    D = Dictionary.of(rules)
    assert is_proper(D) and chain_length_bound(D) == n
    w = "".join(sym)
    assert tokenize_sp(D, w) == (sym[0], "".join(sym[1:]))
    assert tokenize_sp(D, w[:-1]) == tuple(sym[:-1])


def test_proper_but_not_useful() -> None:
    D = load("proper_not_useful.txt")
    assert is_proper(D)
    assert useful_rules(D) == [True, True, True, False]
    assert tokenize_sp(D, "abcd") == toks("a ⋄ bc ⋄ d")


def test_remark_5() -> None:
    D, D2 = load("remark5.txt"), load("remark5_swapped.txt")
    assert independent(D.rules[0], D.rules[1])
    assert not independent(D.rules[0], D.rules[2]) and not independent(D.rules[1], D.rules[2])
    assert chain_length_bound(D) == 2 == chain_length_bound(D2)
    assert lookahead_bound(D) == 8 < sufficient_lookahead(D) == 12
    # equivalent: the same tokenization of every string up to length 6 over {a, b, c, d}
    import itertools

    for n in range(7):
        for w in map("".join, itertools.product("abcd", repeat=n)):
            assert tokenize_sp(D, w) == tokenize_sp(D2, w), w


def test_improper_violations_name_the_rules() -> None:
    D = load("example2.txt")
    assert [str(v) for v in proper_violations(D)] == [
        "rule 1: right token 'ab': only rule 3 (lower priority) produces it",
        "rule 2: left token 'ab': only rule 3 (lower priority) produces it",
    ]
    assert [str(v) for v in proper_violations(Dictionary.of([("xy", "z")]))] == [
        "rule 1: left token 'xy': no rule produces it"
    ]


def test_parse_errors_say_how_to_fix() -> None:
    with pytest.raises(DictionaryFormatError, match="line 2.*two tokens"):
        Dictionary.parse("a b\nabc\n")
    assert Dictionary.parse("# c\n\n\\s a\n").rules == ((" ", "a"),)


# --- properties -----------------------------------------------------------------------------

_tok = st.text("abc", min_size=1, max_size=3)
_rules = st.lists(st.tuples(_tok, _tok), min_size=1, max_size=7)


@st.composite
def proper_dictionaries(draw) -> Dictionary:
    """Build rules whose tokens are single letters or products of earlier rules."""
    made: list[str] = []
    rules: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(1, 8))):
        pool = list("abc") + made
        u, v = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        rules.append((u, v))
        made.append(u + v)
    D = Dictionary.of(rules)
    assert is_proper(D)
    return D


@given(proper_dictionaries(), st.text("abc", max_size=14))
def test_lemma_1_proper_means_sp_equals_hf(D, w) -> None:
    assert tokenize_sp(D, w) == tokenize_hf(D, w)


@given(_rules, st.text("abc", max_size=7))
def test_both_semantics_give_base_tokenizations(rules, w) -> None:
    D = Dictionary.of(rules)
    base = base_tokenizations(D, w)
    assert tokenize_sp(D, w) in base and tokenize_hf(D, w) in base
    for t in (tokenize_sp(D, w), tokenize_hf(D, w)):
        assert "".join(t) == w


@given(_rules)
def test_find_difference_finds_real_differences(rules) -> None:
    D = Dictionary.of(rules)
    w = find_semantics_difference(D, max_len=6, budget=2000)
    if w is not None:
        assert tokenize_sp(D, w) != tokenize_hf(D, w)
    if is_proper(D):
        assert w is None


@given(_rules, st.sampled_from(["sp", "hf"]))
def test_corollary_1_matches_brute_force(rules, semantics) -> None:
    D = Dictionary.of(rules)
    assume(D.max_rule_len <= 5)
    useful = useful_rules(D, semantics)
    applied = applied_rules_brute_force(D, max_len=D.max_rule_len + 1, semantics=semantics)
    assert {i for i, u in enumerate(useful) if u} == applied


@given(_rules, st.data())
def test_remark_5_swapping_independent_neighbours(rules, data) -> None:
    D = Dictionary.of(rules)
    pairs = [i for i in range(len(D) - 1) if independent(D.rules[i], D.rules[i + 1])]
    assume(pairs)
    i = data.draw(st.sampled_from(pairs))
    swapped = list(D.rules)
    swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
    D2 = Dictionary.of(swapped)
    for w in data.draw(st.lists(st.text("abc", max_size=12), min_size=1, max_size=10)):
        assert tokenize_sp(D, w) == tokenize_sp(D2, w)


def test_doctests() -> None:
    assert doctest.testmod(merge_rules).failed == 0
