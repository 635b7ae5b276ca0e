"""A cloned repository is untrusted input (issue 26): each attack a hostile repository can
make, built by the test in a temporary folder (never committed as a live attack), against
``livetok check`` and the language server.

Every ``livetok`` run here is a subprocess under an address-space limit of 1 GB (Linux), with
a timeout that only guards against a hang (the outcome never depends on how fast a busy
machine is): it must end with one line per problem, no traceback, nothing written or read
outside the repository, no secret in any output. The server tests open the hostile files
beside healthy ones in one session: every request is answered, the healthy counts equal
tiktoken's, and the server is still running at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from livetok.server.lsp.settings import parse_settings

from .._lsp import TIMEOUT, poll, request, result_dict, stop, token_count
from .._refs import tiktoken_ref
from ..conftest import SLOW

#: the address space of each run: the attacks measured 1.6-3.8 GB before the fixes
AS_LIMIT = 1 << 30
#: only a hang guard: the attacks measured 23 s to forever before the fixes
HANG = 120
SECRET = "AKIA-LIVETOK-TEST-SECRET-7f3c9"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="address-space limits, FIFOs and /dev/zero: Linux")


def _limit_memory() -> None:  # runs in the child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def _cache_dir() -> str:
    """The vocabulary cache the tests use (kept when HOME moves to the victim's folder)."""
    from livetok.incremental.vocab.parse_store import cache_dir

    return cache_dir() or ""


def livetok(cwd: Path, *args: str, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """``livetok ARGS`` run in ``cwd`` with the memory limit and HOME at the victim's folder
    beside it; its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "livetok.server.cli.main", *args], cwd=cwd, capture_output=True,
        text=True, timeout=HANG, stdin=subprocess.DEVNULL, preexec_fn=_limit_memory,
        env={**os.environ, "LIVETOK_DEBUG": "", "HOME": str(cwd.parent / "home"),
             "LIVETOK_CACHE_DIR": os.environ.get("LIVETOK_CACHE_DIR") or _cache_dir(),
             **(env or {})})


def clean(r: subprocess.CompletedProcess[str]) -> None:
    """No traceback, no secret, no line longer than a message should be."""
    out = r.stdout + r.stderr
    assert "Traceback" not in out, out[-3000:]
    assert SECRET not in out
    assert max((len(line) for line in out.splitlines()), default=0) < 2000, out[:3000]


def clean_stderr(r: subprocess.CompletedProcess[str]) -> None:
    """:func:`clean`, for a run whose standard output is one line of JSON."""
    clean(subprocess.CompletedProcess(r.args, r.returncode, "", r.stderr))
    assert "Traceback" not in r.stdout and SECRET not in r.stdout


def errors(r: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in r.stderr.splitlines() if ": error: " in line]


def warnings_of(r: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in r.stderr.splitlines() if ": warning: " in line]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty repository folder, with a home folder beside it (the victim's)."""
    (tmp_path / "home").mkdir()
    r = tmp_path / "repo"
    r.mkdir()
    (r / ".git").mkdir()
    return r


SECTION_RULES = '[[budget]]\nfiles = ["*.md"]\nsection = 1\n'
HEADING_DOC = "# Notes\n\n## $(touch PWNED)\n\nsome words in the section\n"


def alias_bomb(levels: int = 9) -> str:
    """Front matter whose ``tokens`` value expands to 9**levels strings (481 bytes for 9)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "---\n" + "\n".join(lines) + f"\ntokens: *a{levels - 1}\n---\n# Hi\n"


def nested_toml(depth: int = 5000) -> str:
    return "x = " + "[" * depth + "]" * depth + "\n"


def many_tables(n: int = 8000) -> str:
    return "".join(f'[[budget]]\nfiles = ["f{i}.md"]\nmax = 1\nmaxx = {i}\n' for i in range(n))


STAR_GLOB = "/".join(["**/a*"] * 6) + "/x.md"


def deep_folder(root: Path, depth: int, name: str = "aa") -> Path:
    """A chain of ``depth`` folders below ``root``, made relative to each parent's descriptor
    (a chain of 1,500 is longer than a path may be); its last folder."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
    finally:
        os.close(fd)
    return root.joinpath(*[name] * depth)


def remove_chain(root: Path, depth: int, name: str) -> None:
    """Remove what :func:`deep_folder` made, deepest first, without recursion (pytest's own
    clean-up of old temporary folders recurses, and a chain of 1,500 would overflow it)."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for _ in range(depth - 1):
            fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
        while fds:
            fd = fds.pop()
            os.rmdir(name, dir_fd=fd)  # the chain's folders hold nothing else
            os.close(fd)
    finally:
        for fd in fds:
            os.close(fd)


# -- 1: the baseline is written only inside the budget file's folder, only over a baseline ------


@pytest.mark.parametrize("baseline", ["../home/.bash_profile", "{home}/.bash_profile",
                                      "~/.bash_profile", "link"])
def test_baseline_outside_the_repository_is_never_written(repo: Path, baseline: str) -> None:
    home = repo.parent / "home"
    profile = home / ".bash_profile"
    (repo / "a.md").write_text(HEADING_DOC, encoding="utf-8")
    if baseline == "link":  # a committed dangling link where the default baseline goes
        (repo / ".livetok-baseline.json").symlink_to(profile)
        (repo / "livetok.toml").write_text(SECTION_RULES, encoding="utf-8")
    else:
        (repo / "livetok.toml").write_text(
            f'baseline = "{baseline.format(home=home)}"\n' + SECTION_RULES, encoding="utf-8")
    r = livetok(repo, "check", "--update-baseline")
    clean(r)
    assert r.returncode == 2 and len(errors(r)) == 1, r.stderr
    assert not profile.exists() and not (repo / "PWNED").exists()
    assert not list(home.iterdir())


def test_update_baseline_does_not_write_over_a_file_that_is_not_a_baseline(repo: Path) -> None:
    (repo / "a.md").write_text(HEADING_DOC, encoding="utf-8")
    (repo / "livetok.toml").write_text('baseline = "setup.sh"\n' + SECTION_RULES,
                                       encoding="utf-8")
    (repo / "setup.sh").write_text("echo hello\n", encoding="utf-8")
    r = livetok(repo, "check", "--update-baseline")
    clean(r)
    assert r.returncode == 2 and "not a livetok baseline" in r.stderr, r.stderr
    assert (repo / "setup.sh").read_text(encoding="utf-8") == "echo hello\n"
    # a baseline inside the folder is written, and rewritten
    (repo / "livetok.toml").write_text('baseline = "b/base.json"\n' + SECTION_RULES,
                                       encoding="utf-8")
    (repo / "b").mkdir()
    for _ in range(2):
        r = livetok(repo, "check", "--update-baseline")
        assert r.returncode == 0, r.stderr
        data = json.loads((repo / "b" / "base.json").read_text(encoding="utf-8"))
        assert data["files"]


# -- 2: /dev/zero, FIFOs and links to them are refused, never read -----------------------------


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "link-to-dev-zero"])
def test_baseline_that_is_not_a_regular_file(repo: Path, kind: str) -> None:
    (repo / "a.md").write_text(HEADING_DOC, encoding="utf-8")
    if kind == "dev-zero":
        (repo / "livetok.toml").write_text('baseline = "/dev/zero"\n' + SECTION_RULES,
                                           encoding="utf-8")
    else:
        (repo / "livetok.toml").write_text(SECTION_RULES, encoding="utf-8")
        if kind == "fifo":
            os.mkfifo(repo / ".livetok-baseline.json")
        else:
            (repo / ".livetok-baseline.json").symlink_to("/dev/zero")
    r = livetok(repo, "check")
    clean(r)
    assert r.returncode == 2 and len(errors(r)) == 1, r.stderr


def test_gitignore_and_named_files_that_are_devices_or_fifos(repo: Path) -> None:
    (repo / "sub").mkdir()
    (repo / "sub" / ".gitignore").symlink_to("/dev/zero")
    (repo / "sub" / "a.md").write_text("---\ntokens: 1\n---\nwords and words\n",
                                       encoding="utf-8")
    os.mkfifo(repo / "pipe.md")
    r = livetok(repo, "check", "--format", "json")
    clean(r)
    out = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr  # the healthy file is checked (and over its budget)
    assert [v["path"] for v in out["verdicts"]] == ["sub/a.md"]
    warned = {w["path"] for w in out["warnings"]}
    assert warned == {"sub/.gitignore", "pipe.md"}, out["warnings"]
    (repo / "notes.md").symlink_to("/dev/zero")
    r = livetok(repo, "check", "notes.md")
    clean(r)
    assert r.returncode == 2 and len(errors(r)) == 1 and "notes.md" in r.stderr, r.stderr


# -- 3, 12: front matter: no YAML aliases, a size cap, one short message -------------------------


def test_yaml_alias_bomb_in_front_matter(repo: Path) -> None:
    (repo / "bomb.md").write_text(alias_bomb(), encoding="utf-8")
    r = livetok(repo, "check")
    clean(r)
    assert r.returncode == 2 and len(errors(r)) == 1 and "alias" in r.stderr, r.stderr
    assert len(r.stderr) < 1000


def test_front_matter_past_the_cap_is_not_front_matter(repo: Path) -> None:
    body = "".join(f"k{i}: {'v' * 60}\n" for i in range(30_000))  # ~2 MB
    (repo / "big.md").write_text(f"---\n{body}tokens: 1\n---\n# Hi\n", encoding="utf-8")
    r = livetok(repo, "check")
    clean(r)
    assert r.returncode == 0, r.stderr  # no budget: the block is text, not front matter
    r = livetok(repo, "check", env={"LIVETOK_MAX_FRONT_MATTER_BYTES": str(4 << 20)})
    assert r.returncode == 1, r.stderr  # read when the cap allows: 1 token is exceeded


# -- 6, 8, 9: budget files that are deep, huge or whose globs backtrack -------------------------


def test_budget_file_nested_5000_levels(repo: Path) -> None:
    (repo / "livetok.toml").write_text(nested_toml(), encoding="utf-8")
    (repo / "a.md").write_text("words\n", encoding="utf-8")
    r = livetok(repo, "check")
    clean(r)
    assert r.returncode == 2 and len(errors(r)) == 1 and "nested" in r.stderr, r.stderr


def test_budget_file_with_8000_bad_tables_is_reported_in_linear_time(repo: Path) -> None:
    (repo / "livetok.toml").write_text(many_tables(), encoding="utf-8")
    (repo / "a.md").write_text("words\n", encoding="utf-8")
    r = livetok(repo, "check")
    clean(r)
    lines = errors(r)
    assert r.returncode == 2 and len(lines) == 1 and "LIVETOK_MAX_BUDGET_GLOBS" in lines[0]
    # within the glob limit, 1,000 bad tables: 50 problems listed, the rest counted
    (repo / "livetok.toml").write_text(many_tables(1000), encoding="utf-8")
    r = livetok(repo, "check")
    clean(r)
    lines = errors(r)
    assert r.returncode == 2 and len(lines) == 51, len(lines)
    assert "950 more problem(s)" in lines[-1]
    # the line numbers of the listed problems are right
    assert lines[0].startswith(f"{repo / 'livetok.toml'}:4: error: budget #1: unknown key")
    assert lines[49].startswith(f"{repo / 'livetok.toml'}:200: error: budget #50: unknown key")


def test_globs_that_backtrack_are_refused(repo: Path) -> None:
    deep_folder(repo, 80).joinpath("x.md").write_text("words\n", encoding="utf-8")
    (repo / "livetok.toml").write_text(f'[[budget]]\nfiles = ["{STAR_GLOB}"]\nmax = 1\n',
                                       encoding="utf-8")
    r = livetok(repo, "check")
    clean(r)
    assert r.returncode == 2 and len(errors(r)) == 1 and "LIVETOK_MAX_GLOB_STARS" in r.stderr
    (repo / "livetok.toml").unlink()
    (repo / ".gitignore").write_text(STAR_GLOB + "\n", encoding="utf-8")
    r = livetok(repo, "check")
    clean(r)
    assert r.returncode == 0 and len(warnings_of(r)) == 1, r.stderr


# -- 7, 17: links out of the repository, loops and deep chains are passed over --------------------


def test_links_to_secrets_are_not_followed(repo: Path) -> None:
    secret = repo.parent / "home" / ".env"
    secret.write_text(f"TOKEN={SECRET}\n\nmore\n", encoding="utf-8")
    (repo / "docs").mkdir()
    (repo / "docs" / "x.md").symlink_to(secret)
    (repo / "docs" / "passwd.md").symlink_to("/etc/passwd")
    (repo / "docs" / "inside.md").symlink_to(repo / "README.md")
    (repo / "README.md").write_text("# Read me\n\nfine words\n", encoding="utf-8")
    (repo / "livetok.toml").write_text(
        '[[budget]]\nfiles = ["**/*.md"]\nchunk = { max = 0, by = "paragraph" }\n',
        encoding="utf-8")
    r = livetok(repo, "check", "--format", "json", "--summary")
    clean(r)
    out = json.loads(r.stdout)
    assert {v["path"] for v in out["verdicts"]} == {"README.md", "docs/inside.md"}
    assert {w["path"] for w in out["warnings"]} == {"docs/x.md", "docs/passwd.md"}
    r = livetok(repo, "check", "docs/x.md")
    clean(r)
    assert r.returncode == 2 and "outside" in r.stderr, r.stderr


def test_link_loops_and_deep_chains_are_skipped(repo: Path) -> None:
    (repo / "loop.md").symlink_to(repo / "loop.md")
    deep_folder(repo, 1500, "d")
    (repo / "ok.md").write_text("---\ntokens: 1\n---\nsome words here\n", encoding="utf-8")
    try:
        r = livetok(repo, "check", "--format", "json")
    finally:
        remove_chain(repo, 1500, "d")
    clean(r)
    out = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr  # ok.md is over its budget; nothing stopped the check
    assert [v["path"] for v in out["verdicts"]] == ["ok.md"]
    reasons = " ".join(w["message"] for w in out["warnings"])
    assert "nested deeper than 100 folders" in reasons and "leads nowhere" in reasons


# -- 13: a huge file is refused before it is read ----------------------------------------------


def test_huge_markdown_file_is_refused_unread(repo: Path) -> None:
    with open(repo / "huge.md", "wb") as f:  # sparse: 200 MB that take no disk
        f.truncate(200 << 20)
    (repo / "ok.md").write_text("---\ntokens: 100\n---\nwords\n", encoding="utf-8")
    r = livetok(repo, "check", "--format", "json")
    clean(r)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and [w["path"] for w in out["warnings"]] == ["huge.md"]
    assert "LIVETOK_MAX_CHECK_BYTES" in out["warnings"][0]["message"]
    r = livetok(repo, "check", "huge.md")
    clean(r)
    assert r.returncode == 2 and len(errors(r)) == 1, r.stderr


# -- 4, 5, 10, 14: tokenizer files a repository names need trust, and stay inside it ------------


HOSTILE_TOKENIZER = {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
    "normalizer": None,
    "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a|aa)+$"},
                      "behavior": "Isolated", "invert": False},
    "post_processor": None, "decoder": None,
    "model": {"type": "WordLevel", "vocab": {"a": 0, "[UNK]": 1}, "unk_token": "[UNK]"},
}


@pytest.mark.parametrize("where", ["inside", "../../etc/passwd", "/etc/passwd", "~/.bashrc"])
def test_budget_file_tokenizers_need_trust_and_stay_inside(repo: Path, where: str) -> None:
    (repo / "t").mkdir()
    (repo / "t" / "tokenizer.json").write_text(json.dumps(HOSTILE_TOKENIZER), encoding="utf-8")
    (repo / "a.md").write_text("a" * 48 + "!\n", encoding="utf-8")
    name = "t/tokenizer.json" if where == "inside" else where
    (repo / "livetok.toml").write_text(
        f'encoding = "{name}"\n[[budget]]\nfiles = ["*.md"]\nmax = 5\n', encoding="utf-8")
    r = livetok(repo, "check")
    clean(r)
    assert r.returncode == 2 and len(errors(r)) == 1, r.stderr
    if where == "inside":
        assert "--trust-tokenizers" in r.stderr
    else:
        assert "root:" not in r.stderr and "folder" in r.stderr, r.stderr


def test_setting_paths_are_tokenizer_files_inside_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "m").mkdir(parents=True)
    (ws / "m" / "tokenizer.json").write_text("{}", encoding="utf-8")
    for raw, why in [("../../../../etc/passwd", "neither"), ("~/.bashrc", "neither"),
                     ("/etc/passwd", "neither"), ("../elsewhere.json", "leads out"),
                     ("m/tokenizer.json", "trustWorkspaceTokenizers"),
                     (str(ws / "m"), "trustWorkspaceTokenizers")]:
        s = parse_settings({"tokenizer": raw}, root=str(ws))
        refusal = s.refusal(s.default_encoding)
        assert refusal is not None and why in refusal, (raw, refusal)
    trusted = parse_settings({"tokenizer": "m/tokenizer.json", "trustWorkspaceTokenizers": True},
                             root=str(ws))
    assert trusted.refusal(trusted.default_encoding) is None
    assert parse_settings({"tokenizer": "hf:org/x"}).refusal("hf:org/x") is None
    # a didChangeConfiguration (eglot passes .dir-locals.el there) can turn the trust off only
    later = parse_settings({"trustWorkspaceTokenizers": True}, s, grant_trust=False)
    assert later.refusal(later.default_encoding) is not None
    off = parse_settings({"trustWorkspaceTokenizers": False}, trusted, grant_trust=False)
    assert off.refusal(off.default_encoding) is not None
    assert parse_settings(None).refusal("o200k_base") is None


# -- the language server in a hostile workspace -------------------------------------------------


LIMITED_SERVER = [sys.executable, "-c", (
    "import resource, runpy; "
    f"resource.setrlimit(resource.RLIMIT_AS, ({AS_LIMIT}, {AS_LIMIT})); "
    "runpy.run_module('livetok.server', run_name='__main__')")]


def hostile_workspace(ws: Path) -> dict[str, str]:
    """Every hostile shape in one workspace (each in a folder of its own, so that its budget
    file rules only there) beside healthy files; name -> text of the document to open."""
    docs: dict[str, str] = {}

    def put(rel: str, text: str, *, doc: bool = True) -> None:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        if doc:
            docs[rel] = text

    put("livetok.toml", '[[budget]]\nfiles = ["healthy.md"]\nmax = 3\n', doc=False)
    put("healthy.md", "# Healthy\n\nThese words are counted exactly, as tiktoken counts them.\n")
    put("notes.txt", "plain notes, no budget at all\n")
    put("baseline_out/livetok.toml", 'baseline = "../../home/.bash_profile"\n' + SECTION_RULES,
        doc=False)
    put("baseline_out/a.md", HEADING_DOC)
    put("devzero/livetok.toml", 'baseline = "/dev/zero"\n' + SECTION_RULES, doc=False)
    put("devzero/a.md", HEADING_DOC)
    put("fifo/livetok.toml", SECTION_RULES, doc=False)
    os.mkfifo(ws / "fifo" / ".livetok-baseline.json")
    put("fifo/a.md", HEADING_DOC)
    put("bomb/a.md", alias_bomb())
    put("deep/livetok.toml", nested_toml(), doc=False)
    put("deep/a.md", "words\n")
    put("many/livetok.toml", many_tables(), doc=False)
    put("many/a.md", "words\n")
    put("glob/livetok.toml", f'[[budget]]\nfiles = ["{STAR_GLOB}"]\nmax = 1\n', doc=False)
    put("/".join(["glob"] + ["aa"] * 80 + ["x.md"]), "words\n")
    put("tok/t/tokenizer.json", json.dumps(HOSTILE_TOKENIZER), doc=False)
    put("tok/livetok.toml", 'encoding = "t/tokenizer.json"\n[[budget]]\nfiles = ["*.md"]\n'
        'max = 5\n', doc=False)
    put("tok/a.md", "a" * 48 + "!\n")
    fm = "".join(f"k{i}: {'v' * 60}\n" for i in range(30_000))
    put("bigfm/a.md", f"---\n{fm}tokens: 1\n---\n# Hi\n")
    return docs


async def _end(client: LanguageClient) -> None:
    """Shut the session down; the server process ends even when it does not answer (a
    server stuck in a hostile regex would otherwise outlive the test)."""
    try:
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop(client)


async def _start(ws: Path, options: dict[str, Any] | None = None) -> LanguageClient:
    client = await ClientServerConfig(server_command=LIMITED_SERVER,
                                      server_env={**os.environ}).start()

    @client.feature("livetok/didChangeTokenCount")
    def _count(params: Any) -> None:
        pass

    await asyncio.wait_for(client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=["utf-16"]),
            text_document=types.TextDocumentClientCapabilities(
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities())),
        root_uri=ws.as_uri(), workspace_folders=[types.WorkspaceFolder(uri=ws.as_uri(),
                                                                       name="ws")],
        initialization_options=options)), TIMEOUT)
    return client


async def test_server_in_a_hostile_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (tmp_path / "home").mkdir()
    docs = hostile_workspace(ws)
    client = await _start(ws)
    ref = tiktoken_ref("o200k_base")
    took: dict[str, float] = {}
    try:
        for rel, text in docs.items():
            uri = (ws / rel).as_uri()
            t0 = time.perf_counter()
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="markdown",
                                                     version=1, text=text)))
            got = result_dict(await token_count(client, uri))
            took[rel] = time.perf_counter() - t0
            assert got["tokens"] >= 0
            if rel in ("healthy.md", "notes.txt"):
                assert got["tokens"] == len(ref.encode_ordinary(text)), rel
        # a keystroke below 2 MB of front matter, and one in the healthy file, answered
        big = (ws / "bigfm" / "a.md").as_uri()
        n = docs["bigfm/a.md"].count("\n")
        for i in range(3):
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=big, version=2 + i),
                content_changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(n, 0), end=types.Position(n, 0)),
                    text="x")]))
            await token_count(client, big)
        healthy = (ws / "healthy.md").as_uri()
        got = result_dict(await token_count(client, healthy))
        assert got["tokens"] == len(ref.encode_ordinary(docs["healthy.md"]))
        # what the server said: short diagnostics, the refusals named, no file written outside
        # (once all arrived: a hang guard, where a 0.3 s sleep was a race on a busy machine)

        def said_so_far() -> str:
            return json.dumps({u: [d.message for d in ds] for u, ds in client.diagnostics.items()})

        await poll(lambda: all(w in said_so_far() for w in (
            "alias", "trust", "nested too deeply", "LIVETOK_MAX_GLOB_STARS"))
            and bool(client.diagnostics.get(healthy)))
        diags = {uri: [d.message for d in ds] for uri, ds in client.diagnostics.items()}
        assert all(len(m) < 2000 for ms in diags.values() for m in ms)
        said = json.dumps(diags)
        assert "alias" in said and "trust" in said and "nested too deeply" in said, said[:3000]
        assert "LIVETOK_MAX_GLOB_STARS" in said
        assert healthy in diags and diags[healthy]  # over its budget of 3
        assert not list((tmp_path / "home").iterdir())
        assert client._server is not None and client._server.returncode is None
        print("open -> count answered (s):", {k: round(v, 3) for k, v in took.items()})
    finally:
        await _end(client)
    # livetok check . on the same workspace: every problem one short line, the healthy file's
    # verdict exact, nothing written outside
    r = livetok(ws, "check", ".", "--format", "json")
    clean(r)
    out = json.loads(r.stdout)
    assert r.returncode == 2 and out["errors"]
    verdict = next(v for v in out["verdicts"] if v["path"] == "healthy.md")
    assert verdict["tokens"] == len(ref.encode_ordinary(docs["healthy.md"]))
    assert not list((tmp_path / "home").iterdir())


async def test_server_refuses_workspace_tokenizer_settings(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "m").mkdir(parents=True)
    (ws / "m" / "tokenizer.json").write_text(json.dumps(HOSTILE_TOKENIZER), encoding="utf-8")
    text = "a" * 48 + "!\n"
    cases = [({"tokenizer": "m/tokenizer.json"}, "trustWorkspaceTokenizers"),
             ({"tokenizer": "../../../../etc/passwd"}, "neither"),
             ({"tokenizer": "~/.bashrc"}, "neither")]
    # a server for each: the home folder's one under slow (refused by the same settings check,
    # which test_setting_paths_are_tokenizer_files_inside_the_workspace runs on every path)
    for options, why in cases if SLOW else cases[:2]:
        client = await _start(ws, options)
        try:
            uri = (ws / "a.txt").as_uri()
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="plaintext",
                                                     version=1, text=text)))
            got = result_dict(await token_count(client, uri))
            # counted with the default encoding instead, and the user is told why
            assert got["encoding"] == "o200k_base"
            assert got["tokens"] == len(tiktoken_ref("o200k_base").encode_ordinary(text))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + TIMEOUT
            while not client.messages and loop.time() < deadline:
                await asyncio.sleep(0.02)
            assert len(client.messages) == 1 and why in client.messages[0].message
        finally:
            await _end(client)


async def test_trusted_hostile_tokenizer_is_bounded_in_the_server(tmp_path: Path) -> None:
    """Trusted, a tokenizer.json whose normalizer multiplies the text (24 chained
    ``Replace a -> aa``) is still bounded: its document's request gets an LSP error naming
    the limit, another document is counted, the server goes on."""
    from pygls.exceptions import JsonRpcException

    ws = tmp_path / "ws"
    (ws / "m").mkdir(parents=True)
    tok = {**HOSTILE_TOKENIZER, "pre_tokenizer": None, "normalizer": {
        "type": "Sequence",
        "normalizers": [{"type": "Replace", "pattern": {"String": "a"}, "content": "aa"}] * 24}}
    (ws / "m" / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    client = await _start(ws, {"tokenizer": "m/tokenizer.json", "trustWorkspaceTokenizers": True})
    try:
        bad, good = (ws / "a.txt").as_uri(), (ws / "b.txt").as_uri()
        for uri, text in ((bad, "a" * 1000), (good, "hello")):
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="plaintext",
                                                     version=1, text=text)))
        with pytest.raises(JsonRpcException, match="LIVETOK_MAX_NORMALIZER_GROWTH"):
            await token_count(client, bad)
        got = result_dict(await token_count(client, good))
        assert got["tokens"] == 1 and got["encoding"].endswith("tokenizer.json")
        assert client._server is not None and client._server.returncode is None
    finally:
        await _end(client)


# -- issue 34 rows 2, 5, 7, 8, 10: globs that cannot backtrack, many rules, .gitignore files
# -- above the folder, names written to a terminal -------------------------------------------

#: 18 characters that pathspec's regex matched by backtracking: minutes against 200 a's
SINGLE_STARS = "*a*a*a*a*a*a*a*a*b"


def test_single_star_globs_do_not_backtrack(repo: Path) -> None:
    """Row 2: in a .gitignore and in a budget file's files, against names of 200 a's (before:
    still running at the hang guard; 10,000 such names: see docs/security.md)."""
    for i in range(200):
        (repo / f"{'a' * 200}{i}.md").write_text("some words\n", encoding="utf-8")
    (repo / f"{'a' * 199}b").write_text("ignored words\n", encoding="utf-8")
    (repo / "d").mkdir()
    (repo / "d" / f"{'a' * 150}xb.md").write_text("budgeted words\n", encoding="utf-8")
    (repo / ".gitignore").write_text(SINGLE_STARS + "\n", encoding="utf-8")
    (repo / "livetok.toml").write_text(
        f'[[budget]]\nfiles = ["*a*a*a*a*a*a*a*a*b.md", "{SINGLE_STARS}"]\nmax = 1\n',
        encoding="utf-8")
    r = livetok(repo, "check", "--format", "json")
    clean_stderr(r)
    out = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr  # d/aaa...xb.md is over its budget of 1
    assert [v["path"] for v in out["verdicts"]] == [f"d/{'a' * 150}xb.md"]
    r = livetok(repo, "count", "-r", ".", "--no-cache", "--format", "json")
    clean_stderr(r)
    assert r.returncode == 0, r.stderr
    names = json.dumps(json.loads(r.stdout)["trees"][0]["tree"])
    assert f"{'a' * 200}199.md" in names and f"{'a' * 199}b\"" not in names


async def test_server_maps_a_workspace_with_single_star_globs(tmp_path: Path) -> None:
    """Row 2 in the server: the workspace map walks the same globs (before: the server
    stopped answering once the map started)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "home").mkdir()
    for i in range(100):
        (ws / f"{'a' * 200}{i}.md").write_text("words\n", encoding="utf-8")
    (ws / f"{'a' * 199}b").write_text("ignored\n", encoding="utf-8")
    (ws / ".gitignore").write_text(SINGLE_STARS + "\n", encoding="utf-8")
    text = "These words are counted exactly, as tiktoken counts them.\n"
    (ws / "healthy.md").write_text(text, encoding="utf-8")
    client = await _start(ws)
    try:
        got = result_dict(await asyncio.wait_for(
            request(client, "livetok/workspaceCounts", {"wait": 60_000}), TIMEOUT))
        assert got["complete"] is True, str(got)[:500]
        (folder,) = got["folders"]
        assert folder["files"] == 102  # the 100 names, healthy.md and the .gitignore
        uri = (ws / "healthy.md").as_uri()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="markdown", version=1,
                                                 text=text)))
        got = result_dict(await token_count(client, uri))
        assert got["tokens"] == len(tiktoken_ref("o200k_base").encode_ordinary(text))
    finally:
        await _end(client)


@pytest.mark.slow
def test_a_gitignore_of_150000_lines_is_not_tried_line_by_line(repo: Path) -> None:
    """Row 5: 150,000 lines (1.8 MB); each path tries only the globs whose literal part it
    holds (before: ~60 ms a path, 2,000 files 140 s, past the hang guard)."""
    lines = [f"gen/f{i:06d}.tmp" if i % 2 else f"*.ext{i}" for i in range(150_000)]
    (repo / ".gitignore").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert (repo / ".gitignore").stat().st_size > 1_700_000
    for i in range(2000):
        folder = repo / f"f{i % 20}"
        folder.mkdir(exist_ok=True)
        (folder / f"n{i}.txt").write_text("x\n", encoding="utf-8")
    (repo / "gone.ext4").write_text("ignored\n", encoding="utf-8")
    r = livetok(repo, "count", "-r", ".", "--no-cache", "--format", "json")
    clean_stderr(r)
    assert r.returncode == 0, r.stderr
    tree = json.loads(r.stdout)["trees"][0]["tree"]
    assert tree["files"] == 2001 and "gone.ext4" not in json.dumps(tree)  # + the .gitignore


def test_gitignore_above_the_folder_is_read_inside_its_work_tree_only(repo: Path) -> None:
    """Row 7: a .gitignore above the mapped folder that links out of the work tree is not
    read, and a line passed over is named by number, never quoted past a short excerpt."""
    secret = repo.parent / "home" / "credentials"
    secret.write_text(f"**/**/**/{SECRET}\n{SECRET}\n", encoding="utf-8")
    (repo / ".gitignore").symlink_to(secret)
    (repo / "sub").mkdir()
    (repo / "sub" / f"{SECRET}.md").write_text("# fine\n\nwords\n", encoding="utf-8")
    (repo / "sub" / "livetok.toml").write_text('[[budget]]\nfiles = ["*.md"]\nmax = 100\n',
                                               encoding="utf-8")
    for args in (("check", "sub"), ("count", "-r", "sub", "--no-cache")):
        r = livetok(repo, *args)
        assert "Traceback" not in r.stdout + r.stderr
        assert SECRET not in r.stderr, r.stderr  # (the file named after it is in stdout)
        assert "outside" in r.stderr and "not read" in r.stderr, r.stderr
        assert r.returncode == 0, r.stderr
        # the file the line names is not ignored: checked, counted
        assert f"{SECRET}.md" in r.stdout or "1 budgets in 1 files checked" in r.stderr
    (repo / ".gitignore").unlink()
    (repo / ".gitignore").write_text(f"**/**/**/{SECRET}\n", encoding="utf-8")
    r = livetok(repo, "check", "sub")
    clean(r)
    assert "line 1 passed over" in r.stderr and "LIVETOK_MAX_GLOB_STARS" in r.stderr


@pytest.mark.parametrize("line", ["**/a/**/b/**/c", "x\\", "[z-a]", "a FIFO"])
def test_count_r_below_a_gitignore_with_a_line_passed_over(repo: Path, line: str) -> None:
    """Row 8: the warning is about a file above the folder (before: "internal error:
    AssertionError", exit 1); a .gitignore that cannot be read at all, likewise."""
    if line == "a FIFO":
        os.mkfifo(repo / ".gitignore")
    else:
        (repo / ".gitignore").write_text(f"{line}\n*.log\n", encoding="utf-8")
    (repo / "sub").mkdir()
    (repo / "sub" / "a.txt").write_text("hello world\n", encoding="utf-8")
    (repo / "sub" / "b.log").write_text("ignored\n", encoding="utf-8")
    r = livetok(repo, "count", "-r", "sub", "--no-cache")
    clean(r)
    assert r.returncode == 0, r.stderr
    assert "internal error" not in r.stderr and str(repo / ".gitignore") in r.stderr
    if line == "a FIFO":
        assert "not read" in r.stderr and "sub/b.log" in r.stdout
        return
    assert [ln.split()[-1] for ln in r.stdout.splitlines()] == ["sub/", "sub/a.txt"]
    assert "line 1 passed over" in r.stderr


def test_count_r_escapes_names(repo: Path) -> None:
    """Row 10: an ESC sequence in a name would clear the terminal, a newline forge a row."""
    (repo / "x\x1b[2J.txt").write_text("hello\n", encoding="utf-8")
    (repo / "y\n999999 forged.txt").write_text("hello\n", encoding="utf-8")
    (repo / "z\x1b]0;t\x07.bin").write_bytes(b"\0binary")
    for args in (("count", "-r", ".", "--no-cache"), ("count", "-r", ".", "--no-cache", "-v")):
        r = livetok(repo, *args)
        clean(r)
        out = r.stdout + r.stderr
        assert "\x1b" not in out and "\x07" not in out
        assert "forged" not in "".join(ln for ln in r.stdout.splitlines() if "\\n" not in ln)
        assert len(r.stdout.splitlines()) == 3, r.stdout  # the folder and two files
        assert "x\\x1b[2J.txt" in r.stdout and "y\\n999999 forged.txt" in r.stdout
    (repo / "livetok.toml").write_text('[[budget]]\nfiles = ["*.txt"]\nmax = 1\n',
                                       encoding="utf-8")
    r = livetok(repo, "check", ".")
    clean(r)
    assert r.returncode == 1 and "\x1b" not in r.stdout + r.stderr
    assert sorted(ln.split(":")[0] for ln in r.stdout.splitlines()) == [
        "x\\x1b[2J.txt", "y\\n999999 forged.txt"], r.stdout
