"""Byte-level ``tokenizer.json`` files as byte-level encodings (``incremental/hf/
bytelevel_file.py``, issue 27): which files take the route, and that they stay exact.

* :func:`route` takes Llama 3, GPT-4o, gpt-oss, Mistral Nemo and DeepSeek V3 (its three
  splits compiled into one pattern), and leaves Qwen 3 (NFC) to the general pipeline;
  ``protocol.byte_level`` answers for the routed ones (the document's byte-level path applies);
* :func:`tiles` on patterns that tile and ones that leave gaps;
* toy files built with HuggingFace ``tokenizers`` whose merge order is *not* the order of
  their tokens' ids (priority belongs to the pair), with added tokens that are prefixes of one
  another: ids, decode and documents under random edits equal HuggingFace's;
* the real files: a document under random edits in hostile alphabets (runs, spaces, digits,
  token fragments) equals HuggingFace after every few edits (``LIVETOK_EXAMPLES`` scales it).
"""

from __future__ import annotations

import json
import pickle
import random
from typing import Any

import pytest

from livetok.incremental import Document
from livetok.incremental.hf.bytelevel_file import ByteLevelFile, route, tiles
from livetok.incremental.hf.reader import tokenizer_from_dict
from livetok.incremental.piece_encoding import byte_level

from .._edits import random_edit
from .._hf_encodings import encoding, hf_ids, params, reference
from ..conftest import EXAMPLES

tokenizers = pytest.importorskip("tokenizers")

ROUTED = ["llama3", "gpt4o", "gptoss", "mistral_nemo", "deepseek_v3"]


@pytest.mark.parametrize("name", ["llama3", "gpt4o", "qwen3", "deepseek_v3"])
def test_which_real_files_take_the_route(name: str) -> None:
    enc = encoding(name)
    assert (type(enc) is ByteLevelFile) == (name in ROUTED)
    assert (byte_level(enc) is not None) == (name in ROUTED)


def test_tiles() -> None:
    assert tiles(r"(?i:'s|'t)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    assert tiles(r"\p{L}+|\p{N}|\s|[^\s\p{L}\p{N}]")
    assert not tiles(r"\p{L}+|\p{N}+|\s+")  # punctuation is a gap
    assert not tiles(r"\p{L}{2,}|\p{N}|\s|[^\s\p{L}\p{N}]")  # a lone letter is a gap
    assert not tiles(r"\p{L}+(?=x)|\p{N}|\s|[^\s\p{L}\p{N}]")  # look-ahead: not sure
    # a possessive prefix that can take the class's character: not sure to match
    assert not tiles(r"\p{L}?+\p{L}|\p{N}|\s|[^\s\p{L}\p{N}]")
    assert tiles(r"\p{N}?+\p{L}|\p{L}|\p{N}|\s|[^\s\p{L}\p{N}]")
    # a hostile file's hundreds of alternatives are not looked at (each is a pass over every
    # code point): it keeps the general pipeline
    many = "|".join(f"b?+[{chr(0x4E00 + i)}]+" for i in range(600))
    assert not tiles(many + r"|\s+|\p{L}+|\p{N}+|[^\s\p{L}\p{N}]+")


_PATTERN = (r"(?i:'s|'t|'re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
            r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def _toy(seed: int, ignore_merges: bool) -> tuple[Any, Any]:
    """A byte-level BPE file over a small alphabet whose merges are in a random order (the
    ids are the order tokens were made in, the priorities another), with added tokens."""
    rng = random.Random(seed)
    bytes_to_unicode = tokenizers.pre_tokenizers.ByteLevel.alphabet()
    vocab = {c: i for i, c in enumerate(sorted(bytes_to_unicode))}
    letters = ["a", "b", "c", "Ġ", "Ċ", "1", "2", "<", "|", ">"]
    merges: list[tuple[str, str]] = []
    toks = list(letters)
    for _ in range(60):
        a, b = rng.choice(toks), rng.choice(toks)
        if a + b in vocab or len(a + b) > 6:
            continue
        vocab[a + b] = len(vocab)
        merges.append((a, b))
        toks.append(a + b)
    rng.shuffle(merges)  # priorities are not the ids' order
    model = tokenizers.models.BPE(vocab=vocab, merges=merges, ignore_merges=ignore_merges)
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.Split(tokenizers.Regex(_PATTERN), "isolated"),
        tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.add_special_tokens(["<|a|>", "<|ab|>", "<|end|>"])
    data = json.loads(tok.to_str())
    return tok, tokenizer_from_dict(data, name=f"toy{seed}", source="toy.json")


_ALPHABET = ["a", "b", "c", "ab", "abc", " ", "  ", "\n", "\n\n", "1", "12", "123", "<", "|",
             ">", "<|a|>", "<|ab|>", "<|end|>", "<|", "|>", "é", "中", "'s"]


@pytest.mark.parametrize("seed", range(6))
def test_toy_files_equal_huggingface(seed: int) -> None:
    tok, enc = _toy(seed, ignore_merges=seed % 2 == 1)
    assert type(enc) is ByteLevelFile
    rng = random.Random(seed)
    for _ in range(max(20, EXAMPLES)):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 30)))
        ids = tok.encode(text, add_special_tokens=False).ids
        assert enc.encode(text) == ids, text
        assert enc._pre.piece_strings(text) == [text[a:b] for a, b in enc.split(text)]
        assert [i for p in enc.encode_by_piece(text) for i in p] == ids
        assert enc.count(text) == len(ids)
        assert enc.decode(ids) == tok.decode(ids, skip_special_tokens=False)
    doc = Document("", enc)
    text = ""
    for k in range(max(100, EXAMPLES * 4)):
        new = rng.choice(_ALPHABET) * rng.choice([1, 1, 1, 30])
        text = random_edit(rng, doc, text, new, 4)
        if k % 10 == 0:
            assert doc.token_ids() == tok.encode(text, add_special_tokens=False).ids, text
    doc._check()


def test_a_toy_without_the_route_is_the_general_pipeline() -> None:
    """The reference the horizon tests compare with: the same file, not routed."""
    tok, _ = _toy(0, ignore_merges=False)
    data = json.loads(tok.to_str())
    general = tokenizer_from_dict(data, name="toy", source="toy.json", byte_level_family=False)
    assert type(general) is not ByteLevelFile
    # a gap in the pattern: the route is refused, the file still loads
    data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\p{L}+|\s+"
    assert type(tokenizer_from_dict(data, name="gap", source="gap.json")) is not ByteLevelFile


def test_route_refuses_token_options_and_normalizers() -> None:
    tok, _ = _toy(1, ignore_merges=False)
    data = json.loads(tok.to_str())
    from livetok.incremental.hf.added import parse_added_tokens
    from livetok.incremental.hf.bpe import bpe_tables

    tables = {"type": "BPE", **bpe_tables(data["model"], source="t")}
    added = parse_added_tokens(data["added_tokens"], source="t")
    assert route(data, tables, added) is not None
    nfc = route({**data, "normalizer": {"type": "NFC"}}, tables, added)  # hf/bytelevel_nfc.py
    assert nfc is not None and nfc["normalizer"] == "NFC"
    assert route({**data, "normalizer": {"type": "NFKC"}}, tables, added) is None
    stripped = [dict(t, lstrip=True) for t in data["added_tokens"]]
    assert route(data, tables, parse_added_tokens(stripped, source="t")) is None
    assert route({**data, "decoder": None}, tables, added) is None


#: hostile stretches: runs of one letter, spaces, digits, DNA, token fragments
_HOSTILE = ["a" * 300, " " * 200, "1234567890" * 20, "".join(random.Random(4).choices("ACGT", k=300)),
            "<|eot_id|>" * 5, "<|begin_of_text|>", "\n\n\n", "中文字符" * 20, "👩‍👩‍👧‍👦" * 10]
_KEYS = ["a", "A", " ", "\n", "1", "<", "|", ">", "<|eot_id|>", "<|endoftext|>", "中", "G"]


@pytest.mark.parametrize("name", params(ROUTED))
def test_real_documents_under_random_edits(name: str) -> None:
    enc = encoding(name)
    rng = random.Random(hash(name) % 1000)
    text = "The quick brown fox. " + "".join(_HOSTILE) + " def f(x):\n    return x\n"
    doc = Document(text, enc)
    for k in range(max(60, EXAMPLES * 3)):
        text = random_edit(rng, doc, text, rng.choice(_KEYS), 3)
        if k % 15 == 0:
            assert doc.token_ids() == hf_ids(name, text), (k, text)
    assert doc.token_ids() == hf_ids(name, text)
    doc._check()


def test_real_file_pickles_decodes_and_counts_added_tokens() -> None:
    enc = encoding("llama3")
    again = pickle.loads(pickle.dumps(enc))
    text = "<|begin_of_text|>Hello, world!<|eot_id|>  \n"
    assert again.encode(text) == enc.encode(text) == hf_ids("llama3", text)
    ids = enc.encode(text)
    assert enc.decode(ids) == reference("llama3").decode(ids, skip_special_tokens=False)
    # an added token holds its characters in a document (its code point width), as any token
    doc = Document(text, enc)
    spans = [(s, e) for _, s, e in doc.iter_tokens()]
    assert spans[0] == (0, len("<|begin_of_text|>"))
    assert spans[-1][1] == len(text) and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    info = doc.token_at(3)
    assert info is not None and info.id == ids[0]


def test_a_cached_payload_of_the_other_shape_is_not_taken() -> None:
    """A process still running older code (a server during an upgrade) writes its payload
    under the code key of the files on disk: the reader checks the shape it needs, and builds
    again instead of failing (``reader._is_payload``)."""
    from livetok.incremental.hf.reader import _is_payload, prepare

    tok, _ = _toy(2, ignore_merges=True)
    payload = prepare(json.loads(tok.to_str()), source="toy.json")
    assert payload["bytelevel"] is not None and _is_payload(payload)
    old_shape = dict(payload, model={k: v for k, v in payload["model"].items() if k != "m"})
    assert not _is_payload(old_shape)
    general = dict(payload, bytelevel=None)  # the general pipeline needs the vocabulary
    assert not _is_payload(general)
    assert not _is_payload({k: v for k, v in payload.items() if k != "bytelevel"})


def test_checks_never_take_tiktoken_for_a_tokenizer_json_reference() -> None:
    """A byte-level file has its merges' own priorities and its added tokens: ``livetok
    replay`` verifies it with its full encode, not with tiktoken on its ranks, and ``livetok
    analyze NAME`` points at the file (``Encoding.tiktoken_equivalent``)."""
    from livetok.server.cli.replay import reference_encoder

    _, enc = _toy(3, ignore_merges=False)
    assert not enc.tiktoken_equivalent
    assert reference_encoder(enc)[1] == "livetok (full encode)"
    with pytest.raises(ValueError, match="tiktoken"):
        reference_encoder(enc, "tiktoken")
