-- livetok.lua: the livetok plugin in this folder, loaded from one file, for trying it out
-- without a plugin manager:
--
--   nvim -u demo/neovim/livetok.lua README.md
--   nvim --cmd "let g:livetok_cmd = ['.venv/bin/livetok', 'serve']" -u demo/neovim/livetok.lua FILE
--
-- It puts this folder on 'runtimepath', loads plugin/livetok.lua and calls
-- require('livetok').setup() with g:livetok_cmd and g:livetok_settings (when set). It also
-- defines the globals older set-ups used: `Livetok` (the module) and livetok_statusline()
-- (for %{v:lua.livetok_statusline()}). A plugin manager needs none of this: `:help livetok`.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.runtimepath:prepend(here)
vim.cmd('runtime plugin/livetok.lua')
local livetok = require('livetok')
_G.Livetok = livetok
_G.livetok_statusline = function()
  return livetok.statusline(0)
end
livetok.setup({ cmd = vim.g.livetok_cmd, settings = vim.g.livetok_settings })
return livetok
