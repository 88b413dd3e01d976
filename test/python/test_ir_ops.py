"""normfuse.ir.ops (the facade), normfuse.ir.syntax (attributes), normfuse.ir.effects and
normfuse.launch: checked against Triton's own parser and verifier."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from normfuse import ir, launch
from normfuse.ir import IRError, bridge, effects
from normfuse.ir import ops as O
from normfuse.ir.syntax import Attr, read_attrs, set_attr_text, split_top_level

KERNEL = """\
module {
  tt.func public @k(%X: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %other = arith.constant dense<0.000000e+00> : tensor<16x16xbf16>
    %pid = tt.get_program_id x : i32
    %np = tt.get_num_programs y : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %re = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %rb = tt.broadcast %re : tensor<16x1xi32> -> tensor<16x16xi32>
    %xs = tt.splat %X : !tt.ptr<bf16> -> tensor<16x16x!tt.ptr<bf16>>
    %xp = tt.addptr %xs, %rb : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %ws = tt.splat %W : !tt.ptr<bf16> -> tensor<16x16x!tt.ptr<bf16>>
    %wp = tt.addptr %ws, %rb : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %mask = arith.cmpi slt, %rb, %rb : tensor<16x16xi32>
    %acc = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %zero) -> (tensor<16x16xf32>)  : i32 {
      %x = tt.load %xp, %mask, %other cacheModifier = ca : tensor<16x16x!tt.ptr<bf16>>
      %w = tt.load %wp : tensor<16x16x!tt.ptr<bf16>>
      %d = tt.dot %x, %w, %a : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      scf.yield %d : tensor<16x16xf32>
    } {tt.num_stages = 3 : i32}
    %s = "tt.reduce"(%acc) <{axis = 1 : i32}> ({
    ^bb0(%l: f32, %q: f32):
      %t = arith.addf %l, %q : f32
      tt.reduce.return %t : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %one = arith.constant 1 : i32
    %asm = tt.elementwise_inline_asm "mov.u32 $0, $1; /* a, b {c} */" {constraints = "=r,r", packed_element = 1 : i32, pure = false} %one : i32 -> i32
    %yp = tt.splat %Y : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
    %yq = tt.addptr %yp, %rb : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    tt.store %yq, %acc, %mask : tensor<16x16x!tt.ptr<f32>>
    tt.return
  }
}
"""


@pytest.fixture
def view():
    return ir.load(KERNEL, source_name="k.mlir")


def one(view, name):
    (op,) = [o for o in view.walk() if o.name == name]
    return op


# ---------------------------------------------------------------------------------------------
# Attributes
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("tt.load %p, %m cacheModifier = cg {tt.latency = 2 : i32} : tensor<4x!tt.ptr<f32>>",
     {"cacheModifier": "cg", "tt.latency": "2 : i32"}),
    ('"tt.reduce"(%x) <{axis = 1 : i32}> (', {"axis": "1 : i32"}),
    ('tt.elementwise_inline_asm "a, b > {c}" {constraints = "=r,r", packed_element = 1 : i32, pure = false} %x : i32 -> i32',
     {"constraints": '"=r,r"', "packed_element": "1 : i32", "pure": "false"}),
    ("tt.load %p {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x4xf32>>",
     {"boundaryCheck": "array<i32: 0, 1>", "padding": "1 : i32"}),
    ("tt.func @f(%a: i32 {tt.divisibility = 16 : i32}) -> (tensor<4xf32>) attributes {noinline = false} ",
     {"noinline": "false"}),  # the argument's attribute belongs to the argument
    ("scf.for %i = %a to %b step %c iter_args(%x = %y) -> (tensor<4xf32>)  : i32 ", {}),
])
def test_read_attrs_reads_whole_values(text, expected):
    assert {k: v.text for k, v in read_attrs(text).items()} == expected


def test_attr_values():
    assert Attr("3 : i32").int == 3 and Attr("-2").int == -2 and Attr("cg").int is None
    assert Attr("true").bool is True and Attr('"=r,\\"x"').str == '=r,"x'
    assert split_top_level("a, f(b, c), <d, e>, \"g,h\"") == ["a", " f(b, c)", " <d, e>", ' "g,h"']


def test_set_attr_text_places_the_dictionary():
    t = "tt.load %p : tensor<4x!tt.ptr<f32>> loc(#loc1)"
    assert set_attr_text(t, "tt.latency", "2 : i32") == \
        "tt.load %p {tt.latency = 2 : i32} : tensor<4x!tt.ptr<f32>> loc(#loc1)"
    t2 = set_attr_text(set_attr_text(t, "tt.latency", "2 : i32"), "tt.latency", "3 : i32")
    assert t2.count("tt.latency") == 1 and "3 : i32}" in t2
    assert set_attr_text(" {a = 1 : i32} loc(#l)", "b", "true", where="end") == " {a = 1 : i32, b = true} loc(#l)"


def test_set_attr_on_ops_is_accepted_by_triton(view):
    loads = [o for o in view.walk() if o.name == O.LOAD]
    for ld in loads:
        O.set_attr(ld, O.LATENCY, 2)
    loop = O.ForOp(one(view, O.FOR))
    O.set_attr(loop.op, "tt.flatten", True)
    func = view.functions()[0]
    O.set_attr(func, "normfuse.test", 7)
    red = one(view, O.REDUCE)
    O.set_attr(red, "normfuse.mark", True)
    O.LoadOp(loads[1]).set_cache_modifier("cg")
    again = bridge.reload(view, clean=False)
    got = {o.name: O.attrs(o) for o in again.walk() if o.name in (O.FOR, O.FUNC, O.REDUCE)}
    assert got[O.FOR]["tt.num_stages"].int == 3 and got[O.FOR]["tt.flatten"].bool
    assert got[O.FUNC]["normfuse.test"].int == 7 and got[O.FUNC]["noinline"].bool is False
    assert got[O.REDUCE]["normfuse.mark"].bool and O.ReduceOp(one(again, O.REDUCE)).axis == 1
    l0, l1 = [O.LoadOp(o) for o in again.walk() if o.name == O.LOAD]
    assert l0.attr(O.LATENCY).int == 2 and l0.cache_modifier == "ca"
    assert l1.attr(O.LATENCY).int == 2 and l1.cache_modifier == "cg"


# ---------------------------------------------------------------------------------------------
# Views
# ---------------------------------------------------------------------------------------------

def test_views(view):
    func = O.FuncOp(view.functions()[0])
    assert func.sym_name == "k" and [a.type for a in func.args][:2] == ["!tt.ptr<bf16>"] * 2
    assert func.terminator.name == O.RETURN
    loop = O.ForOp(one(view, O.FOR))
    assert loop.constant_bounds() == (0, 4, 1) and loop.num_stages == 3
    dot = O.DotOp(one(view, O.DOT))
    x, w = [O.LoadOp(o) for o in view.walk() if o.name == O.LOAD]
    assert dot.a is x.result and dot.b is w.result and dot.acc is loop.iter_args[0]
    assert x.mask is not None and x.other is not None and x.cache_modifier == "ca"
    assert w.mask is None and w.other is None and w.cache_modifier is None and not w.is_volatile
    assert O.pointer_root(x.ptr) is func.args[0]
    store = O.StoreOp(one(view, O.STORE))
    assert store.value is loop.op.results[0] and store.mask is x.mask
    red = O.ReduceOp(one(view, O.REDUCE))
    assert red.axis == 1 and red.is_sum()
    pid, np_ = [O.ProgramIdOp(o) for o in view.walk() if o.name in (O.GET_PROGRAM_ID, O.GET_NUM_PROGRAMS)]
    assert (pid.axis, np_.axis) == ("x", "y")
    asm = O.InlineAsmOp(one(view, O.INLINE_ASM))
    assert asm.asm == "mov.u32 $0, $1; /* a, b {c} */" and asm.constraints == "=r,r" and not asm.pure
    consts = [O.ConstantOp(o) for o in view.walk() if o.name == O.CONSTANT]
    assert [c.int_value for c in consts[:3]] == [0, 1, 4]
    assert consts[3].is_zero() and consts[3].int_value is None and consts[3].float_value == 0.0
    assert O.row_vector(one(view, "tt.broadcast").result)[1] == 1
    with pytest.raises(IRError, match="LoadOp expects"):
        O.LoadOp(one(view, O.DOT))
    assert O.LoadOp.match(dot.result) is None and O.DotOp.match(dot.result) == dot


def test_builder_computes_types_and_triton_accepts(view):
    loop = O.ForOp(one(view, O.FOR))
    acc = loop.op.results[0]
    b = O.Builder(view, loop.op, after=loop.op, hint="t")
    s = b.reduce_sum(acc, 0)
    assert s.type == "tensor<16xf32>"
    e = b.expand_dims(s, 0)
    assert e.type == "tensor<1x16xf32>"
    bc = b.broadcast(e, [16, 16])
    assert b.mulf(bc, acc).type == "tensor<16x16xf32>"
    h = b.truncf(acc, "bf16")
    assert h.type == "tensor<16x16xbf16>" and b.extf(h).type == "tensor<16x16xf32>"
    c = b.constant(0.5, "tensor<16xf32>")
    assert b.row_broadcast(c, [16, 16], axis=0).type == "tensor<16x16xf32>"
    i = b.constant(3, "i32")
    assert b.cmpi("eq", i, i).type == "i1" and b.splat(i, [16]).type == "tensor<16xi32>"
    assert b.make_range(0, 16).type == "tensor<16xi32>"
    assert b.global_scratch(256).type == "!tt.ptr<i8>"
    asm = b.inline_asm("mov.u32 $0, $1; // {x} \"q\"", "=r,r", [i], ["i32"])
    assert O.InlineAsmOp(asm).asm == "mov.u32 $0, $1; // {x} \"q\""
    ifop = b.if_(b.cmpi("slt", i, i), [s], [c])
    assert ifop.results[0].type == "tensor<16xf32>" and ifop.then_yield.name == O.YIELD
    assert [o.name for o in b.created][:2] == [O.REDUCE, O.EXPAND_DIMS]
    # every op lies right after the previous one, after the loop
    blk = loop.op.block
    i0 = blk.index_of(loop.op)
    assert blk.ops[i0 + 1:i0 + 1 + len(b.created)] == b.created
    bridge.finish(view, clean=False)  # Triton parses and verifies every template


def test_builder_before_and_at_end(view):
    loop = O.ForOp(one(view, O.FOR))
    y = loop.yield_op
    b = O.Builder(view, y, before=y)
    t = b.mulf(loop.iter_args[0], loop.iter_args[0])
    u = b.addf(t, t)
    assert loop.body.ops[-3:] == [t.owner, u.owner, y]
    loop.set_yields([u])
    bridge.finish(view, clean=False)


# ---------------------------------------------------------------------------------------------
# Effects
# ---------------------------------------------------------------------------------------------

def test_effects_table(view):
    by = {o.name: o for o in view.walk()}
    assert effects.is_pure(by[O.DOT]) and effects.is_pure(by[O.REDUCE]) and effects.is_pure(by["arith.cmpi"])
    assert effects.reads_memory(by[O.LOAD]) and not effects.has_side_effects(by[O.LOAD])
    assert effects.has_side_effects(by[O.STORE]) and effects.writes_memory(by[O.STORE], private=False)
    assert effects.has_side_effects(by[O.INLINE_ASM])  # not pure: counts as a write
    assert effects.has_side_effects(by[O.FUNC]) and not effects.has_side_effects(by[O.FOR])


def test_normfuse_asm_writes_private_memory_and_unknown_ops_write():
    v = ir.load('tt.func @f(%a: i32) -> i32 {\n'
                '  %0 = tt.elementwise_inline_asm "/* normfuse.x */ mov.u32 $0, $1;" {constraints = "=r,r", '
                'packed_element = 1 : i32, pure = false} %a : i32 -> i32\n'
                '  %1 = tt.elementwise_inline_asm "mov.u32 $0, $1;" {constraints = "=r,r", '
                'packed_element = 1 : i32, pure = true} %0 : i32 -> i32\n'
                '  gpu.barrier\n'
                '  tt.return %1 : i32\n}\n')
    mine, pure = [o for o in v.walk() if o.name == O.INLINE_ASM]
    assert effects.writes_memory(mine) and not effects.writes_memory(mine, private=False)
    assert effects.is_pure(pure)
    assert effects.has_side_effects(next(o for o in v.walk() if o.name == "gpu.barrier"))
    fake = O.Op(name="mydialect.unknown_op")
    assert effects.writes_memory(fake) and effects.reads_memory(fake)  # conservative


# ---------------------------------------------------------------------------------------------
# Keyword regions (scf.index_switch)
# ---------------------------------------------------------------------------------------------

SWITCH = """\
tt.func @sw(%i: index, %p: !tt.ptr<f32>) {
  %r = scf.index_switch %i -> f32
  case 2 {
    %c = arith.constant 1.0 : f32
    scf.yield %c : f32
  }
  default {
    %c = arith.constant 3.0 : f32
    scf.yield %c : f32
  }
  tt.store %p, %r : !tt.ptr<f32>
  tt.return
}
"""


def test_index_switch_regions_belong_to_the_switch():
    v = ir.load(SWITCH)
    names = [o.name for o in v.walk()]
    assert "case" not in names and "default" not in names
    sw = next(o for o in v.walk() if o.name == "scf.index_switch")
    assert len(sw.regions) == 2 and [o.name for o in sw.regions[1].blocks[0].ops] == [O.CONSTANT, O.YIELD]
    tmod, _ = bridge.parse_triton(SWITCH)
    assert v.print() == bridge.module_text(tmod)  # printed as Triton prints it
    twin = v.clone(sw, {})
    v.insert(twin, after=sw)
    assert str(bridge.finish(v, clean=False)).count("scf.index_switch") == 2


# ---------------------------------------------------------------------------------------------
# Launch needs
# ---------------------------------------------------------------------------------------------

def test_launch_needs_round_trip_through_ir(view):
    func = view.functions()[0]
    launch.declare(func, launch.ClusterSize(4), launch.ExtraSharedMemory(256),
                   launch.ScratchSizeToken("TOKEN"))
    again = bridge.reload(view, clean=False)
    needs = launch.read(again)
    assert launch.to_metadata(needs) == {"num_ctas": 4, "extra_shared": 256, "scratch_size_token": "TOKEN"}
    assert launch.from_metadata(launch.to_metadata(needs)) == needs
    md = {"shared": 1000, "global_scratch_size": 64}
    out = launch.apply_llir(needs, "x TOKEN y", md)
    assert out == "x 64 y" and md["num_ctas"] == 4 and md["shared"] == 1256
    launch.declare(again.functions()[0], launch.ClusterSize(4))  # the same need again: fine
    with pytest.raises(launch.LaunchError, match="conflicting"):
        launch.declare(again.functions()[0], launch.ClusterSize(2))
    from normfuse.passes import CompileContext
    assert launch.check(needs, CompileContext(num_ctas=1)) is None
    assert "num_ctas=1" in launch.check(needs, CompileContext(num_ctas=2))
    with pytest.raises(launch.LaunchError, match="does not know"):
        launch.from_metadata({"warp_groups": 3})


def test_global_smem_declared_only_where_the_asm_needs_it():
    # the exchange's inline PTX names `global_smem`; Triton declares it only for kernels with
    # shared memory of their own (the compiled case: test_cluster_reduce_chain)
    decl = "@global_smem = external addrspace(3) global [0 x i8], align 16"
    uses = 'target triple = "nvptx64"\n\ndefine void @k() {\n  call void asm "mov.u32 %r, global_smem;", ""()\n}\n'
    out = launch.declare_global_smem(uses)
    assert out.count(decl) == 1 and out.index(decl) < out.index("define void @k")
    assert launch.declare_global_smem(out) == out  # declared already: unchanged
    plain = 'define void @k() {\n  ret void\n}\n'
    assert launch.declare_global_smem(plain) == plain  # nothing names it
    with pytest.raises(launch.LaunchError, match="no function definition"):
        launch.declare_global_smem('call void asm "mov.u32 %r, global_smem;"')


# ---------------------------------------------------------------------------------------------
# The rule: no MLIR syntax in the passes
# ---------------------------------------------------------------------------------------------

PASSES = Path(__file__).resolve().parents[2] / "python" / "normfuse" / "passes"
# what only printed MLIR looks like (PTX asm text, remarks and op names used for matching do not)
_MLIR = re.compile(r"tensor<|!tt\.|dense<|:\s*[if](1|8|16|32|64)\b|\bloc\(|<\{|\{axis|iter_args\(|"
                   r"attributes \{|%[A-Za-z_][\w.]*\s*=|\^bb\d|\b(?:tt|ttg|arith|scf|math)\.[a-z_.]+ [%$\"]")
_OP_NAME = re.compile(r"(?:tt|ttg|ttng|arith|scf|math)\.[a-z_.]+")


def _string_literals(tree):
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


@pytest.mark.parametrize("path", sorted(PASSES.rglob("*.py")), ids=lambda p: str(p.relative_to(PASSES)))
def test_passes_spell_no_mlir(path):
    """Op templates, attribute syntax and op names live in normfuse.ir; a pass uses the facade."""
    bad = []
    for node in _string_literals(ast.parse(path.read_text())):
        s = node.value
        if _MLIR.search(s) or _OP_NAME.fullmatch(s):
            bad.append(f"line {node.lineno}: {s[:80]!r}")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# Canonical forms of two loops' values (normfuse.ir.affine)
# ---------------------------------------------------------------------------------------------

TWO_LOOPS = """\
tt.func @two(%X: !tt.ptr<f32>, %K: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c31 = arith.constant 31 : i32
  %c32 = arith.constant 32 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.000000e+00> : tensor<32xf32>
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %base = tt.splat %X : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %p0 = tt.addptr %base, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  %bump = arith.constant dense<32> : tensor<32xi32>
  %a:2 = scf.for %off = %c0 to %K step %c32 iter_args(%s = %zero, %p = %p0) -> (tensor<32xf32>, tensor<32x!tt.ptr<f32>>)  : i32 {
    %x = tt.load %p : tensor<32x!tt.ptr<f32>>
    %s2 = arith.addf %s, %x : tensor<32xf32>
    %pn = tt.addptr %p, %bump : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %o1 = tt.splat %off : i32 -> tensor<32xi32>
    %o2 = arith.addi %r, %o1 : tensor<32xi32>
    scf.yield %s2, %pn : tensor<32xf32>, tensor<32x!tt.ptr<f32>>
  }
  %n0 = arith.addi %K, %c31 : i32
  %n = arith.divsi %n0, %c32 : i32
  %b = scf.for %k = %c0 to %n step %c1 iter_args(%t = %zero) -> (tensor<32xf32>)  : i32 {
    %ko = arith.muli %k, %c32 : i32
    %kos = tt.splat %ko : i32 -> tensor<32xi32>
    %q0 = arith.addi %kos, %r : tensor<32xi32>
    %q = tt.addptr %base, %q0 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %y = tt.load %q : tensor<32x!tt.ptr<f32>>
    %ko2 = arith.muli %k, %c64 : i32
    %kos2 = tt.splat %ko2 : i32 -> tensor<32xi32>
    %q2 = tt.addptr %base, %kos2 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %z = tt.load %q2 : tensor<32x!tt.ptr<f32>>
    %t2 = arith.addf %y, %t : tensor<32xf32>
    %t3 = arith.addf %t2, %z : tensor<32xf32>
    scf.yield %t3 : tensor<32xf32>
  }
  tt.return
}
"""


def test_forms_see_one_computation_in_two_spellings():
    from normfuse.ir.affine import Forms
    v = ir.load(TWO_LOOPS)
    a, b = [O.ForOp(o) for o in v.walk() if o.name == O.FOR]
    f = Forms(a, b)
    assert f.same_trips()  # range(0, K, 32) and range(0, cdiv(K, 32))
    x, y, z = [o.result for o in v.walk() if o.name == O.LOAD]
    assert f.equal(x, y)  # p advanced by 32 each trip == base + k * 32 + r
    assert not f.equal(x, z)  # base + k * 64: another tile
    o2 = next(o.result for o in v.walk() if o.name == "arith.addi" and a.contains(o.result))
    q0 = next(o.result for o in v.walk() if o.name == "arith.addi" and b.contains(o.result))
    assert f.equal(o2, q0)  # r + off == k * 32 + r: any order of the terms
    assert f.table(b)[(q0.type, f.form(o2))] is q0


# ---------------------------------------------------------------------------------------------
# memory_root through pointers an scf.for carries
# ---------------------------------------------------------------------------------------------

CARRIED = """\
tt.func @c(%X: !tt.ptr<f32>, %W: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %step = arith.constant dense<16> : tensor<16xi32>
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %xs = tt.splat %X : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %x0 = tt.addptr %xs, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %ws = tt.splat %W : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %w0 = tt.addptr %ws, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %adv = scf.for %k = %c0 to %n step %c1 iter_args(%p = %x0) -> (tensor<16x!tt.ptr<f32>>)  : i32 {
    %v = tt.load %p : tensor<16x!tt.ptr<f32>>
    tt.store %p, %v : tensor<16x!tt.ptr<f32>>
    %p2 = tt.addptr %p, %step : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    scf.yield %p2 : tensor<16x!tt.ptr<f32>>
  }
  %fresh = scf.for %k = %c0 to %n step %c1 iter_args(%p = %x0) -> (tensor<16x!tt.ptr<f32>>)  : i32 {
    %v = tt.load %p : tensor<16x!tt.ptr<f32>>
    %o = tt.splat %k : i32 -> tensor<16xi32>
    %p2 = tt.addptr %xs, %o : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    scf.yield %p2 : tensor<16x!tt.ptr<f32>>
  }
  %other = scf.for %k = %c0 to %n step %c1 iter_args(%p = %x0) -> (tensor<16x!tt.ptr<f32>>)  : i32 {
    %v = tt.load %p : tensor<16x!tt.ptr<f32>>
    scf.yield %w0 : tensor<16x!tt.ptr<f32>>
  }
  %swap:2 = scf.for %k = %c0 to %n step %c1 iter_args(%p = %x0, %q = %w0) -> (tensor<16x!tt.ptr<f32>>, tensor<16x!tt.ptr<f32>>)  : i32 {
    %v = tt.load %p : tensor<16x!tt.ptr<f32>>
    scf.yield %q, %p : tensor<16x!tt.ptr<f32>>, tensor<16x!tt.ptr<f32>>
  }
  %x1 = tt.addptr %x0, %step : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %swapx:2 = scf.for %k = %c0 to %n step %c1 iter_args(%p = %x0, %q = %x1) -> (tensor<16x!tt.ptr<f32>>, tensor<16x!tt.ptr<f32>>)  : i32 {
    %v = tt.load %p : tensor<16x!tt.ptr<f32>>
    scf.yield %q, %p : tensor<16x!tt.ptr<f32>>, tensor<16x!tt.ptr<f32>>
  }
  %outer = scf.for %k = %c0 to %n step %c1 iter_args(%p = %x0) -> (tensor<16x!tt.ptr<f32>>)  : i32 {
    %inner = scf.for %j = %c0 to %n step %c1 iter_args(%pi = %p) -> (tensor<16x!tt.ptr<f32>>)  : i32 {
      %v = tt.load %pi : tensor<16x!tt.ptr<f32>>
      %pj = tt.addptr %pi, %step : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      scf.yield %pj : tensor<16x!tt.ptr<f32>>
    }
    scf.yield %inner : tensor<16x!tt.ptr<f32>>
  }
  %true = arith.constant true
  %picked = arith.select %true, %x0, %w0 : i1, tensor<16x!tt.ptr<f32>>
  %sel = scf.for %k = %c0 to %n step %c1 iter_args(%p = %x0) -> (tensor<16x!tt.ptr<f32>>)  : i32 {
    %v = tt.load %p : tensor<16x!tt.ptr<f32>>
    scf.yield %picked : tensor<16x!tt.ptr<f32>>
  }
  tt.return
}
"""


def test_memory_root_follows_a_carried_pointer():
    """An iter_arg (and the loop's result for it) has its init's root when its yield traces to
    that root again: advanced (`p += BK`), recomputed from the argument, swapped with another
    pointer into the same argument, advanced by an inner loop. Not when a yield may point into
    another argument (a pointer of W, a swap with one, a select)."""
    v = ir.load(CARRIED)
    func = v.functions()[0]
    X = func.regions[0].blocks[0].args[0]
    names = ["adv", "fresh", "other", "swap", "swapx", "outer", "inner", "sel"]  # walk order
    loops = dict(zip(names, [O.ForOp(o) for o in v.walk() if o.name == O.FOR], strict=True))
    roots = {name: [O.pointer_root(a) for a in f.iter_args] for name, f in loops.items()}
    assert roots == {"adv": [X], "fresh": [X], "other": [None], "swap": [None, None],
                     "swapx": [X, X], "outer": [X], "inner": [X], "sel": [None]}
    assert O.pointer_root(loops["adv"].op.results[0]) is X
    assert O.pointer_root(loops["swap"].op.results[1]) is None
    assert O.pointer_root(loops["adv"].iv) is None
    load = next(o for o in loops["inner"].body.ops if o.name == O.LOAD)
    assert O.LoadOp(load).root is X  # memory_root: what LoadOp.root / StoreOp.root use
    # a store through the advanced pointer writes X, a traced write (no "unknown writer")
    assert O.unknown_writer(func) is None and O.written_roots(func) == {id(X)}
