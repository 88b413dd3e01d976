# lit configuration for normfuse's FileCheck tests: `python3 -m lit -v test/lit`.
# -*- Python -*-
import os
import sys

import lit.formats

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
import normfuse_lit  # noqa: E402

config.name = "normfuse"
config.test_format = lit.formats.ShTest(execute_external=False)  # lit's shell: `not`, pipes
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "inputs", "Output", "lit.cfg.py", "normfuse_lit.py",
                   "select_chunks.py"]
config.test_source_root = _here
# Outputs (%t) go to build/lit, or where NORMFUSE_LIT_OUT says (test/python/test_lit.py).
config.test_exec_root = os.environ.get("NORMFUSE_LIT_OUT") or os.path.join(normfuse_lit.REPO, "build", "lit")

if normfuse_lit.filecheck_command() is None:
    lit_config.fatal("no FileCheck: install triton (bundles one) or `pip install filecheck`")
config.substitutions.extend(normfuse_lit.substitutions())

for var in ("HOME", "TMPDIR", "PYTHONPATH", "TRITON_HOME", "TRITON_CACHE_DIR", "LD_LIBRARY_PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
