#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The --compare tables of docs/BENCHMARKS.md, in the order and with the exact
# options recorded there. Run on the GPU machine (16 cores, 128 GiB RAM,
# 64 GB disk) from the repository root, after building ufile-bench:
#   bench/run_compare.sh [BUILD_DIR]          (default: build)
# bench/results/ holds the JSON lines of the run docs/BENCHMARKS.md shows.
# About 7.5 minutes of wall time in all (each table's time is logged).
# Writes under $OUT (default build-bench-out/): per table NAME.txt (the
# table), NAME.jsonl (one JSON object per row), NAME.err; commands.txt (each
# exact command with its exit status and seconds) and machine.txt. PACK=1
# keeps only $OUT/tables.tgz, rewritten after every table, so a run cut
# short still returns the tables it finished in one file.
# Test files (2 x 4 GiB) go in $UFILE_BENCH_DIR: default /tmp/ufile-bench, or
# build-bench-data/ in the repository when /tmp is a tmpfs (no O_DIRECT, and
# RAM). They are removed at the end unless KEEP=1.
set -uo pipefail

BUILD=${1:-build}
BENCH=${BENCH:-$BUILD/tools/ufile-bench/ufile-bench}
OUT=${OUT:-$PWD/build-bench-out}
PACKED=$OUT
if [ "${PACK:-0}" = 1 ]; then
  OUT=$(mktemp -d)
fi
if [ -z "${UFILE_BENCH_DIR:-}" ]; then
  if [ "$(findmnt -n -o FSTYPE -T /tmp 2>/dev/null)" = tmpfs ]; then
    UFILE_BENCH_DIR=$PWD/build-bench-data
  else
    UFILE_BENCH_DIR=/tmp/ufile-bench
  fi
fi
READ=$UFILE_BENCH_DIR/read-4g.dat
WRITE=$UFILE_BENCH_DIR/write-4g.dat
GPU=${GPU:-0}

if [ ! -x "$BENCH" ]; then
  echo "run_compare.sh: no $BENCH (cmake --build $BUILD --target ufile-bench)" >&2
  exit 2
fi
mkdir -p "$OUT" "$UFILE_BENCH_DIR"
: > "$OUT/commands.txt"

machine() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "source: $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "kernel: $(uname -r); cores: $(nproc)"
  free -g | sed -n 2p | awk '{print "memory: " $2 " GiB"}'
  nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current \
    --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  echo "data: $UFILE_BENCH_DIR on $(findmnt -n -o SOURCE,FSTYPE -T "$UFILE_BENCH_DIR" 2>/dev/null)"
  df -h "$UFILE_BENCH_DIR" | sed -n 2p | awk '{print "disk free: " $4}'
  find /usr/local/cuda/lib64/ -maxdepth 1 -name "libcufile.so.0*" -printf "nvidia: %p -> %l\n" 2>/dev/null
}
machine > "$OUT/machine.txt"
cat "$OUT/machine.txt"

# table NAME LIMIT_SECONDS ufile-bench-args...
table() {
  local name=$1 limit=$2
  shift 2
  echo "== $name: ufile-bench $*" | tee -a "$OUT/commands.txt"
  local start=$SECONDS
  timeout "$limit" "$BENCH" -q -d "$GPU" --json-file "$OUT/$name.jsonl" "$@" \
    > "$OUT/$name.txt" 2> "$OUT/$name.err"
  local rc=$?
  echo "   exit $rc, $((SECONDS - start)) s" | tee -a "$OUT/commands.txt"
  cat "$OUT/$name.txt"
  pack
}

# PACK=1: everything so far in one $PACKED/tables.tgz (the GPU machine's
# tool returns at most 8 files of a call).
pack() {
  if [ "${PACK:-0}" = 1 ]; then
    tar -C "$OUT" -czf "$PACKED/tables.tgz.new" . && mv "$PACKED/tables.tgz.new" "$PACKED/tables.tgz"
  fi
}

# Page-cache-hot tables read the file through the cache first.
warm() { cat "$1" > /dev/null; }

T0=$SECONDS
# 1. Hot sequential read, 4 GiB, requests 16 MiB .. 1 GiB (the first run
#    creates the file with the pattern; -V: each row's data is checked).
table hot-read 150 -f "$READ" -s 4G -I read -i 16M:1G:x4 -T 1 -r 3 -V --compare
# 2. 4 KiB random reads, hot: p50 at one thread, IOPS at 16.
warm "$READ"
table randread-1t 60 -f "$READ" -s 4G -I randread -i 4k -w 1 -T 1.5 -r 3 -V \
  --verify-bytes 64M --compare
table randread-16t 60 -f "$READ" -s 4G -I randread -i 4k -w 16 -T 1.5 -r 3 -V \
  --verify-bytes 64M --compare
# 3. Cold sequential read with O_DIRECT (the cache is dropped before each run).
table cold-read 150 -f "$READ" -s 4G -I read -i 16M:64M:x4 -T 1.5 -r 3 -V --cold --odirect \
  --compare
# 4. Sequential write of 4 GiB from GPU memory: buffered, then O_DIRECT.
table write-buffered 100 -f "$WRITE" -s 4G -I write -i 16M:1G:x64 -T 1 -r 3 -V --compare
table write-odirect 130 -f "$WRITE" -s 4G -I write -i 16M:1G:x64 -T 1.5 -r 3 -V --odirect \
  --compare
echo "== all tables: $((SECONDS - T0)) s" | tee -a "$OUT/commands.txt"

echo
echo "== ufile against the targets"
grep -H -e '^compare:' -e '^target (ufile' -e '^ufile / naive' "$OUT"/*.txt
if [ "${KEEP:-0}" != 1 ]; then
  rm -f "$READ" "$READ.ufile-bench" "$WRITE" "$WRITE.ufile-bench"
fi
pack
if [ "${PACK:-0}" = 1 ]; then
  rm -rf "${OUT:?}"
fi
