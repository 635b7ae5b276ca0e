#!/usr/bin/env bash
# Install livetok with its test dependencies into .venv (created if missing) and run the
# whole test suite (tests marked slow skip unless LIVETOK_SLOW=1), in parallel with
# pytest-xdist: LIVETOK_WORKERS workers (default auto: one per CPU; 0 runs in this process).
# Extra arguments go to pytest. Fails when no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-dev.sh test
# Editor and browser used by the end-to-end tests (Neovim as a real LSP client, Chromium for
# the web demo). Best effort: installed with apt when we are root; otherwise those tests skip
# and say what is missing.
missing=()
command -v nvim >/dev/null 2>&1 || missing+=(neovim)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "scripts/test.sh: installing ${missing[*]} with apt-get for the end-to-end tests" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
    || { DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; } \
    || echo "scripts/test.sh: could not install ${missing[*]}; their tests will skip" >&2
fi
# VS Code (code-server, VS Code's workbench in a browser) for the default run's real-editor test
# (tests/e2e/test_vscode_counts.py): installed once into ~/.cache/livetok-editors, outside the
# repository (about two minutes the first time, a second once there). Best effort, as above:
# without node and npm, or when the install fails, that test skips and says why.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  bash scripts/install-editors.sh vscode >/dev/null \
    || echo "scripts/test.sh: could not install code-server; the VS Code test will skip" >&2
fi
# Bytecode: the run starts hundreds of Python processes (language servers, command lines,
# the workers), and with PYTHONDONTWRITEBYTECODE set each compiles livetok's modules (and
# pytest its test modules) again: about 0.3 s of CPU a process, a sixth of a short end-to-end
# test. They keep their bytecode under a cache folder instead, never in the work tree.
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ] && [ -z "${PYTHONPYCACHEPREFIX:-}" ]; then
  unset PYTHONDONTWRITEBYTECODE
  export PYTHONPYCACHEPREFIX="${XDG_CACHE_HOME:-$HOME/.cache}/livetok/pycache"
fi
set +e
.venv/bin/python -m pytest -n "${LIVETOK_WORKERS:-auto}" --dist loadgroup --durations=15 "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests; failing on purpose" >&2
  exit 1
fi
exit "$rc"
