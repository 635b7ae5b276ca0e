"""The README is a welcome a newcomer reads in two minutes (issue 37 item 10): what livetok is,
a picture of it at work, the install for each editor and the command line, three commands and
a few lines of library use that work as written, and links into ``docs/``; the reference
(limits, environment variables, test timings) lives in ``docs/``, not here."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
import yaml

from livetok.server.cli.main import build_parser

from ..conftest import ROOT

README = ROOT / "README.md"


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", _text(), re.M | re.S)


def test_it_reads_in_two_minutes() -> None:
    """About 230 words a minute: at most ~450 words of prose and code, 80 lines."""
    text = _text()
    assert len(text.splitlines()) <= 80, len(text.splitlines())
    assert len(text.split()) <= 450, len(text.split())


def test_no_reference_material() -> None:
    """No measurement, date, commit or environment variable: those are in docs/."""
    text = _text()
    for what, pattern in [("a timing", r"\b\d+ min \d+ s\b|\b\d+(?:\.\d+)? s\b"),
                          ("a date", r"\b20\d\d-\d\d-\d\d\b"),
                          ("a commit", r"\b[0-9a-f]{7,40}\b"),
                          ("an environment variable", r"\bLIVETOK_[A-Z_]+")]:
        found = re.findall(pattern, text)
        assert not found, f"README.md holds {what}: {found}"


def test_the_picture_and_every_link_exist() -> None:
    text = _text()
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", text)
    assert len(images) == 1, images
    assert (ROOT / images[0]).is_file(), f"{images[0]} is missing"
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages = re.findall(r"\b[\w.-]+\.md\b", yaml.safe_dump(nav))
    links = re.findall(r"(?<!!)\[[^\]]+\]\(([^)]+)\)", text)
    assert links, "no links into docs/"
    for link in links:
        path, _, _anchor = link.partition("#")
        assert (ROOT / path).is_file(), link
        if path.startswith("docs/"):
            assert path.removeprefix("docs/") in pages, f"{path} is not in mkdocs.yml's nav"


def test_install_for_each_editor_and_the_two_set_up_commands() -> None:
    text = _text()
    for editor in ("**VS Code**", "**Neovim**", "**Emacs**", "**Command line"):
        assert editor in text, editor
    sh = "\n".join(_blocks("sh"))
    assert ("python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/livetok count "
            "README.md") in sh
    assert "\nbash scripts/test.sh\n" in sh
    for path in ("scripts/package-vscode.sh", "demo/neovim", "demo/emacs/livetok.el"):
        assert path in text and (ROOT / path).exists(), path


def test_the_three_commands_parse() -> None:
    """Each ``$ livetok ...`` line is a command and options livetok takes."""
    lines = [line for block in _blocks("console") for line in block.splitlines()
             if line.startswith("$ livetok ")]
    assert len(lines) == 3, lines
    parser = build_parser()
    for line in lines:
        argv = shlex.split(line[2:], comments=True)[1:]
        parser.parse_args(argv)  # exits 2 (SystemExit) on an unknown command or option


def test_the_library_lines_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    """The Python block, as written, on a notes.md (and its count is the encoder's)."""
    from livetok.incremental import get_encoding

    (block,) = _blocks("python")
    assert len([line for line in block.splitlines() if line.strip()]) <= 6
    text = "Some notes about tokens. " * 10 + "你好 😀\n"
    (tmp_path / "notes.md").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(README), "exec"), {})
    edited = text[:120] + "new text" + text[120:]
    assert capsys.readouterr().out == f"{len(get_encoding('o200k_base').encode(edited))}\n"
    assert os.getcwd() == str(tmp_path)
