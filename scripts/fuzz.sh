#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libFuzzer smoke run (docs/FUZZING.md). Builds the fuzzers of tests/fuzz/ with
# clang in build-fuzz/, replays each one's regression inputs, then fuzzes it
# for a bounded time from its committed corpus.
#   scripts/fuzz.sh                every fuzzer
#   scripts/fuzz.sh NAME..         some of them (config_fuzzer, api_fuzzer)
#   scripts/fuzz.sh --merge [NAME] also keep, of the new inputs, one per new
#                                  coverage edge in tests/fuzz/corpus/<short
#                                  name>/merged/ (else they stay in
#                                  build-fuzz/fuzz-new/<name>/ only)
# UFILE_FUZZ_SECONDS: fuzzing time per fuzzer (default 60).
# Prints, per fuzzer, the executions and "no crash" or the failing input;
# exits 1 if any fuzzer failed, 2 on a usage or build error.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${UFILE_FUZZ_SECONDS:-60}"
build=build-fuzz
merge=0
names=()
for arg in "$@"; do
  case "$arg" in
    --merge) merge=1 ;;
    -h|--help) sed -n '3,14p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $arg" >&2; exit 2 ;;
    *) names+=("$arg") ;;
  esac
done
[ "${#names[@]}" -gt 0 ] || names=(config_fuzzer api_fuzzer)
if ! command -v clang++ > /dev/null; then
  echo "fuzz.sh: clang++ not found (Debian: clang, libclang-rt-14-dev)" >&2
  exit 2
fi

mkdir -p "$build"
if ! CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DUFILE_FUZZ=ON \
    > "$build/fuzz-configure.log" 2>&1; then
  cat "$build/fuzz-configure.log" >&2
  exit 2
fi
cmake --build "$build" -j "$(nproc)" --target "${names[@]}" || exit 2

# A leak, an ASan or UBSan report, or a failed model check (abort) is a crash.
export ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 ${UBSAN_OPTIONS:-}"
export UFILE_FUZZ_TMPDIR="$PWD/$build/fuzz-tmp"  # the test file and logs, per process
rm -rf "$UFILE_FUZZ_TMPDIR"
failed=0

run_one() {
  local name=$1 short=${1%_fuzzer}
  local bin="$build/tests/fuzz/$name" corpus="tests/fuzz/corpus/$short"
  local new="$build/fuzz-new/$name" crashes="$build/fuzz-crashes/$name"
  local log="$build/fuzz-$name.log"
  rm -rf "$new" "$crashes"
  mkdir -p "$new" "$crashes" "$corpus" "$UFILE_FUZZ_TMPDIR"
  local regress=(tests/fuzz/regress/"$short"/*)
  if [ -e "${regress[0]}" ]; then
    if ! "$bin" "${regress[@]}" > "$log" 2>&1; then
      echo "$name: FAILED on a regression input of tests/fuzz/regress/$short/"
      grep -E "fuzz check failed|ERROR: |SUMMARY|Running: " "$log" | tail -n 8
      return 1
    fi
    echo "$name: ${#regress[@]} regression inputs pass"
  fi
  local dict=() rc=0
  [ -f "tests/fuzz/$short.dict" ] && dict=("-dict=tests/fuzz/$short.dict")
  "$bin" "$new" "$corpus" "${dict[@]}" -max_total_time="$seconds" -timeout=30 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$crashes/" > "$log" 2>&1 || rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  local input
  input=$(find "$crashes" -type f | head -n 1)
  if [ "$rc" -ne 0 ] || [ -n "$input" ]; then
    echo "$name: CRASH after ${execs:-?} executions (exit $rc); log: $log"
    grep -E "fuzz check failed|ERROR: |SUMMARY" "$log" | head -n 6
    echo "$name: failing input: ${input:-none saved}"
    [ -n "$input" ] && echo "$name: reproduce: $bin $input  (UFILE_FUZZ_TRACE=1 traces api_fuzzer)"
    return 1
  fi
  echo "$name: ${execs:-?} executions in $seconds s, no crash ($(ls "$new" | wc -l) new inputs in $new)"
  if [ "$merge" -eq 1 ]; then
    # Edges only (no hit counts, no comparison operands): a few hundred small
    # files cover what tens of thousands of features would.
    mkdir -p "$corpus/merged"
    local before
    before=$(ls "$corpus/merged" | wc -l)
    "$bin" -merge=1 -use_counters=0 -use_value_profile=0 "$corpus/merged" "$new" \
      > "$build/fuzz-$name-merge.log" 2>&1
    echo "$name: merged: $before -> $(ls "$corpus/merged" | wc -l) inputs in $corpus/merged"
  fi
}

for name in "${names[@]}"; do
  if [ ! -x "$build/tests/fuzz/$name" ]; then
    echo "fuzz.sh: no fuzzer $name (clang needed; see tests/fuzz/CMakeLists.txt)" >&2
    exit 2
  fi
  run_one "$name" || failed=1
done
exit "$failed"
