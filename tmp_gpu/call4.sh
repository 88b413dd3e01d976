mkdir -p $OUT/train2 $OUT/kvq
timeout 200 python3 -m normfuse.repro.bench_training --part bench --no-sweep --warm-procs 12 --warm-timeout 120 --budget 185 --rounds 5 --cells 262144x2048x1024,262144x2048x2048 --out $OUT/train2 > $OUT/train2.log 2>&1; echo rc=$?
grep -c fwd_bwd_ours $OUT/train2.log
timeout 270 python3 -m normfuse.repro.bench_attention_bwd --quick --no-tests --core-only --budget 260 --cells 2:1000:gelu_tanh --kvq-tiles 16:8:2,16:8:3,32:8:2,32:8:3:t,64:8:2,32:4:3,16:4:2,64:8:3:t --out $OUT/kvq > $OUT/kvq.log 2>&1; echo rc=$?
tail -30 $OUT/kvq.log
