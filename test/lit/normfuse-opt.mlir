// The normfuse-opt driver with no pass: Triton parses, verifies and prints the input; the
// driver's own options and error paths. Pass tests live in test/lit/<pass-flag>.mlir.

// RUN: normfuse-opt %s | FileCheck %s
// RUN: normfuse-opt --pass-pipeline= %s | FileCheck %s
// RUN: normfuse-opt --no-remarks - < %s | FileCheck %s
// RUN: normfuse-opt %s -o %t && FileCheck %s --input-file=%t
// RUN: normfuse-opt --split-input-file %s | FileCheck %s --check-prefix=SPLIT

// RUN: normfuse-opt --list-passes | FileCheck %s --check-prefix=LIST
// RUN: normfuse-opt --help | FileCheck %s --check-prefix=HELP

// RUN: not normfuse-opt --pass-pipeline=no-such-pass %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not normfuse-opt %s.does-not-exist 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo 'this is not IR' | not normfuse-opt - 2>&1 | FileCheck %s --check-prefix=GARBAGE
// RUN: echo 'tt.func @f() -> f32 { tt.return }' | not normfuse-opt 2>&1 | FileCheck %s --check-prefix=INVALID

// Without --split-input-file the whole file is one (implicit) module.
// CHECK: module {
// CHECK-LABEL: tt.func public @add_loop(
// CHECK-SAME: %[[X:arg[0-9]+]]: !tt.ptr<f32>
// CHECK-SAME: %[[Y:arg[0-9]+]]: !tt.ptr<f32>
// CHECK-SAME: %[[N:arg[0-9]+]]: i32
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<64xf32>
// CHECK: %[[RANGE:.+]] = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
// CHECK: %[[BASE:.+]] = tt.splat %[[X]] : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
// CHECK: %[[PTRS:.+]] = tt.addptr %[[BASE]], %[[RANGE]]
// CHECK: %[[SUM:.+]] = scf.for %{{.+}} = %[[C0]] to %[[N]] step %[[C1]] iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (tensor<64xf32>)
// CHECK: %[[V:.+]] = tt.load %[[PTRS]] : tensor<64x!tt.ptr<f32>>
// CHECK: %[[SQ:.+]] = arith.mulf %[[V]], %[[V]] : tensor<64xf32>
// CHECK: %[[NEXT:.+]] = arith.addf %[[ACC]], %[[SQ]] : tensor<64xf32>
// CHECK: scf.yield %[[NEXT]] : tensor<64xf32>
// CHECK: tt.splat %[[Y]]
// CHECK: tt.store %{{.+}}, %[[SUM]] : tensor<64x!tt.ptr<f32>>
// CHECK: tt.return
// CHECK-LABEL: tt.func @row_sum(
// CHECK: "tt.reduce"(%{{.+}}) <{axis = 1 : i32}>
// CHECK: arith.addf
// CHECK: tt.reduce.return
// CHECK: (tensor<16x64xf32>) -> tensor<16xf32>

// With it, one module per chunk, joined by the separator.
// SPLIT: module {
// SPLIT-LABEL: tt.func public @add_loop(
// SPLIT: scf.for
// SPLIT: // -----
// SPLIT: module {
// SPLIT-LABEL: tt.func @row_sum(
// SPLIT: "tt.reduce"

// LIST-NOT: error
// LIST: {{^}}  {{[a-z0-9-]+}}  {{.+}}

// HELP: usage: normfuse-opt
// HELP: --pass-pipeline SPEC
// HELP: --list-passes
// HELP: -o OUT
// HELP: examples:

// UNKNOWN: normfuse-opt: error: --pass-pipeline: unknown pass 'no-such-pass' (known passes:
// MISSING: normfuse-opt: error: cannot read input file '{{.*}}normfuse-opt.mlir.does-not-exist': No such file or directory
// GARBAGE: normfuse-opt: error: <stdin> cannot be loaded as Triton IR:
// GARBAGE-NEXT: loc("<stdin>":1:1): error: custom op 'this' is unknown
// INVALID: normfuse-opt: error: <stdin> cannot be loaded as Triton IR:
// INVALID-NEXT: error: {{.*}}return{{.*}}

tt.func public @add_loop(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %range = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %base = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %ptrs = tt.addptr %base, %range : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<64xf32>) : i32 {
    %v = tt.load %ptrs : tensor<64x!tt.ptr<f32>>
    %sq = arith.mulf %v, %v : tensor<64xf32>
    %next = arith.addf %acc, %sq : tensor<64xf32>
    scf.yield %next : tensor<64xf32>
  }
  %out = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %optrs = tt.addptr %out, %range : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %optrs, %sum : tensor<64x!tt.ptr<f32>>
  tt.return
}

// -----

tt.func @row_sum(%x: tensor<16x64xf32>) -> tensor<16xf32> {
  %s = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<16x64xf32>) -> tensor<16xf32>
  tt.return %s : tensor<16xf32>
}
