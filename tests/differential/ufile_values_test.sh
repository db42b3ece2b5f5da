#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: ufile_values_test.sh PROBE UFILE_LIB KNOWN_DIFFERENCES OUT_DIR
# Runs PROBE against ufile alone (no NVIDIA library or GPU needed: cases
# that find no GPU are left out) and checks that every entry of
# KNOWN_DIFFERENCES gives the value ufile really gives (compare.py
# --check-ufile), so the list follows ufile between runs on the GPU machine.
set -u
probe=$1 ours=$2 known=$3 out=$4
mkdir -p "$out" && rm -f "$out"/ufile.*
( cd "$out" && CUFILE_LOGFILE_PATH=$out/cufile.log "$probe" "$ours" >ufile.txt 2>ufile.stderr )
python3 "$(dirname "$0")/compare.py" --check-ufile "$out/ufile.txt" "$known"
