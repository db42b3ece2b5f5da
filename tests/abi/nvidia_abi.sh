#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The ABI facts of NVIDIA's cufile.h, for the gpu-labelled tests.
#   nvidia_abi.sh gen OUT HEADER   compile abi_dump.c/abi_types.cpp against HEADER,
#                                  write OUT/{abi.txt,api.txt,status,...}; exit 0
#   nvidia_abi.sh resolve WORK     print the folder whose facts to compare with;
#                                  exit 77 with the reason when there is none
# resolve prefers NVIDIA's header installed here ($UFILE_NVIDIA_CUDA_HOME or the
# configured default, then include/cufile.h). When the facts prebuilt at build time
# come from a byte-identical copy, they are used as they are: no compiler needed.
# Environment (set by CTest): UFILE_ABI_SRC, UFILE_ABI_CC, UFILE_ABI_CXX,
# UFILE_ABI_CUDA_INC, UFILE_ABI_PREBUILT, UFILE_ABI_NVIDIA_HOME_DEFAULT.
set -u
export LC_ALL=C # one sort order wherever the lists were made

find_tool() { # first runnable of the arguments
  for t in "$@"; do
    [ -n "$t" ] && command -v "$t" >/dev/null 2>&1 && { command -v "$t"; return 0; }
  done
  return 1
}

sha() { sha256sum <"$1" | cut -d' ' -f1; }

gen() { # OUT HEADER
  out=$1 header=$2
  mkdir -p "$out" && rm -f "$out"/abi.txt "$out"/api.txt "$out"/status "$out"/compile.log
  echo "$header" >"$out/source"
  sha "$header" >"$out/sha256"
  cc=$(find_tool "${UFILE_ABI_CC:-}" cc gcc clang) || { echo "no C compiler" >"$out/status"; return 0; }
  # -isystem: warnings in NVIDIA's header are not ours to fix.
  set -- -isystem "$(dirname "$header")" -isystem "$UFILE_ABI_CUDA_INC"
  status=ok
  if ! "$cc" -std=gnu11 "$@" "$UFILE_ABI_SRC/abi_dump.c" -o "$out/abi_dump" 2>>"$out/compile.log"; then
    status="abi_dump.c does not compile against $header (see compile.log)"
  elif ! "$out/abi_dump" >"$out/abi.txt"; then
    status="abi_dump failed"
  fi
  if cxx=$(find_tool "${UFILE_ABI_CXX:-}" c++ g++ clang++); then
    "$cxx" -std=c++17 -fsyntax-only "$@" "$UFILE_ABI_SRC/abi_types.cpp" 2>>"$out/compile.log" ||
      status="abi_types.cpp (exact C++ types) does not compile against $header (see compile.log)"
  else
    echo "note: no C++ compiler, exact C++ type check skipped" >>"$out/compile.log"
  fi
  sh "$UFILE_ABI_SRC/list_api.sh" "$cc" "$@" >"$out/api.txt" 2>>"$out/compile.log" ||
    status="could not list the names that $header declares"
  echo "$status" >"$out/status"
}

resolve() { # WORK
  work=$1
  home=${UFILE_NVIDIA_CUDA_HOME:-$UFILE_ABI_NVIDIA_HOME_DEFAULT}
  header=$home/include/cufile.h
  pre=$UFILE_ABI_PREBUILT
  if [ -f "$header" ]; then
    if [ -f "$pre/sha256" ] && [ "$(cat "$pre/sha256")" = "$(sha "$header")" ]; then
      echo "NVIDIA header: $header (identical to $(cat "$pre/source"), facts built at build time)" >&2
      echo "$pre"
      return 0
    fi
    if find_tool "${UFILE_ABI_CC:-}" cc gcc clang >/dev/null; then
      gen "$work" "$header"
      echo "NVIDIA header: $header (facts built now)" >&2
      echo "$work"
      return 0
    fi
    echo "skipped: $header exists but no C compiler is here to read it, and the build" \
      "had no identical copy (configure with -DUFILE_NVIDIA_CUFILE_H=<a copy of it>)" >&2
    return 77
  fi
  if [ -f "$pre/status" ]; then
    echo "NVIDIA header: not installed at $header; using the copy given at configure" \
      "time, $(cat "$pre/source")" >&2
    echo "$pre"
    return 0
  fi
  echo "skipped: NVIDIA's cufile.h is not at $header (set UFILE_NVIDIA_CUDA_HOME, or" \
    "configure with -DUFILE_NVIDIA_CUFILE_H=<path>)" >&2
  return 77
}

case ${1:-} in
  gen) gen "$2" "$3" ;;
  resolve) resolve "$2" ;;
  *) echo "usage: $0 gen OUT HEADER | resolve WORK" >&2; exit 2 ;;
esac
