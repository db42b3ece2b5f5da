#!/bin/bash
set -x
F=/tmp/zc.dat
dd if=/dev/urandom of=$F bs=16M count=256 status=none
cat $F > /dev/null; cat $F > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 16 64 256; do build-exp/zero_copy_pieces $F $r $(( 4096 / r * 2 )); done 2>&1 | tee $OUT/zc.log
