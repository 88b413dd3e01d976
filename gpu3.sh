export PYTHONPATH=python
for n in rms ln; do timeout 230 python3 bench/bench_postnorm.py --norm $n --out $OUT/post > $OUT/post_$n.log 2>&1; tail -3 $OUT/post_$n.log; done
timeout 80 python3 bench/bench_postnorm.py --cluster-sweep --persistent on --no-compile --out $OUT/post_sweep > $OUT/sweep.log 2>&1; tail -8 $OUT/sweep.log
cat $OUT/post/*.md
