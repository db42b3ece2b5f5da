#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pip installs python/ into a fresh virtual environment offline (Debian's pip and
# setuptools, no index, no build isolation) with the library copied in, and the
# installed package loads it and reads a file; the drop-in comes with it and
# the ufile-dropin command runs; a second install from the same folder without
# UFILE_LIBRARY bundles no library left in build/ by the first; without the
# wheel package, where setuptools needs it, setup.py says so. Without venv
# or pip it fails: CI installs python3-venv and python3-pip
# (scripts/debian-packages.txt).
#   pip_install_test.sh PYTHON SOURCE_DIR LIBRARY WORKDIR
set -euo pipefail
py=$1 src=$2 lib=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
if ! "$py" -m venv --system-site-packages "$work/venv" >"$work/venv.log" 2>&1; then
  echo "FAILED: $py -m venv failed (python3-venv missing?): $(tail -1 "$work/venv.log")"; exit 1
fi
if ! "$work/venv/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "FAILED: no pip in the virtual environment (python3-pip missing?)"; exit 1
fi
cp -r "$src/python" "$work/pkg"  # a copy: pip writes build/ and *.egg-info beside the sources
UFILE_LIBRARY="$lib" "$work/venv/bin/pip" install --no-index --no-build-isolation \
  --no-cache-dir -q "$work/pkg"
cd "$work"
env -u UFILE_LIBRARY -u PYTHONPATH "$work/venv/bin/python" - <<'PY'
import os, ufile
loaded = ufile.library_path()
here = os.path.dirname(ufile.__file__)
assert loaded.startswith(os.path.realpath(here)) or loaded.startswith(here), loaded
with ufile.File("probe.bin", "w") as f:
    f.write_from(b"ufile" * 1000)
buf = bytearray(5000)
with ufile.File("probe.bin") as f:
    assert f.read_into(buf) == 5000 and bytes(buf) == b"ufile" * 1000
import ufile.safetensors
print("pip-installed ufile", ufile.__version__, "loads", loaded)
PY
# The drop-in beside the library is bundled too, and the console command finds it.
test -f "$(dirname "$("$work/venv/bin/python" -c 'import ufile; print(ufile.__file__)')")/libcufile.so.0"
"$work/venv/bin/ufile-dropin" status --import json | tee "$work/dropin-status.txt"
grep -q "^ufile's drop-in: .*/ufile/libcufile.so.0" "$work/dropin-status.txt"
# A second install from the same folder without UFILE_LIBRARY bundles no
# library, though the first one's build/ is still there.
test -f "$work/pkg/build/lib/ufile/libufile.so.0" ||
  { echo "FAILED: the first install left no build/lib/ufile/libufile.so.0 to test with"; exit 1; }
"$py" -m venv --system-site-packages "$work/venv2"
env -u UFILE_LIBRARY -u UFILE_DROPIN "$work/venv2/bin/pip" install --no-index \
  --no-build-isolation --no-cache-dir -q "$work/pkg"
pkg2=$(env -u PYTHONPATH "$work/venv2/bin/python" -c \
  'import os, ufile; print(os.path.dirname(ufile.__file__))')
for f in libufile.so.0 libcufile.so.0; do
  if [ -e "$pkg2/$f" ]; then
    echo "FAILED: an install without UFILE_LIBRARY bundled $pkg2/$f (stale, from build/)"; exit 1
  fi
done
echo "an install without UFILE_LIBRARY bundles no library"
# An interpreter whose setuptools needs the wheel package to build wheels (before
# 70.1), without it (a python3 other than Debian's, first on PATH): setup.py says
# what is missing and what to do, not pip's "invalid command 'bdist_wheel'".
nowheel=$(cd "$work/pkg" && "$py" - 2>&1 <<'PY'
import importlib.util, runpy, sys
if importlib.util.find_spec("setuptools.command.bdist_wheel"):
    print("SKIPPED: this setuptools builds wheels itself")
    sys.exit(0)
sys.modules["wheel"] = None  # as if it were not installed
sys.argv = ["setup.py", "dist_info"]
runpy.run_path("setup.py", run_name="__main__")
PY
) && rc=0 || rc=$?
case $nowheel in
  SKIPPED*) echo "$nowheel" ;;
  *"ufile: cannot build a wheel: "*"needs the 'wheel' package"*"/usr/bin/python3"*)
    [ "$rc" -ne 0 ] || { echo "FAILED: setup.py without wheel exited 0: $nowheel"; exit 1; }
    echo "without the wheel package: $nowheel" ;;
  *) echo "FAILED: setup.py without the wheel package: rc $rc: $nowheel"; exit 1 ;;
esac
