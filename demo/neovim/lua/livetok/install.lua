-- :LivetokInstall (issue 29): the livetok language server in a virtual environment of its own,
-- stdpath('data') .. '/livetok', pip-installed from the livetok checkout this plugin is part of
-- (the plugin is its demo/neovim folder). The plugin then runs that environment's `livetok`
-- when setup() is given no `cmd`.
--
-- Neovim 0.7 APIs only: vim.fn.jobstart with an argument list (no shell: nothing is parsed),
-- vim.wait for the blocking form. Every Python runs with -I (isolated: no PYTHON* variables,
-- no user site, the working folder not on sys.path) in Neovim's data folder, never in the
-- current folder, which may be a cloned repository. pip takes the package index from the
-- user's own set-up (pip.conf, PIP_INDEX_URL).

local I = {}

local is_windows = vim.fn.has('win32') == 1

--- The oldest Python the server is installed into.
I.MIN_PYTHON = { 3, 11 }

-- Prints the version, the executable, and whether `venv` can install pip (python -I -c).
local PROBE = table.concat({
  'import json, sys',
  'try:',
  '    import ensurepip, venv',
  '    ok = True',
  'except ImportError:',
  '    ok = False',
  "print(json.dumps({'version': list(sys.version_info[:3]), 'executable': sys.executable, 'venv': ok}))",
}, '\n')

--- The livetok checkout this plugin lives in (lua/livetok/install.lua is five folders down:
--- demo/neovim/lua/livetok/). Links resolved first: without a plugin manager the plugin is a
--- link in pack/*/start/ (`:help livetok-install`), and its checkout is where the link points.
function I.repo_root()
  local here = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(vim.fn.resolve(vim.fn.fnamemodify(here, ':p')), ':h:h:h:h:h')
end

--- The Pythons to try: g:livetok_python if set, then python3 and python3.X on PATH (Ubuntu
--- 22.04's python3 is 3.10, its python3.11 a package beside it), each as its full path.
function I.candidates()
  local found, seen = {}, {}
  local function add(name, source)
    local exe = vim.fn.exepath(name)
    if exe ~= '' and not seen[exe] then
      seen[exe] = true
      table.insert(found, { command = exe, source = source })
    end
  end
  if type(vim.g.livetok_python) == 'string' and vim.g.livetok_python ~= '' then
    add(vim.g.livetok_python, 'g:livetok_python')
  end
  add('python3', 'python3 on PATH')
  for minor = 19, I.MIN_PYTHON[2], -1 do
    add('python3.' .. minor, 'python3.' .. minor .. ' on PATH')
  end
  return found
end

--- Why a Python cannot hold the server (probe: its report, nil when it did not run), or nil.
function I.unusable_reason(candidate, probe)
  local who = ('%s (%s)'):format(candidate.source, candidate.command)
  if type(probe) ~= 'table' or type(probe.version) ~= 'table' then
    return who .. ' did not run as Python 3'
  end
  local major, minor = probe.version[1], probe.version[2]
  local version = table.concat(probe.version, '.')
  if major < I.MIN_PYTHON[1] or (major == I.MIN_PYTHON[1] and minor < I.MIN_PYTHON[2]) then
    return ('%s is Python %s'):format(who, version)
  end
  if not probe.venv then
    return ('%s is Python %s without its venv module (Debian/Ubuntu: sudo apt install python%d.%d-venv)')
      :format(who, version, major, minor)
  end
  return nil
end

--- The message without a usable Python: what was found and exactly what to install.
function I.no_python_message(reasons)
  local found = #reasons > 0 and table.concat(reasons, '; ') or 'python3 is not on PATH'
  local v = I.MIN_PYTHON[1] .. '.' .. I.MIN_PYTHON[2]
  return ('livetok: installing the livetok language server needs Python %s or newer, and none was found (%s). '
    .. 'Install Python %s+ with its venv module (Debian/Ubuntu: sudo apt install python3 python3-venv, '
    .. 'or python3.11 python3.11-venv where python3 is older; Fedora: sudo dnf install python3; macOS: brew install '
    .. 'python@3.12), then run :LivetokInstall again; or set g:livetok_python to one, or give setup() the cmd of a '
    .. 'livetok you installed.')
    :format(v, found, v)
end

-- Run cmd (a list) in cwd; on_done(exit code, output lines). -1: it did not start.
local function run(cmd, cwd, on_done)
  local lines = {}
  local function collect(_, data)
    for _, line in ipairs(data or {}) do
      if line ~= '' then
        table.insert(lines, line)
      end
    end
  end
  local ok, job = pcall(vim.fn.jobstart, cmd, {
    cwd = cwd,
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = collect,
    on_stderr = collect,
    on_exit = function(_, code)
      on_done(code, lines)
    end,
  })
  if not ok or job <= 0 then
    on_done(-1, { 'could not run ' .. cmd[1] .. (ok and '' or (': ' .. tostring(job))) })
  end
end

-- Probe candidates[i], candidates[i+1], ... in turn; on_found(probe) or on_none(reasons).
local function find_python(candidates, cwd, on_found, on_none, reasons, i)
  reasons, i = reasons or {}, i or 1
  local candidate = candidates[i]
  if candidate == nil then
    on_none(reasons)
    return
  end
  run({ candidate.command, '-I', '-c', PROBE }, cwd, function(code, lines)
    local probe = nil
    if code == 0 and #lines > 0 then
      local ok, decoded = pcall(vim.fn.json_decode, lines[#lines])
      probe = ok and decoded or nil
    end
    local reason = I.unusable_reason(candidate, probe)
    if reason == nil then
      on_found(probe)
    else
      table.insert(reasons, reason)
      find_python(candidates, cwd, on_found, on_none, reasons, i + 1)
    end
  end)
end

local function append_log(path, lines)
  local f = io.open(path, 'a')
  if f ~= nil then
    f:write(table.concat(lines, '\n'), '\n')
    f:close()
  end
end

--- Install the server (see the top of this file). o: wait (block until done, as a build step
--- must), on_done(ok, message). livetok: the plugin module (its stop() and after_install()).
--- Returns ok, message when it waited (or ended at once), else nil: it runs in the background
--- and reports with vim.notify.
function I.install(o, livetok)
  o = o or {}
  local state = { done = false }
  local dir = livetok.install_dir()
  local data = vim.fn.fnamemodify(dir, ':h')
  local log = dir .. '-install.log'
  local root = I.repo_root()

  local function finish(ok, message)
    state.done, state.ok, state.message = true, ok, message
    vim.notify(message, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
    if ok then
      livetok.after_install()
    end
    if o.on_done then
      o.on_done(ok, message)
    end
  end

  -- one step of the install: on success next(), else finish with the output's last lines
  local function step(what, cmd, next)
    vim.notify(('livetok: %s…'):format(what), vim.log.levels.INFO)
    append_log(log, { '$ ' .. table.concat(cmd, ' ') })
    run(cmd, data, function(code, lines)
      append_log(log, lines)
      if code ~= 0 then
        local tail = table.concat(vim.list_slice(lines, math.max(1, #lines - 5)), '\n')
        finish(false, ('livetok: %s failed (exit %d; the whole output is in %s):\n%s'):format(what, code, log, tail))
      else
        next()
      end
    end)
  end

  if vim.fn.filereadable(root .. '/pyproject.toml') ~= 1 then
    finish(false, ('livetok: this plugin is not inside a livetok checkout (no %s/pyproject.toml); '
      .. 'install livetok yourself (pip install livetok) and give setup() its cmd'):format(root))
    return false, state.message
  end
  vim.fn.mkdir(data, 'p')
  local f = io.open(log, 'w') -- a fresh log for each install
  if f ~= nil then
    f:close()
  end
  local python = is_windows and '/Scripts/python.exe' or '/bin/python'
  find_python(I.candidates(), data, function(probe)
    livetok.stop() -- the server may be running from the environment replaced below
    step(('creating a Python %s environment in %s'):format(table.concat(probe.version, '.'), dir),
      { probe.executable, '-I', '-m', 'venv', '--clear', dir }, function()
        step('installing livetok from ' .. root .. ' (pip)',
          { dir .. python, '-I', '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input',
            '--progress-bar', 'off', root },
          function()
            finish(true, 'livetok: installed the language server in ' .. dir)
          end)
      end)
  end, function(reasons)
    finish(false, I.no_python_message(reasons))
  end)

  if o.wait and not state.done then
    -- a hang guard only (pip's own timeouts end a stalled download first)
    vim.wait(o.timeout or 30 * 60 * 1000, function()
      return state.done
    end, 50)
  end
  if state.done then
    return state.ok, state.message
  end
  return nil
end

return I
