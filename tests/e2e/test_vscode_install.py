"""The VS Code extension's one-step install (issue 29) in a real VS Code: code-server driven by
Chromium, as in ``test_editor_vscode.py``, with the ``.vsix`` that ``scripts/package-vscode.sh``
makes (it carries livetok's wheel, built from this checkout).

On a machine where ``livetok`` is not on ``PATH`` and no setting names a server (the user's
settings name none; the workspace's ``.vscode/settings.json`` names a script of its own, which
VS Code ignores: ``livetok.server.*`` are machine-scoped):

- first start: opening a Markdown file shows the install's progress notification, and once the
  install is done the status bar shows tiktoken's count; the output channel names the
  environment in the extension's global storage and the server started from it;
- second start (code-server started again on the same user data): the count shows, the
  environment is reused (a file put into it survives; the output channel says "using the
  installed livetok environment" and runs no pip);
- no Python on ``PATH``: the output channel and a notification give the message
  ``docs/editors.md`` quotes, and no server starts.

``PATH`` is a folder of links to this machine's executables without Python's, pip's and
livetok (``test_neovim_install.bin_dir``); the Python of the first two sessions is ``python3``,
a script that runs the tests' own Python once the file ``gate`` exists, so the progress
notification is seen while the extension looks for Python, whatever the machine's speed. pip
installs offline from the wheelhouse of ``test_neovim_install.wheelhouse`` (``PIP_NO_INDEX``,
``PIP_FIND_LINKS``: pip's own environment variables, which the extension passes on).

Slow (``LIVETOK_SLOW=1``): about 3 minutes (three code-server sessions, the install ~15 s),
plus the extension's build (``test_vscode_extension.build_extension``, ~35 s).
``LIVETOK_BUNDLED_VSIX=path`` tests that ``.vsix`` instead of packaging one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

# pytestmark: slow, and skipped without node and npm; importing the module skips this one too
# without playwright, whose sync_api it imports
from .test_editor_vscode import (  # noqa: F401 (pytestmark is read by pytest)
    CHROMIUM_FLAGS, TEXT, USER_SETTINGS, Workbench, chromium, code_server, expect_count, pytestmark, status_text,
    sync_api, wait_until,
)
from .test_neovim_install import BASE_PYTHON, bin_dir, documented_messages, pip_env, wheelhouse
from .test_vscode_extension import build_extension

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scripts" / "package-vscode.sh"

#: the extension's global storage under code-server's user data (publisher.name)
STORAGE = Path("User") / "globalStorage" / "livetok.livetok"


@pytest.fixture(scope="module")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``.vsix`` with the wheel: ``scripts/package-vscode.sh`` run on a copy of the
    extension ``build_extension`` built (its ``node_modules`` reused); ``LIVETOK_BUNDLED_VSIX``
    names one made before instead (e.g. from an older commit, to see the test fail)."""
    if os.environ.get("LIVETOK_BUNDLED_VSIX"):
        return Path(os.environ["LIVETOK_BUNDLED_VSIX"])
    built: Path = build_extension(tmp_path_factory)["dir"]  # type: ignore[assignment]
    work = tmp_path_factory.mktemp("vscode-bundled") / "livetok-vscode"
    shutil.copytree(built, work, symlinks=True, ignore=shutil.ignore_patterns("*.vsix", "bundled"))
    out = work.parent / "livetok-bundled.vsix"
    proc = subprocess.run(["bash", str(PACKAGE), str(out)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "LIVETOK_VSCODE_DIR": str(work), "PYTHON": sys.executable})
    assert proc.returncode == 0, f"package-vscode.sh exited {proc.returncode}:\n{proc.stderr[-4000:]}"
    assert proc.stdout.strip().splitlines()[-1] == str(out), proc.stdout
    with zipfile.ZipFile(out) as zf:
        wheels = [n for n in zf.namelist() if re.fullmatch(r"extension/bundled/livetok-[^/]+\.whl", n)]
    assert len(wheels) == 1, f"the .vsix carries {wheels}"
    return out


def wheel_name(vsix: Path) -> str:
    with zipfile.ZipFile(vsix) as zf:
        return next(Path(n).name for n in zf.namelist() if n.startswith("extension/bundled/"))


def workbench(base: Path, vsix: Path, path: Path, env: dict[str, str]) -> Workbench:
    """A code-server set-up whose user settings name no livetok server, with ``PATH`` =
    ``path`` and ``env`` added to its environment."""
    wb = Workbench(base, vsix)  # its workspace names its own script as livetok.server.path
    (wb.user / "User" / "settings.json").write_text(json.dumps(USER_SETTINGS))
    # VSCODE_CLI: the server takes this environment as it is; without it, VS Code's server
    # reads PATH anew from the user's login shell (resolveShellEnv), where python3 is found
    wb.env.update(PATH=str(path), VSCODE_CLI="1", **env)
    for var in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
        wb.env.pop(var, None)
    return wb


@contextmanager
def session(wb: Workbench, exe: str, browser_exe: str) -> Iterator[object]:
    """code-server started on ``wb``, a Chromium page on its workspace with ``notes.md`` open;
    everything stopped at the end."""
    wb.start(exe)
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=browser_exe, headless=True, args=CHROMIUM_FLAGS)
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            local = (f"http://127.0.0.1:{wb.port}/", f"ws://127.0.0.1:{wb.port}/", "data:", "blob:")
            context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(local)
                          else route.abort())
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{wb.port}/?folder={wb.ws}")
            page.wait_for_selector(".monaco-workbench", timeout=90_000)
            page.keyboard.press("Control+P")
            page.locator(".quick-input-widget input").fill("notes.md")
            page.locator(".quick-input-list .monaco-list-row", has_text="notes.md").first.wait_for(timeout=15_000)
            page.keyboard.press("Enter")
            page.locator(".monaco-editor .view-lines").first.wait_for(timeout=15_000)
            wb.page = page
            yield page
            browser.close()
    finally:
        wb.close()


def notifications(page) -> str:
    """The text of the notifications on screen."""
    return " | ".join(page.locator(".notification-toast").all_inner_texts())


def channel_logs(wb: Workbench) -> set[Path]:
    """The livetok output channel's log files so far (one per code-server session)."""
    return set((wb.user / "logs").rglob("*-livetok.log"))


@pytest.fixture(scope="module")
def editors() -> tuple[str, str]:
    """code-server's and Chromium's executables."""
    return code_server(), chromium()


def test_first_start_installs_and_counts_second_start_reuses(tmp_path: Path, vsix: Path,
                                                              editors: tuple[str, str]) -> None:
    exe, browser_exe = editors
    wheels = wheelhouse()
    path = bin_dir(tmp_path / "bin", None)
    gate = tmp_path / "gate"
    (path / "python3").write_text(f"#!/bin/sh\nwhile [ ! -e '{gate}' ]; do sleep 0.1; done\n"
                                  f"exec '{BASE_PYTHON}' \"$@\"\n")
    (path / "python3").chmod(0o755)
    wb = workbench(tmp_path / "cs", vsix, path, pip_env(wheels))
    wb.install(exe)
    env_dir = wb.user / STORAGE / "env"
    started = f"starting: {env_dir / 'bin' / 'python'} -I -m livetok.server serve"

    with session(wb, exe, browser_exe) as page:
        # the probe of python3 waits for the gate: the progress notification is up meanwhile
        wait_until("the install's progress notification",
                   lambda: "installing the language server" in notifications(page), 120,
                   lambda: f"notifications: {notifications(page)!r}; output:\n{wb.output_channel()[-1500:]}")
        gate.touch()
        expect_count(wb, "o200k_base", TEXT, timeout=600)
        log = wb.output_channel()
    assert f"installed {wheel_name(vsix)} into {env_dir}" in log, log
    assert " -m pip install " in log and started in log, log
    stamp = json.loads((env_dir / "livetok-bundled.json").read_text(encoding="utf-8"))
    assert stamp["wheel"] == wheel_name(vsix)
    assert sorted(p.name for p in env_dir.parent.iterdir()) == ["env"], "a half-made environment was left"

    marker = env_dir / "marker"
    marker.write_text("")
    before = channel_logs(wb)
    with session(wb, exe, browser_exe):
        expect_count(wb, "o200k_base", TEXT, timeout=300)
        second = "".join(p.read_text(encoding="utf-8") for p in sorted(channel_logs(wb) - before))
    assert f"using the installed livetok environment {env_dir} ({wheel_name(vsix)})" in second, second
    assert started in second, second
    assert "-m pip" not in second and "-m venv" not in second, second
    assert marker.exists(), "the second start made the environment again"
    assert not wb.hostile_mark.exists(), "the workspace's livetok.server.path ran"


def test_without_python_the_documented_message(tmp_path: Path, vsix: Path, editors: tuple[str, str]) -> None:
    exe, browser_exe = editors
    documented = [m for m in documented_messages() if "livetok: Restart Server" in m]
    assert len(documented) == 1, f"docs/editors.md quotes no VS Code message: {documented_messages()}"
    message = documented[0]
    wb = workbench(tmp_path / "cs", vsix, bin_dir(tmp_path / "bin", None), {})
    wb.install(exe)
    with session(wb, exe, browser_exe) as page:
        wait_until("the message in the output channel", lambda: message in wb.output_channel(), 120,
                   lambda: f"output:\n{wb.output_channel()[-2000:]}")
        wait_until("the message as a notification", lambda: message in notifications(page), 30,
                   lambda: f"notifications: {notifications(page)!r}")
        assert status_text(page) == ""
        log = wb.output_channel()
    assert "starting: " not in log, log
    assert not (wb.user / STORAGE / "env").exists()
