"""Settings and the workspace map are untrusted input too (issue 34, rows 1, 3 and 6).

End to end: each test runs ``python -m livetok.server`` on stdio and is its client, with raw
JSON-RPC (no LSP library between), so that an exit, a hang or a message the server sends is
seen as an editor would see it. Every wait is a hang guard (``TIMEOUT``), not a race.

- row 1: ``livetok/workspaceCounts`` without a document takes the settings' default encoding
  through the same trust rule as documents; a ``tokenizer.json`` that is a link to
  ``/dev/zero`` or a FIFO is refused unread, trusted or not, and the server goes on answering;
- row 3: a setting holding a NUL byte, an over-long name or a huge map is a warning and the
  default, at ``initialize`` and in ``didChangeConfiguration``; never an exit;
- row 6: a ``tokenizer.json`` in any workspace folder, not only the first, needs the trust
  (for documents, ``livetok.compare`` and the map).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import pytest

from .._refs import tiktoken_ref
from ..conftest import slow_except

SERVER = [sys.executable, "-m", "livetok.server"]
#: a bounded wait for anything the server should do at once: a hang fails, not hangs
TIMEOUT = float(os.environ.get("LIVETOK_LSP_TIMEOUT", "60"))
TEXT = "hello world, a few words to count\n"

#: a valid tokenizer.json that counts differently from o200k_base (every character a token)
TOKENIZER = {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
    "normalizer": None, "post_processor": None, "decoder": None,
    "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "[\\s\\S]"}, "behavior": "Isolated",
                      "invert": False},
    "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
}

linux_only = pytest.mark.skipif(not (hasattr(os, "mkfifo") and os.path.exists("/dev/zero")),
                                reason="FIFOs and /dev/zero")


def o200k(text: str) -> int:
    return len(tiktoken_ref("o200k_base").encode_ordinary(text))


def a_txt(result: dict[str, Any]) -> int:
    """The tokens of ``a.txt`` in a ``livetok/workspaceCounts`` result's first folder."""
    entry = next(c for c in result["folders"][0]["children"] if c["name"] == "a.txt")
    tokens: int = entry["tokens"]
    return tokens


class Client:
    """A raw JSON-RPC client of the server on its stdio: requests by id, notifications kept."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.notes: list[dict[str, Any]] = []
        self.answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._n = 0
        self.stderr = bytearray()  # read as it comes: a full pipe would stop the server
        self._errors = asyncio.ensure_future(self._read_stderr())
        self._reader = asyncio.ensure_future(self._read())

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while block := await self.proc.stderr.read(1 << 16):
            self.stderr += block
            del self.stderr[:-20_000]

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await out.readuntil(b"\r\n\r\n")
                m = re.search(rb"Content-Length: (\d+)", head)
                assert m is not None, head
                msg = json.loads(await out.readexactly(int(m.group(1))))
                if "method" in msg and "id" in msg:  # a request to the client: say yes
                    self._send({"id": msg["id"], "result": None})
                elif "method" in msg:
                    self.notes.append(msg)
                elif msg.get("id") in self.answers:
                    self.answers.pop(msg["id"]).set_result(msg)
        # the server's output ended: every request still waiting fails now, with its stderr
        status = await self.proc.wait()
        await self._errors
        err = self.stderr.decode("utf-8", "replace")[-2000:]
        for fut in self.answers.values():
            if not fut.done():  # (one the hang guard gave up on is cancelled)
                fut.set_exception(AssertionError(f"the server exited ({status}):\n{err}"))

    def _send(self, msg: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        """The server's answer (``result`` or ``error``), within the hang guard."""
        self._n += 1
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.answers[self._n] = fut
        self._send({"id": self._n, "method": method, "params": params})
        try:
            return await asyncio.wait_for(fut, TIMEOUT)
        except asyncio.TimeoutError:
            raise AssertionError(f"{method}: no answer in {TIMEOUT} s (the server hangs); "
                                 f"exit status {self.proc.returncode}") from None

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    async def result(self, method: str, params: Any) -> Any:
        answer = await self.request(method, params)
        assert "result" in answer, answer
        return answer["result"]

    def open(self, uri: str, text: str = TEXT, language: str = "plaintext") -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language, "version": 1, "text": text}})

    async def count(self, uri: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.result(
            "livetok/tokenCount", {"textDocument": {"uri": uri}})
        return result

    def said(self) -> str:
        """What the server told the user so far (log and shown messages)."""
        return "\n".join(n["params"]["message"] for n in self.notes
                         if n["method"] in ("window/logMessage", "window/showMessage"))

    async def until_said(self, pred: Callable[[str], bool]) -> str:
        """The messages once ``pred`` holds of them (a hang guard, not a race)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while not pred(self.said()):
            assert loop.time() < deadline, f"not said in {TIMEOUT} s:\n{self.said()}"
            await asyncio.sleep(0.02)
        return self.said()


@contextlib.asynccontextmanager
async def serve(options: Any, folders: list[Path] | None = None) -> AsyncIterator[Client]:
    """An initialized server (``options``: its initializationOptions; ``folders``: its
    workspace folders), shut down at the end; its exit status is checked."""
    proc = await asyncio.create_subprocess_exec(
        *SERVER, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, limit=1 << 24)
    client = Client(proc)
    try:
        ws = [{"uri": f.as_uri(), "name": f.name} for f in folders or ()]
        answer = await client.request("initialize", {
            "processId": None, "capabilities": {}, "initializationOptions": options,
            "workspaceFolders": ws or None, "rootUri": ws[0]["uri"] if ws else None})
        assert "result" in answer, answer
        client.notify("initialized", {})
        yield client
        assert proc.returncode is None, client.stderr.decode("utf-8", "replace")[-3000:]
        await client.request("shutdown", None)
        client.notify("exit", None)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


# -- row 3: settings are input ------------------------------------------------------------------

NUL = "~\u0000/x.json"
BAD_SETTINGS = [
    ({"encoding": NUL}, "encoding"),
    ({"encoding": {"markdown": NUL}}, "encoding"),
    ({"encoding": {"*.t\u0000xt": "cl100k_base"}}, "encoding"),
    ({"encodingByLanguage": {"plaintext": NUL}}, "encodingByLanguage"),
    ({"encodingByLanguage": {"plain\u0000text": "cl100k_base"}}, "encodingByLanguage"),
    ({"compare": [NUL]}, "compare"),
    ({"tokenizer": NUL}, "tokenizer"),
    ({"tokenizer": "x" * 100_000 + ".json"}, "tokenizer"),
    ({"encoding": {f"lang{i}": "cl100k_base" for i in range(100_000)}}, "encoding"),
]


def test_every_bad_setting_is_refused_where_it_is_parsed() -> None:
    """Each value of :data:`BAD_SETTINGS` is a :class:`SettingsError` naming its key (what the
    server turns into a warning and the defaults), in process: the slow run starts a server
    for each, the default run for those the issue names."""
    from livetok.server.lsp.settings import SettingsError, parse_settings

    for options, key in BAD_SETTINGS:
        with pytest.raises(SettingsError, match=re.escape(f"livetok.{key}")) as caught:
            parse_settings(options, root="/w")
        assert "\u0000" not in str(caught.value) and len(str(caught.value)) < 500
        # collected instead: that key keeps its default, the others are read
        problems: list[str] = []
        s = parse_settings({**options, "contextWindow": 4096}, root="/w", problems=problems)
        assert s.context_window == 4096 and len(problems) == 1 and f"livetok.{key}" in problems[0]
        assert (s.encoding, s.tokenizer, s.compare) == ("o200k_base", None, ())


@pytest.mark.parametrize("options,key", slow_except(
    [pytest.param(o, k, id=f"{k}-{i}") for i, (o, k) in enumerate(BAD_SETTINGS)],
    [BAD_SETTINGS[i] for i in (0, 3, 5, 6)]))
async def test_a_bad_setting_is_a_warning_and_the_default_never_an_exit(
        options: dict[str, Any], key: str, tmp_path: Path) -> None:
    async with serve({**options, "contextWindow": 4096}, [tmp_path]) as client:
        uri = (tmp_path / "a.txt").as_uri()
        client.open(uri)
        got = await client.count(uri)
        assert (got["encoding"], got["tokens"]) == ("o200k_base", o200k(TEXT))
        said = await client.until_said(lambda s: f"livetok.{key}" in s)
        # the bad value alone is dropped: the setting beside it holds
        got = await client.result("livetok/workspaceCounts", {"wait": 30_000})
        assert got["contextWindow"] == 4096
        assert "\u0000" not in said and len(said) < 5_000, said[:500]
        # the same value later, in didChangeConfiguration: a warning, the document kept
        client.notify("workspace/didChangeConfiguration", {"settings": {"livetok": options}})
        await client.until_said(lambda s: s.count(f"livetok.{key}") >= 2)
        got = await client.count(uri)
        assert (got["encoding"], got["tokens"]) == ("o200k_base", o200k(TEXT))


# -- row 1: the workspace map's default encoding passes the trust rule -------------------------


def _workspace(root: Path) -> Path:
    (root / "m").mkdir(parents=True)
    (root / "m" / "tokenizer.json").write_text(json.dumps(TOKENIZER), encoding="utf-8")
    (root / "a.txt").write_text(TEXT, encoding="utf-8")
    return root


async def test_workspace_map_without_a_document_needs_trust_for_the_default(tmp_path: Path
                                                                            ) -> None:
    ws = _workspace(tmp_path / "ws")
    tok = str(ws / "m" / "tokenizer.json")
    async with serve({"tokenizer": tok}, [ws]) as client:
        got = await client.result("livetok/workspaceCounts", {"wait": 30_000})
        # counted as documents are: the default encoding, and the user told why
        assert got["encoding"] == "o200k_base", got["encoding"]
        assert a_txt(got) == o200k(TEXT)
        await client.until_said(lambda s: "trustWorkspaceTokenizers" in s)
        # a name that is no encoding: an error answer naming it, and the session goes on
        answer = await client.request("livetok/workspaceCounts", {"encoding": "no-such-enc"})
        assert "no-such-enc" in answer["error"]["message"], answer
        assert (await client.result("livetok/workspaceCounts", {}))["encoding"] == "o200k_base"
    # trusted, the same map is counted with the workspace's tokenizer (one token a character)
    async with serve({"tokenizer": tok, "trustWorkspaceTokenizers": True}, [ws]) as client:
        got = await client.result("livetok/workspaceCounts", {"wait": 30_000})
        assert got["encoding"] == tok and a_txt(got) == len(TEXT)


@linux_only
@pytest.mark.parametrize("kind,trusted", slow_except(
    [("dev-zero", False), ("fifo", False), ("dev-zero", True), ("fifo", True)],
    [("dev-zero", False), ("fifo", True)]))
async def test_workspace_map_tokenizer_that_is_a_device_or_fifo_is_refused_unread(
        tmp_path: Path, kind: str, trusted: bool) -> None:
    ws = _workspace(tmp_path / "ws")
    tok = ws / "tok.json"
    if kind == "fifo":
        os.mkfifo(tok)
    else:
        tok.symlink_to("/dev/zero")
    options = {"tokenizer": str(tok), "trustWorkspaceTokenizers": trusted}
    async with serve(options, [ws]) as client:
        uri = (ws / "a.txt").as_uri()
        got = await client.result("livetok/workspaceCounts", {"wait": 30_000})
        assert got["encoding"] == "o200k_base" and a_txt(got) == o200k(TEXT)
        said = await client.until_said(lambda s: "tok.json" in s)
        why = ("neither" if kind == "dev-zero"  # resolves to a name that is not *.json
               else "regular file" if trusted else "trustWorkspaceTokenizers")
        assert why in said, said
        # a document is refused the same way, and the server goes on answering
        client.open(uri)
        got = await client.count(uri)
        assert (got["encoding"], got["tokens"]) == ("o200k_base", o200k(TEXT))
        # named in the request itself: an invalid-params error, not a hang
        answer = await client.request("livetok/workspaceCounts",
                                      {"encoding": str(tok), "wait": 30_000})
        assert answer.get("error", {}).get("code") == -32602, answer
        assert (await client.count(uri))["tokens"] == o200k(TEXT)


# -- row 6: every workspace folder is the workspace ---------------------------------------------


async def test_a_tokenizer_in_the_second_workspace_folder_needs_trust(tmp_path: Path) -> None:
    first, second = tmp_path / "first", _workspace(tmp_path / "second")
    first.mkdir()
    tok = str(second / "m" / "tokenizer.json")
    async with serve({"tokenizer": tok, "compare": [tok, "cl100k_base"]},
                     [first, second]) as client:
        for folder in (first, second):
            uri = (folder / "b.txt").as_uri()
            client.open(uri)
            got = await client.count(uri)
            assert (got["encoding"], got["tokens"]) == ("o200k_base", o200k(TEXT))
            assert [c["encoding"] for c in got.get("compare", [])] == ["cl100k_base"], got
        said = await client.until_said(
            lambda s: s.count("trustWorkspaceTokenizers") >= 2)  # the document's, compare's
        assert tok in said
        got = await client.result("livetok/workspaceCounts", {"wait": 30_000})
        assert got["encoding"] == "o200k_base"
        answer = await client.request("livetok/workspaceCounts", {"encoding": tok})
        assert answer.get("error", {}).get("code") == -32602, answer
    # trusted, both folders' documents get it
    async with serve({"tokenizer": tok, "trustWorkspaceTokenizers": True},
                     [first, second]) as client:
        uri = (first / "b.txt").as_uri()
        client.open(uri)
        got = await client.count(uri)
        assert (got["encoding"], got["tokens"]) == (tok, len(TEXT))


# -- budget files: the same rule -------------------------------------------------------------


@linux_only
def test_budget_file_tokenizer_names_pass_the_same_rule(tmp_path: Path) -> None:
    """A budget file's ``encoding`` holding a NUL byte, or naming a FIFO (trusted), is a
    located configuration error of ``livetok check``, not "embedded null byte" nor a wait."""
    import subprocess

    (tmp_path / "a.md").write_text("hi\n", encoding="utf-8")
    os.mkfifo(tmp_path / "fifo.json")
    for name, why in [("t\\u0000/tokenizer.json", "control character"),
                      ("fifo.json", "not a regular file")]:
        (tmp_path / "livetok.toml").write_text(
            f'encoding = "{name}"\n[[budget]]\nfiles = ["*.md"]\nmax = 5\n', encoding="utf-8")
        r = subprocess.run([sys.executable, "-m", "livetok.server.cli.main", "check",
                            "--trust-tokenizers", "."], cwd=tmp_path, capture_output=True,
                           text=True, timeout=TIMEOUT)
        assert r.returncode == 2 and "livetok.toml:1" in r.stderr and why in r.stderr, r.stderr
        assert "\x00" not in r.stderr and "Traceback" not in r.stderr


async def test_a_folder_added_later_is_the_workspace_too(tmp_path: Path) -> None:
    """A document counted with a tokenizer.json outside the workspace (the user's own file) is
    counted with the default once the folder holding that file joins the workspace untrusted
    (``workspace/didChangeWorkspaceFolders``), and the user is told why."""
    first, second = tmp_path / "first", _workspace(tmp_path / "second")
    first.mkdir()
    tok = str(second / "m" / "tokenizer.json")
    async with serve({"tokenizer": tok, "compare": [tok]}, [first]) as client:
        uri = (first / "b.txt").as_uri()
        client.open(uri)
        got = await client.count(uri)  # outside the workspace: loaded
        assert got["encoding"] == tok and [c["encoding"] for c in got["compare"]] == [tok]
        client.notify("workspace/didChangeWorkspaceFolders", {"event": {
            "added": [{"uri": second.as_uri(), "name": "second"}], "removed": []}})
        await client.until_said(lambda s: s.count("trustWorkspaceTokenizers") >= 2)
        got = await client.count(uri)
        assert (got["encoding"], got["tokens"]) == ("o200k_base", o200k(TEXT))
        assert "compare" not in got, got  # left out, as named at the start it would be
