#!/usr/bin/env bash
# Install the editors that the end-to-end editor tests drive. Idempotent: what is there is
# kept, so a second run takes a second or two.
#
#   bash scripts/install-editors.sh [vscode] [emacs] [neovim] [chromium]   # default: all
#
# - neovim, emacs (emacs-nox, elpa-eglot, elpa-lsp-mode), chromium: Debian packages, with
#   apt-get as root (`apt-get update` only when an install fails without it).
# - vscode: code-server (VS Code in a browser) from the npm registry, into
#   $LIVETOK_EDITORS_CACHE (default ~/.cache/livetok-editors)/code-server-<version>, outside
#   the repository. Its npm install as root runs scripts that download prebuilt binaries
#   (ripgrep, argon2) from elsewhere, so it installs with --ignore-scripts and then does their
#   work by hand: builds the native modules with node-gyp against the local Node headers,
#   links Debian's ripgrep where @vscode/ripgrep expects its binary, and makes the links
#   code-server's postinstall.sh makes. Needs Node 20 (code-server 4.100.x is the last
#   release line for it), g++/make, libkrb5-dev (apt).
#
# Prints the path of code-server's executable last when vscode is asked for. Exits non-zero,
# saying why, when something cannot be installed; the tests then skip with that reason.
set -euo pipefail

CODE_SERVER_VERSION=4.100.3
CACHE="${LIVETOK_EDITORS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/livetok-editors}"

say() { echo "install-editors: $*" >&2; }
die() { say "$*"; exit 1; }

# apt_install PKG...: install the packages that are missing (root and apt-get only).
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 \
    || die "missing ${missing[*]}; install them with apt-get as root"
  say "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 \
         && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1; } \
    || die "apt-get install ${missing[*]} failed"
}

install_code_server() {
  local dest="$CACHE/code-server-$CODE_SERVER_VERSION"
  local exe="$dest/node_modules/.bin/code-server"
  if [ -f "$dest/.complete" ]; then
    echo "$exe"
    return 0
  fi
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || die "node and npm are needed for code-server"
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  [ "$major" = 20 ] || die "code-server $CODE_SERVER_VERSION needs Node 20 (found $(node --version))"
  apt_install libkrb5-dev ripgrep g++ make
  # node-gyp would download Node's headers; use the installed ones
  local nodedir
  nodedir="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
  [ -f "$nodedir/include/node/node.h" ] || die "no Node headers in $nodedir/include/node (node-gyp would download them)"
  local gyp
  gyp="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")/node_modules/node-gyp/bin/node-gyp.js"
  [ -f "$gyp" ] || die "npm's node-gyp not found at $gyp"

  local work="$dest.partial"
  rm -rf "$work"
  mkdir -p "$work"
  say "npm install code-server@$CODE_SERVER_VERSION into $dest (about a minute)"
  export npm_config_unsafe_perm=true npm_config_nodedir="$nodedir"
  (cd "$work" && npm install --prefix . --no-audit --no-fund --ignore-scripts --loglevel=error \
     "code-server@$CODE_SERVER_VERSION" >&2) || die "npm install code-server failed"
  local cs="$work/node_modules/code-server"
  # code-server's own native module (password hashing; loaded at start-up)
  # (node-pre-gyp's rebuild builds from source where its install would download a binary)
  (cd "$work/node_modules/argon2" && ../.bin/node-pre-gyp rebuild --build-from-source >/dev/null 2>&1) \
    || die "building argon2 failed"
  # what postinstall.sh does, without the scripts of the dependencies
  (cd "$cs/lib/vscode" && npm install --omit=dev --no-audit --no-fund --ignore-scripts --loglevel=error >&2) \
    || die "npm install in code-server's lib/vscode failed"
  (cd "$cs/lib/vscode/extensions" && npm install --omit=dev --no-audit --no-fund --ignore-scripts --loglevel=error >&2) \
    || die "npm install in code-server's lib/vscode/extensions failed"
  local m
  for m in @vscode/spdlog native-watchdog node-pty kerberos @vscode/deviceid; do
    (cd "$cs/lib/vscode/node_modules/$m" && node "$gyp" rebuild -j 2 >/dev/null 2>&1) \
      || die "building $m failed (g++, make and libkrb5-dev are needed)"
  done
  mkdir -p "$cs/lib/vscode/node_modules/@vscode/ripgrep/bin"
  ln -sf "$(command -v rg)" "$cs/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"
  ln -sfn node_modules "$cs/lib/vscode/node_modules.asar"
  ln -sf code-linux.sh "$cs/lib/vscode/bin/remote-cli/code-server"
  ln -sf browser-linux.sh "$cs/lib/vscode/bin/helpers/browser.sh"
  "$work/node_modules/.bin/code-server" --version >/dev/null || die "the installed code-server does not start"
  touch "$work/.complete"
  rm -rf "$dest"
  mv "$work" "$dest"
  echo "$exe"
}

want=("$@")
[ "${#want[@]}" -eq 0 ] && want=(neovim emacs chromium vscode)
for w in "${want[@]}"; do
  case "$w" in
    neovim) apt_install neovim ;;
    emacs) apt_install emacs-nox elpa-eglot elpa-lsp-mode ;;
    chromium) apt_install chromium ;;
    vscode) install_code_server ;;
    *) die "unknown editor '$w' (vscode, emacs, neovim, chromium)" ;;
  esac
done
