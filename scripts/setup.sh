#!/usr/bin/env bash
# Prepare this machine for normfuse's tests. Idempotent: installs only what is missing, and
# never replaces a triton/torch that already fits (the GPU machine's image has triton 3.6.0
# and torch 2.11, no network, no lit and no filecheck: there it installs nothing and says so).
# numpy, lit, filecheck and pytest are installed when missing; only pytest is required.
#
#   PYTHON=python3.11 bash scripts/setup.sh     # another interpreter
#   NORMFUSE_OFFLINE=1 bash scripts/setup.sh    # never call pip (note what is missing)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY=${PYTHON:-python3}
OFFLINE=${NORMFUSE_OFFLINE:-0}
note() { echo "setup: $*"; }

# pip with short timeouts: an offline machine should fail in seconds, not minutes. pip's own
# output goes to a log: on an offline machine its ERROR lines would come before (and read worse
# than) our note; the note quotes pip's last line instead.
PIP_LAST=
PIP_LOG=$(mktemp "${TMPDIR:-/tmp}/normfuse-setup-pip.XXXXXX")
CHECK_ERR=$(mktemp "${TMPDIR:-/tmp}/normfuse-setup-check.XXXXXX")
trap 'rm -f "$PIP_LOG" "$CHECK_ERR"' EXIT
pip_install() {
  if [ "$OFFLINE" = 1 ]; then
    note "NORMFUSE_OFFLINE=1: not installing $*"
    return 1
  fi
  if "$PY" -m pip install --disable-pip-version-check --retries 1 --timeout 20 "$@" \
      >"$PIP_LOG" 2>&1; then
    note "installed $*"
    return 0
  fi
  PIP_LAST=$(grep -v '^[[:space:]]*$' "$PIP_LOG" | tail -n 1 | sed 's/^ERROR: //')
  return 1
}
pip_failed() {  # the note for a failed pip_install, with pip's last line
  note "$1${PIP_LAST:+ (pip: $PIP_LAST)}"
  PIP_LAST=
}

# --- triton and torch: pinned, and only when what is there does not fit -------------------
# triton 3.6.x (the IR the passes read is Triton 3.6's); torch >= 2.11 (the GPU image's).
# Only stdout is read: importing torch without numpy prints "Failed to initialize NumPy" on
# stderr, which is a warning, not a misfit (it made every run reinstall when read with 2>&1).
core_status=$("$PY" - 2>"$CHECK_ERR" <<'PYEOF' || true
import re
try:
    import triton, torch
except Exception as e:  # noqa: BLE001
    print(f"missing: {type(e).__name__}: {e}")
    raise SystemExit(0)
def v(s):
    return tuple(int(x) for x in re.findall(r"\d+", s.split("+")[0])[:3])
ok = v(triton.__version__)[:2] == (3, 6) and v(torch.__version__)[:2] >= (2, 11)
print(("ok" if ok else "unfit") + f": triton {triton.__version__}, torch {torch.__version__}")
PYEOF
)
case "$core_status" in
  ok:*)
    note "${core_status#ok: } (nothing to install)" ;;
  *)
    if [ -z "$core_status" ]; then  # the check itself failed: show why
      core_status="the check failed: $(tail -n 1 "$CHECK_ERR")"
    fi
    note "triton/torch: ${core_status}; installing triton==3.6.0 torch==2.13.0"
    # A pinned CPU-capable torch; a bare `torch` would resolve to a CUDA build.
    pip_install "triton==3.6.0" "torch==2.13.0" || {
      pip_failed "error: could not install triton==3.6.0 and torch==2.13.0 (offline?)"; exit 1; }
    ;;
esac

# --- numpy, lit, filecheck, pytest: numpy (torch warns without it), lit and filecheck are
# optional, pytest is not ---------------------------------------------------------------------
have() { "$PY" -c "import $1" >/dev/null 2>&1; }

# --- numpy: normfuse.testing's interpreter (torch's wheels do not always bring it) ---------
if have numpy; then :; else
  note "numpy missing; trying pip"
  # (offline, e.g. the GPU machine: the interpreter's tests skip, the rest of the suite runs)
  pip_install "numpy>=1.24" || note "warning: no numpy: the CPU interpreter's tests will be skipped"
fi

# --- test tools: lit and filecheck are optional, pytest is not ----------------------------

missing=()
for mod in numpy lit filecheck pytest; do
  if have "$mod"; then :; else missing+=("$mod"); fi
done
if [ ${#missing[@]} -eq 0 ]; then
  note "numpy, lit, filecheck, pytest present"
else
  note "missing: ${missing[*]}; trying pip"
  pip_install "${missing[@]}" || pip_failed "pip could not install ${missing[*]} (offline?)"
  for mod in "${missing[@]}"; do
    if have "$mod"; then continue; fi
    case "$mod" in
      pytest) note "error: pytest is missing and could not be installed"; exit 1 ;;
      numpy) note "note: no numpy: torch warns 'Failed to initialize NumPy'; the tests do not need it" ;;
      lit) note "note: no lit: test/python/test_lit.py runs the lit files' RUN lines itself" ;;
      filecheck) note "note: no filecheck package: lit tests use triton's bundled FileCheck" ;;
    esac
  done
fi

# --- pytest-xdist (optional): scripts/test.sh spreads the suite over the machine's cores with it
# (without it the suite runs in one process, about twice as long on 2 cores) ----------------
if have xdist; then :; else
  note "pytest-xdist missing; trying pip"
  pip_install "pytest-xdist>=3.5" \
    || pip_failed "note: no pytest-xdist: scripts/test.sh runs the suite in one process"
fi

# --- benchmark and test dependencies: transformers and liger-kernel (optional) -------------
# The model benchmark (python -m normfuse.repro --models; normfuse.repro.models) builds its
# models from transformers configs and compares with liger-kernel; its CPU test needs
# transformers. Each missing one is installed from a wheel in .whl/ when there is one (no index,
# no dependencies: the way onto a machine without a registry, e.g. the GPU machine; fetch it with
# `python3 -m pip download --no-deps --only-binary=:all: liger-kernel==0.8.5 -d .whl`), else from
# the registry; when neither works, a note (the benchmark then marks those columns skipped).
# liger-kernel 0.8.5 supports transformers >= 5.0 (the GPU image has 5.17) and torch 2.11.
LIGER_PIN="liger-kernel==0.8.5"
dist_have() {  # an installed distribution (metadata lookup: does not import the package)
  "$PY" -c "import importlib.metadata as m, sys; m.version(sys.argv[1])" "$1" >/dev/null 2>&1
}
local_wheel() {  # the newest .whl/<dist>-*.whl, or nothing
  { ls -1 .whl/"$1"-*.whl 2>/dev/null || true; } | sort -V | tail -n 1
}
for spec in "transformers:transformers:transformers>=5.0" "liger_kernel:liger-kernel:$LIGER_PIN"; do
  wheel_name=${spec%%:*}; rest=${spec#*:}; dist=${rest%%:*}; req=${rest#*:}
  if dist_have "$dist"; then
    if "$PY" -c "import $wheel_name" >/dev/null 2>&1; then continue; fi
    # installed without a dependency (an earlier wheel install): pip fills it in where it can
    pip_install "$req" || pip_failed "note: $dist does not import (a dependency missing)"
    continue
  fi
  whl=$(local_wheel "$wheel_name")
  if [ -n "$whl" ]; then
    if "$PY" -m pip install --disable-pip-version-check --no-deps --no-index "$whl" \
        >"$PIP_LOG" 2>&1; then
      note "installed $dist from $whl"
      # (no dependencies came with it: where one is missing and a registry is reachable, pip
      # fills them in; offline the benchmark's columns that need it are skipped)
      if "$PY" -c "import $wheel_name" >/dev/null 2>&1; then continue; fi
      pip_install "$req" && continue
      pip_failed "note: $dist from $whl does not import (a dependency missing)"
      continue
    fi
    PIP_LAST=$(grep -v '^[[:space:]]*$' "$PIP_LOG" | tail -n 1 | sed 's/^ERROR: //')
    pip_failed "could not install $whl"
  fi
  pip_install "$req" || pip_failed "note: no $dist (optional: the model benchmark's columns that need it are skipped)"
done
