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

Without a plugin manager (issue 37 item 4), `:help livetok-install`'s recipe links the plugin
into a package directory of a fresh home: the default run checks that the linked plugin finds
its checkout (``:LivetokInstall!`` without a Python, so no pip); the slow run installs through
the link and counts (about 45 s here).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from .._refs import tiktoken_ref
from .test_server_neovim import find_nvim


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


def headless(home: Path, path: Path, extra_env: dict[str, str], timeout: float, args: list[str],
             out: Path) -> dict[str, object]:
    """Headless Neovim in the home ``home`` (its own XDG folders), ``PATH`` = ``path``, with
    ``args``; returns what the Lua side wrote to ``out`` (as ``g:livetok_test_out``)."""
    out.unlink(missing_ok=True)
    env = {**os.environ, "PATH": str(path), "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"),
           "XDG_CACHE_HOME": str(home / "cache"), **extra_env}
    for var in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "VIMINIT", "MYVIMRC"):
        env.pop(var, None)
    cmd = [find_nvim(), "--headless", "-i", "NONE", "-n",
           "--cmd", f"let g:livetok_test_out = {json.dumps(str(out))}", *args]
    proc = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=home, stdin=subprocess.DEVNULL,
                          env=env)
    assert out.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-2000:]!r}"
    res: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in res, res
    return res


def run_nvim(tmp_path: Path, checkout: Path, path: Path, run: str, extra_env: dict[str, str],
             timeout: float) -> dict[str, object]:
    """Headless Neovim with the plugin of ``checkout``, ``PATH`` = ``path``, on a text file;
    ``run``: ``command`` (``:LivetokInstall!`` first), ``function`` (the Lua install only) or
    ``start`` (no install). Returns what the Lua side recorded."""
    (tmp_path / "init.lua").write_text(INIT_LUA, encoding="utf-8")
    (tmp_path / "test.lua").write_text(LUA, encoding="utf-8")
    doc = tmp_path / "notes.txt"
    doc.write_text(TEXT, encoding="utf-8")
    args = ["--cmd", f"let g:livetok_test_plugin = {json.dumps(str(checkout / 'demo' / 'neovim'))}",
            "--cmd", f"let g:livetok_test_run = {json.dumps(run)}",
            "-u", str(tmp_path / "init.lua"), "-c", f"luafile {tmp_path / 'test.lua'}", str(doc)]
    return headless(tmp_path, path, extra_env, timeout, args, tmp_path / f"out-{run}.json")


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


# -- without a plugin manager: the link recipe of `:help livetok-install` (issue 37 item 4) ----

#: Lua run by -c before the recipe's commands: vim.notify's messages kept for the test
CAPTURE = ("lua vim.g.livetok_test_messages = {}; vim.notify = function(m) "
           "local t = vim.g.livetok_test_messages; table.insert(t, m); "
           "vim.g.livetok_test_messages = t end")
#: Lua that writes what the test reads: the checkout the plugin found, the messages
REPORT = ("lua local f = io.open(vim.g.livetok_test_out, 'w'); f:write(vim.fn.json_encode("
          "{ root = require('livetok.install').repo_root(), messages = vim.g.livetok_test_messages }"
          ")); f:close()")
#: the Lua of the start after the install: a user's first command, then its count
AFTER = r"""
local function finish(res)
  local f = io.open(vim.g.livetok_test_out, 'w'); f:write(vim.fn.json_encode(res)); f:close()
  vim.cmd('qa!')
end
vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = function() vim.schedule(function()
  local ok, err = pcall(function()
    local Livetok = require('livetok')
    vim.cmd('LivetokCount')  -- the first command sets livetok up with its defaults
    local res = { first = Livetok.wait_for_count(0, 120000) }
    local c = Livetok.client()
    res.cmd = c and c.config.cmd
    res.count = Livetok.count_sync(0, nil, 60000)
    finish(res)
  end)
  if not ok then finish({ error = tostring(err) }) end
end) end })
"""


def documented_link_recipe() -> list[str]:
    """The three shell lines of `:help livetok-install`'s recipe without a plugin manager;
    docs/editors.md names the same link."""
    help_text = (ROOT / "demo" / "neovim" / "doc" / "livetok.txt").read_text(encoding="utf-8")
    lines = re.findall(r"^    ((?:mkdir -p|ln -s|nvim -c) .*)$", help_text, re.M)
    assert len(lines) == 3, lines
    assert "~/.local/share/nvim/site/pack/livetok/start/livetok" in \
        (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    return lines


def link_recipe(home: Path, checkout: Path) -> Path:
    """The recipe's ``mkdir -p`` and ``ln -s``, in the fresh home ``home`` (its
    ``~/.local/share`` is ``$XDG_DATA_HOME``, ``home / "data"``): the link's path."""
    mkdir, ln, _ = documented_link_recipe()
    start = Path(mkdir.split()[-1].replace("~/.local/share", str(home / "data")))
    link = Path(ln.split()[-1].replace("~/.local/share", str(home / "data")))
    assert ln.split()[2] == "/path/to/livetok/demo/neovim" and link.parent == start
    start.mkdir(parents=True)
    link.symlink_to(checkout / "demo" / "neovim")
    return link


def run_recipe(home: Path, path: Path, extra_env: dict[str, str], timeout: float,
               args: list[str]) -> dict[str, object]:
    """Headless Neovim in the fresh home ``home`` with no init file (the plugin is found in
    the package directory), ``PATH`` = ``path``, with ``args``; returns what it wrote."""
    return headless(home, path, extra_env, timeout, args, home / "out.json")


def recipe_args() -> list[str]:
    """The recipe's ``nvim -c 'helptags ALL' -c 'LivetokInstall!' -c q``, with the test's
    capture before and its report before the ``q``."""
    *_, nvim_line = documented_link_recipe()
    assert nvim_line == "nvim -c 'helptags ALL' -c 'LivetokInstall!' -c q", nvim_line
    return ["-c", CAPTURE, "-c", "helptags ALL", "-c", "LivetokInstall!", "-c", REPORT, "-c", "qa!"]


def test_the_link_recipe_finds_its_checkout(tmp_path):
    """The plugin linked into a package directory finds the checkout the link points to (it
    used to look beside the link and say "not inside a livetok checkout"); with no Python on
    PATH the install then says what to install, and `:help livetok` has its tags."""
    checkout = tmp_path / "livetok"
    checkout.mkdir()
    shutil.copytree(ROOT / "demo" / "neovim", checkout / "demo" / "neovim")
    shutil.copy2(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    home = tmp_path / "home"
    link_recipe(home, checkout)
    res = run_recipe(home, bin_dir(tmp_path / "bin", None), {}, 120, recipe_args())
    assert res["root"] == str(checkout.resolve()), res
    messages = "\n".join(res["messages"])  # type: ignore[arg-type]
    assert "not inside a livetok checkout" not in messages
    assert [m for m in documented_messages() if ":LivetokInstall" in m][0] in res["messages"], res  # type: ignore[operator]
    tags = (checkout / "demo" / "neovim" / "doc" / "tags").read_text(encoding="utf-8")
    assert "\nlivetok-install\tlivetok.txt\t" in tags, tags


@pytest.mark.slow
def test_the_link_recipe_installs_and_counts(tmp_path):
    """The whole recipe in a fresh home: link, ``helptags ALL``, ``:LivetokInstall!`` (pip,
    offline from the wheelhouse); then a Neovim on a file, whose first ``:LivetokCount`` starts
    the installed server and gets the exact count."""
    wheels = wheelhouse()
    checkout = checkout_copy(tmp_path / "livetok")
    home = tmp_path / "home"
    link_recipe(home, checkout)
    path = bin_dir(tmp_path / "bin", BASE_PYTHON)
    installed = run_recipe(home, path, pip_env(wheels), 900, recipe_args())
    assert installed["root"] == str(checkout.resolve()), installed
    env_dir = home / "data" / "nvim" / "livetok"
    assert f"livetok: installed the language server in {env_dir}" in installed["messages"], installed  # type: ignore[operator]

    doc = home / "notes.txt"
    doc.write_text(TEXT, encoding="utf-8")
    (home / "after.lua").write_text(AFTER, encoding="utf-8")
    res = run_recipe(home, path, pip_env(wheels), 300, ["-c", f"luafile {home / 'after.lua'}", str(doc)])
    assert res["cmd"] == [str(env_dir / "bin" / "livetok"), "serve"], res
    expected = len(tiktoken_ref("o200k_base").encode_ordinary(TEXT))
    assert res["count"]["tokens"] == expected, res  # type: ignore[index]
