mkdir -p $OUT/train $OUT/fwdgrid
timeout 290 python3 -m normfuse.repro.bench_training --part bench --no-sweep --warm-procs 12 --warm-timeout 150 --budget 270 --rounds 5 --out $OUT/train > $OUT/train.log 2>&1; echo rc=$?
tail -4 $OUT/train.log
timeout 200 python3 -m normfuse.repro.bench_attention --no-tests --budget 185 --default-only --out $OUT/fwdgrid > $OUT/fwd.log 2>&1; echo rc=$?
tail -4 $OUT/fwd.log
