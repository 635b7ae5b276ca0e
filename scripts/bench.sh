#!/usr/bin/env bash
# Regenerate every benchmark page and plot in docs/ with one command (on demand, not in CI):
#
#   bash scripts/bench.sh            # all benchmarks, full sizes (about 1-1.5 hours)
#   bash scripts/bench.sh encode     # only some of: encode document server stream wordpiece markdown hf worstcase
#
# Installs livetok with its test and bench extras into .venv (as scripts/test.sh does), then
# runs benchmarks/bench_<name>.py, each of which writes its tables into docs/ and its plots
# into docs/img/. Run it on a quiet machine: every number is a wall-clock or CPU-time median.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-dev.sh test,bench
names=("$@")
[ "${#names[@]}" -gt 0 ] || names=(encode document server stream wordpiece markdown hf worstcase)
for name in "${names[@]}"; do
  script="benchmarks/bench_${name}.py"
  [ -f "$script" ] || { echo "scripts/bench.sh: no $script" >&2; exit 2; }
  echo "== $script" >&2
  case "$name" in
    # files of 10 MB, 100 MB and 1 GB in $TMPDIR (about 2 GB of disk); BENCH_STREAM_SIZES=10,100 for less
    stream) .venv/bin/python "$script" --sizes "${BENCH_STREAM_SIZES:-10,100,1000}" ;;
    *) .venv/bin/python "$script" ;;
  esac
done
