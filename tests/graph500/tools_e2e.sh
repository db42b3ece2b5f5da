#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# graph500-gen then graph500-bfs on a scale-12 graph, each under a deadline:
# every mode's 16 trees valid; usage errors exit 2, -h/--help 0; a damaged file, or a
# path that is not a regular file, exits 1 with a reason.
#   tools_e2e.sh GEN BFS TMPDIR
set -u
gen=$1 bfs=$2
dir=$(mktemp -d "$3/g500.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# A field of a mode's block in $out: field MODE NAME.
field() { echo "$out" | awk -v m="$1" -v k="$2:" '$1 == "mode:" {c = $2} c == m && $1 == k {print $2}'; }

timeout 60 "$gen" -s 12 -o "$dir/g.g500" -t 2 || fail "graph500-gen exit $?"
out=$(timeout 120 "$bfs" -f "$dir/g.g500" -m host,host-do,file -n 16 -t 2 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "graph500-bfs exit $rc"
[ "$(echo "$out" | grep -c "^validation: *passed (16 of 16 trees")" -eq 3 ] || fail "not 3 validated modes"
[ "$(echo "$out" | grep -c '^NBFS: *16$')" -eq 3 ] || fail "not 16 searches a mode"
[ "$(field file bytes_read)" -gt 0 ] 2>/dev/null || fail "file mode read nothing"
out=$(timeout 120 "$bfs" -f "$dir/g.g500" -m file,host -n 4 -t 2 --cold --validate 2 2>&1) ||
  fail "--cold run: $out"
echo "$out" | grep -q '^mode: *file (cold page cache)' || fail "--cold not reported"
[ "$(echo "$out" | grep -c "^validation: *passed (2 of 4 trees")" -eq 2 ] || fail "--validate 2"
# The validator's memory: by default every tree in one pass; 500 KiB holds 16
# trees at scale 12 (104 bytes a vertex; 32 take 200), so 4 passes for 64.
out=$(timeout 120 "$bfs" -f "$dir/g.g500" -m host-do -n 64 -t 2 2>&1) || fail "64 roots: $out"
echo "$out" | grep -q 'passes: 1 of up to 64 trees' || fail "64 trees not in one pass: $out"
out=$(timeout 120 "$bfs" -f "$dir/g.g500" -m host-do -n 64 -t 2 --validate-memory 500k 2>&1) ||
  fail "--validate-memory 500k: $out"
echo "$out" | grep -q 'passed (64 of 64 trees.*passes: 4 of up to 16 trees' ||
  fail "--validate-memory 500k did not give 4 passes of 16: $out"

timeout 10 "$gen" -s 0 -o "$dir/x" >/dev/null 2>&1; [ $? -eq 2 ] || fail "-s 0 not a usage error"
for t in "$gen" "$bfs"; do
  for h in -h --help; do
    timeout 10 "$t" $h 2>/dev/null | grep -q '^usage: ' || fail "$t $h: no usage on stdout"
    timeout 10 "$t" $h >/dev/null 2>&1 || fail "$t $h: exit $?"
  done
done
for bad in "-m nope" "-m host,,file" "--gpu-memory-limit 12x" "--gpu-memory-limit 0" "--hostio-buffer 1k" \
    "--validate-memory 0" "--validate-memory 5Q"; do
  timeout 10 "$bfs" -f "$dir/g.g500" $bad >/dev/null 2>&1; [ $? -eq 2 ] || fail "$bad not a usage error"
done
head -c 10000 "$dir/g.g500" > "$dir/short.g500"
msg=$(timeout 10 "$bfs" -f "$dir/short.g500" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "truncated file: exit $rc"
echo "$msg" | grep -q 'not a graph file' || fail "truncated file: $msg"
# A FIFO (opening one waits for the other end) or a directory is refused at
# once, and left where it was.
mkfifo "$dir/fifo"
mkdir "$dir/sub"
for t in "$bfs -f $dir/fifo" "$gen -s 10 -o $dir/fifo" "$gen -s 10 -o $dir/sub"; do
  msg=$(timeout 10 $t 2>&1); rc=$?
  [ $rc -eq 1 ] || fail "$t: exit $rc"
  echo "$msg" | grep -q ': not a regular file' || fail "$t: $msg"
done
[ -p "$dir/fifo" ] && [ -d "$dir/sub" ] || fail "graph500-gen removed a path it did not write"
echo "PASS"
