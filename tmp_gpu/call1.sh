set -x
nvidia-smi --query-gpu=name,memory.total --format=csv
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)"
mkdir -p $OUT/tests
timeout 150 python3 scripts/gpu_tests.py -j 8 --timeout 140 --log-dir /tmp/logs1 -k "rowdot or every_n_norm_backward or staging" test/python/test_backward_ops.py test/python/test_backward_kernels.py > $OUT/tests/rowdot_tests.txt 2>&1; echo rc=$?
tail -15 $OUT/tests/rowdot_tests.txt
timeout 380 python3 bench/dx_lowered.py --cells 262144x1024x1024,8192x2048x2048,8192x2048x5632 --norm both --variants backbone,rowdot+terms,rowdot,rowdot+epi-prefetch,rowdot+staging-late,rowdot+epi-prefetch+staging-late --out $OUT/dx > $OUT/dx.log 2>&1; echo rc=$?
tail -5 $OUT/dx.log
cat $OUT/dx/dx_lowered.md
