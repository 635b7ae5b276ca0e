"""Loading a ``tokenizer.json``: what the vocabulary cache keeps of it (``incremental/hf/reader.py``).

A load from the cache (``prepare``'s payload: the model's tables, the added tokens, the
sections) gives the encoding a parse gives, with HuggingFace's ids; the cache is keyed by the
file's bytes (an edited file is prepared again), a damaged entry is rebuilt, ``LIVETOK_CACHE=0``
writes nothing, and a file with an error raises it every time and is never cached. The
cache's own rules (trust, keys, atomic writes) are ``test_parse_store.py``'s.
"""

from __future__ import annotations

import gc
import json
import marshal
import random
import re
from pathlib import Path
from typing import Any

import pytest
import regex

from livetok.incremental.vocab import parse_store as vocab_cache
from livetok.incremental.gcpause import collector_paused
from livetok.incremental.hf import reader
from livetok.incremental.hf.added import trie_pattern
from livetok.incremental.hf.bpe import BPEModel, bpe_tables
from livetok.incremental.hf.errors import UnsupportedComponent
from livetok.incremental.hf.unigram import UnigramModel, unigram_tables

from .._hf_encodings import code_text, hf_ids, multilingual_text
from .._tokenizer_files import tokenizer_file
from .test_parse_store import _files, cache  # noqa: F401  (cache: the tmp cache folder fixture)


def _no_prepare(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make preparing a parsed file fail, so that a load that succeeds came from the cache."""
    def refuse(data: Any, source: str) -> Any:
        raise AssertionError("prepared from the file, not read from the cache")

    monkeypatch.setattr(reader, "_prepare", refuse)


#: a small BPE file with byte fallback, an added token and a normalizer (Gemma's shape)
TOY: dict[str, Any] = {
    "version": "1.0",
    "added_tokens": [{"id": 7, "content": "<x>", "special": True}],
    "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    "pre_tokenizer": None,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "▁": 3, "<0x63>": 4,
                                       "▁ab": 5, "<unk>": 6},
              "merges": ["a b", "▁ ab"], "byte_fallback": True, "unk_token": "<unk>"},
}


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["llama2", "xlmr", "qwen3"])
def test_a_cached_load_equals_a_parse_and_huggingface(
        name: str, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tokenizer_file(name)
    text = (multilingual_text(3000) + code_text(3000) + " <think>\n</think> <unk> <s>\t\t  x")
    parsed = reader.tokenizer_from_dict(json.loads(path.read_text(encoding="utf-8")),
                                        name=name, source=str(path))
    cold = reader.load_tokenizer_json(path, name=name)
    assert len(_files(cache)) == 1
    _no_prepare(monkeypatch)
    warm = reader.load_tokenizer_json(path, name=name)
    want = hf_ids(name, text)
    assert parsed.encode(text) == cold.encode(text) == warm.encode(text) == want
    assert warm.n_vocab == parsed.n_vocab and warm.name == name
    if name == "qwen3":  # the byte-level path (NFC: hf/bytelevel_nfc.py) keeps no string vocabulary
        return
    model, ref = warm.model, parsed.model  # type: ignore[attr-defined]
    assert model.token_to_id == ref.token_to_id and model.id_to_token == ref.id_to_token
    assert list(model.token_to_id) == list(ref.token_to_id)  # the order too
    warm._check()


def test_the_cache_holds_the_prepared_tables(cache: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "tokenizer.json", TOY)
    enc = reader.load_tokenizer_json(path)
    assert enc.encode("ab ab<x>c?") == [2, 5, 7, 4, 6]
    assert enc.name == tmp_path.name
    [entry] = _files(cache)
    payload = reader.prepare(json.loads(path.read_text(encoding="utf-8")), source=str(path))
    assert marshal.loads(marshal.dumps(payload)) == payload  # plain values
    assert payload["model"]["rules"] == {0 * 7 + 1: 0 * 7 + 2, 3 * 7 + 2: 1 * 7 + 5}  # M = 7
    assert payload["added"] == [("<x>", 7, True, False, False, False, False)]
    _no_prepare(monkeypatch)
    assert reader.load_tokenizer_json(path, name="t").encode("ab ab<x>c?") == [2, 5, 7, 4, 6]


def test_an_edited_file_is_prepared_again(cache: Path, tmp_path: Path) -> None:
    path = _write(tmp_path / "toy.json", TOY)
    assert reader.load_tokenizer_json(path).encode("ab") == [2]
    edited = json.loads(json.dumps(TOY))
    edited["model"]["merges"] = ["▁ ab"]  # no "a b" rule: ab stays two tokens
    _write(path, edited)
    assert reader.load_tokenizer_json(path).encode("ab") == [0, 1]
    assert len(_files(cache)) == 1  # one entry per file, overwritten


def test_a_damaged_entry_is_rebuilt(cache: Path, tmp_path: Path,
                                    caplog: pytest.LogCaptureFixture) -> None:
    path = _write(tmp_path / "toy.json", TOY)
    reader.load_tokenizer_json(path)
    [entry] = _files(cache)
    good = entry.read_bytes()
    entry.write_bytes(good[:-5] + bytes(b ^ 0xFF for b in good[-5:]))
    with caplog.at_level("WARNING", logger="livetok.incremental.vocab.parse_store"):
        assert reader.load_tokenizer_json(path).encode("ab ab") == [2, 5]
    assert "corrupt" in caplog.text
    assert entry.read_bytes() == good
    entry.write_bytes(good[:100])  # truncated
    assert reader.load_tokenizer_json(path).encode("ab ab") == [2, 5]
    assert entry.read_bytes() == good


def test_an_entry_of_another_shape_is_rebuilt(cache: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "toy.json", TOY)
    calls = []
    real = reader._prepare

    def counting(data: Any, source: str) -> Any:
        calls.append(source)
        return real(data, source)

    monkeypatch.setattr(reader, "_prepare", counting)
    reader.load_tokenizer_json(path)
    reader.load_tokenizer_json(path)
    assert len(calls) == 1
    assert not reader._is_payload({"model": {"type": "Nope"}, "added": [],
                                   "model_cuts": True})
    assert not reader._is_payload({"bert": []}) and not reader._is_payload([])


def test_the_cache_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    monkeypatch.setenv(vocab_cache.CACHE_DIR_ENV, str(folder))
    monkeypatch.setenv(vocab_cache.CACHE_SWITCH_ENV, "0")
    path = _write(tmp_path / "toy.json", TOY)
    assert reader.load_tokenizer_json(path).encode("ab ab") == [2, 5]
    assert not folder.exists()


def test_an_unsupported_file_raises_each_time_and_is_not_cached(cache: Path,
                                                                tmp_path: Path) -> None:
    bad = json.loads(json.dumps(TOY))
    bad["model"]["merges"] = ["a c"]
    path = _write(tmp_path / "bad.json", bad)
    for _ in range(2):
        with pytest.raises(UnsupportedComponent, match="merge 0"):
            reader.load_tokenizer_json(path)
    bad["normalizer"] = {"type": "Nope"}  # the normalizer's error first, as before
    _write(path, bad)
    with pytest.raises(UnsupportedComponent, match="Nope"):
        reader.load_tokenizer_json(path)
    assert _files(cache) == []


def test_a_cached_file_whose_encoding_fails_fails_from_the_cache_too(
        cache: Path, tmp_path: Path) -> None:
    # the payload is fine; the encoding refuses a normalized added token the normalizer changes
    data = json.loads(json.dumps(TOY))
    data["added_tokens"] = [{"id": 7, "content": "a b", "special": False, "normalized": True}]
    path = _write(tmp_path / "t.json", data)
    for _ in range(2):
        with pytest.raises(UnsupportedComponent, match="normalized=true"):
            reader.load_tokenizer_json(path)


def test_tables_rebuild_the_same_models() -> None:
    spec = TOY["model"]
    a, b = BPEModel(spec, source="t"), BPEModel.from_tables(
        marshal.loads(marshal.dumps(bpe_tables(spec, source="t"))), source="t")
    for s in ["abab", "c", "▁ab▁x", "xyz"]:
        assert a.tokenize(s) == b.tokenize(s)
    assert vars(a).keys() == vars(b).keys() and a.scan_exact == b.scan_exact
    b._check()
    uspec = {"unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0], ["b", -1.0], ["ab", -1.5]]}
    u = UnigramModel.from_tables(marshal.loads(marshal.dumps(unigram_tables(uspec, source="t"))),
                                 source="t")
    assert u.tokenize("abxab") == UnigramModel(uspec, source="t").tokenize("abxab") == [3, 0, 3]
    u._check()


def test_the_added_token_trie_matches_alike_in_re_and_regex() -> None:
    """The trie is compiled by ``re`` (fast to compile); ``regex`` read it the same way."""
    rng = random.Random(17)
    for _ in range(200):
        words = list({"".join(rng.choices("ab<>\n▁", k=rng.randint(1, 5)))
                      for _ in range(rng.randint(1, 12))})
        text = "".join(rng.choices("ab<>\n▁x", k=60))
        pat = trie_pattern(words)
        got = [m.span() for m in re.finditer(pat, text)]
        assert got == [m.span() for m in regex.finditer(pat, text)]
        # leftmost-longest, non-overlapping: the reference scan
        want, i = [], 0
        while i < len(text):
            hit = max((w for w in words if text.startswith(w, i)), key=len, default=None)
            if hit is None:
                i += 1
            else:
                want.append((i, i + len(hit)))
                i += len(hit)
        assert got == want


def test_collector_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), collector_paused():
        raise KeyError
    assert gc.isenabled()


def test_the_pairs_of_a_local_pipeline_are_cached(cache: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemma's and Llama 2's pieces are cut by the model's pairs: the payload holds them."""
    byte_level = json.loads(json.dumps(TOY))
    byte_level["pre_tokenizer"] = {"type": "ByteLevel"}
    payload = reader.prepare(byte_level, source="t")
    assert "pairs" not in payload["model"]  # built when a long pre-token asks
    path = _write(tmp_path / "toy.json", TOY)
    cold = reader.load_tokenizer_json(path)
    _no_prepare(monkeypatch)
    warm = reader.load_tokenizer_json(path)
    pairs = warm.model._pairs  # type: ignore[attr-defined]
    assert pairs is not None and pairs == BPEModel(TOY["model"], source="t").joinable_pairs()
    text = "ab ab▁ab<x>cab xab"
    assert list(warm.split(text)) == list(cold.split(text))
