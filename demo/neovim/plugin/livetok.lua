-- livetok's commands, defined when Neovim loads the plugin (the folder is on 'runtimepath'
-- or in a pack/*/start/ directory). Nothing starts until require('livetok').setup() or the
-- first command: see `:help livetok`.
if vim.g.loaded_livetok == 1 then
  return
end
vim.g.loaded_livetok = 1

local function define(name, fn, attrs)
  vim.api.nvim_create_user_command(name, function(o)
    require('livetok').command(fn, o)
  end, attrs)
end

define('LivetokCount', 'count', { range = true, desc = 'livetok: exact token count of the document or the selection' })
define('LivetokEncoding', 'encoding', {
  nargs = 1,
  complete = function()
    return require('livetok').encodings
  end,
  desc = 'livetok: switch the encoding',
})
define('LivetokHighlight', 'highlight', { desc = 'livetok: toggle token-boundary highlighting' })
define('LivetokRestart', 'restart', { desc = 'livetok: restart the server' })
-- not through M.command: installing (a plugin manager's build step) must not start the server
vim.api.nvim_create_user_command('LivetokInstall', function(o)
  require('livetok').install({ wait = o.bang })
end, { bang = true, desc = 'livetok: install the server into its own virtual environment (! waits until done)' })
