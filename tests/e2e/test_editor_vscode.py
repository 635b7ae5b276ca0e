"""The livetok extension inside a real VS Code: code-server (VS Code's workbench served to a
browser) runs headless, Chromium drives it with Playwright, and the packaged ``.vsix`` (built
by ``tests/e2e/test_vscode_extension.py``'s steps) is installed with ``--install-extension``.

What it checks, on a Markdown file holding emoji and CJK text:

- the status bar and the code lens show tiktoken's count for the file;
- issue 19: *livetok: Restart Server*, then ``livetok.encoding`` saved 0.2 s later (while
  the new server starts) — the status bar, the count and the lens switch to ``cl100k_base``
  and stay exact after more typing (fails on the extension before the fix: no
  ``workspace/didChangeConfiguration`` was sent);
- the livetok output channel logs no error: no ``livetok/tokenCount failed`` for the file
  opened while the server starts, no ``Server process exited with code 0`` as an error;
- issue 26: the server command comes from the user's settings; the workspace's
  ``.vscode/settings.json`` names a script of its own as ``livetok.server.path``, and VS Code
  ignores it (an application-scoped setting), so it never runs;
- issue 37 item 2: code-server is a remote window, where VS Code reads a *machine*-scoped
  value from the remote settings only: one in the user settings counts only until they are
  read again (any change to them, once the extension's schema is known), so the first start
  used the user's ``livetok.server.path`` and a restart after a settings change ran
  ``python3 -m livetok.server`` (seen with the scope set back to ``machine``: "spawn python3
  ENOENT"). With neither ``livetok`` nor ``python3`` on ``PATH`` (nothing else to fall back
  on), *Restart Server*, a crash of the server (killed; the language client starts it again),
  a change of ``livetok.server.args`` made in the user settings editor, and one more restart
  each start the user's server again, and the count stays exact.

The server is started through a wrapper that waits ``START_DELAY_S`` before running
``livetok serve``, so "while the server starts" is a window of seconds rather than a race
the machine's speed decides.

Installs code-server (about a minute, once, into ``~/.cache/livetok-editors``) with
``scripts/install-editors.sh vscode`` when it is missing, and Chromium with apt; skips,
saying why, when either cannot be had, or without node/npm. Nothing is fetched from a
marketplace: the extension gallery points at a closed local port, and the browser aborts
every request that does not go to code-server. ``LIVETOK_VSIX=path`` tests that ``.vsix``
instead of building one (e.g. one built from an older commit, to see the test fail).

Slow (``LIVETOK_SLOW=1``): about 45 s with code-server installed and the extension built,
plus ~35 s for the build and ~60 s for the first install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from .._refs import tiktoken_ref
from .test_neovim_install import bin_dir
from .test_vscode_extension import build_extension

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "scripts" / "install-editors.sh"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("npm") is None or shutil.which("node") is None,
        reason="node and npm are needed to build the extension and install code-server",
    ),
]
sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the VS Code test drives Chromium with the playwright package (pip install playwright)")

CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
START_DELAY_S = 3.0
TEXT = "# Notes\n\nHello world, 你好世界 😀 and some more words.\n\n## Part two\n\nLast line 👩\u200d💻.\n"
TYPED = " Typed 日本語のテキスト 🎉 here"
# A closed port: the gallery (marketplace) requests fail at once instead of leaving the machine.
NO_GALLERY = json.dumps({"serviceUrl": "http://127.0.0.1:9/gallery",
                         "itemUrl": "http://127.0.0.1:9/item",
                         "resourceUrlTemplate": "http://127.0.0.1:9/resource"})
USER_SETTINGS = {
    "workbench.startupEditor": "none",
    "workbench.enableExperiments": False,
    "workbench.tips.enabled": False,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "extensions.ignoreRecommendations": True,
    "security.workspace.trust.enabled": False,
    "git.enabled": False,
    # typing must produce exactly the typed text
    "editor.quickSuggestions": {"other": "off", "comments": "off", "strings": "off"},
    "editor.suggestOnTriggerCharacters": False,
    "editor.wordBasedSuggestions": "off",
    "editor.acceptSuggestionOnEnter": "off",
    "editor.autoClosingBrackets": "never",
    "editor.autoClosingQuotes": "never",
    "files.insertFinalNewline": False,
    "files.trimTrailingWhitespace": False,
}


def code_server() -> str:
    """code-server's executable, installed by ``scripts/install-editors.sh`` if need be."""
    proc = subprocess.run(["bash", str(INSTALL), "vscode"], capture_output=True, text=True,
                          timeout=900)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not os.access(lines[-1], os.X_OK):
        pytest.skip(f"code-server could not be installed: {proc.stderr.strip()[-600:]}")
    return lines[-1]


def chromium() -> str:
    exe = os.environ.get("LIVETOK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(exe):
        subprocess.run(["bash", str(INSTALL), "chromium"], capture_output=True, timeout=600)
        exe = shutil.which("chromium") or ""
    if not exe or not os.path.exists(exe):
        pytest.skip("no Chromium: apt-get install chromium (or set LIVETOK_CHROMIUM)")
    return exe


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what: str, check: Callable[[], object], timeout: float,
               describe: Callable[[], str] = lambda: "") -> object:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}. {describe()}")
        time.sleep(0.1)


class Workbench:
    """One code-server with the extension installed, a workspace, and a Chromium page on it."""

    def __init__(self, base: Path, vsix: Path) -> None:
        self.base = base
        self.ws = base / "workspace"
        (self.ws / ".vscode").mkdir(parents=True)
        self.doc = self.ws / "notes.md"
        self.doc.write_text(TEXT, encoding="utf-8")
        # the server, started late on purpose (see the module docstring)
        wrapper = base / "slow-livetok"
        wrapper.write_text(f"#!/bin/sh\nsleep {START_DELAY_S}\n"
                           f"exec {sys.executable} -m livetok.server serve\n")
        wrapper.chmod(0o755)
        # what a cloned repository would try: its own script as the server (issue 26)
        self.hostile_mark = base / "workspace-script-ran"
        hostile = self.ws / "run-me.sh"
        hostile.write_text(f"#!/bin/sh\ntouch {self.hostile_mark}\nexit 1\n")
        hostile.chmod(0o755)
        self.workspace_settings: dict[str, object] = {
            "livetok.server.path": str(hostile), "livetok.server.args": ["serve"]}
        self.write_settings()
        self.user = base / "user-data"
        (self.user / "User").mkdir(parents=True)
        (self.user / "User" / "settings.json").write_text(json.dumps(
            {**USER_SETTINGS, "livetok.server.path": str(wrapper), "livetok.server.args": []}))
        (base / "config.yaml").write_text("auth: none\n")
        self.env = {**os.environ, "EXTENSIONS_GALLERY": NO_GALLERY,
                    "XDG_CONFIG_HOME": str(base / "config"), "XDG_DATA_HOME": str(base / "data")}
        self.common = ["--user-data-dir", str(self.user), "--extensions-dir", str(base / "extensions"),
                       "--config", str(base / "config.yaml")]
        self.vsix = vsix

    def write_settings(self, **changes: object) -> None:
        self.workspace_settings.update(changes)
        (self.ws / ".vscode" / "settings.json").write_text(json.dumps(self.workspace_settings))

    def install(self, exe: str) -> None:
        proc = subprocess.run([exe, *self.common, "--install-extension", str(self.vsix)],
                              env=self.env, capture_output=True, text=True, timeout=120)
        assert "successfully installed" in proc.stdout, proc.stdout + proc.stderr

    def start(self, exe: str) -> None:
        self.port = free_port()
        self.log = open(self.base / "code-server.log", "w")
        self.proc = subprocess.Popen(
            [exe, *self.common, "--auth", "none", "--bind-addr", f"127.0.0.1:{self.port}",
             "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
             "--disable-getting-started-override", "--ignore-last-opened", str(self.ws)],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return self.proc.poll() is not None  # died: stop waiting, fail below
        wait_until("code-server to listen", listening, 60, self.server_log)
        assert self.proc.poll() is None, f"code-server exited: {self.server_log()}"

    def server_log(self) -> str:
        return "code-server log: " + (self.base / "code-server.log").read_text()[-2000:]

    def output_channel(self) -> str:
        """The livetok output channel as VS Code logged it."""
        logs = sorted((self.user / "logs").rglob("*-livetok.log"))
        return "".join(p.read_text(encoding="utf-8") for p in logs)

    def close(self) -> None:
        if getattr(self, "proc", None) is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory):
    exe = code_server()
    browser_exe = chromium()
    vsix_env = os.environ.get("LIVETOK_VSIX")
    vsix = Path(vsix_env) if vsix_env else build_extension(tmp_path_factory)["vsix"]
    assert isinstance(vsix, Path) and vsix.is_file(), f"no .vsix at {vsix}"
    wb = Workbench(tmp_path_factory.mktemp("code-server"), vsix)
    # issue 37 item 2: no livetok, no python3 on PATH: only the user's livetok.server.path
    # can start a server (VSCODE_CLI: code-server takes this PATH, not the login shell's)
    wb.env.update(PATH=str(bin_dir(wb.base / "bin", None)), VSCODE_CLI="1")
    try:
        wb.install(exe)
        wb.start(exe)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=browser_exe, headless=True,
                                         args=CHROMIUM_FLAGS)
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            local = (f"http://127.0.0.1:{wb.port}/", f"ws://127.0.0.1:{wb.port}/", "data:", "blob:")
            outside: list[str] = []

            def only_local(route) -> None:
                if route.request.url.startswith(local):
                    route.continue_()
                else:
                    outside.append(route.request.url)
                    route.abort()
            context.route("**/*", only_local)
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{wb.port}/?folder={wb.ws}")
            page.wait_for_selector(".monaco-workbench", timeout=90_000)
            wb.page = page
            wb.outside = outside
            yield wb
            browser.close()
    finally:
        wb.close()


def status_text(page) -> str:
    items = page.locator("[id='livetok.livetok']")
    return items.first.inner_text() if items.count() else ""


def lens_text(page) -> str:
    return " | ".join(page.locator(".codelens-decoration").all_inner_texts())


def expect_count(wb: Workbench, encoding: str, text: str, timeout: float) -> int:
    """Wait until the status bar and the lens show tiktoken's count of ``text`` in ``encoding``."""
    n = len(tiktoken_ref(encoding).encode_ordinary(text))
    status = re.compile(rf"^{n:,} tokens? · {encoding}( · .*)?$")
    wait_until(f"the status bar to show {n:,} {encoding} tokens",
               lambda: status.match(status_text(wb.page).strip()), timeout,
               lambda: f"status bar: {status_text(wb.page)!r}; lens: {lens_text(wb.page)!r}; "
                       f"output channel:\n{wb.output_channel()[-1500:]}")
    wait_until(f"the code lens to show {n:,} {encoding} tokens",
               lambda: f"{n:,} tokens · {encoding}" in lens_text(wb.page), 20,
               lambda: f"lens: {lens_text(wb.page)!r}")
    return n


def run_command(page, title: str) -> None:
    """Run a command from the Command Palette by its title."""
    page.keyboard.press("F1")
    box = page.locator(".quick-input-widget input")
    box.wait_for(state="visible", timeout=10_000)
    box.fill(f">{title}")
    page.locator(".quick-input-list .monaco-list-row", has_text=title).first.wait_for(timeout=10_000)
    page.keyboard.press("Enter")


def open_file(page, name: str, timeout: float = 120) -> None:
    """Open the workspace's file ``name`` with Quick Open (Ctrl+P), as a user does, and wait for
    its editor. Tried again until its tab is active: on a busy machine the workbench can still
    be loading the picker's list when Enter comes, and the keys are lost (seen at load 8)."""
    tab = page.locator(".tab.active", has_text=name)

    def opened() -> bool:
        if tab.count():
            return True
        page.keyboard.press("Escape")
        page.keyboard.press("Control+P")
        try:
            box = page.locator(".quick-input-widget input")
            box.wait_for(state="visible", timeout=15_000)
            box.fill(name)
            page.locator(".quick-input-list .monaco-list-row", has_text=name).first.wait_for(timeout=15_000)
            page.keyboard.press("Enter")
            tab.first.wait_for(timeout=15_000)
        except sync_api.TimeoutError:
            return False
        return True
    wait_until(f"{name} to open in an editor", opened, timeout)
    page.locator(".monaco-editor .view-lines").first.wait_for(timeout=30_000)


def test_counts_and_settings_change_during_restart(workbench: Workbench) -> None:
    wb, page = workbench, workbench.page
    # open the file at once: the server is still starting (START_DELAY_S)
    open_file(page, "notes.md")
    expect_count(wb, "o200k_base", TEXT, timeout=90)

    # issue 19: the setting is saved 0.2 s after the restart, while the new server starts
    run_command(page, "livetok: Restart Server")
    time.sleep(0.2)
    wb.write_settings(**{"livetok.encoding": "cl100k_base"})
    expect_count(wb, "cl100k_base", TEXT, timeout=60)

    # and it stays right while typing
    page.locator(".monaco-editor .view-lines").first.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(TYPED)
    page.keyboard.press("Control+S")
    wait_until("the typed text to be saved",
               lambda: TYPED in wb.doc.read_text(encoding="utf-8"), 20)
    saved = wb.doc.read_text(encoding="utf-8")
    assert saved == TEXT + TYPED, f"the editor typed something else: {saved!r}"
    expect_count(wb, "cl100k_base", saved, timeout=30)

    # the output channel: the restart's clean exit is not an error; nothing failed
    wait_until("the restart's exit in the output channel",
               lambda: "exited normally (code 0)" in wb.output_channel(), 20,
               lambda: f"output channel:\n{wb.output_channel()}")
    log = wb.output_channel()
    assert "[Error" not in log and "failed" not in log, f"output channel:\n{log}"
    assert wb.outside == [], f"the page asked for outside resources: {wb.outside[:5]}"
    # issue 26: the workspace's server.path was ignored, the user's ran
    assert not wb.hostile_mark.exists(), "the workspace's livetok.server.path ran"
    # issue 37 item 2: the first start and the restart both ran the user's server
    started = "starting: " + str(wb.base / "slow-livetok")
    assert log.count(started) == 2 and log.count("starting: ") == 2, f"output channel:\n{log}"

    # a crash: the language client starts the same server again, and it counts
    (victim,) = wait_until("the server's process", lambda: server_pids(wb)[:1] or None, 30)
    os.kill(victim, signal.SIGKILL)
    wait_until("the server started again after the crash", lambda: server_pids(wb) not in ([], [victim]), 60,
               lambda: f"servers: {server_pids(wb)}; output channel:\n{wb.output_channel()[-1500:]}")
    typed = " after a crash"
    type_saved(wb, typed)
    expect_count(wb, "cl100k_base", TEXT + TYPED + typed, timeout=60)

    # a change of livetok.server.args in the user settings restarts it: the user's server again
    # (made in the editor, as a user does: code-server does not see the file written behind it)
    settings = json.loads((wb.user / "User" / "settings.json").read_text())
    settings["livetok.server.args"] = ["--unused"]  # (the wrapper ignores its arguments)
    run_command(page, "Preferences: Open User Settings (JSON)")
    page.locator(".tab.active", has_text="settings.json").first.wait_for(timeout=30_000)
    page.locator(".monaco-editor .view-lines").first.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Backspace")
    page.keyboard.insert_text(json.dumps(settings))  # one line: nothing for auto-indent to do
    page.keyboard.press("Control+S")

    def saved_settings() -> object:
        try:
            return json.loads((wb.user / "User" / "settings.json").read_text())
        except ValueError:
            return None
    wait_until("the settings to be saved", lambda: saved_settings() == settings, 30,
               lambda: (wb.user / "User" / "settings.json").read_text())
    wait_until("the restart for the settings change", lambda: wb.output_channel().count(started) == 3, 60,
               lambda: f"output channel:\n{wb.output_channel()[-1500:]}")
    page.keyboard.press("Control+W")
    open_file(page, "notes.md")
    more = " and after a settings change"
    type_saved(wb, more)
    expect_count(wb, "cl100k_base", TEXT + TYPED + typed + more, timeout=60)

    # and Restart Server once the user settings were read again (what the machine scope lost)
    run_command(page, "livetok: Restart Server")
    wait_until("the restart after the settings change", lambda: wb.output_channel().count(started) == 4, 60,
               lambda: f"output channel:\n{wb.output_channel()[-1500:]}")
    last = " and after one more restart"
    type_saved(wb, last)
    expect_count(wb, "cl100k_base", TEXT + TYPED + typed + more + last, timeout=60)
    log = wb.output_channel()
    assert log.count("starting: ") == 4 and "No module named" not in log, f"output channel:\n{log}"


def type_saved(wb: Workbench, typed: str) -> None:
    """Type ``typed`` at the end of the open file and save it."""
    before = wb.doc.read_text(encoding="utf-8")
    wb.page.locator(".monaco-editor .view-lines").first.click()
    wb.page.keyboard.press("Control+End")
    wb.page.keyboard.type(typed)
    wb.page.keyboard.press("Control+S")
    wait_until("the typed text to be saved", lambda: wb.doc.read_text(encoding="utf-8") == before + typed, 20,
               lambda: f"file: {wb.doc.read_text(encoding='utf-8')!r}")


def server_pids(wb: Workbench) -> list[int]:
    """The livetok servers this code-server runs (their environment names its config folder)."""
    marker = f"XDG_CONFIG_HOME={wb.base / 'config'}".encode()
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
            if b"livetok.server" in cmdline and marker in Path(entry.path, "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return sorted(pids)
