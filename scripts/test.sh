#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the whole test suite: pytest over test/python, which also
# runs every test/lit/*.mlir. Extra arguments go to pytest (e.g. -k cli, -x, -m gpu).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

PY=${PYTHON:-python3}
export PYTHONPATH="python${PYTHONPATH:+:$PYTHONPATH}"
rc=0
"$PY" -m pytest -q test/python "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
