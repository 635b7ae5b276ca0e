"""The livetok extension counts exactly in a real VS Code: the default run's one code-server test
(issue 36 decision 4: each editor keeps a real-editor test in the default run).

code-server (VS Code's workbench served to a browser) runs headless with the packaged ``.vsix``
(the one ``tests/e2e/test_vscode_extension.py`` builds, shared in its worker) installed;
Chromium, driven by Playwright, opens a Markdown file holding emoji, a ZWJ sequence and CJK
text. The status bar and the code lens show tiktoken's ``o200k_base`` count of the file; then
text with CJK and an emoji is typed at its end through the editor (so VS Code sends
incremental ``didChange`` events in UTF-16 positions after astral characters), and the saved
file's count is tiktoken's again. The user's settings name the server (a ``livetok`` script
running this checkout's ``livetok.server``); nothing is fetched from outside the machine.

The slow run's tests check the rest in the same set-up: the settings race of issue 19, a crash,
restarts and the server setting's scope (``test_editor_vscode.py``), the offline install from
the bundled wheels (``test_vscode_install.py``) and the Tokens view (``test_vscode_workspace.py``).

Needs node and npm (the extension's build), the ``playwright`` package and Chromium; installs
code-server once (about two minutes, into ``~/.cache/livetok-editors``, outside the repository)
with ``scripts/install-editors.sh vscode`` when ``scripts/test.sh`` has not, and skips saying
why when any of them cannot be had. About 20 s on an idle 2-core machine once code-server is
installed and the extension built.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

# skipped (importorskip) without playwright, which the shared code-server helpers drive
from .test_editor_vscode import TEXT, TYPED, USER_SETTINGS, Workbench, chromium, code_server, expect_count, type_saved
from .test_vscode_extension import build_extension
from .test_vscode_install import session

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("node") is None,
    reason="node and npm are needed to build the extension and install code-server",
)


def test_status_bar_and_lens_count_exactly_while_typing(tmp_path_factory: pytest.TempPathFactory) -> None:
    exe, browser_exe = code_server(), chromium()
    vsix_env = os.environ.get("LIVETOK_VSIX")
    vsix = Path(vsix_env) if vsix_env else build_extension(tmp_path_factory)["vsix"]
    assert isinstance(vsix, Path) and vsix.is_file(), f"no .vsix at {vsix}"
    wb = Workbench(tmp_path_factory.mktemp("code-server"), vsix)
    # the user's settings name a livetok of this checkout, started at once (no START_DELAY_S)
    server = wb.base / "livetok"
    server.write_text(f"#!/bin/sh\nexec {sys.executable} -m livetok.server \"$@\"\n")
    server.chmod(0o755)
    (wb.user / "User" / "settings.json").write_text(json.dumps(
        {**USER_SETTINGS, "livetok.server.path": str(server), "livetok.server.args": ["serve"]}))
    wb.install(exe)
    with session(wb, exe, browser_exe):
        expect_count(wb, "o200k_base", TEXT, timeout=120)
        type_saved(wb, TYPED)
        expect_count(wb, "o200k_base", TEXT + TYPED, timeout=60)
        log = wb.output_channel()
    assert f"starting: {server} serve" in log, f"output channel:\n{log}"
    assert "[Error" not in log and "failed" not in log, f"output channel:\n{log}"
    assert not wb.hostile_mark.exists(), "the workspace's livetok.server.path ran"
