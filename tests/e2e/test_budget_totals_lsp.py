"""The editor and ``livetok check`` agree on totals and costs: a rule's ``total`` over budget
is a diagnostic on its line of the budget file (open or not) with the message ``livetok
check`` prints, computed from the files on disk with the open documents' live counts in their
place; a per-file cost is a diagnostic on the document. A keystroke reads no file; a set too
large for the editor says so instead of reading it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types

from livetok.incremental import get_encoding
from livetok.server import trust
from livetok.server.lsp.budget_watch import BudgetWatch
from livetok.server.lsp.documents import OpenDocument, TextChange

from .._lsp import TIMEOUT, naive_position, stop
from .._refs import tiktoken_ref
from . import test_check_totals as totals
from .test_budgets_lsp import livetok_check, open_doc, start, until
from .test_check_totals import CLAUDE

TOML = """\
price = 2.50

[[budget]]
files = ["CLAUDE.md"]
max_cost = 0.00004

[[budget]]
files = ["docs/**/*.md"]
total = 40
"""
TOTAL_LINE = 9

DOCS = {**totals.DOCS, "docs/build/out.md": "ignored by .gitignore: in no set\n" * 20}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    for name, text in {"livetok.toml": TOML, "CLAUDE.md": CLAUDE, ".gitignore": "docs/build/\n",
                       **DOCS}.items():
        p = w / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return w


def diagnostics_of(client, uri: str) -> list[tuple]:
    return sorted(((d.range.start.line, d.range.start.character), d.message, d.severity)
                  for d in client.diagnostics.get(uri, []))


def total_diagnostic(ws: Path, *paths: str) -> list[tuple]:
    """What the budget file must show: ``livetok check``'s total verdict on its key's line."""
    [v] = [v for v in livetok_check(ws, *paths) if v["kind"] == "total"]
    assert v["line"] == TOTAL_LINE and v["over"]
    return [((TOTAL_LINE - 1, 0), v["message"], types.DiagnosticSeverity.Warning)]


async def test_totals_and_costs_in_the_editor_agree_with_check(ws):
    client = await start(ws)
    try:
        toml = (ws / "livetok.toml").as_uri()
        intro = open_doc(client, ws / "docs/intro.md")
        claude = open_doc(client, ws / "CLAUDE.md")
        # the budget file is not open: its total's diagnostic is published all the same
        want = total_diagnostic(ws, "livetok.toml")
        await until("the total's diagnostic", lambda: diagnostics_of(client, toml) == want)

        # the per-file cost: from the first token past what 0.00004 pays for, check's message
        [fc] = [v for v in livetok_check(ws, "CLAUDE.md") if v["kind"] == "file_cost"]
        ref = tiktoken_ref("o200k_base")
        _, offsets = ref.decode_with_offsets(ref.encode_ordinary(CLAUDE))
        pos = naive_position(CLAUDE, offsets[fc["budget"]], "utf-16")
        want_fc = [((pos.line, pos.character), fc["message"], types.DiagnosticSeverity.Warning)]
        await until("CLAUDE.md's cost", lambda: diagnostics_of(client, claude) == want_fc)

        # typing in a document of the set: its live count replaces its file's
        typed = DOCS["docs/intro.md"] + "A new paragraph typed in the editor, not saved.\n"
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=intro, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=typed)]))
        (ws / "docs/intro.md").write_text(typed, encoding="utf-8")  # for livetok check only
        want = total_diagnostic(ws, "docs/intro.md")
        await until("the total to follow the typing", lambda: diagnostics_of(client, toml) == want)

        # closed without saving: the file on disk counts again (read again: it changed)
        (ws / "docs/intro.md").write_text(DOCS["docs/intro.md"], encoding="utf-8")
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=intro)))
        want = total_diagnostic(ws, "docs/intro.md")
        await until("the total from disk again", lambda: diagnostics_of(client, toml) == want)

        # the budget file's code lens, once open: n / budget tokens in k files
        open_doc(client, ws / "livetok.toml", "toml")
        lenses = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=toml)))
        [v] = [v for v in livetok_check(ws, "livetok.toml") if v["kind"] == "total"]
        titles = {lens.range.start.line: lens.command.title for lens in lenses}
        assert titles[TOTAL_LINE - 1] == f"{v['tokens']:,} / 40 tokens in 3 files (over budget)"

        # the budget file changes on disk: a larger total, and the diagnostic goes
        new = TOML.replace("total = 40", "total = 4000")
        (ws / "livetok.toml").write_text(new, encoding="utf-8")
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=toml, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=new)]))
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=toml, type=types.FileChangeType.Changed)]))
        await until("the total's diagnostic to go", lambda: diagnostics_of(client, toml) == [])
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop(client)


# -- in-process: what a keystroke costs, and the limits --------------------------------------


def _watch(ws: Path) -> tuple[BudgetWatch, list[tuple[str, list[str]]]]:
    published: list[tuple[str, list[str]]] = []
    return BudgetWatch(publish=lambda uri, ds: published.append(
        (uri, [d.message for d in ds]))), published


def test_a_keystroke_reads_no_file(ws, monkeypatch):
    """The set is walked and read once; each keystroke then sums live and cached counts:
    no file is read, and the total is the reference count of the disk files with the typed
    text in place of the document's."""
    for i in range(40):
        (ws / "docs" / "many" / f"p{i}.md").parent.mkdir(parents=True, exist_ok=True)
        (ws / "docs" / "many" / f"p{i}.md").write_text(f"# Page {i}\n\nSome words.\n")
    reads: list[str] = []
    real = trust.read_text
    monkeypatch.setattr(trust, "read_text", lambda path, **kw: (reads.append(str(path)),
                                                                real(path, **kw))[1])
    watch, published = _watch(ws)
    path = ws / "docs/intro.md"
    od = OpenDocument(path.as_uri(), "markdown", 1, DOCS["docs/intro.md"],
                      get_encoding("o200k_base"))
    watch.diagnostics(od, None)
    assert len(reads) >= 43  # the budget file and every file of the set, once
    ref = tiktoken_ref("o200k_base")
    others = sum(len(ref.encode_ordinary(p.read_text())) for p in (ws / "docs").rglob("*.md")
                 if "build" not in p.parts and p != path)
    reads.clear()
    text = DOCS["docs/intro.md"]
    for k in range(30):
        od.apply([TextChange(" word", (2, 10, 2, 10))], k + 2)
        text = text[:len("# Intro\n\n") + 10] + " word" + text[len("# Intro\n\n") + 10:]
        watch.diagnostics(od, None)
        n = others + len(ref.encode_ordinary(text))
        assert published[-1][0] == (ws / "livetok.toml").as_uri()
        assert published[-1][1][0].startswith(f'total "budget #2" {n:,} tokens (o200k_base) '
                                              f"in 43 files, {n - 40:,} over the budget of 40")
    assert reads == []
    # closing reads the one file again (it did not change: from the cache, unread)
    watch.forget(od.uri)
    assert reads == [] and published[-1][1][0].startswith(
        f'total "budget #2" {others + len(ref.encode_ordinary(DOCS["docs/intro.md"])):,} tokens')


def test_a_new_file_joins_its_set_when_saved(ws):
    watch, published = _watch(ws)
    od = OpenDocument((ws / "docs/intro.md").as_uri(), "markdown", 1, DOCS["docs/intro.md"],
                      get_encoding("o200k_base"))
    watch.diagnostics(od, None)
    assert " in 3 files" in published[-1][1][0]
    new = ws / "docs/new.md"
    new.write_text("# New\n\nA page written in the editor and saved.\n")
    assert watch.changed([new.as_uri()]) is False  # a didSave: the documents need nothing
    assert " in 4 files" in published[-1][1][0]
    # a saved file the walk does not reach (ignored) joins nothing, and is walked for once
    assert watch.changed([(ws / "docs/build/out.md").as_uri()]) is False
    n = len(published)
    assert " in 4 files" in published[-1][1][0]
    assert watch.changed([(ws / "docs/build/out.md").as_uri()]) is False
    assert len(published) == n


def test_a_set_too_large_for_the_editor_says_so(ws, monkeypatch):
    monkeypatch.setenv("LIVETOK_MAX_SET_FILES", "2")
    watch, published = _watch(ws)
    od = OpenDocument((ws / "livetok.toml").as_uri(), "toml", 1, TOML, get_encoding("o200k_base"))
    [d] = watch.diagnostics(od, None)
    assert d.range.start.line == TOTAL_LINE - 1
    assert d.severity == types.DiagnosticSeverity.Information
    assert d.message.startswith('total "budget #2" is not summed in the editor: the folder of '
                                "livetok.toml holds more than 2 files (set LIVETOK_MAX_SET_FILES")
    monkeypatch.setenv("LIVETOK_MAX_SET_FILES", "100")
    monkeypatch.setenv("LIVETOK_MAX_SET_BYTES", "100")
    watch, published = _watch(ws)
    [d] = watch.diagnostics(od, None)
    assert "its files hold more than 100 bytes (set LIVETOK_MAX_SET_BYTES" in d.message
