"""In-process tests of the server's document model and features (no subprocess).

Recovery paths need a core that fails on purpose, which only an in-process test can inject;
the same paths are exercised end to end in ``test_server_e2e.py`` with inputs that a real
client can send.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re

import pytest
from hypothesis import given, strategies as st

from livetok.incremental import Document, get_encoding
from livetok.server.lsp.settings import Settings, parse_settings
from livetok.server.lsp.store import DocumentStore
from livetok.server.lsp.documents import (
    DocumentUnavailable,
    OpenDocument,
    TextChange,
    UnknownDocument,
)
from livetok.server.lsp.views import (
    budget_overflow,
    code_lenses,
    hover,
    markdown_sections,
    paragraph_span,
    semantic_tokens,
    token_count,
)
from livetok.server.budgets.markdown import sections
from livetok.server.lsp.positions import PositionCodec
from livetok.server.lsp.trace_recorder import TraceRecorder
from livetok.server.cli.traces import load_trace

from .._lsp import decode_semantic, naive_position, units_of
from .._refs import tiktoken_ref

ENC = "o200k_base"


def ref_count(text: str) -> int:
    return len(tiktoken_ref(ENC).encode_ordinary(text))


def check(od: OpenDocument, text: str) -> None:
    """The document, its line index and its count agree with the client's text."""
    assert od.text() == text
    od._check()
    assert od.doc.token_count == ref_count(text)


def lsp_range(text: str, start: int, end: int, unit: str) -> tuple[int, int, int, int]:
    a, b = naive_position(text, start, unit), naive_position(text, end, unit)
    return (a.line, a.character, b.line, b.character)


@pytest.mark.parametrize("unit", ["utf-16", "utf-8", "utf-32"])
def test_random_changes_follow_the_client(unit):
    rng = random.Random(7)
    pieces = ["a", " b", "\n", "\r\n", "\r", "é", "中文", "😀", "\ud800", "\0", "def f():\n"]
    text = "start\r\n😀 line\n"
    od = OpenDocument("file:///r.txt", "plaintext", 1, text, get_encoding(ENC),
                      PositionCodec(unit))  # type: ignore[arg-type]
    for version in range(2, 300):
        start = rng.randrange(len(text) + 1)
        end = min(len(text), start + rng.randrange(4))
        # LSP cannot name a position between "\r" and "\n": step over it like an editor would
        start -= text[start - 1 : start + 1] == "\r\n"
        end += text[end - 1 : end + 1] == "\r\n"
        new = "".join(rng.choice(pieces) for _ in range(rng.randrange(3)))
        od.apply([TextChange(new, lsp_range(text, start, end, unit))], version)
        text = text[:start] + new + text[end:]
        # the core sees lone surrogates as U+FFFD, one for one
        check(od, text.replace("\ud800", "\ufffd"))
        text = text.replace("\ud800", "\ufffd")
        assert od.version == version


def test_full_text_change_and_clamping():
    warnings: list[str] = []
    od = OpenDocument("file:///c.txt", "plaintext", 1, "abc\ndef", get_encoding(ENC),
                      warn=warnings.append)
    od.apply([TextChange("X", (9, 0, 12, 3))], 2)  # past the last line: clamped to the end
    check(od, "abc\ndefX")
    assert any("clamped" in w for w in warnings)
    od.apply([TextChange("Y", (1, 2, 1, 1))], 3)  # reversed: swapped
    check(od, "abc\ndYfX")
    od.apply([TextChange("new\r\ntext")], 3)  # full text; version 3 again is adopted
    check(od, "new\r\ntext")
    assert any("does not increase" in w for w in warnings)


class FlakyDocument(Document):
    """A core document whose edit raises when the inserted text contains "BOOM"."""

    def edit(self, start, end, new_text):
        if "BOOM" in new_text:
            raise RuntimeError("injected core failure")
        return super().edit(start, end, new_text)


def test_core_failure_rebuilds_that_document_only():
    warnings: list[str] = []
    store = DocumentStore()
    bad = store.add(OpenDocument("file:///bad", "plaintext", 1, "hello world", get_encoding(ENC),
                                 document_factory=FlakyDocument, warn=warnings.append)) or store.get("file:///bad")
    good = OpenDocument("file:///good", "plaintext", 1, "other text", get_encoding(ENC))
    store.add(good)
    bad.apply([TextChange(" BOOM", (0, 5, 0, 5))], 2)
    assert any("rebuilding" in w for w in warnings)
    check(bad, "hello BOOM world")
    good.apply([TextChange("!", (0, 10, 0, 10))], 2)
    check(good, "other text!")


class BrokenDocument(Document):
    """A core document that cannot even be built for texts containing "POISON"."""

    def __init__(self, text="", encoding=ENC, **kw):
        if "POISON" in text:
            raise RuntimeError("injected build failure")
        super().__init__(text, encoding, **kw)


def test_broken_document_answers_request_failed_and_recovers():
    warnings: list[str] = []
    od = OpenDocument("file:///p", "plaintext", 1, "x POISON y", get_encoding(ENC),
                      document_factory=BrokenDocument, warn=warnings.append)
    with pytest.raises(DocumentUnavailable, match="could not tokenize"):
        token_count(od)
    od.apply([TextChange("!", (0, 0, 0, 0))], 2)  # still tracked as plain text
    assert od.text() == "!x POISON y"
    od.apply([TextChange("clean now")], 3)  # a full-text change retries
    check(od, "clean now")


def test_out_of_sync_until_full_text():
    od = OpenDocument("file:///s", "plaintext", 1, "abc", get_encoding(ENC))
    od.out_of_sync = "a didChange could not be decoded"
    with pytest.raises(DocumentUnavailable, match="full-text didChange"):
        token_count(od)
    od.apply([TextChange("fresh")], 2)
    assert token_count(od).tokens == ref_count("fresh")


def test_unknown_document_message_says_what_to_do():
    with pytest.raises(UnknownDocument, match="didOpen first"):
        DocumentStore().get("file:///nope")


# -- features -------------------------------------------------------------------------------


def reference_semantic_tokens(text: str, unit: str) -> list[tuple[int, int, int, int]]:
    """(line, col, length, type) from tiktoken's tokens: a token owns the characters whose
    first UTF-8 byte it holds; spans are cut at line breaks."""
    enc = tiktoken_ref(ENC)
    data = text.encode("utf-8")
    ids = enc.encode_ordinary(text)
    # char index of each byte's character
    char_of_byte = []
    for i, ch in enumerate(text):
        char_of_byte += [i] * len(ch.encode("utf-8"))
    is_lead = [(b & 0xC0) != 0x80 for b in data]
    out = []
    pos = 0
    for k, tid in enumerate(ids):
        n = len(enc.decode_single_token_bytes(tid))
        chars = [char_of_byte[b] for b in range(pos, pos + n) if is_lead[b]]
        pos += n
        if not chars:
            continue
        s, e = chars[0], chars[-1] + 1
        for m in re.finditer(r"[^\r\n]+", text[s:e]):
            a = naive_position(text, s + m.start(), unit)
            out.append((a.line, a.character, units_of(m.group(), unit), k % 2))
    return out


@pytest.mark.parametrize("unit", ["utf-16", "utf-8", "utf-32"])
@given(text=st.lists(st.sampled_from(["ab", " cd", "\n", "\r\n", "é", "中文字", "😀", "  ",
                                      "x😀y", "\t"]), max_size=30).map("".join))
def test_semantic_tokens_match_tiktoken(unit, text):
    od = OpenDocument("file:///t", "plaintext", 1, text, get_encoding(ENC),
                      PositionCodec(unit))  # type: ignore[arg-type]
    assert decode_semantic(semantic_tokens(od, 0, od.length)) == reference_semantic_tokens(text, unit)


def test_semantic_tokens_range_is_a_window_of_full():
    text = "alpha beta\ngamma 😀 delta\n\nepsilon zeta eta\n" * 3
    od = OpenDocument("file:///t", "plaintext", 1, text, get_encoding(ENC))
    full = decode_semantic(semantic_tokens(od, 0, od.length))
    start = od.lines.line_start(2)
    end = od.lines.line_start(5)
    part = decode_semantic(semantic_tokens(od, start, end))
    assert part and set(part) <= set(full)
    assert all(2 <= line <= 5 for line, *_ in part)


def test_hover_token_and_paragraph():
    text = "first paragraph here\nstill first\n\nsecond 😀 one\n"
    od = OpenDocument("file:///h", "plaintext", 1, text, get_encoding(ENC))
    info = hover(od, text.index("still") + 2, 1)
    assert info is not None
    ids = tiktoken_ref(ENC).encode_ordinary(text)
    tok = od.doc.token_at(text.index("still") + 2)
    assert f"id `{tok.id}`" in info.markdown and f"of {len(ids):,}" in info.markdown
    para = paragraph_span(od, 1)
    assert para == (0, text.index("\n\n"))
    assert f"**{ref_count(text[para[0]:para[1]]):,} tokens**" in info.markdown
    assert paragraph_span(od, 2) is None  # blank line


def test_markdown_sections_and_lenses():
    text = "# Title\nintro\n## Part\nbody 😀\n```\n# not a heading\n```\n# Next\nend\n"
    secs = sections(text)
    assert [(s.level, s.title) for s in secs] == [(1, "Title"), (2, "Part"), (1, "Next")]
    od = OpenDocument("file:///m.md", "markdown", 1, text, get_encoding(ENC))
    lenses = code_lenses(od, Settings(context_window=1000), markdown_sections(od))
    assert lenses[0].line == 0 and f"{ref_count(text):,} tokens" in lenses[0].title
    assert "% of 1,000-token context" in lenses[0].title
    for lens, sec in zip(lenses[1:], secs):
        assert lens.title == f"{ref_count(text[sec.start_cp:sec.end_cp]):,} tokens in this section"
        assert lens.line == text[: sec.start_cp].count("\n")


def test_budget_overflow_position():
    text = "one two three four five six seven eight nine ten"
    od = OpenDocument("file:///b", "plaintext", 1, text, get_encoding(ENC))
    assert budget_overflow(od, None) is None
    assert budget_overflow(od, 1000) is None
    over = budget_overflow(od, 4)
    assert over is not None
    # the first four tokens fit: "one two three four"
    assert text[: over.start_cp] == "one two three four"
    assert "over the budget of 4" in over.message


def test_settings_parsing():
    s = parse_settings({"livetok": {"encoding": "cl100k_base", "encodingByLanguage": {"rust": "r50k_base"},
                                    "contextWindow": None, "budget": 10, "semanticTokens": True}})
    assert s.encoding_for("file:///x.rs", "rust") == "r50k_base"
    assert s.encoding_for("file:///x.py", "python") == "cl100k_base"
    assert s.context_window is None and s.budget == 10 and s.semantic_tokens
    with pytest.raises(ValueError, match="livetok.semanticTokens must be true or false"):
        parse_settings({"semanticTokens": "yes"})


def test_settings_paths_are_read_from_the_workspace(tmp_path, monkeypatch):
    """Relative tokenizer paths are the workspace folder's (else the working folder's);
    built-in names and hf: ids are left alone."""
    from livetok.server.lsp.settings import workspace_root

    root = workspace_root([{"uri": (tmp_path / "w s").as_uri(), "name": "w s"}], None)
    assert root == str(tmp_path / "w s")
    s = parse_settings({"tokenizer": "m", "encoding": {"default": "cl100k_base",
                                                         "rust": "m/tokenizer.json",
                                                         "**/*.md": "hf:Org/Model",
                                                         "c": "~/t.json"},
                        "encodingByLanguage": {"go": "../x/tokenizer.json"}}, root=root)
    assert s.tokenizer == str(tmp_path / "w s" / "m")
    assert s.encoding_for("file:///a.rs", "rust") == str(tmp_path / "w s" / "m" / "tokenizer.json")
    assert s.encoding_for("file:///a.md", "markdown") == "hf:Org/Model"
    assert s.encoding_for("file:///a.c", "c") == os.path.join(os.path.expanduser("~"), "t.json")
    assert s.encoding_for("file:///a.go", "go") == str(tmp_path / "x" / "tokenizer.json")
    assert s.encoding == "cl100k_base"
    # later settings without a root, and no workspace: the working folder
    monkeypatch.chdir(tmp_path)
    assert parse_settings({"tokenizer": "t.json"}, s).tokenizer == str(tmp_path / "t.json")
    assert workspace_root([{"uri": "untitled:1"}], "vscode-vfs://x/y") is None
    assert workspace_root([], "file:///r") == "/r"


def test_trace_recorder_round_trip(tmp_path):
    rec = TraceRecorder(tmp_path)
    text = "hello\nworld"
    od = OpenDocument("file:///dir/notes.md", "markdown", 1, text, get_encoding(ENC))
    rec.open(od.uri, text)
    for version, (change, expected) in enumerate([
        (TextChange("big ", (1, 0, 1, 0)), "hello\nbig world"),
        (TextChange("", (0, 0, 0, 1)), "ello\nbig world"),
        (TextChange("😀\ud800", (0, 4, 1, 0)), "ello😀\ufffdbig world"),
    ], start=2):
        rec.change(od.uri, od.apply([change], version))
    path = rec.close(od.uri, od.text())
    assert path is not None and path.name.endswith("notes.md.json.gz")
    trace = load_trace(path)
    assert trace.start == text and trace.end == od.text() == "ello😀\ufffdbig world"
    assert trace.replay_text() == trace.end
    raw = json.loads(gzip.decompress(path.read_bytes()))
    assert len(raw["txns"]) == 3 and all("time" in t for t in raw["txns"])


def _encoding_or_skip(name: str):
    try:
        return get_encoding(name)
    except Exception as exc:  # an optional encoding whose files are missing here
        pytest.skip(f"{name} unavailable: {exc}")


@pytest.mark.parametrize("name", ["o200k_base", "bert-base-uncased", "mistral-7b-v0.1"])
def test_budget_and_semantic_tokens_on_every_kind_of_encoding(name):
    """WordPiece keeps uncounted placeholders for whitespace and SentencePiece has a dummy
    prefix: the budget search and the alternation must follow the real token indices."""
    enc = _encoding_or_skip(name)
    text = "Hello more  world, this is   a test.\n\nSecond paragraph 😀 中文 here.\n"
    od = OpenDocument("file:///x", "plaintext", 1, text, enc, PositionCodec("utf-32"))
    assert od.doc.token_count == len(enc.encode(text))
    for budget in range(od.doc.token_count):
        over = budget_overflow(od, budget)
        assert over is not None and od.doc.token_at(over.start_cp).index == budget
    assert budget_overflow(od, od.doc.token_count) is None
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    for line, col, n, ttype in decode_semantic(semantic_tokens(od, 0, od.length)):
        tok = od.doc.token_at(starts[line] + col)  # utf-32 columns are code points
        assert tok is not None and ttype == tok.index % 2 and n > 0


def test_initialize_preloads_the_default_encoding(monkeypatch):
    """After initialize the server loads its default encoding (from initializationOptions) in
    a thread, before any didOpen; a failure there is only logged."""
    from lsprotocol import types

    from livetok.server.lsp import encodings
    from livetok.server.lsp import session as app
    from livetok.server.lsp import sync

    asked: list[str] = []

    def fake_get_encoding(name):
        asked.append(name)
        raise ValueError("not here")

    monkeypatch.setattr(encodings, "get_encoding", fake_get_encoding)
    server = app.LivetokServer()
    sync.initialize(server, types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        initialization_options={"encoding": "r50k_base"}))
    assert server.preload is not None
    server.preload.join(10)
    assert asked == ["r50k_base"]


def test_a_failing_notification_handler_warns_and_the_server_keeps_running(monkeypatch):
    """A notification cannot be answered: when its handler raises, pygls reports the error
    to the server (``report_server_error``), which warns the client; later messages, about
    this document or others, are handled as usual."""
    from livetok.server.lsp.session import create_server
    from livetok.server.lsp.transport import dispatch

    sent: list[dict] = []

    class Sink:
        def write(self, data: bytes) -> None:
            sent.append(json.loads(data.split(b"\r\n\r\n", 1)[-1]))

        def close(self) -> None:
            pass

    def send(method: str, params: dict, msg_id: int | None = None) -> None:
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        dispatch(server.protocol, json.dumps(msg if msg_id is None else {**msg, "id": msg_id})
                 .encode())

    server = create_server()
    server.protocol.set_writer(Sink())
    send("initialize", {"capabilities": {}}, msg_id=1)
    real = server.encodings.load

    def load_encoding(choice: Any, uri: str):
        if uri.endswith("bad.txt"):
            raise RuntimeError("no vocabulary today")
        return real(choice, uri)

    monkeypatch.setattr(server.encodings, "load", load_encoding)
    for name in ("bad", "good"):
        send("textDocument/didOpen", {"textDocument": {
            "uri": f"file:///{name}.txt", "languageId": "plaintext", "version": 1,
            "text": "hello world"}})
    warnings = [m["params"]["message"] for m in sent if m.get("method") == "window/logMessage"]
    assert [w for w in warnings if "RuntimeError: no vocabulary today" in w
            and "the server keeps running" in w], warnings
    send("livetok/tokenCount", {"textDocument": {"uri": "file:///good.txt"}}, msg_id=2)
    send("livetok/tokenCount", {"textDocument": {"uri": "file:///bad.txt"}}, msg_id=3)
    answers = {m["id"]: m for m in sent if m.get("id") in (2, 3)}
    assert answers[2]["result"]["tokens"] == len(get_encoding("o200k_base").encode("hello world"))
    assert answers[3]["error"]["code"] == -32602 and "not open" in answers[3]["error"]["message"]
