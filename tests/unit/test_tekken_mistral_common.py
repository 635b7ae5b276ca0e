"""The named Tekken encodings follow ``mistral-common`` (issue 35, decision 4): special-token
strings in the text (``[INST]``, ``</s>``, ``<SPECIAL_20>``) are text, as tiktoken's
``encode_ordinary`` treats ``<|endoftext|>``; the HuggingFace conversion, read by path as a
``tokenizer.json``, keeps ``transformers``' semantics (each such string one token)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from livetok.incremental import Document, get_encoding
from livetok.incremental.vocab.find import find_tekken

from .._tekken_ref import mistral_common_encode

SPECIAL_TEXT = ("Hello [INST] say hi [/INST] <s>ok</s> <unk> [IMG][IMG_BREAK] <pad> "
                "[TOOL_CALLS]{\"a\": 1} <SPECIAL_20><SPECIAL_999> 你好世界 12345 ünï 🙂\n") * 3

VERSIONS = ["240718", pytest.param("240911", marks=pytest.mark.slow)]


def _path(version: str) -> Path:
    path = find_tekken(version)
    if path is None:
        pytest.skip("mistral-common is not installed (pip install --no-deps mistral-common)")
    return path


def test_the_written_out_reference_is_mistral_commons_encode() -> None:
    """Where mistral-common's Tekkenizer imports (the test extras install what it needs), the
    written-out form other installs fall back to gives its ids."""
    ref, what = mistral_common_encode(_path("240718"))
    if what != "Tekkenizer":
        pytest.skip(what)
    written, _ = mistral_common_encode(_path("240718"), written_out=True)
    assert written(SPECIAL_TEXT) == ref(SPECIAL_TEXT)


@pytest.mark.parametrize("version", VERSIONS)
def test_ids_equal_mistral_common_on_special_token_strings(version: str) -> None:
    ref, _ = mistral_common_encode(_path(version))
    enc = get_encoding(f"mistral-tekken-{version}")
    want = ref(SPECIAL_TEXT)
    assert enc.encode(SPECIAL_TEXT) == want
    # no id of a special token: every string above was encoded as text
    assert min(want) >= 1000
    assert enc.decode(want) == SPECIAL_TEXT


def test_a_document_typing_special_token_strings_equals_mistral_common() -> None:
    ref, _ = mistral_common_encode(_path("240718"))
    enc = get_encoding("mistral-nemo")
    rng = random.Random(35)
    text = "Intro line.\n"
    doc = Document(text, encoding=enc)
    for _ in range(300):
        at = rng.randrange(len(text) + 1)
        if rng.random() < 0.3 and text:
            end = min(len(text), at + rng.randrange(1, 4))
            doc.edit(at, end, "")
            text = text[:at] + text[end:]
        else:
            ins = rng.choice(("[INST]", "[/INST]", "</s>", "<s>", "<", "/", "]", "[", "s", " ",
                              "<SPECIAL_20>", "日本", "\n"))
            doc.edit(at, at, ins)
            text = text[:at] + ins + text[at:]
        assert doc.token_ids() == ref(text), text


def test_the_huggingface_conversion_by_path_keeps_transformers_semantics() -> None:
    """The pinned test file is the library's conversion of tekken_240718.json
    (``test_hf_sources.test_tekken_conversion_is_the_pinned_file``), read by path."""
    from .._tokenizer_files import tokenizer_file

    hf = get_encoding(str(tokenizer_file("mistral_nemo")))
    ids = hf.encode("[INST] hi [/INST]")
    assert ids[0] == 3 and 4 in ids  # [INST] and [/INST] are one token each there
    named = get_encoding("mistral-tekken-240718").encode("[INST] hi [/INST]")
    assert 3 not in named and 4 not in named and len(named) > len(ids)
