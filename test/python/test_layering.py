"""normfuse's layers look down only, and no import closes a cycle (issue 23, item 5).

The import graph is read from the source with `ast` (`normfuse.testing.layers`): every import
statement counts, module-level or inside a function, so a function-local import that only hides
a cycle is found as well. Layers bottom up: device facts, references, version; ir; launch needs;
passes; lowering; the compiler driver; naive kernels; ops; testing support; nn; repro.

`KNOWN` lists what the branches of other helpers are removing (owner in the comment); the test
fails on anything else, and on a known entry that has gone (so that the list only shrinks).
"""
from __future__ import annotations

import textwrap

import pytest

from normfuse.testing import layers as L

# Cycles and upward imports that exist in the other branches' areas today, by owner.
KNOWN_CYCLES: set = set()
KNOWN_UPWARD: set = set()


@pytest.fixture(scope="module")
def graph():
    return L.imports()


def test_every_module_has_a_layer(graph):
    for m in L.modules():
        L.layer_of(m)  # raises for a module no layer covers


def test_no_new_import_cycle(graph):
    found = {tuple(c) for c in L.cycles(graph)}
    assert found - KNOWN_CYCLES == set(), L.report(graph)
    assert KNOWN_CYCLES - found == set(), ("a known cycle is gone: remove it from KNOWN_CYCLES",
                                           KNOWN_CYCLES - found)


def test_layers_look_down_only(graph):
    found = {(e.src, e.dst) for e in L.upward(graph)}
    assert found - KNOWN_UPWARD == set(), L.report(graph)
    assert KNOWN_UPWARD - found == set(), ("a known upward import is gone: remove it from "
                                           "KNOWN_UPWARD", KNOWN_UPWARD - found)


def test_the_lowering_and_the_pass_do_not_import_each_other(graph):
    """hopper-ws's analysis and its backend meet only in the plan's types (normfuse.ir.ws_plan);
    lowering/ imports nothing of ops/."""
    for e in graph:
        assert not (e.src == "normfuse.passes.hopper_ws" and e.dst.startswith("normfuse.lowering")), e
        assert not (e.src.startswith("normfuse.lowering") and e.dst == "normfuse.passes.hopper_ws"), e
        assert not (e.src.startswith("normfuse.lowering") and e.dst.startswith("normfuse.ops")), e
    assert any(e.src == "normfuse.passes.hopper_ws" and e.dst == "normfuse.ir.ws_plan" for e in graph)
    assert any(e.src == "normfuse.lowering.codegen" and e.dst == "normfuse.ir.ws_plan" for e in graph)


def test_op_names_come_from_the_ir_facade():
    """The hook code generator spells no TTIR op name (the plan's expressions have their own
    vocabulary); the pass reads op names from normfuse.ir.ops."""
    import ast
    import re
    mods = L.modules()
    for name in ("normfuse.lowering.codegen", "normfuse.passes.hopper_ws", "normfuse.lowering.runtime",
                 "normfuse.lowering.launch"):
        tree = ast.parse(open(mods[name]).read())
        spelled = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                   and isinstance(n.value, str) and re.fullmatch(r"(arith|math|tt|scf)\.[a-z_]+", n.value)]
        assert spelled == [], (name, spelled)


# ---------------------------------------------------------------------------------------------
# The analysis itself, on a small package written for the test
# ---------------------------------------------------------------------------------------------

def _package(tmp_path, files: dict):
    root = tmp_path / "normfuse"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    for d in [root] + [p for p in root.rglob("*") if p.is_dir()]:
        if not (d / "__init__.py").exists():
            (d / "__init__.py").write_text("")
    return str(root)


def test_function_local_imports_and_cycles_are_found(tmp_path):
    root = _package(tmp_path, {
        "ir/core.py": "from ..passes import x\n",                 # upward, module level
        "passes/x.py": "def f():\n    from ..ir import core\n",   # closes a cycle, function-local
        "lowering/a.py": "from . import b\n",
        "lowering/b.py": "import normfuse.lowering.a as a\n",
    })
    edges = L.imports(L.modules(root))
    assert ("normfuse.ir.core", "normfuse.passes.x", False) in {(e.src, e.dst, e.local) for e in edges}
    assert ("normfuse.passes.x", "normfuse.ir.core", True) in {(e.src, e.dst, e.local) for e in edges}
    assert ["normfuse.ir.core", "normfuse.passes.x"] in L.cycles(edges)
    assert ["normfuse.lowering.a", "normfuse.lowering.b"] in L.cycles(edges)
    up = {(e.src, e.dst) for e in L.upward(edges)}
    assert up == {("normfuse.ir.core", "normfuse.passes.x")}
