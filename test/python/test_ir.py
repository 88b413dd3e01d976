"""normfuse.ir: the editable view of Triton-printed TTIR/TTGIR, checked against Triton itself."""
from __future__ import annotations

import re
import tempfile

import pytest

from normfuse import ir
from normfuse.ir import IRError, TensorType, bridge, parse_type

HAND_WRITTEN = """\
tt.func @sumsq(%x: tensor<64xf32>) -> f32 {
  %sq = arith.mulf %x, %x : tensor<64xf32>
  %s = "tt.reduce"(%sq) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<64xf32>) -> f32
  tt.return %s : f32
}
"""


def ops_named(module, name):
    return [o for o in module.walk() if o.name == name]


def only(module, name):
    found = ops_named(module, name)
    assert len(found) == 1, f"expected one {name}, found {len(found)}"
    return found[0]


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_print_equals_triton_print(stage, compiled_row_rstd, triton_print):
    text = compiled_row_rstd.asm[stage]
    view = ir.load(text)
    assert view.print() == triton_print(text)


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_round_trip_is_a_fixed_point(stage, compiled_row_rstd):
    once = ir.load(compiled_row_rstd.asm[stage]).print()
    assert ir.load(once).print() == once
    assert str(bridge.finish(ir.load(once), clean=False)) == once


def test_walk_sees_every_op_triton_sees(ttir):
    view = ir.load(ttir)
    names = [o.name for o in view.walk()]
    for expected in ("tt.func", "scf.for", "tt.load", "arith.extf", "arith.mulf", "scf.yield",
                     "tt.reduce", "tt.reduce.return", "math.rsqrt", "tt.store", "tt.return"):
        assert expected in names
    assert len(view.functions()) == 1
    loop = only(view, "scf.for")
    assert only(view, "tt.load").parent_op is loop
    assert loop.is_ancestor_of(only(view, "tt.load"))
    assert not loop.is_ancestor_of(only(view, "tt.store"))


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------

def test_value_types_and_shapes(ttir, row_rstd):
    view = ir.load(ttir)
    bm, bn = row_rstd.BLOCK_M, row_rstd.BLOCK_N
    loaded = parse_type(only(view, "tt.load").result.type)
    assert loaded == TensorType((bm, bn), "bf16")
    assert parse_type(only(view, "arith.extf").result.type) == TensorType((bm, bn), "f32")
    assert parse_type(only(view, "tt.reduce").result.type) == TensorType((bm,), "f32")
    ptrs = parse_type(ops_named(view, "tt.addptr")[-1].result.type)
    assert ptrs.shape == (bm,) and ptrs.element == "!tt.ptr<f32>"

    loop = only(view, "scf.for")
    iv, acc = loop.body().args
    assert iv.type == "i32"
    assert parse_type(acc.type) == TensorType((bm, bn), "f32")
    assert acc.type == loop.result.type

    func = view.functions()[0]
    args = {a.name: a.type for a in func.body().args}
    assert args == {"%X": "!tt.ptr<bf16>", "%R": "!tt.ptr<f32>", "%M": "i32", "%N": "i32",
                    "%stride": "i32", "%eps": "f32"}


def test_ttgir_types_carry_their_layout(ttgir, row_rstd):
    view = ir.load(ttgir)
    t = parse_type(only(view, "tt.load").result.type)
    assert t.shape == (row_rstd.BLOCK_M, row_rstd.BLOCK_N) and t.element == "bf16"
    assert t.encoding is not None and "blocked" in t.encoding
    assert str(t) == only(view, "tt.load").result.type


@pytest.mark.parametrize("text, expected", [
    ("tensor<128x64xbf16, #blocked>", TensorType((128, 64), "bf16", "#blocked")),
    ("tensor<64x!tt.ptr<f32>>", TensorType((64,), "!tt.ptr<f32>")),
    ("tensor<16x1xi1>", TensorType((16, 1), "i1")),
    ("tensor<f32>", TensorType((), "f32")),
    ("i32", "i32"),
    (" !tt.ptr<bf16> ", "!tt.ptr<bf16>"),
])
def test_parse_type(text, expected):
    assert parse_type(text) == expected
    if isinstance(expected, TensorType):
        assert str(parse_type(text)) == text.strip()


def test_tensor_type_helpers():
    t = TensorType((128, 64), "bf16", "#blocked")
    assert str(t.with_shape((128,))) == "tensor<128xbf16, #blocked>"
    assert str(t.with_element("f32")) == "tensor<128x64xf32, #blocked>"


# ---------------------------------------------------------------------------------------------
# Queries and edits
# ---------------------------------------------------------------------------------------------

def test_users(ttir):
    view = ir.load(ttir)
    load, extf, mulf = only(view, "tt.load"), only(view, "arith.extf"), only(view, "arith.mulf")
    assert view.users(load.result) == [extf]
    assert view.users(extf.result) == [mulf]
    assert mulf.operands == [extf.result, extf.result]
    loop = only(view, "scf.for")
    assert view.users(loop.result) == [only(view, "tt.reduce")]
    # users() and the bulk index agree
    index = view.user_index()
    for value in (load.result, extf.result, loop.result):
        assert index[id(value)] == view.users(value)


def test_replace_all_uses_then_verify(ttir):
    view = ir.load(ttir)
    extf, mulf = only(view, "arith.extf"), only(view, "arith.mulf")
    add = view.users(mulf.result)[0]
    assert view.replace_all_uses(mulf.result, extf.result) == 1  # acc += x instead of x*x
    assert view.users(mulf.result) == []
    assert extf.result in add.operands
    view.erase(mulf)
    printed = str(bridge.finish(view, clean=False))
    assert "arith.mulf" not in printed
    again = ir.load(printed)
    loop_add = next(o for o in only(again, "scf.for").walk() if o.name == "arith.addf")
    assert only(again, "arith.extf").result in loop_add.operands


def test_replace_all_uses_with_wrong_type_is_rejected_by_triton(ttir):
    view = ir.load(ttir)
    mulf = only(view, "arith.mulf")
    i32 = next(v for o in view.walk() for v in o.results if v.type == "i32")
    view.replace_all_uses(mulf.result, i32)
    with pytest.raises(IRError, match="type"):
        bridge.finish(view)


def test_replace_all_uses_where(ttir):
    view = ir.load(ttir)
    extf = only(view, "arith.extf")
    load = only(view, "tt.load")
    n = view.replace_all_uses(load.result, load.result, where=lambda o: o is not extf)
    assert n == 0
    assert view.users(load.result) == [extf]


def test_erase_of_used_op_raises(ttir):
    view = ir.load(ttir)
    load = only(view, "tt.load")
    with pytest.raises(IRError, match="still used"):
        view.erase(load)
    assert load.block is not None and load in load.block.ops  # nothing was detached


def test_erase_of_unused_op(ttir):
    view = ir.load(ttir)
    before = view.print()
    red = only(view, "tt.reduce")
    orphan = view.clone(red, {})
    view.insert(orphan, after=red)
    view.erase(orphan)
    assert view.print() == before


def test_build_insert_and_verify(ttir):
    view = ir.load(ttir)
    extf, mulf = only(view, "arith.extf"), only(view, "arith.mulf")
    t = extf.result.type
    cube = view.build(f"arith.mulf $0, $1 : {t}", mulf.result, extf.result, types=[t])
    assert cube.name == "arith.mulf" and cube.block is None
    assert cube.result.type == t and cube.operands == [mulf.result, extf.result]
    view.insert(cube, after=mulf)
    assert mulf.block.ops.index(cube) == mulf.block.ops.index(mulf) + 1
    view.replace_all_uses(mulf.result, cube.result, where=lambda o: o is not cube)
    assert view.users(cube.result) == [next(o for o in view.walk() if o.name == "arith.addf")]
    printed = str(bridge.finish(view, clean=False))
    assert printed.count("arith.mulf") == 2
    # cleanup must keep the new op: it is live
    assert str(bridge.finish(ir.load(printed), clean=True)).count("arith.mulf") == 2


def test_build_fresh_names_do_not_collide(ttir):
    view = ir.load(ttir)
    x = only(view, "arith.extf").result
    a = view.build(f"arith.addf $0, $0 : {x.type}", x, types=[x.type])
    b = view.build(f"arith.addf $0, $0 : {x.type}", x, types=[x.type])
    existing = {v.name for o in view.walk() for v in o.results}
    assert a.result.name != b.result.name
    assert a.result.name not in existing and b.result.name not in existing


def test_clone_op_with_region(ttir):
    view = ir.load(ttir)
    red = only(view, "tt.reduce")
    loop = only(view, "scf.for")
    zero = next(o for o in ops_named(view, "arith.constant")
                if o.result.type == loop.result.type).result
    mapping = {id(loop.result): zero}
    twin = view.clone(red, mapping)

    assert twin is not red and twin.name == "tt.reduce"
    assert twin.operands == [zero]  # remapped through `mapping`
    assert twin.result.type == red.result.type and twin.result.name != red.result.name
    assert len(twin.regions) == 1 and len(twin.body().ops) == len(red.body().ops) == 2
    assert all(a is not b for a, b in zip(twin.body().args, red.body().args))
    assert all(mapping[id(a)] is b for a, b in zip(red.body().args, twin.body().args))
    inner = twin.body().ops[0]
    assert inner.operands == twin.body().args and inner.block is twin.body()

    view.insert(twin, after=red)
    kept = str(bridge.finish(view, clean=False))
    assert kept.count('"tt.reduce"') == 2
    cleaned = str(bridge.finish(view, clean=True))  # the clone is dead: DCE removes it
    assert cleaned.count('"tt.reduce"') == 1

    # now make the clone the live one
    view.replace_all_uses(red.result, twin.result)
    view.erase(red)
    assert str(bridge.finish(view, clean=False)).count('"tt.reduce"') == 1


def _without_file_locs(text: str) -> str:
    # Triton's own print names the parser's temporary file in implicit locations.
    return re.sub(r'loc\("[^"]*":\d+:\d+\)', 'loc("FILE")', text)


def test_hand_written_generic_form(triton_print):
    view = ir.load(HAND_WRITTEN, source_name="sumsq.mlir")
    assert _without_file_locs(view.print()) == _without_file_locs(triton_print(HAND_WRITTEN))
    red = only(view, "tt.reduce")
    assert view.users(only(view, "arith.mulf").result) == [red]
    assert red.attr("axis") == "0 : i32"


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

def test_syntax_error_carries_mlir_diagnostic():
    bad = "tt.func @f() {\n  %0 = arith.addf %a, %a : f32\n  tt.return\n}\n"
    with pytest.raises(IRError) as e:
        ir.load(bad, source_name="bad.mlir")
    msg = str(e.value)
    assert "use of undeclared SSA value name" in msg
    assert 'loc("bad.mlir":2:' in msg
    assert tempfile.gettempdir() + "/normfuse-" not in msg


def test_verifier_error_carries_mlir_diagnostic():
    with pytest.raises(IRError, match=r"doesn't match function result type"):
        ir.load("tt.func @f(%a: i32) -> f32 {\n  tt.return %a : i32\n}\n")


def test_unknown_op_is_an_error():
    with pytest.raises(IRError, match="custom op 'this' is unknown"):
        ir.load("this is not IR\n")


def test_implicit_locations_are_deterministic():
    # Triton parses from a file in a fresh temporary directory; its path must not leak.
    first = ir.load(HAND_WRITTEN, source_name="sumsq.mlir").print()
    assert tempfile.gettempdir() + "/normfuse-" not in first
    assert 'loc("sumsq.mlir":1:' in first
    assert ir.load(HAND_WRITTEN, source_name="sumsq.mlir").print() == first


# ---------------------------------------------------------------------------------------------
# Every kernel the project ships, every stage the passes may meet
# ---------------------------------------------------------------------------------------------

def _project_kernels():
    from normfuse.ops import prenorm_linear as ops
    import torch
    out = []
    for kind, kw, tag in (("rms", {"has_g": True}, "g"), ("rms", {"has_g": False}, "plain"),
                          ("ln", {}, "g-b"), ("ln", {"has_g": False, "has_b": False}, "plain"),
                          ("gemm", {}, "plain")):
        for tma in (False, True):
            out.append((f"{kind}-{tag}-{'tma' if tma else 'ptr'}",
                        lambda kind=kind, kw=kw, tma=tma: ops.aot_compile(
                            kind, M=4096, N=1024, K=1000 if not tma else 1024, dtype=torch.bfloat16,
                            passes=(), tma=tma, **kw)))
    return out


# the default suite: every kernel with TMA loads, and the pointer (ragged K) forms of the kernels
# with their norm parameters; `-m slow` the other pointer forms (2-4 s each)
_SLOW_IR = {"rms-plain-ptr", "ln-plain-ptr", "gemm-plain-ptr"}


@pytest.mark.parametrize("name,make", [pytest.param(n, m, id=n, marks=pytest.mark.slow
                                                    if n in _SLOW_IR else ())
                                       for n, m in _project_kernels()])
def test_every_project_kernel_round_trips(name, make):
    """The view prints TTIR and TTGIR of each shipped kernel exactly as Triton does, and the types
    it reads agree with Triton's for every op result."""
    ck = make()
    for stage in ("ttir", "ttgir"):
        text = ck.asm[stage]
        view = ir.load(text)
        tmod, _ = bridge.parse_triton(text)
        assert view.print() == bridge.module_text(tmod), (name, stage)
        assert all(r.type for o in view.walk() for r in o.results), (name, stage)


RESULTLESS_LOOP = """
module {
  tt.func public @k(%p: !tt.ptr<f32>) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %f = arith.constant 1.0 : f32
    scf.for %i = %c0 to %c1 step %c1  : i32 {
      tt.store %p, %f : !tt.ptr<f32>
    }
    tt.return
  }
}
"""


def test_forloop_with_elided_yield():
    """A result-less scf.for prints without its scf.yield: yield_op is None (not the store),
    yields is empty, set_yields refuses, and inlining keeps the body's last op."""
    from normfuse.ir.match import ForLoop
    view = ir.load(RESULTLESS_LOOP, source_name="loop.mlir")
    loop = ForLoop(only(view, "scf.for"))
    assert loop.yield_op is None and loop.yields == []
    with pytest.raises(IRError, match="elided"):
        loop.set_yields([])
    c0 = [o for o in view.functions()[0].walk() if o.name == "arith.constant"][0]
    moved = loop.inline(view, c0.result)
    assert [o.name for o in moved] == ["tt.store"]
    text = bridge.reload(view, clean=False).print()
    assert "scf.for" not in text and "tt.store" in text
