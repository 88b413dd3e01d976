#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the whole test suite: pytest over test/python, which also
# runs every test/lit/*.mlir. Extra arguments go to pytest (e.g. -k cli, -x, -m gpu).
# With pytest-xdist (setup installs it) the tests run in one worker per core, a file's tests in
# one worker (their module caches stay shared): NORMFUSE_TEST_JOBS=N sets the workers (at most 8
# by default), NORMFUSE_TEST_JOBS=1 runs them in this process. The `slow` tests (heavy sweeps)
# are left out: `bash scripts/test.sh -m slow` runs them, `-m "slow or not slow"` everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

PY=${PYTHON:-python3}
export PYTHONPATH="python${PYTHONPATH:+:$PYTHONPATH}"
jobs=()
if "$PY" -c "import xdist" >/dev/null 2>&1; then
  n=${NORMFUSE_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
  if [ -z "${NORMFUSE_TEST_JOBS:-}" ] && [ "$n" -gt 8 ]; then n=8; fi
  if [ "$n" -gt 1 ]; then jobs=(-n "$n" --dist loadfile); fi
fi
rc=0
"$PY" -m pytest -q test/python ${jobs[@]+"${jobs[@]}"} "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
