#!/usr/bin/env bash
# Package the VS Code extension with the livetok wheel it installs on first start (issue 29):
#
#   bash scripts/package-vscode.sh [OUT.vsix]   # default: demo/vscode/livetok-<version>.vsix
#
# 1. Builds livetok's wheel from this checkout into demo/vscode/bundled/ (emptied first;
#    git-ignored, never committed): `python -m build --wheel` when the `build` package is
#    installed, else `python -m pip wheel --no-deps`. The build runs on a copy of the
#    checkout's files (tracked, and untracked ones git does not ignore) in a temporary folder,
#    so a stale build/ folder cannot slip deleted modules into the wheel and the work tree is
#    not written to.
# 2. Installs the extension's npm dependencies (`npm ci`) when node_modules/ is missing.
# 3. Runs vsce (from the extension's devDependencies; its `vscode:prepublish` compiles the
#    TypeScript) to write the .vsix. Prints the .vsix's path last.
#
# PYTHON names the Python that builds the wheel (default python3); LIVETOK_VSCODE_DIR packages
# another copy of demo/vscode (the tests package a copy, not the work tree).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
EXT="${LIVETOK_VSCODE_DIR:-$ROOT/demo/vscode}"
PY="${PYTHON:-python3}"

say() { echo "package-vscode: $*" >&2; }
die() { say "$*"; exit 1; }

EXT="$(cd "$EXT" && pwd)"
[ -f "$EXT/package.json" ] || die "no package.json in $EXT"
version="$(node -p 'require(process.argv[1]).version' "$EXT/package.json")"
out="${1:-$EXT/livetok-$version.vsix}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT

# the checkout's files, as they are now
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
     | while IFS= read -r -d '' f; do if [ -f "$f" ]; then printf '%s\0' "$f"; fi; done \
     | tar --null -T - -cf -) | tar -xf - -C "$src"
else
  (cd "$ROOT" && tar --exclude=__pycache__ -cf - pyproject.toml README.md incremental server) \
    | tar -xf - -C "$src"
fi

rm -rf "$EXT/bundled"
mkdir -p "$EXT/bundled"
if "$PY" -c "import build" >/dev/null 2>&1; then
  say "python -m build --wheel"
  "$PY" -m build --wheel --outdir "$EXT/bundled" "$src" >&2 || die "building the wheel failed"
else
  say "python -m pip wheel --no-deps"
  "$PY" -m pip wheel --no-deps --disable-pip-version-check -q -w "$EXT/bundled" "$src" >&2 \
    || die "building the wheel failed"
fi
wheels=("$EXT"/bundled/livetok-*.whl)
[ -f "${wheels[0]}" ] || die "no livetok wheel in $EXT/bundled"
say "bundled ${wheels[0]##*/}"

cd "$EXT"
if [ ! -d node_modules ]; then
  say "npm ci"
  npm ci --no-audit --no-fund >&2 || die "npm ci failed"
fi
npx --no-install vsce package --allow-missing-repository -o "$out" >&2 || die "vsce package failed"
echo "$out"
