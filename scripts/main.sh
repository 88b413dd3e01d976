#!/usr/bin/env bash
# The main job: set up (scripts/setup.sh), then compile the naive pre-norm kernels through the
# normfuse passes for sm_90 and show what each pass did; on a Hopper GPU also check numerics
# and print the speed table. Extra arguments go to `python3 -m normfuse.repro` (e.g. --out DIR).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
PY=${PYTHON:-python3}
export PYTHONPATH="python${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" -m normfuse.repro "$@"
