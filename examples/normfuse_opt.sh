#!/usr/bin/env bash
# normfuse-opt, the pass driver, on the lit tests' inputs (Triton 3.6 TTIR as Triton prints it):
# the IR comes out on stdout, one remark per pass and kernel on stderr.
#
#   bash examples/normfuse_opt.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OPT=tools/normfuse-opt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
loops() { grep -v '^ *//' "$1" | grep -c 'scf.for ' || true; }

echo "== 1. lazy-prenorm on the naive RMSNorm + GEMM kernel (the first case of test/lit/lazy-prenorm.mlir)"
awk '/^\/\/ -----/ {exit} {print}' test/lit/lazy-prenorm.mlir > "$tmp/naive.mlir"
"$OPT" --lazy-prenorm "$tmp/naive.mlir" > "$tmp/fused.mlir" 2> "$tmp/remarks.txt"
sed "s/^[^ ]*: remark: //" "$tmp/remarks.txt" | cut -c1-150
echo "scf.for loops: $(loops "$tmp/naive.mlir") before, $(loops "$tmp/fused.mlir") after"

echo
echo "== 2. hopper-ws over every case of test/lit/hopper-ws.mlir (// ----- separates the kernels)"
"$OPT" --split-input-file --hopper-ws test/lit/hopper-ws.mlir > "$tmp/ws.mlir" 2> "$tmp/ws.txt"
sed 's/^[^ ]*: remark: //' "$tmp/ws.txt" | cut -c1-150
echo "warp-specialized kernels in the output: $(grep -c 'ttg.warp_specialize' "$tmp/ws.mlir" || true)"

echo
echo "== 3. the passes and their options"
"$OPT" --list-passes | grep -v '^ *options' | cut -c1-110
