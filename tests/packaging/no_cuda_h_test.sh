#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Configures the project where no cuda.h can be found (every include search
# re-rooted under an empty folder): configure must fail, saying that cuda.h
# of a CUDA toolkit is needed and how to install it.
#   no_cuda_h_test.sh SOURCE_DIR WORKDIR GENERATOR
set -u
src=$1 work=$2 gen=$3
rm -rf "$work" && mkdir -p "$work/empty"
if cmake -S "$src" -B "$work/build" -G "$gen" -DUFILE_BUILD_TESTS=OFF \
    -DCMAKE_FIND_ROOT_PATH="$work/empty" -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY \
    >"$work/configure.log" 2>&1; then
  echo "FAILED: configure succeeded without cuda.h"; exit 1
fi
cat "$work/configure.log"
out=$(tr -s ' \n' '  ' <"$work/configure.log")
for want in "cuda.h not found" "needs the header cuda.h of a CUDA toolkit" \
    "also on a machine without a GPU" "apt-get install cuda-toolkit-13-0" \
    "-DCUDAToolkit_ROOT=DIR"; do
  case $out in
    *"$want"*) ;;
    *) echo "FAILED: configure's error does not say: $want"; exit 1 ;;
  esac
done
echo "configure without cuda.h fails and says what is needed and how to get it"
