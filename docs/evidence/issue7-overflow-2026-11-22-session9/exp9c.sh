#!/usr/bin/env bash
# Session 9, call 3: the poller no longer sleeps holding the reaper lock.
# A/B: *.old binaries are the same tree without that change (76c8066 + bench knobs).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
OLD=build-dev/ufile-bench.old
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
echo "=== new test, full devio suite"
timeout 200 build-dev/tests/gpu_devio_gpu_test --gtest_brief=1 2>&1 | tail -5
for bin in old new; do
  T=build-dev/tests/gpu_devio_gpu_test; [ $bin = old ] && T=build-dev/gpu_devio_gpu_test.old
  echo "=== $bin: PollBackOff x4"
  timeout 120 $T --gtest_filter='*PollBackOff*' --gtest_repeat=4 --gtest_brief=1 2>&1 | grep -E "Failure|failure|FAILED|PASSED|Which is|ms total" | head -40
done
[ -f $F ] || $B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
cat $F > /dev/null
date -u
iops() {
  echo "=== $1 iops $2"
  timeout 60 $1 -f $F -s 4G -q -T 2 -r 1 -x device -I randread -i 4k --devio "$2,timeout=3000,paths=nocpu" 2>&1 | grep -E "dev-"
}
for i in 1 2 3 4; do
  for p in 100 500 2000; do
    iops $OLD queues=16,sqthreads=12,groups=64,poll=$p
    iops $B queues=16,sqthreads=12,groups=64,poll=$p
  done
done
date -u
chase() {
  echo "=== chase $1"
  timeout 120 $B -f $F -s 4G -q -T 2 -r 1 -x device-chase --devio "$1,paths=nocpu" 2>&1 | grep -E "^(host \(pread|device)"
}
for i in 1 2 3; do
  for poll in 0 500 1000; do chase walkers=256,steps=4000,sqthreads=12,poll=$poll; done
done
date -u
