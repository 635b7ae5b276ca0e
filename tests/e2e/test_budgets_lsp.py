"""The language server and ``livetok check`` agree: a workspace with a budget file gets the
verdicts the command prints, as diagnostics (from the first token past the budget, placed
by the reference library) and code lenses (``n / budget``); a change to the budget file
updates them without a restart; the budget file itself gets diagnostics.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .._lsp import SERVER, TIMEOUT, naive_position, stop
from .._refs import tiktoken_ref

TOML = """\
encoding = "o200k_base"

[[budget]]
files = ["CLAUDE.md"]
max = 30

[[budget]]
files = ["skills/**/SKILL.md"]
section = 30
encoding = "cl100k_base"
"""

CLAUDE = ("# Project notes\n\nAlways run the tests before you commit. Keep functions small, "
          "name them well, and write a docstring for each public one. Never push to main.\n")
SKILL = (
    "---\nname: pdf\n---\n# PDF skill\n\n"
    "## Setup\n\nInstall the tools first.\n\n"
    "Usage\n-----\n\nCall it like this:\n\n```sh\n## not a heading\nfill --form a.pdf\n```\n\n"
    "## Tools\n\nThe tools are pdftk, qpdf and poppler; each of them reads the form, fills "
    "the fields one by one and writes a flattened copy beside the original.\n"
)
NOTES = "These plain notes are covered by no rule, only by the livetok.budget setting.\n"


def capabilities(dynamic: bool) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=["utf-16"]),
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=dynamic),
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True)),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities()),
    )


async def start(ws: Path, *, dynamic: bool = True,
                options: dict[str, Any] | None = None) -> LanguageClient:
    client = await ClientServerConfig(server_command=SERVER, server_env=dict(os.environ)).start()
    client.registrations = []  # type: ignore[attr-defined]
    client.refreshes = 0  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: Any) -> None:
        client.registrations.append(params)  # type: ignore[attr-defined]

    @client.feature("livetok/didChangeTokenCount")
    def _count(params: Any) -> None:
        pass

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params: Any) -> None:
        client.refreshes += 1  # type: ignore[attr-defined]

    await asyncio.wait_for(client.initialize_session(types.InitializeParams(
        capabilities=capabilities(dynamic), root_uri=ws.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
        initialization_options=options)), TIMEOUT)
    return client


async def until(what: str, ok: Callable[[], Any]) -> Any:
    """Wait until ``ok()`` is truthy (the server answers in its own time); fail after TIMEOUT."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not (value := ok()):
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
    return value


def open_doc(client: LanguageClient, path: Path, language: str = "markdown") -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1,
                                             text=path.read_text(encoding="utf-8"))))
    return uri


def livetok_check(ws: Path, *paths: str) -> list[dict]:
    """The verdicts of ``livetok check --format json`` on the workspace."""
    r = subprocess.run([sys.executable, "-m", "livetok.server.cli.main", "check", "--format", "json",
                        "-j", "1", *paths], cwd=ws, capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    return json.loads(r.stdout)["verdicts"]


def first_token_past(text: str, v: dict) -> int:
    """Code point where the first token past the verdict's budget starts, by tiktoken: for a
    file, token number ``budget`` of the whole text; for a section, the last code point of
    the shortest prefix of the section that counts more than ``budget``."""
    ref = tiktoken_ref(v["encoding"])
    if v["kind"] == "file":
        _, offsets = ref.decode_with_offsets(ref.encode_ordinary(text))
        return offsets[v["budget"]]
    start = len("".join(text.splitlines(keepends=True)[: v["line"] - 1]))
    x = start + 1
    while len(ref.encode_ordinary(text[start:x])) <= v["budget"]:
        x += 1
    return x - 1


def expected(ws: Path, verdicts: list[dict], name: str) -> list[tuple]:
    """The diagnostics a file must get: (start, message, severity) of its verdicts over budget."""
    text = (ws / name).read_text(encoding="utf-8")
    out = []
    for v in verdicts:
        if v["path"] == name and v["over"]:
            pos = naive_position(text, first_token_past(text, v), "utf-16")
            out.append(((pos.line, pos.character), v["message"], types.DiagnosticSeverity.Warning))
    return sorted(out)


def got(client: LanguageClient, uri: str) -> list[tuple]:
    return sorted(((d.range.start.line, d.range.start.character), d.message, d.severity)
                  for d in client.diagnostics.get(uri, []))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    (w / "skills" / "pdf").mkdir(parents=True)
    (w / "livetok.toml").write_text(TOML, encoding="utf-8")
    (w / "CLAUDE.md").write_text(CLAUDE, encoding="utf-8")
    (w / "skills" / "pdf" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (w / "notes.txt").write_text(NOTES, encoding="utf-8")
    return w


async def test_editor_agrees_with_check_and_follows_the_budget_file(ws):
    client = await start(ws, options={"budget": 5})
    try:
        # the server asked to be told of budget file changes
        reg = await until("client/registerCapability", lambda: client.registrations)
        [registration] = reg[0].registrations
        assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        globs = {w["globPattern"] for w in registration.register_options["watchers"]}
        assert {"**/livetok.toml", "**/pyproject.toml"} <= globs

        claude = open_doc(client, ws / "CLAUDE.md")
        skill_path = "skills/pdf/SKILL.md"
        skill = open_doc(client, ws / skill_path)
        notes = open_doc(client, ws / "notes.txt", "plaintext")
        verdicts = livetok_check(ws, "CLAUDE.md", skill_path)
        want_claude = expected(ws, verdicts, "CLAUDE.md")
        want_skill = expected(ws, verdicts, skill_path)
        assert len(want_claude) == 1 and len(want_skill) == 1  # "## Tools" only
        await until("CLAUDE.md's diagnostic", lambda: got(client, claude) == want_claude)
        await until("SKILL.md's diagnostic", lambda: got(client, skill) == want_skill)
        # a document no budget file covers keeps the livetok.budget setting's diagnostic
        await until("notes.txt's diagnostic", lambda: client.diagnostics.get(notes))
        assert "(setting livetok.budget)" in client.diagnostics[notes][0].message

        # code lenses: n / budget on each level-2 section, the setext one included
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=skill)))
        titles = {lens.range.start.line: lens.command.title for lens in lenses}
        for v in verdicts:
            if v["path"] == skill_path and v["kind"] == "section":
                assert titles[v["line"] - 1].startswith(
                    f"{v['tokens']:,} / {v['budget']:,} tokens in this section"), titles
        n = tiktoken_ref("o200k_base").encode_ordinary(CLAUDE)
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=claude)))
        assert f"{len(n):,} / 30 tokens (over budget)" in lenses[0].command.title

        # the budget file changes on disk: CLAUDE.md now counts in cl100k_base against a
        # larger budget, and sections get a smaller one
        new_toml = TOML.replace("max = 30", 'max = 1000\nencoding = "cl100k_base"').replace(
            "section = 30", "section = 5")
        (ws / "livetok.toml").write_text(new_toml, encoding="utf-8")
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=(ws / "livetok.toml").as_uri(),
                            type=types.FileChangeType.Changed)]))
        verdicts = livetok_check(ws, "CLAUDE.md", skill_path)
        want_skill = expected(ws, verdicts, skill_path)
        assert len(want_skill) == 3
        await until("CLAUDE.md's diagnostic to go", lambda: got(client, claude) == [])
        await until("SKILL.md's new diagnostics", lambda: got(client, skill) == want_skill)
        await until("a code lens refresh", lambda: client.refreshes)
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=claude)))
        n = tiktoken_ref("cl100k_base").encode_ordinary(CLAUDE)
        assert "cl100k_base" in lenses[0].command.title  # re-opened in the rule's encoding
        assert f"{len(n):,} / 1,000 tokens" in lenses[0].command.title

        # the budget file breaks: it gets diagnostics though it is not open, and the
        # documents say why they are no longer checked
        (ws / "livetok.toml").write_text(new_toml + "colour = 1\n", encoding="utf-8")
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=(ws / "livetok.toml").as_uri(),
                            type=types.FileChangeType.Changed)]))
        toml_uri = (ws / "livetok.toml").as_uri()
        diags = await until("livetok.toml's diagnostics", lambda: client.diagnostics.get(toml_uri))
        assert diags[0].range.start.line == new_toml.count("\n")
        assert diags[0].severity == types.DiagnosticSeverity.Error
        assert "unknown key 'colour'" in diags[0].message
        await until("SKILL.md to say the budget file is broken", lambda: any(
            "budget file has errors" in d.message for d in client.diagnostics.get(skill, [])))
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop(client)


async def test_open_budget_file_gets_live_diagnostics_and_save_rereads(ws):
    """A client without dynamic registration: the budget file is re-read when it is saved in
    the editor, and while open its problems follow the editor's text."""
    client = await start(ws, dynamic=False)
    try:
        claude = open_doc(client, ws / "CLAUDE.md")
        await until("CLAUDE.md's diagnostic", lambda: client.diagnostics.get(claude))
        toml_uri = open_doc(client, ws / "livetok.toml", "toml")
        assert client.registrations == []
        # typing a wrong key: a diagnostic on its line, naming what is allowed
        bad = TOML.replace("max = 30", "maxx = 30")
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=toml_uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=bad)]))
        diags = await until("the bad key", lambda: client.diagnostics.get(toml_uri))
        assert diags[0].range.start.line == bad.splitlines().index("maxx = 30")
        assert "unknown key 'maxx'" in diags[0].message and "did you mean 'max'?" in diags[0].message
        # fixed to a budget CLAUDE.md meets, saved: re-read, the warning goes
        good = TOML.replace("max = 30", "max = 500")
        (ws / "livetok.toml").write_text(good, encoding="utf-8")
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=toml_uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=good)]))
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=toml_uri)))
        await until("livetok.toml's diagnostics to clear",
                    lambda: not client.diagnostics[toml_uri])
        await until("CLAUDE.md's diagnostic to go", lambda: not client.diagnostics[claude])
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop(client)


def test_documents_without_budgets_are_not_read(tmp_path):
    """Deciding that no budget applies reads no more than a Markdown file's first line: the
    server asks on every flush, and a document may be megabytes long."""
    from livetok.incremental import get_encoding
    from livetok.server.lsp.budget_watch import BudgetWatch
    from livetok.server.budgets.discovery import load_config
    from livetok.server.budgets.verdicts import check_text
    from livetok.server.lsp.documents import OpenDocument

    (tmp_path / "livetok.toml").write_text(TOML, encoding="utf-8")
    watch = BudgetWatch()
    enc = get_encoding("o200k_base")
    text = "some words of a long document\n" * 3000
    for name in ("notes.txt", "README.md", "sub/CLAUDE.txt"):
        od = OpenDocument((tmp_path / name).as_uri(), "markdown", 1, text, enc)
        od.text = lambda: pytest.fail("the whole text was read")  # type: ignore[method-assign]
        assert watch.check(od) is None and watch.diagnostics(od, None) == []
    # a covered one: the verdicts of livetok check's own function
    path = tmp_path / "CLAUDE.md"
    od = OpenDocument(path.as_uri(), "markdown", 1, CLAUDE, enc)
    verdicts, problems = watch.check(od)
    assert problems == [] and verdicts == check_text(
        path, CLAUDE, load_config(tmp_path / "livetok.toml"), label="CLAUDE.md")
    assert [d.message for d in watch.diagnostics(od, None)] == [verdicts[0].message]
