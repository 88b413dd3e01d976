mkdir -p $OUT/logs_failed
timeout 570 python3 scripts/gpu_tests.py -j 10 --timeout 540 --log-dir /tmp/logs2 > $OUT/suite.txt 2>&1; echo rc=$?
tail -30 $OUT/suite.txt
cp /tmp/logs2/*.json $OUT/ 2>/dev/null
for f in /tmp/logs2/*; do grep -qE "FAILED|ERROR|Timeout" $f 2>/dev/null && cp $f $OUT/logs_failed/; done
ls /tmp/logs2 | head
