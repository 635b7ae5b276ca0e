"""The model catalog (``incremental/names/catalog.py``, issue 29): every model it calls exact counts
like its reference library on real text (OpenAI's against tiktoken, Mistral's against
sentencepiece or ``mistral-common``'s Tekken encode (``tests/_tekken_ref.py``), the Hugging Face
models against ``tokenizers`` on the pinned test files, served from a fake local Hugging Face
cache); a model whose tokenizer is missing is refused with how to get it and no network; an ≈
model is refused under its name, with its stand-in and the reason; names resolve by alias,
case and prefix."""

from __future__ import annotations

import functools
import socket
from pathlib import Path
from typing import Any, Callable

import pytest

from livetok.incremental import VocabularyError, find_model, get_encoding, list_encodings
from livetok.incremental.names import catalog, registry
from livetok.incremental.names.catalog import MODELS, availability, close_model_names, model_encoding
from livetok.incremental.vocab.find import HF_PREFIX, find_mistral_data, find_tekken
from livetok.incremental.names.openai_models import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING

from .._hf_encodings import code_text, hf_ids, multilingual_text
from .._refs import real_text, tiktoken_ref
from .._tokenizer_files import tokenizer_file

#: the pinned test file (tests/_tokenizer_files.py) each tested Hugging Face repository's
#: tokenizer.json is served from, in a fake local Hugging Face cache
HUB_FILES = {
    "meta-llama/Meta-Llama-3-8B": "llama3",
    "meta-llama/Llama-3.1-8B": "llama3_1",
    "Qwen/Qwen3-8B": "qwen3",
    "deepseek-ai/DeepSeek-V3": "deepseek_v3",
    "google/gemma-3-4b-it": "gemma3",
    "intfloat/multilingual-e5-small": "xlmr",
}
#: run with LIVETOK_SLOW=1 only, their loading being most of the time: Llama 3.1's file, whose
#: pipeline Llama 3's has, and the Tekken vocabularies (whose encodings tests/unit/
#: test_hf_sources.py compares with the same reference in the default run)
SLOW = {"hf:meta-llama/Llama-3.1-8B", "mistral-tekken-240718", "mistral-tekken-240911",
        # and all Hugging Face repositories but Llama 3's: each loads its file again through
        # the catalog (1-2 s); the catalog takes them all the same way (test_hf_sources.py),
        # and their encodings are compared with HF on real text by tests/unit/test_hf_*.py
        "hf:Qwen/Qwen3-8B", "hf:deepseek-ai/DeepSeek-V3", "hf:google/gemma-3-4b-it",
        "hf:intfloat/multilingual-e5-small"}
#: what the tiktoken-style encodings' ids are compared with
TIKTOKEN_STYLE = {"o200k_base", "cl100k_base", "r50k_base", "gpt2", "o200k_harmony"}
FILE_ONLY = {"p50k_base", "p50k_edit"}

#: text the catalog's reasons speak of: special-token and control-marker strings, added tokens
MARKERS = ("<|endoftext|> <|endofprompt|> [INST] hi [/INST]</s><s> <unk> <think>x</think> "
           "<|begin_of_text|><|eot_id|> <bos><start_of_turn> [CLS] [SEP] <mask> "
           "<｜User｜> [REFERENCE_DOC_1]\n")


@functools.lru_cache(maxsize=1)
def _text() -> str:
    """Real text: the standard library's prose and code, Django's translations in ~100
    languages when installed, and the markers."""
    try:
        multilingual = multilingual_text(12_000)
    except pytest.skip.Exception:
        multilingual = "naïve café 東京タワー 北京欢迎你 한국어 مرحبا नमस्ते 😀👍🏽 e\u0301"
    return real_text(20_000) + code_text(8_000) + multilingual + MARKERS * 3


def _fake_hub(root: Path, files: dict[str, Path]) -> Path:
    """A Hugging Face cache holding each ``files[repo_id]`` as that repository's
    tokenizer.json (a symlink, as the cache's snapshots are)."""
    for repo_id, file in files.items():
        repo = root / ("models--" + repo_id.replace("/", "--"))
        (repo / "snapshots" / "0123abcd").mkdir(parents=True)
        (repo / "snapshots" / "0123abcd" / "tokenizer.json").symlink_to(file)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("0123abcd")
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture
def empty_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    hub = _fake_hub(tmp_path / "hub", {})
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    return hub


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Any connection attempt is recorded and refused."""
    tried: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        tried.append(address)
        raise OSError("the test forbids the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return tried


# -- the references ----------------------------------------------------------------------------


def _reference(encoding: str) -> Callable[[str], list[int]]:
    """The reference library's encode for the tokenizer ``encoding`` (a model's), or a skip
    that says why there is none here."""
    if encoding in TIKTOKEN_STYLE:
        return tiktoken_ref("r50k_base" if encoding == "gpt2" else encoding).encode_ordinary
    if encoding.startswith("mistral-tekken-"):
        pytest.importorskip("mistral_common")
        from .._tekken_ref import mistral_common_encode

        path = find_tekken(encoding.rsplit("-", 1)[1])
        assert path is not None
        return mistral_common_encode(path)[0]  # issue 35, decision 4
    if encoding.startswith("mistral-"):
        spm = pytest.importorskip("sentencepiece")
        source = getattr(get_encoding(encoding), "source", None)
        assert source, encoding
        return spm.SentencePieceProcessor(model_file=str(source)).encode  # type: ignore[no-any-return]
    if encoding == "bert-base-uncased":
        return lambda text: hf_ids("bert", text)
    name = HUB_FILES[encoding[len(HF_PREFIX):]]
    return lambda text: hf_ids(name, text)  # tests/_hf_encodings.py's, loaded once a process


def _groups() -> list[Any]:
    """The exact models by the tokenizer they are counted with, those with something here to
    compare with (a built-in vocabulary, or a pinned test file for a Hugging Face one)."""
    groups: dict[str, list[str]] = {}
    for m in MODELS:
        if m.exact and m.encoding not in FILE_ONLY and (
                m.repo_id is None or m.repo_id in HUB_FILES):
            groups.setdefault(m.encoding, []).append(m.name)
    # a Hugging Face group is named by its test file ([gemma3]): tests/conftest.py then runs
    # it on the worker that has the file loaded
    return [pytest.param(enc, names, id=HUB_FILES.get(enc[len(HF_PREFIX):], enc),
                         marks=[pytest.mark.slow] if enc in SLOW else [])
            for enc, names in groups.items()]


@pytest.mark.parametrize(("encoding", "names"), _groups())
def test_exact_models_equal_their_reference_on_real_text(
        encoding: str, names: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """Every model the catalog calls exact, with a tokenizer here, is counted by the same
    encoding as the others of its tokenizer, and its ids are the reference's."""
    if encoding.startswith(HF_PREFIX):
        repo_id = encoding[len(HF_PREFIX):]
        hub = _fake_hub(tmp_path / "hub", {repo_id: tokenizer_file(HUB_FILES[repo_id])})
        monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    elif encoding.startswith("mistral-") and find_mistral_data("tekken_240718.json") is None:
        pytest.skip("mistral-common missing: pip install --no-deps mistral-common")
    reference = _reference(encoding)
    enc = get_encoding(names[0])
    assert enc is get_encoding(encoding)
    text = _text()
    want = reference(text)
    got = enc.encode(text)
    if got != want:
        k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise AssertionError(f"{encoding}: differs from the reference at token {k}: "
                             f"{got[k:k + 6]} != {want[k:k + 6]}")
    for name in names[1:]:
        assert get_encoding(name) is enc, name
        assert get_encoding(name.upper()) is enc, name
    assert len(want) > 5_000


def test_the_tested_field_says_what_this_module_compares() -> None:
    """A model whose entry says the tests compare it is one of the groups above, and the
    reverse: what ``livetok models`` shows as tested is tested."""
    for m in MODELS:
        compared = m.exact and m.encoding not in FILE_ONLY and (
            m.repo_id is None or m.repo_id in HUB_FILES)
        assert bool(m.tested) == compared, m.name
        if m.exact and m.repo_id in HUB_FILES:
            assert HUB_FILES[m.repo_id] in m.tested, m.name
    assert set(HUB_FILES) <= {m.repo_id for m in MODELS}


# -- a missing tokenizer: how to get it, no download ---------------------------------------------


def test_a_missing_hf_model_says_how_to_get_it_and_fetches_nothing(empty_hub: Path,
                                                                    no_network: list[Any]
                                                                    ) -> None:
    with pytest.raises(VocabularyError) as exc:
        get_encoding("llama-3.1-8b")
    msg = str(exc.value)
    assert msg.startswith("llama-3.1-8b: Llama 3.1 8B's tokenizer is meta-llama/Llama-3.1-8B's")
    assert "`huggingface-cli download meta-llama/Llama-3.1-8B tokenizer.json`" in msg
    assert "livetok never downloads" in msg and "huggingface-cli login" in msg
    assert str(empty_hub) in msg and "--tokenizer FILE" in msg and "\n" not in msg
    assert not no_network
    assert list(empty_hub.iterdir()) == []  # nothing written into the cache either
    found = availability(find_model("qwen3-8b"))  # type: ignore[arg-type]
    assert not found.available and "huggingface-cli download Qwen/Qwen3-8B" in found.how
    assert "gated" not in found.how  # only the gated models say so


def test_a_missing_package_says_which_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without mistral-common, the Mistral models name the package; nothing is loaded from
    elsewhere."""
    monkeypatch.setattr(registry, "find_mistral_data", lambda filename: None)
    monkeypatch.setattr(catalog, "find_mistral_data", lambda filename: None)
    registry.register_encoding("mistral-sp-241114", registry._mistral_sp("mistral-sp-241114"))
    try:
        with pytest.raises(VocabularyError, match="pip install mistral-common") as exc:
            get_encoding("mistral-large-2411")
        assert str(exc.value).startswith("mistral-large-2411: the model's tokenizer is "
                                         "mistral-sp-241114: ")
        found = availability(find_model("pixtral-large-2411"))  # type: ignore[arg-type]
        assert not found.available and "pip install mistral-common" in found.how
    finally:
        registry.register_encoding("mistral-sp-241114",
                                   registry._mistral_sp("mistral-sp-241114"))


def test_without_mistral_common_the_listing_still_answers(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Without mistral-common (the plain ``pip install``: issue 37 item 3), Mistral 7B v0.1
    is not here, with how to get it, and ``list_encodings(models=True)`` answers instead of
    raising the loader's error (tests/e2e/test_installed_alone.py runs the command there)."""
    for module in (registry, catalog):
        monkeypatch.setattr(module, "find_mistral_v1", lambda: None)
        monkeypatch.setattr(module, "find_mistral_data", lambda filename: None)
    monkeypatch.delenv("LIVETOK_MISTRAL_V1_FILE", raising=False)
    registry.register_encoding("mistral-7b-v0.1", registry._mistral)  # forget a loaded one
    try:
        with pytest.raises(VocabularyError, match="pip install mistral-common"):
            get_encoding("mistral-7b-v0.1")
        found = availability(find_model("mistral-7b-v0.1"))  # type: ignore[arg-type]
        assert not found.available and "pip install mistral-common" in found.how
        names = list_encodings(models=True, found=False)
        assert "gpt-4o" in names and "mistral-medium-2312" not in names
    finally:
        registry.register_encoding("mistral-7b-v0.1", registry._mistral)


def test_a_model_whose_vocabulary_no_package_ships_asks_for_the_file() -> None:
    with pytest.raises(VocabularyError, match=r"text-davinci-003: the model's tokenizer is "
                       r"p50k_base: .*path='p50k_base.tiktoken'"):
        get_encoding("text-davinci-003")
    assert not availability(find_model("code-davinci-002")).available  # type: ignore[arg-type]


def test_an_older_repository_id_in_the_cache_is_used(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Llama 3.1 was renamed on the Hub (Meta-Llama-3.1-8B -> Llama-3.1-8B): a cache filled
    under the old id serves the model."""
    f = tmp_path / "tokenizer.json"
    f.write_text("{}")
    hub = _fake_hub(tmp_path / "hub", {"meta-llama/Meta-Llama-3.1-8B": f})
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    assert model_encoding("llama-3.1-8b") == "hf:meta-llama/Meta-Llama-3.1-8B"
    assert availability(find_model("llama3.1")).where.startswith(str(hub))  # type: ignore[arg-type]


# -- approximations --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["claude", "claude-sonnet-4-20250514", "Claude-3-5-Haiku",
                                  "gemini", "gemini-2.5-pro"])
def test_an_approximation_is_refused_under_the_model_name(name: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    f = tmp_path / "tokenizer.json"
    f.write_text("{}")  # the Gemini stand-in's file is here (not loaded)
    hub = _fake_hub(tmp_path / "hub", {"google/gemma-3-4b-it": f})
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    model = find_model(name)
    assert model is not None and not model.exact and model.mark == "≈"
    with pytest.raises(VocabularyError) as exc:
        get_encoding(name)
    msg = str(exc.value)
    assert msg.startswith(f"{name}: livetok has no exact count for this model: ")
    assert model.why in msg and f"name its stand-in, {model.encoding}, instead" in msg
    assert model_encoding(name, approximate=True) == model.encoding
    found = catalog.stand_in(name)  # what the command line and the editor count it with
    assert found is not None and found.encoding == model.encoding and found.model == model
    assert found.note.startswith(f"≈ {name}: counted with the stand-in {model.encoding}, not ")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    if model.repo_id is not None:  # a stand-in that is not here: how to get it
        with pytest.raises(VocabularyError, match=r"stand-in \(≈\) is google/gemma-3-4b-it's "
                           r"tokenizer.json, which is not in the local Hugging Face cache; "
                           r"livetok never downloads"):
            model_encoding(name, approximate=True)


def test_only_an_approximation_has_a_stand_in() -> None:
    """Exact models, encodings and paths are counted as named (even a path that starts like
    a model's name)."""
    for name in ("gpt-4o", "llama-3.1-8b", "cl100k_base", "gpt-4", "claude-notes.json",
                 "hf:org/claude-3"):
        assert catalog.stand_in(name) is None, name


def test_the_approximations_say_why() -> None:
    claude, gemini = find_model("claude"), find_model("gemini")
    assert claude is not None and gemini is not None
    assert claude.encoding == "cl100k_base" and "not published" in claude.why
    assert "never calls" in claude.why
    assert gemini.encoding == "hf:google/gemma-3-4b-it" and "Gemini 2.0" in gemini.why
    assert [m.name for m in MODELS if not m.exact] == ["claude", "gemini"]


# -- names ---------------------------------------------------------------------------------


def test_every_openai_model_of_tiktoken_is_in_the_catalog() -> None:
    for name, encoding in MODEL_TO_ENCODING.items():
        model = find_model(name)
        assert model is not None and model.exact and model.encoding == encoding, name
    for prefix, encoding in MODEL_PREFIX_TO_ENCODING.items():
        model = find_model(prefix + "2030-01-01")
        assert model is not None and model.encoding == encoding, prefix
    assert get_encoding("gpt-4o-2024-08-06") is get_encoding("o200k_base")
    assert get_encoding("ft:gpt-4o-mini:my-org::abc123") is get_encoding("o200k_base")


def test_names_aliases_and_case() -> None:
    assert find_model("Llama-3.1-8B") is find_model("llama3.1") is find_model(" llama-3.1 ")
    assert find_model("o200k_base") is None and find_model("llama-9") is None
    assert close_model_names("lama-3.1-8b")[0] == "llama-3.1-8b"
    assert close_model_names("qwen3-7b")[0].startswith("qwen3-")
    assert get_encoding("mistral-nemo") is get_encoding("mistral-tekken-240718")


def test_the_catalog_is_consistent() -> None:
    """Each model names one built-in encoding or an hf: id, has a reason, and a name of its
    own; Hugging Face repositories are named as the Hub spells them."""
    builtin = set(list_encodings(found=False)) | FILE_ONLY
    names = [n for m in MODELS for n in (m.name, *m.aliases)]
    assert len(names) == len(set(names))
    for m in MODELS:
        assert m.encoding in builtin or m.encoding.startswith(HF_PREFIX), m.name
        assert m.why and m.title and m.maker, m.name
        assert m.source, m.name
        if m.repo_id is not None:
            assert "/" in m.repo_id and m.package is None, m.name


def test_list_encodings_adds_the_models_that_are_here(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "tokenizer.json"
    f.write_text("{}")
    monkeypatch.setenv("HF_HUB_CACHE", str(_fake_hub(tmp_path / "hub", {"Qwen/Qwen3-8B": f})))
    plain = list_encodings()
    assert "gpt-4.1" not in plain and "qwen3-8b" not in plain  # unchanged without models=True
    names = list_encodings(models=True)
    assert names[-1] == "hf:Qwen/Qwen3-8B" and names.index("o200k_base") < names.index("gpt-4.1")
    assert {"gpt-4.1", "mistral-nemo", "qwen3-8b", "gpt-oss-20b"} <= set(names)
    assert not {"claude", "gemini", "text-davinci-003", "llama-3.1-8b"} & set(names)
    assert len(names) == len(set(names))
    described = dict(registry.describe_encodings(models=True))
    assert described["qwen3-8b"] == "Qwen3-8B (Alibaba Qwen): exact, hf:Qwen/Qwen3-8B"


def test_the_docs_table_is_the_catalog() -> None:
    """docs/models.md holds ``livetok models --format markdown``'s table, between its markers
    (regenerate it with that command when the catalog changes)."""
    from livetok.server.cli.models import markdown_table

    from ..conftest import ROOT

    page = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    begin = "<!-- models:begin (livetok models --format markdown) -->\n"
    inside = page.split(begin, 1)[1].split("\n<!-- models:end -->", 1)[0]
    assert inside == markdown_table(list(MODELS)), "run: livetok models --format markdown"
