"""The real tokenizer.json test files (tests/_tokenizer_files.py) are there and right: each
loads with HuggingFace `tokenizers` and encodes text the way its model does. Only a check of
the data, for issue 17's reader tests to build on."""

from __future__ import annotations

import unicodedata

import pytest
from tokenizers import Tokenizer

from .._hf_encodings import params, reference
from .._refs import real_text, tiktoken_ref
from .._tokenizer_files import FILES, installed, tekken_ranks

SAMPLE = (
    "Hello world! It's 2024 and WE'LL see — naïve café, Straße, ΟΔΥΣΣΕΥΣ.\n"
    "東京タワーは高さ333メートルです。北京欢迎你。 한국어 텍스트. مرحبا بالعالم\n"
    "emoji 😀👍🏽 and flags 🇫🇷, e\u0301 combining, digits 1234567890\n"
    "def f(x):\n\treturn x ** 2  # two spaces\n\n\n    indented    runs\t\ttabs\n"
)


def _load(name: str) -> Tokenizer:
    """``Tokenizer.from_file`` of the verified file, padding and truncation off
    (all-MiniLM-L6-v2's file pads and truncates to 128: counts never do); loaded once per
    process and shared with the other tokenizer.json tests (``tests/_hf_encodings.py``)."""
    tok: Tokenizer = reference(name)
    return tok


# gpt-oss, Mistral Nemo and Llama 3.1 under slow (_hf_encodings.SLOW_NAMES: their pipeline is
# another file's; Mistral Nemo's file is checked in the default run by the test after this)
@pytest.mark.parametrize("name", params(sorted(FILES)))
def test_loads_and_encodes(name: str) -> None:
    tok = _load(name)
    ids = tok.encode(SAMPLE, add_special_tokens=False).ids
    assert len(ids) > 20
    assert max(ids) < tok.get_vocab_size(with_added_tokens=True)
    back = tok.decode(ids, skip_special_tokens=False)
    if FILES[name].lossless:
        assert back == SAMPLE
    elif name == "qwen3":  # NFC normalizer
        assert back == unicodedata.normalize("NFC", SAMPLE)
    elif name == "llama2":  # lossless except for the leading "▁" the decoder strips
        assert tok.decode(tok.encode("x" + SAMPLE, add_special_tokens=False).ids) == "x" + SAMPLE
    else:
        assert back.strip()


# a few ids that identify the vocabulary of the lossy (normalizing) files
KNOWN_IDS = {
    "bert": ("hello world", [7592, 2088]),  # bert-base-uncased
    "xlmr": ("Hello world", [35378, 8999]),  # xlm-roberta-base
    "llama3": ("Hello world", [9906, 1917]),
    "gpt4o": ("Hello world", [13225, 2375]),  # tiktoken's o200k_base
}


@pytest.mark.parametrize("name", sorted(KNOWN_IDS))
def test_known_ids(name: str) -> None:
    text, want = KNOWN_IDS[name]
    assert _load(name).encode(text, add_special_tokens=False).ids == want


def test_gpt4o_file_is_o200k_base() -> None:
    """The npm gpt4o file encodes like tiktoken on livetok's own o200k_base ranks."""
    tok = _load("gpt4o")
    text = SAMPLE + real_text(20000)
    assert tok.encode(text, add_special_tokens=False).ids == tiktoken_ref("o200k_base").encode_ordinary(text)


def test_mistral_nemo_file_is_tekken() -> None:
    """The derived HuggingFace form of tekken_240718.json encodes like tiktoken run on the
    Tekken ranks (ids shifted by the 1,000 special tokens)."""
    tiktoken = pytest.importorskip("tiktoken")
    tok = _load("mistral_nemo")
    src = installed(FILES["mistral_nemo"])
    assert src is not None
    ranks, pattern, n_special = tekken_ranks(src)
    assert n_special == 1000
    enc = tiktoken.Encoding("tekken", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    text = SAMPLE + real_text(20000)
    want = [i + n_special for i in enc.encode_ordinary(text)]
    assert tok.encode(text, add_special_tokens=False).ids == want
    assert tok.encode("[INST]", add_special_tokens=False).ids == [3]
