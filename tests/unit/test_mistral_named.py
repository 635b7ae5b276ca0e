"""The named SentencePiece encodings of ``mistral-common`` (``mistral-sp-240216``, and v3/v7 with
their user-defined pieces: ``mistral-sp-240323``, ``mistral-sp-241114``) against
``sentencepiece.SentencePieceProcessor`` on the same model file, whole texts and document
edits; what the family still refuses says so."""

from __future__ import annotations

import functools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental import Document, get_encoding, list_encodings
from livetok.incremental.samples import corpora as corpus
from livetok.incremental.vocab.find import find_mistral_data
from livetok.incremental.names.registry import ALIASES, _MISTRAL_SP, _sentencepiece_model
from livetok.incremental.sentencepiece.encoding import SentencePieceEncoding, SentencePieceModelError

from ..conftest import EXAMPLES

spm = pytest.importorskip("sentencepiece")

NAMES = ["mistral-sp-240216", "mistral-sp-240323", "mistral-sp-241114"]
ALIAS = {"mistral-sp-240216": "mistral-v2", "mistral-sp-240323": "mistral-v3",
         "mistral-sp-241114": "mistral-v7"}
pytestmark = pytest.mark.skipif(
    any(find_mistral_data(_MISTRAL_SP[n]) is None for n in NAMES),
    reason="mistral-common missing: pip install --no-deps mistral-common")

#: the control markers (plain text to SentencePiece), the user-defined pieces of v3/v7,
#: fragments of them, and what glues to them
MARKERS = ["[INST]", "[/INST]", "[TOOL_CALLS]", "[REF]", "[/REF]", "[REFERENCE_DOC_1]",
           "[REFERENCE_DOC_10]", "[REFERENCE_DOC_19]", "</s>"]
TEXT = st.lists(st.sampled_from(list("ab Zé\u0301\n\t 中文😀[]/<>INST12_0") + MARKERS + [
    "[REF", "REF]", "[REFERENCE_DOC_", "DOC_1]", "  ", "\u2581"]), max_size=40).map("".join)


@functools.lru_cache(maxsize=None)
def _sp(name: str) -> object:
    return spm.SentencePieceProcessor(model_file=str(find_mistral_data(_MISTRAL_SP[name])))


@pytest.mark.parametrize("name", NAMES)
def test_listed_and_aliased(name: str) -> None:
    assert name in list_encodings(found=False)
    assert ALIASES[ALIAS[name]] == name
    assert get_encoding(ALIAS[name]) is get_encoding(name)


@pytest.mark.parametrize("name", NAMES)
def test_equals_sentencepiece_on_real_text(name: str) -> None:
    sp = _sp(name)
    enc = get_encoding(name)
    text = corpus.stdlib_text(100_000) + "\n".join(["中文字符测试" * 20, "Ünïcödé e\u0301 😀🎉",
                                                    "[INST] hi [/INST]</s>", *MARKERS])
    assert enc.encode(text) == sp.encode(text)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=EXAMPLES)
@given(text=TEXT)
def test_equals_sentencepiece_on_generated_text(name: str, text: str) -> None:
    enc = get_encoding(name)
    want = _sp(name).encode(text)  # type: ignore[attr-defined]
    assert enc.encode(text) == want
    assert [i for s, e in enc.split(text)
            for i in enc.encode_piece(text[s:e], at_text_start=s == 0)] == want


def test_user_defined_pieces_are_single_tokens() -> None:
    v3, v7 = get_encoding("mistral-sp-240323"), get_encoding("mistral-sp-241114")
    assert len(v3.user_defined) == 20 and len(v7.user_defined) == 22
    assert get_encoding("mistral-sp-240216").user_defined == ()
    text = "x[REFERENCE_DOC_1]0]"
    assert v3.encode(text) == v7.encode(text) == _sp("mistral-sp-240323").encode(text)  # type: ignore[attr-defined]
    assert [v7.id_to_piece(i) for i in v7.encode(text)] == ["▁x", "[REFERENCE_DOC_1]", "0", "]"]
    # [REF] is user-defined in v7 only; [INST] is a control piece: plain text to both
    assert [v7.id_to_piece(i) for i in v7.encode("a[REF]b")] == ["▁a", "[REF]", "b"]
    assert [v3.id_to_piece(i) for i in v3.encode("a[REF]b")] == ["▁a", "[", "REF", "]", "b"]
    assert v7.encode("[INST]") == v3.encode("[INST]") and len(v7.encode("[INST]")) > 1
    # a piece boundary around each match ("0]" joins: the pair is inside [REFERENCE_DOC_10])
    assert [text[s:e] for s, e in v7.split(text)] == ["x", "[REFERENCE_DOC_1]", "0]"]


@pytest.mark.parametrize("name", NAMES)
def test_document_edits_stay_exact(name: str) -> None:
    sp = _sp(name)
    rng = random.Random(41)
    text = corpus.stdlib_text(20_000)
    doc = Document(text, encoding=get_encoding(name))
    for _ in range(max(40, EXAMPLES)):
        a = rng.randint(0, len(text))
        b = min(len(text), a + rng.choice([0, 0, 1, 3]))
        new = rng.choice(["", "x", " ", "\n", "中文", "é", "  the", "[REF]", "]", "[", "_1"])
        doc.edit(a, b, new)
        text = text[:a] + new + text[b:]
        assert doc.token_ids() == sp.encode(text)  # type: ignore[attr-defined]
    doc._check()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("marker", ["[INST]", "[REF]", "[/REF]", "[REFERENCE_DOC_1]"])
def test_typing_and_breaking_a_marker(name: str, marker: str) -> None:
    """Type a marker one character at a time inside a line (and glued to words, spaces,
    brackets), then delete its first character, then its last: exact after every keystroke."""
    sp = _sp(name)
    text = "see (([" * 12 + " word" + "]]))" * 12 + "\nnext line"
    at = text.index(" word") + 1
    doc = Document(text, encoding=get_encoding(name))
    for k, c in enumerate(marker):
        doc.edit(at + k, at + k, c)
        text = text[:at + k] + c + text[at + k:]
        assert doc.token_ids() == sp.encode(text), (marker, k)  # type: ignore[attr-defined]
    for a in (at, at + len(marker) - 2):
        doc.edit(a, a + 1, "")
        text = text[:a] + text[a + 1:]
        assert doc.token_ids() == sp.encode(text)  # type: ignore[attr-defined]
    doc._check()


def test_unsupported_model_types_are_refused_with_the_reason() -> None:
    path = find_mistral_data(_MISTRAL_SP["mistral-sp-241114"])
    model = _sentencepiece_model(str(path))
    model.trainer_spec.model_type = 1  # unigram
    with pytest.raises(SentencePieceModelError, match="BPE models only"):
        SentencePieceEncoding(model, name="v", source=str(path))


def test_without_mistral_common_the_error_says_how_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from livetok.incremental.names import registry
    from livetok.incremental.vocab.readers import VocabularyError

    monkeypatch.setattr(registry, "find_mistral_data", lambda filename: None)
    for name in NAMES:
        with pytest.raises(VocabularyError, match="pip install mistral-common"):
            registry._mistral_sp(name)()
