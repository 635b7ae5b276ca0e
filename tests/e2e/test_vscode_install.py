"""The VS Code extension's one-step install (issues 29, 37) in a real VS Code: code-server driven
by Chromium, as in ``test_editor_vscode.py``, with this machine's ``.vsix`` as
``scripts/package-vscode.sh <target>`` makes it (livetok's wheel built from this checkout, and
a wheel of every dependency for CPython 3.11 to 3.14).

On a machine where ``livetok`` is not on ``PATH`` and no setting names a server (the user's
settings name none; the workspace's ``.vscode/settings.json`` names a script of its own, which
VS Code ignores: ``livetok.server.*`` are application-scoped):

- issue 37 item 1, a bare machine: no package index reachable (``PIP_INDEX_URL`` pointing at a
  closed port, no pip.conf, no find-links): the first start installs from the bundled wheels,
  the exact count appears (the time to it is printed), and after *livetok: Restart Server*
  twice the count is still exact, for text typed after each restart;
- first start, with the install held at its ``venv`` step: the progress notification and the
  status bar say it installs; once done the status bar shows tiktoken's count; the output
  channel names the environment (one per interpreter) and the server started from it;
- second start (code-server started again on the same user data): the count shows, the
  environment is reused (a file put into it survives; the output channel says "using the
  installed livetok environment" and runs no pip);
- no Python on ``PATH``: the output channel gives the message ``docs/editors.md`` quotes, a
  notification that fits its toast offers *Show Output* and *Retry*, and no server starts.

``PATH`` is a folder of links to this machine's executables without Python's, pip's and
livetok (``test_neovim_install.bin_dir``), plus ``python3`` as each test says.

Slow (``LIVETOK_SLOW=1``): about 4 minutes (four code-server sessions, the install a few
seconds), plus the extension's build (``test_vscode_extension.build_extension``, ~35 s) and its
packaging (~1.5 minutes). ``LIVETOK_BUNDLED_VSIX=path`` tests that ``.vsix`` instead of
packaging one.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

# pytestmark: slow, and skipped without node and npm; importing the module skips this one too
# without playwright, whose sync_api it imports
from .test_editor_vscode import (  # noqa: F401 (pytestmark is read by pytest)
    CHROMIUM_FLAGS, TEXT, USER_SETTINGS, Workbench, chromium, code_server, expect_count, open_file, pytestmark,
    run_command, status_text, sync_api, type_saved, wait_until,
)
from .test_neovim_install import BASE_PYTHON, bin_dir, documented_messages
from .test_vscode_extension import build_extension

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scripts" / "package-vscode.sh"

#: the extension's global storage under code-server's user data (publisher.name)
STORAGE = Path("User") / "globalStorage" / "livetok.livetok"


def host_target() -> str:
    """The ``vsce --target`` of this machine (the .vsix the tests install)."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    if sys.platform != "linux" or arch is None:
        pytest.skip(f"the tests package the .vsix for Linux x64/arm64, not {sys.platform} {platform.machine()}")
    return f"linux-{arch}"


@pytest.fixture(scope="module")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This machine's ``.vsix`` with the wheels: ``scripts/package-vscode.sh <target>`` run on a
    copy of the extension ``build_extension`` built (its ``node_modules`` reused);
    ``LIVETOK_BUNDLED_VSIX`` names one made before instead (e.g. from an older commit, to see
    the test fail)."""
    if os.environ.get("LIVETOK_BUNDLED_VSIX"):
        return Path(os.environ["LIVETOK_BUNDLED_VSIX"])
    target = host_target()
    built: Path = build_extension(tmp_path_factory)["dir"]  # type: ignore[assignment]
    work = tmp_path_factory.mktemp("vscode-bundled") / "livetok-vscode"
    shutil.copytree(built, work, symlinks=True, ignore=shutil.ignore_patterns("*.vsix", "bundled"))
    outdir = work.parent / "vsix"
    proc = subprocess.run(["bash", str(PACKAGE), target], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "LIVETOK_VSCODE_DIR": str(work), "LIVETOK_VSIX_DIR": str(outdir),
                               "PYTHON": sys.executable})
    assert proc.returncode == 0, f"package-vscode.sh exited {proc.returncode}:\n{proc.stderr[-4000:]}"
    version = json.loads((work / "package.json").read_text())["version"]
    out = outdir / f"livetok-{target}-{version}.vsix"
    assert proc.stdout.strip().splitlines() == [str(out)], proc.stdout
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        bundle = json.loads(zf.read("extension/bundled/wheels/bundle.json"))
        manifest = zf.read("extension.vsixmanifest").decode()
    wheels = [n for n in names if re.fullmatch(r"extension/bundled/livetok-[^/]+\.whl", n)]
    assert len(wheels) == 1, f"the .vsix carries {wheels}"
    assert f'TargetPlatform="{target}"' in manifest
    assert bundle["target"] == target and bundle["pythons"] == ["3.11", "3.12", "3.13", "3.14"], bundle
    # every dependency, for every Python: regex is compiled per CPython version
    deps = set(bundle["wheels"])
    for pyv in bundle["pythons"]:
        tag = f"cp{pyv.replace('.', '')}"
        assert any(n.startswith("regex-") and f"-{tag}-" in n for n in deps), f"no regex wheel for {tag}: {deps}"
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
            open_file(page, "notes.md")
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


def the_env(wb: Workbench) -> Path:
    """The one environment in the extension's storage (``env-`` and the interpreter's key)."""
    envs = sorted(p for p in (wb.user / STORAGE).glob("env-*") if p.is_dir())
    assert len(envs) == 1, f"environments: {envs}"
    return envs[0]


#: a bare machine's pip: no index reachable, no pip.conf, no find-links (issue 37 item 1)
OFFLINE = {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_CONFIG_FILE": os.devnull,
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def bare(wb: Workbench) -> Workbench:
    """``wb`` with no pip setting of this machine's environment left (find-links, extra index)."""
    for var in [v for v in wb.env if v.upper().startswith("PIP_")]:
        wb.env.pop(var)
    wb.env.update(OFFLINE)
    return wb


def type_and_expect(wb: Workbench, typed: str, encoding: str = "o200k_base", timeout: float = 60) -> int:
    """Type ``typed`` at the end of the open file, save, and wait for tiktoken's count of it."""
    type_saved(wb, typed)
    return expect_count(wb, encoding, wb.doc.read_text(encoding="utf-8"), timeout=timeout)


def test_offline_first_start_counts_and_restarts_stay_exact(tmp_path: Path, vsix: Path,
                                                            editors: tuple[str, str]) -> None:
    """Issue 37: the .vsix on a machine with no package index reachable, Python 3.11+ only."""
    exe, browser_exe = editors
    wb = bare(workbench(tmp_path / "cs", vsix, bin_dir(tmp_path / "bin", BASE_PYTHON), {}))
    wb.install(exe)
    t0 = time.monotonic()
    with session(wb, exe, browser_exe) as page:
        t_page = time.monotonic()
        expect_count(wb, "o200k_base", TEXT, timeout=300)
        t_count = time.monotonic()
        env_dir = the_env(wb)
        started = f"starting: {env_dir / 'bin' / 'python'} -I -m livetok.server serve"
        log = wb.output_channel()
        assert f"installed {wheel_name(vsix)} into {env_dir}" in log, log
        assert " --no-index --find-links " in log and "Successfully installed" in log, log
        assert log.count(started) == 1, log
        # Restart Server, twice: the same server comes back, and counts what is typed after
        for i, typed in enumerate([" after the first restart 再起動", " and the second 🎉"], start=2):
            run_command(page, "livetok: Restart Server")
            wait_until(f"start {i} in the output channel", lambda: wb.output_channel().count(started) == i, 120,
                       lambda: wb.output_channel()[-1500:])
            type_and_expect(wb, typed)
        log = wb.output_channel()
    stamp = json.loads((env_dir / "livetok-bundled.json").read_text(encoding="utf-8"))
    print(f"\noffline first start: code-server start to first exact count {t_count - t0:.1f} s, "
          f"page loaded to first exact count {t_count - t_page:.1f} s (Python {stamp['version']})")
    assert stamp["wheel"] == wheel_name(vsix) and stamp["bundle"], stamp
    assert "No module named" not in log and "failed" not in log, log
    assert not wb.hostile_mark.exists(), "the workspace's livetok.server.path ran"


def test_first_start_installs_and_counts_second_start_reuses(tmp_path: Path, vsix: Path,
                                                              editors: tuple[str, str]) -> None:
    exe, browser_exe = editors
    path = bin_dir(tmp_path / "bin", None)
    gate = tmp_path / "gate"
    # the Python holds the install at its venv step until the gate exists: the notification
    # and the status bar item are seen while it installs, whatever the machine's speed
    (path / "python3").write_text("#!/bin/sh\n"
                                  f"case \" $* \" in *\" venv \"*) while [ ! -e '{gate}' ]; do sleep 0.1; done ;; esac\n"
                                  f"exec '{BASE_PYTHON}' \"$@\"\n")
    (path / "python3").chmod(0o755)
    wb = bare(workbench(tmp_path / "cs", vsix, path, {}))
    wb.install(exe)

    with session(wb, exe, browser_exe) as page:
        wait_until("the install's progress notification",
                   lambda: "installing the language server" in notifications(page), 120,
                   lambda: f"notifications: {notifications(page)!r}; output:\n{wb.output_channel()[-1500:]}")
        wait_until("the install in the status bar",
                   lambda: page.locator(".statusbar-item", has_text="livetok: installing the server").count() > 0, 30,
                   lambda: " | ".join(page.locator(".statusbar-item").all_inner_texts()))
        gate.touch()
        expect_count(wb, "o200k_base", TEXT, timeout=600)
        assert page.locator(".statusbar-item", has_text="installing the server").count() == 0
        log = wb.output_channel()
    env_dir = the_env(wb)
    started = f"starting: {env_dir / 'bin' / 'python'} -I -m livetok.server serve"
    assert f"installed {wheel_name(vsix)} into {env_dir}" in log, log
    assert " --no-index " in log and started in log, log
    stamp = json.loads((env_dir / "livetok-bundled.json").read_text(encoding="utf-8"))
    assert stamp["wheel"] == wheel_name(vsix)
    assert sorted(p.name for p in env_dir.parent.iterdir()) == [env_dir.name], "a half-made environment was left"

    marker = env_dir / "marker"
    marker.write_text("")
    before = channel_logs(wb)
    with session(wb, exe, browser_exe):
        expect_count(wb, "o200k_base", TEXT, timeout=300)
        second = "".join(p.read_text(encoding="utf-8") for p in sorted(channel_logs(wb) - before))
    assert f"using the installed livetok environment {env_dir} ({wheel_name(vsix)}" in second, second
    assert started in second, second
    assert "--no-index" not in second and "-m venv" not in second, second
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
        toast = page.locator(".notification-toast", has_text="livetok needs Python 3.11+")
        wait_until("the notification", lambda: toast.count() > 0, 30,
                   lambda: f"notifications: {notifications(page)!r}")
        # it fits its toast (not cut off with an ellipsis) and offers Show Output and Retry
        text = toast.first.locator(".notification-list-item-message").first
        assert text.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), text.inner_text()
        buttons = [b.strip() for b in toast.first.locator(".monaco-button").all_inner_texts()]
        assert "Show Output" in buttons and "Retry" in buttons, buttons
        assert status_text(page) == ""
        log = wb.output_channel()
    assert "starting: " not in log, log
    assert not list((wb.user / STORAGE).glob("env*"))
