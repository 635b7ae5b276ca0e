"""A real editor: headless Neovim opens a file, types into it, and the count the server sends
matches tiktoken on the buffer's text.

Uses ``demo/neovim/livetok.lua`` (the documented Neovim client) as the init file. Neovim 0.7's
``vim.lsp`` sends ``didOpen`` only once the client is initialized and its API columns are
bytes; the Lua script below waits for ``client.initialized``, types with ``feedkeys`` in
insert mode (multi-byte text included), waits until the server has reported the buffer's
latest ``changedtick``, and writes what it saw to a JSON file for the Python side.

When ``nvim`` is missing, the test installs Debian's ``neovim`` with apt-get if it can, and
otherwise skips, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ._refs import tiktoken_ref

ROOT = Path(__file__).resolve().parent.parent
INIT = ROOT / "demo" / "neovim" / "livetok.lua"

LUA = r"""
local out = vim.g.livetok_test_out
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


def test_neovim_types_and_counts_match_tiktoken(tmp_path):
    if not INIT.exists():
        pytest.skip(f"{INIT} is missing (the Neovim client lives there)")
    nvim = find_nvim()
    doc = tmp_path / "notes.txt"
    doc.write_text("Hello world\nsecond line with words\n\nlast paragraph\n", encoding="utf-8")
    script = tmp_path / "test.lua"
    script.write_text(LUA, encoding="utf-8")
    out = tmp_path / "out.json"
    cmd = [
        nvim, "--headless", "-i", "NONE", "-n",
        "--cmd", f"let g:livetok_cmd = {json.dumps([sys.executable, '-m', 'livetok.server'])}",
        "--cmd", f"let g:livetok_test_out = {json.dumps(str(out), ensure_ascii=False)}",
        "--cmd", f"let g:livetok_test_keys = {json.dumps(KEYS, ensure_ascii=False)}",
        "-u", str(INIT), "-c", f"luafile {script}", str(doc),
    ]
    proc = subprocess.run(cmd, capture_output=True, timeout=180, cwd=tmp_path, stdin=subprocess.DEVNULL,
                          env={**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path)})
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
