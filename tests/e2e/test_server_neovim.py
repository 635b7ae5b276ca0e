"""A real editor: headless Neovim with the livetok plugin opens a file, types into it, and the
count the server sends matches tiktoken on the buffer's text.

The plugin (``demo/neovim``: ``lua/livetok/init.lua``, ``plugin/livetok.lua``,
``doc/livetok.txt``) is installed as a plugin manager would: copied to
``$XDG_DATA_HOME/nvim/site/pack/livetok/start/livetok`` (a start package Neovim loads by
itself), with an ``init.lua`` that calls ``require('livetok').setup({...})``. Neovim 0.7's
``vim.lsp`` sends ``didOpen`` only once the client is initialized and its API columns are
bytes; the Lua script below waits for ``client.initialized``, types with ``feedkeys`` in
insert mode (multi-byte text included), waits until the server has reported the buffer's
latest ``changedtick``, and writes what it saw to a JSON file for the Python side. The same
session generates the help tags and opens ``:help livetok``, and checks the statusline
component (also called as lualine calls it) and the share's formatting rule.

When ``nvim`` is missing, the test installs Debian's ``neovim`` with apt-get if it can, and
otherwise skips, saying why. About 5 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from livetok.server.lsp.views import _share

from .._refs import tiktoken_ref

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "demo" / "neovim"
SHIM = PLUGIN / "livetok.lua"

# the user's init.lua: the plugin is a start package, so require() finds it here already
INIT_LUA = r"""
require('livetok').setup({ cmd = vim.g.livetok_test_cmd, settings = { contextWindow = 1000 } })
vim.o.statusline = "%f %m%=%{v:lua.require'livetok'.statusline()} "
"""

# (tokens, window) -> the share as every client shows it (status.test.ts has the same cases)
PERCENT_CASES = [
    (0, 128000, "0.0%"), (1, 128000, "<0.1%"), (63, 128000, "<0.1%"), (64, 128000, "0.1%"),
    (90, 128000, "0.1%"), (320, 128000, "0.3%"), (640, 128000, "0.5%"), (12700, 128000, "9.9%"),
    (12749, 128000, "10%"), (64000, 128000, "50%"), (1500000, 128000, "1,172%"), (3, 8, "38%"),
]


def share(tokens: int, window: int) -> str:
    """The share rule of the server's code lens (``features._share``), which every client
    repeats."""
    return _share(tokens, window)

LUA = r"""
local out = vim.g.livetok_test_out
local Livetok = require('livetok')
local function finish(res)
  local f = io.open(out, 'w'); f:write(vim.fn.json_encode(res)); f:close()
  vim.cmd('qa!')
end
local function run()
  local ok, err = pcall(function()
    local res = {}
    -- didOpen goes out only once the client is initialized: type after that
    local ready = vim.wait(90000, function()
      local c = Livetok.client(); return c ~= nil and c.initialized == true
    end, 50)
    if not ready then error('the livetok client never initialized') end
    res.first = Livetok.wait_for_count(0, 90000)
    if res.first == nil then error('no livetok/didChangeTokenCount after opening') end
    vim.api.nvim_win_set_cursor(0, {1, 5})
    local keys = vim.g.livetok_test_keys
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'xt', false)
    local buf = vim.api.nvim_get_current_buf()
    local tick = vim.api.nvim_buf_get_changedtick(buf)
    res.caught_up = vim.wait(90000, function()
      local okv, c = pcall(vim.api.nvim_buf_get_var, buf, 'livetok')
      return okv and type(c) == 'table' and c.version >= tick
    end, 50)
    res.notified = vim.b.livetok
    res.count, res.err = Livetok.count_sync(buf, nil, 60000)
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    -- what Neovim's LSP client holds as the document text
    res.text = table.concat(lines, '\n') .. ((vim.bo.eol and vim.bo.fixeol) and '\n' or '')
    res.tick = tick
    res.position_encoding = Livetok.client().offset_encoding
    res.statusline = vim.api.nvim_eval_statusline(vim.o.statusline, {}).str
    res.component = Livetok.statusline()
    res.lualine = Livetok.statusline({ options = {} }) -- lualine passes its component table
    res.percent = {}
    for _, case in ipairs(vim.g.livetok_test_percent) do
      table.insert(res.percent, Livetok.format_percent(case[1], case[2]))
    end
    res.commands = vim.fn.exists(':LivetokCount') + vim.fn.exists(':LivetokRestart')
    -- a command from plugin/livetok.lua: the server recounts with the new encoding
    vim.cmd('LivetokEncoding cl100k_base')
    res.switched = vim.wait(30000, function()
      local okv, c = pcall(vim.api.nvim_buf_get_var, buf, 'livetok')
      return okv and c.encoding == 'cl100k_base'
    end, 20)
    res.after_switch = vim.b.livetok
    -- :help livetok, after generating the tags as a plugin manager does (errors are fatal)
    vim.cmd('helptags ' .. vim.fn.fnameescape(vim.g.livetok_test_doc))
    vim.cmd('help livetok.statusline()')
    res.help = { file = vim.fn.expand('%:t'), line = vim.api.nvim_get_current_line() }
    finish(res)
  end)
  if not ok then finish({error = tostring(err)}) end
end
vim.api.nvim_create_autocmd('VimEnter', {once = true, callback = function() vim.schedule(run) end})
"""

KEYS = ("a, dear 😀 中文 <CR>a new line<Esc>Go tab\tafter<BS><BS>er and é<Esc>"
        "ggddOfirst: 日本語のテキスト 👩‍💻<Esc>")


def find_nvim() -> str:
    nvim = shutil.which("nvim")
    if nvim:
        return nvim
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        pytest.skip("nvim is not installed and apt-get (as root) is not available to install it")
    for cmd in ([apt, "install", "-y", "-q", "neovim"], [apt, "update", "-q"],
                [apt, "install", "-y", "-q", "neovim"]):
        try:
            subprocess.run(cmd, capture_output=True, timeout=600,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        except (OSError, subprocess.TimeoutExpired):
            break
        if shutil.which("nvim"):
            return shutil.which("nvim")  # type: ignore[return-value]
    pytest.skip("nvim is not installed and `apt-get install neovim` did not provide it")


def install_plugin(tmp_path: Path) -> Path:
    """Copy ``demo/neovim`` into a start package under ``$XDG_DATA_HOME`` (what a plugin
    manager's clone amounts to); returns the ``XDG_DATA_HOME`` to use."""
    data = tmp_path / "data"
    dest = data / "nvim" / "site" / "pack" / "livetok" / "start" / "livetok"
    shutil.copytree(PLUGIN, dest, ignore=shutil.ignore_patterns("tags"))
    return data


def nvim_env(tmp_path: Path, data: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_HOME": str(data), "XDG_STATE_HOME": str(tmp_path / "state")}


def test_neovim_plugin_types_and_counts_match_tiktoken(tmp_path):
    if not (PLUGIN / "lua" / "livetok" / "init.lua").exists():
        pytest.skip(f"{PLUGIN} holds no plugin (lua/livetok/init.lua)")
    nvim = find_nvim()
    data = install_plugin(tmp_path)
    init = tmp_path / "init.lua"
    init.write_text(INIT_LUA, encoding="utf-8")
    doc = tmp_path / "notes.txt"
    doc.write_text("Hello world\nsecond line with words\n\nlast paragraph\n", encoding="utf-8")
    script = tmp_path / "test.lua"
    script.write_text(LUA, encoding="utf-8")
    out = tmp_path / "out.json"
    help_dir = data / "nvim" / "site" / "pack" / "livetok" / "start" / "livetok" / "doc"
    cmd = [
        nvim, "--headless", "-i", "NONE", "-n",
        "--cmd", f"let g:livetok_test_cmd = {json.dumps([sys.executable, '-m', 'livetok.server'])}",
        "--cmd", f"let g:livetok_test_out = {json.dumps(str(out), ensure_ascii=False)}",
        "--cmd", f"let g:livetok_test_keys = {json.dumps(KEYS, ensure_ascii=False)}",
        "--cmd", f"let g:livetok_test_doc = {json.dumps(str(help_dir))}",
        "--cmd", f"let g:livetok_test_percent = {json.dumps([c[:2] for c in PERCENT_CASES])}",
        "-u", str(init), "-c", f"luafile {script}", str(doc),
    ]
    proc = subprocess.run(cmd, capture_output=True, timeout=180, cwd=tmp_path, stdin=subprocess.DEVNULL,
                          env=nvim_env(tmp_path, data))
    assert out.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-2000:]!r}"
    res = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in res, res
    text = res["text"]
    # the typing happened (the first line, with "😀 中文", was typed and then deleted by dd)
    assert "日本語" in text and "👩\u200d💻" in text and "after and é" in text and "😀" not in text
    expected = len(tiktoken_ref("o200k_base").encode_ordinary(text))
    assert res["caught_up"], f"the server never reported changedtick {res['tick']}: {res['notified']}"
    assert res["notified"]["version"] >= res["tick"]
    assert res["notified"]["tokens"] == expected
    assert res["count"]["tokens"] == expected and res["count"]["characters"] == len(text)
    assert res["position_encoding"] == "utf-16"
    # the statusline component, in 'statusline' and as lualine calls it (contextWindow 1000)
    assert res["component"] == f"{expected:,} tokens · o200k_base · {share(expected, 1000)} of window"
    assert res["lualine"] == res["component"]
    assert res["statusline"].rstrip().endswith(res["component"]), res["statusline"]
    assert res["percent"] == [c[2] for c in PERCENT_CASES] == [share(t, w) for t, w, _ in PERCENT_CASES]
    assert res["commands"] == 4  # :LivetokCount and :LivetokRestart, from plugin/livetok.lua
    assert res["switched"], f"no cl100k_base count after :LivetokEncoding: {res['after_switch']}"
    assert res["after_switch"]["tokens"] == len(tiktoken_ref("cl100k_base").encode_ordinary(text))
    assert res["help"]["file"] == "livetok.txt" and "statusline()" in res["help"]["line"], res["help"]


def test_single_file_shim_still_loads(tmp_path):
    """``nvim -u demo/neovim/livetok.lua`` (the old single-file set-up) loads the plugin from its
    folder and keeps the globals ``Livetok`` and ``livetok_statusline()``."""
    nvim = find_nvim()
    out = tmp_path / "out.json"
    lua = ("local r = {module = type(Livetok), fn = type(livetok_statusline), "
           "cmd = vim.fn.exists(':LivetokEncoding'), same = Livetok == require('livetok'), "
           "line = livetok_statusline()} "
           f"local f = io.open({json.dumps(str(out))}, 'w') f:write(vim.fn.json_encode(r)) f:close()")
    proc = subprocess.run([nvim, "--headless", "-i", "NONE", "-n", "-u", str(SHIM), "-c", f"lua {lua}",
                           "-c", "qa!"], capture_output=True, timeout=60, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, env=nvim_env(tmp_path, tmp_path / "data"))
    assert out.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr[-2000:]!r}"
    res = json.loads(out.read_text())
    assert res == {"module": "table", "fn": "function", "cmd": 2, "same": True, "line": ""}, res
