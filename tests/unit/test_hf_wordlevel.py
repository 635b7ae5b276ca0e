"""``WordLevel`` tokenizer.json models (one token per pre-token, the unknown token for a word
not in the vocabulary) equal HuggingFace ``tokenizers``: whole encodes of real and random text,
and :class:`Document` edits, for pipelines built with ``tokenizers`` itself and saved as it
saves them (no real file in the test data uses WordLevel).
"""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from livetok.incremental import Document

from .._refs import real_text
from ..conftest import EXAMPLES

tokenizers = pytest.importorskip("tokenizers")

TEXT = real_text(60_000) + "\nGrüße aus Köln! 東京 naïve café 🙂 x=1+2; ÉCOLE\n"


def _pipeline(kind: str):
    """A WordLevel tokenizer over the words of the first half of ``TEXT`` (so the second half
    has unknown words too), with one of the pre-tokenizers WordLevel files use."""
    norm = tokenizers.normalizers.Sequence([tokenizers.normalizers.NFD(),
                                            tokenizers.normalizers.Lowercase()])
    pre = {"whitespace": tokenizers.pre_tokenizers.Whitespace(),
           "whitespace_split": tokenizers.pre_tokenizers.WhitespaceSplit(),
           "bert": tokenizers.pre_tokenizers.BertPreTokenizer()}[kind]
    words = sorted({w for w, _ in pre.pre_tokenize_str(norm.normalize_str(TEXT[:30_000]))})
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = norm
    tok.pre_tokenizer = pre
    tok.add_tokens([tokenizers.AddedToken("<sep>", normalized=False)])
    return tok


def _ours(tok):
    from livetok.incremental.hf.reader import tokenizer_from_dict

    return tokenizer_from_dict(json.loads(tok.to_str()), name="wordlevel", source="wl.json")


KINDS = ["whitespace", "whitespace_split", "bert"]


@pytest.mark.parametrize("kind", KINDS)
def test_real_text_is_exact(kind: str) -> None:
    tok = _pipeline(kind)
    enc = _ours(tok)
    text = TEXT + " <sep> end<sep>"
    want = tok.encode(text, add_special_tokens=False).ids
    assert want.count(0) > 100  # the second half has unknown words
    assert enc.encode(text) == want
    assert enc.count(text) == len(want)


@settings(max_examples=EXAMPLES, derandomize=True)
@given(text=st.lists(st.sampled_from(["the", "The", " ", "  ", "\n", "def", "(", ")", "x",
                                      "zzq", "é", "e\u0301", "<sep>", "<se", "p>", "東京",
                                      "🙂", ".", "..", "_", "0", "42"]),
                     max_size=20).map("".join))
def test_random_text_is_exact(text: str) -> None:
    for kind, (tok, enc) in _BUILT.items():
        assert enc.encode(text) == tok.encode(text, add_special_tokens=False).ids, (kind, text)


_BUILT = {k: (t, _ours(t)) for k, t in ((k, _pipeline(k)) for k in KINDS)}


@pytest.mark.parametrize("kind", KINDS)
def test_document_edits_are_exact(kind: str) -> None:
    tok, enc = _BUILT[kind]
    rng = random.Random(17)
    text = TEXT[:20_000]
    doc = Document(text, encoding=enc)
    words = re.findall(r"\S+|\s+", TEXT[30_000:40_000]) + ["<sep>", "zzq", "é", "\n\n"]
    for _ in range(max(20, EXAMPLES)):
        a = rng.randrange(len(text) + 1)
        b = min(len(text), a + rng.choice([0, 0, 1, 3, 12]))
        ins = "".join(rng.choice(words) for _ in range(rng.choice([0, 1, 1, 2, 5])))
        doc.edit(a, b, ins)
        text = text[:a] + ins + text[b:]
        assert doc.token_ids() == tok.encode(text, add_special_tokens=False).ids
    doc._check()


def test_loaded_from_a_file_and_again_from_the_vocabulary_cache(tmp_path, monkeypatch, caplog):
    from livetok.incremental.vocab import parse_store as vocab_cache
    from livetok.incremental.hf import reader

    monkeypatch.setenv(vocab_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    tok = _BUILT["bert"][0]
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    calls = []
    real = reader._prepare
    monkeypatch.setattr(reader, "_prepare", lambda data, source: calls.append(1) or real(data, source))
    want = tok.encode(TEXT, add_special_tokens=False).ids
    with caplog.at_level("WARNING"):
        for _ in range(2):
            assert reader.load_tokenizer_json(path).encode(TEXT) == want
    assert len(calls) == 1, "the second load should come from the cache"
    assert not caplog.records, [r.getMessage() for r in caplog.records]
