"""Passes that exist only for tests: they drive the registry, the pipeline, the driver and the
compiler hook without depending on the real passes (which are being written)."""
from __future__ import annotations

from dataclasses import dataclass

from normfuse.passes import Pass


@dataclass
class Noop(Pass):
    """Matches nothing; one "missed" remark per function. Has one option of each kind."""

    name = "test-noop"
    summary = "does nothing and says so (test pass)"

    count: int = 1
    flag: bool = False
    tag: str = "x"
    max_rows: int = 0

    def run(self, module):
        for f in module.functions():
            self.remark("missed", f"nothing to do (count={self.count}, flag={self.flag}, "
                                  f"tag={self.tag}, max_rows={self.max_rows})", f.loc)
        return None


@dataclass
class MulToAdd(Pass):
    """arith.mulf(a, b) -> arith.addf(a, b): a valid rewrite through build/insert/erase."""

    name = "test-mul-to-add"
    summary = "rewrites every arith.mulf into arith.addf (test pass)"

    def run(self, module):
        for op in [o for o in module.walk() if o.name == "arith.mulf"]:
            a, b = op.operands
            t = op.result.type
            new = module.build(f"arith.addf $0, $1 : {t}", a, b, types=[t])
            module.insert(new, before=op)
            module.replace_all_uses(op.result, new.result)
            module.erase(op)
            self.remark("applied", "arith.mulf -> arith.addf", op.loc)
        if not self.remarks:
            self.remark("missed", "no arith.mulf")
        return None


@dataclass
class Break(Pass):
    """Feeds an i32 into the first arith.addf: IR that Triton's parser must reject."""

    name = "test-break"
    summary = "produces invalid IR (test pass)"

    def run(self, module):
        i32 = next(v for o in module.walk() for v in o.results if v.type == "i32")
        add = next(o for o in module.walk() if o.name == "arith.addf")
        module.replace_all_uses(add.operands[0], i32, where=lambda o: o is add)
        return [self.remark("applied", "broke it")]


@dataclass
class CrashTriton(Pass):
    """Adds a dead `tt.expand_dims` whose axis is far past its operand's rank: Triton 3.6's
    parser writes out of bounds on it (docs/NOTES.md), at 8 bytes x axis past a 16-byte heap
    block: at the largest i32 axis, 16 GiB past it, beyond any test process's heap, so the parse
    dies with SIGSEGV at once whatever the heap holds (at axis 1048576, 8 MiB past it, a test
    worker's heap late in a full run is mapped there: the write corrupts it, and the child looped
    until the guard's timeout)."""

    name = "test-crash-triton"
    summary = "produces IR that crashes Triton's parser (test pass)"

    def run(self, module):
        rng = next(o for o in module.walk() if o.name == "tt.make_range")
        n = rng.result.type[len("tensor<"):].split("x")[0]
        new = module.build(f"tt.expand_dims $0 {{axis = 2147483647 : i32}} : {rng.result.type} -> "
                           f"tensor<{n}x1xi32>", rng.result, types=[f"tensor<{n}x1xi32>"])
        module.insert(new, after=rng)
        return [self.remark("applied", "added tt.expand_dims {axis = 2147483647}")]


@dataclass
class Raise(Pass):
    """Fails with a Python exception, as a pass with a bug would."""

    name = "test-raise"
    summary = "raises KeyError (test pass)"

    def run(self, module):
        return {}["no such key"]
