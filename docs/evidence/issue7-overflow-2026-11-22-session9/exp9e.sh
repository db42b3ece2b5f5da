#!/usr/bin/env bash
# Session 9, call 5: waits that time out with a poll back-off: the kernel had
# put completions in its CQ overflow list (IORING_SQ_CQ_OVERFLOW). A/B:
#   Y  = the helper flushes a ring showing the flag (io_uring_enter GETEVENTS)
#   X  = Y + a system-scope fence after the GPU stores the CQ head
#   UFILE_DEVIO_NO_FLUSH=1 switches the helper's flush off.
set -u
X=build-dev/tools/ufile-bench/ufile-bench
Y=build-dev/ufile-bench.Y
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
[ -f $F ] || $X -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
cat $F > /dev/null
iops() {  # label env binary poll
  echo "=== $1 poll=$4"
  env $2 timeout 60 $3 -f $F -s 4G -q -T 2 -r 1 -x device -I randread -i 4k --devio "queues=16,sqthreads=12,groups=64,poll=$4,timeout=3000,paths=nocpu" 2>&1 | grep -E "dev-"
}
for i in 1 2 3 4; do
  iops "Y noflush" UFILE_DEVIO_NO_FLUSH=1 $Y 500
  iops "Y flush" X=1 $Y 500
  iops "X noflush" UFILE_DEVIO_NO_FLUSH=1 $X 500
  iops "X flush" X=1 $X 500
done
iops "X flush" X=1 $X 0
iops "Y flush" X=1 $Y 0
date -u
echo "=== X test: PollBackOff x3, then the devio suite"
timeout 100 build-dev/tests/gpu_devio_gpu_test --gtest_filter='*PollBackOff*' --gtest_repeat=3 --gtest_brief=1 2>&1 | grep -E "Failure|FAILED|PASSED|Which is|first failure|ms total" | head -30
timeout 200 build-dev/tests/gpu_devio_gpu_test --gtest_brief=1 2>&1 | tail -4
date -u
