"""tokenizer.json encodings where users meet them (issue 17, part 2): ``livetok count
--tokenizer FILE`` / ``-e hf:ORG/NAME`` / ``-e FILE``, and the language server's
``livetok.tokenizer`` setting and ``livetok/listEncodings`` request. Counts are checked
against HuggingFace ``tokenizers`` (``encode(text, add_special_tokens=False)``) on the same
file.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from .._lsp import ClientDoc, poll, request, result_dict, session, token_count
from .._refs import real_text, tiktoken_ref
from .._tokenizer_files import tokenizer_file

TEXT = ("Hello world! Llama 3's tokenizer: 12345 ünïcödé 你好世界 🙂\n\n\tdef f(x):  return x\n"
        * 20)


def livetok(*args: str, env: dict[str, str] | None = None, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "livetok.server.cli.main", *args], input=stdin,
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "LIVETOK_DEBUG": "", **(env or {})},
    )


@functools.lru_cache(maxsize=None)
def _hf_tokenizer(path: str) -> Any:
    """HuggingFace's ``Tokenizer`` of the file ``path``, read once a process (~1 s each)."""
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(path)


def _hf_count(path: Path, text: str) -> int:
    return len(_hf_tokenizer(str(path)).encode(text, add_special_tokens=False).ids)


def _fake_hub(root: Path, repo_id: str, file: Path) -> Path:
    """A Hugging Face cache holding ``file`` as ``repo_id``'s tokenizer.json (a symlink, as
    the cache's snapshots are)."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "tokenizer.json").symlink_to(file)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    return root


# -- livetok count -------------------------------------------------------------------------


def test_count_with_a_tokenizer_json(tmp_path: Path) -> None:
    path = tokenizer_file("llama3")
    f = tmp_path / "a.txt"
    text = TEXT + real_text(50_000)
    f.write_text(text, encoding="utf-8")
    want = _hf_count(path, text)
    hub = _fake_hub(tmp_path / "hub", "meta-llama/Meta-Llama-3-8B", path)
    env = {"HF_HUB_CACHE": str(hub)}
    for args in (["--tokenizer", str(path)], ["-e", str(path)],
                 ["--tokenizer", str(path.parent)],  # the model's folder
                 ["-e", "hf:meta-llama/Meta-Llama-3-8B"]):
        r = livetok("count", *args, str(f), env=env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [str(want), str(f)], args
    r = livetok("count", "--help", env=env)
    assert "hf:meta-llama/Meta-Llama-3-8B" in r.stdout and "--tokenizer" in r.stdout


@pytest.mark.parametrize("args, names", [
    (["--tokenizer", "/no/such/tokenizer.json"], "/no/such/tokenizer.json"),
    (["-e", "/no/such/tokenizer.json"], "/no/such/tokenizer.json"),
    (["-e", "hf:NoOrg/NoModel"], "hf:NoOrg/NoModel"),
    (["--tokenizer", "{tmp}"], "{tmp}"),
    (["--tokenizer", "{tmp}/bad.json"], "{tmp}/bad.json"),
    # count puts -e and --tokenizer side by side (a column each): the missing file is named
    (["-e", "o200k_base", "--tokenizer", "x.json"], "x.json"),
])
def test_count_bad_tokenizer_is_one_line(tmp_path: Path, args: list[str], names: str) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    r = livetok("count", *args, stdin="hello", env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    lines = r.stderr.splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("livetok count: " + names.replace("{tmp}", str(tmp_path))), lines
    if "hf:" in names:
        assert "huggingface-cli download NoOrg/NoModel tokenizer.json" in lines[0]


def test_replay_takes_an_encoding_or_a_tokenizer_not_both(tmp_path: Path) -> None:
    r = livetok("replay", "-e", "o200k_base", "--tokenizer", str(tmp_path / "x.json"),
                str(tmp_path / "t.json"))
    assert r.returncode == 2 and r.stderr.splitlines() == [
        "livetok replay: give -e/--encoding or --tokenizer, not both"], r.stderr


def test_replay_takes_a_tokenizer(tmp_path: Path) -> None:
    r = livetok("replay", "--tokenizer", str(tmp_path / "nope.json"), str(tmp_path / "t.json"))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "nope.json" in r.stderr


# -- the language server -------------------------------------------------------------------


async def test_server_counts_with_livetok_tokenizer(tmp_path: Path) -> None:
    path = tokenizer_file("llama3")
    want = _hf_count(path, TEXT)
    hub = _fake_hub(tmp_path / "hub", "meta-llama/Meta-Llama-3-8B", path)
    async with session("utf-16", options={"tokenizer": str(path)},
                       env={"HF_HUB_CACHE": str(hub)}) as client:
        doc = ClientDoc(client, "file:///notes.md", TEXT, "utf-16", language_id="markdown")
        got = await token_count(client, doc.uri)
        assert (got["encoding"], got["tokens"]) == (str(path), want)
        doc.change([(0, 0, "Bonjour ")])
        got = await token_count(client, doc.uri)
        assert got["tokens"] == _hf_count(path, doc.text)
        listed = result_dict(await request(client, "livetok/listEncodings", None))
        names = [e["name"] for e in listed["encodings"]]
        assert "o200k_base" in names and "hf:meta-llama/Meta-Llama-3-8B" in names
        assert all(e["description"] for e in listed["encodings"])
        assert (listed["current"], listed["tokenizer"]) == (str(path), str(path))
        # the same file by its hf: id, set as the encoding once the tokenizer is unset
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"livetok": {"tokenizer": None,
                                  "encoding": "hf:meta-llama/Meta-Llama-3-8B"}}))
        got = await token_count(client, doc.uri)
        assert got["encoding"] == "hf:meta-llama/Meta-Llama-3-8B"
        assert got["tokens"] == _hf_count(path, doc.text)


async def test_server_reads_relative_tokenizer_paths_from_the_workspace(tmp_path: Path) -> None:
    """A relative ``livetok.tokenizer`` (here a model folder) and a relative tokenizer.json
    encoding are the workspace folder's files, not the server's working folder's (loaded
    because the user trusts the workspace's tokenizers; without it they are refused:
    test_security_workspace.py)."""
    import shutil

    path = tokenizer_file("llama3")
    ws = tmp_path / "ws"
    (ws / "models" / "llama3").mkdir(parents=True)
    shutil.copy(path, ws / "models" / "llama3" / "tokenizer.json")
    want = _hf_count(path, TEXT)
    async with session("utf-16", options={"tokenizer": "models/llama3",
                                          "trustWorkspaceTokenizers": True},
                       root=str(ws)) as client:
        doc = ClientDoc(client, (ws / "notes.md").as_uri(), TEXT, "utf-16",
                        language_id="markdown")
        got = await token_count(client, doc.uri)
        assert (got["encoding"], got["tokens"]) == (
            str(ws / "models" / "llama3" / "tokenizer.json"), want)  # the folder's file
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"livetok": {"tokenizer": None,
                                  "encoding": {"markdown": "models/llama3/tokenizer.json"}}}))
        doc.change([(0, 0, "Bonjour ")])
        got = await token_count(client, doc.uri)
        assert got["encoding"] == str(ws / "models" / "llama3" / "tokenizer.json")
        assert got["tokens"] == _hf_count(path, doc.text)


async def test_server_bad_tokenizer_is_shown_and_the_default_serves(tmp_path: Path) -> None:
    bad = tmp_path / "missing" / "tokenizer.json"
    async with session("utf-16", options={"tokenizer": str(bad)}) as client:
        a = ClientDoc(client, "file:///a.txt", "hello world", "utf-16")
        b = ClientDoc(client, "file:///b.txt", "hello there", "utf-16")
        got = await token_count(client, a.uri)
        assert (got["encoding"], got["tokens"]) == (
            "o200k_base", len(tiktoken_ref("o200k_base").encode_ordinary("hello world")))
        await token_count(client, b.uri)
        await poll(lambda: bool(client.messages))
        shown = [m.message for m in client.messages]
        assert len(shown) == 1 and str(bad) in shown[0] and "livetok.tokenizer" in shown[0]
        assert sum(str(bad) in m.message for m in client.log_messages) == 2


def test_budget_file_takes_a_tokenizer_path(tmp_path: Path) -> None:
    """``livetok check``: a budget file's encoding may be a tokenizer.json path (relative to
    the budget file, inside its folder) or an hf: id; the file is loaded only when the user
    trusts the repository's tokenizers (``--trust-tokenizers``), and a link that leads out of
    the folder is refused even then."""
    import shutil

    from livetok.server.budgets.config import ConfigError, parse_config

    path = tokenizer_file("llama3")
    (tmp_path / "m").mkdir()
    shutil.copy(path, tmp_path / "m" / "tokenizer.json")
    rules = 'encoding = "m/tokenizer.json"\n[[budget]]\nfiles = ["*.md"]\nmax = 5\n'
    cfg = parse_config(rules, tmp_path / "livetok.toml", trust_tokenizers=True)
    assert cfg.encoding == str(tmp_path / "m" / "tokenizer.json")
    with pytest.raises(ConfigError, match="--trust-tokenizers"):
        parse_config(rules, tmp_path / "livetok.toml")
    with pytest.raises(ConfigError, match="no tokenizer.json"):
        parse_config('encoding = "nope/tokenizer.json"\n', tmp_path / "livetok.toml",
                     trust_tokenizers=True)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "tokenizer.json").symlink_to(path)
    with pytest.raises(ConfigError, match="outside"):
        parse_config('encoding = "out/tokenizer.json"\n', tmp_path / "livetok.toml",
                     trust_tokenizers=True)
    f = tmp_path / "a.md"
    f.write_text(TEXT, encoding="utf-8")
    (tmp_path / "livetok.toml").write_text(rules)
    r = livetok("check", "--format", "json", str(f))
    assert r.returncode == 2 and "--trust-tokenizers" in r.stdout, (r.stdout, r.stderr)
    r = livetok("check", "--trust-tokenizers", "--format", "json", str(f))
    assert r.returncode == 1, r.stderr
    verdict = json.loads(r.stdout)
    text = json.dumps(verdict)
    assert str(_hf_count(path, TEXT)) in text.replace(",", "")
