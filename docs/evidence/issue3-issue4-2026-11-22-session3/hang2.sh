#!/bin/bash
# Which mitigation keeps the two-stream pipeline from hanging?
set -u
B=build-dev/tools/ufile-bench/ufile-bench
mkdir -p /tmp/q
try() {  # try NAME ENV...
  local name=$1; shift
  for i in 1 2; do
    env "$@" stdbuf -oL $B -d 0 -x pipeline -f /tmp/q/in.dat -s 1G -i 16M -r 5 > $OUT/$name-$i.log 2>&1 &
    local pid=$! t
    for t in $(seq 1 70); do kill -0 $pid 2>/dev/null || break; sleep 1; done
    if kill -0 $pid 2>/dev/null; then
      kill -9 $pid; wait $pid 2>/dev/null
      echo "$name attempt $i: HUNG ($(grep -c 'verified' $OUT/$name-$i.log) runs done)"
    else
      wait $pid; echo "$name attempt $i: exit $? $(grep -E '^pipeline, [^,]*: ' $OUT/$name-$i.log | sed 's/(target.*//' | tr '\n' ' ')"
    fi
  done
}
try default X=1
try conn32 CUDA_DEVICE_MAX_CONNECTIONS=32
try prio UFILE_X_LANE_PRIO=1
