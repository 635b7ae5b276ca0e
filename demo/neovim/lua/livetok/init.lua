-- livetok: live, exact token counts in Neovim from the livetok language server.
--
-- The plugin's module. Install the folder demo/neovim with a plugin manager (or put it in
-- a pack/*/start/ directory), then in init.lua:
--
--   require('livetok').setup({
--     cmd = { '/path/to/livetok/.venv/bin/livetok', 'serve' },
--     settings = { encoding = 'o200k_base', contextWindow = 128000, budget = 100000 },
--   })
--   vim.o.statusline = "%f %m%=%{v:lua.require'livetok'.statusline()} "
--   -- or lualine: sections = { lualine_x = { require('livetok').statusline } }
--
-- `:help livetok` (doc/livetok.txt) documents the options, commands and functions.
--
-- Works on Neovim 0.7 (vim.lsp.start_client + buf_attach_client on BufEnter/FileType,
-- byte columns in the API) and on 0.8+ (vim.lsp.start).
--
-- Positions: Neovim's API columns are bytes; LSP columns are UTF-16 code units unless the
-- client and server agree on another encoding. This module converts with vim.str_utfindex
-- using the encoding the client actually negotiated (client.offset_encoding), so it stays
-- right whatever the Neovim version offers.

local M = {}

local NAME = 'livetok'
local NOTIFICATION = 'livetok/didChangeTokenCount'
local REQUEST = 'livetok/tokenCount'

local has_011 = vim.fn.has('nvim-0.11') == 1
local has_start = vim.lsp.start ~= nil -- 0.8+

local client_id = nil -- the one client we started
-- set when the server exited with an error: stop respawning it on every BufEnter until
-- :LivetokRestart
local gave_up = false
-- the options setup() was given; nil until setup() runs
local options = nil

-- subtle: 0.11 turned client.request/notify into methods (client:request); calling them with a
-- dot there is deprecated, calling them with a colon on 0.7 passes the client as the method.
local function client_call(client, fn, ...)
  if has_011 then
    return client[fn](client, ...)
  end
  return client[fn](...)
end

local is_windows = vim.fn.has('win32') == 1

--- The folder :LivetokInstall makes its virtual environment in: stdpath('data') .. '/livetok'.
function M.install_dir()
  return vim.fn.stdpath('data') .. '/livetok'
end

-- An executable of the :LivetokInstall environment ('python', 'livetok').
local function env_bin(name)
  if is_windows then
    return M.install_dir() .. '/Scripts/' .. name .. '.exe'
  end
  return M.install_dir() .. '/bin/' .. name
end

-- The server when no cmd is configured: the one :LivetokInstall installed (the user asked for
-- it), else `livetok` on PATH, else a Python that may have it.
local function default_cmd()
  if vim.fn.executable(env_bin('livetok')) == 1 then
    return { env_bin('livetok'), 'serve' }
  end
  if vim.fn.executable('livetok') == 1 then
    return { 'livetok', 'serve' }
  end
  return { 'python3', '-m', 'livetok.server', 'serve' }
end

-- The options setup() was given (an empty setup() until it is called).
local function opts()
  return options or {}
end

local function server_cmd()
  return opts().cmd or vim.g.livetok_cmd or default_cmd()
end

-- The `livetok` section sent to the server: setup's `settings`, else g:livetok_settings.
local function settings()
  local s = opts().settings or vim.g.livetok_settings
  if type(s) ~= 'table' then
    s = {}
  end
  return s
end

-- subtle: an empty Lua table is encoded as the JSON array []; the server expects an object.
local function as_object(t)
  if next(t) == nil then
    return vim.empty_dict()
  end
  return t
end

-- 1234567 -> "1,234,567"
local function group_digits(n)
  local s = tostring(math.floor(n + 0.5))
  local sign, digits = s:match('^(-?)(%d+)$')
  if not digits then
    return s
  end
  local out = digits:reverse():gsub('(%d%d%d)', '%1,'):reverse()
  return sign .. out:gsub('^,', '')
end

-- a / b rounded half up, for non-negative integers.
-- subtle: exact in doubles while 2 * a + b < 2^53: a quotient that is not an integer is at
-- least 1/b away from one, more than the division's rounding error.
local function div_round_half_up(a, b)
  return math.floor((2 * a + b) / (2 * b))
end

--- Share of the context window, by the rule the VS Code status bar and the server's code
--- lens use: rounded half up to tenths of a percent; '0.0%' for no tokens, '<0.1%' for
--- tokens that round to zero tenths (below 0.05%), one decimal below 10%, whole percents
--- from there ('10%', '1,172%'). nil without a usable window.
function M.format_percent(tokens, window)
  if type(window) ~= 'number' or window <= 0 then
    return nil
  end
  local tenths = div_round_half_up(1000 * tokens, window)
  if tokens > 0 and tenths == 0 then
    return '<0.1%'
  end
  if tenths < 100 then
    return ('%d.%d%%'):format(math.floor(tenths / 10), tenths % 10)
  end
  return group_digits(div_round_half_up(100 * tokens, window)) .. '%'
end

local function context_window()
  local w = settings().contextWindow
  if w == nil then
    return 128000
  end
  return w
end

--- The statusline text for bufnr (default: current): "1,234 tokens · o200k_base · 1.0% of window",
--- '' until a count arrives. Also a lualine component: lualine calls it with its own table
--- as the first argument, which is ignored.
function M.statusline(bufnr)
  if type(bufnr) ~= 'number' or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local ok, c = pcall(vim.api.nvim_buf_get_var, bufnr, 'livetok')
  if not ok or type(c) ~= 'table' or c.tokens == nil then
    return ''
  end
  local parts = { group_digits(c.tokens) .. (c.tokens == 1 and ' token' or ' tokens'), c.encoding }
  local pct = M.format_percent(c.tokens, context_window())
  if pct then
    table.insert(parts, pct .. ' of window')
  end
  return table.concat(parts, ' · ')
end

local function fire_user(pattern)
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = pattern, modeline = false })
end

-- Buffer of a URI, only if that buffer is loaded (never creates one for an unknown URI).
local function loaded_buf_for_uri(uri)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.uri_from_bufnr(b) == uri then
      return b
    end
  end
  return nil
end

local function on_count(_, result, _)
  if type(result) ~= 'table' or result.uri == nil then
    return
  end
  local bufnr = loaded_buf_for_uri(result.uri)
  if bufnr == nil then
    return
  end
  local ok, old = pcall(vim.api.nvim_buf_get_var, bufnr, 'livetok')
  -- notifications are coalesced and may cross a reply: never go back to an older version
  if ok and type(old) == 'table' and old.version and result.version and result.version < old.version then
    return
  end
  vim.api.nvim_buf_set_var(bufnr, 'livetok', result)
  vim.cmd('redrawstatus')
  fire_user('LivetokCountChanged')
end

local function config()
  local s = settings()
  return {
    name = NAME,
    cmd = server_cmd(),
    root_dir = vim.fn.getcwd(),
    init_options = { livetok = as_object(s) },
    settings = { livetok = as_object(s) }, -- answers workspace/configuration
    handlers = { [NOTIFICATION] = vim.schedule_wrap(on_count) },
    on_exit = function(code, signal)
      client_id = nil
      if code ~= 0 then
        gave_up = true
        -- no cmd configured and none found: the way out is the install
        local fix = (opts().cmd or vim.g.livetok_cmd) and 'fix the `cmd` option, then :LivetokRestart'
          or 'run :LivetokInstall to install it, or give setup() a `cmd`'
        vim.schedule(function()
          vim.notify(
            ('livetok: server %s exited (code %s, signal %s); %s')
              :format(table.concat(server_cmd(), ' '), code, signal, fix),
            vim.log.levels.WARN
          )
        end)
      end
    end,
  }
end

local function attachable(bufnr)
  if not (vim.api.nvim_buf_is_valid(bufnr) and vim.bo[bufnr].buftype == '' and vim.api.nvim_buf_get_name(bufnr) ~= '') then
    return false
  end
  local filetypes = opts().filetypes
  return filetypes == nil or vim.tbl_contains(filetypes, vim.bo[bufnr].filetype)
end

--- Start the server if it is not running and attach bufnr (default: current) to it.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if gave_up or not attachable(bufnr) then
    return nil
  end
  if has_start then
    -- reuses the client with the same name and root_dir
    local id = vim.lsp.start(config(), { bufnr = bufnr })
    client_id = id or client_id
    return id
  end
  if client_id == nil or vim.lsp.get_client_by_id(client_id) == nil then
    client_id = vim.lsp.start_client(config())
    if client_id == nil then
      vim.notify('livetok: could not start ' .. table.concat(config().cmd, ' '), vim.log.levels.ERROR)
      return nil
    end
  end
  if not vim.lsp.buf_is_attached(bufnr, client_id) then
    vim.lsp.buf_attach_client(bufnr, client_id)
  end
  return client_id
end

--- Stop the server, if running (until the next attach()).
function M.stop()
  local c = M.client()
  if c ~= nil then
    local id = c.id
    client_call(c, 'stop')
    vim.wait(3000, function()
      return vim.lsp.get_client_by_id(id) == nil
    end, 20)
  end
  client_id = nil
end

--- Stop the server (if running) and start it again for every loaded file buffer.
function M.restart()
  M.stop()
  gave_up = false
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then
      M.attach(b)
    end
  end
  return client_id
end

--- The running livetok client, or nil.
function M.client()
  if client_id ~= nil then
    local c = vim.lsp.get_client_by_id(client_id)
    if c ~= nil then -- stopped clients are dropped from the registry
      return c
    end
  end
  return nil
end

-- Byte column -> column in the negotiated position encoding.
local function byte_to_col(line, byte_col, encoding)
  byte_col = math.min(byte_col, #line)
  if encoding == 'utf-8' then
    return byte_col
  end
  if has_011 then
    return vim.str_utfindex(line, encoding, byte_col, false)
  end
  local utf32, utf16 = vim.str_utfindex(line, byte_col)
  return encoding == 'utf-32' and utf32 or utf16
end

local function line_text(bufnr, row)
  return vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
end

--- 0-based rows and byte columns (end exclusive) -> LSP range in the client's position encoding.
function M.lsp_range(bufnr, srow, scol, erow, ecol)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local c = M.client()
  local enc = (c and c.offset_encoding) or 'utf-16'
  return {
    start = { line = srow, character = byte_to_col(line_text(bufnr, srow), scol, enc) },
    ['end'] = { line = erow, character = byte_to_col(line_text(bufnr, erow), ecol, enc) },
  }
end

--- LSP range of the last visual selection of bufnr ('< and '> marks, with visualmode()).
function M.visual_range(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local s = vim.api.nvim_buf_get_mark(bufnr, '<') -- {row 1-based, byte col 0-based}
  local e = vim.api.nvim_buf_get_mark(bufnr, '>')
  local srow, scol, erow, ecol = s[1] - 1, s[2], e[1] - 1, e[2]
  local last_row = vim.api.nvim_buf_line_count(bufnr) - 1
  if vim.fn.visualmode() == 'V' then
    -- whole lines, including the last line's newline when there is a next line
    scol = 0
    if erow < last_row then
      erow, ecol = erow + 1, 0
    else
      ecol = #line_text(bufnr, erow)
    end
  else
    -- '> is the first byte of the last selected character; LSP ends are exclusive
    local line = line_text(bufnr, erow)
    if ecol < #line then
      local char_len = #vim.fn.strcharpart(line:sub(ecol + 1), 0, 1)
      ecol = ecol + math.max(char_len, 1)
    else
      ecol = #line
    end
  end
  return M.lsp_range(bufnr, srow, scol, erow, ecol)
end

local function count_params(bufnr, range)
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  if range ~= nil then
    params.range = range
  end
  return params
end

--- Async livetok/tokenCount; callback(err, result).
function M.count(bufnr, range, callback)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local c = M.client()
  if c == nil then
    callback('livetok server is not running', nil)
    return
  end
  client_call(c, 'request', REQUEST, count_params(bufnr, range), function(err, result)
    callback(err, result)
  end, bufnr)
end

--- Blocking livetok/tokenCount: returns result, err.
function M.count_sync(bufnr, range, timeout_ms)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local c = M.client()
  if c == nil then
    return nil, 'livetok server is not running'
  end
  local reply, err = client_call(c, 'request_sync', REQUEST, count_params(bufnr, range), timeout_ms or 5000, bufnr)
  if reply == nil then
    return nil, err or 'no reply'
  end
  return reply.result, reply.err
end

--- Wait until the server has reported a count for bufnr; returns b:livetok or nil on timeout.
function M.wait_for_count(bufnr, timeout_ms)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local got = nil
  vim.wait(timeout_ms or 5000, function()
    local ok, c = pcall(vim.api.nvim_buf_get_var, bufnr, 'livetok')
    if ok and type(c) == 'table' then
      got = c
      return true
    end
    return false
  end, 20)
  return got
end

--- Change one setting (e.g. 'encoding') and tell the server.
function M.set(key, value)
  local s = settings()
  s[key] = value
  if options ~= nil then
    options.settings = s
  else
    vim.g.livetok_settings = s
  end
  local c = M.client()
  if c ~= nil then
    c.config.settings = { livetok = s }
    client_call(c, 'notify', 'workspace/didChangeConfiguration', { settings = { livetok = s } })
  end
end

local function show_count(bufnr, err, result)
  if err ~= nil then
    vim.notify('livetok: ' .. (type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)), vim.log.levels.ERROR)
    return
  end
  if type(result) ~= 'table' then
    return
  end
  vim.api.nvim_buf_set_var(bufnr, 'livetok_selection', result)
  fire_user('LivetokSelectionCount')
  if result.rangeTokens ~= nil then
    print(('livetok: %s %s tokens selected (%s in the document)'):format(
      group_digits(result.rangeTokens), result.encoding, group_digits(result.tokens)))
  else
    print(('livetok: %s %s tokens'):format(group_digits(result.tokens), result.encoding))
  end
end

-- The user commands (plugin/livetok.lua defines them at start-up, through M.command).
local commands = {}

function commands.count(o)
  local bufnr = vim.api.nvim_get_current_buf()
  local range = nil
  if o.range > 0 then
    local vs = vim.api.nvim_buf_get_mark(bufnr, '<')
    local ve = vim.api.nvim_buf_get_mark(bufnr, '>')
    if vs[1] == o.line1 and ve[1] == o.line2 then
      range = M.visual_range(bufnr)
    else
      local last = vim.api.nvim_buf_line_count(bufnr)
      if o.line2 < last then
        range = M.lsp_range(bufnr, o.line1 - 1, 0, o.line2, 0)
      else
        range = M.lsp_range(bufnr, o.line1 - 1, 0, o.line2 - 1, #line_text(bufnr, o.line2 - 1))
      end
    end
  end
  M.count(bufnr, range, vim.schedule_wrap(function(err, result)
    show_count(bufnr, err, result)
  end))
end

function commands.encoding(o)
  M.set('encoding', o.args)
end

function commands.highlight()
  local on = not settings().semanticTokens
  M.set('semanticTokens', on)
  print('livetok: token-boundary highlighting ' .. (on and 'on' or 'off'))
end

function commands.restart()
  M.restart()
end

--- Run the user command `name` ('count', 'encoding', 'highlight', 'restart') with the
--- nvim_create_user_command arguments `o`; sets livetok up with defaults if setup() was not
--- called, so the commands work in a config that only installs the plugin.
function M.command(name, o)
  if options == nil then
    M.setup()
  end
  commands[name](o)
end

--- Install the server into its own virtual environment, M.install_dir(), from the livetok
--- checkout holding this plugin (:LivetokInstall; `:help livetok-install`). o: wait = true
--- blocks until done (a plugin manager's build step), on_done(ok, message). Returns ok,
--- message once done; nil while it runs in the background.
function M.install(o)
  return require('livetok.install').install(o, M)
end

--- After an install: a set-up plugin restarts its server (from the new environment when no
--- cmd is configured), also after a start that failed.
function M.after_install()
  if options ~= nil then
    M.restart()
  end
end

--- The encodings offered by :LivetokEncoding's completion.
M.encodings = { 'o200k_base', 'cl100k_base', 'r50k_base', 'bert-base-uncased', 'mistral-7b-v0.1' }

--- Set livetok up: start the server for file buffers (all, or opts.filetypes) as they are
--- entered. opts: cmd (server command, a list), settings (the `livetok` section),
--- filetypes (nil: every file buffer). Calling it again replaces the options (restart the
--- server with :LivetokRestart for a new cmd).
function M.setup(o)
  options = vim.tbl_extend('force', {}, o or {})
  local group = vim.api.nvim_create_augroup('livetok', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufEnter', 'FileType' }, {
    group = group,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  if vim.v.vim_did_enter == 1 then
    -- set up late (a lazy-loading plugin manager): attach what is already open
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) then
        M.attach(b)
      end
    end
  else
    -- subtle: with `-u init.lua FILE` the first buffer may be entered before the autocmds
    -- above exist on some versions; attach it once start-up is done.
    vim.api.nvim_create_autocmd('VimEnter', {
      group = group,
      once = true,
      callback = function()
        M.attach(0)
      end,
    })
  end
  return M
end

return M
