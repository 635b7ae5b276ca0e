"""Where tokenizer.json encodings come from (issue 17, part 2): the local Hugging Face cache
(``hf:ORG/NAME``), paths, the registry's cache of them (read again when the file changes),
and the Tekken named encodings from ``mistral-common``.

The cache lookups run on a fake cache folder (``HF_HUB_CACHE``); the registry tests stand a
small byte-level encoding in for the tokenizer.json reader, so they test the plumbing alone;
the Tekken tests use the real reader against HuggingFace ``tokenizers``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from livetok.incremental import get_encoding, list_encodings
from livetok.incremental import hf
from livetok.incremental.names import registry
from livetok.incremental.bytelevel.encoding import Encoding
from livetok.incremental.vocab.find import find_hf_tokenizer, find_tekken, hub_cache_dir, list_hf_tokenizers, split_model_id
from livetok.incremental.vocab.readers import VocabularyError

from .._tokenizer_files import installed, tokenizer_file, FILES


def _snapshot(hub: Path, repo_id: str, rev: str, *, file: bool = True, main: bool = False
              ) -> Path:
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True, exist_ok=True)
    (snap / "config.json").write_text("{}")
    if file:
        (snap / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "rev": rev}}))
    if main:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(rev)
    return snap / "tokenizer.json"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "hub"
    d.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(d))
    return d


# -- the cache folder and the lookup -------------------------------------------------------


def test_hub_cache_dir_follows_huggingface_hub(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hub_cache_dir() == tmp_path / ".cache" / "huggingface" / "hub"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub_cache_dir() == tmp_path / "xdg" / "huggingface" / "hub"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub_cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "c"))
    assert hub_cache_dir() == tmp_path / "c"


def test_refs_main_picks_the_snapshot(hub: Path) -> None:
    old = _snapshot(hub, "Org/Model", "aaaa", main=True)
    new = _snapshot(hub, "Org/Model", "bbbb")
    os.utime(new.parent, (time.time() + 100, time.time() + 100))
    assert find_hf_tokenizer("hf:Org/Model") == old
    assert find_hf_tokenizer("hf:Org/Model@bbbb") == new
    assert find_hf_tokenizer("hf:Org/Model@main") == old


def test_without_refs_main_the_newest_snapshot(hub: Path) -> None:
    a = _snapshot(hub, "Org/Model", "aaaa")
    b = _snapshot(hub, "Org/Model", "bbbb")
    now = time.time()
    os.utime(a.parent, (now + 200, now + 200))
    os.utime(b.parent, (now, now))
    assert find_hf_tokenizer("hf:Org/Model") == a


def test_refs_main_without_the_file_falls_back_to_a_snapshot_with_it(hub: Path) -> None:
    _snapshot(hub, "Org/Model", "cccc", file=False, main=True)
    b = _snapshot(hub, "Org/Model", "bbbb")
    assert find_hf_tokenizer("hf:Org/Model") == b


def test_a_model_without_org(hub: Path) -> None:
    f = _snapshot(hub, "gpt2", "abcd", main=True)
    assert find_hf_tokenizer("hf:gpt2") == f


def test_missing_model_says_where_and_how(hub: Path) -> None:
    with pytest.raises(VocabularyError) as exc:
        find_hf_tokenizer("hf:Qwen/Qwen3-4B")
    msg = str(exc.value)
    assert "not in the cache" in msg and str(hub / "models--Qwen--Qwen3-4B") in msg
    assert "huggingface-cli download Qwen/Qwen3-4B tokenizer.json" in msg
    assert "never downloads" in msg and "\n" not in msg


def test_model_without_the_file(hub: Path) -> None:
    _snapshot(hub, "Org/Model", "aaaa", file=False, main=True)
    with pytest.raises(VocabularyError, match="in the cache, but not its tokenizer.json"):
        find_hf_tokenizer("hf:Org/Model")
    no = hub / "models--Org--Model" / ".no_exist" / "aaaa"
    no.mkdir(parents=True)
    (no / "tokenizer.json").write_text("")
    with pytest.raises(VocabularyError, match="has no tokenizer.json on the Hub"):
        find_hf_tokenizer("hf:Org/Model")
    with pytest.raises(VocabularyError, match="--revision v2"):
        find_hf_tokenizer("hf:Org/Model@v2")


@pytest.mark.parametrize("bad", ["hf:", "hf:../etc", "hf:a/../b", "hf:a--b/c", "hf:a/b/c",
                                 "hf:/abs", "hf:a b", "hf:a/b@../x", "hf:a/b@"])
def test_bad_model_ids_are_refused(bad: str, hub: Path) -> None:
    with pytest.raises(VocabularyError):
        find_hf_tokenizer(bad)


def test_split_model_id() -> None:
    assert split_model_id("hf:deepseek-ai/DeepSeek-V3@refs") == ("deepseek-ai/DeepSeek-V3", "refs")
    assert split_model_id("hf:google/gemma-3-1b-it") == ("google/gemma-3-1b-it", None)


def test_listing_is_the_models_with_a_file(hub: Path) -> None:
    _snapshot(hub, "Org/Model", "aaaa", main=True)
    _snapshot(hub, "gpt2", "abcd")
    _snapshot(hub, "Org/NoTokenizer", "aaaa", file=False)
    (hub / "datasets--Org--Data").mkdir()
    (hub / "version.txt").write_text("1")
    assert list_hf_tokenizers() == ["hf:Org/Model", "hf:gpt2"]
    names = list_encodings()
    assert names[-2:] == ["hf:Org/Model", "hf:gpt2"] and "o200k_base" in names
    assert "hf:gpt2" not in list_encodings(found=False)
    described = dict(registry.describe_encodings())
    assert "Hugging Face cache" in described["hf:gpt2"]
    assert "mistral-nemo" in described["mistral-tekken-240718"]


def test_no_cache_folder_lists_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "absent"))
    assert list_hf_tokenizers() == []
    assert list_encodings() == list_encodings(found=False)


# -- the registry: names that are files, cached and read again when changed ----------------


class _Reader:
    """Stands in for ``hf.load_tokenizer_json``: a small byte-level encoding per call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def __call__(self, path: Any, *, name: str | None = None) -> Encoding:
        self.calls.append((os.fspath(path), name))
        return Encoding(name or "x", pat_str=r"\S+|\s+",
                        mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch) -> _Reader:
    r = _Reader()
    monkeypatch.setattr(hf, "load_tokenizer_json", r, raising=False)
    yield r
    with registry._LOCK:  # forget what the tests loaded
        for key in [k for k in registry._LOADED if k in registry._SIGNATURES]:
            del registry._LOADED[key]
        registry._SIGNATURES.clear()


def test_hf_id_is_read_once_and_again_when_changed(hub: Path, reader: _Reader) -> None:
    f = _snapshot(hub, "Org/Model", "aaaa", main=True)
    enc = get_encoding("hf:Org/Model")
    assert enc.name == "hf:Org/Model" and reader.calls == [(str(f), "hf:Org/Model")]
    assert get_encoding("hf:Org/Model") is enc and len(reader.calls) == 1
    assert registry.is_registered(enc)
    f.write_text(f.read_text() + " ")  # edited: another size
    again = get_encoding("hf:Org/Model")
    assert again is not enc and len(reader.calls) == 2
    assert get_encoding("hf:Org/Model") is again


def test_a_new_revision_is_read(hub: Path, reader: _Reader) -> None:
    _snapshot(hub, "Org/Model", "aaaa", main=True)
    enc = get_encoding("hf:Org/Model")
    b = _snapshot(hub, "Org/Model", "bbbb", main=True)  # refs/main moved on
    assert get_encoding("hf:Org/Model") is not enc and reader.calls[-1][0] == str(b)


def test_path_names(tmp_path: Path, reader: _Reader, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "m" / "tokenizer.json"
    f.parent.mkdir()
    f.write_text('{"model": {}}')
    enc = get_encoding(str(f))
    assert enc.name == str(f) and reader.calls == [(str(f), str(f))]
    monkeypatch.chdir(tmp_path)
    assert get_encoding("m/tokenizer.json") is enc  # the same file, by its absolute path
    other = tmp_path / "other.json"
    other.write_text('{"version": "1.0", "model": {"type": "BPE"}}')
    assert get_encoding("other.json").name == str(other)
    stat = os.stat(f)
    os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # touched: read again
    assert get_encoding(str(f)) is not enc


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(VocabularyError, match="no such file") as exc:
        get_encoding(str(tmp_path / "nope" / "tokenizer.json"))
    assert "\n" not in str(exc.value)


def test_path_argument_with_a_tokenizer_json(tmp_path: Path, reader: _Reader) -> None:
    f = tmp_path / "tok.json"
    f.write_text('{"added_tokens": [], "model": {"type": "BPE"}}')
    enc = get_encoding("mine", path=f)
    assert enc.name == "mine" and reader.calls == [(str(f), "mine")]
    assert get_encoding("mine", path=f) is enc
    assert not registry.is_registered(enc)  # get_encoding("mine") would not give it


def test_encoder_json_is_not_a_tokenizer_json(tmp_path: Path) -> None:
    enc = tmp_path / "encoder.json"
    enc.write_text('{"model": 1, "a": 2}')
    assert not registry._is_tokenizer_json(str(enc))
    assert registry._is_tokenizer_json(str(tmp_path / "tokenizer.json"))
    assert not registry.is_file_name("cl100k_base") and registry.is_file_name("./x.JSON")


def test_unknown_name_mentions_files() -> None:
    with pytest.raises(ValueError, match="tokenizer.json path.*hf:ORG/NAME"):
        get_encoding("o300k_base")


# -- Tekken, from mistral-common ----------------------------------------------------------


def test_tekken_without_mistral_common(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "find_mistral_data", lambda filename: None)
    with pytest.raises(VocabularyError, match="pip install mistral-common"):
        registry._tekken("mistral-tekken-240718")()


def test_mistral_nemo_alias() -> None:
    assert registry.ALIASES["mistral-nemo"] == "mistral-tekken-240718"
    assert {"mistral-tekken-240718", "mistral-tekken-240911"} <= set(list_encodings(found=False))


_TEXT = ("Hello world! [INST] Mistral's Tekken: 12345 ünïcödé 你好世界 🙂🙂\n\n\tcode(x)  "
         "<s></s> [/INST] ") * 3


# 240718 (Mistral Nemo) by default, 240911 under slow: the same reader on another vocabulary
@pytest.mark.parametrize("name", ["mistral-tekken-240718",
                                  pytest.param("mistral-tekken-240911", marks=pytest.mark.slow)])
def test_tekken_encodings_equal_mistral_common(name: str) -> None:
    """The named Tekken encodings count exactly like ``mistral-common``'s Tekkenizer (issue 35,
    decision 4: special-token strings in the text are text; ``tests/_tekken_ref.py``)."""
    pytest.importorskip("mistral_common")
    from .._tekken_ref import mistral_common_encode

    path = find_tekken(registry._TEKKEN[name])
    assert path is not None
    ref, _ = mistral_common_encode(path)
    enc = get_encoding(name)
    assert enc.name == name
    want = ref(_TEXT)
    assert enc.encode(_TEXT) == want
    if name == "mistral-tekken-240718":
        assert get_encoding("mistral-nemo") is enc
        assert want[:2] == [22177, 4304]  # "Hello", " world" (ids after the 1,000 specials)


def test_tekken_warm_start_reads_no_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second build reads the ranks from the vocabulary cache: no JSON parse; and it
    encodes as the first."""
    pytest.importorskip("mistral_common")
    from livetok.incremental.vocab import parse_store as vocab_cache
    from livetok.incremental.hf import tekken

    monkeypatch.setenv(vocab_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    calls: list[str] = []
    ranks = tekken.tekken_ranks
    monkeypatch.setattr(tekken, "tekken_ranks", lambda d: calls.append("ranks") or ranks(d))
    first = registry._tekken("mistral-tekken-240718")()
    assert calls == ["ranks"]
    second = registry._tekken("mistral-tekken-240718")()
    assert calls == ["ranks"], "the second build should come from the cache"
    assert second.encode(_TEXT) == first.encode(_TEXT)


def test_tekken_conversion_is_the_pinned_file() -> None:
    """tests/_tokenizer_files.py writes the library's conversion: same bytes, same SHA-256."""
    import hashlib

    src = installed(FILES["mistral_nemo"])
    if src is None:
        pytest.skip("mistral-common is not installed")
    from livetok.incremental.hf import tekken

    text = tekken.tekken_json_text(src.read_bytes())
    assert hashlib.sha256(text.encode()).hexdigest() == FILES["mistral_nemo"].derived_sha256


def test_a_model_folder_is_its_tokenizer_json(tmp_path: Path, reader: _Reader) -> None:
    (tmp_path / "tokenizer.json").write_text('{"model": {}}')
    enc = get_encoding(str(tmp_path) + "/")
    assert enc.name == str(tmp_path / "tokenizer.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(VocabularyError, match="a folder without a tokenizer.json"):
        get_encoding(str(empty))
