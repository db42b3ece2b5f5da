#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a lean Release tree in build-dev/ to carry to the GPU machine (the
# device tool carries at most 64 MiB): no debug info, object files and
# precompiled headers (86 MB each) removed once linked: about 100 MB, so it
# also writes build-dev.tgz (37 MB), which fits; carry that, and
# scripts/check-on-device.sh unpacks it there and runs the checks. CTest files
# keep absolute paths, which match there.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
ninja -C build-dev "$@"
find build-dev \( -name '*.o' -o -name '*.gch' \) -delete
# What tests run here left in the tree (data files, pip and packaging work
# areas, logs) stays out; the folders CMake made stay in, empty.
tar czf build-dev.tgz --exclude='build-dev/tests/tools_bench/data/*' \
  --exclude='build-dev/tests/packaging/work/*' --exclude='build-dev/tests/packaging/readme_command' \
  --exclude='build-dev/tests/python/pip' --exclude='build-dev/tests/tmp/*' \
  --exclude='build-dev/tests/*/tmp/*' --exclude=build-dev/Testing --exclude=build-dev/device-logs \
  build-dev
du -sh build-dev build-dev.tgz
