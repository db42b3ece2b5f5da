#!/bin/bash
# Reproduce the pipeline hang and dump every thread's stack.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
mkdir -p /tmp/q
LD_PRELOAD=$PWD/build-dev/dbg/stackdump.so stdbuf -oL $B -d 0 -x pipeline -f /tmp/q/in.dat -s 1G -i 16M -r 5 > $OUT/run.log 2> $OUT/stacks.txt &
pid=$!
for t in $(seq 1 100); do kill -0 $pid 2>/dev/null || break; sleep 1; done
if kill -0 $pid 2>/dev/null; then
  echo "HUNG"; tail -3 $OUT/run.log
  for task in /proc/$pid/task/*; do
    tid=$(basename $task)
    echo "-- $tid $(cat $task/comm) $(grep State $task/status)" >> $OUT/tasks.txt
    python3 -c "import ctypes,sys; ctypes.CDLL(None).syscall(234, $pid, $tid, 10)"
    sleep 0.2
  done
  sleep 1
  kill -9 $pid
else
  echo "no hang"; tail -3 $OUT/run.log
fi
