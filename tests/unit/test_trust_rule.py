"""The one trust rule and the one bounded read for tokenizer files (issue 34, rows 1 and 6, in
process): ``trust.tokenizer_refusal`` over every workspace folder, ``trust.file_sha256`` and
the core's vocabulary reader refusing a FIFO or a device at once, never waiting on it.

A read that could block runs in a daemon thread joined with a hang guard: a reader that
waited on a FIFO fails the test instead of hanging the suite.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from livetok.server import trust
from livetok.server.lsp.settings import parse_settings, workspace_folders
from livetok.server.workspace.count_store import encoding_identity

#: a hang guard, not a timing: each call below returns in microseconds
HANG = 30.0

linux_only = pytest.mark.skipif(not (hasattr(os, "mkfifo") and os.path.exists("/dev/zero")),
                                reason="FIFOs and /dev/zero")


def outcome(fn: Callable[[], Any]) -> BaseException | Any:
    """``fn()``'s result or exception, run in a thread that must end within :data:`HANG`."""
    got: list[Any] = []

    def run() -> None:
        try:
            got.append(fn())
        except BaseException as exc:  # noqa: BLE001 (handed back to the test)
            got.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG)
    assert not t.is_alive(), f"{fn}: still reading after {HANG} s (it blocks)"
    return got[0]


@pytest.fixture
def unreadable(tmp_path: Path) -> list[Path]:
    """A FIFO and a link to /dev/zero, both named like a tokenizer.json."""
    if not (hasattr(os, "mkfifo") and os.path.exists("/dev/zero")):
        pytest.skip("FIFOs and /dev/zero")
    fifo, zero = tmp_path / "fifo.json", tmp_path / "zero.json"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    return [fifo, zero]


def test_the_bounded_reads_refuse_a_fifo_or_a_device_unread(unreadable: list[Path]) -> None:
    from livetok.incremental.vocab.readers import read_vocabulary

    for path in unreadable:
        for read in (lambda: read_vocabulary(str(path)),
                     lambda: trust.file_sha256(path, root=None, limit=1 << 20, what="x"),
                     lambda: encoding_identity(str(path))):
            exc = outcome(read)
            assert isinstance(exc, ValueError) and "regular file" in str(exc), (path, exc)


def test_file_sha256_is_the_files_and_bounded(tmp_path: Path) -> None:
    f = tmp_path / "tokenizer.json"
    f.write_bytes(b"x" * 3_000_000)
    assert trust.file_sha256(f, root=None, limit=1 << 22, what="x") == \
        hashlib.sha256(f.read_bytes()).hexdigest()
    with pytest.raises(trust.UntrustedFile, match="LIVETOK_X"):
        trust.file_sha256(f, root=None, limit=1 << 20, what="x", env="LIVETOK_X")


def test_every_workspace_folder_is_the_workspace(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        (folder / "m").mkdir(parents=True)
        (folder / "m" / "tokenizer.json").write_text("{}", encoding="utf-8")
    folders = workspace_folders([{"uri": first.as_uri()}, {"uri": second.as_uri()}])
    assert folders == (str(first), str(second))
    tok = str(second / "m" / "tokenizer.json")
    s = parse_settings({"tokenizer": tok}, root=str(first))
    assert s.refusal(tok) is None  # the first folder alone: the old blind spot (row 6)
    why = s.refusal(tok, folders)
    assert why is not None and "trustWorkspaceTokenizers" in why
    trusted = parse_settings({"tokenizer": tok, "trustWorkspaceTokenizers": True},
                             root=str(first))
    assert trusted.refusal(tok, folders) is None
    # a model folder is its tokenizer.json; outside every folder: the user's own file
    assert "trustWorkspaceTokenizers" in (s.refusal(str(second / "m"), folders) or "")
    outside = tmp_path / "mine.json"
    outside.write_text("{}", encoding="utf-8")
    assert s.refusal(str(outside), folders) is None


def test_what_a_path_resolves_to_must_be_a_regular_file_within_the_bound(
        tmp_path: Path, unreadable: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    for path in unreadable:  # trusted (outside any workspace) or not
        why = outcome(lambda: trust.tokenizer_refusal(str(path)))
        assert why is not None and ("regular file" in why or "neither" in why), why
        why = trust.tokenizer_refusal(str(path), workspace=[tmp_path])
        assert why is not None and ("trustWorkspaceTokenizers" in why or "neither" in why)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"x": "y" * 2000}), encoding="utf-8")
    monkeypatch.setenv(trust.VOCAB_BYTES_ENV, "1000")
    assert trust.VOCAB_BYTES_ENV in (trust.tokenizer_refusal(str(big)) or "")
    monkeypatch.delenv(trust.VOCAB_BYTES_ENV)
    assert trust.tokenizer_refusal(str(big)) is None
    assert trust.tokenizer_refusal(str(tmp_path / "missing.json")) is None  # the load says so


@pytest.mark.parametrize("name", ["a\x00.json", "hf:org/\x00x", "x" * 5000 + ".json",
                                  "o200k_base\n"])
def test_a_name_with_a_control_character_or_too_long_is_refused(name: str) -> None:
    why = trust.tokenizer_refusal(name)
    assert why is not None and "not an encoding name or a path" in why
    assert "\x00" not in why and len(why) < 300
