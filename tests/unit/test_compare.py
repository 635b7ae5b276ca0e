"""``livetok.compare``: a document's count under several encodings side by side (issue 29).

A server runs in this process (no event loop: every count is published as its change is
handled, and nothing goes to the worker thread). Each compared count must equal its reference
library's on the document's text after seeded random edits (tiktoken, HuggingFace
``tokenizers`` for BERT, ``sentencepiece`` for Mistral 7B); a model the catalog marks ≈ is
counted with its stand-in and never labelled exact; a name that cannot be counted is reported
once and left out; turning the setting on, changing it and turning it off mid-session keeps
every count exact; and a model's name works as ``livetok.encoding``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

from livetok.incremental import get_encoding
from livetok.incremental.names.catalog import find_model
from livetok.server.lsp.session import LivetokServer, create_server
from livetok.server.lsp.settings import MAX_COMPARE, SettingsError, parse_settings
from livetok.server.lsp.transport import dispatch

from .._lsp import naive_position
from .._refs import real_text, tiktoken_ref

URI = "file:///w/notes.md"
COUNT = "livetok/didChangeTokenCount"
#: what the random edits insert: prose, code, line breaks, accents, CJK, emoji (astral)
SNIPPETS = ["the ", "quick", " brown fox\n", "\n\n", "naïve café ", "東京タワー", "😀👍🏽",
            "def f(x):\n    return x\n", "  ", "[INST] ", "'s", "123,456.78", "e\u0301", "\t"]


class Session:
    """A server in this process, what it sent, and the client's copy of each text."""

    def __init__(self, options: dict[str, Any] | None = None, root: Path | None = None) -> None:
        self.server: LivetokServer = create_server()
        self.sent: list[dict[str, Any]] = []  # what the server wrote, as JSON
        self.server.protocol.set_writer(SimpleNamespace(
            write=lambda data: self.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[-1])),
            close=lambda: None))
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self._id = 0
        params: dict[str, Any] = {"capabilities": {}, "initializationOptions": options}
        if root is not None:
            params["workspaceFolders"] = [{"uri": root.as_uri(), "name": root.name}]
        self.request("initialize", params)

    def send(self, method: str, params: Any, msg_id: int | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            msg["id"] = msg_id
        dispatch(self.server.protocol, json.dumps(msg).encode())

    def request(self, method: str, params: Any) -> Any:
        self._id += 1
        self.send(method, params, self._id)
        (answer,) = [m for m in self.sent if m.get("id") == self._id and "method" not in m]
        assert "error" not in answer, answer
        return answer["result"]

    def open(self, text: str, uri: str = URI, language: str = "markdown") -> None:
        self.texts[uri], self.versions[uri] = text, 1
        self.send("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language, "version": 1, "text": text}})

    def edit(self, start_cp: int, end_cp: int, new: str, uri: str = URI) -> None:
        """Replace ``text[start_cp:end_cp]`` by ``new`` (positions in UTF-16, as sent)."""
        text = self.texts[uri]
        start, end = naive_position(text, start_cp, "utf-16"), naive_position(text, end_cp,
                                                                             "utf-16")
        self.versions[uri] += 1
        self.texts[uri] = text[:start_cp] + new + text[end_cp:]
        self.send("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": self.versions[uri]},
            "contentChanges": [{"range": {
                "start": {"line": start.line, "character": start.character},
                "end": {"line": end.line, "character": end.character}}, "text": new}]})

    def configure(self, livetok: dict[str, Any]) -> None:
        self.send("workspace/didChangeConfiguration", {"settings": {"livetok": livetok}})

    def last_count(self, uri: str = URI) -> dict[str, Any]:
        counts = [m["params"] for m in self.sent
                  if m.get("method") == COUNT and m["params"]["uri"] == uri]
        assert counts, f"no count for {uri}"
        return counts[-1]

    def messages(self, method: str) -> list[str]:
        return [m["params"]["message"] for m in self.sent if m.get("method") == method]


# -- references ------------------------------------------------------------------------------


def _reference(name: str) -> Callable[[str], list[int]]:
    """The reference library's encode for the encoding ``name``."""
    if name in ("o200k_base", "cl100k_base", "r50k_base"):
        return tiktoken_ref(name).encode_ordinary
    if name == "bert-base-uncased":
        from .._hf_encodings import hf_ids

        return lambda text: hf_ids("bert", text)
    if name == "mistral-7b-v0.1":
        spm = pytest.importorskip("sentencepiece")
        source = getattr(get_encoding(name), "source", None)
        assert source, name
        return spm.SentencePieceProcessor(model_file=str(source)).encode  # type: ignore[no-any-return]
    raise AssertionError(f"no reference for {name}")


def _check_compare(s: Session, expected: list[str], uri: str = URI) -> dict[str, Any]:
    """The last count of ``uri`` lists ``expected`` (in order), each entry equal to its
    reference on the client's text; the server's own state checks out (``_check``)."""
    text = s.texts[uri]
    count = s.last_count(uri)
    assert count["version"] == s.versions[uri]
    assert count["tokens"] == len(_reference(count["encoding"])(text))
    got = count.get("compare", [])
    assert [c["encoding"] for c in got] == expected, got
    for c in got:
        assert c["exact"] is True and "note" not in c
        assert c["tokens"] == len(_reference(c["countedWith"])(text)), c
    s.server.store.get(uri)._check()
    return count


def _random_edits(s: Session, rng: random.Random, n: int, check: Callable[[], Any],
                  every: int = 25) -> None:
    for k in range(n):
        text = s.texts[URI]
        start = rng.randint(0, len(text))
        if rng.random() < 0.35 and start < len(text):
            s.edit(start, min(len(text), start + rng.randint(1, 12)), "")
        else:
            s.edit(start, start, rng.choice(SNIPPETS))
        if k % every == every - 1:
            check()
    check()


# -- the setting -----------------------------------------------------------------------------


def test_the_setting_is_a_bounded_list_of_names() -> None:
    s = parse_settings({"compare": ["cl100k_base", " llama-3.1-8b ", "cl100k_base"]})
    assert s.compare == ("cl100k_base", "llama-3.1-8b")
    assert parse_settings({"compare": None}, s).compare == ()
    assert parse_settings({"budget": 5}, s).compare == s.compare  # left out: kept
    rel = parse_settings({"compare": ["models/tokenizer.json"]}, root="/w")
    assert rel.compare == ("/w/models/tokenizer.json",)
    assert "inside the workspace" in (rel.refusal(rel.compare[0]) or "")  # trust rules
    for bad, says in [("cl100k_base", "must be a list of encoding or model names"),
                      ({"a": 1}, "must be a list"), ([1], "livetok.compare[0] must be"),
                      (["o200k_base", ""], "livetok.compare[1] must be"),
                      ([f"e{i}" for i in range(MAX_COMPARE + 1)],
                       f"at most {MAX_COMPARE} are counted side by side")]:
        with pytest.raises(SettingsError, match=says.replace("[", r"\[").replace("]", r"\]")):
            parse_settings({"compare": bad})


def test_a_bad_setting_is_reported_and_the_rest_kept() -> None:
    s = Session({"compare": ["cl100k_base"]})
    s.open("hello world\n")
    s.configure({"compare": "cl100k_base"})
    assert any("livetok.compare must be a list" in m for m in s.messages("window/logMessage"))
    assert s.server.settings.compare == ("cl100k_base",)
    _check_compare(s, ["cl100k_base"])


# -- exact counts under edits ----------------------------------------------------------------


@pytest.mark.parametrize("compare", [
    ["cl100k_base", "bert-base-uncased", "mistral-7b-v0.1"],
    pytest.param(["o200k_base", "r50k_base", "gpt-4"], id="own-encoding-and-a-model"),
])
def test_compared_counts_equal_their_references_after_random_edits(compare: list[str]) -> None:
    """Seeded: 150 inserts and deletes anywhere (line breaks, accents, CJK, emoji); every 25
    edits, each compared count against its reference library on the client's text. A name
    for the document's own encoding (o200k_base) shares its count; gpt-4 is a model's name
    (counted with cl100k_base, exact)."""
    s = Session({"compare": compare})
    s.open(real_text(3_000) + "\nnaïve 東京 😀\n")
    expected = [c for c in compare]
    _check_compare(s, expected)
    od = s.server.store.get(URI)
    shared = [cc.compared.name for cc in od.compared if cc.doc is None]
    assert shared == [n for n in compare if n == "o200k_base"]
    _random_edits(s, random.Random(29), 150, lambda: _check_compare(s, expected))
    if "gpt-4" in compare:
        (gpt4,) = [c for c in s.last_count()["compare"] if c["encoding"] == "gpt-4"]
        assert gpt4["countedWith"] == "cl100k_base"


def test_a_document_without_compare_has_no_compare_list() -> None:
    s = Session()
    s.open("hello world\n")
    s.edit(0, 0, "oh ")
    count = s.last_count()
    assert "compare" not in count and count["tokens"] == 4
    assert s.server.store.get(URI).compared == []


def test_token_count_and_hover_show_the_compared_counts() -> None:
    s = Session({"compare": ["cl100k_base", "bert-base-uncased"]})
    text = "First paragraph, naïve and 東京.\nStill the first.\n\nSecond one 😀 here.\n"
    s.open(text)
    doc = {"textDocument": {"uri": URI}}
    whole = s.request("livetok/tokenCount", doc)
    assert whole["compare"] == s.last_count()["compare"]
    rng = {"start": {"line": 0, "character": 6}, "end": {"line": 3, "character": 6}}
    part = s.request("livetok/tokenCount", {**doc, "range": rng})
    sub = text[6:text.index("Second") + 6]
    for c in part["compare"]:
        assert c["rangeTokens"] == len(_reference(c["countedWith"])(sub)), c
    hover = s.request("textDocument/hover", {**doc, "position": {"line": 1, "character": 2}})
    para = text[:text.index("\n\n")]
    cl100k, bert = (len(_reference(n)(para)) for n in ("cl100k_base", "bert-base-uncased"))
    assert hover["contents"]["value"].endswith(
        f"paragraph under livetok.compare: cl100k_base **{cl100k}** · "
        f"bert-base-uncased **{bert}**")
    blank = s.request("textDocument/hover", {**doc, "position": {"line": 2, "character": 0}})
    assert blank["contents"]["value"].endswith(
        f"document under livetok.compare: cl100k_base **{len(_reference('cl100k_base')(text))}**"
        f" · bert-base-uncased **{len(_reference('bert-base-uncased')(text))}**")


# -- ≈ never labelled exact ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["claude-sonnet-4", "claude"])
def test_an_approximation_is_counted_with_its_stand_in_and_marked(name: str) -> None:
    s = Session({"compare": ["cl100k_base", name]})
    text = "Approximately counted text, naïve 東京 😀.\n"
    s.open(text)
    s.edit(0, 0, "An ")
    exact, approx = s.last_count()["compare"]
    model = find_model(name)
    assert model is not None and not model.exact
    assert exact["exact"] is True and "note" not in exact
    assert approx["encoding"] == name and approx["exact"] is False
    assert approx["countedWith"] == model.encoding == "cl100k_base"
    assert approx["note"].startswith(f"≈ {model.title}: counted with the stand-in cl100k_base")
    assert model.why in approx["note"]
    assert approx["tokens"] == len(_reference("cl100k_base")(s.texts[URI]))
    hover = s.request("textDocument/hover", {"textDocument": {"uri": URI},
                                             "position": {"line": 0, "character": 1}})
    assert f"{name} **≈ {approx['tokens']}** (stand-in cl100k_base)" in hover["contents"]["value"]


def test_no_entry_is_marked_exact_unless_its_model_is(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Every name of the catalog that loads here, compared at once (in groups of
    ``MAX_COMPARE``): an entry is exact exactly when the catalog says so (plain encodings
    are exact); the ≈ models whose stand-in is not here (Gemini's, in an empty Hugging
    Face cache) are left out, never shown under another tokenizer."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    names = ["o200k_base", "gemini-2.5-pro", "claude-opus-4", "gpt-4o", "mistral-large-2411",
             "bert", "claude", "gemini"]
    s = Session({"compare": names})
    s.open("some text\n")
    got = {c["encoding"]: c for c in s.last_count()["compare"]}
    assert sorted(got) == sorted(n for n in names if not n.startswith("gemini"))
    for name, c in got.items():
        model = find_model(name)
        assert c["exact"] is (model is None or model.exact), c
        assert ("note" in c) is (not c["exact"])
    errors = s.messages("window/showMessage")
    assert len(errors) == 2 and all("stand-in (≈) is google/gemma-3-4b-it's" in e
                                    for e in errors)


# -- failures --------------------------------------------------------------------------------


def test_a_name_that_cannot_be_counted_is_reported_once_and_left_out(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    (root / "tokenizer.json").write_text("{}")
    s = Session({"compare": ["cl100k_base", "no_such_encoding", "tokenizer.json"]}, root=root)
    s.open("one\n")
    s.open("two\n", uri="file:///w/other.md")
    _check_compare(s, ["cl100k_base"])
    _check_compare(s, ["cl100k_base"], "file:///w/other.md")
    errors = s.messages("window/showMessage")
    assert len(errors) == 2, errors  # once each, not once per document
    unknown, untrusted = errors
    assert unknown.startswith("livetok: livetok.compare: 'no_such_encoding' is left out (")
    assert "Fix or remove it in livetok.compare" in unknown and "unknown encoding" in unknown
    assert str(root / "tokenizer.json") in untrusted and "trustWorkspaceTokenizers" in untrusted
    s.configure({"compare": ["no_such_encoding", "r50k_base"]})  # named again: shown again
    _check_compare(s, ["r50k_base"])
    assert len(s.messages("window/showMessage")) == 3


def test_a_missing_model_says_how_to_get_it(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    s = Session({"compare": ["llama-3.1-8b"]})
    s.open("hi\n")
    assert "compare" not in s.last_count()
    (error,) = s.messages("window/showMessage")
    assert "'llama-3.1-8b' is left out" in error
    assert "huggingface-cli download meta-llama/Llama-3.1-8B tokenizer.json" in error


# -- on and off mid-session ------------------------------------------------------------------


def test_turning_compare_on_changing_it_and_off_mid_session() -> None:
    rng = random.Random(2903)
    s = Session()
    s.open(real_text(1_500))
    _random_edits(s, rng, 20, lambda: _check_compare(s, []))
    s.configure({"compare": ["cl100k_base", "bert-base-uncased"]})  # on: counted at once
    _check_compare(s, ["cl100k_base", "bert-base-uncased"])
    _random_edits(s, rng, 40, lambda: _check_compare(s, ["cl100k_base", "bert-base-uncased"]))
    s.configure({"compare": ["mistral-7b-v0.1", "cl100k_base"]})  # changed
    _check_compare(s, ["mistral-7b-v0.1", "cl100k_base"])
    _random_edits(s, rng, 40, lambda: _check_compare(s, ["mistral-7b-v0.1", "cl100k_base"]))
    s.configure({"encoding": "cl100k_base"})  # the document's own encoding changes: kept
    assert s.last_count()["encoding"] == "cl100k_base"
    _random_edits(s, rng, 20, lambda: _check_compare(s, ["mistral-7b-v0.1", "cl100k_base"]))
    assert [cc.doc is None for cc in s.server.store.get(URI).compared] == [False, True]
    s.configure({"compare": None})  # off
    _check_compare(s, [])
    _random_edits(s, rng, 20, lambda: _check_compare(s, []))
    assert s.server.store.get(URI).compared == []


def test_a_full_text_change_and_a_reopen_rebuild_the_compared_documents() -> None:
    s = Session({"compare": ["cl100k_base"]})
    s.open("first text\n")
    s.versions[URI] += 1
    s.texts[URI] = "a whole new text 😀\nof two lines"
    s.send("textDocument/didChange", {"textDocument": {"uri": URI, "version": s.versions[URI]},
                                      "contentChanges": [{"text": s.texts[URI]}]})
    _check_compare(s, ["cl100k_base"])
    s.send("textDocument/didClose", {"textDocument": {"uri": URI}})
    s.open("reopened, naïve\n")
    _check_compare(s, ["cl100k_base"])


def test_a_compared_edit_that_fails_is_rebuilt_from_the_text() -> None:
    s = Session({"compare": ["cl100k_base"]})
    s.open("hello world\n")
    (cc,) = s.server.store.get(URI).compared
    assert cc.doc is not None

    class Failing:
        encoding = cc.doc.encoding

        def edit(self, *args: Any) -> Any:
            raise RuntimeError("injected")

    cc.doc = Failing()  # type: ignore[assignment]
    s.edit(5, 5, ", big")
    _check_compare(s, ["cl100k_base"])
    assert not isinstance(s.server.store.get(URI).compared[0].doc, Failing)
    assert any("the cl100k_base count failed on an edit (RuntimeError: injected)" in m
               for m in s.messages("window/logMessage"))


# -- a model's name as livetok.encoding ------------------------------------------------------


def test_a_model_name_is_taken_as_the_encoding() -> None:
    s = Session({"encoding": "gpt-4.1", "compare": ["mistral-large-2411"]})
    s.open("a model's name\n")
    count = s.last_count()
    assert count["encoding"] == "o200k_base"
    assert count["tokens"] == len(_reference("o200k_base")(s.texts[URI]))
    (mistral,) = count["compare"]
    assert mistral["countedWith"] == "mistral-sp-241114" and mistral["exact"] is True


def test_a_model_whose_tokenizer_is_missing_says_how_to_get_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    s = Session({"encoding": "llama-3.1-8b"})
    s.open("hi\n")
    assert s.last_count()["encoding"] == "o200k_base"  # the fallback, said so
    (error,) = s.messages("window/showMessage")
    assert error.startswith("livetok: encoding 'llama-3.1-8b' for file:///w/notes.md is "
                            "unavailable (llama-3.1-8b: Llama 3.1 8B's tokenizer is ")
    assert "huggingface-cli download meta-llama/Llama-3.1-8B tokenizer.json" in error
    assert "livetok never downloads" in error


def test_an_approximation_as_the_encoding_is_refused_with_its_stand_in() -> None:
    s = Session({"encoding": "claude-sonnet-4"})
    s.open("hi\n")
    assert s.last_count()["encoding"] == "o200k_base"
    (error,) = s.messages("window/showMessage")
    assert "livetok has no exact count for this model" in error
    assert "name its stand-in, cl100k_base, instead" in error


def test_a_model_in_the_hugging_face_cache_is_loaded_by_its_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``llama-3.1-8b`` as ``livetok.encoding`` and in ``livetok.compare``, its tokenizer.json
    served from a fake local cache (a small real file stands in for Llama's: what is tested is
    that the name reaches the cache's file, and that the count is that file's HF count)."""
    from .._hf_encodings import reference
    from .._tokenizer_files import tokenizer_file

    repo = tmp_path / "hub" / "models--meta-llama--Llama-3.1-8B"
    (repo / "snapshots" / "0123abcd").mkdir(parents=True)
    (repo / "snapshots" / "0123abcd" / "tokenizer.json").symlink_to(tokenizer_file("bert"))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    hf = reference("bert")
    s = Session({"encoding": "llama-3.1-8b", "compare": ["o200k_base", "llama-3.1-8b"]})
    s.open("Hello, naïve world 東京\n")
    s.edit(0, 0, "Oh. ")
    count = s.last_count()
    expected = len(hf.encode(s.texts[URI], add_special_tokens=False).ids)
    assert count["encoding"] == "hf:meta-llama/Llama-3.1-8B" and count["tokens"] == expected
    o200k, llama = count["compare"]
    assert o200k["tokens"] == len(_reference("o200k_base")(s.texts[URI]))
    assert llama["tokens"] == expected and llama["exact"] is True
    assert not s.messages("window/showMessage")


# -- the worker thread -----------------------------------------------------------------------


async def test_messages_after_a_change_in_the_worker_see_the_new_compared_counts() -> None:
    """With an event loop, a document at least ``progressThreshold`` long gets its compared
    counts rebuilt in the worker thread after a settings change; the edit and the request
    sent right after the change (before the loop can finish that work) wait in its backlog
    and then see the new counts, in order. The second change also names the document's own
    encoding by another name (``gpt-4o``, loaded in the worker): the document is kept and its
    compared counts come from that same work, ahead of its backlog."""
    import asyncio

    s = Session({"compare": ["cl100k_base"], "progressThreshold": 1000})
    s.open(real_text(3_000))
    while s.server.background.busy_uris():
        await asyncio.sleep(0.01)
    for change in ({"compare": ["bert-base-uncased", "cl100k_base"]},
                   {"encoding": "gpt-4o", "compare": ["mistral-7b-v0.1"]}):
        s.configure(change)
        assert s.server.background.busy(URI)  # the work is in the worker
        s.edit(7, 7, "typed at once ")
        s._id += 1
        s.send("livetok/tokenCount", {"textDocument": {"uri": URI}}, s._id)
        for _ in range(60_000):  # a hang guard (10 minutes), not a race: ends on the answer
            answers = [m["result"] for m in s.sent if m.get("id") == s._id]
            if answers:
                break
            await asyncio.sleep(0.01)
        (answer,) = answers
        assert answer["version"] == s.versions[URI]
        assert [c["encoding"] for c in answer["compare"]] == change["compare"]
        for c in answer["compare"]:
            assert c["tokens"] == len(_reference(c["countedWith"])(s.texts[URI])), c
        _check_compare(s, change["compare"])
    assert s.last_count()["encoding"] == "o200k_base"
