#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: check_exports.sh NM READELF API_LIST LIBRARY SONAME [UFILE_HEADERS...]
# The library must export exactly the functions in API_LIST (list_api.sh's
# "function" lines: those that include/cufile.h declares) plus the ufile_*
# functions that UFILE_HEADERS declare with CUFILE_API (none given: no ufile_*
# at all, as for the drop-in), nothing else; carry SONAME; and depend on
# neither libcuda (loaded at run time) nor liburing (linked statically).
set -u
export LC_ALL=C # one sort order wherever the lists were made
nm=$1 readelf=$2 api=$3 lib=$4 soname=$5
shift 5
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
funcs=${TMPDIR:-/tmp}/ufile_exports.$$
trap 'rm -f "$funcs"' EXIT
sed -n 's/^function //p' "$api" >"$funcs" 2>/dev/null
[ -s "$funcs" ] || { echo "FAIL: no functions listed in $api"; exit 1; }
ncufile=$(wc -l <"$funcs")
# The documented ufile_* entry points: declared CUFILE_API in ufile's headers.
[ $# -eq 0 ] || sed -n 's/^CUFILE_API[^(]*[ *]\(ufile_[a-z0-9_]*\)(.*/\1/p' "$@" >>"$funcs"
nufile=$(($(wc -l <"$funcs") - ncufile))
[ $# -eq 0 ] || [ "$nufile" -gt 0 ] || { echo "FAIL: no CUFILE_API ufile_* function in $*"; exit 1; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# name type, version suffixes (name@@VER) dropped.
defined=$("$nm" -D --defined-only --format=posix "$lib" | awk '{ sub(/@.*/, "", $1); print $1, $2 }')
extra=$(echo "$defined" | awk 'NR == FNR { want[$1] = 1; next }
  !($1 in want) { print "  " $1 " (" $2 ")" }' "$funcs" -)
[ -z "$extra" ] || bad "exported but neither in the cuFile API nor a documented ufile_* function:
$extra"
missing=$(echo "$defined" | awk 'NR == FNR { want[$1] = 1; next }
  $2 == "T" || $2 == "i" { got[$1] = 1 } END { for (f in want) if (!(f in got)) print "  " f }' "$funcs" - | sort)
[ -z "$missing" ] || bad "declared but not exported as a function:
$missing"

undefined=$("$nm" -D --undefined-only --format=posix "$lib" | awk '{ sub(/@.*/, "", $1); print $1 }')
leaked=$(echo "$undefined" | grep -E '^(io_uring_|__io_uring|cu[A-Z])' | sed 's/^/  /')
[ -z "$leaked" ] || bad "needs liburing or libcuda symbols at load time:
$leaked"

dyn=$("$readelf" -d "$lib")
got_soname=$(echo "$dyn" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$got_soname" = "$soname" ] || bad "SONAME is '$got_soname', want '$soname'"
needed=$(echo "$dyn" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case " $needed" in
  *" libcuda"* | *" liburing"*) bad "NEEDED has libcuda or liburing: $needed" ;;
esac

n=$(echo "$defined" | grep -c .)
[ "$fail" -eq 0 ] && echo "ok: $lib exports $n symbols ($ncufile cuFile functions," \
  "$nufile ufile_* functions), SONAME $got_soname, NEEDED: $needed"
exit "$fail"
