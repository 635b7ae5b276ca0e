"""LinMaxMatch (Algorithms 1-2) and E2E WordPiece (Section 4, Algorithm 3) against references.

References: the original greedy MaxMatch (``max_match_reference``), the trie-walk MaxMatch of
Section 3.2, HF ``tokenizers``' own ``WordPiece`` model, and "pre-tokenize, then Algorithm 1".
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import models

from livetok.incremental.wordpiece.bert_normalize import pre_tokenize
from livetok.incremental.wordpiece.e2e import E2EWordPiece
from livetok.incremental.wordpiece._reference import max_match_reference, max_match_trie
from livetok.incremental.wordpiece.linmaxmatch import NULL, LinMaxMatch

FIG1 = {"[UNK]": 0, "a": 1, "abcdx": 2, "##b": 3, "##c": 4, "##cdy": 5, "##dz": 6}

# Figure 1(b) of the paper, by node string: F(v) and f(v) (None = null link)
FIG1_TABLE = {
    "a": (["a"], "##"),
    "ab": (["a"], "##b"),
    "abc": (["a", "##b"], "##c"),
    "abcd": (["a", "##b"], "##cd"),
    "abcdx": (["abcdx"], "##"),
    "##b": (["##b"], "##"),
    "##c": (["##c"], "##"),
    "##cd": (["##c"], "##d"),
    "##cdy": (["##cdy"], "##"),
    "##d": None,
    "##dz": (["##dz"], "##"),
}


def _node(lmm: LinMaxMatch, s: str) -> int:
    if s.startswith("##"):
        return lmm.node(s[2:], suffix=True)
    return lmm.node(s)


def test_figure_1_failure_links_and_pops():
    lmm = LinMaxMatch(FIG1)
    lmm._check()
    for s, want in FIG1_TABLE.items():
        v = _node(lmm, s)
        assert v != NULL, s
        if want is None:
            assert lmm.fail[v] == NULL, s
        else:
            pops, f = want
            assert lmm.pops_of(v) == pops, s
            assert lmm.string(lmm.fail[v]) == f, s
    # r and r# have null failure links
    assert lmm.fail[0] == NULL and lmm.fail[1] == NULL


@pytest.mark.parametrize(
    "word,tokens",
    [
        ("abcdz", ["a", "##b", "##c", "##dz"]),  # Example 3
        ("abcz", ["[UNK]"]),  # Example 4, stuck inside the word
        ("abcd", ["[UNK]"]),  # Example 4, lands on node ##d with f = null
        ("##bc", ["##b", "##c"]),  # Section 3.3: input starting with the suffix indicator
        ("abcdx", ["abcdx"]),
        ("", []),
        ("##", ["[UNK]"]),  # the word equal to the suffix indicator
        ("aq", ["[UNK]"]),  # an unknown character
    ],
)
def test_figure_1_words(word, tokens):
    lmm = LinMaxMatch(FIG1)
    ids = lmm.tokenize(word)
    assert [lmm.id_to_token[i] for i in ids] == tokens
    assert ids == max_match_reference(word, FIG1)
    assert ids == max_match_trie(word, lmm)


@pytest.mark.parametrize(
    "vocab,word,tokens",
    [
        # the word "##": the original algorithm pops "#", then looks up "###"
        ({"[UNK]": 0, "#": 1, "###": 2}, "##", ["#", "###"]),
        ({"[UNK]": 0, "#": 1}, "##", ["[UNK]"]),
        ({"[UNK]": 0, "##": 1}, "##", ["##"]),
        # where the paper's shared r# node would disagree with the original (module docstring)
        ({"[UNK]": 0, "#": 1, "###x": 2}, "##x", ["#", "###x"]),
        ({"[UNK]": 0, "##": 1, "##x": 2, "###": 3}, "###x", ["###", "##x"]),
        ({"[UNK]": 0, "##": 1, "##x": 2}, "###x", ["[UNK]"]),
    ],
)
def test_suffix_indicator_corner_cases(vocab, word, tokens):
    lmm = LinMaxMatch(vocab)
    lmm._check()
    assert [lmm.id_to_token[i] for i in lmm.tokenize(word)] == tokens
    assert lmm.tokenize(word) == max_match_reference(word, vocab)
    hf = models.WordPiece(vocab, unk_token="[UNK]")
    assert lmm.tokenize(word) == [t.id for t in hf.tokenize(word)]


def test_max_input_chars_per_word_counts_characters():
    vocab = {"[UNK]": 0, "é": 1, "##é": 2}
    lmm = LinMaxMatch(vocab, max_input_chars_per_word=100)
    assert lmm.tokenize("é" * 100) == [1] + [2] * 99  # 200 bytes, 100 characters: allowed
    assert lmm.tokenize("é" * 101) == [0]
    hf = models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100)
    for n in (99, 100, 101):
        assert lmm.tokenize("é" * n) == [t.id for t in hf.tokenize("é" * n)]


def test_missing_unk_token_says_how_to_fix():
    with pytest.raises(ValueError, match="unk_token="):
        LinMaxMatch({"a": 0})


# -- property tests: random vocabularies --------------------------------------------------------

ALPHABET = "ab#c"


@st.composite
def vocab_and_prefix(draw):
    """A random vocabulary over a small alphabet, heavy in '#', with a random suffix indicator."""
    prefix = draw(st.sampled_from(["##", "#", "", "@@", "ab"]))
    body = st.text(alphabet=ALPHABET, min_size=1, max_size=5)
    words = draw(st.lists(body, max_size=14))
    conts = draw(st.lists(body, max_size=14))
    vocab: dict[str, int] = {"[UNK]": 0}
    for t in words + [prefix + c for c in conts]:
        vocab.setdefault(t, len(vocab))
    return vocab, prefix


WORDS = st.text(alphabet=ALPHABET, max_size=12)


@given(vp=vocab_and_prefix(), words=st.lists(WORDS, max_size=20))
def test_linmaxmatch_equals_maxmatch(vp, words):
    vocab, prefix = vp
    lmm = LinMaxMatch(vocab, suffix_indicator=prefix, max_input_chars_per_word=9)
    lmm._check()
    hf = models.WordPiece(
        vocab, unk_token="[UNK]", continuing_subword_prefix=prefix, max_input_chars_per_word=9
    )
    for w in words + [prefix, prefix + prefix, "#" + prefix]:
        want = max_match_reference(w, vocab, suffix_indicator=prefix, max_input_chars_per_word=9)
        assert lmm.tokenize(w) == want, (w, vocab, prefix)
        assert max_match_trie(w, lmm) == want
        if w:  # HF's model is never called on an empty word
            assert [t.id for t in hf.tokenize(w)] == want


@given(vp=vocab_and_prefix(), text=st.text(alphabet=ALPHABET + " .,!", max_size=40))
def test_e2e_equals_pretokenize_then_linmaxmatch(vp, text):
    vocab, prefix = vp
    for p in ".,":  # punctuation sometimes in the vocabulary, sometimes not
        if len(vocab) % 2:
            vocab.setdefault(p, len(vocab))
    lmm = LinMaxMatch(vocab, suffix_indicator=prefix, max_input_chars_per_word=6)
    e2e = E2EWordPiece(lmm, punctuation=".,!#", whitespace=" ")
    e2e._check()
    want: list[int] = []
    words = _split_words(text, punct=".,!#")
    for w in words:
        want.extend(lmm.tokenize(w))
    assert e2e.tokenize(text) == want, (text, vocab, prefix)
    spans = list(e2e.words_with_spans(text))
    assert [t for t, _, _ in spans] == want


def _split_words(text: str, punct: str) -> list[str]:
    out, cur = [], ""
    for ch in text:
        if ch == " " or ch in punct:
            if cur:
                out.append(cur)
            cur = ""
            if ch in punct:
                out.append(ch)
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def test_e2e_unknown_word_right_after_punctuation():
    # Algorithm 3 as printed loops forever here (IsWdBndry is true at i = word start)
    lmm = LinMaxMatch({"[UNK]": 0, "a": 1, ".": 2})
    e2e = E2EWordPiece(lmm, punctuation=".", whitespace=" ")
    assert e2e.tokenize(".q.a") == [2, 0, 2, 1]
    assert e2e.tokenize("q") == [0]


def test_e2e_section_4_example_and_bert_pretokenizer():
    lmm = LinMaxMatch({"[UNK]": 0, "john": 1, "johan": 2, "##son": 3, "s": 4, "'": 5})
    e2e = E2EWordPiece(lmm, punctuation="'", whitespace=" ")
    assert [lmm.id_to_token[i] for i in e2e.tokenize("john johanson's")] == [
        "john", "johan", "##son", "'", "s"
    ]
    assert pre_tokenize("john johanson's") == [(0, 4), (5, 13), (13, 14), (14, 15)]


def test_e2e_word_length_limit():
    lmm = LinMaxMatch({"[UNK]": 0, "a": 1, "##a": 2, ".": 3}, max_input_chars_per_word=100)
    e2e = E2EWordPiece(lmm, punctuation=".", whitespace=" ")
    assert e2e.tokenize("a" * 100 + ".") == [1] + [2] * 99 + [3]
    assert e2e.tokenize("a" * 101 + ".a") == [0, 3, 1]


def test_tables_rebuild_the_same_matcher_and_big_vocabularies_read_them_from_the_cache(
        tmp_path, monkeypatch):
    """``LinMaxMatch(..., tables=m.tables())`` is ``m`` without Algorithm 2; a vocabulary of
    ``CACHE_MIN_TOKENS`` or more (lowered here) keeps its tables in the vocabulary cache, so
    the second encoding built from it runs neither the trie build nor the precomputation."""
    from livetok.incremental.vocab import parse_store as vocab_cache
    from livetok.incremental.wordpiece import encoding as wp_encoding
    from livetok.incremental.wordpiece.encoding import WordPieceEncoding

    lmm = LinMaxMatch(FIG1)
    again = LinMaxMatch(FIG1, tables=lmm.tables())
    again._check()
    assert again.tables() == lmm.tables() and LinMaxMatch.valid_tables(lmm.tables())
    assert not LinMaxMatch.valid_tables((lmm.children,) * 5)

    monkeypatch.setenv(vocab_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(
        f"{a}{b}{c}" for a in "abcdefghij" for b in "klmnopqrst" for c in "uvwxyzABCDEFGHIJKLMN")}}
    vocab.update({"##" + w: len(vocab) + i for i, w in enumerate("abcdefghijklmnopqrstuvwxyz")})
    monkeypatch.setattr(wp_encoding, "CACHE_MIN_TOKENS", 1_000)  # a quicker vocabulary
    assert len(vocab) >= wp_encoding.CACHE_MIN_TOKENS > len(FIG1)
    built: list[str] = []
    real = LinMaxMatch._precompute
    monkeypatch.setattr(LinMaxMatch, "_precompute", lambda self: built.append("x") or real(self))
    text = "aku bmvz akuakv jtN ciwq zz " * 50
    first = WordPieceEncoding("big", vocab, source=str(tmp_path / "vocab.txt"))
    second = WordPieceEncoding("big", vocab, source=str(tmp_path / "vocab.txt"))
    assert built == ["x"], "the second encoding should read the tables from the cache"
    assert second.encode(text) == first.encode(text)
    assert 0 in first.encode(text)  # "zz" is unknown: the unknown token is exercised too
    small = dict(FIG1)
    WordPieceEncoding("small", small)
    WordPieceEncoding("small", small)
    assert built == ["x", "x", "x"], "a small vocabulary is built every time"
