"""User-defined pieces of SentencePiece BPE models: matched before BPE (longest first, each one
token), against ``sentencepiece`` on models trained here with overlapping user-defined symbols,
the naive reference scan, and the document cuts around matches (the glue counterexample)."""

from __future__ import annotations

import functools
import io
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from livetok.incremental import Document
from livetok.incremental.samples import corpora as corpus
from livetok.incremental.vocab.find import find_mistral_data
from livetok.incremental.glue import GLUE_MIN_CP
from livetok.incremental.names.registry import _MISTRAL_SP, _sentencepiece_model
from livetok.incremental.sentencepiece._reference import encode_reference, prefix_match_naive
from livetok.incremental.sentencepiece.encoding import SentencePieceEncoding, SentencePieceModelError
from livetok.incremental.sentencepiece.model_proto import PieceType, parse_model_proto

spm = pytest.importorskip("sentencepiece")

#: overlapping on purpose: prefixes of each other ("<<", "<<<"), a suffix that starts another
#: ("abc" / "bca"), one inside another ("[R" / "[REF]"), a single character ("§")
USER_DEFINED = ["[REF]", "[R", "<<", "<<<", "abc", "bca", "§", "xyzzy"]
FRAGMENTS = USER_DEFINED + ["[", "]", "R", "EF", "<", "a", "b", "c", "ab", "bc", "ca", "x", "y",
                            "z", " ", "  ", "\n", "the", "中文", "😀", "é", "1"]
TEXT = st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join)


@functools.lru_cache(maxsize=None)
def _trained(byte_fallback: bool) -> bytes:
    lines = [ln for ln in corpus.real_text(60_000).splitlines() if ln.strip()]
    f = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=f, model_type="bpe", vocab_size=600,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        character_coverage=0.98, minloglevel=2, byte_fallback=byte_fallback,
        user_defined_symbols=USER_DEFINED,
    )
    return f.getvalue()


@pytest.fixture(scope="module", params=[True, False], ids=["bytes", "unk"])
def trained(request: pytest.FixtureRequest) -> tuple[SentencePieceEncoding, object]:
    data = _trained(request.param)
    enc = SentencePieceEncoding(parse_model_proto(data), name=f"ud-{request.param}")
    return enc, spm.SentencePieceProcessor(model_proto=data)


def test_prefix_matcher_scan_is_longest_first_and_greedy() -> None:
    got = prefix_match_naive("<<<<abca[REF]", USER_DEFINED)
    assert got == [("<<<", True), ("<", False), ("abc", True), ("a", False), ("[REF]", True)]


def test_trained_model_declares_them(trained: tuple[SentencePieceEncoding, object]) -> None:
    enc, _ = trained
    assert sorted(enc.user_defined) == sorted(USER_DEFINED)
    assert enc.supports_glue
    enc._check()


@given(TEXT)
def test_trained_models_equal_sentencepiece(
        trained: tuple[SentencePieceEncoding, object], text: str) -> None:
    enc, sp = trained
    want = sp.encode(text)  # type: ignore[attr-defined]
    assert enc.encode(text) == want
    assert [i for s, e in enc.split(text)
            for i in enc.encode_piece(text[s:e], at_text_start=s == 0)] == want
    assert encode_reference(enc, text) == want
    # split from any boundary is the tail of the split from 0
    spans = list(enc.split(text))
    for s, _ in spans[1:4]:
        assert list(enc.split(text, s)) == [sp_ for sp_ in spans if sp_[0] >= s]


def test_trained_models_document_edits(trained: tuple[SentencePieceEncoding, object]) -> None:
    enc, sp = trained
    rng = random.Random(5)
    text = corpus.real_text(6_000)
    doc = Document(text, encoding=enc)
    for _ in range(150):
        a = rng.randint(0, len(text))
        b = min(len(text), a + rng.choice([0, 0, 1, 2]))
        new = rng.choice(FRAGMENTS + [""])
        doc.edit(a, b, new)
        text = text[:a] + new + text[b:]
        assert doc.token_ids() == sp.encode(text)  # type: ignore[attr-defined]
    doc._check()


def test_a_match_made_inside_a_long_piece_is_not_glued_across() -> None:
    """Without cuts around matches, Algorithm 1 glued the old tokens ``[`` to a window
    starting ``REF``, ``]))`` (measured): the piece is now cut around ``[REF]``."""
    path = find_mistral_data(_MISTRAL_SP["mistral-sp-241114"])
    if path is None:
        pytest.skip("mistral-common missing: pip install --no-deps mistral-common")
    enc = SentencePieceEncoding(_sentencepiece_model(str(path)), name="v7", source=str(path))
    sp = spm.SentencePieceProcessor(model_file=str(path))
    text = "([" * 30 + "[REFx" + ")" * 60
    assert len(list(enc.split(text))) <= 3 and max(e - s for s, e in enc.split(text)) >= 60
    doc = Document(text, encoding=enc)
    at = text.index("x")
    doc.edit(at, at + 1, "]")
    text = text[:at] + "]" + text[at + 1:]
    assert doc.stats.glued_pieces >= 1
    assert doc.token_ids() == sp.encode(text)
    assert (at - 4, at + 1) in list(enc.split(text))
    doc._check()


def test_user_defined_pieces_with_whitespace_are_refused() -> None:
    model = parse_model_proto(_trained(True))
    i = model.types.index(PieceType.USER_DEFINED)
    model.pieces[i] = "\u2581x"
    with pytest.raises(SentencePieceModelError, match="holds whitespace"):
        SentencePieceEncoding(model, name="ws")


def test_a_user_defined_piece_as_long_as_a_glued_piece_turns_the_glue_off() -> None:
    model = parse_model_proto(_trained(True))
    i = model.types.index(PieceType.USER_DEFINED)
    model.pieces[i] = "q" * GLUE_MIN_CP
    enc = SentencePieceEncoding(model, name="long")
    assert not enc.supports_glue
    text = "a" + "q" * GLUE_MIN_CP + "b"
    sp = spm.SentencePieceProcessor(model_proto=_trained(True))
    assert len(enc.encode(text)) == 3 and enc.encode("abc") == sp.encode("abc")
