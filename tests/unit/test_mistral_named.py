"""The named SentencePiece encodings of ``mistral-common`` (``mistral-sp-240216``) against
``sentencepiece.SentencePieceProcessor`` on the same model file, whole texts and document
edits; and the models the family refuses (v3, v7: user-defined pieces) say so."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental import Document, get_encoding, list_encodings
from livetok.incremental.analysis import corpus
from livetok.incremental.find import find_mistral_data
from livetok.incremental.registry import _MISTRAL_SP, _sentencepiece_model
from livetok.incremental.sentencepiece.encoding import SentencePieceEncoding, SentencePieceModelError

from ..conftest import EXAMPLES

spm = pytest.importorskip("sentencepiece")

NAME = "mistral-sp-240216"
PATH = find_mistral_data(_MISTRAL_SP[NAME])
pytestmark = pytest.mark.skipif(
    PATH is None, reason="mistral-common missing: pip install --no-deps mistral-common")

TEXT = st.lists(st.sampled_from(list("ab Zé\u0301\n\t 中文😀[]/<>INST12") + [
    "[INST]", "</s>", "  ", "\u2581"]), max_size=40).map("".join)


def _sp() -> object:
    return spm.SentencePieceProcessor(model_file=str(PATH))


def test_listed_and_aliased() -> None:
    assert NAME in list_encodings(found=False)
    assert get_encoding("mistral-v2") is get_encoding(NAME)


def test_equals_sentencepiece_on_real_text() -> None:
    sp = _sp()
    enc = get_encoding(NAME)
    text = corpus.stdlib_text(100_000) + "\n".join(["中文字符测试" * 20, "Ünïcödé e\u0301 😀🎉",
                                                    "[INST] hi [/INST]</s>"])
    assert enc.encode(text) == sp.encode(text)  # type: ignore[attr-defined]


@settings(max_examples=EXAMPLES)
@given(text=TEXT)
def test_equals_sentencepiece_on_generated_text(text: str) -> None:
    assert get_encoding(NAME).encode(text) == _SP.encode(text)  # type: ignore[attr-defined]


def test_document_edits_stay_exact() -> None:
    sp = _sp()
    rng = random.Random(41)
    text = corpus.stdlib_text(20_000)
    doc = Document(text, encoding=NAME)
    for _ in range(max(40, EXAMPLES)):
        a = rng.randint(0, len(text))
        b = min(len(text), a + rng.choice([0, 0, 1, 3]))
        new = rng.choice(["", "x", " ", "\n", "中文", "é", "  the"])
        doc.edit(a, b, new)
        text = text[:a] + new + text[b:]
        assert doc.token_ids() == sp.encode(text)  # type: ignore[attr-defined]
    doc._check()


@pytest.mark.parametrize("filename", ["mistral_instruct_tokenizer_240323.model.v3",
                                      "mistral_instruct_tokenizer_241114.model.v7"])
def test_models_with_user_defined_pieces_are_refused_with_the_reason(filename: str) -> None:
    path = find_mistral_data(filename)
    if path is None:
        pytest.skip(f"{filename} is not in this mistral-common")
    with pytest.raises(SentencePieceModelError, match="user-defined pieces"):
        SentencePieceEncoding(_sentencepiece_model(str(path)), name="v", source=str(path))


_SP = _sp() if PATH is not None else None


def test_without_mistral_common_the_error_says_how_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from livetok.incremental import registry
    from livetok.incremental.load import VocabularyError

    monkeypatch.setattr(registry, "find_mistral_data", lambda filename: None)
    with pytest.raises(VocabularyError, match="pip install mistral-common"):
        registry._mistral_sp(NAME)()
