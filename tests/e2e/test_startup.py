"""The start of a stdio session (``server/lsp/front.py``): ``initialize`` is answered before the
server is imported, with the capabilities the full server announces, and the full server then
reads that same ``initialize`` and handles everything after it, in order."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from livetok.server.lsp.session import create_server
from livetok.server.budgets.discovery import CONFIG_NAMES
from livetok.server.lsp.front import (
    BUDGET_FILE_NAMES,
    ANSWERED,
    EARLY_MAX_CHARS,
    EarlyServer,
    HandOver,
    answer_first,
    initialize_result,
)
from livetok.server.lsp.framing import Frame
from livetok.server.lsp.transport import dispatch

from .._lsp import MessageSink
from tests._refs import tiktoken_ref

SERVER = [sys.executable, "-m", "livetok.server"]


def _server_answer(params: dict[str, Any], forced: str | None) -> dict[str, Any]:
    """The full server's own answer to ``initialize`` with ``params`` (no front)."""
    server = create_server(position_encoding=forced)
    sink = MessageSink()
    server.protocol.set_writer(sink)
    dispatch(server.protocol, json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode())
    [answer] = [m for m in sink.sent if m.get("id") == 1]
    return answer


_SYNC_ALL = {"dynamicRegistration": True, "willSave": True, "willSaveWaitUntil": True,
             "didSave": True}
_VSCODE_LIKE = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True},
    "workspace": {"codeLens": {"refreshSupport": True},
                  "semanticTokens": {"refreshSupport": True},
                  "didChangeWatchedFiles": {"dynamicRegistration": True},
                  "fileOperations": {"didCreate": True, "willCreate": True, "didRename": True,
                                     "willRename": True, "didDelete": True,
                                     "willDelete": True}},
    "textDocument": {"synchronization": _SYNC_ALL,
                     "hover": {"contentFormat": ["markdown", "plaintext"]},
                     "rename": {"prepareSupport": True}},
    "notebookDocument": {"synchronization": {"dynamicRegistration": True}},
}
CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("nothing", {"processId": None, "rootUri": None, "capabilities": {}}, None),
    ("utf-8", {"processId": 7, "rootUri": None,
               "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}}}, None),
    ("utf-32 after unknown", {"processId": None, "rootUri": None, "capabilities": {
        "general": {"positionEncodings": ["ucs-2", "utf-32"]}}}, None),
    ("none known", {"processId": None, "rootUri": None,
                    "capabilities": {"general": {"positionEncodings": ["ucs-2"]}}}, None),
    ("empty offer", {"processId": None, "rootUri": None,
                     "capabilities": {"general": {"positionEncodings": []}}}, None),
    ("vscode-like", {"processId": 1, "rootUri": "file:///w", "capabilities": _VSCODE_LIKE}, None),
    ("willSave false", {"processId": None, "rootUri": None, "capabilities": {"textDocument": {
        "synchronization": {"willSave": False}}}}, None),
    ("forced", {"processId": None, "rootUri": None,
                "capabilities": {"general": {"positionEncodings": ["utf-32"]}}}, "utf-8"),
    ("setting", {"processId": None, "rootUri": None, "capabilities": {},
                 "initializationOptions": {"positionEncoding": "utf-32"}}, None),
    ("setting nested", {"processId": None, "rootUri": None, "capabilities": {
        "general": {"positionEncodings": ["utf-8"]}},
        "initializationOptions": {"livetok": {"positionEncoding": "utf-16",
                                              "encoding": "cl100k_base"}}}, None),
    ("flag over setting", {"processId": None, "rootUri": None, "capabilities": {},
                           "initializationOptions": {"positionEncoding": "utf-32"}}, "utf-8"),
    ("bad options", {"processId": None, "rootUri": None, "capabilities": {},
                     "initializationOptions": {"positionEncoding": "ucs-2"}}, None),
]


@pytest.mark.parametrize("params,forced", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_front_announces_what_the_server_announces(params, forced):
    own = _server_answer(params, forced)
    assert "result" in own, own
    assert initialize_result(params, forced) == own["result"]


def test_front_leaves_malformed_params_to_the_server():
    for params in ({"capabilities": []}, {"processId": "x", "capabilities": {}}, [],
                   {"capabilities": {"general": {"positionEncodings": "utf-8"}}}):
        assert initialize_result(params, None) is None
    deep: Any = {}
    for _ in range(100):
        deep = {"a": deep}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": None, "capabilities": {}, "initializationOptions": deep}}).encode()
    sent: list[bytes] = []
    assert answer_first(Frame("message", body), None, sent.append) is None and not sent


def test_hand_over_drops_the_second_answer_and_reads_the_params():
    """The full server reads the initialize the front answered: its codec, settings; its own
    answer goes nowhere, the rest of what it writes goes through."""
    params = {"processId": None, "rootUri": None,
              "capabilities": {"general": {"positionEncodings": ["utf-32"]}},
              "initializationOptions": {"encoding": "cl100k_base", "positionEncoding": 5}}
    body = json.dumps({"jsonrpc": "2.0", "id": "i", "method": "initialize",
                       "params": params}).encode()
    out: list[bytes] = []
    sent = answer_first(Frame("message", body), None, out.append)
    assert sent is not None and len(out) == 1
    server = create_server()
    sink = MessageSink()
    handover = HandOver(sink, sent)
    server.protocol.set_writer(handover)
    dispatch(server.protocol, body)
    assert handover.dropped is not None and handover.dropped["result"] == sent["result"]
    assert server.codec.unit == "utf-32"
    # the bad option is warned about (the logMessage passes), the answer is not sent twice
    assert [m.get("method") for m in sink.sent] == ["window/logMessage"]


def _did_open(uri: str, text: str, language_id: str = "plaintext") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": language_id, "version": 3,
                         "text": text}}}).encode()


def _server_count(options: Any, did_open: bytes) -> dict[str, Any] | None:
    """The count the full server publishes for ``did_open`` (None: none)."""
    server = create_server()
    sink = MessageSink()
    server.protocol.set_writer(sink)
    dispatch(server.protocol, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                          "params": {"processId": None, "capabilities": {},
                                                     "initializationOptions": options}}).encode())
    dispatch(server.protocol, did_open)
    server.background.finish_all()
    server.publisher.publish()
    counts = [m["params"] for m in sink.sent
              if m.get("method") == "livetok/didChangeTokenCount"]
    return counts[-1] if counts else None


def _early_count(options: Any, did_open: bytes) -> dict[str, Any] | None:
    out: list[bytes] = []
    handled = EarlyServer({"initializationOptions": options}, "utf-16", out.append).handle(
        Frame("message", did_open))
    assert bool(handled) == bool(out)
    return json.loads(out[0].partition(b"\r\n\r\n")[2])["params"] if out else None


MIXED = "naïve café — 東京 😀 <|endoftext|> def f(x): return x\n" * 300


@pytest.mark.parametrize("options,language", [
    (None, "plaintext"),
    ({"encoding": "cl100k_base"}, "plaintext"),
    ({"encoding": {"python": "r50k_base", "default": "o200k_base"}}, "python"),
    ({"encoding": "bert-base-uncased"}, "plaintext"),
    ({"encoding": "gpt-4.1"}, "plaintext"),  # a model counted with a built-in encoding
    ({"encoding": 5}, "plaintext"),  # invalid: the server ignores the options, as the front
])
def test_front_counts_a_did_open_as_the_server_does(options, language):
    did_open = _did_open("file:///nowhere/a.txt", MIXED, language)
    early = _early_count(options, did_open)
    assert early is not None and early == _server_count(options, did_open)


def test_front_names_the_server_s_methods():
    from livetok.server.lsp import front, protocol

    assert (front.TOKEN_COUNT, front.DID_CHANGE_TOKEN_COUNT) == (
        protocol.TOKEN_COUNT, protocol.DID_CHANGE_TOKEN_COUNT)
    assert set(front.EARLY_REQUESTS) <= {protocol.TOKEN_COUNT, "textDocument/hover",
                                         "textDocument/codeLens"}


def test_front_leaves_documents_it_cannot_be_sure_of_to_the_server(tmp_path):
    assert BUDGET_FILE_NAMES == CONFIG_NAMES
    (tmp_path / "ruled").mkdir()
    (tmp_path / "ruled" / "livetok.toml").write_text(
        '[[budget]]\nglob = "*.md"\ntokens = 10\nencoding = "cl100k_base"\n')
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    ruled = (tmp_path / "ruled" / "a.md").as_uri()
    assert _early_count(None, _did_open(ruled, "hello")) is None
    assert _early_count(None, _did_open((tmp_path / "ruled" / "livetok.toml").as_uri(), "")) \
        is None
    plain = _did_open((tmp_path / "plain" / "a.md").as_uri(), "hello world")
    assert _early_count(None, plain) == _server_count(None, plain)
    assert _early_count(None, _did_open("file:///a.txt", "lone \ud800 surrogate")) is None
    assert _early_count({"maxDocumentSize": 3}, _did_open("file:///a.txt", "four")) is None
    assert _early_count({"progressThreshold": 4}, _did_open("file:///a.txt", "four")) is None
    assert _early_count({"compare": ["cl100k_base"]}, _did_open("file:///a.txt", "four")) is None
    for slow in ("hf:NoOrg/NoModel", "llama-3.1-8b", str(tmp_path / "tokenizer.json")):
        assert _early_count({"encoding": slow}, _did_open("file:///a.txt", "four")) is None
    assert _early_count(None, _did_open("file:///a.txt", "x" * (EARLY_MAX_CHARS + 1))) is None
    assert _early_count(None, _did_open("file:///a.txt", "x", 5)) is None  # type: ignore[arg-type]
    for other in ({"jsonrpc": "2.0", "id": 1, "method": "livetok/tokenCount", "params": {}},
                  {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {}}):
        assert EarlyServer(None, "utf-16", print).handle(
            Frame("message", json.dumps(other).encode())) is None
    assert EarlyServer(None, "utf-16", print).handle(Frame("message", json.dumps(
        {"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode()))


MARKDOWN = "# Title\n\nnaïve café 😀 text\n\n## Part\n\n東京 more words here\n" * 40
#: requests about the opened document: what the front answers (and some it leaves)
REQUESTS = [
    {"method": "livetok/tokenCount", "params": {"textDocument": {"uri": "file:///n/a.md"}}},
    {"method": "livetok/tokenCount", "params": {"textDocument": {"uri": "file:///n/a.md"},
     "range": {"start": {"line": 2, "character": 3}, "end": {"line": 6, "character": 4}}}},
    {"method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///n/a.md"},
                                                "position": {"line": 2, "character": 11}}},
    {"method": "textDocument/hover", "params": {"textDocument": {"uri": "file:///n/a.md"},
                                                "position": {"line": 1, "character": 0}}},
    {"method": "textDocument/codeLens", "params": {"textDocument": {"uri": "file:///n/a.md"}}},
]


def _answers_of_server(options: Any, unit: str, messages: list[dict[str, Any]]
                       ) -> list[dict[str, Any]]:
    server = create_server()
    sink = MessageSink()
    server.protocol.set_writer(sink)
    dispatch(server.protocol, json.dumps({"jsonrpc": "2.0", "id": "i", "method": "initialize",
                                          "params": {"processId": None, "capabilities": {
                                              "general": {"positionEncodings": [unit]}},
                                              "initializationOptions": options}}).encode())
    for m in messages:
        dispatch(server.protocol, json.dumps(m).encode())
        server.background.finish_all()
    return [m for m in sink.sent if "id" in m and m["id"] != "i"]


@pytest.mark.parametrize("unit", ["utf-8", "utf-16", "utf-32"])
@pytest.mark.parametrize("options", [None, {"contextWindow": 128000, "encoding": "cl100k_base"}])
def test_front_answers_requests_as_the_server_does(unit, options):
    """tokenCount (whole and a range), hover and code lenses of a document the front opened:
    the same JSON as the full server's answers."""
    opened = json.loads(_did_open("file:///n/a.md", MARKDOWN, "markdown"))
    messages = [opened] + [{"jsonrpc": "2.0", "id": i, **r} for i, r in enumerate(REQUESTS)]
    out: list[bytes] = []
    early = EarlyServer({"initializationOptions": options}, unit, out.append)
    handled = [early.handle(Frame("message", json.dumps(m).encode())) for m in messages]
    assert handled == [True] + [ANSWERED] * len(REQUESTS)
    front = [json.loads(b.partition(b"\r\n\r\n")[2]) for b in out[1:]]
    assert front == _answers_of_server(options, unit, messages)
    assert front[0]["result"]["tokens"] == tiktoken_ref(
        (options or {}).get("encoding", "o200k_base")).encode(MARKDOWN).__len__()


def test_front_leaves_requests_it_cannot_answer_to_the_server():
    early = EarlyServer({"initializationOptions": {"budget": 5}}, "utf-16", print)
    assert early.handle(Frame("message", _did_open("file:///n/a.md", MARKDOWN, "markdown")))

    def handle(method: str, params: Any) -> Any:
        return early.handle(Frame("message", json.dumps(
            {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()))

    doc = {"uri": "file:///n/a.md"}
    assert handle("textDocument/codeLens", {"textDocument": doc}) is None  # a budget to show
    assert handle("textDocument/hover", {"textDocument": doc,
                                         "position": {"line": -1, "character": 0}}) is None
    assert handle("textDocument/hover", {"textDocument": doc,
                                         "position": {"line": 10**6, "character": 0}}) is None
    assert handle("livetok/tokenCount", {"textDocument": {"uri": "file:///other"}}) is None
    assert handle("textDocument/semanticTokens/full", {"textDocument": doc}) is None
    assert handle("livetok/tokenCount", {"textDocument": doc}) == ANSWERED


def test_the_server_keeps_the_front_s_documents():
    """The text is encoded once: the full server adopts the ``Document`` the front built for
    the same didOpen (and builds its own when the didOpen differs)."""
    did_open = _did_open("file:///n/a.md", MARKDOWN, "markdown")
    early = EarlyServer(None, "utf-16", lambda b: None)
    assert early.handle(Frame("message", did_open))
    server = create_server()
    server.protocol.set_writer(MessageSink())
    dispatch(server.protocol, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                          "params": {"processId": None,
                                                     "capabilities": {}}}).encode())
    other = dict(early.documents)
    server.adopt_documents(early.documents)
    dispatch(server.protocol, did_open)
    server.background.finish_all()
    kept = server.store.get("file:///n/a.md")
    assert kept.doc is other["file:///n/a.md"].od.doc
    assert kept.lines is other["file:///n/a.md"].od.lines
    changed = json.loads(_did_open("file:///n/a.md", MARKDOWN + "!", "markdown"))
    server.adopt_documents(other)
    dispatch(server.protocol, json.dumps({"jsonrpc": "2.0", "method": "textDocument/didClose",
                                          "params": {"textDocument": {
                                              "uri": "file:///n/a.md"}}}).encode())
    dispatch(server.protocol, json.dumps(changed).encode())
    server.background.finish_all()
    od = server.store.get("file:///n/a.md")
    assert od.doc is not other["file:///n/a.md"].od.doc
    assert od.token_count == len(tiktoken_ref("o200k_base").encode(MARKDOWN + "!"))


# -- the process ---------------------------------------------------------------------------------


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _read(stream: Any) -> dict[str, Any]:
    length = None
    while (line := stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    assert length is not None, "the server closed its output"
    return json.loads(stream.read(length))


def _until_id(stream: Any, msg_id: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read up to the answer to ``msg_id``; also returns what came before it."""
    before = []
    while (m := _read(stream)).get("id") != msg_id or "method" in m:
        before.append(m)
    return m, before


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*SERVER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stdin is not None
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": "end", "method": "shutdown"}))
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
    proc.stdin.close()
    assert proc.wait(60) == 0
    assert proc.stderr is not None
    return proc.stderr.read().decode()


TEXT = "def f(x):\n    return x * 2  # é 😀 中文\n" * 2000


@pytest.mark.parametrize("unit", ["utf-8", "utf-16", "utf-32"])
def test_did_open_and_a_request_right_after_initialize_get_exact_counts(unit):
    """All sent at once, before reading anything: initialize, initialized, didOpen, a
    change whose positions are in the negotiated unit, and two counts."""
    proc = _spawn()
    assert proc.stdin is not None and proc.stdout is not None
    uri = "file:///w/a.py"
    line = TEXT.split("\n")[1]
    col = {"utf-8": len(line.encode()), "utf-16": len(line.encode("utf-16-le")) // 2,
           "utf-32": len(line)}[unit]
    new_text = TEXT[: len(TEXT.split("\n")[0]) + 1 + len(line)] + " 👍" + \
        TEXT[len(TEXT.split("\n")[0]) + 1 + len(line):]
    proc.stdin.write(b"".join(_frame(m) for m in [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": None,
            "capabilities": {"general": {"positionEncodings": [unit]}}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": TEXT}}},
        {"jsonrpc": "2.0", "id": 2, "method": "livetok/tokenCount",
         "params": {"textDocument": {"uri": uri}}},
        {"jsonrpc": "2.0", "id": "hover", "method": "textDocument/hover",
         "params": {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 4}}},
        {"jsonrpc": "2.0", "id": "lens", "method": "textDocument/codeLens",
         "params": {"textDocument": {"uri": uri}}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{
                "range": {"start": {"line": 1, "character": col},
                          "end": {"line": 1, "character": col}}, "text": " 👍"}]}},
        {"jsonrpc": "2.0", "id": 3, "method": "livetok/tokenCount",
         "params": {"textDocument": {"uri": uri}}},
    ]))
    proc.stdin.flush()
    init, before = _until_id(proc.stdout, 1)
    assert not before and init["result"]["capabilities"]["positionEncoding"] == unit
    first, notes = _until_id(proc.stdout, 2)
    hover, notes2 = _until_id(proc.stdout, "hover")
    lens, notes3 = _until_id(proc.stdout, "lens")
    second, more = _until_id(proc.stdout, 3)
    notes += notes2 + notes3
    enc = tiktoken_ref("o200k_base")
    assert first["result"]["tokens"] == len(enc.encode(TEXT))
    assert f"of {len(enc.encode(TEXT)):,}**" in hover["result"]["contents"]["value"]
    assert lens["result"][0]["command"]["title"].startswith(f"{len(enc.encode(TEXT)):,} tokens")
    assert second["result"]["version"] == 2
    assert second["result"]["tokens"] == len(enc.encode(new_text))
    # every count pushed (the front's early one among them) is exact for its version
    pushed = [m["params"] for m in notes + more if m.get("method") == "livetok/didChangeTokenCount"]
    assert pushed and pushed[0]["version"] == 1
    for p in pushed:
        assert p["tokens"] == len(enc.encode(TEXT if p["version"] == 1 else new_text))
    err = _finish(proc)
    assert "differs" not in err and "ERROR" not in err, err


def test_requests_before_initialize_still_get_errors():
    proc = _spawn()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "livetok/tokenCount",
                             "params": {"textDocument": {"uri": "file:///x"}}}))
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "initialize",
                             "params": {"processId": "x", "capabilities": {}}}))
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 3, "method": "initialize",
                             "params": {"processId": None, "rootUri": None,
                                        "capabilities": {}}}))
    proc.stdin.flush()
    early, _ = _until_id(proc.stdout, 1)  # LSP's ServerNotInitialized
    assert early["error"]["code"] == -32002 and "before initialize" in early["error"]["message"]
    bad, _ = _until_id(proc.stdout, 2)
    assert bad["error"]["code"] == -32602 and "process_id" in bad["error"]["message"]
    good, _ = _until_id(proc.stdout, 3)
    assert good["result"]["capabilities"]["positionEncoding"] == "utf-16"
    _finish(proc)


def test_params_the_front_accepts_but_the_server_refuses_keep_the_announced_unit():
    """A field the front does not read is invalid: the front answered already; the server
    logs the problem and keeps the position unit that was announced."""
    proc = _spawn()
    assert proc.stdin is not None and proc.stdout is not None
    uri = "file:///b.txt"
    proc.stdin.write(b"".join(_frame(m) for m in [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {
                "general": {"positionEncodings": ["utf-32"]},
                "textDocument": {"hover": {"contentFormat": 5}}}}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": "😀😀 abc"}}},
        {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{
                "range": {"start": {"line": 0, "character": 1},
                          "end": {"line": 0, "character": 1}}, "text": "中"}]}},
        {"jsonrpc": "2.0", "id": 2, "method": "livetok/tokenCount",
         "params": {"textDocument": {"uri": uri}}},
    ]))
    proc.stdin.flush()
    init, _ = _until_id(proc.stdout, 1)
    assert init["result"]["capabilities"]["positionEncoding"] == "utf-32"
    count, _ = _until_id(proc.stdout, 2)
    assert count["result"]["tokens"] == len(tiktoken_ref("o200k_base").encode("😀中😀 abc"))
    err = _finish(proc)
    assert "initialize was answered before its params were checked" in err


@pytest.mark.parametrize("module", ["livetok.server.lsp.front", "livetok.server.lsp.framing"])
def test_doctests(module):
    import doctest
    import importlib

    assert doctest.testmod(importlib.import_module(module)).failed == 0


def test_the_front_imports_neither_pygls_nor_lsprotocol():
    """What the front needs before the server exists stays light (the point of it)."""
    code = ("import sys; import livetok.server.lsp.front, livetok.server.cli.serve; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pygls', 'lsprotocol', 'cattrs', 'attrs', 'asyncio')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]"


# -- the front applies the server's limits (issue 34, rows 9 and 14) ----------------------------


def _answers_by_id(stream: Any, ids: list[Any]) -> dict[Any, dict[str, Any]]:
    """Read until every id in ``ids`` has its answer (None: the answer under id null)."""
    got: dict[Any, dict[str, Any]] = {}
    while not set(ids) <= set(got):
        m = _read(stream)
        if "method" not in m:
            got[m.get("id")] = m
    return got


#: a path no file can have: a part over 255 bytes, a path over 4,096 bytes, and a path just
#: within the limit whose folder plus ``/livetok.toml`` is over it
LONG_URIS = ["file:///w/" + "a" * 300 + "/x.txt",
             "file:///" + "/".join(["b" * 200] * 21) + "/x.txt",
             "file:///" + "/".join(["c" * 200] * 20) + "/" + "e" * 65 + "/x.txt",
             "file:///w/%00/x.txt"]


def test_front_takes_uris_of_paths_no_file_can_have():
    """The front looks for budget files by the document's path: a part over 255 bytes or a
    path over 4,096 made it exit ("File name too long") in the first half second, while the
    full server counted the same document. Both now call ``uris.local_path``."""
    from livetok.server.lsp.budget_watch import path_of
    from livetok.server.lsp.uris import local_path, path_too_long

    assert len(LONG_URIS[2]) - len("file://") < 4096 and path_too_long(
        LONG_URIS[2][len("file://"):].rsplit("/", 1)[0] + "/livetok.toml")
    assert [local_path(u) is None for u in LONG_URIS] == [True, True, False, True]
    assert all(path_of(u) == local_path(u) for u in LONG_URIS)
    proc = _spawn()
    assert proc.stdin is not None and proc.stdout is not None
    text = "hello world, naïve 😀"
    proc.stdin.write(b"".join(_frame(m) for m in [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": None, "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        *({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": text}}}
          for uri in LONG_URIS),
        *({"jsonrpc": "2.0", "id": 10 + i, "method": "livetok/tokenCount",
           "params": {"textDocument": {"uri": uri}}} for i, uri in enumerate(LONG_URIS)),
    ]))
    proc.stdin.flush()
    got = _answers_by_id(proc.stdout, [1] + [10 + i for i in range(len(LONG_URIS))])
    tokens = len(tiktoken_ref("o200k_base").encode(text))
    for i, uri in enumerate(LONG_URIS):
        assert got[10 + i]["result"]["tokens"] == tokens, got[10 + i]
    err = _finish(proc)
    assert "Traceback" not in err and "too long" not in err, err[-3000:]


def _deep(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


#: requests the server refuses or answers with an error, each in a place where the front
#: answered before (or where nobody did): too deep, ids JSON-RPC allows but LSP does not, the
#: wrong ``jsonrpc``, numbers beyond LSP's ``uinteger``/``integer``
REFUSED = [
    {"jsonrpc": "2.0", "id": 20, "method": "livetok/tokenCount",
     "params": {"textDocument": {"uri": "file:///w/a.txt"}, "x": _deep(100)}},
    {"jsonrpc": "2.0", "id": 1.5, "method": "livetok/tokenCount",
     "params": {"textDocument": {"uri": "file:///w/a.txt"}}},
    {"jsonrpc": "1.0", "id": 21, "method": "livetok/tokenCount",
     "params": {"textDocument": {"uri": "file:///w/a.txt"}}},
    {"jsonrpc": "2.0", "id": 22, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": "file:///w/a.txt"}, "position": {"line": 0, "character": 1 << 31}}},
    {"jsonrpc": "2.0", "id": 23, "method": "livetok/tokenCount", "params": {
        "textDocument": {"uri": "file:///w/a.txt"},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1 << 31, "character": 0}}}},
    {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": "file:///w/big-version.txt", "languageId": "plaintext", "version": 1 << 31,
        "text": "hello"}}},
    {"jsonrpc": "2.0", "id": 24, "method": "livetok/tokenCount",
     "params": {"textDocument": {"uri": "file:///w/big-version.txt"}}},
]


def test_front_refuses_what_the_server_refuses():
    """Sent in the front's first half second: each answer is the full server's own answer to
    the same messages (the front answered the request nested 100 levels deep that the server
    refuses with -32600, a ``jsonrpc: "1.0"`` one, a position past LSP's ``uinteger``), and
    every request is answered, ``id: 1.5`` under id null."""
    opened = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": "file:///w/a.txt", "languageId": "plaintext", "version": 1, "text": "hello"}}}
    want = {m.get("id"): m for m in _answers_of_server(None, "utf-16", [opened, *REFUSED])}
    ids = [1, None, 20, 21, 22, 23, 24]
    assert set(want) == set(ids) - {1}
    assert want[None]["error"]["code"] == want[20]["error"]["code"] == -32600
    proc = _spawn()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(_frame(m) for m in [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {
                "general": {"positionEncodings": ["utf-16"]}}}},
        opened, *REFUSED]))
    proc.stdin.flush()
    got = _answers_by_id(proc.stdout, ids)
    for msg_id in ids[1:]:
        assert got[msg_id] == want[msg_id], (msg_id, got[msg_id], want[msg_id])
    _finish(proc)


def test_front_and_server_call_one_function_for_each_limit():
    """The front's checks are the server's functions, not copies."""
    from livetok.server.lsp import budget_watch, framing, front, protocol, uris

    assert front.refusal is protocol.refusal is framing.refusal
    assert front.local_path is budget_watch.local_path is uris.local_path
