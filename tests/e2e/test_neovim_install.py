"""The Neovim plugin's one-step install (issue 29): ``:LivetokInstall`` (the lazy.nvim build
step: ``build = ':LivetokInstall!'``, or ``require('livetok').install({ wait = true })``)
makes a virtual environment in ``stdpath('data') .. '/livetok'``, pip-installs livetok from the
checkout the plugin lives in, and the plugin then runs that environment's ``livetok`` when
``setup()`` names no ``cmd``.

Headless Neovim 0.7 (Debian's; installed with apt when missing, as in
``test_server_neovim.py``) runs on a copy of the checkout (its tracked files and the untracked
ones git does not ignore: what a clone holds), with a ``PATH`` of its own: every executable of
the test's ``PATH`` except Python's and ``livetok`` (so nothing is found that the install did
not put there), plus, where a Python is wanted, ``python3`` = the Python running the tests.

Offline and fast: pip is pointed (``PIP_NO_INDEX=1``, ``PIP_FIND_LINKS``) at a wheelhouse of
livetok's dependencies and its build back-end, built once from the index the machine's pip
uses and kept in ``~/.cache/livetok-test-data`` (keyed by ``pyproject.toml``'s requirements
and the Python's version); ``tests/e2e/test_vscode_install.py`` uses it too. The install
itself takes about 20 s (slow); the test without a Python runs no pip and is in the default
run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .._refs import tiktoken_ref
from .test_server_neovim import find_nvim

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
#: the Python the tests run on, outside any virtual environment: what a user's python3 is
BASE_PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
TEXT = "Hello world, 你好世界 😀\nsecond line with words\n"


def checkout_copy(dest: Path) -> Path:
    """Copy the checkout's files as a clone holds them (tracked, and untracked ones not
    ignored, as they are now) to ``dest``; returns ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, timeout=60)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.decode()[-300:]}")
    for name in listed.stdout.decode().split("\0"):
        src = ROOT / name
        if name and src.is_file():  # a tracked file deleted in the work tree is left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def wheelhouse(python: str = BASE_PYTHON) -> Path:
    """Wheels of livetok's dependencies and its build back-end for ``python``, built once with
    ``python``'s pip from the index it is set up for, and kept between runs (see the module
    docstring); skips when they cannot be had."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = [*project["project"]["dependencies"], *project["build-system"]["requires"]]
    version = subprocess.run([python, "-c", "import sys, sysconfig; print(sys.version, sysconfig.get_platform())"],
                             capture_output=True, text=True, timeout=60).stdout
    key = hashlib.sha256(json.dumps([wanted, version]).encode()).hexdigest()[:24]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    kept = base / "livetok-test-data" / f"wheelhouse-{key}"
    if kept.is_dir():
        return kept
    part = kept.with_name(f"{kept.name}.part-{os.getpid()}")
    proc = subprocess.run([python, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "-w", str(part),
                           *wanted], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        shutil.rmtree(part, ignore_errors=True)
        pytest.skip(f"the dependencies' wheels could not be had: {proc.stderr[-600:]}")
    try:
        part.rename(kept)  # whole, so a parallel run sees all of it or nothing
    except OSError:
        shutil.rmtree(part, ignore_errors=True)  # another run kept its own first
    return kept


def bin_dir(dest: Path, python: str | None) -> Path:
    """A folder for ``PATH`` alone: links to the executables on this ``PATH`` (the first of
    each name) except Python's, pip's and livetok, and ``python3`` -> ``python`` if given."""
    dest.mkdir(parents=True)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isabs(folder) or not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            name = entry.name
            if re.match(r"(python|pip|livetok|pydoc|idle)", name) or (dest / name).exists():
                continue
            if entry.is_file() and os.access(entry.path, os.X_OK):
                (dest / name).symlink_to(entry.path)
    if python is not None:
        (dest / "python3").symlink_to(python)
    return dest


def documented_messages() -> list[str]:
    """The messages without a Python that docs/editors.md quotes (lines ``> livetok: installing
    the livetok language server ...``)."""
    text = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    return re.findall(r"^> (livetok: installing the livetok language server needs .*)$", text, re.M)


def pip_env(wheels: Path) -> dict[str, str]:
    """pip offline, from ``wheels`` only (the environment variables pip reads)."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


# The user's init.lua (as lazy.nvim's `dir = ...` puts the plugin on 'runtimepath'), then the
# test: run what vim.g.livetok_test_run says, record the messages and the count, quit.
INIT_LUA = r"""
vim.opt.runtimepath:prepend(vim.g.livetok_test_plugin)
vim.g.livetok_test_messages = {}
vim.notify = function(msg, level)
  local m = vim.g.livetok_test_messages
  table.insert(m, msg)
  vim.g.livetok_test_messages = m
end
require('livetok').setup({ settings = { contextWindow = 1000 } })
"""

LUA = r"""
local Livetok = require('livetok')
local function finish(res)
  res.messages = vim.g.livetok_test_messages
  local f = io.open(vim.g.livetok_test_out, 'w'); f:write(vim.fn.json_encode(res)); f:close()
  vim.cmd('qa!')
end
local function run()
  local ok, err = pcall(function()
    local res = { install_command = vim.fn.exists(':LivetokInstall') }
    local what = vim.g.livetok_test_run
    if what == 'command' then
      vim.cmd('LivetokInstall!')
    elseif what == 'function' then
      -- the lazy.nvim build function
      local done, message = Livetok.install({ wait = true })
      res.install = { ok = done, message = message }
    end
    if what ~= 'function' then
      res.first = Livetok.wait_for_count(0, 120000)
      local c = Livetok.client()
      res.cmd = c and c.config.cmd
      res.count = Livetok.count_sync(0, nil, 60000)
    end
    finish(res)
  end)
  if not ok then finish({ error = tostring(err) }) end
end
vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = function() vim.schedule(run) end })
"""


def run_nvim(tmp_path: Path, checkout: Path, path: Path, run: str, extra_env: dict[str, str],
             timeout: float) -> dict[str, object]:
    """Headless Neovim with the plugin of ``checkout``, ``PATH`` = ``path``, on a text file;
    ``run``: ``command`` (``:LivetokInstall!`` first), ``function`` (the Lua install only) or
    ``start`` (no install). Returns what the Lua side recorded."""
    nvim = find_nvim()
    (tmp_path / "init.lua").write_text(INIT_LUA, encoding="utf-8")
    (tmp_path / "test.lua").write_text(LUA, encoding="utf-8")
    doc = tmp_path / "notes.txt"
    doc.write_text(TEXT, encoding="utf-8")
    out = tmp_path / f"out-{run}.json"
    env = {**os.environ, "PATH": str(path), "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), **extra_env}
    for var in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
        env.pop(var, None)
    cmd = [nvim, "--headless", "-i", "NONE", "-n",
           "--cmd", f"let g:livetok_test_plugin = {json.dumps(str(checkout / 'demo' / 'neovim'))}",
           "--cmd", f"let g:livetok_test_out = {json.dumps(str(out))}",
           "--cmd", f"let g:livetok_test_run = {json.dumps(run)}",
           "-u", str(tmp_path / "init.lua"), "-c", f"luafile {tmp_path / 'test.lua'}", str(doc)]
    proc = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=tmp_path, stdin=subprocess.DEVNULL,
                          env=env)
    assert out.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-2000:]!r}"
    res: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in res, res
    return res


def test_without_python_the_install_says_what_to_install(tmp_path):
    """No Python on PATH: the build function returns (and notifies) the message
    docs/editors.md quotes, and makes no environment."""
    checkout = tmp_path / "livetok"
    checkout.mkdir()
    # the plugin alone and the project file it checks for: this test builds nothing
    shutil.copytree(ROOT / "demo" / "neovim", checkout / "demo" / "neovim")
    shutil.copy2(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    res = run_nvim(tmp_path, checkout, bin_dir(tmp_path / "bin", None), "function", {}, timeout=120)
    assert res["install_command"] == 2, "no :LivetokInstall command"
    neovim_message = [m for m in documented_messages() if ":LivetokInstall" in m]
    assert len(neovim_message) == 1, f"docs/editors.md quotes no Neovim message: {documented_messages()}"
    assert res["install"] == {"ok": False, "message": neovim_message[0]}
    assert neovim_message[0] in res["messages"], res["messages"]
    assert "python3 is not on PATH" in neovim_message[0]
    assert not (tmp_path / "data" / "nvim" / "livetok").exists()


@pytest.mark.slow
def test_install_then_the_plugin_runs_the_installed_server(tmp_path):
    """``:LivetokInstall!`` installs from the checkout (pip, offline from the wheelhouse); the
    set-up plugin restarts on the new server and counts exactly; a later Neovim with no ``cmd``
    starts that environment's ``livetok`` again, without installing."""
    wheels = wheelhouse()
    checkout = checkout_copy(tmp_path / "livetok")
    path = bin_dir(tmp_path / "bin", BASE_PYTHON)
    expected = len(tiktoken_ref("o200k_base").encode_ordinary(TEXT))
    env_livetok = str(tmp_path / "data" / "nvim" / "livetok" / "bin" / "livetok")

    first = run_nvim(tmp_path, checkout, path, "command", pip_env(wheels), timeout=900)
    messages = "\n".join(first["messages"])  # type: ignore[arg-type]
    assert "livetok: installed the language server in " + str(tmp_path / "data" / "nvim" / "livetok") in messages
    assert first["cmd"] == [env_livetok, "serve"], first
    assert first["count"]["tokens"] == expected, first  # type: ignore[index]

    marker = tmp_path / "data" / "nvim" / "livetok" / "marker"
    marker.write_text("")
    again = run_nvim(tmp_path, checkout, path, "start", pip_env(wheels), timeout=300)
    assert again["cmd"] == [env_livetok, "serve"], again
    assert again["count"]["tokens"] == expected, again  # type: ignore[index]
    assert not any("installed" in m for m in again["messages"]), again["messages"]  # type: ignore[union-attr]
    assert marker.exists(), "the environment was made again"
