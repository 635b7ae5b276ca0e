"""The workspace token map end to end (issue 29 part 2): ``livetok count -r`` and several
``-e`` as a user runs them, and ``livetok/workspaceCounts`` under an LSP client.

The repository is generated in a temporary folder: nested folders, a ``.gitignore`` (a
folder and a pattern), a binary file, a 50 MB text file (over the map's per-file limit: only
its size is looked at, so it costs a write), a symbolic link loop, a link to a file outside
the repository, and a ``livetok.toml`` whose ``exclude`` leaves a file out. Every count the
map gives is compared with ``livetok count`` of that file, run as a separate command; the
entries left out must be absent and named, with their reason, in the log (stderr for the
command line, ``window/logMessage`` for the server). Each run has its own count cache
(``LIVETOK_COUNT_CACHE_DIR`` in the test's folder), and nothing may be written inside the
repository.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .._lsp import SERVER, TIMEOUT, request, result_dict, stop

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="symbolic link loops and the forked counting: Linux")

BIG = 50 * 10**6
TEXT_FILES = {
    "README.md": "# Project\n\nSome words about the project, 你好 and 😀.\n",
    "src/main.py": "def main() -> None:\n    print('hello world')\n" * 20,
    "src/util/strings.py": "import re\n\nWORD = re.compile(r'\\w+')\n",
    "src/util/deep/er/est.txt": "deep " * 300,
    "docs/guide.md": "## Guide\n\n" + "Read the fine manual. " * 50,
    "docs/latin1.txt": "caf\xe9 cr\xe8me",  # written as Latin-1 below: undecodable bytes
}


def make_repo(base: Path) -> Path:
    """The generated repository (see the module docstring)."""
    repo = base / "repo"
    (repo / ".git").mkdir(parents=True)
    for rel, text in TEXT_FILES.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode("latin-1") if rel.endswith("latin1.txt") else text.encode())
    (repo / ".gitignore").write_text("build/\n*.log\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.txt").write_text("built output " * 100)
    (repo / "debug.log").write_text("log line\n" * 10)
    (repo / "src" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    with open(repo / "data.csv", "wb") as f:  # 50 MB of text, over the per-file limit
        f.truncate(0)
        line = b"a,b,c,1,2,3\n"
        f.write(line * (BIG // len(line)))
    (repo / "src" / "util" / "loop").symlink_to("..")  # a loop: src/util/loop/util/loop/...
    (base / "secret.txt").write_text("outside the repository\n")
    (repo / "docs" / "secret.txt").symlink_to(base / "secret.txt")
    (repo / "livetok.toml").write_text('exclude = ["*.lock"]\n')
    (repo / "poetry.lock").write_text("[[package]]\nname = 'x'\n")
    return repo


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("workspace"))


def listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry below ``root`` (links not followed) with its size and mtime: to check that
    nothing was written there."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            out[os.path.relpath(os.path.join(dirpath, name), root)] = (st.st_size, st.st_mtime_ns)
    return out


def env_for(cache: Path) -> dict[str, str]:
    """The environment of a run: its own count cache (the vocabulary cache stays the user's:
    a cold one costs seconds)."""
    return {**os.environ, "LIVETOK_COUNT_CACHE_DIR": str(cache), "LIVETOK_DEBUG": ""}


def livetok(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "livetok.server.cli.main", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600, env=env,
                          stdin=subprocess.DEVNULL)


def counts_of_files(cwd: Path, env: dict[str, str], files: list[str], *encs: str
                    ) -> dict[str, list[int]]:
    """``livetok count -e ... FILE...`` (the reference: each file counted on its own)."""
    args = [a for e in encs for a in ("-e", e)]
    r = livetok(cwd, env, "count", *args, "--format", "json", "--no-progress", *files)
    assert r.returncode == 0, r.stderr
    return {f["path"]: f["tokens"] for f in json.loads(r.stdout)["files"]}


def tree_files(node: dict[str, Any], out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every file node of a JSON tree, by its path."""
    out = {} if out is None else out
    if node["kind"] == "file":
        out[node["path"]] = node
    for k in node.get("children", ()):
        tree_files(k, out)
    return out


def check_totals(node: dict[str, Any]) -> None:
    """Every folder's tokens are the sum of its entries' (a list per encoding or a number)."""
    kids = node.get("children")
    if not kids:
        return
    for k in kids:
        check_totals(k)
    if isinstance(node["tokens"], list):
        assert node["tokens"] == [sum(k["tokens"][i] for k in kids)
                                  for i in range(len(node["tokens"]))], node["path"]
    else:
        assert node["tokens"] == sum(k["tokens"] for k in kids), node.get("uri")


EXPECTED = sorted(TEXT_FILES) + [".gitignore", "livetok.toml"]
ABSENT = {"build": "ignored by", "debug.log": "ignored by", "src/logo.png": "binary",
          "data.csv": "over the map's limit", "src/util/loop": "symbolic link to a folder",
          "docs/secret.txt": "outside", "poetry.lock": "excluded by"}


def test_count_r_equals_count_of_each_file_and_names_what_it_leaves_out(repo: Path,
                                                                        tmp_path: Path) -> None:
    env = env_for(tmp_path / "cache")
    before = listing(repo)
    r = livetok(repo.parent, env, "count", "-r", "repo", "-e", "o200k_base", "-e",
                "cl100k_base", "--format", "json", "-v")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    assert doc["encodings"] == ["o200k_base", "cl100k_base"]
    (tree,) = doc["trees"]
    files = tree_files(tree["tree"])
    assert sorted(p.removeprefix("repo/") for p in files) == sorted(EXPECTED)
    want = counts_of_files(repo.parent, env, sorted(files), "o200k_base", "cl100k_base")
    assert {p: n["tokens"] for p, n in files.items()} == want
    check_totals(tree["tree"])
    assert tree["tree"]["tokens"] == doc["total"]
    skipped = {s["path"].removeprefix("repo/"): s["reason"] for s in tree["skipped"]}
    for rel, why in ABSENT.items():
        assert why in skipped.get(rel, ""), (rel, skipped.get(rel))
    assert listing(repo) == before, "something was written inside the repository"

    # the text form: du-like lines, a header naming the encodings, a line per file and folder
    r = livetok(repo.parent, env, "count", "-r", "repo", "-e", "o200k_base", "-e",
                "cl100k_base")
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["o200k_base", "cl100k_base"]
    rows = {line.split()[-1]: [int(x) for x in line.split()[:2]] for line in lines[1:]}
    assert rows["repo/"] == doc["total"]
    assert rows["repo/src/util/"] == [sum(want[f][i] for f in want
                                          if f.startswith("repo/src/util/")) for i in (0, 1)]
    assert all(rows[f] == want[f] for f in want)
    # largest first within each folder: the root's entries come in decreasing order
    top = [p for p in rows if p.rstrip("/").count("/") == 1]
    assert [rows[p][0] for p in top] == sorted((rows[p][0] for p in top), reverse=True), top
    # the big and the linked-outside files are named without -v; binary files are counted
    # in one line (issue 37 item 6); ignored ones not
    for rel in ("data.csv", "docs/secret.txt"):
        line = next(x for x in r.stderr.splitlines()
                    if x.startswith(f"repo/{rel}: warning: skipped: "))
        assert ABSENT[rel] in line, line
    assert "repo/build: warning" not in r.stderr and "-v lists them" in r.stderr
    assert "logo.png" not in r.stderr and "repo: 1 binary file left out" in r.stderr


def test_count_r_says_binary_files_once(tmp_path: Path) -> None:
    """Issue 37 item 6: one line for all the binary files (5,451 .pyc files of the standard
    library were 5,451 lines), the useful warnings still one each; -v lists every one."""
    root = tmp_path / "lib"
    (root / "__pycache__").mkdir(parents=True)
    for i in range(300):
        (root / "__pycache__" / f"m{i}.cpython-311.pyc").write_bytes(b"\xa7\r\r\n\0\0" + bytes(40))
        (root / f"m{i}.py").write_text(f"x = {i}\n")
    (root / "big.txt").write_text("words " * 100)
    env = {**env_for(tmp_path / "cache"), "LIVETOK_MAX_MAP_FILE_BYTES": "100"}
    r = livetok(tmp_path, env, "count", "-r", "lib")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        "lib/big.txt: warning: skipped: 600 bytes, over the map's limit of 100 a file (set "
        "LIVETOK_MAX_MAP_FILE_BYTES to count it)",
        "livetok count: lib: 300 binary files left out (a NUL byte in the first 8,000 bytes; "
        "-v lists them)"], r.stderr
    r = livetok(tmp_path, env, "count", "-r", "lib", "-v")
    assert sum(".pyc: warning: skipped: binary" in x for x in r.stderr.splitlines()) == 300


def test_count_r_counts_a_folder_a_gitignore_above_ignores(tmp_path: Path) -> None:
    """Issue 37 item 5: pyenv's .gitignore holds /versions, and count -r of the standard
    library inside it printed 0. A folder named is counted, as ripgrep searches a named
    path; the other rules above it still apply inside; --no-ignore reads none."""
    top = tmp_path / "pyenv"
    lib = top / "versions" / "3.11" / "lib"
    lib.mkdir(parents=True)
    (top / ".git").mkdir()
    (top / ".gitignore").write_text("/versions\n*.log\n")
    (lib / "os.py").write_text("import sys\n" * 10)
    (lib / "build.log").write_text("a log line\n")
    (lib / ".gitignore").write_text("secret.txt\n")
    (lib / "secret.txt").write_text("not counted\n")
    env = env_for(tmp_path / "cache")
    files = counts_of_files(tmp_path, env, ["pyenv/versions/3.11/lib/os.py",
                                            "pyenv/versions/3.11/lib/.gitignore"])
    r = livetok(tmp_path, env, "count", "-r", "pyenv/versions/3.11/lib")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[1]: int(line.split()[0]) for line in r.stdout.splitlines()}
    assert rows == {"pyenv/versions/3.11/lib/": sum(n for (n,) in files.values()),
                    **{p: n for p, (n,) in files.items()}}
    r = livetok(tmp_path, env, "count", "-r", "--no-ignore", "pyenv/versions/3.11/lib", "-v")
    assert r.returncode == 0, r.stderr
    names = {line.split()[1] for line in r.stdout.splitlines()}
    assert {"pyenv/versions/3.11/lib/build.log", "pyenv/versions/3.11/lib/secret.txt"} < names
    # from the top, /versions is a rule of the folder counted: versions/ is left out
    r = livetok(tmp_path, env, "count", "-r", "pyenv")
    assert "versions" not in r.stdout


def test_the_second_run_comes_from_the_cache_outside_the_repository(repo: Path,
                                                                    tmp_path: Path) -> None:
    """A second run gives the same counts from the cache (written in the cache folder only:
    one file per encoding and the stat index); a run with the cache off gives them too."""
    cache = tmp_path / "cache"
    env = env_for(cache)
    before = listing(repo)
    first = livetok(repo.parent, env, "count", "-r", "repo", "--format", "json")
    files = sorted(cache.iterdir())
    # (the stat index: written when some file was older than the racy window, 2 s)
    assert [f.name.split("-")[0] for f in files] in (["counts"], ["counts", "stats"]), files
    mtime = files[0].stat().st_mtime_ns
    second = livetok(repo.parent, env, "count", "-r", "repo", "--format", "json")
    assert json.loads(second.stdout)["trees"] == json.loads(first.stdout)["trees"]
    assert files[0].stat().st_mtime_ns == mtime, "a run with nothing new rewrote the counts"
    off = livetok(repo.parent, env, "count", "-r", "repo", "--format", "json", "--no-cache")
    assert json.loads(off.stdout)["trees"] == json.loads(first.stdout)["trees"]
    assert listing(repo) == before


def test_several_encodings_one_column_each(tmp_path: Path) -> None:
    """``livetok count -e A -e B FILE...``: a header with the names, a column per encoding, a
    total row; each column equals a run with that one encoding (it used to keep the last)."""
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text("Hello world, 你好世界 😀\n" * 30)
    b.write_text("def f(x):\n    return x ** 2\n" * 40)
    env = env_for(tmp_path / "cache")
    r = livetok(tmp_path, env, "count", "-e", "gpt-4o", "-e", "cl100k_base", "-e", "r50k_base",
                "a.md", "b.md")
    assert r.returncode == 0, r.stderr
    lines = [line.split() for line in r.stdout.splitlines()]
    assert lines[0] == ["gpt-4o", "cl100k_base", "r50k_base"]
    for i, enc in enumerate(("gpt-4o", "cl100k_base", "r50k_base")):
        one = livetok(tmp_path, env, "count", "-e", enc, "a.md", "b.md").stdout.split()
        assert [lines[1][i], lines[2][i], lines[3][i]] == [one[0], one[2], one[4]], enc
    assert lines[3][-1] == "total"
    assert len({lines[1][0], lines[1][1], lines[1][2]}) > 1  # the encodings do differ here
    j = json.loads(livetok(tmp_path, env, "count", "-e", "gpt-4o", "-e", "r50k_base",
                           "--format", "json", "a.md", "b.md").stdout)
    assert j["encodings"] == ["gpt-4o", "r50k_base"]
    assert [f["tokens"] for f in j["files"]] == [[int(lines[1][0]), int(lines[1][2])],
                                                [int(lines[2][0]), int(lines[2][2])]]
    assert j["total"] == [int(lines[3][0]), int(lines[3][2])]


# -- the language server ---------------------------------------------------------------------


def _caps() -> types.ClientCapabilities:
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=["utf-16"]),
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=True)),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities()))


async def _start(root: Path, env: dict[str, str]) -> LanguageClient:
    client = await ClientServerConfig(server_command=SERVER, server_env=env).start()
    client.registrations = []  # type: ignore[attr-defined]
    client.changed = []  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: Any) -> None:
        client.registrations.append(params)  # type: ignore[attr-defined]

    @client.feature("livetok/didChangeWorkspaceCounts")
    def _changed(params: Any) -> None:
        client.changed.append(result_dict(params))  # type: ignore[attr-defined]

    @client.feature("livetok/didChangeTokenCount")
    def _count(params: Any) -> None:
        pass

    await asyncio.wait_for(client.initialize_session(types.InitializeParams(
        capabilities=_caps(), root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)])), TIMEOUT)
    return client


async def _until(ok: Any) -> Any:
    """Wait until ``ok()`` is truthy; a hang guard (TIMEOUT), not a race."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not (value := ok()):
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)
    return value


def _by_path(folder: dict[str, Any], root: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for uri, node in tree_files({**folder, "path": folder["uri"]}).items():
        out[uri] = node
    return {n["uri"].removeprefix(root.as_uri() + "/"): n for n in out.values()}


def _with_paths(node: dict[str, Any]) -> dict[str, Any]:
    return {**node, "path": node["uri"],
            "children": [_with_paths(k) for k in node.get("children", ())]}


async def test_workspace_counts_request_live_and_watched(tmp_path: Path) -> None:
    """The request's tree equals ``livetok count`` file by file, with folder totals; what it
    leaves out is in the client's log with the reason; an open document shows its live
    count; a file changed on disk (``didChangeWatchedFiles``) updates its count and its
    folders' totals; the server asks to watch every file."""
    repo = make_repo(tmp_path)
    env = env_for(tmp_path / "cache")
    client = await _start(repo, env)
    try:
        got = result_dict(await request(client, "livetok/workspaceCounts", {"wait": 60_000}))
        assert got["encoding"] == "o200k_base" and got["complete"] is True
        assert got["contextWindow"] == 128000
        (folder,) = got["folders"]
        assert folder["uri"] == repo.as_uri() and folder["skipped"] >= len(ABSENT)
        check_totals(folder)
        nodes = tree_files(_with_paths(folder))
        rel = {u.removeprefix(repo.as_uri() + "/"): n for u, n in nodes.items()}
        assert sorted(rel) == sorted(EXPECTED)
        want = counts_of_files(repo, env, sorted(rel))
        assert {p: [n["tokens"]] for p, n in rel.items()} == want
        log = "\n".join(await _until(lambda: [m.message for m in client.log_messages
                                              if "workspace map" in m.message]))
        for p, why in ABSENT.items():
            assert any(str(repo / p) in line and why in line for line in log.splitlines()), p
        reg = await _until(lambda: [r for r in client.registrations  # type: ignore[attr-defined]
                                    if r.registrations[0].id == "livetok/workspaceFiles"])
        watchers = reg[0].registrations[0].register_options["watchers"]
        assert [w["globPattern"] for w in watchers] == ["**/*"]

        # an open document: its live count, and its folders' totals with it
        guide = repo / "docs" / "guide.md"
        live_text = guide.read_text() + "More words typed in the editor. " * 40
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=guide.as_uri(), language_id="markdown",
                                                 version=1, text=live_text)))
        scratch = tmp_path / "live.md"
        scratch.write_text(live_text)
        live_n = counts_of_files(tmp_path, env, ["live.md"])["live.md"][0]
        got = result_dict(await request(client, "livetok/workspaceCounts",
                                        {"textDocument": {"uri": guide.as_uri()}}))
        folder = got["folders"][0]
        node = tree_files(_with_paths(folder))[guide.as_uri()]
        assert node["tokens"] == live_n and node.get("live") is True
        check_totals(folder)
        assert folder["tokens"] == sum(want[p][0] for p in want) - want["docs/guide.md"][0] + live_n

        # a file changed on disk: reported, counted again, its folders' totals follow
        strings = repo / "src" / "util" / "strings.py"
        strings.write_text(strings.read_text() + "EXTRA = [WORD.findall(s) for s in 'abc']\n" * 9)
        seen = len(client.changed)  # type: ignore[attr-defined]
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=strings.as_uri(), type=types.FileChangeType.Changed)]))
        await _until(lambda: len(client.changed) > seen)  # type: ignore[attr-defined]
        got = result_dict(await request(client, "livetok/workspaceCounts",
                                        {"textDocument": {"uri": guide.as_uri()}}))
        folder = got["folders"][0]
        check_totals(folder)
        node = tree_files(_with_paths(folder))[strings.as_uri()]
        new_n = counts_of_files(repo, env, ["src/util/strings.py"])["src/util/strings.py"][0]
        assert node["tokens"] == new_n != want["src/util/strings.py"][0]
        util = next(k for k in next(k for k in folder["children"] if k["name"] == "src")
                    ["children"] if k["name"] == "util")
        assert util["tokens"] == (new_n + want["src/util/deep/er/est.txt"][0])

        # a deleted file goes, with its count out of the totals
        (repo / "README.md").unlink()
        seen = len(client.changed)  # type: ignore[attr-defined]
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=(repo / "README.md").as_uri(), type=types.FileChangeType.Deleted)]))
        await _until(lambda: len(client.changed) > seen)  # type: ignore[attr-defined]
        got = result_dict(await request(client, "livetok/workspaceCounts", {}))
        assert (repo / "README.md").as_uri() not in tree_files(_with_paths(got["folders"][0]))
        check_totals(got["folders"][0])
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop(client)


async def test_a_request_answers_before_a_long_build_and_says_so(tmp_path: Path) -> None:
    """``wait: 0`` answers at once (complete or not: the build is in another thread); the
    client is told when the map is complete, and then gets all of it. Bad params are
    InvalidParams, not a dropped request."""
    repo = tmp_path / "many"
    for i in range(300):
        p = repo / f"d{i % 7}" / f"f{i}.txt"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"file {i} " * 200)
    client = await _start(repo, env_for(tmp_path / "cache"))
    try:
        first = result_dict(await request(client, "livetok/workspaceCounts", {"wait": 0}))
        assert first["folders"][0]["files"] <= 300
        if not first["complete"]:
            await _until(lambda: client.changed)  # type: ignore[attr-defined]
        done = result_dict(await request(client, "livetok/workspaceCounts", {"wait": 0}))
        assert done["complete"] and done["folders"][0]["files"] == 300
        assert len(done["folders"][0]["children"]) == 7
        shallow = result_dict(await request(client, "livetok/workspaceCounts",
                                            {"wait": 0, "depth": 1}))
        assert all("children" not in k for k in shallow["folders"][0]["children"])
        from pygls.exceptions import JsonRpcException

        for bad in ({"wait": -1}, {"encoding": 7}, {"folder": "file:///etc"}):
            with pytest.raises(JsonRpcException) as exc:
                await request(client, "livetok/workspaceCounts", bad)
            assert exc.value.code == -32602, bad
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop(client)
