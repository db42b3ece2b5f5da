#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The multi-GPU loading benchmark of docs/BENCHMARKS.md, one command per machine:
#   bench/run_dist.sh BUILD_DIR DATA_DIR OUT.jsonl
# On every GPU of the machine (and on 2 of them where there are more): the
# Llama-3-8B-shaped checkpoint as replicas, hot (load_into and dcp.load rows
# too) and cold; the same split tensor parallel (load_into, and DTensors on a
# 2 x N/2 mesh); a larger tensor-parallel shape (TP_SIZE: 70b, or 30b where
# one run cannot write 141 GB) split over every GPU, hot. Writes the
# checkpoints into DATA_DIR when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "$1") data=$2 out=$3
export PYTHONPATH=$PWD/python UFILE_LIBRARY=$build/src/libufile.so.0
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
n=$(python3 -c 'import torch; print(torch.cuda.device_count())')
run() { python3 bench/loader/bench_dist.py --json "$out" "$@"; }
run --dir "$data/8b" --size full --ranks "$n" --mode replicas --cold
if [ "$n" -gt 2 ]; then run --dir "$data/8b" --size full --ranks 2 --mode replicas; fi
run --dir "$data/8b" --size full --ranks "$n" --mode tp --rows safetensors,collective,share,into,mesh
run --dir "$data/${TP_SIZE:-70b}" --size "${TP_SIZE:-70b}" --ranks "$n" --mode tp \
  --rows safetensors,ufile,collective,share
