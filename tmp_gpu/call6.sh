mkdir -p $OUT/dx
timeout 60 python3 scripts/gpu_tests.py -j 8 --timeout 55 --log-dir /tmp/l6 -k "rowdot" test/python/test_backward_ops.py test/python/test_backward_kernels.py > $OUT/rowdot_tests.txt 2>&1; echo rc=$?; tail -1 $OUT/rowdot_tests.txt
timeout 100 python3 bench/train_op_profile.py --kind rms --m 262144 --k 2048 --n 1024 --compiled --plans cublas,rowdot --no-cprofile --steps 10 > $OUT/train_op_profile.txt 2>&1; echo rc=$?
grep -v Warning $OUT/train_op_profile.txt | tail -70
timeout 75 python3 bench/dx_lowered.py --cells 262144x1024x1024,8192x2048x2048 --norm rms --variants rowdot,coop-s4,pingpong --out $OUT/dx > $OUT/dx.log 2>&1; echo rc=$?
grep "^|" $OUT/dx/dx_lowered.md; grep "^- .*= " $OUT/dx/dx_lowered.md | grep -v "{"
